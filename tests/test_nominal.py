"""Nominal categories keep each level's own effect (issue 13 item 2): a category with words for
labels becomes one 0/1 indicator per level but its most frequent one, and comes back as the
level whose score leads (:mod:`engine.encoding.nominal`). As one ordered-probit code in
alphabetical order, a level with a large effect between two ordinary ones lost most of it: in the
planted table below, group "beta"'s mean y (1.55) came back as 0.30-0.60 at w = 0.5 (largest gap
over levels 0.95-1.23; now 0.06-0.19); on lifelines' kidney transplant table the Cox group terms
were biased by +0.6 to +0.8 SEs (mean |z-gap| 1.15, now 0.79)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine.encoding.nominal as nominal
from engine.columns.schema import infer_schema
from engine.encoding.encoder import TableEncoder
from engine.encoding.frequencies import level_counts, ranked_codes
from engine.encoding.layered import LayeredEncoder, prepared_rows
from engine.encoding.nominal import NominalLayer, ranked_levels
from engine.pipeline import RunConfig, prepare, synthesize

LEVELS = ["alpha", "beta", "gamma", "delta"]


def _planted(n: int, seed: int) -> pd.DataFrame:
    """y depends on x and on the group, non-monotonically in the labels' sorted order
    (alpha, beta, delta, gamma): beta +1.5, delta -0.8, alpha and gamma 0."""
    rng = np.random.default_rng(seed)
    g = rng.choice(LEVELS, n, p=[0.4, 0.2, 0.2, 0.2])
    x = rng.normal(50, 10, n).round(1)
    noise = rng.normal(0, 1, n)
    y = 0.05 * (x - 50) + 1.5 * (g == "beta") - 0.8 * (g == "delta") + noise
    return pd.DataFrame({"g": g, "x": x, "y": y.round(2)})


def _encoder(df: pd.DataFrame, **kw: bool) -> tuple[LayeredEncoder, pd.DataFrame]:
    schema = infer_schema(df)
    real, _ = prepared_rows(schema, df, complete_cases=False)
    return LayeredEncoder(schema, real, np.random.default_rng(0), model_missing=True, **kw), real


def test_a_levels_own_effect_survives_synthesis(tmp_path: Path) -> None:
    """The planted group effects come back at w = 0.5: every level's mean y within 0.4 of
    the real one (ordered probit: beta's +1.5 came back as +0.3 to +0.6, a gap of 0.95-1.23)."""
    real = _planted(1000, 1)
    src = tmp_path / "planted.csv"
    real.to_csv(src, index=False)
    cfg = RunConfig(
        input=src,
        seed=1,
        report=False,
        budget="fast",
        device="cpu",
        forced_w=0.5,
        w_grid=(0.0,),
        repeats=1,
        allow_risky=True,
    )
    syn = synthesize(prepare(cfg)).synthetic
    assert syn is not None
    gap = (real.groupby("g")["y"].mean() - syn.groupby("g")["y"].mean()).abs()
    assert set(gap.index) == set(LEVELS)
    assert gap.max() < 0.4, gap.round(2).to_dict()
    # each level's share is the real one (calibrated: every level has >= 10 rows)
    shares = syn["g"].value_counts().reindex(LEVELS).to_numpy()
    expected = level_counts(real["g"].value_counts(normalize=True).reindex(LEVELS), len(syn))
    assert shares.tolist() == expected.tolist()


def test_the_flow_sees_indicators_and_the_audit_sees_the_column_one_hot() -> None:
    df = _planted(400, 2)
    enc, real = _encoder(df)
    assert enc.inner.feature_names_ == ["g = beta", "g = delta", "g = gamma", "x", "y"]
    X = enc.transform(real, np.random.default_rng(3))
    back = enc.inverse_transform(X).frame
    assert back["g"].tolist() == real["g"].tolist()  # every row's own level decodes back
    # exact but for the extremes: the 9 beyond each bound and the 20 just inside it are spread
    # together inside the bound (issue 44's soft top-coding)
    rank = real["y"].rank(method="first")
    inside = (rank > 29) & (rank <= len(real) - 29)
    assert inside.mean() > 0.85
    np.testing.assert_allclose(back["y"][inside], real["y"][inside], atol=0.011)
    # the audit's distance space is the one without indicators (the column one-hot)
    plain, _ = _encoder(df, nominal=False)
    assert plain.inner.feature_names_ == ["g", "x", "y"]
    np.testing.assert_array_equal(enc.distance_space(real), plain.distance_space(real))
    # the indicators carry the group's effect on y in the latent scores: beta's with y > 0.4
    r = np.corrcoef(X.T)
    assert r[0, 4] > 0.4 and r[1, 4] < -0.2


def test_numbered_and_many_levelled_categories_keep_the_ordered_probit() -> None:
    rng = np.random.default_rng(4)
    df = pd.DataFrame(
        {
            "grade": rng.choice(["1", "2", "3"], 300),
            "site": rng.choice([f"s{k:02d}" for k in range(nominal.MAX_LEVELS + 1)], 300),
            "arm": rng.choice(["placebo", "low dose", "high dose"], 300),
            "x": rng.normal(size=300).round(2),
        }
    )
    enc, _ = _encoder(df)
    assert {c.name: c.kind for c in enc.schema.synthesized()} == {
        "grade": "categorical",
        "site": "categorical",
        "arm": "categorical",
        "x": "continuous",
    }
    names = enc.inner.feature_names_
    assert "grade" in names and "site" in names and "arm" not in names
    assert sum(n.startswith("arm = ") for n in names) == 2


def test_a_missing_group_is_modelled_and_comes_back_missing() -> None:
    df = _planted(600, 5).astype({"g": object})
    df.loc[np.random.default_rng(6).random(600) < 0.1, "g"] = None
    enc, real = _encoder(df)
    assert "g is missing" in enc.inner.feature_names_
    X = enc.transform(real, np.random.default_rng(7))
    back = enc.inverse_transform(X).frame
    assert back["g"].isna().tolist() == real["g"].isna().tolist()
    # observed levels come back (calibrating the shares over all rows, placeholders
    # included, moves a few rows near a boundary)
    seen = real["g"].notna()
    assert (back["g"][seen] == real["g"][seen]).mean() > 0.95


def test_ranked_levels_gives_exact_counts_and_matches_ranking_for_two_levels() -> None:
    rng = np.random.default_rng(8)
    score = np.c_[np.zeros(500), rng.normal(size=(500, 3))]
    codes = ranked_levels(score, (0.4, 0.3, 0.2, 0.1))
    assert np.bincount(codes).tolist() == [200, 150, 100, 50]
    # the rarest level takes the rows where it leads most: its 50 rows lead the rest's
    lead = score[:, 3] - score[:, :3].max(axis=1)
    assert lead[codes == 3].min() >= lead[codes != 3].max()
    two = np.c_[np.zeros(300), rng.normal(size=300)]
    assert ranked_levels(two, (0.7, 0.3)).tolist() == ranked_codes(two[:, 1], (0.7, 0.3)).tolist()


def test_a_rare_level_or_a_short_table_keeps_the_ordered_probit() -> None:
    """Read off by the argmax alone, a rare level lost its rows (a site of 4 people in 397 got
    none) and short tables drift to the base level; such columns keep the ordinal code."""
    rng = np.random.default_rng(9)
    rare = pd.DataFrame(
        {"g": ["a"] * 220 + ["b"] * 170 + ["c"] * 9, "x": rng.normal(size=399).round(2)}
    )
    enc, _ = _encoder(rare)
    assert "g" in enc.inner.feature_names_
    short = _planted(150, 10)
    enc, _ = _encoder(short)
    assert "g" in enc.inner.feature_names_
    enc, _ = _encoder(_planted(250, 10))
    assert "g = beta" in enc.inner.feature_names_


@pytest.mark.parametrize("labels", [("x", "y", "z"), ("low", "mid", "high", "top")])
def test_the_inner_encoder_round_trips_each_indicator(labels: tuple[str, ...]) -> None:
    frame = pd.DataFrame({"g": list(labels) * 80, "v": np.arange(80 * len(labels)) % 7})
    spec = infer_schema(frame).columns[0]
    layer = NominalLayer.fit(frame, [spec], set(frame.columns))
    wide = layer.expand(frame)
    assert wide.shape[1] == len(labels)  # v and one indicator per level but the base
    assert wide.drop(columns="v").sum(axis=1).le(1).all()  # at most one indicator set
    enc = TableEncoder(infer_schema(wide)).fit(wide)
    assert enc.inverse_transform(enc.transform(wide, np.random.default_rng(0))).frame.equals(wide)
