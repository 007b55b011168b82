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

References: METHOD.md section 2; issue 13 item 5.

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

from engine.tables.names import name_tokens

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
        >>> parse_dates(pd.Series(["13/02/2021", "01/03/2021", None])).dt.strftime("%Y-%m-%d").tolist()
        ['2021-02-13', '2021-03-01', nan]
    """
    if pd.api.types.is_datetime64_any_dtype(s):
        out = pd.to_datetime(s)
        if getattr(out.dt, "tz", None) is not None:
            out = out.dt.tz_localize(None)
        return out.astype("datetime64[ns]")
    text = s.where(s.map(lambda v: isinstance(v, str)), None).astype(object)
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
    lower: float | None  # safe range of the days (engine.disclosure.safe_bounds)
    upper: float | None


@dataclass(frozen=True)
class DateLayer:
    """Dates <-> days from a secret reference shared by all date columns of one table.

    ``reference`` is secret: never exported, never recorded (``repr`` hides it).
    """

    columns: tuple[DateColumn, ...]
    reference: pd.Timestamp = field(repr=False)

    @classmethod
    def fit(cls, frame: pd.DataFrame, names: Sequence[str], rng: np.random.Generator) -> DateLayer:
        """The reference (earliest date minus a secret random offset) and each column's range."""
        from engine.disclosure import safe_bounds

        parsed = {n: parse_dates(frame[n]) for n in names}
        earliest = min((p.min() for p in parsed.values() if p.notna().any()), default=None)
        if earliest is None or pd.isna(earliest):
            earliest = pd.Timestamp("2000-01-01")
        offset = int(rng.integers(OFFSET_DAYS[0], OFFSET_DAYS[1] + 1))
        reference = pd.Timestamp(earliest).normalize() - offset * DAY
        cols = []
        for n, p in parsed.items():
            days = (p - reference) / DAY
            lower, upper = safe_bounds(days.dropna().to_numpy(dtype="float64"))
            cols.append(DateColumn(n, date_only(p), lower, upper))
        return cls(tuple(cols), reference)

    @property
    def names(self) -> list[str]:
        """The date columns, in order."""
        return [c.name for c in self.columns]

    def to_days(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A copy with each date column as float days from the reference (missing stays NaN)."""
        out = frame.copy()
        for c in self.columns:
            if c.name in out.columns:
                out[c.name] = ((parse_dates(out[c.name]) - self.reference) / DAY).astype("float64")
        return out

    def to_dates(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A copy with each date column's days back as ``datetime64[ns]`` (NaN -> NaT)."""
        out = frame.copy()
        for c in self.columns:
            if c.name not in out.columns:
                continue
            days = pd.to_numeric(out[c.name], errors="coerce").astype("float64")
            if c.whole_days:
                days = np.round(days)
                out[c.name] = self.reference + pd.to_timedelta(days, unit="D")
            else:
                stamps = self.reference + pd.to_timedelta(days * 86_400.0, unit="s")
                out[c.name] = stamps.dt.round("s")
            out[c.name] = out[c.name].astype("datetime64[ns]")
        return out

    def to_dict(self) -> dict[str, Any]:
        """What may be recorded: the columns and whether each is date-only (no reference)."""
        return {
            "columns": [c.name for c in self.columns],
            "date_only": [c.whole_days for c in self.columns],
        }
