"""Nominal categories as one 0/1 column per level, read back as the level with the largest score.

A category with three or more levels whose labels are words (a group, a site, a diagnosis) has
no order. Given to the flow as one ordered-probit code (the encoder's one dimension per column),
its levels sit on a line in an arbitrary (alphabetical) order: a level whose rows differ most
from the rest (often the regression's reference level) may sit between two others, the flow has
to learn a non-monotone dependence on the code, and noise in the latent space moves rows to
the *neighbouring* level only. Measured on lifelines' kidney transplant table (four race x sex
groups; ``fast`` flows on 50 % members, 6 seeds x 3 draws, w = 0.6): the Cox terms of the group
were biased by +0.6 to +0.8 real SEs each (mean |z-gap| 1.15); ordering the levels by death rate
instead gave 1.08.

Here such a column becomes one indicator per level except its most frequent one (the *base*:
none of the indicators set), each a binary column of the modelled table: the encoder gives each
its probit score, drawn on its side of the cut given the rest of the row
(:mod:`engine.encoding.dequantize`), so the flow sees every level's dependence on the other
columns separately and the indicators' (negative) latent correlations. Back, each row gets the
level whose indicator is furthest above its cut (the base level: 0), i.e. the argmax of a
multinomial probit with the base as reference. Each level gets its real share in every batch
of at least ``CALIBRATE_ROWS`` rows (the release itself): the rarest level first takes the rows
where its score leads the others' most, and so on. So this is done only where that holds for
the release, in a table of at least ``CALIBRATE_ROWS`` rows whose every level has at least
``MIN_LEVEL_ROWS`` rows (the disclosure rule of :mod:`engine.encoding.frequencies`); other
columns keep the ordered probit (:meth:`NominalLayer.fit` says why). On the kidney table (same
runs): mean |z-gap| 1.15 -> 0.96, group terms unbiased (mean z -0.03..-0.15).

Categories labelled by numbers (a stage coded 1-4 or "1"-"4", a score) keep the ordered probit, and
so do binary columns (one indicator either way) and categories with more than ``MAX_LEVELS`` levels
(each indicator is a dimension of the flow, whose generating pass costs one network evaluation per
dimension). The privacy audit's distance space is unchanged: it is computed on the column itself,
one-hot (:meth:`engine.encoding.encoder.TableEncoder.distance_space`).

Written here because the step is specific to this encoder (scikit-learn's ``OneHotEncoder``
gives the 0/1 columns but neither the score-based read-back nor the calibrated shares).

References: issue 13 item 2; Albert & Chib (1993) for the multinomial probit by data
augmentation.

Example:
    >>> import pandas as pd
    >>> f = pd.DataFrame({"g": ["a", "b", "c", "b"] * 60, "x": range(240)})
    >>> spec = ColumnSpec("g", "categorical", "synthesize", "", labels=("a", "b", "c"))
    >>> layer = NominalLayer.fit(f, [spec], set(f.columns))
    >>> layer.names["g"], layer.levels["g"][layer.base["g"]]
    (('g = a', None, 'g = c'), 'b')
    >>> wide = layer.expand(f)
    >>> list(wide.columns), wide.iloc[0].tolist()
    (['g = a', 'g = c', 'x'], [1, 0, 0])
    >>> margins = {"g = a": np.array([0.5, -1.0, -0.2]), "g = c": np.array([0.1, -0.3, 0.4])}
    >>> layer.restore(wide.iloc[:3], margins)["g"].tolist()
    ['a', 'b', 'c']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from numbers import Number
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from engine.columns.kinds import ColumnSpec
from engine.encoding.frequencies import CALIBRATE_ROWS, calibrated_shares, level_counts
from engine.encoding.lookup import label_codes as _codes
from engine.encoding.restore import restore_labels

MAX_LEVELS = 12  # more levels keep the ordered probit (one flow dimension per indicator)


def is_nominal(spec: ColumnSpec) -> bool:
    """A synthesized category with 3 to ``MAX_LEVELS`` levels, not all of them numbers.

    Example:
        >>> is_nominal(ColumnSpec("g", "categorical", "synthesize", "", labels=("a", "b", "c")))
        True
        >>> is_nominal(ColumnSpec("stage", "categorical", "synthesize", "", labels=(1, 2, 3)))
        False
        >>> is_nominal(ColumnSpec("grade", "categorical", "synthesize", "", labels=("1", "2", "3")))
        False
    """
    labels = spec.labels or ()
    numbers = all(_number(v) for v in labels)
    if (
        spec.ordered is not None
    ):  # numeric codes: the name said ordered or not (engine.columns.codes)
        numbers = spec.ordered
    return (
        spec.kind == "categorical"
        and spec.action == "synthesize"
        and 3 <= len(labels) <= MAX_LEVELS
        and not numbers
    )


def _number(value: Any) -> bool:
    """A number, or a label that reads as one ("2", "3.5"): a level of an ordered scale."""
    if isinstance(value, bool):
        return False
    if isinstance(value, Number):
        return True
    try:
        float(str(value))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class NominalLayer:
    """Per nominal column: its levels, the base level and each other level's indicator."""

    levels: dict[str, tuple[Any, ...]]  # column -> its labels (the schema's order)
    base: dict[str, int]  # column -> index of its most frequent level (no indicator)
    names: dict[str, tuple[str | None, ...]]  # column -> indicator name per level (base: None)
    shares: dict[str, tuple[float, ...]]  # column -> each level's real share
    dtypes: dict[str, Any]  # column -> its dtype, restored on the way back

    @classmethod
    def fit(cls, frame: pd.DataFrame, specs: Iterable[Any], taken: set[str]) -> NominalLayer:
        """For each spec that :func:`is_nominal`, its indicators (names unique against
        ``taken``, which is updated) and real shares, from the observed values in ``frame``.

        Only where every release is calibrated: a table of at least ``CALIBRATE_ROWS`` rows
        whose every level has at least ``MIN_LEVEL_ROWS`` rows; other columns keep the
        ordered probit. Read off by the argmax alone, rows the flow leaves near every cut go
        to the base level, and a rare level's share comes back too low (a site of 4 people in
        397 got no synthetic row; larynx's stage, 90 rows: TV 0.067 -> 0.112)."""
        levels, base, names, shares, dtypes = {}, {}, {}, {}, {}
        for spec in specs:
            if not is_nominal(spec) or spec.name not in frame.columns:
                continue
            labels = tuple(spec.labels)
            codes = _codes(frame[spec.name].dropna(), labels)
            real_shares = calibrated_shares(codes, len(labels))
            if len(frame) < CALIBRATE_ROWS or real_shares is None:
                continue
            dtypes[spec.name] = frame[spec.name].dtype
            counts = np.bincount(codes, minlength=len(labels))
            base[spec.name] = int(np.argmax(counts))
            own: list[str | None] = []
            for k, label in enumerate(labels):
                if k == base[spec.name]:
                    own.append(None)
                    continue
                name = f"{spec.name} = {label}"
                while name in taken:
                    name += "#"
                taken.add(name)
                own.append(name)
            levels[spec.name], names[spec.name] = labels, tuple(own)
            shares[spec.name] = real_shares
        return cls(levels, base, names, shares, dtypes)

    def specs(self, column: str) -> list[ColumnSpec]:
        """The binary column specs that stand for ``column`` in the modelled schema."""
        labels = self.levels[column]
        return [
            ColumnSpec(
                name,
                "binary",
                "synthesize",
                f"whether '{column}' is {labels[k]!r}",
                labels=(0, 1),
                dtype="int64",
            )
            for k, name in enumerate(self.names[column])
            if name is not None
        ]

    def expand(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Each nominal column replaced, at its place, by its 0/1 indicators."""
        parts: dict[str, Any] = {}
        for c in frame.columns:
            if c not in self.levels:
                parts[c] = frame[c]
                continue
            codes = _codes(frame[c], self.levels[c])
            for k, name in enumerate(self.names[c]):
                if name is not None:
                    parts[name] = (codes == k).astype("int64")
        return pd.DataFrame(parts, index=frame.index)

    def free(self, gone: Mapping[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """For the encoder's conditional draw: where a nominal value is missing (``gone``:
        column -> True per row), its indicators are placeholders, free to take any score
        given the row (NaN bounds elsewhere: the indicator keeps its own side of the cut)."""
        out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for c, rows in gone.items():
            for name in self.names.get(c, ()):
                if name is not None:
                    out[name] = (np.where(rows, -np.inf, np.nan), np.where(rows, np.inf, np.nan))
        return out

    def restore(
        self,
        frame: pd.DataFrame,
        margins: Mapping[str, np.ndarray],
        *,
        calibrate: bool | None = None,
    ) -> pd.DataFrame:
        """Each nominal column back at the place of its first indicator, the indicators
        dropped. ``margins``: per indicator, its score minus its cut (above 0: set). A row
        gets the level with the largest margin (the base level's is 0); ``calibrate``
        (default: batches of at least ``CALIBRATE_ROWS`` rows) gives each level its real
        share (:func:`ranked_levels`)."""
        calibrate = len(frame) >= CALIBRATE_ROWS if calibrate is None else calibrate
        out: dict[str, Any] = {}
        for c in frame.columns:
            owner = self._owner(c)
            if owner is None:
                out[c] = frame[c]
            elif owner not in out:
                score = np.column_stack(
                    [
                        np.zeros(len(frame)) if n is None else np.asarray(margins[n], "float64")
                        for n in self.names[owner]
                    ]
                )
                score = np.nan_to_num(score, nan=-np.inf)
                codes = (
                    ranked_levels(score, self.shares[owner])
                    if calibrate
                    else np.argmax(score, axis=1)
                )
                col = SimpleNamespace(labels=self.levels[owner], dtype=self.dtypes[owner])
                out[owner] = restore_labels(codes, col).set_axis(frame.index)
        return pd.DataFrame(out, index=frame.index)

    def indicators(self) -> list[str]:
        """Every indicator's name."""
        return [n for own in self.names.values() for n in own if n is not None]

    def _owner(self, name: str) -> str | None:
        for c, own in self.names.items():
            if name in own:
                return c
        return None


def ranked_levels(score: np.ndarray, shares: tuple[float, ...]) -> np.ndarray:
    """Level per row with ``level_counts(shares, n)`` rows each: the rarest level first takes
    the free rows where its score leads the best other remaining level's most, then the next
    rarest, and so on; the most common level takes the rest. With two levels this is the
    ranking of :func:`engine.encoding.frequencies.ranked_codes`.

    Example:
        >>> s = np.array([[0.0, 2.0, 1.0], [0.0, -1.0, 3.0], [0.0, 0.5, 0.4], [0.0, -2.0, -1.0]])
        >>> ranked_levels(s, (0.5, 0.25, 0.25)).tolist()
        [1, 2, 0, 0]
    """
    n, k = score.shape
    counts = level_counts(shares, n)
    codes = np.full(n, -1, dtype=np.int64)
    order = list(np.argsort(counts, kind="stable"))
    while len(order) > 1:
        level = order.pop(0)
        free = np.flatnonzero(codes < 0)
        lead = score[free, level] - score[np.ix_(free, order)].max(axis=1)
        take = free[np.argsort(-lead, kind="stable")[: counts[level]]]
        codes[take] = level
    codes[codes < 0] = order[0]
    return codes
