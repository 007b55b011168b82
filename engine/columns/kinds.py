"""A column's kind (continuous, integer, binary, categorical, text, ...) and its
:class:`ColumnSpec`.

The automatic rules of the table in :mod:`engine.columns.schema`, applied to one column: dates and
identifiers first (:mod:`engine.columns.identifiers`), then constant, binary, categorical, free
text, integer and continuous. :func:`binary_labels` orders two labels with the recognised
"negative/absent" one first. Split from the schema so that the per-column rules read apart from
the whole-table checks and the user's overrides.

References: docs/method.md section 2 (which columns are modelled, and how).

Example:
    >>> import pandas as pd
    >>> spec = infer_column(pd.Series(["yes", "no"] * 30, name="smoker"), None)
    >>> spec.kind, spec.action, spec.labels
    ('binary', 'synthesize', ('no', 'yes'))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from engine.columns.dates import is_birth_date_name
from engine.columns.identifiers import all_text, date_or_identifier
from engine.files.read_binary import ColumnMeta
from engine.files.values import all_whole, decimal_places, sorted_values

KINDS = (
    "continuous",
    "integer",
    "binary",
    "categorical",
    "time",
    "event",
    "identifier",
    "date",
    "text",
    "constant",
)
SYNTHESIZABLE = frozenset({"continuous", "integer", "binary", "categorical", "time", "event"})
NUMERIC_KINDS = frozenset({"continuous", "integer", "time"})

MAX_LEVELS = 20

NEGATIVE_FIRST = {
    frozenset({"no", "yes"}): "no",
    frozenset({"n", "y"}): "n",
    frozenset({"false", "true"}): "false",
    frozenset({"f", "t"}): "f",
    frozenset({"0", "1"}): "0",
    frozenset({"negative", "positive"}): "negative",
    frozenset({"neg", "pos"}): "neg",
    frozenset({"absent", "present"}): "absent",
    frozenset({"alive", "dead"}): "alive",
    frozenset({"censored", "event"}): "censored",
    frozenset({"off", "on"}): "off",
}


@dataclass(frozen=True)
class ColumnSpec:
    """One column's kind, what happens to it, and why."""

    name: str
    kind: str
    action: str
    reason: str
    labels: tuple[Any, ...] | None = None
    lower: float | None = None
    upper: float | None = None
    decimals: int | None = None
    n_missing: int = 0
    dtype: str = "object"
    ordered: bool | None = None  # numeric codes (engine.columns.codes): ordered or not
    merged: int = 0  # levels held by fewer than 10 people merged into one (engine.columns.codes)

    def to_dict(self) -> dict[str, Any]:
        """All fields as a plain dictionary."""
        out = asdict(self)
        out["labels"] = None if self.labels is None else list(self.labels)
        return out


def _plain(value: Any) -> str:
    """A value as a person reads it: 'M' quoted, 0 and 1.5 bare (never ``np.int64(0)``)."""
    value = value.item() if isinstance(value, np.generic) else value
    return repr(value) if isinstance(value, str) else f"{value}"


def binary_labels(values: Sequence[Any]) -> tuple[Any, ...]:
    """Stable order for two labels: the recognised negative/absent one first, else sorted.

    Example:
        >>> binary_labels(["Yes", "No"]), binary_labels(["M", "F"]), binary_labels([1, 0])
        (('No', 'Yes'), ('F', 'M'), (0, 1))
    """
    vals = list(dict.fromkeys(values))
    key = frozenset(str(v).strip().lower() for v in vals)
    negative = NEGATIVE_FIRST.get(key)
    if negative is not None and len(vals) == 2:
        first = [v for v in vals if str(v).strip().lower() == negative][0]
        return (first, [v for v in vals if v is not first][0])
    return tuple(sorted_values(vals))


def infer_column(s: pd.Series, meta: ColumnMeta | None, *, model_dates: bool = True) -> ColumnSpec:
    """One column's spec by the automatic rules, in the order of the table in
    :mod:`engine.columns.schema`.

    Dates are synthesized as days from a secret reference (:mod:`engine.columns.dates`) when
    ``model_dates``, except exact dates of birth, which identify people and stay dropped.
    """
    kind, reason, labels = _classify(s, meta)
    action = "synthesize" if kind in SYNTHESIZABLE else "drop"
    if kind == "date":
        kind, action, reason = _date_action(str(s.name), model_dates)
    decimals = decimal_places(s) if kind in NUMERIC_KINDS else None
    return ColumnSpec(
        cast(str, s.name),  # column names are text (pandas types them as Hashable)
        kind,
        action,
        reason,
        labels,
        decimals=decimals,
        n_missing=int(s.isna().sum()),
        dtype=str(s.dtype),
    )


def _date_action(name: str, model_dates: bool) -> tuple[str, str, str]:
    """(kind, action, reason) of a date column."""
    if is_birth_date_name(name):
        return (
            "date",
            "drop",
            "an exact date of birth identifies people; derive an age before import",
        )
    if not model_dates:
        return (
            "date",
            "drop",
            "dates are not modelled in this mode; derive an interval before import",
        )
    return (
        "date",
        "synthesize",
        "dates, modelled as days from a secret reference date and written back as dates",
    )


def _classify(s: pd.Series, meta: ColumnMeta | None) -> tuple[str, str, tuple[Any, ...] | None]:
    """(kind, reason, labels) for one column."""
    present = s.dropna()
    n_distinct = present.nunique()
    if len(present) == 0:
        return "constant", "every value is missing", None
    if n_distinct == 1:
        return "constant", f"only one value ({_plain(present.iloc[0])}); nothing to model", None
    found = date_or_identifier(s, present, n_distinct)
    if found is not None:
        return found
    is_text = all_text(present)
    value_labels = meta.value_labels if meta is not None and meta.value_labels else None
    if n_distinct == 2:
        labels = (
            (False, True)
            if pd.api.types.is_bool_dtype(s)
            else binary_labels(list(present.unique()))
        )
        return "binary", f"two values ({_plain(labels[0])}, {_plain(labels[1])})", labels
    if is_text:
        if n_distinct > MAX_LEVELS:
            return (
                "text",
                (
                    f"{n_distinct} different text values (more than {MAX_LEVELS}); free text is "
                    "not modelled. Recode it into fewer categories, or force it with a kind"
                ),
                None,
            )
        return (
            "categorical",
            f"text with {n_distinct} categories",
            tuple(sorted_values(present.unique())),
        )
    if value_labels is not None and n_distinct <= MAX_LEVELS:
        return (
            "categorical",
            f"numeric codes with value labels ({n_distinct} categories)",
            tuple(sorted_values(present.unique())),
        )
    if not pd.api.types.is_numeric_dtype(s):
        return "text", "mixed values that are neither numbers nor categories; not modelled", None
    fits_int64 = present.dtype.kind in "iu" or np.abs(present.to_numpy("float64")).max() < 2.0**63
    if all_whole(present) and fits_int64:
        return "integer", f"whole numbers with {n_distinct} different values (count)", None
    if all_whole(present):
        return "continuous", "very large numbers (beyond the whole-number range)", None
    return "continuous", "numbers with decimals", None
