"""What a model asks for and what a fit returns: :class:`ModelSpec`, :class:`ModelFit`,
:class:`Coefficient`.

The shared vocabulary of the statistics room, kept apart from the fitting code
(:mod:`engine.stats.regression`), the combining rules (:mod:`engine.stats.combine`) and the
real-vs-synthetic comparisons (:mod:`engine.stats.compare`, :mod:`engine.stats.fidelity`) so that
each of those imports these types from one place and none imports another to get them.
:func:`json_safe` (numpy scalars and NaN to plain JSON) lives here because every result's
``to_dict()`` uses it; :func:`withhold_terms` blanks the terms of groups under 10 people.

References: docs/contracts.md (no statistic of a group under 10 people in any file).

Example:
    >>> spec = ModelSpec("ols", outcome="y", covariates=("x",))
    >>> fit = ModelFit("ols", 100, 0, None, (Coefficient("x", 2.0, 0.1, 1.8, 2.2, 0.001),))
    >>> spec.used_columns(), fit.coefficient("x").estimate
    (['y', 'x'], 2.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats as sps

from engine.disclosure import NOT_SHOWN_GROUP
from engine.errors import InputError

Analysis = Literal["cox", "ols", "logistic"]
Rule = Literal["partial", "full"]
ALPHA = 0.05
Z95 = float(sps.norm.ppf(1 - ALPHA / 2))
INTERCEPT = "(intercept)"


def json_safe(value: Any) -> Any:
    """Turn numpy scalars, tuples, arrays, paths and non-finite floats into plain JSON values
    (NaN/inf -> None): the one such helper of the engine.

    Example:
        >>> json_safe({"a": np.float64(1.5), "b": (np.nan, np.int64(2)), "c": PurePath("x.csv")})
        {'a': 1.5, 'b': [None, 2], 'c': 'x.csv'}
    """
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [json_safe(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, PurePath):
        return str(value)
    return value


class ModelNotConverged(InputError):
    """A model could not be fitted to a table (no convergence, separation, collinearity).

    On the real table of a run this is reported in the fidelity section, not fatal: the
    synthetic table is still exported (the question is the data's, not the user's input).
    """


@dataclass(frozen=True)
class ModelSpec:
    """Which model to fit: ``analysis`` with ``outcome`` (OLS/logistic) or ``time``+``event`` (Cox).

    ``per`` maps a covariate to the units an effect is reported per (e.g. ``{"sbp": 10}``).

    Example:
        >>> spec = ModelSpec("cox", time="t", event="cvd", covariates=("sbp",), per={"sbp": 10})
        >>> spec.used_columns()
        ['t', 'cvd', 'sbp']
    """

    analysis: Analysis
    outcome: str | None = None
    covariates: tuple[str, ...] = ()
    time: str | None = None
    event: str | None = None
    per: dict[str, float] | None = None
    exposure: str | None = None  # the effect that leads the verdict (engine.stats.plan)

    def used_columns(self) -> list[str]:
        """Every column the model reads, response first."""
        head = [self.time, self.event] if self.analysis == "cox" else [self.outcome]
        return [c for c in head if c is not None] + list(self.covariates)

    def check(self, df: pd.DataFrame, source: str = "table") -> None:
        """Raise :class:`InputError` naming ``source`` and the column when ``df`` cannot be
        fitted."""
        if self.analysis not in ("cox", "ols", "logistic"):
            raise InputError(f"analysis '{self.analysis}' is unknown: use cox, ols or logistic")
        if self.analysis == "cox" and (not self.time or not self.event):
            raise InputError("a Cox analysis needs the time column and the event column: give both")
        if self.analysis != "cox" and not self.outcome:
            raise InputError(
                f"a {self.analysis} analysis needs the outcome column: give the column the "
                "model explains"
            )
        if not self.covariates:
            raise InputError("no covariates given: list them in the covariates")
        for col in self.used_columns():
            if col not in df.columns:
                raise InputError(
                    f"{source}: column '{col}' not found: check the spelling ({len(df.columns)} "
                    "columns read)"
                )
        for col in self.per or {}:
            if col not in self.covariates:
                raise InputError(
                    f"the effect-per-units setting names '{col}', which is not a covariate: "
                    "add it to the covariates"
                )


@dataclass(frozen=True)
class Coefficient:
    """One row of a coefficient table; ``df`` is the t degrees of freedom when a t CI was used."""

    name: str
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    p: float
    per: float = 1.0
    df: float | None = None


@dataclass(frozen=True)
class ModelFit:
    """A fitted model. For Cox and logistic ``to_frame()`` adds ``hr`` / ``or`` =
    exp(estimate*per)."""

    analysis: Analysis
    n: int
    n_dropped: int
    n_events: int | None
    coefficients: tuple[Coefficient, ...]
    combined: dict[str, Any] | None = None
    withheld: tuple[str, ...] = ()  # terms of a group of < 10 people (or events): never shown

    def coefficient(self, name: str) -> Coefficient:
        """The coefficient called ``name`` (a dummy is ``column=level``)."""
        for c in self.coefficients:
            if c.name == name:
                return c
        raise InputError(
            f"no coefficient '{name}' in the {self.analysis} model: use one of "
            f"{[c.name for c in self.coefficients]}"
        )

    def to_frame(self) -> pd.DataFrame:
        """Coefficient table: name, estimate, se, ci_low, ci_high, p, per (+ hr/or columns)."""
        frame = pd.DataFrame([asdict(c) for c in self.coefficients])
        ratio = {"cox": "hr", "logistic": "or"}.get(self.analysis)
        if ratio is not None and len(frame):
            for src, dst in (
                ("estimate", ratio),
                ("ci_low", f"{ratio}_ci_low"),
                ("ci_high", f"{ratio}_ci_high"),
            ):
                frame[dst] = np.exp(frame[src] * frame["per"])
        return frame

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary; the terms in ``withheld`` keep only their name (docs/contracts.md)."""
        combined = self.combined
        if combined and isinstance(combined.get("coefficients"), dict):
            detail = {
                k: {"not_shown": withheld_note(k)} if k in self.withheld else v
                for k, v in combined["coefficients"].items()
            }
            combined = {**combined, "coefficients": detail}
        records = self.to_frame().to_dict(orient="records")
        return json_safe(
            {
                "analysis": self.analysis,
                "n": self.n,
                "n_dropped": self.n_dropped,
                "n_events": self.n_events,
                "combined": combined,
                "coefficients": withhold_terms(records, self.withheld),
                "withheld": list(self.withheld),
            }
        )


NOT_SHOWN_MERGED = (
    "not shown: levels held by fewer than 10 people each, merged into one group that has "
    "fewer than 10 people or events"
)


def withheld_note(term: str) -> str:
    """Why a withheld term has no numbers: a merged level (:data:`engine.columns.codes.OTHER`,
    issue 32) is said to be merged, not lost; any other term is a group of fewer than 10.

    Example:
        >>> withheld_note("race=other (fewer than 10)") == NOT_SHOWN_MERGED
        True
        >>> withheld_note("race=2")
        'not shown: fewer than 10 people in this group'
    """
    from engine.columns.codes import OTHER

    return NOT_SHOWN_MERGED if term.endswith(f"={OTHER}") else NOT_SHOWN_GROUP


def withhold_terms(
    records: Sequence[Mapping[Any, Any]], withheld: Sequence[str]
) -> list[dict[str, Any]]:
    """Coefficient records with every value of a withheld term blanked (None) and a
    ``not_shown`` note, so no file shows a statistic of a group of fewer than 10 people.

    Example:
        >>> terms = [{"name": "site=C", "estimate": -16.8, "per": 1.0}]
        >>> withhold_terms(terms, ["site=C"])  # doctest: +NORMALIZE_WHITESPACE
        [{'name': 'site=C', 'estimate': None, 'per': 1.0,
          'not_shown': 'not shown: fewer than 10 people in this group'}]
    """
    out = []
    for record in records:
        rec = {str(k): v for k, v in record.items()}
        if rec.get("name") in withheld:
            rec = {k: v if k in ("name", "per") else None for k, v in rec.items()}
            rec["not_shown"] = withheld_note(str(rec.get("name")))
        out.append(rec)
    return out
