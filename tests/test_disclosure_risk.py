"""Identity and attribute disclosure (issue 29): synthpop's UiO, repU, DiO and DiSCO worked by
hand, numtocat's grouping, anonymeter's rates, the keys a run suggests, the fresh-sample
reference, and a planted leak that the measures catch (the pipeline's refusal is in
``tests/test_disclosure_rule.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.columns.keys import suggest_keys, suggest_targets
from engine.columns.schema import infer_schema
from engine.disclosure.check import margin_for, measure_disclosure, shown_pct
from engine.disclosure.key_groups import Banding, cell_codes, fit_banding, numtocat_breaks
from engine.disclosure.risk import InferenceRisk, Rate, synthpop_figures


def _figures(real: pd.DataFrame, syn: pd.DataFrame, keys: list[str], target: str):
    bands = {c: Banding(c, None) for c in [*keys, target]}
    kr, ks = cell_codes([real, syn], keys, bands)
    tr, ts = cell_codes([real, syn], [target], bands)
    return synthpop_figures(kr, tr, ks, ts)


def test_worked_example_by_hand() -> None:
    """Six real patients, six synthetic rows; keys age and sex, target cvd.

    real: (40,F) 0, (40,F) 0, (50,M) 1, (50,M) 0, (60,F) 1, (70,M) 0
    synthetic: (40,F) 0, (50,M) 1, (50,M) 1, (60,F) 1, (70,M) 1, (80,F) 0

    UiO: (60,F) and (70,M) are unique in the real table: 2 of 6.
    repU: both are unique in the synthetic file too: 2 of 6.
    DiO: (40,F) is all 0, (60,F) and (70,M) are single: 4 of 6 ((50,M) holds 1 and 0).
    DiSCO: (40,F) all 0 in the synthetic file, right for both; (50,M) all 1, right for the
    patient with 1 only; (60,F) 1, right; (70,M) 1, wrong: 2 + 1 + 1 = 4 of 6.
    """
    real = pd.DataFrame(
        {"age": [40, 40, 50, 50, 60, 70], "sex": list("FFMMFM"), "cvd": [0, 0, 1, 0, 1, 0]}
    )
    syn = pd.DataFrame(
        {"age": [40, 50, 50, 60, 70, 80], "sex": list("FMMFMF"), "cvd": [0, 1, 1, 1, 1, 0]}
    )
    f = _figures(real, syn, ["age", "sex"], "cvd")
    assert (f.uio, f.repu, f.dio, f.disco) == pytest.approx((100 / 3, 100 / 3, 200 / 3, 200 / 3))
    # the real table scored against itself discloses exactly what it holds: DiSCO = DiO
    self_score = _figures(real, real, ["age", "sex"], "cvd")
    assert self_score.disco == pytest.approx(self_score.dio) and self_score.repu == f.uio


def test_numbers_are_grouped_the_way_numtocat_groups_them() -> None:
    # five groups at the quantiles, closed on the left, the last one closed on both sides
    breaks = numtocat_breaks(np.arange(0.0, 101.0))
    assert breaks.round(6).tolist() == [0, 20, 40, 60, 80, 100]
    band = Banding("sbp", tuple(breaks))
    assert band.levels(pd.Series([0.0, 19.9, 20.0, 100.0])).tolist() == [
        "[0, 20)",
        "[0, 20)",
        "[20, 40)",
        "[80, 100]",
    ]
    # a column whose quantiles give fewer than three groups falls back to equal widths
    assert len(numtocat_breaks(np.array([0.0] * 8 + [1.0, 2.0]))) == 6
    rng = np.random.default_rng(0)
    real = pd.DataFrame({"age": rng.integers(30, 90, 500), "bmi": rng.normal(27, 4, 500)})
    assert fit_banding(real, "age").breaks is None  # ages in years: each value a level
    assert len(fit_banding(real, "bmi").breaks or ()) == 6  # a measurement: five groups


def test_success_rates_follow_anonymeter() -> None:
    """Wilson (1927) as anonymeter's ``success_rate``: 50 of 100 -> 0.5 +- 1.96 / 103.84 *
    sqrt(25 + 0.96) = 0.0962; the risk (main - control) / (1 - control)."""
    rate = Rate.wilson(50, 100)
    assert rate.value == pytest.approx(0.5) and rate.error == pytest.approx(0.09617, abs=1e-4)
    risk = InferenceRisk.of(Rate(0.8, 0.0), Rate(0.6, 0.0))
    assert risk.risk == pytest.approx(0.5)  # (0.8 - 0.6) / 0.4
    assert InferenceRisk.of(Rate(0.5, 0.01), Rate(0.6, 0.01)).risk == 0.0  # bounded below


def test_keys_and_targets_are_suggested_from_the_names() -> None:
    import lifelines.datasets as ld

    rossi = infer_schema(ld.load_rossi(), time="week", event="arrest")
    keys = suggest_keys(rossi.synthesized())
    assert keys == ("age", "race")
    targets = suggest_targets(rossi.synthesized(), keys, event="arrest")
    assert targets[0] == "arrest" and "age" not in targets and len(targets) == 7
    kidney = infer_schema(ld.load_kidney_transplant(), time="time", event="death")
    assert suggest_keys(kidney.synthesized()) == (
        "age",
        "black_male",
        "white_male",
        "black_female",
    )
    frame = pd.DataFrame({"stage": [1, 2] * 30, "page_count": range(60), "Gender": ["F", "M"] * 30})
    assert suggest_keys(infer_schema(frame).synthesized()) == ("Gender",)  # words, not letters


def _fine_cohort(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "age": rng.integers(30, 85, n),
            "sex": rng.choice(["F", "M"], n),
            "ethnicity": rng.choice(["white", "black", "asian", "other"], n),
            "bmi": rng.normal(27, 4, n).round(1),
        }
    )
    frame["event"] = (rng.random(n) < 0.2 + 0.005 * (frame["age"] - 30)).astype(int)
    return frame


def test_a_fresh_real_sample_passes_and_a_planted_leak_is_caught() -> None:
    keys, targets = ("age", "sex", "ethnicity"), ("event", "bmi")
    people = _fine_cohort(1600, 0)
    real, others = people.iloc[:800].reset_index(drop=True), people.iloc[800:]
    rng = np.random.default_rng(1)
    # other real people, paired with the table's at random: they disclose nothing of it
    fresh = measure_disclosure(
        real, others.reset_index(drop=True), keys, targets, rng=rng, numeric=("bmi",)
    )
    assert fresh.holds, fresh.to_dict()
    # the planted leak: a release that keeps every member's keys and target
    leak = real.copy()
    leak["bmi"] = rng.normal(27, 4, len(leak)).round(1)
    caught = measure_disclosure(real, leak, keys, targets, rng=rng, numeric=("bmi",))
    assert not caught.holds and set(caught.failing) == {"re-identification", "event"}
    event = caught.targets[0]
    # measured: DiSCO 68 % against 27 % for a fresh sample (margin 12 points); repU 40 %
    # against 15 % (margin 4); anonymeter's inference risk 0.67 against 0.01 for the fresh one
    assert event.disco_release > event.disco_fresh + event.margin + 20
    assert caught.repu_release > caught.repu_fresh + caught.repu_margin + 15
    assert event.inference.risk > 0.4 and fresh.targets[0].inference.risk < 0.1


def test_the_margin_and_small_counts() -> None:
    assert margin_for(0.1) == 3.0 and margin_for(2.0) == 10.0 and margin_for(2.0, cap=1.0) == 1.0
    # 0.5 % of 800 records is 4 people: shown as under 10, like every count of the record
    assert shown_pct(0.5, 800) == "< 10 records" and shown_pct(31.25, 800) == 31.25


def test_inference_risk_agrees_with_anonymeter() -> None:
    """Where anonymeter is installed (it pins numpy < 1.27, so not in the project's lock: see
    ``benchmarks/anonymeter_crosscheck.py``), our risk lies inside its 95 % interval."""
    pytest.importorskip("anonymeter")
    from anonymeter.evaluators import InferenceEvaluator

    from engine.disclosure.key_groups import gower_coordinates
    from engine.disclosure.risk import guesses_right, nearest_guesses

    people = _fine_cohort(1000, 3)
    members, control = people.iloc[:500].reset_index(drop=True), people.iloc[500:]
    control = control.reset_index(drop=True)
    syn = members.sample(frac=1.0, random_state=0).reset_index(
        drop=True
    )  # released in random order
    syn["bmi"] = syn["bmi"] + 0.2
    keys = ["age", "sex", "ethnicity", "bmi"]
    ev = InferenceEvaluator(
        ori=members, syn=syn, control=control, aux_cols=keys, secret="event", n_attacks=500
    ).evaluate(n_jobs=1)
    c_mem, c_ctl, c_syn = gower_coordinates([members, control, syn], keys, people)
    s = syn["event"].to_numpy()
    main = guesses_right(nearest_guesses(c_syn, s, c_mem), members["event"].to_numpy(), False)
    ctl = guesses_right(nearest_guesses(c_syn, s, c_ctl), control["event"].to_numpy(), False)
    ours = InferenceRisk.of(Rate.wilson(main.sum(), 500), Rate.wilson(ctl.sum(), 500))
    low, high = ev.risk().ci
    assert low - 1e-9 <= ours.risk <= high + 1e-9
