"""The rules between columns for a face that shows them before a run (issue 30): the wizard's
Columns page lists the rules found in the real rows (:func:`suggest_rules`) and checks a rule
the user types (:func:`check_rule`) with the same reading and language as ``prepare``."""

from __future__ import annotations

from typing import Any

from engine.errors import InputError


def suggest_rules(schema: Any, frame: Any) -> tuple[str, ...]:
    """The texts of the rules found in ``frame`` (the rows in use, as read) for ``schema``: the
    rows read as ``prepare`` reads them (codes, dates, missing values), then
    :func:`engine.columns.rules_found.find_rules`."""
    from engine.columns.rules_found import find_rules
    from engine.encoding.layered import prepared_rows

    real, _ = prepared_rows(schema, frame, complete_cases=False)
    return tuple(r.text for r in find_rules(real, list(schema.synthesized())))


def check_rule(text: str, schema: Any, frame: Any) -> str:
    """The rule in the shared language (``"sysbp > diasbp"`` -> ``"diasbp < sysbp"``), or
    :class:`InputError` in one line when it cannot be read or the real rows break it."""
    from engine.columns.rules import RuleError, broken, parse_rule
    from engine.disclosure import safe_count
    from engine.encoding.layered import prepared_rows

    real, _ = prepared_rows(schema, frame, complete_cases=False)
    try:
        rule = parse_rule(text, real)
    except RuleError as exc:
        raise InputError(str(exc)) from None
    n = int(broken(rule, real).sum())
    if n:
        raise InputError(
            f"rule '{rule.text}': {safe_count(n)} real rows break it, so it cannot be kept"
        )
    return rule.text
