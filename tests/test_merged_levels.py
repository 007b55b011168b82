"""Issue 32 item 3: Cox and friends analyse a merged level ("other (fewer than 10)") as its own
level where it has enough people and events, and otherwise report it as merged; a release that
has none of a small merged group no longer stops the whole comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.columns.codes import OTHER
from engine.stats.compare import compare_fits
from engine.stats.fits import NOT_SHOWN_MERGED, withhold_terms
from engine.stats.models import ModelSpec

SPEC = ModelSpec("cox", time="t", event="e", covariates=("race", "age"))


def _table(n_other: int, seed: int = 0, n: int = 400) -> pd.DataFrame:
    """A survival table whose merged level holds ``n_other`` people with hazard ratio e^1."""
    rng = np.random.default_rng(seed)
    race = np.where(rng.random(n) < 0.6, "1", "2").astype(object)
    race[:n_other] = OTHER
    age = rng.normal(60, 8, n)
    hazard = np.exp(0.03 * (age - 60) + 0.5 * (race == "2") + 1.0 * (race == OTHER))
    t = rng.exponential(1 / hazard)
    c = rng.exponential(2.0, n)
    return pd.DataFrame({"t": np.minimum(t, c), "e": (t < c).astype(int), "race": race, "age": age})


def test_a_merged_level_with_enough_people_and_events_is_its_own_term() -> None:
    d = _table(n_other=40)
    assert int(d.loc[d.race == OTHER, "e"].sum()) >= 10
    comp = compare_fits(d, d.sample(frac=1.0, replace=True, random_state=1), SPEC)
    term = f"race={OTHER}"
    assert term not in comp.real.withheld
    real = comp.real.coefficient(term)
    # the simulated log hazard ratio of the merged group, 1.0, within its 95 % CI
    assert real.ci_low < 1.0 < real.ci_high and real.estimate > 0.4


def test_a_small_merged_level_absent_from_the_release_is_reported_as_merged() -> None:
    d = _table(n_other=6)
    synth = d[d.race != OTHER].reset_index(drop=True)  # the release has none of the six
    comp = compare_fits(d, synth, SPEC)  # before: ModelNotConverged (an all-zero column)
    term = f"race={OTHER}"
    assert term in comp.real.withheld and term in comp.synthetic.withheld
    others = [r for r in comp.rows if r.name != term]
    assert [r.name for r in others] == ["race=2", "age"]
    assert all(np.isfinite(r.std_difference) and abs(r.std_difference) < 3 for r in others)
    records = withhold_terms([{"name": term, "estimate": 1.2, "per": 1.0}], comp.real.withheld)
    assert records[0]["estimate"] is None and records[0]["not_shown"] == NOT_SHOWN_MERGED
    assert "merged" in NOT_SHOWN_MERGED and "fewer than 10" in NOT_SHOWN_MERGED


def test_spss_and_stata_get_the_codes_as_numbers_and_the_merged_level_labelled(tmp_path) -> None:
    import pyreadstat

    from engine.files.write_formats import write_dta, write_sav

    frame = pd.DataFrame(
        {"race": ["1", "2", "4", OTHER, "2", None], "site": ["007", "12", "3", "1", "2", "3"]}
    )
    for writer, name in ((write_sav, "s.sav"), (write_dta, "s.dta")):
        writer(frame, tmp_path / name, {})
        reader = pyreadstat.read_sav if name.endswith("sav") else pyreadstat.read_dta
        back, meta = reader(str(tmp_path / name))
        race = back["race"].tolist()
        assert race[:5] == [1, 2, 4, 9, 2] and np.isnan(race[5])  # 9: above every code written
        labels = meta.variable_value_labels["race"]
        assert {int(k): v for k, v in labels.items()} == {9: OTHER}
        assert back["site"].tolist()[0] == "007"  # text that is not a plain number stays text
