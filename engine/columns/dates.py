"""Date and datetime columns as numbers: days from a secret per-table reference, and back.

A date is modelled as the number of days since a reference date: the earliest date in the
table's date columns, moved earlier by a secret random offset (30 to 365 days, drawn with the
run's random generator). The reference and the offset live in memory only: they are never
written to any file or to ``audit.json``, so a recipient cannot recover an exact real date from
the smallest number of days. All date columns share one reference, so the flow models them
jointly and the intervals between them (admission to discharge, say) are preserved.

Date-only columns (every value at midnight) are modelled as whole days and come back as dates
at midnight (``datetime64``); datetime columns as fractional days, rounded back to the second.
Text dates (ISO ``2021-03-04``, ``2021-03-04 10:30``, or ``04/03/2021``: day first unless a
middle part above 12 shows month first) are parsed; values that cannot be parsed become missing.
The range of the synthetic days is the same as for numbers
(:func:`engine.disclosure.safe_bounds`: 10th smallest to 10th largest real value), so no real
extreme date is reproduced.

Exact dates of birth (names like ``dob``, ``date_of_birth``, ``birth_date``, ``birthdate``) are
identifier-like and stay dropped (HIPAA Safe Harbor lists all elements of dates of birth).

References: docs/method.md section 2; issue 13 item 5.

Example:
    >>> import pandas as pd
    >>> f = pd.DataFrame({"admitted": pd.to_datetime(["2020-01-01", "2020-01-05"])})
    >>> layer = DateLayer.fit(f, ["admitted"], np.random.default_rng(0))
    >>> days = layer.to_days(f)["admitted"]
    >>> float(days.iloc[1] - days.iloc[0])
    4.0
    >>> layer.to_dates(layer.to_days(f))["admitted"].dt.strftime("%Y-%m-%d").tolist()
    ['2020-01-01', '2020-01-05']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from engine.files.names import name_tokens

DAY = pd.Timedelta(days=1)
OFFSET_DAYS = (30, 365)  # the secret shift of the reference, in whole days
BIRTH_TOKENS = frozenset({"dob", "birthdate", "birthday", "dateofbirth", "geburtsdatum"})
_SLASHED = re.compile(r"^\s*(\d{1,2})[/.](\d{1,2})[/.](\d{2,4})")


def is_birth_date_name(name: str) -> bool:
    """Whether a column name reads like an exact date of birth (whole tokens).

    Example:
        >>> [is_birth_date_name(n) for n in ("DOB", "date_of_birth", "birth_date", "BirthDate",
        ...                                  "admission_date", "birth_weight")]
        [True, True, True, True, False, False]
    """
    tokens = name_tokens(name)
    joined = "".join(tokens)
    if set(tokens) & BIRTH_TOKENS or joined in BIRTH_TOKENS:
        return True
    return "birth" in tokens and bool(set(tokens) & {"date", "dt", "day"})


def parse_dates(s: pd.Series) -> pd.Series:
    """A column as ``datetime64[ns]``: datetimes kept, text parsed (unparseable text -> NaT).

    Example:
        >>> parsed = parse_dates(pd.Series(["13/02/2021", "01/03/2021", None]))
        >>> parsed.dt.strftime("%Y-%m-%d").tolist()
        ['2021-02-13', '2021-03-01', nan]
    """
    if pd.api.types.is_datetime64_any_dtype(s):
        out = pd.to_datetime(s)
        if getattr(out.dt, "tz", None) is not None:
            out = out.dt.tz_localize(None)
        return out.astype("datetime64[ns]")
    if not s.dropna().map(lambda v: isinstance(v, str)).all():  # date objects (Parquet date32)
        return pd.to_datetime(s, errors="coerce").astype("datetime64[ns]")
    text = s.astype(object)
    slashed = text.dropna().astype(str).str.extract(_SLASHED).dropna().astype(int)
    if len(slashed):
        dayfirst = not (slashed[1] > 12).any() or (slashed[0] > 12).any()
        parsed = pd.to_datetime(text, errors="coerce", dayfirst=bool(dayfirst), format="mixed")
    else:
        parsed = pd.to_datetime(text, errors="coerce", format="ISO8601")
    return parsed.astype("datetime64[ns]")


def date_only(values: pd.Series) -> bool:
    """Whether every present value is at midnight (a date without a time of day)."""
    present = values.dropna()
    return bool((present == present.dt.normalize()).all())


@dataclass(frozen=True)
class DateColumn:
    """How one date column is modelled (no real value is kept here)."""

    name: str
    whole_days: bool  # date-only: whole days, back at midnight; else fractional, to the second
    lower: float | None  # safe range of the modelled number (days, or interval to the anchor)
    upper: float | None
    day_lower: float | None = None  # safe range of the days from the reference (final clip)
    day_upper: float | None = None


@dataclass(frozen=True)
class DateLayer:
    """Dates <-> days from a secret reference shared by all date columns of one table.

    The *anchor* (the date column with the fewest missing values) is modelled as days from the
    reference; every other date column as days from the anchor in the same row (its interval),
    so that intervals, which are small beside the spread of the dates, are modelled directly as
    numbers and come back as the flow learnt them. Where the anchor is missing, its median
    stands in for it (both ways, so observed cells round-trip exactly). Each column's dates are
    finally kept within its own safe range (:func:`engine.disclosure.safe_bounds`).

    ``reference`` and ``anchor_center`` are secret: never exported or recorded (``repr`` hides
    them).
    """

    columns: tuple[DateColumn, ...]
    reference: pd.Timestamp = field(repr=False)
    anchor: str | None = None
    anchor_center: float = field(default=0.0, repr=False)

    @classmethod
    def fit(cls, frame: pd.DataFrame, names: Sequence[str], rng: np.random.Generator) -> DateLayer:
        """The reference (earliest date minus a secret random offset), the anchor and ranges."""
        from engine.disclosure import safe_bounds

        parsed = {n: parse_dates(frame[n]) for n in names}
        earliest = min((p.min() for p in parsed.values() if p.notna().any()), default=None)
        if earliest is None or pd.isna(earliest):
            earliest = pd.Timestamp("2000-01-01")
        offset = int(rng.integers(OFFSET_DAYS[0], OFFSET_DAYS[1] + 1))
        reference = pd.Timestamp(earliest).normalize() - offset * DAY
        days = {n: (p - reference) / DAY for n, p in parsed.items()}
        anchor = min(names, key=lambda n: int(parsed[n].isna().sum())) if names else None
        center = float(days[anchor].median()) if anchor and days[anchor].notna().any() else 0.0
        layer = cls((), reference, anchor, center)
        modelled = layer._modelled_days(pd.DataFrame(days))
        cols = []
        for n in names:
            lower, upper = safe_bounds(modelled[n].dropna().to_numpy(dtype="float64"))
            day_lower, day_upper = safe_bounds(days[n].dropna().to_numpy(dtype="float64"))
            cols.append(DateColumn(n, date_only(parsed[n]), lower, upper, day_lower, day_upper))
        return cls(tuple(cols), reference, anchor, center)

    @property
    def names(self) -> list[str]:
        """The date columns, in order."""
        return [c.name for c in self.columns]

    def _anchor_days(self, frame: pd.DataFrame) -> pd.Series:
        assert self.anchor is not None  # only called with date columns
        return frame[self.anchor].astype("float64").fillna(self.anchor_center)

    def _modelled_days(self, days: pd.DataFrame) -> pd.DataFrame:
        """Days from the reference -> the anchor's days and the others' intervals to it."""
        out = days.copy()
        if self.anchor is None or self.anchor not in days.columns:
            return out
        base = self._anchor_days(days)
        for n in days.columns:
            if n != self.anchor:
                out[n] = days[n].astype("float64") - base
        return out

    def to_days(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A copy with the date columns as the flow's numbers (missing stays NaN)."""
        out = frame.copy()
        names = [c.name for c in self.columns if c.name in out.columns]
        days = pd.DataFrame(
            {n: ((parse_dates(out[n]) - self.reference) / DAY).astype("float64") for n in names},
            index=out.index,
        )
        modelled = self._modelled_days(days)
        for n in names:
            out[n] = modelled[n]
        return out

    def to_dates(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A copy with each date column back as ``datetime64[ns]`` (NaN -> NaT)."""
        out = frame.copy()
        names = [c.name for c in self.columns if c.name in out.columns]
        days = pd.DataFrame(
            {n: pd.to_numeric(out[n], errors="coerce").astype("float64") for n in names},
            index=out.index,
        )
        if self.anchor in days.columns:
            base = self._anchor_days(days)
            for n in names:
                if n != self.anchor:
                    days[n] = days[n] + base
        for c in self.columns:
            if c.name not in days.columns:
                continue
            d = days[c.name].clip(lower=c.day_lower, upper=c.day_upper)
            if c.whole_days:
                stamps = pd.Series(self.reference + pd.to_timedelta(np.round(d), unit="D"))
            else:
                stamps = pd.Series(self.reference + pd.to_timedelta(d * 86_400.0, unit="s"))
                stamps = stamps.dt.round("s")
            out[c.name] = stamps.astype("datetime64[ns]")
        return out

    def to_dict(self) -> dict[str, Any]:
        """What may be recorded: the columns, the anchor and which are date-only (no reference)."""
        return {
            "columns": [c.name for c in self.columns],
            "anchor": self.anchor,
            "date_only": [c.whole_days for c in self.columns],
        }
