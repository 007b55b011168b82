"""Invertible transforms between a patient table and the flow's real-valued space.

One model dimension per synthesized column (``d_model_ == len(schema.synthesized())``). Every
column goes through a monotone map to normal scores, ``y = Phi^-1(F(x))``, with ``F`` a smoothed
empirical CDF (:class:`engine.encoding.marginals.NormalScores`): knots are means of >= 10 rows,
the ends are the column's bounds (by default the 10th smallest / largest value, never a real
extreme), point masses are steps of ``F``. Back: ``x = F^-1(Phi(y))``.

==============  ====================================================  ==========================
kind            forward                                               back
==============  ====================================================  ==========================
continuous      Phi^-1(F(x)); a value on a point mass drawn in its    F^-1(Phi(y)), round
time            step given the rest of the row                        (decimals), clip to bounds
binary, event   label code b, drawn in its step of F given the row    code (1 if >= 1 else 0)
integer         k + U(0, 1) on F's axis, drawn given the row          floor, clip to bounds
categorical     ordinal code c, drawn in its step of F given the row  code c, clip to 0..K-1
==============  ====================================================  ==========================

So every column's marginal, including each level's and each common value's frequency, comes
back right when the flow's latent margins are right (issue 13 item 1); the flow models the
dependence. The map needs no random draws to fit. Where a value is drawn inside a step (codes,
integers, point masses), the draw is conditional on the rest of its row
(:mod:`engine.encoding.dequantize`), so correlations with such columns are not weakened.

Categorical: ordinal code in an ordered probit, not one-hot. Reason: one dimension per column
keeps d small, and the generating pass of a MAF costs d sequential network evaluations per layer
(docs/method.md section 3). Trade-off: the flow sees the (sorted) level order, so noise in the
latent space tends to move a row to a neighbouring level; for ordered categories (stage 1-4) that is
natural. For nominal ones it is not harmless (a level with a large effect between two ordinary
ones loses most of it), so the pipeline's encoder gives a category with words for labels one
binary column per level instead (:mod:`engine.encoding.nominal`); this encoder then sees only
those 0/1 columns. Distances for the privacy audit use one-hot (``distance_space``), on the raw
scale, so the audit's distance space is unchanged by the map.

Decoding never crashes: NaN / inf values are clipped to the bounds (NaN -> the column's mean)
and counted in ``clip_counts`` and, separately, in ``non_finite``; a release first redraws such
rows (:func:`redraw_non_finite`). A synthetic value cannot leave the bounds (``F`` ends there;
a score drawn beyond a bound is placed inside it, :meth:`NormalScores.squeeze`); ``clip_counts``
counts those scores and the non-finite values.

References: docs/method.md section 2 (main paper section 4.2; DP-NF paper section 3.3).

Example:
    >>> import numpy as np, pandas as pd
    >>> from engine.columns.schema import infer_schema
    >>> df = pd.DataFrame({"sex": ["F", "M"] * 30, "age": np.linspace(40, 70, 60).round(1)})
    >>> enc = TableEncoder(infer_schema(df, bounds={"age": (40, 70)})).fit(df)
    >>> X = enc.transform(df, np.random.default_rng(0))
    >>> X.shape, enc.feature_names_
    ((60, 2), ['sex', 'age'])
    >>> enc.inverse_transform(X).frame.equals(df)  # exact within the bounds given
    True
    >>> default = TableEncoder(infer_schema(df)).fit(df)  # default bounds: 10th extremes
    >>> back = default.inverse_transform(default.transform(df, np.random.default_rng(0)))
    >>> float(back.frame["age"].min()), float(back.frame["age"].max()), back.clip_counts["age"]
    (44.8, 65.3, 18)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from engine.columns.schema import ColumnSpec, Schema
from engine.encoding.dequantize import conditional_scores
from engine.encoding.frequencies import CALIBRATE_ROWS, calibrated_shares, ranked_codes
from engine.encoding.lookup import label_codes as _codes
from engine.encoding.lookup import present_column as _present
from engine.encoding.marginals import NormalScores
from engine.encoding.restore import restore_labels, restore_number
from engine.errors import InputError

LABEL_KINDS = frozenset({"binary", "event", "categorical"})


@dataclass(frozen=True, eq=False)
class Decoded:
    """A decoded table plus how many values per column had to be clipped into bounds."""

    frame: pd.DataFrame
    clip_counts: dict[str, int] = field(default_factory=dict)
    non_finite: dict[str, int] = field(default_factory=dict)  # NaN/inf before decoding, per column

    def to_dict(self) -> dict[str, Any]:
        """Row count, clip counts and non-finite counts (no data)."""
        return {
            "rows": len(self.frame),
            "clip_counts": dict(self.clip_counts),
            "clipped_total": int(sum(self.clip_counts.values())),
            "non_finite": dict(self.non_finite),
            "non_finite_total": int(sum(self.non_finite.values())),
        }


def redraw_non_finite(
    rows: np.ndarray, draw: Callable[[np.ndarray], np.ndarray], *, tries: int = 5
) -> tuple[np.ndarray, dict[str, int]]:
    """Replace rows holding NaN/inf by fresh draws (``draw(indices)`` -> new rows for them);
    rows still non-finite after ``tries`` draws are to be dropped (``np.isfinite(rows).all(1)``
    is False for them). Never filled with a mean.

    Returns the rows and ``{"rows_redrawn", "rows_dropped"}`` for the release record.

    Example:
        >>> x = np.array([[0.0, 1.0], [np.nan, 2.0], [np.inf, 3.0]])
        >>> kept, info = redraw_non_finite(x, lambda idx: np.where(idx[:, None] == 1, 5.0, np.nan))
        >>> kept[np.isfinite(kept).all(axis=1)].tolist(), info
        ([[0.0, 1.0], [5.0, 5.0]], {'rows_redrawn': 2, 'rows_dropped': 1})
    """
    rows = np.array(rows, dtype="float64", copy=True)
    bad = np.flatnonzero(~np.isfinite(rows).all(axis=1))
    redrawn = int(bad.size) if tries else 0
    for _ in range(tries):
        if bad.size == 0:
            break
        rows[bad] = draw(bad)
        bad = bad[~np.isfinite(rows[bad]).all(axis=1)]
    keep = np.isfinite(rows).all(axis=1)
    return rows, {"rows_redrawn": redrawn, "rows_dropped": int((~keep).sum())}


@dataclass(frozen=True)
class ColumnTransform:
    """Fitted parameters of one column's transform."""

    spec: ColumnSpec
    mean: float
    sd: float
    raw_mean: float
    raw_sd: float
    dtype: Any
    labels: tuple[Any, ...] | None = None
    marginal: NormalScores = field(default_factory=lambda: NormalScores.fit(np.zeros(1)))
    shares: tuple[float, ...] | None = None  # label kinds: each level's real share (frequencies.py)


class TableEncoder:
    """Table <-> float matrix for the flow (sklearn-like: configure, ``fit``, then transform).

    References: docs/method.md section 2.
    """

    def __init__(self, schema: Schema, *, conditional: bool = True) -> None:
        self.schema = schema
        self.conditional = conditional  # discrete scores drawn given the row (dequantize.py)

    # ------------------------------------------------------------------ fitting
    def fit(self, df: pd.DataFrame) -> TableEncoder:
        """Learn each column's parameters from the complete rows of ``df``."""
        data, _ = self.complete_cases(df)
        if len(data) == 0:
            raise InputError("no complete rows to fit the encoder on; check the missing values.")
        self.columns_ = [
            self._fit_column(spec, data[spec.name]) for spec in self.schema.synthesized()
        ]
        self.feature_names_ = [c.spec.name for c in self.columns_]
        self.d_model_ = len(self.columns_)
        self.n_rows_ = len(data)
        return self

    def _fit_column(self, spec: ColumnSpec, s: pd.Series) -> ColumnTransform:
        """The column's normal-score map (:mod:`engine.encoding.marginals`; no random draws)."""
        if spec.kind in LABEL_KINDS:
            labels = spec.labels or tuple(sorted(s.unique()))
            v = _codes(s, labels).astype("float64")
            top = len(labels) - 1
            marginal = NormalScores.fit(v, lower=0, upper=top, discrete=True, exact=True)
            shares = calibrated_shares(v.astype("int64"), len(labels))
        else:
            labels, v, shares = None, s.to_numpy(dtype="float64"), None
            marginal = NormalScores.fit(
                v, lower=spec.lower, upper=spec.upper, discrete=spec.kind == "integer"
            )
        raw = (float(v.mean()), _sd(v))
        return ColumnTransform(
            spec, 0.0, 1.0, *raw, s.dtype, labels=labels, marginal=marginal, shares=shares
        )

    # ------------------------------------------------------------------ forward
    def transform(
        self,
        df: pd.DataFrame,
        rng: np.random.Generator,
        *,
        cells: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> np.ndarray:
        """Model-space matrix (float64, n x d_model); dequantization noise drawn from ``rng``.

        A discrete value's score (code, integer, point mass) is drawn inside its interval
        given the rest of its row (:mod:`engine.encoding.dequantize`; ``conditional=False``: drawn
        uniformly, ignoring the row), so the flow sees dependence at its full strength.
        ``cells``: per column, raw-unit bounds ``(low, high)`` per row that replace the value's
        own interval (NaN: keep it; +-inf: unbounded); a finite bound maps to the lowest score
        that decodes to it (the missing-value layer's indicators and placeholders)."""
        self._check_fitted()
        out = np.empty((len(df), self.d_model_), dtype="float64")
        lo, hi = np.empty_like(out), np.empty_like(out)
        for j, col in enumerate(self.columns_):
            s = _present(df, col.spec.name)
            labels = col.labels
            v = _codes(s, labels) if labels is not None else s.to_numpy(dtype="float64")
            out[:, j] = col.marginal.forward(v, rng)
            if self.conditional:
                lo[:, j], hi[:, j] = col.marginal.interval(v)
                if cells is not None and col.spec.name in cells:
                    given = [_bound_scores(col, b) for b in cells[col.spec.name]]
                    lo[:, j] = np.where(np.isnan(given[0]), lo[:, j], given[0])
                    hi[:, j] = np.where(np.isnan(given[1]), hi[:, j], given[1])
        if self.conditional:
            out = conditional_scores(out, lo, hi, rng)
        means = np.array([c.mean for c in self.columns_])
        return (out - means) / np.array([c.sd for c in self.columns_])

    # ------------------------------------------------------------------ backward
    def inverse_transform(self, arr: np.ndarray, *, calibrate: bool | None = None) -> Decoded:
        """Back to a table with the fitted columns' names, order, dtypes, labels and decimals.

        ``calibrate`` (default: batches of at least ``CALIBRATE_ROWS`` rows): coded columns
        whose every level has >= 10 real rows get their levels by rank of the scores, in the
        real shares (:mod:`engine.encoding.frequencies`); otherwise at the fixed thresholds."""
        calibrate = len(arr) >= CALIBRATE_ROWS if calibrate is None else calibrate
        self._check_fitted()
        arr = np.asarray(arr, dtype="float64")
        if arr.ndim != 2 or arr.shape[1] != self.d_model_:
            raise ValueError(f"expected an array of shape (n, {self.d_model_}), got {arr.shape}")
        columns: dict[str, pd.Series] = {}
        clips: dict[str, int] = {}
        non_finite: dict[str, int] = {}
        for j, col in enumerate(self.columns_):
            y = arr[:, j] * col.sd + col.mean
            non_finite[col.spec.name] = int((~np.isfinite(y)).sum())
            if calibrate and col.shares is not None:
                columns[col.spec.name] = restore_labels(ranked_codes(y, col.shares), col)
                clips[col.spec.name] = non_finite[col.spec.name]
                continue
            columns[col.spec.name], clips[col.spec.name] = self._decode_column(col, y)
        return Decoded(pd.DataFrame(columns), clips, non_finite)

    def _decode_column(self, col: ColumnTransform, y: np.ndarray) -> tuple[pd.Series, int]:
        """One column back to its original type; returns (values, number clipped)."""
        kind = col.spec.kind
        # codes for label kinds, whole numbers for integers; ``tail``: beyond the fitted range,
        # decoded at a bound (a clip)
        x, tail = col.marginal.decode(y)
        if kind in ("binary", "event"):
            codes = np.where(np.nan_to_num(x, nan=col.raw_mean) >= 0.5, 1, 0)
            return restore_labels(codes, col), int((~np.isfinite(y)).sum())
        if kind == "categorical":
            assert col.labels is not None  # set by fit for label kinds
            top = len(col.labels) - 1
            codes, clipped = _clip(np.floor(_fill_nan(x, 0.0)), 0.0, float(top), y)
            return restore_labels(codes.astype("int64"), col), clipped + int(tail.sum())
        if kind == "integer":
            lower = None if col.spec.lower is None else float(np.ceil(col.spec.lower))
            upper = None if col.spec.upper is None else float(np.floor(col.spec.upper))
            v, clipped = _clip(np.floor(_fill_nan(x, np.floor(col.raw_mean))), lower, upper, y)
            return restore_number(v, col, whole=True), clipped + int(tail.sum())
        v = _fill_nan(x, col.raw_mean)
        if col.spec.decimals is not None:  # round first: a round-off hair above max is not a clip
            v = np.round(v, col.spec.decimals)
        v, clipped = _clip(v, col.spec.lower, col.spec.upper, y)
        return restore_number(v, col, whole=False), clipped + int(tail.sum())

    # ------------------------------------------------------------------ distances
    def distance_space(self, df: pd.DataFrame) -> np.ndarray:
        """Deterministic standardized rows for nearest-neighbour privacy distances.

        Numeric columns (continuous, integer, time) z-scored with the real data's mean/SD, binary
        0/1 codes z-scored, categoricals one-hot scaled by 1/sqrt(2) (two rows in different
        levels are at distance 1 in that block). No dequantization noise.

        References: docs/method.md section 5 (eq. 24, "on the standardized scale").
        """
        self._check_fitted()
        blocks = []
        for col in self.columns_:
            s = _present(df, col.spec.name)
            if col.spec.kind == "categorical":
                assert col.labels is not None  # set by fit for label kinds
                onehot = np.eye(len(col.labels))[_codes(s, col.labels)]
                blocks.append(onehot / np.sqrt(2.0))
                continue
            v = (
                _codes(s, col.labels).astype("float64")
                if col.labels is not None
                else s.to_numpy(dtype="float64")
            )
            blocks.append(((v - col.raw_mean) / col.raw_sd)[:, None])
        return np.hstack(blocks) if blocks else np.empty((len(df), 0))

    # ------------------------------------------------------------------ missing rows
    def complete_cases(self, df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The synthesized columns of rows with no missing value in them, and what was dropped.

        Returns ``(frame, info)``; ``frame`` keeps the original index. ``info`` has ``rows_in``,
        ``rows_used``, ``rows_dropped``, ``missing_by_column`` (counts per used column) and a
        plain-English ``reason``. References: docs/method.md section 2 (the paper drops incomplete
        rows).
        """
        used = [c.name for c in self.schema.synthesized()]
        missing = [c for c in used if c not in df.columns]
        if missing:
            raise InputError(
                f"the table has no column {', '.join(repr(m) for m in missing)}; "
                "use the same columns as the schema."
            )
        data = df[used]
        gone = data.isna() | data.isin([np.inf, -np.inf])
        keep = ~gone.any(axis=1)
        by_column = {c: int(gone[c].sum()) for c in used if gone[c].any()}
        info = {
            "rows_in": len(df),
            "rows_used": int(keep.sum()),
            "rows_dropped": int((~keep).sum()),
            "missing_by_column": by_column,
            "reason": "rows with a missing value in a used column are left out "
            "(complete cases, as in the paper)",
        }
        return data[keep].copy(), info

    def _check_fitted(self) -> None:
        """Raise a clear error when ``fit`` was not called."""
        if not hasattr(self, "columns_"):
            raise RuntimeError("TableEncoder is not fitted; call fit(df) first")


def _sd(v: np.ndarray) -> float:
    """Population SD, 1.0 when the column does not vary (avoids dividing by zero).

    Computed on values scaled by their largest magnitude, so a column of values near 1e200
    (whose squares overflow to inf) still gets its true SD instead of a silent 1.0.

    Example:
        >>> f"{_sd(np.array([1e200, 3e200])):.3g}", _sd(np.array([2.0, 2.0]))
        ('1e+200', 1.0)
    """
    sd = _std(v)
    return sd if sd > 0 and np.isfinite(sd) else 1.0


def _std(v: np.ndarray) -> float:
    """Population SD without overflow (0.0 for a constant or empty column)."""
    scale = float(np.max(np.abs(v))) if v.size else 0.0
    if not (np.isfinite(scale) and scale > 0):
        return 0.0
    return float(np.std(v / scale)) * scale


def _bound_scores(col: ColumnTransform, bounds: np.ndarray) -> np.ndarray:
    """Normal scores of raw-unit bounds: the lowest score that decodes to each finite bound;
    +-inf and NaN as they are."""
    b = np.asarray(bounds, dtype="float64")
    finite = np.isfinite(b)
    scores = col.marginal.interval(np.where(finite, b, 0.0))[0]
    return np.where(finite, scores, b)


def _fill_nan(y: np.ndarray, center: float) -> np.ndarray:
    """NaN -> the column's fitted centre (then counted as clipped by ``_clip``)."""
    return np.where(np.isnan(y), center, y)


def _clip(
    v: np.ndarray, lower: float | None, upper: float | None, raw: np.ndarray
) -> tuple[np.ndarray, int]:
    """Clip to [lower, upper]; count values outside it plus non-finite raw values."""
    lo = -np.inf if lower is None else lower
    hi = np.inf if upper is None else upper
    outside = (v < lo) | (v > hi) | ~np.isfinite(raw)
    v = np.clip(v, lo, hi)
    v = np.where(np.isfinite(v), v, 0.0)  # only reachable without bounds: inf with no bound
    return v, int(outside.sum())
