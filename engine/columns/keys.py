"""Which columns an attacker is assumed to know (the *keys*, quasi-identifiers) and which ones
the disclosure measures try to learn (the *targets*), suggested from the columns' names and kinds.

An output checker's first question is "if someone knows a patient's age, sex and ethnicity, can
the synthetic file tell them that patient's outcome?". The keys are what a neighbour, an
employer or a newspaper can know about a person: age (or year or date of birth), sex or gender,
ethnicity or race, where they live, and dates of events; the targets are what they should not
learn: the event and every other clinical column. The suggestion is a start: the wizard's Columns
page and the command line let the user add or remove keys (:attr:`RunConfig.keys`), and the
measures (:mod:`engine.disclosure.risk`) use exactly the columns chosen.

References: Raab, Nowok & Dibben (2024) "Practical privacy metrics for synthetic data",
arXiv:2406.16826 (keys and targets, section 3); Elliot et al. (2020) "The Anonymisation Decision-
Making Framework", 2nd ed., UKAN (the key variables a data environment makes known);
synthpop 1.9 ``disclosure(keys, target)``.

Example:
    >>> from engine.columns.kinds import ColumnSpec
    >>> cols = [ColumnSpec("age", "integer", "synthesize", ""),
    ...         ColumnSpec("sex", "binary", "synthesize", ""),
    ...         ColumnSpec("sbp", "continuous", "synthesize", ""),
    ...         ColumnSpec("cvd", "event", "synthesize", "")]
    >>> suggest_keys(cols), suggest_targets(cols, ("age", "sex"), event="cvd")
    (('age', 'sex'), ('cvd', 'sbp'))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from engine.disclosure.words import MAX_TARGETS, TARGET_KINDS
from engine.errors import InputError
from engine.files.names import name_tokens

# Whole name tokens that mark a quasi-identifier (names are split into words first, so "page"
# or "stage" never match "age").
KEY_TOKENS = frozenset(
    (
        "age aged yob dob birth born birthyear "
        "sex gender male female "
        "ethnicity ethnic ethnicgroup race raceth ancestry "
        "postcode zip zipcode region county district state country "
        "area town city ward lsoa msoa geography residence nation"
    ).split()
)
KEY_KINDS = frozenset({"date"})  # exact dates of events are keys whatever their name
# TARGET_KINDS and MAX_TARGETS (the kinds a disclosure target may have, and how many are
# measured: the event first, then the clinical columns in input order) are the disclosure
# check's own limits, in engine.disclosure.words


def is_key_name(name: str) -> bool:
    """Whether a column name reads as a quasi-identifier (whole words only).

    Example:
        >>> is_key_name("age_at_entry"), is_key_name("Sex"), is_key_name("stage")
        (True, True, False)
    """
    tokens = name_tokens(name)
    return bool(set(tokens) & KEY_TOKENS) or "".join(tokens) in KEY_TOKENS


def suggest_keys(columns: Iterable[Any]) -> tuple[str, ...]:
    """The synthesized columns an attacker may know, in input order: names that read as age,
    sex/gender, ethnicity/race or geography, and every date column. ``columns`` are
    :class:`engine.columns.kinds.ColumnSpec` (name, kind, action)."""
    return tuple(
        c.name
        for c in columns
        if c.action == "synthesize"
        and c.kind not in ("event", "time")
        and (c.kind in KEY_KINDS or is_key_name(c.name))
    )


def suggest_targets(
    columns: Iterable[Any], keys: Sequence[str], event: str | None = None
) -> tuple[str, ...]:
    """What the attacker tries to learn: the event column first, then the other clinical columns
    (every synthesized column that is not a key and has a value kind), at most
    :data:`MAX_TARGETS`."""
    chosen = [
        c.name
        for c in columns
        if c.action == "synthesize" and c.name not in keys and c.kind in TARGET_KINDS
    ]
    if event in chosen:
        chosen.remove(str(event))
        chosen.insert(0, str(event))
    return tuple(chosen[:MAX_TARGETS])


def keys_and_targets(
    schema: Any, keys: Sequence[str] | None, targets: Sequence[str] | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The keys and targets a run measures: the user's choice where given, else the suggestion;
    targets never include a key. ``schema`` is :class:`engine.columns.schema.Schema`."""
    cols = schema.synthesized()
    chosen_keys = tuple(keys) if keys is not None else suggest_keys(cols)
    if targets is not None:
        return chosen_keys, tuple(t for t in targets if t not in chosen_keys)
    return chosen_keys, suggest_targets(cols, chosen_keys, event=schema.event)


def check_keys(schema: Any, keys: Sequence[str] | None, targets: Sequence[str] | None) -> None:
    """Raise :class:`InputError` (one line naming the column) for a key or target that is not a
    synthesized column of the table.

    Example:
        >>> from engine.columns.kinds import ColumnSpec
        >>> from engine.columns.schema import Schema
        >>> schema = Schema((ColumnSpec("age", "integer", "synthesize", ""),))
        >>> check_keys(schema, ("agee",), None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        engine.errors.InputError: the key columns name 'agee', which is not ...: choose from age
    """
    names = [c.name for c in schema.synthesized()]
    choose = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
    for what, chosen in (("the key columns", keys), ("the disclosure targets", targets)):
        for name in chosen or ():
            if name not in names:
                raise InputError(
                    f"{what} name '{name}', which is not among the synthesized columns: choose "
                    f"from {choose}"
                )
