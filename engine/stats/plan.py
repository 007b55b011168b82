"""The automatic analysis: the model a statistician would fit when the user chose none.

One click releases a file whose verdict rests on the model compared on the real and the
synthetic table, so the model must be one a statistician would fit (issue 44: an HIV trial's
automatic Cox model held both the arm and the group code that determines it and did not
converge; a cohort's model held the cause of death, present only for those who died, and kept
1,962 rows of 7,874, all of them deaths). :func:`plan_analysis` chooses, and says each choice in
one line (the same lines on screen, in the PDF and in ``audit.json``'s
``fidelity.analysis_plan``):

* **the exposure**: the column the user named, else one that looks like a treatment or arm
  (its name says so and it has two to four levels, :func:`exposure_candidates`), else none
  (every covariate is an adjustment, and no single effect leads the verdict); never the first
  column by position or alphabet;
* **the covariates**: every synthesized column, less those a statistician leaves out, each
  with its reason: a column recorded only when the event happened (a presence rule on the
  event: it is known only after the outcome), another outcome (a second follow-up time
  ordered with the first in every row, or an indicator of death, relapse or censoring), one of
  each pair where one column determines the other (a rule found in every row: both in one
  model cannot be separated; the exposure is kept), a column the same in every row, and a
  category with more than :data:`MAX_LEVELS` levels;
* **the rows**: how many the model leaves out for a missing value, and in which columns.

Written by hand: no library chooses a model from a table's rules; the choices follow the
checklist a statistician applies to a Cox or regression model (no post-outcome covariates, no
perfectly collinear terms, say the complete cases), Harrell (2015) Regression Modeling
Strategies, sections 4.1-4.3.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"trt": [1, 2] * 30, "age": range(60), "time": range(60)})
    >>> exposure_candidates(df)
    ('trt',)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from engine.columns.events import history_like
from engine.columns.survival_names import event_score, time_score
from engine.disclosure.counts import safe_count, safe_total, safe_total_text, small_count
from engine.files.names import name_tokens

# Name parts that say "the treatment or arm a patient was given" (trial files: trt, tx, rx,
# arm, treatment, allocation; R survival: rx in colon, trt in veteran and pbc).
TREATMENT_WORDS = frozenset(
    "treat treatment treated trt tx rx arm allocation allocated randomised randomized "
    "randomisation randomization intervention therapy regimen exposure exposed group grp".split()
)
STRONG_TREATMENT = frozenset({"treat", "treatment", "trt", "tx", "rx", "arm"})
MAX_EXPOSURE_LEVELS = 4
NO_EXPOSURE = ""  # the user said: no column is the exposure (None: choose automatically)
MAX_LEVELS = 20  # a category with more levels: one term each would swamp the model
# Words of another outcome: an indicator of death, relapse or censoring is not a covariate.
OUTCOME_WORDS = frozenset(
    "death dead died deceased mortality relapse relapsed recurrence recurred progression "
    "progressed censor cens censored fail failure".split()
)


def exposure_candidates(frame: pd.DataFrame, exclude: Iterable[str] = ()) -> tuple[str, ...]:
    """Columns that look like a treatment or arm: a name that says so (``trt``, ``tx``,
    ``treatment_arm``, ``rx``) and two to four levels; the clearest name first, then fewer
    levels, then table order.

    Example:
        >>> df = pd.DataFrame({"txgrp": [1, 2, 3, 4] * 5, "tx": [0, 1] * 10, "age": range(20)})
        >>> exposure_candidates(df)
        ('tx',)
    """
    skip = set(exclude)
    found = []
    for position, name in enumerate(map(str, frame.columns)):
        if name in skip:
            continue
        tokens = set(name_tokens(name))
        low = name.strip().lower()
        named = bool(tokens & TREATMENT_WORDS) or low.startswith(("treat", "trt", "random"))
        levels = frame[name].dropna().nunique()
        if named and 2 <= levels <= MAX_EXPOSURE_LEVELS:
            strong = bool(tokens & STRONG_TREATMENT) or low.startswith(("treat", "trt"))
            found.append((not strong, levels, position, name))
    return tuple(name for *_, name in sorted(found))


@dataclass(frozen=True)
class AnalysisPlan:
    """The model compared on the real and the synthetic table, and why.

    ``covariates`` has the exposure first when there is one; ``left_out`` pairs a column with
    the reason it is not in the model; ``rows_used`` / ``rows`` count the complete cases."""

    analysis: str
    covariates: tuple[str, ...]
    exposure: str | None
    chosen_by: str  # "you" (the user's covariates) or "automatic"
    left_out: tuple[tuple[str, str], ...] = ()
    rows: int = 0
    rows_used: int = 0
    missing: tuple[tuple[str, int], ...] = ()  # model column, rows with no value in it
    exposure_why: str = ""
    time: str | None = None
    event: str | None = None
    outcome: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def rows_left_out(self) -> int:
        return self.rows - self.rows_used

    def lines(self) -> tuple[str, ...]:
        """Each choice in one plain line (screen, PDF section 1, ``audit.json``)."""
        out = []
        if self.analysis == "cox":
            out.append(
                f"Outcome: survival, with {self.event} as the event and {self.time} as the "
                "follow-up time."
            )
        else:
            out.append(f"Outcome: {self.outcome}.")
        if self.exposure:
            out.append(f"Exposure: {self.exposure}{self.exposure_why}.")
        else:
            out.append(
                "Exposure: none (no column looks like a treatment or arm): every column in "
                "the model is an adjustment, and every effect is checked alike."
            )
        adjust = [c for c in self.covariates if c != self.exposure]
        who = "chosen by you" if self.chosen_by == "you" else "chosen automatically"
        out.append(f"Adjusted for ({who}): {_join(adjust) or 'nothing'}.")
        if self.left_out:
            out.append("Left out: " + "; ".join(f"{c} ({why})" for c, why in self.left_out) + ".")
        out.append(self.rows_line())
        return tuple(out)

    def rows_line(self) -> str:
        """The rows the model uses, in one line."""
        if not self.rows_left_out:
            return f"Rows: all {self.rows:,} rows are in the model."
        where = ", ".join(f"{c} {safe_count(n)}" for c, n in self.missing)
        return (
            f"Rows: {self.rows_used:,} of {safe_total_text(self.rows, self.rows_used)} are in "
            f"the model; {safe_count(self.rows_left_out)} have no value in a model column "
            f"({where}) and are left out of both fits."
        )

    def to_dict(self) -> dict[str, Any]:
        """``audit.json["fidelity"]["analysis_plan"]``."""
        return {
            "analysis": self.analysis,
            "exposure": self.exposure,
            "covariates": list(self.covariates),
            "chosen_by": self.chosen_by,
            "left_out": [{"column": c, "why": why} for c, why in self.left_out],
            "rows": safe_total(self.rows, self.rows_used),
            "rows_used": self.rows_used,
            "rows_left_out": small_count(self.rows_left_out) if self.rows_left_out else 0,
            "missing": {c: small_count(n) for c, n in self.missing},
            "lines": list(self.lines()),
        }


def plan_analysis(
    real: pd.DataFrame,
    candidates: Sequence[str],
    rules: Iterable[Any] = (),
    *,
    analysis: str = "cox",
    time: str | None = None,
    event: str | None = None,
    outcome: str | None = None,
    covariates: Sequence[str] = (),
    exposure: str | None = None,
    kinds: dict[str, str] | None = None,
) -> AnalysisPlan:
    """The model to compare: the user's ``covariates`` as given (the exposure is ``exposure``,
    else the first; :data:`NO_EXPOSURE` for none), or the automatic choice from ``candidates``
    (the synthesized columns) and the ``rules`` found
    in every real row (:class:`engine.columns.rules.Rule`); see the module docstring.

    Example:
        >>> import numpy as np
        >>> from engine.columns.rules import Rule
        >>> rng = np.random.default_rng(0)
        >>> grp = rng.integers(1, 5, 200)
        >>> df = pd.DataFrame({"time": rng.exponential(5, 200), "died": rng.integers(0, 2, 200),
        ...     "txgrp": grp, "tx": (grp > 2).astype(int), "age": rng.normal(60, 9, 200)})
        >>> rule = Rule("fixed", "txgrp", "tx")
        >>> plan = plan_analysis(df, ["txgrp", "tx", "age"], [rule], time="time", event="died")
        >>> plan.exposure, plan.covariates, plan.left_out[0][0]
        ('tx', ('tx', 'age'), 'txgrp')
    """
    heads = [time, event] if analysis == "cox" else [outcome]
    response = [c for c in heads if c]
    if covariates:  # the user's model: the exposure named, else the first covariate
        lead = covariates[0] if exposure is None else (exposure or None)
        chosen = tuple([lead] if lead else []) + tuple(c for c in covariates if c != lead)
        return _with_rows(
            AnalysisPlan(
                analysis,
                chosen,
                lead,
                "you",
                (),
                time=time,
                event=event,
                outcome=outcome,
                exposure_why=" (chosen by you)",
            ),
            real,
            response,
        )
    kinds = kinds or {}
    pool = [c for c in candidates if c not in response and kinds.get(c) != "date"]
    rules = [r for r in rules if getattr(r, "source", "found") == "found"]
    left: list[tuple[str, str]] = []

    def leave(column: str, why: str) -> None:
        if column in pool:
            pool.remove(column)
            left.append((column, why))

    ends = [c for c in (event if analysis == "cox" else outcome,) if c]
    for rule in rules:
        if rule.kind == "presence" and rule.a in ends:
            levels = ", ".join(str(v) for v in rule.levels)
            leave(rule.b, f"recorded only when {rule.a} = {levels}: known only after the outcome")
    for name in list(pool):
        why = _other_outcome(real, name, time, rules)
        if why:
            leave(name, why)
    for name in list(pool):
        count = int(real[name].dropna().nunique())
        if count <= 1:
            leave(name, "the same in every row")
        elif kinds.get(name) in ("categorical", "nominal") and count > MAX_LEVELS:
            leave(name, f"{count} levels: one term for each would swamp the model")
    why_exposure = ""
    if exposure == NO_EXPOSURE:
        exposure = None
    elif exposure is None:
        found = exposure_candidates(real[pool]) if pool else ()
        exposure = found[0] if found else None
        if exposure is not None:
            count = int(real[exposure].dropna().nunique())
            why_exposure = f" (it looks like the treatment or arm: {count} levels)"
    elif exposure in pool:
        why_exposure = " (chosen by you)"
    else:
        exposure = None
    for rule in rules:
        if rule.kind == "fixed" and rule.a in pool and rule.b in pool:
            keep, drop = (rule.b, rule.a) if rule.b == exposure else (rule.a, rule.b)
            role = " (the exposure)" if keep == exposure else ""
            verb = "determines" if drop == rule.a else "is determined by"
            leave(drop, f"it {verb} {keep}{role} in every row: both cannot be in one model")
    ordered = tuple([exposure] if exposure else []) + tuple(c for c in pool if c != exposure)
    plan = AnalysisPlan(
        analysis,
        ordered,
        exposure,
        "automatic",
        tuple(left),
        time=time,
        event=event,
        outcome=outcome,
        exposure_why=why_exposure,
    )
    return _with_rows(plan, real, response)


def _other_outcome(
    real: pd.DataFrame, name: str, time: str | None, rules: Sequence[Any]
) -> str | None:
    """Why ``name`` is another outcome rather than a baseline measurement, or None: a second
    follow-up time ordered with the time in every row, or an indicator of death, relapse or
    censoring (a baseline-history flag such as ``cvd`` is kept)."""
    tokens = set(name_tokens(name))
    binary = real[name].dropna().nunique() == 2
    if time and time_score(name) >= 2 and not binary:
        ordered = any(r.kind == "order" and {r.a, r.b} == {name, time} for r in rules)
        if ordered or time_score(name) >= 3:
            how = f", ordered with {time} in every row" if ordered else ""
            return f"another follow-up time{how}: an outcome, not a measurement at baseline"
    if binary and not history_like(name) and (tokens & OUTCOME_WORDS or event_score(name) == 3):
        return "another outcome: an indicator of death, relapse or censoring"
    return None


def _with_rows(plan: AnalysisPlan, real: pd.DataFrame, response: Sequence[str]) -> AnalysisPlan:
    """``plan`` with the complete cases of its columns counted."""
    from dataclasses import replace

    used = [c for c in (*response, *plan.covariates) if c in real.columns]
    missing = real[used].isna()
    counts = tuple((str(c), int(n)) for c, n in missing.sum().items() if n)
    rows_used = int((~missing.any(axis=1)).sum()) if used else len(real)
    return replace(plan, rows=len(real), rows_used=rows_used, missing=counts)


def _join(names: Sequence[str]) -> str:
    return ", ".join(names)
