"""Column kinds and roles: what is synthesized, what is dropped, and why (in plain English).

Rules, applied in this order (the first that fits wins; user ``kinds`` override them all):

==============  ===============================================================  ==========
kind            rule                                                             action
==============  ===============================================================  ==========
constant        every value missing, or one distinct value                       drop
date            datetime dtype, or text that reads as dates; modelled as days      synthesize
                from a secret reference (an exact date of birth: drop)
identifier      e-mail / phone-looking text; or >= 90 % different values with an  drop
                ID-like name (id, mrn, nhs, ssn, patient, email, phone, name,
                address, postcode, zip, or subject/record/case + no/number/code:
                whole tokens) or text values; or a row number; or whole numbers,
                >= 95 % different, in row order or 6+ digit codes (not a
                measurement name such as age, weight, time, days)
text            text with more than 20 distinct values (free text)                drop
binary          two distinct values (value labels kept)                           synthesize
categorical     text with <= 20 levels, or numeric codes with value labels, or    synthesize
                whole numbers with 3-12 values that code groups (name or values
                say so, not a count or measurement: :mod:`engine.columns.codes`);
                levels held by < 10 people merged into "other (fewer than 10)"
integer         whole numbers with more than two values                           synthesize
continuous      other numbers (``decimals`` = most decimal places seen, cap 6)    synthesize
==============  ===============================================================  ==========

Roles: ``time=`` (numeric, >= 0) becomes kind ``time``; ``event=`` (0/1, booleans or a
recognised pair such as no/yes) becomes kind ``event``. Binary label order: the
"negative/absent" label first when the pair is recognised (no/yes, n/y, false/true, f/t, 0/1,
negative/positive, absent/present, alive/dead, censored/event, off/on), otherwise sorted.

The rules live in five small modules, re-exported here (``engine.columns.schema.<name>`` keeps
working): :mod:`engine.columns.kinds` (one column's kind), :mod:`engine.columns.identifiers` (dates
and identifiers), :mod:`engine.columns.roles` (survival roles), :mod:`engine.files.values` (value
tests they share); this module checks the whole table and applies the user's choices.

References: docs/method.md section 2 (direct identifiers are never modelled; complete cases).

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"patient_id": range(60), "smoker": ["yes", "no"] * 30,
    ...                    "age": [50.5 + i for i in range(60)]})
    >>> s = infer_schema(df)
    >>> for c in s.columns:
    ...     print(c.name, c.kind, c.action)
    patient_id identifier drop
    smoker binary synthesize
    age continuous synthesize
    >>> s.by_name("smoker").labels
    ('no', 'yes')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from engine.columns.codes import OTHER, code_kind, merge_rare
from engine.columns.identifiers import (
    ID_NUMBER_WORDS,
    ID_SUBJECTS,
    ID_TOKENS,
    MEASURE_TOKENS,
    id_like_name,
)
from engine.columns.kinds import (
    KINDS,
    MAX_LEVELS,
    NEGATIVE_FIRST,
    NUMERIC_KINDS,
    SYNTHESIZABLE,
    ColumnSpec,
    binary_labels,
    infer_column,
)
from engine.columns.roles import RecognisedRoles, recognise_survival_roles, role_spec
from engine.errors import InputError, TooFewRows
from engine.files.read import ColumnMeta, LoadedTable
from engine.files.values import MAX_DECIMALS, all_whole, decimal_places, sorted_values

__all__ = [
    "ID_NUMBER_WORDS",
    "ID_SUBJECTS",
    "ID_TOKENS",
    "KINDS",
    "MAX_DECIMALS",
    "MAX_LEVELS",
    "MEASURE_TOKENS",
    "MIN_COMPLETE_ROWS",
    "NEGATIVE_FIRST",
    "NUMERIC_KINDS",
    "SYNTHESIZABLE",
    "ColumnSpec",
    "RecognisedRoles",
    "Schema",
    "binary_labels",
    "id_like_name",
    "infer_schema",
    "recognise_survival_roles",
]

MIN_COMPLETE_ROWS = 50


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

    def to_dict(self) -> list[dict[str, Any]]:
        """``audit.json``'s ``columns``: name, kind, action, reason; for coded categories also
        ``ordered`` and, where rare levels were merged, ``merged_levels`` and ``merged_into``
        (issue 32; new keys, nothing renamed). The merged levels' own values are not listed."""
        out: list[dict[str, Any]] = []
        for c in self.columns:
            row: dict[str, Any] = {"name": c.name, "kind": c.kind, "action": c.action}
            row["reason"] = c.reason
            if c.ordered is not None:
                row["ordered"] = c.ordered
            if c.merged:
                row.update(merged_levels=c.merged, merged_into=OTHER)
            out.append(row)
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per column with every field (for the report and the wizard)."""
        return pd.DataFrame([c.to_dict() for c in self.columns])


def infer_schema(
    table: LoadedTable | pd.DataFrame,
    *,
    time: str | None = None,
    event: str | None = None,
    event_value: Any = None,
    drop: Sequence[str] = (),
    keep: Sequence[str] = (),
    kinds: Mapping[str, str] | None = None,
    bounds: Mapping[str, tuple[float | None, float | None]] | None = None,
    column_meta: Mapping[str, ColumnMeta] | None = None,
    model_dates: bool = True,
    complete_cases: bool = False,
) -> Schema:
    """Give every column a kind, an action and a reason; check the survival roles.

    ``event_value``: the value of the event column that means the event happened, when it is
    not the usual one (1, True, the second of a known pair such as alive/dead, 2 of a 1/2 code).
    ``model_dates``: synthesize date columns (as days, :mod:`engine.columns.dates`) or drop them.
    ``complete_cases``: at least 50 rows must then have no missing value in the used columns;
    otherwise (missing values modelled, :mod:`engine.encoding.missing`) at least 50 rows in all.

    References: docs/method.md section 2 (identifiers never modelled); issue 13 items 4 and 5.
    """
    frame, source, meta = _unpack(table, column_meta)
    kinds, bounds = dict(kinds or {}), dict(bounds or {})
    _check_names(frame, source, time, event, drop, keep, kinds, bounds)
    specs = []
    for name in frame.columns:
        s = frame[name]
        spec = role_spec(s, source, name, time, event, event_value) or _coded(
            infer_column(s, meta.get(name), model_dates=model_dates), s
        )
        spec = merge_rare(_apply_user(spec, s, source, name, drop, keep, kinds), s)
        specs.append(_with_bounds(spec, s, source, bounds.get(name)))
    schema = Schema(tuple(specs), time, event)
    _check_complete_rows(frame, schema, source, complete_cases)
    return schema


def _coded(spec: ColumnSpec, s: pd.Series) -> ColumnSpec:
    """An automatic ``integer`` that codes a category becomes one (:mod:`engine.columns.codes`)."""
    if spec.kind != "integer":
        return spec
    found = code_kind(spec.name, s.dropna())
    if found is None:
        return spec
    kind, reason, labels, ordered = found
    return replace(spec, kind=kind, reason=reason, labels=labels, ordered=ordered, decimals=None)


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
    asked = [("the time column", time), ("the event column", event)]
    asked += (
        [("the columns to drop", d) for d in drop]
        + [("the columns to keep", k) for k in keep]
        + [("the column kinds", k) for k in kinds]
        + [("the bounds setting", b) for b in bounds]
    )
    for setting, name in asked:
        if name is not None and name not in frame.columns:
            raise InputError(
                f"{source}: no column '{name}' (named in {setting}); the columns are {available}."
            )
    if time is not None and time == event:
        raise InputError(
            f"{source}: column '{time}' cannot be both the time and the event; choose two columns."
        )
    for name in (time, event):
        if name is not None and name in drop:
            raise InputError(
                f"{source}: column '{name}' is a survival role and also in the columns to drop; "
                "remove one."
            )
    for name, kind in kinds.items():
        if kind not in KINDS:
            raise InputError(
                f"{source}: column '{name}': unknown kind '{kind}'; use one of {', '.join(KINDS)}."
            )


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
        spec = replace(spec, action="drop", reason=f"dropped by the user; {spec.reason}")
    return spec


def _kept(spec: ColumnSpec, s: pd.Series, source: str) -> ColumnSpec:
    """Synthesize an identifier-looking column because the user insists."""
    if spec.kind != "identifier":
        raise InputError(
            f"{source}: column '{spec.name}' is {spec.kind} ({spec.reason}); it cannot be kept. "
            "Remove it from the columns to keep."
        )
    present = s.dropna()
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        kind = "integer" if all_whole(present) else "continuous"
        return replace(
            spec,
            kind=kind,
            action="synthesize",
            labels=None,
            decimals=decimal_places(s),
            reason=f"kept by the user although it looks like an identifier; modelled as {kind}",
        )
    if present.nunique() <= MAX_LEVELS:
        return replace(
            spec,
            kind="categorical",
            action="synthesize",
            labels=tuple(sorted_values(present.unique())),
            reason="kept by the user although it looks like an identifier",
        )
    raise InputError(
        f"{source}: column '{spec.name}' has {present.nunique()} different text values and cannot "
        "be modelled; remove it from the columns to keep."
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
            else tuple(sorted_values(present.unique()))
        )
        return replace(
            spec, kind=kind, action="synthesize", reason=reason, labels=labels, decimals=None
        )
    if kind in NUMERIC_KINDS:
        if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            raise InputError(
                f"{source}: column '{spec.name}' is not numeric; it cannot be {kind}. "
                "Choose another kind."
            )
        return replace(
            spec,
            kind=kind,
            action="synthesize",
            reason=reason,
            labels=None,
            decimals=decimal_places(s),
        )
    return replace(spec, kind=kind, action="drop", reason=reason, labels=None, decimals=None)


def _with_bounds(
    spec: ColumnSpec, s: pd.Series, source: str, user: tuple[float | None, float | None] | None
) -> ColumnSpec:
    """Default range of a numeric column: its 10th smallest to 10th largest real value
    (:func:`engine.disclosure.safe_bounds`), never a real extreme that fewer than 10 rows hold;
    user (clinical) bounds replace either end."""
    if spec.kind not in NUMERIC_KINDS:
        if user is not None:
            raise InputError(
                f"{source}: column '{spec.name}' is {spec.kind}; bounds apply to numeric columns "
                "only."
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
    return replace(spec, lower=lower, upper=upper)


def _check_complete_rows(
    frame: pd.DataFrame, schema: Schema, source: str, complete_cases: bool = True
) -> None:
    """At least 50 rows (with ``complete_cases``: 50 rows with no missing value in the
    synthesized columns)."""
    used = [c.name for c in schema.synthesized()]
    if not used:
        raise InputError(
            f"{source}: no column is left to synthesize (all were dropped); check the column kinds."
        )
    if not complete_cases:
        if len(frame) < MIN_COMPLETE_ROWS:
            raise TooFewRows(
                f"{source}: only {len(frame)} rows; at least {MIN_COMPLETE_ROWS} are needed."
            )
        return
    complete = int(frame[used].notna().all(axis=1).sum())
    if complete < MIN_COMPLETE_ROWS:
        worst = frame[used].isna().sum().sort_values(ascending=False)
        hint = (
            f" (most missing: '{worst.index[0]}', {int(worst.iloc[0])} rows)"
            if worst.iloc[0]
            else ""
        )
        raise TooFewRows(
            f"{source}: only {complete} rows have no missing values in the used columns; at least "
            f"{MIN_COMPLETE_ROWS} are needed{hint}. Add sparse columns to the columns to drop."
        )
