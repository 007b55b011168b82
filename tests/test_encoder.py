"""engine.encoding.encoder: exact round trips, time window, clipping counts, deterministic
distances."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.columns.schema import infer_schema
from engine.encoding.encoder import TableEncoder
from engine.errors import InputError
from engine.files.read import ColumnMeta


def cohort(n: int = 300, seed: int = 3) -> pd.DataFrame:
    """Synthesizable columns of every kind and several dtypes."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "sex": rng.choice(["M", "F"], n),
            "smoker": rng.choice(["yes", "no"], n),
            "diabetic": rng.random(n) < 0.3,
            "stage": rng.integers(1, 5, n).astype("float64"),
            "grade": pd.Series(rng.choice(["A", "B", "NA", "C"], n), dtype="string"),
            "age": np.round(rng.normal(55, 8, n), 1),
            "chol": np.round(rng.normal(5.2, 1.0, n), 3),
            "visits": rng.integers(0, 12, n),
            "time": np.round(rng.uniform(0.5, 20, n), 2),
            "event": rng.integers(0, 2, n),
        }
    )


META = {"stage": ColumnMeta(value_labels={1.0: "I", 2.0: "II", 3.0: "III", 4.0: "IV"})}


@pytest.fixture()
def fitted() -> tuple[pd.DataFrame, TableEncoder]:
    df = cohort()
    observed = {c: (df[c].min(), df[c].max()) for c in ("age", "chol", "visits", "time")}
    # observed range as user bounds: the default (10th extremes) would clip the real extremes
    schema = infer_schema(df, time="time", event="event", column_meta=META, bounds=observed)
    return df, TableEncoder(schema).fit(df)


def test_round_trip_is_exact(fitted: tuple[pd.DataFrame, TableEncoder]) -> None:
    df, enc = fitted
    X = enc.transform(df, np.random.default_rng(0))
    assert X.dtype == np.float64 and X.shape == (300, 10) and enc.d_model_ == 10
    assert enc.feature_names_ == list(df.columns)
    decoded = enc.inverse_transform(X)
    pd.testing.assert_frame_equal(decoded.frame, df)  # values, dtypes, labels, decimals
    assert decoded.clip_counts == {c: 0 for c in df.columns}
    assert decoded.frame["grade"].dtype == "string" and decoded.frame["diabetic"].dtype == bool


def test_model_space_is_standardized_and_noisy(fitted: tuple[pd.DataFrame, TableEncoder]) -> None:
    df, enc = fitted
    X1 = enc.transform(df, np.random.default_rng(1))
    X2 = enc.transform(df, np.random.default_rng(2))
    assert np.all(np.abs(X1.mean(axis=0)) < 0.15) and np.all(np.abs(X1.std(axis=0) - 1) < 0.1)
    age = enc.feature_names_.index("age")
    sex = enc.feature_names_.index("sex")
    assert np.array_equal(X1[:, age], X2[:, age])  # continuous: no noise
    assert not np.array_equal(X1[:, sex], X2[:, sex])  # binary: dequantized
    assert len(np.unique(X1[:, sex])) > 250


def test_time_stays_inside_the_window(fitted: tuple[pd.DataFrame, TableEncoder]) -> None:
    df, enc = fitted
    j = enc.feature_names_.index("time")
    col = enc.columns_[j]
    # the normal-score map ends at the column's bounds (default: 10th smallest / largest)
    assert (col.marginal.xs[0], col.marginal.xs[-1]) == (col.spec.lower, col.spec.upper)
    X = np.zeros((7, enc.d_model_))
    X[:, j] = [-1e6, -40.0, -3.0, 0.0, 3.0, 40.0, 1e6]
    times = enc.inverse_transform(X).frame["time"].to_numpy()
    assert times[0] == col.spec.lower and times[-1] == col.spec.upper
    assert np.all(times >= df["time"].min()) and np.all(times <= df["time"].max())
    assert np.all(np.diff(times) >= 0)
    scaled = enc.transform(df, np.random.default_rng(0))[:, j]
    assert np.all(np.isfinite(scaled))


def test_clip_counts_on_planted_values(fitted: tuple[pd.DataFrame, TableEncoder]) -> None:
    df, enc = fitted
    X = enc.transform(df.iloc[:20], np.random.default_rng(0))
    age, visits, stage = (enc.feature_names_.index(c) for c in ("age", "visits", "stage"))
    X[:3, age] = 50.0  # far above the observed maximum
    X[3, age] = -50.0
    X[4, age] = np.nan
    X[5, age] = np.inf
    X[:2, visits] = -1e3
    X[:4, stage] = 1e3
    decoded = enc.inverse_transform(X)
    assert decoded.clip_counts["age"] == 6
    assert decoded.clip_counts["visits"] == 2 and decoded.clip_counts["stage"] == 4
    assert decoded.clip_counts["sex"] == 0
    frame = decoded.frame
    assert (
        frame["age"].iloc[:3].eq(df["age"].max()).all() and frame["age"].iloc[3] == df["age"].min()
    )
    assert frame["age"].iloc[5] == df["age"].max() and np.isfinite(frame["age"]).all()
    assert frame["visits"].iloc[:2].eq(df["visits"].min()).all()
    assert frame["stage"].iloc[:4].eq(4.0).all()
    assert decoded.to_dict()["clipped_total"] == 12


def test_non_finite_everywhere_never_crashes(fitted: tuple[pd.DataFrame, TableEncoder]) -> None:
    _, enc = fitted
    X = np.full((3, enc.d_model_), np.nan)
    X[1] = np.inf
    X[2] = -np.inf
    decoded = enc.inverse_transform(X)
    assert decoded.frame.notna().all().all()
    assert all(v == 3 for v in decoded.clip_counts.values())


def test_user_bounds_clip_decoded_values() -> None:
    df = cohort()
    schema = infer_schema(df, bounds={"age": (50, 60)})
    enc = TableEncoder(schema).fit(df)
    decoded = enc.inverse_transform(enc.transform(df, np.random.default_rng(0)))
    outside = int(((df["age"] < 50) | (df["age"] > 60)).sum())
    assert decoded.clip_counts["age"] == outside > 0
    assert decoded.frame["age"].between(50, 60).all()


def test_distance_space_is_deterministic_and_scaled(
    fitted: tuple[pd.DataFrame, TableEncoder],
) -> None:
    df, enc = fitted
    D1, D2 = enc.distance_space(df), enc.distance_space(df)
    assert np.array_equal(D1, D2)
    # 8 one-column blocks + one-hot stage (4 levels) + one-hot grade (4 levels)
    assert D1.shape == (300, 8 + 4 + 4)
    assert abs(D1[:, 0].mean()) < 1e-12 and abs(D1[:, 0].std() - 1) < 1e-12
    a, b = df.index[df["stage"] == 1][0], df.index[df["stage"] == 2][0]
    one_hot = D1[:, 3:7]
    assert np.isclose(np.linalg.norm(one_hot[a] - one_hot[b]), 1.0)


def test_complete_cases_reports_dropped_rows() -> None:
    df = cohort()
    df.loc[[3, 4, 5], "age"] = np.nan
    df.loc[[5, 9], "chol"] = np.nan
    schema = infer_schema(df)
    enc = TableEncoder(schema)
    used, info = enc.complete_cases(df)
    assert len(used) == 296 and info["rows_dropped"] == 4 and info["rows_used"] == 296
    assert info["missing_by_column"] == {"age": 3, "chol": 2}
    enc.fit(df)
    assert enc.n_rows_ == 296
    with pytest.raises(InputError, match="'age' has 3 missing"):
        enc.transform(df, np.random.default_rng(0))
    with pytest.raises(InputError, match="not one of its categories"):
        enc.transform(used.assign(sex="X"), np.random.default_rng(0))


def test_integer_float_column_decodes_to_int64() -> None:
    df = cohort()[["age", "visits"]].assign(visits=lambda d: d["visits"].astype("float64"))
    df.loc[0, "visits"] = np.nan
    enc = TableEncoder(infer_schema(df)).fit(df)
    used, _ = enc.complete_cases(df)
    decoded = enc.inverse_transform(enc.transform(used, np.random.default_rng(0))).frame
    assert decoded["visits"].dtype == np.int64
    assert decoded["visits"].tolist() == used["visits"].astype(int).tolist()


def test_very_large_values_are_standardized_without_overflow() -> None:
    """Values from 1e15 to 1e200 (squares overflow to inf) and 18-digit integers."""
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame(
        {
            "big": 10 ** rng.uniform(15, 200, n),
            "bigint": rng.integers(10**15, 10**18, n),
            "x": rng.normal(size=n),
        }
    )
    # observed range as user bounds: this test is about overflow, not the default 10th extremes
    observed = {c: (float(df[c].min()), float(df[c].max())) for c in ("big", "bigint")}
    schema = infer_schema(df, bounds=observed)
    assert schema.by_name("big").kind == "continuous"
    assert schema.by_name("bigint").kind == "integer"
    enc = TableEncoder(schema).fit(df)
    z = enc.transform(df, np.random.default_rng(1))
    assert np.isfinite(z).all()
    # normal scores (engine.encoding.marginals): mean 0, SD 1 up to the binned CDF at n = 200
    assert np.allclose(z.mean(axis=0), 0.0, atol=0.05) and np.allclose(z.std(axis=0), 1, atol=0.1)
    back = enc.inverse_transform(z)
    assert back.frame["bigint"].dtype == np.int64 and back.clip_counts["bigint"] == 0
    assert np.allclose(back.frame["bigint"], df["bigint"], rtol=1e-12)
    big = back.frame["big"].to_numpy()
    assert np.isfinite(big).all() and big.min() >= df["big"].min() and big.max() <= df["big"].max()
    top = df["big"] > 1e195  # on a linear scale only the top decades keep their precision
    assert np.allclose(big[top], df["big"][top], rtol=1e-6)
    assert np.allclose(enc.distance_space(df).std(axis=0), 1.0)


def test_non_finite_values_are_counted_and_redrawn_not_averaged(
    fitted: tuple[pd.DataFrame, TableEncoder],
) -> None:
    from engine.encoding.encoder import redraw_non_finite

    _, enc = fitted
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, enc.d_model_))
    X[[3, 7], 0] = np.nan
    X[11, 1] = np.inf
    decoded = enc.inverse_transform(X)
    names = enc.feature_names_
    assert decoded.non_finite[names[0]] == 2 and decoded.non_finite[names[1]] == 1
    assert decoded.to_dict()["non_finite_total"] == 3
    calls: list[int] = []

    def draw(idx: np.ndarray) -> np.ndarray:  # row 11 never decodes to a finite value
        calls.append(len(idx))
        out = rng.standard_normal((len(idx), enc.d_model_))
        out[idx == 11] = np.nan
        return out

    rows, info = redraw_non_finite(X, draw)
    assert info == {"rows_redrawn": 3, "rows_dropped": 1} and calls == [3, 1, 1, 1, 1]
    finite = np.isfinite(rows).all(axis=1)
    assert finite.sum() == 49 and not finite[11]
    assert np.array_equal(rows[finite][:3], X[:3])  # untouched rows keep their values
