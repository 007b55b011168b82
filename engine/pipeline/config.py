"""What a run is asked to do and what it gives back: :class:`RunConfig`, :class:`Prepared`,
:class:`RunResult` (defined in :mod:`engine.pipeline.results`, re-exported here) and the defaults
both faces show.

References: docs/architecture.md; main paper Algorithm 1 and section 4.3.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from engine.errors import InputError

if TYPE_CHECKING:
    from engine.columns.schema import Schema
    from engine.encoding.layered import LayeredEncoder
    from engine.files.read import LoadedTable

FORMATS = ("csv", "xlsx", "parquet", "sav", "dta")
BUDGETS = ("fast", "default", "thorough")
DEFAULT_GRID = tuple(round(0.05 * i, 2) for i in range(20))
# The audit's design by table size (engine.privacy.crossfit, issue 43). Up to SPLIT_TWICE_UP_TO
# rows each round is five cross-fitted folds (every row a non-member once); above it one split
# (training dominates the run time, and at that size one split's AUC is already precise).
SPLIT_TWICE_UP_TO = 20_000
# Rounds of fresh folds the SE target (0.005 at the decision) may use, by rows: a round costs
# five model fits, cheap on small tables, where the spread between folds decides the SE.
AUDIT_ROUNDS = ((500, 6), (2_000, 3), (SPLIT_TWICE_UP_TO, 2))
# Rounds the floor (the Gaussian copula, fitted in a moment) may get at the smallest w before a
# refusal, up to FLOOR_ROUNDS_UP_TO rows: the refusal rests on that one point.
FLOOR_ROUNDS, FLOOR_ROUNDS_UP_TO = 6, 2_000


def audit_rounds(rows: int) -> int:
    """Rounds of folds the SE target may use on a table of ``rows`` audited rows.

    Example:
        >>> audit_rounds(300), audit_rounds(1_608), audit_rounds(50_000)
        (6, 3, 1)
    """
    return next((r for top, r in AUDIT_ROUNDS if rows <= top), 1)


AUDIT_MAX_ROWS = (
    50_000  # larger tables are audited on a random subsample (conservative, see _audit)
)


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs; the wizard and the CLI both build one of these."""

    input: Path | str  # kept as given: a URL must reach the reader intact to be refused
    out: Path | None = None
    sheet: str | int | None = None
    missing_codes: tuple[str, ...] = ()
    subset: tuple[str, str] | None = None  # (column, value): keep only these rows (one site)
    time: str | None = None
    event: str | None = None
    event_value: str | None = None  # the event column's value that means the event happened
    # how the command line chose time and event when none was given: "recognised", or "likely,
    # used: <why it is not certain>" (engine.pipeline.console); None when they were given
    roles_how: str | None = None
    drop: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    kinds: tuple[tuple[str, str], ...] = ()
    bounds: tuple[tuple[str, float | None, float | None], ...] = ()
    auc_max: float = 0.55
    forced_w: float | None = None  # release at this w (the audit still runs and is reported)
    w_grid: tuple[float, ...] = DEFAULT_GRID
    repeats: int | None = None
    audit_max_rows: int = AUDIT_MAX_ROWS
    seed: int | None = None
    device: str = "auto"
    file_format: str = "csv"  # of the synthetic table: csv, xlsx, parquet, sav or dta
    budget: str = "fast"
    analysis: str | None = None
    outcome: str | None = None
    covariates: tuple[str, ...] = ()
    exposure: str | None = None  # with no covariates given: the exposure of the automatic model
    per: tuple[tuple[str, float], ...] = ()
    allow_risky: bool = False
    risk_acknowledged: bool = False  # the wizard's explicit acknowledgement for a raised w
    protect_outliers: bool = False
    copies: int = 1
    report: bool = True
    dp_epsilon: float | None = None  # formal DP mode: also release Flow Sampling from a DP-SGD flow
    dp_delta: float | None = None  # default 1 / n^1.1
    input_label: str | None = None  # e.g. "demo cohort, ARIC F"
    complete_cases: bool = False  # leave out rows with a missing value instead of modelling it
    keys: tuple[str, ...] | None = None  # what an attacker may know (None: suggested, columns/keys)
    disclosure_targets: tuple[str, ...] | None = None  # what they try to learn (None: suggested)
    disclosure_margin: float | None = None  # cap on the disclosure rule's margin, in points
    rules: tuple[str, ...] = ()  # the user's own rules ("los <= futime"; engine.columns.rules)
    rules_off: tuple[str, ...] = ()  # rules found in the real rows that the user removed

    def validate(self) -> None:
        """Raise :class:`InputError` for options that cannot work, before any heavy work.

        Messages name the setting in plain words (the wizard shows them as they are); the
        analysis checks that need no table are :func:`check_analysis`'s.
        """
        if not 0.5 < self.auc_max <= 1.0:
            raise InputError(
                f"AUC limit {self.auc_max:g}: the limit must be above 0.5 (a coin toss) and at "
                "most 1"
            )
        if self.forced_w is not None and not 0.0 <= self.forced_w <= 1.0:
            raise InputError(
                f"chosen perturbation weight w = {self.forced_w:g}: choose a value between 0 and 1"
            )
        bad = [v for v in self.w_grid if not 0.0 <= v < 1.0]
        if bad or not self.w_grid:
            shown = ", ".join(f"{v:g}" for v in self.w_grid) or "none"
            raise InputError(
                f"candidate w values ({shown}): each must lie between 0 and 1 (1 itself excluded)"
            )
        if self.file_format not in FORMATS:
            raise InputError(
                f"file format '{self.file_format}': choose one of {', '.join(FORMATS)}"
            )
        if self.budget not in BUDGETS:
            raise InputError(
                f"model search effort '{self.budget}': choose one of {', '.join(BUDGETS)}"
            )
        if self.device not in ("auto", "cpu", "cuda"):
            raise InputError(f"compute device '{self.device}': choose auto, cpu or cuda")
        if self.audit_max_rows < 200:
            raise InputError(
                f"largest audited sample {self.audit_max_rows:,} rows: audit at least 200 rows"
            )
        if self.copies < 1 or self.copies > 50:
            raise InputError(f"{self.copies} synthetic copies: choose between 1 and 50")
        if self.dp_epsilon is not None and not 0.0 < self.dp_epsilon <= 100.0:
            raise InputError(
                f"privacy budget ε = {self.dp_epsilon:g}: choose a value above 0 (e.g. 1 to 10)"
            )
        if self.dp_delta is not None and not 0.0 < self.dp_delta < 1.0:
            raise InputError(f"privacy δ = {self.dp_delta:g}: choose a value between 0 and 1")
        if self.disclosure_margin is not None and not 0.0 <= self.disclosure_margin <= 100.0:
            raise InputError(
                f"the disclosure margin {self.disclosure_margin:g}: choose 0 to 100 percentage "
                "points"
            )
        problems = check_analysis(self)
        if problems:
            raise InputError(problems[0])


ANALYSIS_NAMES = {
    "cox": "A Cox model",
    "ols": "A linear regression",
    "logistic": "A logistic regression",
}
MIN_EVENTS = 10  # a Cox model (or a logistic one) on fewer events is noise, and < 10 is disclosive


def check_analysis(
    config: RunConfig, schema: Any = None, real: pd.DataFrame | None = None
) -> list[str]:
    """Every reason the chosen analysis cannot be fitted, as plain sentences (empty: it can).

    Without ``schema`` only what the settings alone decide is checked (an outcome is named, it is
    not also a covariate); with the schema (:class:`engine.columns.schema.Schema`) the survival
    roles and the columns' kinds, and with ``real`` (the complete cases) the coding of the event
    or yes/no outcome and the number of events. The wizard calls this on its Settings page, the
    pipeline before any training, so a run never trains and then fails on its analysis.

    Example:
        >>> check_analysis(RunConfig(input="t.csv", analysis="logistic"))
        ['A logistic regression needs an outcome column: choose the column the model explains.']
        >>> check_analysis(RunConfig(input="t.csv", analysis=None))
        []
    """
    analysis = config.analysis
    if analysis is None:
        return []
    if analysis not in ANALYSIS_NAMES:
        return [f"analysis '{analysis}' is unknown: choose cox, ols or logistic"]
    name = ANALYSIS_NAMES[analysis]
    problems: list[str] = []
    outcome = config.outcome if analysis != "cox" else None
    if analysis != "cox" and not outcome:
        problems.append(f"{name} needs an outcome column: choose the column the model explains.")
    if outcome and outcome in config.covariates:
        role = "the exposure" if config.covariates[0] == outcome else "an adjustment variable"
        problems.append(f"'{outcome}' is both the outcome and {role}: choose different columns.")
    for column, _ in config.per:
        if config.covariates and column not in config.covariates:
            problems.append(
                f"the effect is reported per units of '{column}', which is not in the model: "
                "choose it as the exposure."
            )
    if schema is None:
        return problems
    return problems + _check_columns(config, schema, real, name)


def _check_columns(
    config: RunConfig, schema: Any, real: pd.DataFrame | None, name: str
) -> list[str]:
    """The schema- and data-dependent half of :func:`check_analysis`."""
    analysis = config.analysis
    kinds = {c.name: c.kind for c in schema.synthesized()}
    problems: list[str] = []
    used = list(config.covariates) or ([config.exposure] if config.exposure else [])
    if analysis == "cox":
        if not (schema.time and schema.event):
            return [
                f"{name} needs a follow-up time column and an event column, and this table has "
                "none set: mark one column as the follow-up time and one as the event, or choose "
                "another analysis."
            ]
        used += [schema.time, schema.event]
    elif config.outcome:
        used.append(config.outcome)
    exposure = config.covariates[0] if config.covariates else config.exposure
    for column in dict.fromkeys(used):
        if column not in kinds:
            what = "the exposure" if column == exposure else "the column"
            problems.append(
                f"{what} '{column}' is not among the synthesized columns: choose another, or "
                "keep that column in the synthetic table."
            )
    if problems:
        return problems
    if analysis == "ols" and kinds[str(config.outcome)] not in ("continuous", "integer"):
        problems.append(
            f"{name} needs a numeric outcome; '{config.outcome}' is {kinds[str(config.outcome)]}: "
            "choose a numeric outcome, or a logistic regression for a yes/no outcome."
        )
    if real is None or problems:
        return problems
    if analysis == "cox":
        labels = schema.by_name(str(schema.event)).labels
        problems += _check_events(real, str(schema.event), name, "event column", labels)
    elif analysis == "logistic":
        problems += _check_events(real, str(config.outcome), name, "outcome")
    return problems


def _check_events(
    real: pd.DataFrame, column: str, name: str, what: str, labels: Any = None
) -> list[str]:
    """The column must be coded 0/1 (an event column: by its labels, the event second) and hold
    at least :data:`MIN_EVENTS` ones and zeros."""
    from engine.columns.events import event_codes

    values = event_codes(real[column], labels)
    if values.isna().any() or not values.isin([0.0, 1.0]).all():
        shown = ", ".join(str(v) for v in sorted(real[column].dropna().astype(str).unique())[:6])
        return [
            f"{name} needs the {what} '{column}' coded 0/1 (1 = the event happened); it holds "
            f"{shown}: recode it as 0/1, or choose another analysis."
        ]
    ones, zeros = int((values == 1).sum()), int((values == 0).sum())
    if ones < MIN_EVENTS or (what == "outcome" and zeros < MIN_EVENTS):
        few = "events (1)" if ones < MIN_EVENTS else "rows without the event (0)"
        return [
            f"{name} needs at least {MIN_EVENTS} {few} in '{column}', and the complete rows have "
            "fewer: choose another analysis, or a larger table."
        ]
    return []


@dataclass(frozen=True)
class Prepared:
    """The result of reading, schema inference and encoding (the wizard's first pages)."""

    config: RunConfig
    table: LoadedTable
    schema: Schema
    real: pd.DataFrame  # synthesized columns, input order (missing kept unless complete cases)
    rows_dropped: dict[str, Any]
    encoder: LayeredEncoder  # missing values and dates around a fitted TableEncoder


def make_rng(seed: int | None) -> np.random.Generator:
    """Seeded generator for reproducible audits, else the OS's secure randomness."""
    return np.random.default_rng(seed if seed is not None else secrets.randbits(128))


# re-exported: callers import it from here
from engine.pipeline.results import RunResult  # noqa: E402

__all__ = [
    "AUDIT_MAX_ROWS",
    "AUDIT_ROUNDS",
    "BUDGETS",
    "DEFAULT_GRID",
    "FLOOR_ROUNDS",
    "FLOOR_ROUNDS_UP_TO",
    "FORMATS",
    "audit_rounds",
    "SPLIT_TWICE_UP_TO",
    "Prepared",
    "RunConfig",
    "RunResult",
    "make_rng",
]
