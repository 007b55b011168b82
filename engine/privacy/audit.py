"""Membership-inference audit over the perturbation weight w, and the choice of w.

Why by hand: no library runs this audit. Privacy toolkits (e.g. synthcity, anonymeter) score one
finished synthetic table; here the flow is re-fitted on a train split, Latent Noise Injection is
re-run for every w with fresh noise, and the selection rule needs mean and standard error per w.
Library parts used: scipy ``cKDTree`` (exact nearest neighbours, :mod:`engine.privacy.neighbours`),
``scipy.stats.rankdata`` (AUC as a Mann-Whitney statistic, ties one half), torch matrix
products for the kernel sums (:mod:`engine.privacy.density`).

Two attacks, both scored on every w of the grid (METHOD.md section 5):
    distance (the paper's eqs. 24/25): score d(X) = min over synthetic rows ||X - X~||.
    density ratio (DOMIAS): score log p_synth(X) - log p_ref(X), Gaussian KDEs (Scott) in the
        distance space. p_ref is fitted on the holdout; holdout rows are scored leave-one-out
        (a two-fold split biased the AUC below 0.5 in sparse categorical cells), so no row is
        scored by a density fitted on it. The KDE is evaluated on at most ``density_max_eval`` random members and non-members
        per repeat (fresh sample per repeat): its cost is rows x synthetic rows.

Selection: the largest grid w such that, for it and every smaller grid w, both attacks' mean
AUC + one standard error is below the threshold; then refined between it and the next grid w.

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
    ...                 repeats=2, refine=False), rng=np.random.default_rng(1))
    >>> [p.w for p in res.curve], res.to_dict()["repeats"]
    ([0.0, 0.5], 2)
"""

from __future__ import annotations

import math
import time
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
    _draw_repeats,
    binding_attack,
    first_failure,
    make_split,
    roc_curve,
)
from engine.privacy.audit_result import (  # noqa: F401  (re-exported)
    DEFAULT_GRID,
    AuditConfig,
    AuditResult,
    repeats_wanted,
    rule_text,
    split_se,
    validate_audit_inputs,
)
from engine.privacy.audit_result import MAX_REPEATS as _MAX_REPEATS
from engine.privacy.audit_result import MIN_REPEATS as _MIN_REPEATS
from engine.privacy.audit_result import SE_TARGET as _SE_TARGET
from engine.privacy.audit_result import mean_sd_se as _mean_sd_se
from engine.privacy.decode_ahead import DecodeAhead  # noqa: F401  (re-exported)
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
from engine.progress import (
    NEVER_CANCELLED,
    AuditPointDone,
    CancelToken,
    ProgressFn,
    no_progress,
    report,
)

FitMap = Callable[[np.ndarray], LatentMap]
_make_split, _Split = make_split, Split  # the names the mutation guards use
_BATCH_ROWS = 16_384  # synthetic rows decoded in one pass: the repeats of a w share a decode
ONE_REPEAT_NOTE = "one repeat; does not affect the choice"


@dataclass(frozen=True)
class CurvePoint:
    """Both attacks' AUC at one w, over all repeats (and splits)."""

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
    # False: a w above the first failing w, scored with one repeat (issue 31); it cannot change
    # the choice (the rule stops at the first failure), so it is shown but not made precise
    decides: bool = True

    def passes(self, threshold: float, attacks: tuple[str, ...] = ("distance", "density")) -> bool:
        """The named attacks' mean AUC + one SE all below the threshold."""
        upper = {
            "distance": self.auc + self.auc_se,
            "density": self.density_auc + self.density_auc_se,
            "released": self.released_auc + self.released_auc_se,
        }
        return max(upper[a] for a in attacks) < threshold

    @property
    def se_target_met(self) -> bool:
        """Whether both attacks' standard error of the mean AUC reached the 0.01 target."""
        return max(self.auc_se, self.density_auc_se) < _SE_TARGET

    def to_dict(self) -> dict:
        """JSON-safe dict: ``w``, ``auc``, ``auc_sd`` (contract) plus extras."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if not k.startswith("roc_")}
        d["se_target_met"] = self.se_target_met
        if not self.decides:
            d["note"] = ONE_REPEAT_NOTE
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


@dataclass
class _Samples:
    """Per-w accumulated attack results."""

    auc: list[float] = field(default_factory=list)
    density: list[float] = field(default_factory=list)
    tpr: list[np.ndarray] = field(default_factory=list)
    split: list[int] = field(default_factory=list)  # which split each repeat was scored on
    released: list[float] = field(default_factory=list)  # the released-columns attack


def _score_repeat(split: Split, draw: _Draw, X_dist, config, acc: _Samples) -> None:
    """Score the attacks on one repeat's synthetic set (the last ``config.released_columns``
    columns of the rows are the released space: the distance attack there too)."""
    k = X_dist.shape[1] - config.released_columns
    synth = draw.synth_dist
    if config.released_columns:  # on the density attack's sample of rows (all up to 1,000)
        rows = np.concatenate([split.train[draw.members], split.hold[draw.holdout]])
        plain = -nearest_distances(X_dist[rows, k:], synth[:, k:], method=config.nn_method)
        acc.released.append(membership_auc(plain[: len(draw.members)], plain[len(draw.members) :]))
        synth, X_dist = synth[:, :k], X_dist[:, :k]
    if draw.scored_members is None or draw.scored_holdout is None:
        score = -nearest_distances(X_dist, synth, method=config.nn_method)
        members, nonmembers = score[split.train], score[split.hold]
    else:  # a random sample of each side (issue 31); the synthetic set stays whole
        scored = np.concatenate([split.train[draw.scored_members], split.hold[draw.scored_holdout]])
        score = -nearest_distances(X_dist[scored], synth, method=config.nn_method)
        members, nonmembers = np.split(score, [len(draw.scored_members)])
    acc.auc.append(membership_auc(members, nonmembers))
    fpr, tpr = roc_curve(members, nonmembers)
    acc.tpr.append(np.interp(ROC_FPR, fpr, tpr))
    mi, hi = draw.members, draw.holdout
    rows = np.concatenate([split.train[mi], split.hold[hi]])
    log_synth = GaussianKDE(basis=split.basis).fit(synth).log_density(X_dist[rows])
    ref = np.concatenate([split.ref_log_members[mi], split.ref_log_hold[hi]])
    ratio = log_synth - ref
    acc.density.append(membership_auc(ratio[: len(mi)], ratio[len(mi) :]))
    acc.split.append(id(split))


def _one_repeat(split: Split, w: float, X_dist, to_dist, config, rng, acc: _Samples) -> None:
    """Perturb the train part once at w and score both attacks."""
    _score_repeat(split, _draw_repeats(split, w, 1, to_dist, config, rng)[0], X_dist, config, acc)


def _summarise(w: float, acc: _Samples, refined: bool, decides: bool = True) -> CurvePoint:
    """Turn the accumulated repeats at one w into a curve point."""
    auc, auc_sd, _ = _mean_sd_se(acc.auc)
    dens, dens_sd, _ = _mean_sd_se(acc.density)
    auc_se, dens_se = split_se(acc.auc, acc.split), split_se(acc.density, acc.split)
    rel, rel_sd, _ = _mean_sd_se(acc.released) if acc.released else (math.nan,) * 3
    rel_se = split_se(acc.released, acc.split) if acc.released else math.nan
    tpr = np.mean(acc.tpr, axis=0)
    at = dict(zip(ROC_FPR, tpr, strict=False))
    step = max(1, len(ROC_FPR) // 50)
    return CurvePoint(
        w=float(w),
        auc=auc,
        auc_sd=auc_sd,
        auc_se=auc_se,
        tpr_at_1pct_fpr=float(at[0.01]),
        tpr_at_01pct_fpr=float(at[0.001]),
        density_auc=dens,
        density_auc_sd=dens_sd,
        density_auc_se=dens_se,
        repeats=len(acc.auc),
        refined=refined,
        roc_fpr=tuple(float(x) for x in ROC_FPR[::step]),
        roc_tpr=tuple(float(x) for x in tpr[::step]),
        released_auc=rel,
        released_auc_sd=rel_sd,
        released_auc_se=rel_se,
        decides=decides,
    )


def select_w(
    curve: tuple[CurvePoint, ...] | list[CurvePoint],
    threshold: float,
    attacks: tuple[str, ...] = ("distance", "density"),
) -> float | None:
    """Largest w such that it and every smaller w in ``curve`` pass; None if the smallest fails.

    Example:
        >>> pts = [_summarise(w, _Samples([a, a], [0.5, 0.5], [np.zeros(len(ROC_FPR))] * 2), False)
        ...        for w, a in [(0.0, 0.5), (0.5, 0.52), (0.7, 0.6), (0.9, 0.5)]]
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
    """Audit every w of the grid (then refine near the limit) and select w.

    ``fit_map`` trains a latent map on the given model-space rows (once per split);
    ``to_dist`` maps synthetic model-space rows to the distance space of ``X_dist``.
    """
    X_model, X_dist = np.asarray(X_model, dtype=np.float64), np.asarray(X_dist, dtype=np.float64)
    validate_audit_inputs(X_model, X_dist, config)
    t0 = time.perf_counter()
    grid = sorted(set(float(w) for w in config.grid))
    splits: list[Split] = []
    acc: dict[float, _Samples] = {}
    over_budget = False
    total = config.splits * (len(grid) + (config.refine_points if config.refine else 0))
    done = 0
    for s in range(config.splits):
        if s > 0 and _over(t0, config):
            over_budget = True
            break
        cancel.raise_if_cancelled()
        progress(done / total, f"audit: fitting the map on split {s + 1} of {config.splits}")
        splits.append(make_split(X_model, X_dist, fit_map, config, rng))
        for w in grid:
            over_budget |= _audit_w(splits[-1], w, X_dist, to_dist, config, rng, acc, t0, cancel)
            done += 1
            point = _summarise(w, acc[w], False)
            text = f"audit: w = {w:g} (split {s + 1}), AUC {point.auc:.3f}, density AUC {point.density_auc:.3f}"
            report(progress, done / total, text, _point_done(point, s + 1))
    curve = [_summarise(w, acc[w], False) for w in grid]
    selected = select_w(curve, config.threshold, config.select_on)
    if config.refine and selected is not None and selected < grid[-1]:
        upper = grid[grid.index(selected) + 1]
        extra = np.linspace(selected, upper, config.refine_points + 2)[1:-1]
        for w in (round(float(x), 6) for x in extra):
            for split in splits:
                over_budget |= _audit_w(split, w, X_dist, to_dist, config, rng, acc, t0, cancel)
            done += len(splits)
            curve.append(_summarise(w, acc[w], True))
            report(
                progress,
                done / total,
                f"audit: refining, w = {w:g}",
                _point_done(curve[-1], len(splits)),
            )
        curve.sort(key=lambda p: p.w)
        selected = select_w(curve, config.threshold, config.select_on)
    progress(1.0, "audit: done")
    return AuditResult(
        threshold=config.threshold,
        holdout_fraction=config.holdout_fraction,
        repeats=min(p.repeats for p in curve),
        splits=len(splits),
        curve=tuple(curve),
        selected_w=selected,
        rule=rule_text(config.threshold, config.select_on),
        seconds=time.perf_counter() - t0,
        budget_exhausted=over_budget,
        copies=config.copies,
        select_on=tuple(config.select_on),
    )


def _point_done(point: CurvePoint, split: int) -> AuditPointDone:
    """The partial result reported after a w is audited (all repeats so far at that w)."""
    return AuditPointDone(
        point.w, split, point.auc, point.auc_se, point.density_auc, point.density_auc_se,
        point.repeats, point.refined,
    )  # fmt: skip


def _over(t0: float, config: AuditConfig) -> bool:
    """Whether the time budget (if any) is spent."""
    return config.time_budget_s is not None and time.perf_counter() - t0 > config.time_budget_s


def _audit_w(
    split, w, X_dist, to_dist, config, rng, acc, t0, cancel, fixed=None, ahead=None, next_w=None
) -> bool:
    """Run the repeats at one w on one split (``fixed``: exactly that many); returns True when
    the time budget cut them short. ``ahead`` (a :class:`DecodeAhead`, used for large sets):
    each repeat decoded on a second thread while the one before is scored; ``next_w``: the w
    the caller audits next on this split, whose first repeat is decoded during this w's last."""
    samples = acc.setdefault(w, _Samples())
    fixed = config.repeats if fixed is None else fixed
    minimum = fixed if fixed is not None else max(2, -(-_MIN_REPEATS // config.splits))
    maximum = fixed if fixed is not None else max(minimum, _MAX_REPEATS // config.splits)
    start = len(samples.auc)
    per_batch = max(1, _BATCH_ROWS // max(1, len(split.latent)))
    ahead = ahead if per_batch == 1 else None  # one decode a repeat: decode the next meanwhile
    # Each (split, w) draws from its own generator, seeded from ``rng`` once per call: repeats
    # decoded ahead and never scored leave every other w's draws (and the curve) unchanged.
    local = ahead.generator(split, w, rng) if ahead else np.random.default_rng(rng.integers(2**63))
    pending: list[_Draw] = []
    future = ahead.submit(split, w, to_dist, config, local) if ahead else None
    while True:
        cancel.raise_if_cancelled()
        done = len(samples.auc) - start + 1  # repeats scored once this one is
        if future is not None:
            drawn = future.result()
            seen = (samples.auc[start:], samples.density[start:], maximum)  # to guess ahead
            future = ahead.after(split, w, to_dist, config, local, done, minimum, next_w, rng, seen)
        else:
            if not pending:
                count = _batch_size(samples, start, minimum, maximum, per_batch)
                pending = _draw_repeats(split, w, count, to_dist, config, local)
            drawn = pending.pop(0)
        _score_repeat(split, drawn, X_dist, config, samples)
        if done >= maximum:
            return False
        if done >= minimum:
            if _over(t0, config):
                return True
            precise = max(_mean_sd_se(x[start:])[2] for x in (samples.auc, samples.density))
            if precise < _SE_TARGET:
                return ahead.drop(future) if future is not None else False
            if ahead is not None and future is None:  # the SE target not met: one more, now
                future = ahead.submit(split, w, to_dist, config, local)


def _batch_size(samples: _Samples, start: int, minimum: int, maximum: int, cap: int) -> int:
    """Repeats to decode next: the minimum at first, then as many as the SE target still needs
    at the spread seen so far (n = (SD / 0.01)^2), at least one, at most ``cap``."""
    done = len(samples.auc) - start
    if done < minimum:
        need = minimum - done
    else:
        need = repeats_wanted(samples.auc[start:], samples.density[start:]) - done
    return max(1, min(need, maximum - done, cap))
