"""Survival roles: the follow-up time and the event indicator, checked when chosen and recognised
by name and coding when not.

A chosen time column must be numeric and never negative; a chosen event column 0/1, boolean or a
recognised pair (no/yes, alive/dead, ...), with the "event happened" label second.
:func:`recognise_survival_roles` proposes both from the column names and codings and reports,
never silently uses, a censoring indicator (1 = censored) or a 1/2 coding. One module because both
halves answer the same question: which two columns describe survival.

References: METHOD.md section 2; R ``survival`` package conventions (1/2 status coding).

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"futime": [5.0, 3.0, 9.0], "death": [1, 0, 1], "age": [50, 61, 70]})
    >>> r = recognise_survival_roles(df); (r.time, r.event)
    ('futime', 'death')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import InputError
from engine.tables.kinds import NEGATIVE_FIRST, ColumnSpec, binary_labels
from engine.tables.names import name_tokens
from engine.tables.values import decimal_places, sorted_values

TIME_NAMES = frozenset(
    {"time", "futime", "days", "week", "weeks", "month", "months", "years", "os", "pfs", "dfs",
     "stime", "survtime", "followup", "fu", "tte"}
)  # fmt: skip
TIME_PREFIXES = ("followup", "follow_up", "survival", "surv_")
EVENT_NAMES = frozenset(
    {"event", "status", "dead", "death", "died", "arrest", "relapse", "fail", "failure",
     "failed", "vital_status", "vitalstatus", "outcome_event", "cens", "censor", "censored",
     "censoring", "d", "delta", "fstat"}
)  # fmt: skip
CENSOR_NAMES = ("cens",)  # 'cens', 'censor', 'censored', 'censoring', 'is_censored', ...


@dataclass(frozen=True)
class RecognisedRoles:
    """Survival columns recognised by name and coding, and what was noticed on the way."""

    time: str | None
    event: str | None
    notes: tuple[str, ...]


def recognise_survival_roles(frame: pd.DataFrame) -> RecognisedRoles:
    """Find a follow-up time and an event indicator by their names and coding.

    Time: ``time``, ``futime``, ``days``, ``week(s)``, ``month(s)``, ``years``, ``os``, ``pfs``,
    ``*_time``, ``time_*``, ``followup*``, ``survival*`` (numeric, never negative). Event:
    ``event``, ``status``, ``dead``/``death``/``died``, ``arrest``, ``relapse``, ``fail*``,
    ``*_event``, coded 0/1 or as a recognised pair (alive/dead, no/yes, ...). A censoring indicator
    (``cens*``: 1 = censored) is the reverse of an event and a 1/2 coding is ambiguous: both are
    reported, never used silently, so that an event is not counted as a censoring.

    Example:
        >>> df = pd.DataFrame({"futime": [5.0, 3.0, 9.0], "death": [1, 0, 1], "age": [50, 61, 70]})
        >>> r = recognise_survival_roles(df); (r.time, r.event)
        ('futime', 'death')
    """
    times = [c for c in frame.columns if _time_name(str(c)) and _time_values(frame[c])]
    events, notes = [], []
    for c in frame.columns:
        name = str(c)
        if not _event_name(name) or c in times:
            continue
        coding = _event_coding(frame[c])
        if coding is None:
            continue
        if _censor_name(name):
            notes.append(
                f"'{name}' looks like a censoring indicator (1 = censored), the reverse of an "
                "event: recode it so that 1 means the event happened, then choose it as the event"
            )
        elif coding == "1/2":
            notes.append(
                f"'{name}' is coded 1/2; if 2 means the event (as in R's survival data), recode "
                "it to 0/1 and choose it as the event"
            )
        else:
            events.append(name)
    time = str(times[0]) if len(times) == 1 else None
    event = events[0] if len(events) == 1 else None
    if len(times) > 1:
        notes.append(f"several possible time columns ({', '.join(map(str, times))}); choose one")
    if len(events) > 1:
        notes.append(f"several possible event columns ({', '.join(events)}); choose one")
    if time is None or event is None:
        return RecognisedRoles(None, None, tuple(notes))
    return RecognisedRoles(time, event, tuple(notes))


def _time_name(name: str) -> bool:
    low = name.strip().lower()
    tokens = name_tokens(name)
    return (
        low in TIME_NAMES
        or (bool(tokens) and (tokens[-1] == "time" or tokens[0] == "time"))
        or low.replace(" ", "_").startswith(TIME_PREFIXES)
        or low.startswith("survival")
    )


def _time_values(s: pd.Series) -> bool:
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return False
    v = s.dropna().to_numpy(dtype="float64")
    return bool(v.size and np.all(v >= 0) and np.unique(v).size > 2)


def _event_name(name: str) -> bool:
    low = name.strip().lower().replace(" ", "_")
    tokens = name_tokens(name)
    return (
        low in EVENT_NAMES
        or (bool(tokens) and tokens[-1] in ("event", "status", "death", "dead", "died"))
        or low.startswith(("fail", "censor", "relapse", "death"))
    )


def _censor_name(name: str) -> bool:
    return any(t.startswith(CENSOR_NAMES) for t in name_tokens(name))


def _event_coding(s: pd.Series) -> str | None:
    """'0/1', '1/2', 'labels' (a recognised pair such as alive/dead), or None."""
    values = list(s.dropna().unique())
    if pd.api.types.is_bool_dtype(s):
        return "0/1"
    if pd.api.types.is_numeric_dtype(s):
        codes = {float(v) for v in values}
        if codes <= {0.0, 1.0} and codes:
            return "0/1"
        return "1/2" if codes == {1.0, 2.0} else None
    pair = frozenset(str(v).strip().lower() for v in values)
    return "labels" if len(values) == 2 and pair in NEGATIVE_FIRST else None


def role_spec(
    s: pd.Series, source: str, name: str, time: str | None, event: str | None
) -> ColumnSpec | None:
    """Specs for the ``time`` and ``event`` columns, after their checks."""
    if name == time:
        return _time_spec(s, source, name)
    if name == event:
        return _event_spec(s, source, name)
    return None


def _time_spec(s: pd.Series, source: str, name: str) -> ColumnSpec:
    """Follow-up time: numeric and never negative."""
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        example = s.dropna().astype(str).head(3).tolist()
        raise InputError(
            f"{source}: the time column '{name}' is not numeric (values like {example}); "
            "choose a column of follow-up times as the time column."
        )
    values = s.to_numpy(dtype="float64")
    negative = np.flatnonzero(values < 0)
    if negative.size:
        row = int(negative[0]) + 1
        raise InputError(
            f"{source}: the time column '{name}' has a negative value {values[negative[0]]:g} in "
            f"row {row} ({negative.size} negative in all); follow-up times must be >= 0. "
            "Fix those rows or choose another column as the time column."
        )
    return ColumnSpec(
        name,
        "time",
        "synthesize",
        "follow-up time (chosen as the time column)",
        decimals=decimal_places(s),
        n_missing=int(s.isna().sum()),
        dtype=str(s.dtype),
    )


def _event_spec(s: pd.Series, source: str, name: str) -> ColumnSpec:
    """Event indicator: 0/1, booleans, or a recognised negative/positive pair."""
    values = list(s.dropna().unique())
    ok_numeric = pd.api.types.is_numeric_dtype(s) and set(float(v) for v in values) <= {0.0, 1.0}
    ok_pair = (
        len(values) == 2 and frozenset(str(v).strip().lower() for v in values) in NEGATIVE_FIRST
    )
    if pd.api.types.is_bool_dtype(s) or ok_numeric or ok_pair:
        labels = _event_labels(s, values)
        reason = (
            f"event indicator (chosen as the event column; '{labels[1]}' means the event happened)"
        )
        return ColumnSpec(
            name,
            "event",
            "synthesize",
            reason,
            labels=labels,
            n_missing=int(s.isna().sum()),
            dtype=str(s.dtype),
        )
    shown = ", ".join(str(v) for v in sorted_values(values)[:8]) + (
        ", ..." if len(values) > 8 else ""
    )
    raise InputError(
        f"{source}: column '{name}' has values {shown}; the event column must be binary (0/1). "
        "Choose another column as the event column."
    )


def _event_labels(s: pd.Series, values: list[Any]) -> tuple[Any, ...]:
    """Two labels, absent first; a one-valued 0/1 column still gets both labels."""
    if pd.api.types.is_bool_dtype(s):
        return (False, True)
    if pd.api.types.is_numeric_dtype(s):
        cast = int if s.dtype.kind in "iu" else float
        return (cast(0), cast(1))
    return binary_labels(values)
