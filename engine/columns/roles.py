"""Survival roles: the follow-up time and the event indicator, checked when chosen and recognised
by name and coding when not.

A chosen time column must be numeric and never negative; a chosen event column 0/1, boolean, a
recognised pair (no/yes, alive/dead, ...) with the "event happened" label second, 1/2 (R's
``Surv()`` coding, 2 = the event), or two values with the user's choice of which is the event.
:func:`recognise_survival_roles` proposes both from the column names (the vocabulary of
:mod:`engine.columns.survival_names`) and codings; a pair that is plausible but not certain (a
censoring-looking name, an unrecognised partner) is returned as the likely answer to one question,
never used silently. :func:`event_codes` turns a chosen event column into 0/1 for the models. One
module because all of it answers the same question: which two columns describe survival.

References: docs/method.md section 2; R ``survival`` package, ``Surv()`` (0/1, TRUE/FALSE or 1/2).

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

from engine.columns.events import (
    CLOSE_ENDS,
    end_of_follow_up,
    event_coding,
    named_event_score,
    value_labels,
)
from engine.columns.kinds import NEGATIVE_FIRST, ColumnSpec
from engine.columns.survival_names import event_word_order
from engine.errors import InputError
from engine.files.names import is_id_like_name, name_tokens
from engine.files.values import decimal_places, sorted_values


@dataclass(frozen=True)
class RecognisedRoles:
    """Survival columns recognised by name and coding, and what was noticed on the way.

    ``time`` and ``event`` are set only when the pair is certain. When it is plausible but not
    certain (one of the two unrecognised, a censoring-looking name, two equally good
    candidates), ``likely_time`` / ``likely_event`` / ``event_value`` hold the likely answer to
    preselect in one question and ``question`` says in plain words why it is asked.
    ``event_value``: the value that means the event happened (2 for R's 1/2 coding, 0 for a
    "censored" indicator); None means the usual (1, True, or the second of a known pair).
    """

    time: str | None
    event: str | None
    notes: tuple[str, ...]
    likely_time: str | None = None
    likely_event: str | None = None
    event_value: Any = None
    question: str | None = None
    time_candidates: tuple[str, ...] = ()
    event_candidates: tuple[str, ...] = ()

    @property
    def must_ask(self) -> bool:
        """Whether one question should confirm the likely pair before it is used."""
        return self.question is not None and self.likely_time is not None


# Measurements that are numeric, non-negative and many-valued like a follow-up time, but never
# one: a time column left unnamed is looked for among the others first.
NOT_TIME_TOKENS = frozenset(
    (
        "age bmi weight wt height ht sbp dbp bp chol hdl ldl glucose karno ecog score year grade "
        "stage size nodes count dose hr rate level creatinine albumin bili platelet platelets "
        "sodium protein cd4 cd8 id loss cigs pressure"
    ).split()
)


def recognise_survival_roles(frame: pd.DataFrame) -> RecognisedRoles:
    """Find a follow-up time and an event indicator by their names and coding together.

    Time: a name from the vocabulary of :mod:`engine.columns.survival_names` (``futime``,
    ``OS_MONTHS``, ``pfs``, ``time_to_relapse``, ``lenfol``, ...), numeric and never negative.
    Event: a name that says what happened (``status``, ``death``, ``DEATH_EVENT``, ``fustat``,
    ...), coded 0/1, boolean, a recognised pair (alive/dead, no/yes, ...) or 1/2 (R's ``Surv()``
    convention: 2 = the event, said in a note). A censoring-looking name (``cens``, ``censor``)
    or an unrecognised partner makes the pair plausible but not certain: it is returned as the
    likely answer with a question, never used silently.

    Example:
        >>> df = pd.DataFrame({"futime": [5.0, 3.0, 9.0], "death": [1, 0, 1], "age": [50, 61, 70]})
        >>> r = recognise_survival_roles(df); (r.time, r.event)
        ('futime', 'death')
        >>> lung = pd.DataFrame({"time": [306, 455, 1010], "status": [2, 2, 1]})
        >>> r = recognise_survival_roles(lung); (r.time, r.event, r.event_value)
        ('time', 'status', 2)
    """
    from engine.columns.survival_names import (
        censoring_reversed,
        event_score,
        shared_stem,
        time_score,
    )

    columns = [str(c) for c in frame.columns]
    codings = {c: event_coding(frame[c]) for c in columns}
    events = [c for c in columns if codings[c] is not None]
    times = [
        c for c in columns if c not in events and not is_id_like_name(c) and _time_values(frame[c])
    ]
    t_rank = sorted(times, key=lambda c: (-time_score(c), _not_time_like(c)))
    notes: list[str] = []
    if not t_rank or not events:
        return RecognisedRoles(None, None, (), time_candidates=tuple(t_rank))
    ends = {e: end_of_follow_up(frame[t_rank[0]], frame[e]) for e in events}
    e_rank = sorted(events, key=lambda c: (-named_event_score(c), -ends[c]))
    close = [e for e in e_rank if _close(e, e_rank[0], ends)]
    if len(close) > 1:  # as close by the data: the plainer name first (censor before censor_d)
        first = min(close, key=len)
        e_rank = [first, *(e for e in e_rank if e != first)]
    t_best, e_best = t_rank[0], e_rank[0]
    # a one-letter stem is no pair (ACTG 320's time_d / censor_d share only "d")
    paired = [
        (t, e)
        for t in t_rank
        for e in e_rank
        if shared_stem(t, e)
        and max(map(len, set(name_tokens(t)) & set(name_tokens(e))), default=0) >= 2
    ]
    if paired and time_score(paired[0][0]) >= 2 and event_score(paired[0][1]) >= 1:
        t_best, e_best = paired[0]
    ts, es = time_score(t_best), named_event_score(e_best)
    value = 2 if codings[e_best] == "1/2" else None
    reversed_ = censoring_reversed(e_best)
    if reversed_:
        value = False if pd.api.types.is_bool_dtype(frame[e_best]) else 0
    key_t = (ts, _not_time_like(t_best))
    ties_t = [
        t
        for t in t_rank
        if (time_score(t), _not_time_like(t)) == key_t and t != t_best and not paired
    ]
    ties_e = [e for e in e_rank if e != e_best and not paired and _close(e, e_best, ends)]
    named = tuple(t for t in t_rank if time_score(t) >= 2)  # when any is named like a time
    t_cands, e_cands = named or tuple(t_rank), tuple(e_rank)
    why = None
    if es == 1:
        meaning = "censored" if reversed_ else "the event happened"
        why = (
            f"'{e_best}' looks like a censoring indicator; tables use it both ways, so check "
            f"which value means the event (the likely answer: 1 means {meaning})"
        )
    elif ts >= 2 and es >= 2 and not ties_t and not ties_e:
        if value == 2:
            notes.append(
                f"'{e_best}' is coded 1/2: 2 is taken as the event, as in R's survival data"
            )
        return RecognisedRoles(
            t_best,
            e_best,
            tuple(notes),
            t_best,
            e_best,
            value,
            None,
            time_candidates=t_cands,
            event_candidates=e_cands,
        )
    elif ts < 2 and es < 2:
        return RecognisedRoles(
            None, None, tuple(notes), time_candidates=t_cands, event_candidates=e_cands
        )
    elif ts < 2:
        why = f"'{t_best}' is not named like a follow-up time"
    elif ties_t or ties_e:
        others = ", ".join(f"'{c}'" for c in (ties_t or ties_e))
        why = f"more than one column could be the {'time' if ties_t else 'event'} ({others})"
    else:
        why = f"'{e_best}' is not named like an event indicator"
    return RecognisedRoles(
        None,
        None,
        tuple(notes),
        t_best,
        e_best,
        value,
        why,
        time_candidates=t_cands,
        event_candidates=e_cands,
    )


def _close(a: str, b: str, ends: dict[str, float]) -> bool:
    """Two event columns named alike whose link to the end of follow-up differs little."""
    return named_event_score(a) == named_event_score(b) and abs(ends[a] - ends[b]) < CLOSE_ENDS


def _not_time_like(name: str) -> bool:
    """A name that says it is a measurement (age, weight, totchol, ...), ranked after the others."""
    tokens = name_tokens(name)
    return bool(set(tokens) & NOT_TIME_TOKENS) or any(
        len(t) > 4 and any(w in t for w in NOT_TIME_TOKENS if len(w) >= 4) for t in tokens
    )


def _time_values(s: pd.Series) -> bool:
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return False
    v = s.dropna().to_numpy(dtype="float64")
    return bool(v.size and np.all(v >= 0) and np.unique(v).size > 2)


def role_spec(
    s: pd.Series,
    source: str,
    name: str,
    time: str | None,
    event: str | None,
    event_value: Any = None,
) -> ColumnSpec | None:
    """Specs for the ``time`` and ``event`` columns, after their checks (``event_value``: the
    value that means the event happened, when it is not the usual one)."""
    if name == time:
        return _time_spec(s, source, name)
    if name == event:
        return _event_spec(s, source, name, event_value)
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


def _event_spec(s: pd.Series, source: str, name: str, event_value: Any = None) -> ColumnSpec:
    """Event indicator: 0/1, booleans, a recognised negative/positive pair, 1/2 (R's coding,
    2 = the event), or any two values with ``event_value`` saying which one is the event."""
    values = list(s.dropna().unique())
    codes = set(float(v) for v in values) if pd.api.types.is_numeric_dtype(s) else set()
    ok_numeric = pd.api.types.is_numeric_dtype(s) and codes <= {0.0, 1.0}
    one_two = pd.api.types.is_numeric_dtype(s) and codes == {1.0, 2.0}
    ok_pair = len(values) == 2 and (
        frozenset(str(v).strip().lower() for v in values) in NEGATIVE_FIRST
        or event_word_order(values) is not None
    )
    if event_value is not None and len(values) <= 2:
        labels = _chosen_labels(s, values, event_value, source, name)
        reason = (
            f"event indicator (chosen as the event column; '{labels[1]}' means the event happened)"
        )
    elif pd.api.types.is_bool_dtype(s) or ok_numeric or ok_pair or one_two:
        labels = value_labels(s, values)
        reason = (
            f"event indicator (chosen as the event column; '{labels[1]}' means the event happened)"
        )
        if one_two:
            reason = (
                "event indicator coded 1/2 (chosen as the event column; 2 is taken as the event, "
                "as in R's survival data)"
            )
    else:
        shown = ", ".join(str(v) for v in sorted_values(values)[:8]) + (
            ", ..." if len(values) > 8 else ""
        )
        raise InputError(
            f"{source}: column '{name}' has values {shown}; the event column must be binary "
            "(0/1, or 1/2 with 2 = the event): choose another column as the event column."
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


def _chosen_labels(
    s: pd.Series, values: list[Any], event_value: Any, source: str, name: str
) -> tuple[Any, Any]:
    """(the other value, the value chosen as the event), the chosen value matched as text."""
    chosen = [v for v in values if str(v).strip().lower() == str(event_value).strip().lower()]
    if pd.api.types.is_numeric_dtype(s) and not chosen:
        try:
            chosen = [v for v in values if float(v) == float(event_value)]
        except (TypeError, ValueError):
            chosen = []
    if not chosen:
        shown = ", ".join(str(v) for v in sorted_values(values))
        raise InputError(
            f"{source}: the event column '{name}' has no value '{event_value}' (it holds {shown}); "
            "choose which of its values means the event happened."
        )
    others = [v for v in values if v is not chosen[0] and v != chosen[0]]
    if others:
        return (others[0], chosen[0])
    if pd.api.types.is_bool_dtype(s):
        return (not chosen[0], chosen[0])
    cast = int if s.dtype.kind in "iu" else float
    return (cast(1 - float(chosen[0])) if float(chosen[0]) in (0.0, 1.0) else None, chosen[0])
