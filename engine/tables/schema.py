"""Column kinds and roles: what is synthesized, what is dropped, and why (in plain English).

Rules, applied in this order (the first that fits wins; user ``kinds`` override them all):

==============  ===============================================================  ==========
kind            rule                                                             action
==============  ===============================================================  ==========
constant        every value missing, or one distinct value                       drop
date            datetime dtype, or text that reads as dates                       drop
identifier      e-mail / phone-looking text; or >= 90 % different values with an  drop
                ID-like name (id, mrn, nhs, ssn, patient, email, phone, name,
                address, postcode, zip, or subject/record/case + no/number/code:
                whole tokens) or text values; or a row number; or whole numbers,
                >= 95 % different, in row order or 6+ digit codes (not a
                measurement name such as age, weight, time, days)
text            text with more than 20 distinct values (free text)                drop
binary          two distinct values (value labels kept)                           synthesize
categorical     text with <= 20 levels, or numeric codes with value labels        synthesize
integer         whole numbers with more than two values                           synthesize
continuous      other numbers (``decimals`` = most decimal places seen, cap 6)    synthesize
==============  ===============================================================  ==========

Roles: ``time=`` (numeric, >= 0) becomes kind ``time``; ``event=`` (0/1, booleans or a
recognised pair such as no/yes) becomes kind ``event``. Binary label order: the
"negative/absent" label first when the pair is recognised (no/yes, n/y, false/true, f/t, 0/1,
negative/positive, absent/present, alive/dead, censored/event, off/on), otherwise sorted.

References: METHOD.md section 2 (direct identifiers are never modelled; complete cases).

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"patient_id": range(60), "smoker": ["yes", "no"] * 30,
    ...                    "age": [50.5 + i for i in range(60)]})
    >>> s = infer_schema(df)
    >>> [(c.name, c.kind, c.action) for c in s.columns]
    [('patient_id', 'identifier', 'drop'), ('smoker', 'binary', 'synthesize'), ('age', 'continuous', 'synthesize')]
    >>> s.by_name("smoker").labels
    ('no', 'yes')
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from engine.errors import InputError
from engine.tables.read import ColumnMeta, LoadedTable, is_id_like_name, name_tokens

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
ID_TOKENS = frozenset(
    {
        "id",
        "mrn",
        "nhs",
        "ssn",
        "patient",
        "email",
        "phone",
        "name",
        "address",
        "postcode",
        "zip",
        "uuid",
        "guid",
        "surname",
        "forename",
        "firstname",
        "lastname",
        "telephone",
        "mobile",
    }
)
# "subject_no", "record_number", "case_code": an ID-like subject followed by a number word.
ID_SUBJECTS = frozenset(
    {
        "subject", "subj", "record", "rec", "case", "participant", "patient", "pt", "pat",
        "person", "member", "sample", "specimen", "accession", "chart", "hospital", "study",
        "enrolment", "enrollment", "registration", "screening", "randomisation", "randomization",
    }
)  # fmt: skip
ID_NUMBER_WORDS = frozenset({"no", "nr", "num", "number", "code", "key", "ref", "idx", "index"})
# Names of measurements that may hold many different whole numbers without being identifiers.
MEASURE_TOKENS = frozenset(
    {
        "age", "time", "times", "day", "days", "week", "weeks", "month", "months", "year",
        "years", "dur", "duration", "followup", "futime", "survival", "weight", "wt", "height",
        "ht", "bmi", "sbp", "dbp", "bp", "chol", "cholesterol", "hdl", "ldl", "glucose", "count",
        "cnt", "income", "salary", "cost", "charges", "price", "dose", "score", "level", "size",
        "length", "rate", "steps", "minutes", "hours", "seconds", "mm", "cm", "kg", "g", "mg",
        "ml", "cd4", "cd8", "rna", "platelets", "wbc", "volume", "distance", "amount", "total",
    }
)  # fmt: skip
NAMED_ID_SHARE = 0.9
UNNAMED_ID_SHARE = 0.95
MIN_ID_ROWS = 20
MAX_LEVELS = 20
MAX_DECIMALS = 6
MIN_COMPLETE_ROWS = 50
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
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_PHONE = re.compile(r"^\+?[\d\s\-().]{7,}$")
_DATE = re.compile(
    r"^(\d{4}-\d{1,2}-\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?|\d{1,2}[/.]\d{1,2}[/.]\d{2,4})$"
)


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

    def to_dict(self) -> dict[str, Any]:
        """All fields as a plain dictionary."""
        out = asdict(self)
        out["labels"] = None if self.labels is None else list(self.labels)
        return out


@dataclass(frozen=True)
class Schema:
    """Every input column with its kind and action, plus the survival roles."""

    columns: tuple[ColumnSpec, ...]
    time: str | None = None
    event: str | None = None

    def synthesized(self) -> list[ColumnSpec]:
        """Columns that are modelled and exported, in input order."""
        return [c for c in self.columns if c.action == "synthesize"]

    def dropped(self) -> list[ColumnSpec]:
        """Columns that are neither modelled nor exported."""
        return [c for c in self.columns if c.action == "drop"]

    def by_name(self, name: str) -> ColumnSpec:
        """The spec of one column (KeyError when absent)."""
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> list[dict[str, str]]:
        """``audit.json``'s ``columns``: name, kind, action, reason."""
        return [
            {"name": c.name, "kind": c.kind, "action": c.action, "reason": c.reason}
            for c in self.columns
        ]

    def to_frame(self) -> pd.DataFrame:
        """One row per column with every field (for the report and the wizard)."""
        return pd.DataFrame([c.to_dict() for c in self.columns])


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
    return tuple(_sorted(vals))


def infer_schema(
    table: LoadedTable | pd.DataFrame,
    *,
    time: str | None = None,
    event: str | None = None,
    drop: Sequence[str] = (),
    keep: Sequence[str] = (),
    kinds: Mapping[str, str] | None = None,
    bounds: Mapping[str, tuple[float | None, float | None]] | None = None,
    column_meta: Mapping[str, ColumnMeta] | None = None,
) -> Schema:
    """Give every column a kind, an action and a reason; check the survival roles.

    References: METHOD.md section 2 (identifiers never modelled; complete cases).
    """
    frame, source, meta = _unpack(table, column_meta)
    kinds, bounds = dict(kinds or {}), dict(bounds or {})
    _check_names(frame, source, time, event, drop, keep, kinds, bounds)
    specs = []
    for name in frame.columns:
        s = frame[name]
        spec = _role_spec(s, source, name, time, event) or _infer(s, meta.get(name))
        spec = _apply_user(spec, s, source, name, drop, keep, kinds)
        specs.append(_with_bounds(spec, s, source, bounds.get(name)))
    schema = Schema(tuple(specs), time, event)
    _check_complete_rows(frame, schema, source)
    return schema


def _unpack(
    table: LoadedTable | pd.DataFrame, column_meta: Mapping[str, ColumnMeta] | None
) -> tuple[pd.DataFrame, str, dict[str, ColumnMeta]]:
    """Frame, a name for messages, and column metadata from either input type."""
    if isinstance(table, LoadedTable):
        return table.frame, table.path.name, dict(column_meta or table.column_meta)
    return table, "the table", dict(column_meta or {})


def _check_names(
    frame: pd.DataFrame,
    source: str,
    time: str | None,
    event: str | None,
    drop: Sequence[str],
    keep: Sequence[str],
    kinds: Mapping[str, str],
    bounds: Mapping[str, Any],
) -> None:
    """Every named column must exist; roles and kinds must be coherent."""
    available = ", ".join(f"'{c}'" for c in frame.columns)
    asked = [("--time", time), ("--event", event)] + [("--drop", d) for d in drop]
    asked += (
        [("--keep", k) for k in keep]
        + [("--kind", k) for k in kinds]
        + [("--bounds", b) for b in bounds]
    )
    for option, name in asked:
        if name is not None and name not in frame.columns:
            raise InputError(
                f"{source}: no column '{name}' (from {option}); the columns are {available}."
            )
    if time is not None and time == event:
        raise InputError(
            f"{source}: column '{time}' cannot be both the time and the event; choose two columns."
        )
    for name in (time, event):
        if name is not None and name in drop:
            raise InputError(
                f"{source}: column '{name}' is a survival role and also in --drop; remove one."
            )
    for name, kind in kinds.items():
        if kind not in KINDS:
            raise InputError(
                f"{source}: column '{name}': unknown kind '{kind}'; use one of {', '.join(KINDS)}."
            )


def _role_spec(
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
            "choose a column of follow-up times with --time."
        )
    values = s.to_numpy(dtype="float64")
    negative = np.flatnonzero(values < 0)
    if negative.size:
        row = int(negative[0]) + 1
        raise InputError(
            f"{source}: the time column '{name}' has a negative value {values[negative[0]]:g} in "
            f"row {row} ({negative.size} negative in all); follow-up times must be >= 0. "
            "Fix those rows or choose another column with --time."
        )
    return ColumnSpec(
        name,
        "time",
        "synthesize",
        "follow-up time (chosen as the time column)",
        decimals=_decimals(s),
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
    shown = ", ".join(str(v) for v in _sorted(values)[:8]) + (", ..." if len(values) > 8 else "")
    raise InputError(
        f"{source}: column '{name}' has values {shown}; the event column must be binary (0/1). "
        "Choose another column with --event."
    )


def _event_labels(s: pd.Series, values: list[Any]) -> tuple[Any, ...]:
    """Two labels, absent first; a one-valued 0/1 column still gets both labels."""
    if pd.api.types.is_bool_dtype(s):
        return (False, True)
    if pd.api.types.is_numeric_dtype(s):
        cast = int if s.dtype.kind in "iu" else float
        return (cast(0), cast(1))
    return binary_labels(values)


def _infer(s: pd.Series, meta: ColumnMeta | None) -> ColumnSpec:
    """The automatic rules, in the order of the module table."""
    kind, reason, labels = _classify(s, meta)
    action = "synthesize" if kind in SYNTHESIZABLE else "drop"
    decimals = _decimals(s) if kind in NUMERIC_KINDS else None
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


def _classify(s: pd.Series, meta: ColumnMeta | None) -> tuple[str, str, tuple[Any, ...] | None]:
    """(kind, reason, labels) for one column."""
    present = s.dropna()
    n_distinct = present.nunique()
    if len(present) == 0:
        return "constant", "every value is missing", None
    if n_distinct == 1:
        return "constant", f"only one value ({_plain(present.iloc[0])}); nothing to model", None
    found = _date_or_identifier(s, present, n_distinct)
    if found is not None:
        return found
    is_text = present.map(lambda v: isinstance(v, str)).all()
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
                    f"{n_distinct} different text values (more than {MAX_LEVELS}); free text is not "
                    "modelled. Recode it into fewer categories, or force it with a kind"
                ),
                None,
            )
        return "categorical", f"text with {n_distinct} categories", tuple(_sorted(present.unique()))
    if value_labels is not None and n_distinct <= MAX_LEVELS:
        return (
            "categorical",
            f"numeric codes with value labels ({n_distinct} categories)",
            tuple(_sorted(present.unique())),
        )
    if not pd.api.types.is_numeric_dtype(s):
        return "text", "mixed values that are neither numbers nor categories; not modelled", None
    fits_int64 = present.dtype.kind in "iu" or np.abs(present.to_numpy("float64")).max() < 2.0**63
    if _whole(present) and fits_int64:
        return "integer", f"whole numbers with {n_distinct} different values (count)", None
    if _whole(present):
        return "continuous", "very large numbers (beyond the whole-number range)", None
    return "continuous", "numbers with decimals", None


def _date_or_identifier(
    s: pd.Series, present: pd.Series, n_distinct: int
) -> tuple[str, str, None] | None:
    """Dates, e-mail/phone values, and per-row unique identifiers (all dropped)."""
    if pd.api.types.is_datetime64_any_dtype(s) or _looks(present, _DATE):
        return "date", "exact dates identify people; derive an age or interval before import", None
    if _looks(present, _EMAIL):
        return "identifier", "values look like e-mail addresses (direct identifier)", None
    if _looks_phone(present):
        return "identifier", "values look like phone numbers (direct identifier)", None
    unique = n_distinct == len(present) and len(present) > 2
    share = n_distinct / len(present)
    name = str(s.name)
    text_values = bool(present.map(lambda v: isinstance(v, str)).all())
    if (
        id_like_name(name)
        and not set(name_tokens(name)) & MEASURE_TOKENS
        and len(present) > 2
        and share >= NAMED_ID_SHARE
        and (_whole(present) or present.dtype == object)
    ):
        return (
            "identifier",
            f"likely a record identifier: an ID-like name and {_pct(share)} different values; "
            "not modelled (keep it only if it is a real measurement)",
            None,
        )
    if not unique:
        return _numeric_identifier(present, name, share)
    if text_values:
        if present.str.len().mean() > 30 or present.str.count(" ").mean() >= 3:
            return "text", "free text, different in every row; not modelled", None
        return "identifier", "text that is different in every row (likely a name or code)", None
    if _row_number(present):
        return "identifier", "consecutive whole numbers, one per row (a row number)", None
    return _numeric_identifier(present, name, share)


def id_like_name(name: str) -> bool:
    """Whether a column name reads like a record identifier (whole tokens, never substrings).

    Example:
        >>> [id_like_name(n) for n in ("subject_no", "MRN", "nhs_number", "midline", "paid")]
        [True, True, True, False, False]
    """
    tokens = name_tokens(name)
    if is_id_like_name(name, ID_TOKENS):
        return True
    return bool(set(tokens) & ID_SUBJECTS) and bool(set(tokens) & ID_NUMBER_WORDS)


def _numeric_identifier(
    present: pd.Series, name: str, share: float
) -> tuple[str, str, None] | None:
    """Whole numbers, >= 95 % different, in row order or fixed-width 6+ digit codes.

    Measurement names (age, weight, days, ...) are never flagged by this rule: a real covariate
    dropped by mistake would ruin the fidelity of the release.
    """
    if (
        share < UNNAMED_ID_SHARE
        or len(present) < MIN_ID_ROWS
        or not _whole(present)
        or set(name_tokens(name)) & MEASURE_TOKENS
    ):
        return None
    v = present.to_numpy(dtype="float64")
    in_row_order = abs(float(pd.Series(v).corr(pd.Series(np.arange(len(v))), "spearman"))) >= 0.95
    digits = np.floor(np.log10(np.maximum(np.abs(v), 1.0))) + 1
    long_codes = bool(digits.min() >= 6 and digits.max() - digits.min() <= 1)
    if not (in_row_order or long_codes):
        return None
    how = "in row order" if in_row_order else f"codes of {int(digits.min())}+ digits"
    return (
        "identifier",
        f"likely a record identifier: whole numbers, {_pct(share)} different, {how}; not "
        "modelled (keep it only if it is a real measurement)",
        None,
    )


def _pct(share: float) -> str:
    """A share as a whole percentage, never rounded up to 100 % when below it."""
    return f"{int(np.floor(share * 100))} %"


def _looks(present: pd.Series, pattern: re.Pattern[str], share: float = 0.8) -> bool:
    """Whether most text values match a pattern (non-text columns never do)."""
    if present.dtype != object:
        return False
    text = present[present.map(lambda v: isinstance(v, str))]
    return len(text) == len(present) and text.str.strip().str.match(pattern).mean() >= share


def _looks_phone(present: pd.Series) -> bool:
    """Text like ``+44 20 7946 0958`` or ``(555) 123-4567``: 7+ digits with separators."""
    if not _looks(present, _PHONE):
        return False
    text = present.astype(str).str.strip()
    digits = text.str.count(r"\d")
    separated = text.str.contains(r"[\s\-()+.]")
    return bool(((digits >= 7) & separated).mean() >= 0.8)


def _row_number(present: pd.Series) -> bool:
    """Unique consecutive whole numbers (0..n-1, 1..n, ...)."""
    if not pd.api.types.is_numeric_dtype(present) or pd.api.types.is_bool_dtype(present):
        return False
    v = np.sort(present.to_numpy(dtype="float64"))
    return _whole(present) and bool(np.all(np.diff(v) == 1))


def _whole(present: pd.Series) -> bool:
    """All values are whole numbers."""
    if pd.api.types.is_bool_dtype(present) or not pd.api.types.is_numeric_dtype(present):
        return False
    v = present.to_numpy(dtype="float64")
    return bool(np.all(np.isfinite(v)) and np.all(v == np.round(v)))


def _decimals(s: pd.Series) -> int:
    """Most decimal places seen in a numeric column (0 for whole numbers, cap 6)."""
    v = s.dropna().to_numpy(dtype="float64")
    v = v[np.isfinite(v)]
    unresolved = v
    for k in range(MAX_DECIMALS + 1):
        unresolved = unresolved[
            np.abs(np.round(unresolved, k) - unresolved) > 1e-9 * np.maximum(1, np.abs(unresolved))
        ]
        if unresolved.size == 0:
            return k
    return MAX_DECIMALS


def _sorted(values: Any) -> list[Any]:
    """Sorted values; mixed types sort by their text."""
    vals = list(values)
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=str)


def _apply_user(
    spec: ColumnSpec,
    s: pd.Series,
    source: str,
    name: str,
    drop: Sequence[str],
    keep: Sequence[str],
    kinds: Mapping[str, str],
) -> ColumnSpec:
    """User overrides: a forced kind, ``keep`` for an identifier-looking column, ``drop``."""
    if name in kinds and kinds[name] != spec.kind:
        spec = _forced_kind(spec, s, source, kinds[name])
    elif name in keep and spec.action == "drop":
        spec = _kept(spec, s, source)
    if name in drop:
        spec = _replace(spec, action="drop", reason=f"dropped by the user; {spec.reason}")
    return spec


def _kept(spec: ColumnSpec, s: pd.Series, source: str) -> ColumnSpec:
    """Synthesize an identifier-looking column because the user insists."""
    if spec.kind != "identifier":
        raise InputError(
            f"{source}: column '{spec.name}' is {spec.kind} ({spec.reason}); it cannot be kept. "
            "Remove it from --keep."
        )
    present = s.dropna()
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        kind = "integer" if _whole(present) else "continuous"
        return _replace(
            spec,
            kind=kind,
            action="synthesize",
            labels=None,
            decimals=_decimals(s),
            reason=f"kept by the user although it looks like an identifier; modelled as {kind}",
        )
    if present.nunique() <= MAX_LEVELS:
        return _replace(
            spec,
            kind="categorical",
            action="synthesize",
            labels=tuple(_sorted(present.unique())),
            reason="kept by the user although it looks like an identifier",
        )
    raise InputError(
        f"{source}: column '{spec.name}' has {present.nunique()} different text values and cannot "
        "be modelled; remove it from --keep."
    )


def _forced_kind(spec: ColumnSpec, s: pd.Series, source: str, kind: str) -> ColumnSpec:
    """A kind chosen by the user; labels/decimals recomputed to fit it."""
    present = s.dropna()
    reason = f"kind set by the user ({kind})"
    if kind in ("binary", "categorical", "event"):
        if kind in ("binary", "event") and present.nunique() > 2:
            raise InputError(
                f"{source}: column '{spec.name}' has {present.nunique()} values; "
                f"it cannot be {kind}. Choose another kind."
            )
        labels = (
            binary_labels(list(present.unique()))
            if kind != "categorical"
            else tuple(_sorted(present.unique()))
        )
        return _replace(
            spec, kind=kind, action="synthesize", reason=reason, labels=labels, decimals=None
        )
    if kind in NUMERIC_KINDS:
        if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            raise InputError(
                f"{source}: column '{spec.name}' is not numeric; it cannot be {kind}. "
                "Choose another kind."
            )
        return _replace(
            spec, kind=kind, action="synthesize", reason=reason, labels=None, decimals=_decimals(s)
        )
    return _replace(spec, kind=kind, action="drop", reason=reason, labels=None, decimals=None)


def _with_bounds(
    spec: ColumnSpec, s: pd.Series, source: str, user: tuple[float | None, float | None] | None
) -> ColumnSpec:
    """Default range of a numeric column: its 10th smallest to 10th largest real value
    (:func:`engine.disclosure.safe_bounds`), never a real extreme that fewer than 10 rows hold;
    user (clinical) bounds replace either end."""
    if spec.kind not in NUMERIC_KINDS:
        if user is not None:
            raise InputError(
                f"{source}: column '{spec.name}' is {spec.kind}; bounds apply to numeric columns only."
            )
        return spec
    from engine.disclosure import safe_bounds

    lower, upper = safe_bounds(s.dropna().to_numpy(dtype="float64"))
    if user is not None:
        lower = lower if user[0] is None else float(user[0])
        upper = upper if user[1] is None else float(user[1])
        if lower is not None and upper is not None and lower > upper:
            raise InputError(
                f"{source}: column '{spec.name}': lower bound {lower:g} is above upper bound "
                f"{upper:g}; swap them."
            )
    return _replace(spec, lower=lower, upper=upper)


def _check_complete_rows(frame: pd.DataFrame, schema: Schema, source: str) -> None:
    """At least 50 rows must have no missing value in the synthesized columns."""
    used = [c.name for c in schema.synthesized()]
    if not used:
        raise InputError(
            f"{source}: no column is left to synthesize (all were dropped); check the column kinds."
        )
    complete = int(frame[used].notna().all(axis=1).sum())
    if complete < MIN_COMPLETE_ROWS:
        worst = frame[used].isna().sum().sort_values(ascending=False)
        hint = (
            f" (most missing: '{worst.index[0]}', {int(worst.iloc[0])} rows)"
            if worst.iloc[0]
            else ""
        )
        raise InputError(
            f"{source}: only {complete} rows have no missing values in the used columns; at least "
            f"{MIN_COMPLETE_ROWS} are needed{hint}. Drop sparse columns with --drop."
        )


def _replace(spec: ColumnSpec, **changes: Any) -> ColumnSpec:
    """dataclasses.replace, typed."""
    from dataclasses import replace

    return replace(spec, **changes)


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
