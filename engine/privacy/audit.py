"""Membership-inference audit over the perturbation weight w, and the choice of w.

Why by hand: no library runs this audit. Privacy toolkits (e.g. synthcity, anonymeter) score one
finished synthetic table; here the flow is re-fitted on a train split, Latent Noise Injection is
re-run for every w with fresh noise, and the selection rule needs mean and standard error per w.
Library parts used: scipy ``cKDTree`` (exact nearest neighbours, :mod:`engine.search.neighbours`),
``scipy.stats.rankdata`` (AUC as a Mann-Whitney statistic, ties one half), torch matrix
products for the kernel sums (:mod:`engine.search.density`).

Attacks, all scored on every w of the grid (METHOD.md section 5):
    distance (the paper's eqs. 24/25): score d(X) = min over synthetic rows ||X - X~||.
    density ratio (DOMIAS): score log p_synth(X) - log p_ref(X), Gaussian KDEs (Scott) in the
        distance space. p_ref is fitted on the holdout; holdout rows are scored leave-one-out
        (a two-fold split biased the AUC below 0.5 in sparse categorical cells), so no row is
        scored by a density fitted on it. The KDE is evaluated on at most ``density_max_eval``
        random members and non-members per repeat (fresh sample per repeat): its cost is rows x
        synthetic rows.

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

from collections.abc import Callable

import numpy as np

from engine.flows.generate import inject_latent_noise  # noqa: F401  (the one map; used in attacks)
from engine.privacy.attacks import (  # noqa: F401  (re-exported)
    ATTACK_WORDS,
    ROC_FPR,
    BindingAttack,
    Draw,
    Split,
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
from engine.privacy.crossfit import run_crossfit_audit
from engine.privacy.epsilon import epsilon_for_copies  # noqa: F401  (re-exported)
from engine.privacy.family import SingleMap
from engine.privacy.measure import (  # noqa: F401  (re-exported)
    ATTACKS,
    ONE_REPEAT_NOTE,
    CurvePoint,
    Score,
    membership_auc,
    score_draw,
)
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
    return run_crossfit_audit(
        X_model,
        X_dist,
        SingleMap(fit_map),
        to_dist=to_dist,
        config=config,
        rng=rng,
        progress=progress,
        cancel=cancel,
    )
