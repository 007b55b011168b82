"""The audit's options (:class:`AuditConfig`) and result (:class:`AuditResult`), its input
checks and the selection rule in words; the audit itself runs in :mod:`engine.privacy.audit`.

References: METHOD.md sections 4-6; CONTRACTS.md ``audit.json``.

Example:
    >>> AuditConfig().threshold, len(DEFAULT_GRID)
    (0.55, 20)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.errors import InputError
from engine.privacy.attacks import BindingAttack, binding_attack, first_failure
from engine.privacy.decision import SE_TARGET, Z_UPPER, Decision

if TYPE_CHECKING:
    from engine.privacy.measure import CurvePoint

DEFAULT_GRID = tuple(round(0.05 * i, 2) for i in range(20))
MIN_REPEATS, MAX_REPEATS = 3, 20  # measurements per w: at least, and at most per split
SE_METHOD = (
    "each attack's AUC fitted as a curve rising with w (isotonic); the SE of a fitted value is "
    "the spread over independent units (the split models, or the repeats on one split) of "
    "their mean over the fitted block of w, over the square root of their number"
)


@dataclass(frozen=True)
class AuditConfig:
    """Options of the audit (:mod:`engine.privacy.crossfit`).

    ``repeats``: repeats of fresh noise per split and w (None: at least 3 measurements per w, 1
    per split from 3 splits on, more while the SE at the decision exceeds ``se_target``, at most
    20 per w). ``crossfit``: each round splits the rows into ``round(1 / holdout_fraction)``
    folds, each held out once (every row a non-member once per round); else a round is
    ``splits`` random splits. ``max_rounds``: rounds the SE target may use; ``floor_rounds``:
    rounds the floor may use at the smallest w before a refusal."""

    threshold: float = 0.55
    grid: tuple[float, ...] = DEFAULT_GRID
    refine: bool = True
    refine_points: int = 4
    holdout_fraction: float = 0.2
    repeats: int | None = None
    splits: int = 1
    crossfit: bool = False
    max_rounds: int = 1
    floor_rounds: int = 0
    k_risk: int = 5
    time_budget_s: float | None = None
    density_max_eval: int = 1000
    nn_method: str = "auto"
    select_on: tuple[str, ...] = ("distance", "density")
    copies: int = 1  # released copies per record: the attacker holds the union of all of them
    # the last columns of the distance rows that are the released space (the "released"
    # attack's; :mod:`engine.privacy.released_space`), 0: none
    released_columns: int = 0
    # added to the released attack's bound above the smallest w: the gap measured between the
    # audit's split models and a checker's attack on the released file (0: none)
    release_gap: float = 0.0
    # members and holdout rows the distance attack scores per repeat, each side at most this
    # many (a fresh random sample per repeat; None: all). The synthetic set is always whole.
    score_max_rows: int | None = None
    z: float = Z_UPPER  # the upper confidence bound's z (one-sided 95 %)
    se_target: float = SE_TARGET  # units are added until the SE at the decision is at most this

    @property
    def split_count(self) -> int:
        """Splits in one round: the folds (cross-fitting) or ``splits`` random splits."""
        return max(2, round(1.0 / self.holdout_fraction)) if self.crossfit else max(1, self.splits)


@dataclass(frozen=True)
class AuditResult:
    """The audit curve, the selected w (None: no w met the threshold) and how it was chosen."""

    threshold: float
    holdout_fraction: float
    repeats: int
    splits: int
    curve: tuple[CurvePoint, ...]
    selected_w: float | None
    rule: str
    seconds: float
    budget_exhausted: bool
    copies: int = 1  # copies per record the audit's synthetic sets held (the attacker's union)
    select_on: tuple[str, ...] = ("distance", "density")
    architecture: Any = None  # the flow architecture chosen on the first split (a FlowConfig)
    # the candidate family (issue 27): each candidate's record, the chosen one and why, and at
    # a refusal the columns that drive it ((column, distance AUC without it), after ("", all))
    candidates: tuple[Any, ...] = ()
    chosen: str | None = None
    chosen_because: str = ""
    drivers: tuple[tuple[str, float], ...] = ()
    release_gap: float = 0.0  # added to the released attack's bound above the smallest w
    # members and holdout rows scored per repeat by the distance attack (None: not recorded)
    rows_scored: tuple[int, int] | None = None
    # splits behind the smallest w's point (the floor's extra rounds before a refusal; 0: as
    # ``splits``)
    smallest_w_splits: int = 0
    decision: Decision | None = None  # what decided (the attack, its fit, SE and bound)
    rounds: int = 1  # rounds of splits (fold assignments) the chosen model was audited on
    crossfit: bool = False  # whether a round's splits were folds (each row held out once)
    z: float = Z_UPPER
    se_target: float = SE_TARGET
    # what a checker's own measurement on the released file may read, beside a fresh real
    # sample of the same size scored the same way (engine.privacy.checker; None: not run)
    checker: Any = None
    # at a refusal, whether more rows would help, measured (engine.privacy.advice; None: not run)
    rows_advice: Any = None

    @property
    def se_at_decision(self) -> float | None:
        """The SE of the deciding attack's fitted AUC at the decision (None: no decision)."""
        return None if self.decision is None else self.decision.se

    def binding(self, w: float | None) -> BindingAttack | None:
        """The deciding attack at the curve point nearest ``w`` (at refusal, ``w=None``: the
        attack that failed first, at the smallest w that failed)."""
        if w is None:
            return first_failure(self.curve, self.threshold, self.select_on)
        point = min(self.curve, key=lambda p: abs(p.w - w))
        return binding_attack(point, self.select_on)

    def to_dict(self) -> dict:
        """The ``audit`` block of ``audit.json`` (CONTRACTS.md)."""
        arch = self.architecture
        return {
            "threshold": self.threshold,
            "holdout_fraction": self.holdout_fraction,
            "repeats": self.repeats,
            "splits": self.splits,
            "curve": [p.to_dict() for p in self.curve],
            "selected_w": self.selected_w,
            "rule": self.rule,
            "seconds": self.seconds,
            "budget_exhausted": self.budget_exhausted,
            "copies_audited": self.copies,
            "se_target": self.se_target,
            "se_method": SE_METHOD,
            "se_at_decision": self.se_at_decision,
            "se_target_met": self.se_at_decision is not None
            and self.se_at_decision <= self.se_target,
            "z": self.z,
            "decision": None if self.decision is None else self.decision.to_dict(),
            "rounds": self.rounds,
            "crossfit": self.crossfit,
            "checker": None if self.checker is None else self.checker.to_dict(),
            "refusal_rows": None if self.rows_advice is None else self.rows_advice.to_dict(),
            "points_one_repeat": [p.w for p in self.curve if not p.decides],
            "max_repeats": MAX_REPEATS,
            "architecture": None
            if arch is None
            else {
                "flows": arch.flows,
                "hidden": arch.hidden,
                "layers": arch.layers,
                # the training recipe the released model repeats (issue 31)
                "steps_per_epoch": getattr(arch, "steps_per_epoch", None),
                "batch_size": getattr(arch, "batch_size", None),
                "max_epochs": getattr(arch, "max_epochs", None),
                "val_max_rows": getattr(arch, "val_max_rows", None),
            },
            "candidates": [c.to_dict() for c in self.candidates],
            "chosen_model": self.chosen,
            "chosen_because": self.chosen_because,
            "release_gap": self.release_gap,
            "refusal_columns": [
                {"column": c, "distance_auc_without": a} for c, a in self.drivers if c
            ],
            "refusal_distance_auc": self.drivers[0][1] if self.drivers else None,
            "rows_scored_per_repeat": None
            if self.rows_scored is None
            else {"members": self.rows_scored[0], "holdout": self.rows_scored[1]},
            "smallest_w_splits": self.smallest_w_splits or self.splits,
        }


def validate_audit_inputs(X_model: np.ndarray, X_dist: np.ndarray, config: AuditConfig) -> None:
    """Raise InputError for unusable inputs or options."""
    if X_model.ndim != 2 or X_dist.ndim != 2 or len(X_model) != len(X_dist):
        raise InputError(
            "audit: model-space and distance-space rows must be 2-D and equal in number"
        )
    if len(X_model) < 50:
        raise InputError(
            f"audit: {len(X_model)} rows are too few for a membership audit; need >= 50"
        )
    if not 0.0 < config.holdout_fraction < 1.0:
        raise InputError("audit: holdout fraction must lie strictly between 0 and 1")
    if not config.grid or any(not 0.0 <= w < 1.0 for w in config.grid):
        raise InputError("audit: every candidate w must lie in [0, 1); w = 1 releases the data")
    if not 0.5 < config.threshold <= 1.0:
        raise InputError("audit: the AUC limit must lie in (0.5, 1]")
    if config.copies < 1:
        raise InputError("audit: the number of released copies must be at least 1")
