"""What a run gives back, typed: the verdict, the model summary, the release (or the refusal),
the fidelity comparison, the formal-DP release and :class:`RunResult` holding them all.

The pipeline builds these once (``synthesize_step``, ``release_step``); the report and the
wizard read their attributes; ``audit.json`` is their ``to_dict()`` output, serialised once in
:mod:`engine.pipeline.record` (statsmodels' ``Summary`` habit: one result, many renderings).

The blocks are plain frozen dataclasses: callers read attributes; only ``audit.json`` (their
``to_dict()``) is a dict.

References: docs/architecture.md; docs/contracts.md (``audit.json`` keys); main paper Algorithm 1.

Example:
    >>> Verdict("released with override") is Verdict.RELEASED_WITH_OVERRIDE
    True
    >>> f"{Verdict.REFUSED}", Verdict.REFUSED == "refused"
    ('refused', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from engine.disclosure import CopyCheck
    from engine.disclosure.check import DisclosureResult
    from engine.flows.train import TrainedFlow
    from engine.pipeline.config import Prepared, RunConfig
    from engine.privacy.audit import AuditResult, BindingAttack, CurvePoint
    from engine.privacy.dp.release import DPRelease
    from engine.privacy.release import EpsilonStatement, ReleaseMetrics
    from engine.stats.models import FidelityResult, ModelFit
    from engine.stats.plan import AnalysisPlan
    from engine.stats.topcoded import RuleCost
    from engine.stats.verdict import FidelityVerdict


class Verdict(StrEnum):
    """What the run did with the synthetic table (values as written to ``audit.json``)."""

    RELEASED = "released"
    REFUSED = "refused"
    RELEASED_WITH_OVERRIDE = "released with override"


@dataclass(frozen=True)
class ModelSummary:
    """The final flow: architecture, validation loss, device and training time."""

    flows: int
    hidden: int
    layers: int
    val_nll: float
    device: str
    device_note: str | None
    train_seconds: float
    whitened: bool = False  # started from the Gaussian fitted to the rows (not under DP-SGD)
    # the training recipe (issue 31): rounds of training, and the steps of each round and the
    # rows of each step where a large table trains on a budget of steps (None: one pass, auto)
    epochs: int | None = None
    steps_per_epoch: int | None = None
    batch_size: int | None = None

    @classmethod
    def of(cls, flow: TrainedFlow) -> ModelSummary:
        """From a trained flow's ``to_dict()`` (``engine.flows.train.TrainedFlow``)."""
        return cls(**flow.to_dict())

    def to_dict(self) -> dict[str, Any]:
        """The ``model`` block of ``audit.json``."""
        return {
            "flows": self.flows,
            "hidden": self.hidden,
            "layers": self.layers,
            "val_nll": self.val_nll,
            "device": self.device,
            "device_note": self.device_note,
            "train_seconds": self.train_seconds,
            "whitened": self.whitened,
            "epochs": self.epochs,
            "steps_per_epoch": self.steps_per_epoch,
            "batch_size": self.batch_size,
        }


@dataclass(frozen=True)
class Fidelity:
    """Real vs synthetic statistics (``result``), and with several copies the synthetic model
    combined over them (``combined_copies``, or why not: ``combined_error``). Empty (``result``
    None) when nothing was released."""

    result: FidelityResult | None = None
    combined_copies: ModelFit | None = None
    combined_error: str | None = None
    plan: AnalysisPlan | None = None  # the model compared and why (engine.stats.plan)
    rule_cost: RuleCost | None = None  # the real table limited to the ranges (issue 44)

    def to_dict(self) -> dict[str, Any]:
        """The ``fidelity`` block of ``audit.json``."""
        if self.result is None:
            return {}
        out = self.result.to_dict()
        if self.plan is not None:
            out["analysis_plan"] = self.plan.to_dict()
        if self.rule_cost is not None:
            out["rule_cost"] = self.rule_cost.to_dict()
        if self.combined_copies is not None:
            out["combined_copies"] = self.combined_copies.to_dict()
        elif self.combined_error is not None:
            out["combined_copies"] = {"model_status": self.combined_error}
        return out

    @property
    def verdict(self) -> FidelityVerdict | None:
        """Same conclusions, or what differs (:mod:`engine.stats.verdict`); None when nothing
        was compared. The report's first page, the wizard's Fidelity page and the one-click
        summary all show its ``line``."""
        return None if self.result is None else self.result.verdict

    def coefficients(self, which: str) -> list[dict[str, Any]]:
        """The coefficient records of the ``"real"`` or ``"synthetic"`` fit as ``audit.json``
        shows them (terms of groups under 10 keep only their name); [] without a model."""
        comparison = None if self.result is None else self.result.comparison
        if comparison is None:
            return []
        fit = comparison.real if which == "real" else comparison.synthetic
        records: list[dict[str, Any]] = fit.to_dict()["coefficients"]
        return records


@dataclass(frozen=True)
class ProtectionEffect:
    """What outlier protection cost: hazard/odds ratios (or estimates) per term with and without
    it, and the largest shift of a column mean in real standard deviations."""

    model_without: dict[str, float]
    model_with: dict[str, float]
    model_real: dict[str, float]
    largest_mean_shift_sd_without: float
    largest_mean_shift_sd_with: float

    def to_dict(self) -> dict[str, Any]:
        """As in ``audit.json``."""
        return {
            "model_without": self.model_without,
            "model_with": self.model_with,
            "model_real": self.model_real,
            "largest_mean_shift_sd_without": self.largest_mean_shift_sd_without,
            "largest_mean_shift_sd_with": self.largest_mean_shift_sd_with,
        }


@dataclass(frozen=True)
class OutlierProtection:
    """Records at risk before and after outlier protection (the worst copy), how many got a
    lower w, and its cost."""

    at_risk_before: int
    at_risk_after: int
    records_with_lower_w: int
    copies_protected: int
    effect: ProtectionEffect

    def to_dict(self) -> dict[str, Any]:
        """As in ``audit.json``."""
        return {
            "at_risk_before": self.at_risk_before,
            "at_risk_after": self.at_risk_after,
            "records_with_lower_w": self.records_with_lower_w,
            "copies_protected": self.copies_protected,
            "effect": self.effect.to_dict(),
        }


@dataclass(frozen=True)
class DPAudit:
    """The membership audit of the formal-DP release (one point: Flow Sampling)."""

    auc: float
    auc_sd: float
    density_auc: float
    repeats: int

    def to_dict(self) -> dict[str, Any]:
        """As in ``audit.json``."""
        return {
            "auc": self.auc,
            "auc_sd": self.auc_sd,
            "density_auc": self.density_auc,
            "repeats": self.repeats,
        }


@dataclass(frozen=True)
class DPResult:
    """Formal DP mode's release (issue 8): the DP-SGD flow's Flow Sampling table, its
    guarantee, audit and fidelity, and the file it is written to."""

    release: DPRelease = field(repr=False)
    audit: DPAudit
    fidelity: Fidelity
    file: str

    @property
    def guarantee(self) -> dict[str, Any]:
        """The guarantee's parameters, JSON-ready (accountant, epsilon, delta, sigma, ...)."""
        return self.release.guarantee

    def to_dict(self) -> dict[str, Any]:
        """The ``release.dp`` block of ``audit.json``."""
        return {
            **self.release.to_dict(),
            "audit": self.audit.to_dict(),
            "fidelity": self.fidelity.to_dict(),
            "file": self.file,
        }


@dataclass(frozen=True)
class Release:
    """The released table's facts: the w and who chose it, the privacy metrics (closest copy
    per record), epsilon, the deciding attack, exact copies and repairs made on the way."""

    w: float
    chosen_by: str
    copies: int
    clipped: dict[str, int]
    non_finite: dict[str, int]  # rows_redrawn, rows_dropped
    metrics: ReleaseMetrics
    epsilon: EpsilonStatement
    binding: BindingAttack | None
    copies_audited: int
    exact_copies: CopyCheck
    protect_outliers: OutlierProtection | None = None
    dp: DPResult | None = None
    disclosure: DisclosureResult | None = None  # identity/attribute disclosure (issue 29)

    @property
    def rows(self) -> int:
        """Rows in the released table."""
        return int(self.metrics.rows)

    @property
    def metrics_over(self) -> str:
        """Which synthetic row the metrics compare with each record."""
        return "the closest of all copies per record" if self.copies > 1 else "one copy"

    def to_dict(self) -> dict[str, Any]:
        """The ``release`` block of ``audit.json`` (docs/contracts.md keys, in their usual
        order)."""
        out: dict[str, Any] = {
            "w": float(self.w),
            "chosen_by": self.chosen_by,
            "rows": self.rows,
            "copies": self.copies,
            "shuffled": True,
            "clipped": dict(self.clipped),
            "non_finite": dict(self.non_finite),
            **self.metrics.to_dict(),
            "metrics_over": self.metrics_over,
            "epsilon": {**self.epsilon.to_dict(), "copies": self.copies},
        }
        if self.binding is not None:
            out.update(
                binding_attack=self.binding.attack,
                binding_auc=self.binding.auc,
                binding_auc_se=self.binding.se,
                binding_auc_sd=self.binding.sd,
                copies_audited=self.copies_audited,
            )
        out["exact_copies"] = self.exact_copies.to_dict()
        if self.protect_outliers is not None:
            out["protect_outliers"] = self.protect_outliers.to_dict()
        if self.dp is not None:
            out["dp"] = self.dp.to_dict()
        return out


@dataclass(frozen=True)
class Refusal:
    """Why nothing was released: ``reason`` in plain words (report, wizard), ``hint`` for the
    command line (names a flag), and the attack that decided."""

    reason: str
    hint: str
    binding: BindingAttack | None = None
    dp: DPResult | None = None  # formal DP mode's release, computed but not exported
    disclosure: DisclosureResult | None = None  # when the disclosure rule refused (issue 29)
    w: None = None  # nothing released: no w
    rows: int = 0

    @property
    def message(self) -> str:
        """The command line's one-line message: the reason and the hint."""
        return f"{self.reason}; {self.hint}" if self.hint else self.reason

    def to_dict(self) -> dict[str, Any]:
        """The ``release`` block of ``audit.json`` for a refused run."""
        binding = self.binding
        out: dict[str, Any] = {
            "w": None,
            "rows": 0,
            "refused": self.reason,
            "refused_hint": self.hint,
            "binding_attack": None if binding is None else binding.attack,
            "binding_auc": None if binding is None else binding.auc,
            "binding_auc_se": None if binding is None else binding.se,
        }
        if self.disclosure is not None:  # refused by the disclosure rule (issue 29)
            out["refused_by"] = "the disclosure rule"
        if self.dp is not None:
            out["dp"] = self.dp.to_dict()
        return out


@dataclass(frozen=True)
class RunResult:
    """Everything a run produced. ``synthetic`` is in released (shuffled) order; ``release``
    is a :class:`Release`, or a :class:`Refusal` when the verdict is refused."""

    config: RunConfig
    prepared: Prepared
    audit: AuditResult | None
    model: ModelSummary | None
    release: Release | Refusal
    synthetic: pd.DataFrame | None
    copies: tuple[pd.DataFrame, ...]
    fidelity: Fidelity
    verdict: Verdict
    timings: dict[str, float]
    started: str
    outputs: dict[str, str] = field(default_factory=dict)
    audit_json: dict[str, Any] = field(default_factory=dict)
    history: tuple[tuple[int, float, float], ...] = ()
    flow: Any = field(default=None, repr=False, compare=False)  # in memory only, never exported
    dp_synthetic: pd.DataFrame | None = None  # formal DP mode's Flow Sampling release
    # The first copy in record order (row i made from real row i), in memory only and only until
    # the disclosure measures have used it (engine.pipeline.disclosure_step); never exported.
    record_order: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    def curve_point(self, w: float | None) -> CurvePoint | None:
        """The audited curve point nearest ``w`` (:func:`engine.privacy.curve.nearest_point`)."""
        from engine.privacy.curve import nearest_point

        return nearest_point(self.audit, w)

    def above_choice(self, w: float) -> bool:
        """Whether ``w`` lies above the audit's choice
        (:func:`engine.privacy.curve.above_choice`)."""
        from engine.privacy.curve import above_choice

        return above_choice(self.audit, w)

    def is_released_w(self, w: float) -> bool:
        """Whether ``w`` is the released w (:func:`engine.privacy.curve.same_w`)."""
        from engine.privacy.curve import same_w

        return same_w(w, self.release.w)

    @property
    def released(self) -> Release | None:
        """The release, or None when the run was refused."""
        return self.release if isinstance(self.release, Release) else None

    @property
    def refusal(self) -> Refusal | None:
        """Why nothing was released, or None."""
        return self.release if isinstance(self.release, Refusal) else None
