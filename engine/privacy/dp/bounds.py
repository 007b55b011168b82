"""Data-independent encoding for DP mode: every range comes from the user or a clinical preset.

The ordinary :class:`engine.encoding.encoder.TableEncoder` z-scores with the data's means and
SDs and takes the time window and bounds from the observed range: each is an unnoised statistic
of the records and would void a DP guarantee. :class:`BoundedEncoder` uses only declared numbers:

==============  ========================================================  =====================
kind            forward (u ~ U(0, 1))                                      back
==============  ========================================================  =====================
continuous      2 (x - lo) / (hi - lo) - 1                                 clip to [lo, hi]
integer         2 (k + u - lo) / (hi + 1 - lo) - 1                         floor, clip
time            logit((t - a) / (b - a)), a = lo - m, b = hi + m,          expit, clip to [lo, hi]
                m = 1 % of (hi - lo)
binary, event   code b in {0, 1}: b + u - 1                                1 if v >= 0 else 0
categorical     code c in {0..K-1}: 2 (c + u) / K - 1                      floor, clip to 0..K-1
==============  ========================================================  =====================

Real values outside the declared bounds are clipped before encoding (a per-record operation,
so it spends no privacy). Bounds for continuous, integer and time columns come from, in order,
the user's ``--bounds`` (both ends), then :data:`CLINICAL_PRESETS` by column name; a time
column's upper end (administrative end of follow-up) must always come from the user. Without
them :func:`resolve_bounds` raises :class:`InputError` naming the columns.

Residual leaks this module does not close (written into the guarantee's notes):
binary/categorical *level sets* come from the schema, which reads them from the data unless
the user declares them (``levels=``): a rare level's mere existence is disclosed. Column kinds
and decimal places are also read from the data unless declared with ``--kind``.

References: DP-NF paper section 3.3 (clinical bounds, truncation to physiological ranges);
METHOD.md sections 2 and 9.

Example:
    >>> import pandas as pd
    >>> from engine.columns.schema import infer_schema
    >>> df = pd.DataFrame({"sbp": [120, 140, 160] * 20, "smoker": ["no", "yes", "no"] * 20})
    >>> enc = BoundedEncoder(infer_schema(df), resolve_bounds(infer_schema(df))).fit()
    >>> X = enc.transform(df, np.random.default_rng(0))
    >>> bool((abs(X) <= 1).all()), enc.inverse_transform(X).frame.equals(df)
    (True, True)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from engine.columns.schema import ColumnSpec, Schema
from engine.encoding.encoder import Decoded
from engine.encoding.lookup import label_codes as _codes
from engine.encoding.restore import restore_labels, restore_number
from engine.errors import InputError

BOUNDED_KINDS = frozenset({"continuous", "integer", "time"})
LEVEL_KINDS = frozenset({"binary", "event", "categorical"})
TIME_MARGIN = 0.01

# (lower, upper, unit, names that match after lower-casing and dropping non-letters/digits)
CLINICAL_PRESETS: dict[str, tuple[float, float, str, tuple[str, ...]]] = {
    "age": (18.0, 110.0, "years", ("age", "ageyears", "ageyrs", "agebaseline")),
    "sbp": (60.0, 260.0, "mmHg", ("sbp", "sysbp", "systolic", "systolicbp", "sbpmmhg")),
    "dbp": (30.0, 150.0, "mmHg", ("dbp", "diabp", "diastolic", "diastolicbp", "dbpmmhg")),
    "totchol": (
        70.0,
        500.0,
        "mg/dL",
        ("totchol", "tc", "chol", "cholesterol", "totalchol", "totalcholesterol"),
    ),
    "hdl": (10.0, 150.0, "mg/dL", ("hdl", "hdlc", "hdlchol", "hdlcholesterol")),
    "ldl": (10.0, 400.0, "mg/dL", ("ldl", "ldlc", "ldlchol", "ldlcholesterol")),
    "bmi": (12.0, 80.0, "kg/m2", ("bmi", "bodymassindex")),
    "heart_rate": (30.0, 220.0, "beats/min", ("heartrate", "hr", "pulse", "heartratebpm")),
    "glucose": (20.0, 600.0, "mg/dL", ("glucose", "glu", "fastingglucose", "fbg", "glucosemgdl")),
}


@dataclass(frozen=True)
class ColumnBounds:
    """Declared range of one column and where it came from (``user`` or ``preset:<name>``)."""

    name: str
    lower: float
    upper: float
    source: str


def preset_for(column: str) -> str | None:
    """The preset whose name list contains ``column`` (case and punctuation ignored).

    Example:
        >>> preset_for("Systolic_BP"), preset_for("weight")
        ('sbp', None)
    """
    key = re.sub(r"[^a-z0-9]", "", column.lower())
    for preset, (_, _, _, names) in CLINICAL_PRESETS.items():
        if key in names:
            return preset
    return None


def resolve_bounds(
    schema: Schema, user: Mapping[str, tuple[float | None, float | None]] | None = None
) -> dict[str, ColumnBounds]:
    """Declared bounds for every numeric synthesized column, or an InputError naming the rest.

    ``user`` maps a column to (lower, upper); a ``None`` end is filled from a preset when the
    column has one. Time columns default their lower end to 0 but need the user's upper end.
    """
    user = dict(user or {})
    out: dict[str, ColumnBounds] = {}
    missing: list[str] = []
    for spec in schema.synthesized():
        if spec.kind not in BOUNDED_KINDS:
            continue
        bounds = _one(spec, user.get(spec.name))
        if bounds is None:
            missing.append(_hint(spec))
        else:
            out[spec.name] = bounds
    if missing:
        raise InputError(
            "DP mode needs ranges that do not come from the data, and these columns have none: "
            + "; ".join(missing)
            + ". Give them in the bounds setting (otherwise the guarantee would be void)."
        )
    return out


def _one(spec: ColumnSpec, user: tuple[float | None, float | None] | None) -> ColumnBounds | None:
    lo, hi = user if user is not None else (None, None)
    source = "user"
    preset = preset_for(spec.name) if spec.kind != "time" else None
    if preset is not None and (lo is None or hi is None):
        p_lo, p_hi = CLINICAL_PRESETS[preset][:2]
        lo, hi = (p_lo if lo is None else lo), (p_hi if hi is None else hi)
        source = f"preset:{preset}" if user is None else f"user+preset:{preset}"
    if spec.kind == "time" and lo is None and hi is not None:
        lo = 0.0
    if lo is None or hi is None:
        return None
    if not float(lo) < float(hi):
        raise InputError(
            f"column '{spec.name}': lower bound {lo:g} must be below upper bound {hi:g}"
        )
    return ColumnBounds(spec.name, float(lo), float(hi), source)


def _hint(spec: ColumnSpec) -> str:
    if spec.kind == "time":
        return (
            f"'{spec.name}' (follow-up time: give 0:END with END the study's administrative "
            "end of follow-up)"
        )
    return f"'{spec.name}' ({spec.kind})"


@dataclass(frozen=True)
class _Column:
    spec: ColumnSpec
    lower: float | None = None
    upper: float | None = None
    labels: tuple[Any, ...] | None = None
    dtype: Any = None


class BoundedEncoder:
    """Table <-> [-1, 1]-ish matrix using declared bounds and levels only (no data moments).

    ``fit()`` reads no data; ``transform`` clips real values into the bounds and counts them in
    ``clipped_real_`` (operator information, never released).

    References: DP-NF paper section 3.3; METHOD.md section 9.
    """

    def __init__(
        self,
        schema: Schema,
        bounds: Mapping[str, ColumnBounds],
        levels: Mapping[str, Sequence[Any]] | None = None,
        dtypes: Mapping[str, Any] | None = None,
    ) -> None:
        self.schema, self.bounds = schema, dict(bounds)
        self.levels = {k: tuple(v) for k, v in (levels or {}).items()}
        self.dtypes = dict(dtypes or {})

    def fit(self, df: pd.DataFrame | None = None) -> BoundedEncoder:
        """Set up the columns from the schema and declarations; ``df`` is only read for dtypes."""
        cols, undeclared = [], []
        for spec in self.schema.synthesized():
            dtype = self.dtypes.get(spec.name) or (
                df[spec.name].dtype if df is not None and spec.name in df else _dtype(spec.dtype)
            )
            if spec.kind in BOUNDED_KINDS:
                b = self.bounds.get(spec.name)
                if b is None:
                    resolve_bounds(Schema((spec,)), {})  # raises the plain-words error
                    raise AssertionError("unreachable")
                cols.append(_Column(spec, b.lower, b.upper, dtype=dtype))
            elif spec.kind in LEVEL_KINDS:
                labels = self.levels.get(spec.name) or spec.labels
                if not labels:
                    raise InputError(f"column '{spec.name}': declare its levels for DP mode")
                if spec.name not in self.levels:
                    undeclared.append(spec.name)
                cols.append(_Column(spec, labels=tuple(labels), dtype=dtype))
            else:
                raise InputError(
                    f"column '{spec.name}': kind {spec.kind} is not supported in DP mode"
                )
        self.columns_ = cols
        self.feature_names_ = [c.spec.name for c in cols]
        self.d_model_ = len(cols)
        self.undeclared_levels_ = undeclared
        return self

    def transform(self, df: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
        """Model-space matrix (n x d); dequantization noise from ``rng``."""
        out = np.empty((len(df), self.d_model_))
        self.clipped_real_: dict[str, int] = {}
        for j, col in enumerate(self.columns_):
            s = df[col.spec.name]
            kind = col.spec.kind
            if kind in LEVEL_KINDS:
                assert col.labels is not None  # fit() sets levels for level kinds
                codes = _codes(s, col.labels) + rng.uniform(0.0, 1.0, len(s))
                K = len(col.labels)
                out[:, j] = codes - 1.0 if kind in ("binary", "event") else 2.0 * codes / K - 1.0
                continue
            assert col.lower is not None and col.upper is not None  # fit() sets bounds
            v = s.to_numpy(dtype="float64")
            clipped = np.clip(v, col.lower, col.upper)
            self.clipped_real_[col.spec.name] = int((clipped != v).sum())
            if kind == "integer":
                k = np.floor(clipped) + rng.uniform(0.0, 1.0, len(s))
                out[:, j] = 2.0 * (k - col.lower) / (col.upper + 1.0 - col.lower) - 1.0
            elif kind == "time":
                a, b = _window(col)
                out[:, j] = logit((clipped - a) / (b - a))
            else:
                out[:, j] = 2.0 * (clipped - col.lower) / (col.upper - col.lower) - 1.0
        return out

    def inverse_transform(self, arr: np.ndarray) -> Decoded:
        """Back to a table (names, order, labels, dtypes); values clipped into the bounds."""
        arr = np.asarray(arr, dtype="float64")
        if arr.ndim != 2 or arr.shape[1] != self.d_model_:
            raise ValueError(f"expected an array of shape (n, {self.d_model_}), got {arr.shape}")
        columns, clips = {}, {}
        for j, col in enumerate(self.columns_):
            columns[col.spec.name], clips[col.spec.name] = self._decode(col, arr[:, j])
        return Decoded(pd.DataFrame(columns), clips)

    def _decode(self, col: _Column, y: np.ndarray) -> tuple[pd.Series, int]:
        bad = ~np.isfinite(y)
        y = np.where(np.isnan(y), 0.0, y)
        kind = col.spec.kind
        if kind in ("binary", "event"):
            codes = (y >= 0.0).astype("int64")
            return restore_labels(codes, _LabelView(col)), int(bad.sum())
        if kind == "categorical":
            assert col.labels is not None  # fit() sets levels for level kinds
            K = len(col.labels)
            raw = np.floor((y + 1.0) * K / 2.0)
            codes = np.clip(raw, 0, K - 1)
            return restore_labels(codes.astype("int64"), _LabelView(col)), int(
                ((raw != codes) | bad).sum()
            )
        assert col.lower is not None and col.upper is not None  # fit() sets bounds
        if kind == "integer":
            raw = np.floor(col.lower + (y + 1.0) * (col.upper + 1.0 - col.lower) / 2.0)
        elif kind == "time":
            a, b = _window(col)
            raw = a + (b - a) * expit(y)
        else:
            raw = col.lower + (y + 1.0) * (col.upper - col.lower) / 2.0
        if col.spec.decimals is not None and kind != "integer":
            raw = np.round(raw, col.spec.decimals)
        v = np.clip(raw, col.lower, col.upper)
        clipped = int(((v != raw) | bad).sum())
        return restore_number(v, _LabelView(col), whole=kind == "integer"), clipped


@dataclass(frozen=True)
class _LabelView:
    """The two attributes the encoder's restore helpers read."""

    col: _Column

    @property
    def labels(self) -> tuple[Any, ...] | None:
        return self.col.labels

    @property
    def dtype(self) -> Any:
        return self.col.dtype if self.col.dtype is not None else np.dtype("float64")


def _dtype(name: str) -> Any:
    """The schema's recorded dtype name as a dtype (object when pandas cannot parse it)."""
    try:
        return pd.api.types.pandas_dtype(name)
    except TypeError:
        return np.dtype(object)


def _window(col: _Column) -> tuple[float, float]:
    assert col.lower is not None and col.upper is not None  # fit() sets bounds
    margin = TIME_MARGIN * (col.upper - col.lower)
    return col.lower - margin, col.upper + margin


def dp_encode(
    frame: pd.DataFrame,
    schema: Schema,
    bounds: Mapping[str, tuple[float | None, float | None]] | None,
    rng: np.random.Generator,
    levels: Mapping[str, Sequence[Any]] | None = None,
) -> tuple[np.ndarray, BoundedEncoder]:
    """Resolve bounds (user, then presets), encode ``frame``; returns ``(X, encoder)`` whose
    ``inverse_transform`` is the exact inverse (up to dequantization and clipping)."""
    enc = BoundedEncoder(schema, resolve_bounds(schema, bounds), levels).fit(frame)
    return enc.transform(frame, rng), enc
