"""The encoder the pipeline uses: dates -> days, missing values -> indicators and placeholders,
then the :class:`~engine.encoding.encoder.TableEncoder`; and the reverse after it.

Each layer is its own module (:mod:`engine.columns.dates`, :mod:`engine.encoding.missing`); this
one only chains them, so that the pipeline sees one encoder with the inner encoder's face
(``d_model_``, ``feature_names_``, ...). Pure pandas (no torch).

References: issue 13 items 4-5.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from engine.columns.dates import DateLayer
from engine.columns.kinds import ColumnSpec
from engine.encoding.missing import MissingLayer, missing_mask
from engine.encoding.nominal import NominalLayer


class LayeredEncoder:
    """Dates -> days, missing -> indicator + placeholder and nominal categories -> one 0/1
    column per level (:mod:`engine.encoding.nominal`) before a
    :class:`~engine.encoding.encoder.TableEncoder`, and the reverse after it.

    ``transform`` (training, noise injection) draws hot-deck placeholders; ``distance_space`` uses
    the deterministic ones and each nominal column itself; ``inverse_transform`` returns the
    table with dates, missing cells and nominal columns back and without indicators. Other
    attributes are the inner encoder's (``feature_names_`` names the model columns).
    """

    def __init__(
        self,
        schema: Any,
        frame: pd.DataFrame,
        rng: np.random.Generator,
        *,
        model_missing: bool,
        nominal: bool = True,
        rules: Any = None,
    ) -> None:
        from engine.encoding.encoder import TableEncoder
        from engine.encoding.gaps import GapLayer

        self.schema = schema  # the person-facing schema (no indicators; dates as dates)
        # The logical rules every decoded row keeps (engine.columns.rules.RuleSet), set by the
        # pipeline: the audit's rows and the released ones pass through the same repair.
        self.rules: Any = rules
        self.gaps: GapLayer | None = None  # order rules built in: b modelled as b - a
        used = [c.name for c in schema.synthesized()]
        dates = [c.name for c in schema.synthesized() if c.kind == "date"]
        self.dates = DateLayer.fit(frame, dates, rng) if dates else None
        days = self._days(frame[used])
        # (dates are left to the repair: each date column's days count from its own secret day)
        plain = {c.name: self._modelled_spec(c) for c in schema.columns if c.kind != "date"}
        self.gaps = GapLayer.fit(days, rules, plain.get)
        if self.gaps is not None:
            days = self.gaps.to_gaps(days)
        self.missing = MissingLayer.fit(days, used if model_missing else ())
        taken = set(map(str, frame.columns)) | set(self.missing.indicators.values())
        self.nominal = NominalLayer.fit(days, schema.synthesized() if nominal else (), taken)
        columns = tuple(self._modelled_spec(c) for c in schema.columns)
        self.modelled_schema = replace(schema, columns=columns + tuple(self.missing.specs()))
        filled = self.missing.fill(days, rng)
        wide = replace(
            self.modelled_schema,
            columns=tuple(
                s
                for c in self.modelled_schema.columns
                for s in (self.nominal.specs(c.name) if c.name in self.nominal.levels else [c])
            ),
        )
        self.inner = TableEncoder(wide).fit(self.nominal.expand(filled))
        # The audit's distances use each nominal column itself (one-hot), not its indicators.
        self.audit = (
            TableEncoder(self.modelled_schema).fit(filled) if self.nominal.levels else self.inner
        )
        # Each nominal indicator's model column and cut (the lowest score that decodes to 1).
        self._cuts: dict[str, tuple[int, float]] = {}
        for name in self.nominal.indicators():
            j = self.inner.feature_names_.index(name)
            lowest_one, _ = self.inner.columns_[j].marginal.interval(np.ones(1))
            self._cuts[name] = (j, float(lowest_one[0]))

    def _modelled_spec(self, spec: ColumnSpec) -> ColumnSpec:
        """A date column as days (whole days: integer; with a time of day: continuous); the
        later column of a built-in order rule as its gap (:mod:`engine.encoding.gaps`)."""
        gaps = getattr(self, "gaps", None)
        if gaps is not None and spec.name in gaps.gap_specs:
            return gaps.gap_specs[spec.name]
        if spec.kind != "date" or spec.action != "synthesize" or self.dates is None:
            return spec
        col = next(c for c in self.dates.columns if c.name == spec.name)
        kind = "integer" if col.whole_days else "continuous"
        return replace(
            spec,
            kind=kind,
            lower=col.lower,
            upper=col.upper,
            decimals=0 if col.whole_days else 6,
            dtype="float64",
        )

    def _days(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Dates as days, and numeric codes read as the schema reads them (text codes, rare
        levels merged: :func:`engine.columns.codes.recode`, a no-op on rows already read so)."""
        from engine.columns.codes import recode

        coded = [c for c in self.schema.synthesized() if c.merged or c.ordered is not None]
        if coded:
            frame = frame.assign(
                **{c.name: recode(c, frame[c.name]) for c in coded if c.name in frame}
            )
        days = frame if self.dates is None else self.dates.to_days(frame)
        gaps = getattr(self, "gaps", None)
        return days if gaps is None else gaps.to_gaps(days)

    def modelled(self, frame: pd.DataFrame, rng: np.random.Generator | None) -> pd.DataFrame:
        """The table as the flow sees it (days, indicators, placeholders)."""
        return self.missing.fill(self._days(frame), rng)

    def transform(self, df: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
        """Model-space matrix; placeholders (and dequantization noise) drawn from ``rng``,
        then indicators and placeholders drawn given their rows (:meth:`MissingLayer.cells`)."""
        days = self._days(df)
        filled = self.missing.fill(days, rng)
        cells = self.missing.cells(days)
        if self.nominal.levels:  # a nominal placeholder's indicators are free too
            gone = {c: missing_mask(days[c]).to_numpy() for c in self.nominal.levels if c in days}
            cells.update(self.nominal.free(gone))
        wide = self.nominal.expand(filled)
        return np.asarray(self.inner.transform(wide, rng, cells=cells))

    def distance_space(self, df: pd.DataFrame) -> np.ndarray:
        """Deterministic distance rows, missingness indicators included (nominal columns
        one-hot, as without their indicators)."""
        return np.asarray(self.audit.distance_space(self.modelled(df, None)))

    def distance_groups(self) -> dict[str, list[int]]:
        """The distance-space columns (:meth:`distance_space`) of each person-facing column: a
        category's one-hot block, a column's missingness indicator with the column. The audit
        leaves each group out in turn to name the columns that drive a refusal."""
        owner = {ind: col for col, ind in self.missing.indicators.items()}
        groups: dict[str, list[int]] = {}
        j = 0
        for col in self.audit.columns_:
            width = len(col.labels) if col.spec.kind == "categorical" and col.labels else 1
            name = owner.get(col.spec.name, col.spec.name)
            groups.setdefault(name, []).extend(range(j, j + width))
            j += width
        return groups

    def inverse_transform(self, arr: np.ndarray) -> Any:
        """The inner encoder's :class:`~engine.encoding.encoder.Decoded`, its frame with the
        missing cells and dates back; counts keep the person-facing columns only."""
        decoded = self.inner.inverse_transform(arr)
        frame, clips, non_finite = (
            decoded.frame,
            dict(decoded.clip_counts),
            dict(decoded.non_finite),
        )
        if self.nominal.levels:
            arr = np.asarray(arr, dtype="float64")
            cols = self.inner.columns_
            margins = {
                n: arr[:, j] * cols[j].sd + cols[j].mean - cut for n, (j, cut) in self._cuts.items()
            }
            frame = self.nominal.restore(frame, margins)
            for c, own in self.nominal.names.items():  # counts of rows, not of indicators
                clips[c] = max(clips.get(n, 0) for n in own if n is not None)
                non_finite[c] = max(non_finite.get(n, 0) for n in own if n is not None)
        frame = self.missing.restore(frame)
        if self.gaps is not None:
            frame = self.gaps.from_gaps(frame)
        if self.dates is not None:
            frame = self.dates.to_dates(frame)
        if self.rules:
            frame = self.rules.apply(frame)
        keep = set(frame.columns)
        return replace(
            decoded,
            frame=frame,
            clip_counts={k: v for k, v in clips.items() if k in keep},
            non_finite={k: v for k, v in non_finite.items() if k in keep},
        )

    def complete_cases(self, df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
        """All rows of the synthesized columns (none left out: missingness is modelled)."""
        return prepared_rows(self.schema, df, complete_cases=False)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not yet set (during __init__ or unpickling)
            raise AttributeError(name)
        return getattr(self.inner, name)


def prepared_rows(
    schema: Any, df: pd.DataFrame, *, complete_cases: bool
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The synthesized columns (dates parsed) and the truthful ``rows_dropped`` record.

    With ``complete_cases`` rows with a missing value in a used column are left out (today's
    behaviour, as in the paper); without it every row is kept and missingness is modelled,
    except the rows missing a value of a column that is missing in fewer than 10 rows (a
    count the release would reproduce exactly).
    """
    from engine.columns.codes import recode
    from engine.columns.dates import parse_dates
    from engine.disclosure import THRESHOLD
    from engine.encoding.encoder import TableEncoder

    used = [c.name for c in schema.synthesized()]
    data = df[used].copy()
    for c in schema.synthesized():
        if c.kind == "date":
            data[c.name] = parse_dates(data[c.name])
        data[c.name] = recode(c, data[c.name])  # codes as text, rare levels merged
    gone = pd.DataFrame({c: missing_mask(data[c]) for c in used}, index=data.index)
    by_column = {c: int(gone[c].sum()) for c in used if gone[c].any()}
    if complete_cases:
        real, info = TableEncoder(schema).complete_cases(data)
        info["missing_modelled"] = False
        return real, info
    # A column missing in 1-9 rows: its missing rate would come back exactly and show a count
    # under 10 (engine.disclosure.THRESHOLD); those few rows are left out instead.
    rare = [c for c, k in by_column.items() if k < THRESHOLD]
    keep = ~gone[rare].any(axis=1) if rare else pd.Series(True, index=data.index)
    reason = (
        "no row is left out: missing values are modelled (each column's missingness is "
        "synthesized together with the values)"
    )
    if rare:
        reason = (
            "missing values are modelled (each column's missingness is synthesized together "
            f"with the values), except in columns missing in fewer than {THRESHOLD} rows, "
            "whose rows with a missing value are left out"
        )
    info = {
        "rows_in": len(df),
        "rows_used": int(keep.sum()),
        "rows_dropped": int((~keep).sum()),
        "missing_by_column": by_column,
        "reason": reason,
        "missing_modelled": True,
    }
    return data[keep.to_numpy()].copy(), info
