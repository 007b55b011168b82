"""Membership-inference audit over the perturbation weight w, and the choice of w.

Why by hand: no library runs this audit. Privacy toolkits (e.g. synthcity, anonymeter) score one
finished synthetic table; here the flow is re-fitted on a train split, Latent Noise Injection is
re-run for every w with fresh noise, and the selection rule needs mean and standard error per w.
Library parts used: scipy ``cKDTree`` (exact nearest neighbours, :mod:`engine.privacy.neighbours`),
``scipy.stats.rankdata`` (AUC as a Mann-Whitney statistic, ties one half), torch matrix
products for the kernel sums (:mod:`engine.privacy.density`).

Attacks, all scored on every w of the grid (METHOD.md section 5):
    distance (the paper's eqs. 24/25): score d(X) = min over synthetic rows ||X - X~||.
    density ratio (DOMIAS): score log p_synth(X) - log p_ref(X), Gaussian KDEs (Scott) in the
        distance space. p_ref is fitted on the holdout; holdout rows are scored leave-one-out
        (a two-fold split biased the AUC below 0.5 in sparse categorical cells), so no row is
        scored by a density fitted on it. The KDE is evaluated on at most ``density_max_eval`` random members and non-members
        per repeat (fresh sample per repeat): its cost is rows x synthetic rows.

    released columns: the distance attack in the columns as a checker sees them
        (:mod:`engine.privacy.released_space`), when the pipeline asks for it.

The audit's driver (splits, common random numbers, rounds until the SE target) is
:mod:`engine.privacy.crossfit`; the choice of w from the measurements (a curve fitted rising
with w, its SE, the upper bound) is :mod:`engine.privacy.decision`. This module holds what one
measurement is: the AUC, the scoring of one synthetic set, and a point of the curve.

References:
    Latent Noise Injection paper, sections 2.3.3, 3.1.1 and 4.3; van Breugel et al. (2023)
    DOMIAS; METHOD.md sections 4-6; CONTRACTS.md ``audit.json``.

Example:
    >>> import numpy as np
    >>> class Id:
    ...     def to_latent(self, X): return X
    ...     def from_latent(self, Z): return Z
    >>> X = np.random.default_rng(0).standard_normal((300, 2))
    >>> res = run_audit(X, X, lambda rows: Id(), config=AuditConfig(grid=(0.0, 0.5),
    ...                 refine=False, crossfit=True), rng=np.random.default_rng(1))
    >>> [p.w for p in res.curve], res.splits, res.selected_w
    ([0.0, 0.5], 5, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import rankdata

from engine.flows.generate import inject_latent_noise  # noqa: F401  (the one map; used in attacks)
from engine.privacy.attacks import (  # noqa: F401  (re-exported)
    ATTACK_WORDS,
    ROC_FPR,
    BindingAttack,
    Split,
    _Draw,
    binding_attack,
    first_failure,
    make_split,
    roc_curve,
)
from engine.privacy.audit_result import (  # noqa: F401  (re-exported)
    DEFAULT_GRID,
    AuditConfig,
    AuditResult,
    validate_audit_inputs,
)
from engine.privacy.density import GaussianKDE
from engine.privacy.epsilon import epsilon_for_copies  # noqa: F401  (re-exported)
from engine.privacy.neighbours import nearest_distances
from engine.privacy.release import (  # noqa: F401  (re-exported: the audit's public API)
    EpsilonStatement,
    LatentMap,
    ProtectResult,
    ReleaseMetrics,
    epsilon_statement,
    identity,
    protect_outliers,
    release_metrics,
)
from engine.progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress

FitMap = Callable[[np.ndarray], LatentMap]
ONE_REPEAT_NOTE = "measured on the first round only; above the decision, it cannot change it"
ATTACKS = ("distance", "density", "released")


@dataclass(frozen=True)
class CurvePoint:
    """Every attack's AUC at one w: the raw mean over all measurements (``auc``, ``density_auc``,
    ``released_auc``; their SD over measurements and SE over units), the monotone fit over w
    and its SE (``*_fit``, ``*_fit_se``), and each attack's upper bound (``upper_*``, fit + gap
    + z SE: what the decision tests; NaN for an attack that does not decide)."""

    w: float
    auc: float
    auc_sd: float
    auc_se: float
    tpr_at_1pct_fpr: float
    tpr_at_01pct_fpr: float
    density_auc: float
    density_auc_sd: float
    density_auc_se: float
    repeats: int
    refined: bool
    roc_fpr: tuple[float, ...] = field(repr=False)
    roc_tpr: tuple[float, ...] = field(repr=False)
    # the distance attack on the released columns (:mod:`engine.privacy.released_space`);
    # NaN when the audit was not given that space
    released_auc: float = math.nan
    released_auc_sd: float = math.nan
    released_auc_se: float = math.nan
    # False: measured on the first round only (above the decision's reach: it cannot change it)
    decides: bool = True
    auc_fit: float = math.nan
    auc_fit_se: float = math.nan
    density_fit: float = math.nan
    density_fit_se: float = math.nan
    released_fit: float = math.nan
    released_fit_se: float = math.nan
    upper_distance: float = math.nan
    upper_density: float = math.nan
    upper_released: float = math.nan
    units: int = 0  # independent units behind the SE (split models, or repeats on one split)

    def upper(self, attacks: tuple[str, ...] | None = None) -> float:
        """The highest upper bound of ``attacks`` (default: every attack that decides)."""
        values = [getattr(self, f"upper_{a}") for a in (attacks or ATTACKS)]
        finite = [v for v in values if math.isfinite(v)]
        return max(finite) if finite else math.inf

    def passes(self, threshold: float, attacks: tuple[str, ...] | None = None) -> bool:
        """Every deciding attack's upper bound (fit + gap + z SE) below the threshold."""
        return self.upper(attacks) < threshold

    @property
    def se_target_met(self) -> bool:
        """Whether every deciding attack's fitted SE reached the 0.005 target."""
        ses = [getattr(self, f) for f in ("auc_fit_se", "density_fit_se", "released_fit_se")]
        ses = [s for s in ses if math.isfinite(s)]
        return bool(ses) and max(ses) <= 0.005

    def to_dict(self) -> dict:
        """JSON-safe dict: ``w``, ``auc``, ``auc_sd`` (contract) plus extras."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if not k.startswith("roc_")}
        d["se_target_met"] = self.se_target_met
        if not self.decides:
            d["note"] = ONE_REPEAT_NOTE
        d["upper_bound"] = self.upper()
        d["binding_attack"] = binding_attack(self).attack
        d["roc"] = {"fpr": list(self.roc_fpr), "tpr": list(self.roc_tpr)}
        return d


def membership_auc(member_scores: np.ndarray, nonmember_scores: np.ndarray) -> float:
    """P(member score > non-member score) + 1/2 P(equal): Mann-Whitney U / (n1 n0), eq. 25.

    Example:
        >>> membership_auc(np.array([2.0, 1.0]), np.array([1.0, 0.0]))
        0.875
    """
    n1, n0 = len(member_scores), len(nonmember_scores)
    ranks = rankdata(np.concatenate([member_scores, nonmember_scores]))
    return float((ranks[:n1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


@dataclass(frozen=True)
class Score:
    """One measurement: every attack's AUC on one synthetic set, and the distance attack's TPR
    on the ROC grid (``ROC_FPR``)."""

    distance: float
    density: float
    released: float
    tpr: np.ndarray


def score_draw(split: Split, draw: _Draw, X_dist: np.ndarray, config) -> Score:
    """Score the attacks on one synthetic set (the last ``config.released_columns`` columns of
    the rows are the released space: the distance attack there too)."""
    k = X_dist.shape[1] - config.released_columns
    synth = draw.synth_dist
    released = math.nan
    if config.released_columns:  # on the density attack's sample of rows (all up to 1,000)
        rows = np.concatenate([split.train[draw.members], split.hold[draw.holdout]])
        plain = -nearest_distances(X_dist[rows, k:], synth[:, k:], method=config.nn_method)
        released = membership_auc(plain[: len(draw.members)], plain[len(draw.members) :])
        synth, X_dist = synth[:, :k], X_dist[:, :k]
    if draw.scored_members is None or draw.scored_holdout is None:
        score = -nearest_distances(X_dist, synth, method=config.nn_method)
        members, nonmembers = score[split.train], score[split.hold]
    else:  # a random sample of each side (issue 31); the synthetic set stays whole
        scored = np.concatenate([split.train[draw.scored_members], split.hold[draw.scored_holdout]])
        score = -nearest_distances(X_dist[scored], synth, method=config.nn_method)
        members, nonmembers = np.split(score, [len(draw.scored_members)])
    fpr, tpr = roc_curve(members, nonmembers)
    mi, hi = draw.members, draw.holdout
    rows = np.concatenate([split.train[mi], split.hold[hi]])
    log_synth = GaussianKDE(basis=split.basis).fit(synth).log_density(X_dist[rows])
    ref = np.concatenate([split.ref_log_members[mi], split.ref_log_hold[hi]])
    ratio = log_synth - ref
    return Score(
        membership_auc(members, nonmembers),
        membership_auc(ratio[: len(mi)], ratio[len(mi) :]),
        released,
        np.interp(ROC_FPR, fpr, tpr),
    )


def select_w(
    curve: tuple[CurvePoint, ...] | list[CurvePoint],
    threshold: float,
    attacks: tuple[str, ...] | None = None,
) -> float | None:
    """The decision rule read off a finished curve: the largest w whose stored upper bounds
    (:attr:`CurvePoint.upper`, of ``attacks``), and every smaller w's, are below the limit;
    None if the smallest fails (the audit's own decision also releases an uncertain floor:
    :func:`engine.privacy.decision.decide`).

    Example:
        >>> pts = [CurvePoint(w, a, 0, 0, 0, 0, a, 0, 0, 2, False, (), (), upper_distance=a)
        ...        for w, a in [(0.0, 0.51), (0.5, 0.53), (0.7, 0.56), (0.9, 0.52)]]
        >>> select_w(pts, 0.55)
        0.5
    """
    chosen = None
    for point in sorted(curve, key=lambda p: p.w):
        if not point.passes(threshold, attacks):
            break
        chosen = point.w
    return chosen


def run_audit(
    X_model: np.ndarray,
    X_dist: np.ndarray,
    fit_map: FitMap,
    *,
    to_dist: Callable[[np.ndarray], np.ndarray] = identity,
    config: AuditConfig = AuditConfig(),  # noqa: B008 (frozen)
    rng: np.random.Generator,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> AuditResult:
    """Audit one model (``fit_map`` trains it on the given model-space rows, once per split)
    over the grid and choose w: :func:`engine.privacy.crossfit.run_crossfit_audit` with a
    family of one, the floor (the DP release's audit and the benches call this)."""
    from engine.privacy.crossfit import run_crossfit_audit
    from engine.privacy.family import SingleMap

    return run_crossfit_audit(
        X_model, X_dist, SingleMap(fit_map), to_dist=to_dist, config=config, rng=rng,
        progress=progress, cancel=cancel,
    )
