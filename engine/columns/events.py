"""Event indicators: how a 0/1 (or alive/dead, 1/2) column is coded, and how strongly it reads
as the event that ended follow-up, by its name and its data together (issue 44: a cohort with
``fu_days``, ``died`` and a history of cardiovascular disease ``cvd`` was modelled as time to
"cvd").

The name ranks first (:func:`engine.columns.survival_names.event_score`, one lower for a
baseline-history name, :func:`history_like`); among names of the same rank the data decides
(:func:`end_of_follow_up`); two columns still close are asked about, never chosen silently.

References: R ``survival`` package, ``Surv()`` (0/1, TRUE/FALSE or 1/2 codings).

Example:
    >>> event_codes(pd.Series([1, 2, 2]), (1, 2)).tolist()
    [0.0, 1.0, 1.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from engine.columns.kinds import NEGATIVE_FIRST, binary_labels
from engine.columns.survival_names import event_score, event_word_order
from engine.files.names import name_tokens

# Whole names and name parts of a condition a patient has (or had) at baseline: a 0/1 column
# named so is more often a covariate than the outcome (a cohort with ``fu_days``, ``died`` and a
# history of cardiovascular disease ``cvd``), so it ranks below a word that says what ended
# follow-up (``died``, ``status``); paired with a time (``time_cvd_years``/``cvd``) it still wins.
HISTORY_WHOLE = frozenset(
    {
        "cvd",
        "chd",
        "hospmi",
        "mi",
        "stroke",
        "chf",
        "hf",
        "htn",
        "hypertension",
        "diabetes",
        "dm",
        "copd",
        "afib",
        "af",
        "ihd",
        "ckd",
        "pad",
        "cancer",
        "smoker",
        "smoking",
        "angina",
    }
)
HISTORY_TOKENS = frozenset({"history", "hx", "prior", "previous", "prev", "baseline", "ever"})
OUTCOME_TOKENS = frozenset(
    {
        "death",
        "dead",
        "died",
        "deceased",
        "mortality",
        "relapse",
        "relapsed",
        "recurrence",
        "recurred",
        "progression",
        "progressed",
        "fail",
        "failure",
        "event",
        "status",
        "censor",
        "cens",
        "censored",
        "fstat",
        "fustat",
        "vital",
    }
)
CLOSE_ENDS = 0.1  # two event columns whose link to the end of follow-up differs less: ask


def history_like(name: str) -> bool:
    """Whether a header names a condition at baseline (``cvd``, ``hx_stroke``, ``prior_mi``)
    rather than what ended follow-up (``died``, ``cvd_death``).

    Example:
        >>> history_like("cvd"), history_like("prior_mi"), history_like("cvd_death")
        (True, True, False)
    """
    tokens = set(name_tokens(name))
    if tokens & OUTCOME_TOKENS:
        return False
    low = str(name).strip().lower()
    return low in HISTORY_WHOLE or bool(tokens & HISTORY_TOKENS) or low.startswith("prev")


def named_event_score(name: str) -> int:
    """The name's event score, one lower for a baseline-history name (never below 1)."""
    score = event_score(name)
    return score - 1 if score >= 2 and history_like(name) else score


def end_of_follow_up(time: pd.Series, indicator: pd.Series) -> float:
    """How strongly a 0/1 column's "events" sit at the end of follow-up: |AUC - 0.5| of the
    follow-up time between its two groups (0 to 0.5). A true event indicator ends follow-up, so
    its rows end earlier than the censored ones, who are followed to the end of the study (0.2
    to 0.4 in public cohorts); a history flag recorded at baseline separates the times only as
    much as it predicts the outcome (near 0).

    Example:
        >>> t = pd.Series([1.0, 2.0, 3.0, 10.0, 11.0, 12.0])
        >>> end_of_follow_up(t, pd.Series([1, 1, 1, 0, 0, 0]))
        0.5
        >>> end_of_follow_up(pd.Series([1.0, 2.0, 3.0, 4.0]), pd.Series([1, 0, 0, 1]))
        0.0
    """
    from scipy.stats import rankdata

    codes = event_codes(indicator, tuple(event_labels(indicator)))
    t = pd.to_numeric(time, errors="coerce")
    ok = t.notna() & codes.notna()
    times, flags = t[ok].to_numpy(float), codes[ok].to_numpy(float)
    ones, zeros = int((flags == 1).sum()), int((flags == 0).sum())
    if not ones or not zeros:
        return 0.0
    ranks = rankdata(times)
    auc = (ranks[flags == 1].sum() - ones * (ones + 1) / 2) / (ones * zeros)
    return round(abs(float(auc) - 0.5), 6)


def event_coding(s: pd.Series) -> str | None:
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
    if len(values) == 2 and (pair in NEGATIVE_FIRST or event_word_order(values) is not None):
        return "labels"
    return None


def value_labels(s: pd.Series, values: list[Any]) -> tuple[Any, ...]:
    """Two labels, absent first; a one-valued 0/1 column still gets both labels."""
    if pd.api.types.is_bool_dtype(s):
        return (False, True)
    if pd.api.types.is_numeric_dtype(s):
        cast = int if s.dtype.kind in "iu" else float
        if {float(v) for v in values} == {1.0, 2.0}:
            return (cast(1), cast(2))
        return (cast(0), cast(1))
    return event_word_order(values) or binary_labels(values)


def event_labels(s: pd.Series) -> tuple[Any, ...]:
    """The two labels of an event column as the engine reads it, the event second (1, True,
    2 of R's 1/2, dead after alive, a word that says the event).

    Example:
        >>> event_labels(pd.Series(["Deceased", "Living", "Living"]))
        ('Living', 'Deceased')
    """
    return value_labels(s, list(s.dropna().unique()))


def event_codes(values: pd.Series, labels: tuple[Any, ...] | None) -> pd.Series:
    """An event column as 0/1 floats (1 = the event happened) from its labels (absent first),
    missing values kept; a column without labels is taken as numbers.

    Example:
        >>> event_codes(pd.Series([1, 2, 2]), (1, 2)).tolist()
        [0.0, 1.0, 1.0]
        >>> event_codes(pd.Series(["alive", "dead"]), ("alive", "dead")).tolist()
        [0.0, 1.0]
    """
    if labels is None or len(labels) != 2:
        return pd.to_numeric(values, errors="coerce").astype(float)
    absent, present = labels
    out = pd.Series(np.nan, index=values.index, dtype=float)
    out[values == present] = 1.0
    out[values == absent] = 0.0
    text = values.astype(str).str.strip().str.lower()
    out[out.isna() & (text == str(present).strip().lower())] = 1.0
    out[out.isna() & (text == str(absent).strip().lower())] = 0.0
    return out
