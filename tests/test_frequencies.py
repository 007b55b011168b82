"""Level frequencies by rank (engine/encoding/frequencies.py): a decoded batch gets each coded
column's real shares, only where every level has >= 10 real rows, only for batches >= 200 rows."""

import numpy as np
import pandas as pd
import pytest

from engine.columns.schema import infer_schema
from engine.encoding.encoder import TableEncoder
from engine.encoding.frequencies import level_counts, ranked_codes


def _table(rare: bool = False, n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    stage = np.repeat(["I", "II", "III"], [330, 180, 90])
    if rare:
        stage[:6] = "IV"  # a level held by 6 rows
    return pd.DataFrame(
        {
            "stage": rng.permutation(stage)[:n],
            "event": rng.permutation(np.r_[np.ones(150), np.zeros(450)].astype(int))[:n],
            "age": rng.normal(60, 9, n).round(1),
        }
    )


def _shifted_scores(enc: TableEncoder, df: pd.DataFrame, shift: float) -> np.ndarray:
    """Model-space rows as a flow with a misfitted margin would give them: every score moved."""
    X = enc.transform(df, np.random.default_rng(1))
    return X + shift + 0.3 * np.random.default_rng(2).standard_normal(X.shape)


def test_a_full_batch_gets_the_real_level_counts_exactly():
    df = _table()
    enc = TableEncoder(infer_schema(df, time=None, event="event")).fit(df)
    X = _shifted_scores(enc, df, 0.4)
    fixed = enc.inverse_transform(X, calibrate=False).frame
    ranked = enc.inverse_transform(X).frame  # 600 rows: calibrated by default
    real = df["stage"].value_counts()
    assert (fixed["stage"].value_counts().reindex(real.index) - real).abs().max() > 30
    assert ranked["stage"].value_counts().reindex(real.index).tolist() == real.tolist()
    assert int(ranked["event"].sum()) == 150 and int(fixed["event"].sum()) > 180


def test_only_rows_near_a_threshold_change_and_only_to_the_next_level():
    df = _table()
    enc = TableEncoder(infer_schema(df)).fit(df)
    X = _shifted_scores(enc, df, 0.15)  # a margin 0.15 SD off: about 6 % of rows per threshold
    order = {"I": 0, "II": 1, "III": 2}
    a = enc.inverse_transform(X, calibrate=False).frame["stage"].map(order)
    b = enc.inverse_transform(X).frame["stage"].map(order)
    changed = a != b
    assert 0 < changed.mean() < 0.15
    assert (a - b).abs().max() == 1
    assert (
        enc.inverse_transform(X)
        .frame["age"]
        .equals(enc.inverse_transform(X, calibrate=False).frame["age"])
    )


def test_a_column_with_a_level_under_ten_rows_keeps_the_fixed_thresholds():
    from engine.columns.codes import OTHER, recode

    df = _table(rare=True)
    schema = infer_schema(df)
    # the 6-row level is merged openly (issue 32): still under 10 rows, so still not calibrated
    df["stage"] = recode(schema.by_name("stage"), df["stage"])
    assert (df["stage"] == OTHER).sum() == 6
    enc = TableEncoder(schema).fit(df)
    X = _shifted_scores(enc, df, 0.4)
    assert (
        enc.inverse_transform(X)
        .frame["stage"]
        .equals(enc.inverse_transform(X, calibrate=False).frame["stage"])
    )


def test_a_small_batch_keeps_the_fixed_thresholds():
    df = _table()
    enc = TableEncoder(infer_schema(df)).fit(df)
    X = _shifted_scores(enc, df, 0.4)[:150]  # a few redrawn rows: below CALIBRATE_ROWS
    assert enc.inverse_transform(X).frame.equals(enc.inverse_transform(X, calibrate=False).frame)


def test_counts_add_up_and_scale_with_the_batch():
    assert level_counts((0.55, 0.3, 0.15), 1000).tolist() == [550, 300, 150]
    assert level_counts((1 / 3, 1 / 3, 1 / 3), 100).sum() == 100
    codes = ranked_codes(np.random.default_rng(0).standard_normal(2000), (0.55, 0.3, 0.15))
    assert np.bincount(codes).tolist() == [1100, 600, 300]


@pytest.mark.parametrize("shift", [-0.5, 0.5])
def test_scores_keep_their_order_within_the_new_levels(shift):
    y = np.random.default_rng(3).standard_normal(500) + shift
    codes = ranked_codes(y, (0.5, 0.5))
    assert y[codes == 0].max() <= y[codes == 1].min()
