"""Key and target columns turned into the cells the disclosure measures count: numbers grouped
the way synthpop's ``numtocat.syn`` groups them, one integer code per combination of keys, and
the mixed-type coordinates of anonymeter's nearest-neighbour attack.

**The grouping rule** (synthpop 1.9 ``numtocat.syn`` / ``group_num``): a numeric column is cut
into :data:`GROUPS` = 5 groups at the quantiles of its values (``classIntervals(style =
"quantile")``: the 0, 20, ..., 100 % quantiles, R's type 7 = numpy's default), repeated breaks
merged, intervals closed on the left (``cut(right = FALSE, include.lowest = TRUE)``: the last one
closed on both sides); when fewer than three groups remain (a column with a few values), equal-
width breaks instead (``style = "equal"``). Two choices differ from synthpop and are stated:
(1) a whole-number column with at most :data:`EXACT_UP_TO` = 100 distinct values (age in years,
a count) is used value by value, as synthpop's ``disclosure()`` does for any number unless asked
to group it, since an attacker knows a person's age in years, not a quintile; (2) the breaks come
from the real table alone (synthpop pools real and synthetic values), so that the released file
and the fresh real sample it is compared with are cut at the same places, and a value beyond
the real range falls in the end group. Missing values form their own level ("Missing", as
``usekeysNA = TRUE``).

References: Nowok, Raab & Dibben (2016) "synthpop: Bespoke creation of synthetic data in R",
J. Stat. Softw. 74(11); synthpop 1.9 R/numtocat.syn.r and R/utility.syn.r (``group_num``);
Gower (1971) Biometrics 27(4) (the mixed-type distance); anonymeter 1.1
``mixed_types_transform`` (numbers scaled by their range).

Example:
    >>> numtocat_breaks(np.arange(0.0, 101.0)).round(6).tolist()
    [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    >>> numtocat_breaks(np.array([0.0, 0.0, 0.0, 0.0, 1.0])).round(6).tolist()  # 2 quantile groups
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.disclosure.counts import THRESHOLD

GROUPS = 5  # numtocat.syn's default catgroups
EXACT_UP_TO = 100  # distinct whole numbers used value by value (age in years)
MISSING = "Missing"


def numtocat_breaks(values: np.ndarray, groups: int = GROUPS) -> np.ndarray:
    """numtocat's breaks: quantiles, repeats merged; equal width when < 3 groups remain."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return np.array([0.0, 1.0])
    breaks = np.unique(np.quantile(x, np.linspace(0.0, 1.0, groups + 1)))
    if len(breaks) - 1 < 3:
        lo, hi = float(x.min()), float(x.max())
        breaks = np.linspace(lo, hi if hi > lo else lo + 1.0, groups + 1)
    return breaks


def _band_labels(breaks: np.ndarray) -> list[str]:
    last = len(breaks) - 2
    return [
        f"[{breaks[i]:g}, {breaks[i + 1]:g}{']' if i == last else ')'}" for i in range(last + 1)
    ]


@dataclass(frozen=True)
class Banding:
    """How one column becomes levels: ``breaks`` None keeps each value as it is."""

    column: str
    breaks: tuple[float, ...] | None

    def levels(self, s: pd.Series) -> pd.Series:
        """The column's values as level labels (strings), missing as "Missing".

        Example:
            >>> b = Banding("sbp", (100.0, 120.0, 140.0))
            >>> b.levels(pd.Series([100, 119.9, 120, 140, 200, None])).tolist()
            ['[100, 120)', '[100, 120)', '[120, 140]', '[120, 140]', '[120, 140]', 'Missing']
        """
        missing = s.isna().to_numpy()
        if self.breaks is None:
            out = s.astype(object).map(_exact).astype(str).to_numpy()
        else:
            edges = np.asarray(self.breaks)
            x = _numeric(s)
            idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2)
            out = np.asarray(_band_labels(edges), dtype=object)[idx]
        out = np.where(missing, MISSING, out)
        return pd.Series(out, index=s.index, dtype=object)

    def describe(self, rows: int) -> str:
        """In words, for the report and ``audit.json``: "as recorded" or the groups by their
        inner breaks only (the outer ones are the real minimum and maximum, which the
        disclosure rules never show), and no break at all where a group of ``rows`` real values
        would hold fewer than 10.

        Example:
            >>> Banding("sbp", (90.0, 120.0, 140.0, 250.0)).describe(300)
            '3 groups: below 120, 120 to under 140, 140 and above'
            >>> Banding("sbp", (90.0, 120.0, 140.0, 250.0)).describe(24)
            '3 groups at the quantiles (breaks not shown: fewer than 10 values a group)'
        """
        if self.breaks is None:
            return "as recorded"
        inner = [f"{b:g}" for b in self.breaks[1:-1]]
        groups = len(self.breaks) - 1
        if rows / groups < THRESHOLD or not inner:
            return (
                f"{groups} groups at the quantiles (breaks not shown: fewer than 10 values a group)"
            )
        middle = [f"{a} to under {b}" for a, b in zip(inner[:-1], inner[1:], strict=True)]
        return f"{groups} groups: " + ", ".join(
            [f"below {inner[0]}", *middle, f"{inner[-1]} and above"]
        )


def _exact(value: object) -> object:
    """Whole floats as integers (1.0 and 1 are one level)."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return int(value)
    return value


def _numeric(s: pd.Series) -> np.ndarray:
    """A column as float numbers: dates as days since 1970, other values coerced."""
    if pd.api.types.is_datetime64_any_dtype(s):
        return (s.astype("datetime64[ns]").astype("int64") / 86_400e9).to_numpy(dtype=float)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)


def fit_banding(real: pd.DataFrame, column: str) -> Banding:
    """The rule of the module docstring for one column of the real table."""
    s = real[column]
    is_number = pd.api.types.is_numeric_dtype(s) or pd.api.types.is_datetime64_any_dtype(s)
    if not is_number or pd.api.types.is_bool_dtype(s):
        return Banding(column, None)
    x = _numeric(s)
    x = x[np.isfinite(x)]
    whole = bool(np.all(x == np.round(x)))
    if not pd.api.types.is_datetime64_any_dtype(s) and whole and len(np.unique(x)) <= EXACT_UP_TO:
        return Banding(column, None)
    return Banding(column, tuple(float(b) for b in numtocat_breaks(x)))


def cell_codes(
    frames: Sequence[pd.DataFrame], columns: Sequence[str], bands: dict[str, Banding]
) -> list[np.ndarray]:
    """One integer code per combination of the columns' levels, shared by all ``frames``
    (equal codes: equal combinations), each frame's codes in its row order.

    Example:
        >>> a = pd.DataFrame({"sex": ["F", "M", "F"], "age": [40, 41, 40]})
        >>> b = pd.DataFrame({"sex": ["M", "F"], "age": [41, 50]})
        >>> bands = {c: Banding(c, None) for c in ("sex", "age")}
        >>> [c.tolist() for c in cell_codes([a, b], ["sex", "age"], bands)]
        [[0, 1, 0], [1, 2]]
    """
    stacked = pd.concat(
        [pd.DataFrame({c: bands[c].levels(f[c]).to_numpy() for c in columns}) for f in frames],
        ignore_index=True,
    )
    codes = stacked.groupby(list(columns), sort=False, dropna=False).ngroup().to_numpy()
    bounds = np.cumsum([0] + [len(f) for f in frames])
    return [codes[bounds[i] : bounds[i + 1]] for i in range(len(frames))]


def gower_coordinates(
    frames: Sequence[pd.DataFrame], columns: Sequence[str], real: pd.DataFrame
) -> list[np.ndarray]:
    """Coordinates in which the L1 distance is anonymeter's Gower-like distance: a number
    divided by its range in the real table (a difference of at most about 1), a category one-
    hot with 1/2 per coordinate (a mismatch costs 1), a missing number a separate 0/1 flag."""
    blocks: list[list[np.ndarray]] = [[] for _ in frames]
    for c in columns:
        s = real[c]
        if (
            pd.api.types.is_numeric_dtype(s)
            and not pd.api.types.is_bool_dtype(s)
            or (pd.api.types.is_datetime64_any_dtype(s))
        ):
            x = _numeric(s)
            lo, hi = np.nanmin(x), np.nanmax(x)
            span = hi - lo if hi > lo else 1.0
            for i, f in enumerate(frames):
                v = (_numeric(f[c]) - lo) / span
                gone = ~np.isfinite(v)
                blocks[i] += [np.where(gone, 0.0, v), gone.astype(float)]
        else:
            levels = pd.Index(pd.unique(s.astype(object).fillna(MISSING)))
            for i, f in enumerate(frames):
                pos = levels.get_indexer(pd.Index(f[c].astype(object).fillna(MISSING)))
                onehot = np.zeros((len(f), len(levels) + 1))
                onehot[np.arange(len(f)), np.where(pos < 0, len(levels), pos)] = 0.5
                blocks[i].append(onehot)
    return [
        np.column_stack([b if b.ndim == 2 else b[:, None] for b in bl]) if bl else np.zeros((0, 0))
        for bl in blocks
    ]
