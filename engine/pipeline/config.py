"""What a run is asked to do and what it gives back: :class:`RunConfig`, :class:`Prepared`,
:class:`RunResult` and the defaults both faces show.

References: ARCHITECTURE.md; main paper Algorithm 1 and section 4.3.
"""

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import InputError

FORMATS = ("csv", "xlsx", "parquet", "sav", "dta")
BUDGETS = ("fast", "default", "thorough")
DEFAULT_GRID = tuple(round(0.05 * i, 2) for i in range(20))
SPLIT_TWICE_UP_TO = 20_000  # rows; above this one split (training dominates the run time)
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
    drop: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    kinds: tuple[tuple[str, str], ...] = ()
    bounds: tuple[tuple[str, float | None, float | None], ...] = ()
    auc_max: float = 0.55
    w: float | None = None
    w_grid: tuple[float, ...] = DEFAULT_GRID
    repeats: int | None = None
    audit_max_rows: int = AUDIT_MAX_ROWS
    seed: int | None = None
    device: str = "auto"
    fmt: str = "csv"
    budget: str = "fast"
    analysis: str | None = None
    outcome: str | None = None
    covariates: tuple[str, ...] = ()
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

    def validate(self) -> None:
        """Raise :class:`InputError` for options that cannot work, before any heavy work."""
        if not 0.5 < self.auc_max <= 1.0:
            raise InputError(
                f"--auc-max {self.auc_max}: the AUC limit must be above 0.5 (a coin toss) and at most 1"
            )
        if self.w is not None and not 0.0 <= self.w <= 1.0:
            raise InputError(f"--w {self.w}: the perturbation weight must be between 0 and 1")
        bad = [v for v in self.w_grid if not 0.0 <= v < 1.0]
        if bad or not self.w_grid:
            raise InputError(
                f"--w-grid: values must lie in 0..1 (1 excluded); got {list(self.w_grid)}"
            )
        if self.fmt not in FORMATS:
            raise InputError(f"--format {self.fmt}: choose one of {', '.join(FORMATS)}")
        if self.budget not in BUDGETS:
            raise InputError(f"--budget {self.budget}: choose one of {', '.join(BUDGETS)}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise InputError(f"--device {self.device}: choose auto, cpu or cuda")
        if self.audit_max_rows < 200:
            raise InputError(f"--audit-max-rows {self.audit_max_rows}: audit at least 200 rows")
        if self.copies < 1 or self.copies > 50:
            raise InputError(f"--copies {self.copies}: choose between 1 and 50")
        if self.dp_epsilon is not None and not 0.0 < self.dp_epsilon <= 100.0:
            raise InputError(
                f"--dp-epsilon {self.dp_epsilon}: choose a value above 0 (e.g. 1 to 10)"
            )
        if self.dp_delta is not None and not 0.0 < self.dp_delta < 1.0:
            raise InputError(f"--dp-delta {self.dp_delta}: choose a value between 0 and 1")
        if self.analysis not in (None, "cox", "ols", "logistic"):
            raise InputError(f"--analysis {self.analysis}: choose cox, ols or logistic")


@dataclass(frozen=True)
class Prepared:
    """The result of reading, schema inference and encoding (the wizard's first pages)."""

    config: RunConfig
    table: Any  # engine.tables.read.LoadedTable
    schema: Any  # engine.tables.schema.Schema
    real: pd.DataFrame  # synthesized columns, input order (missing kept unless complete cases)
    rows_dropped: dict[str, Any]
    encoder: Any  # engine.tables.missing.LayeredEncoder around a fitted TableEncoder


@dataclass(frozen=True)
class RunResult:
    """Everything a run produced. ``synthetic`` is in released (shuffled) order."""

    config: RunConfig
    prepared: Prepared
    audit: Any  # engine.privacy.audit.AuditResult
    model: dict[str, Any]
    release: dict[str, Any]
    synthetic: pd.DataFrame | None
    copies: tuple[pd.DataFrame, ...]
    fidelity: dict[str, Any]
    verdict: str  # released | refused | released with override
    timings: dict[str, float]
    started: str
    outputs: dict[str, str] = field(default_factory=dict)
    audit_json: dict[str, Any] = field(default_factory=dict)
    history: tuple[tuple[int, float, float], ...] = ()
    flow: Any = field(default=None, repr=False, compare=False)  # in memory only, never exported
    dp_synthetic: pd.DataFrame | None = None  # formal DP mode's Flow Sampling release


def make_rng(seed: int | None) -> np.random.Generator:
    """Seeded generator for reproducible audits, else the OS's secure randomness."""
    return np.random.default_rng(seed if seed is not None else secrets.randbits(128))
