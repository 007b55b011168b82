"""Which attack decides at a w, the ROC machinery both attacks share, and the audit's splits.

The audit (:mod:`engine.privacy.audit`) scores two membership attacks at every w; the selection
rule tests each attack's mean AUC + one standard error against the limit. This module names the
attack that decides (the *binding* attack) at one curve point or at the first failing w, and
turns member / non-member scores into ROC points. :func:`make_split` draws one train/holdout
split with its fitted map and the holdout's density reference (:func:`fold_rows`: the folds of
cross-fitting); :func:`draw_common` draws and decodes repeats at several w in one pass, with
common random numbers.

References: METHOD.md section 5; van Breugel et al. (2023) DOMIAS; Fawcett (2006) ROC analysis.

Example:
    >>> [a.tolist() for a in roc_curve(np.array([2.0, 1.0]), np.array([1.0, 0.0]))]
    [[0.0, 0.0, 0.5, 1.0], [0.0, 0.5, 1.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.flows.generate import inject_latent_noise
from engine.search.density import GaussianKDE, leave_one_out_refits, principal_basis

if TYPE_CHECKING:
    from engine.privacy.measure import CurvePoint
    from engine.privacy.release import LatentMap

ROC_FPR = tuple(sorted({round(i / 40, 4) for i in range(41)} | {0.001, 0.002, 0.005, 0.01, 0.02}))
ATTACK_WORDS = {
    "distance": "distance attack",
    "density": "density attack",
    "released": "distance attack on the released columns",
}


@dataclass(frozen=True)
class BindingAttack:
    """The attack that decides at one w: the one whose upper bound (fitted AUC + gap + z SE,
    :mod:`engine.privacy.decision`) is highest. ``auc`` and ``se``: its fitted expected AUC and
    the SE of that fit; ``upper``: the bound the rule tests against the limit."""

    attack: str  # "distance" | "density" | "released"
    w: float
    auc: float
    se: float
    sd: float
    repeats: int
    upper: float = float("nan")

    @property
    def words(self) -> str:
        """``"density attack"``: the attack's name in plain words."""
        return ATTACK_WORDS[self.attack]

    def quote(self, threshold: float | None = None) -> str:
        """``"density attack AUC 0.531 ± 0.004 (upper 95 % bound 0.538)"``, and the limit.

        Example:
            >>> BindingAttack("density", 0.5, 0.5312, 0.0041, 0.01, 6, 0.5379).quote(0.55)
            'density attack AUC 0.531 ± 0.004 (upper 95 % bound 0.538) against the limit 0.55'
            >>> BindingAttack("density", 0.7, 0.5405, 0.0055, 0.01, 6, 0.5497).quote(0.55)[-36:]
            'bound 0.5497) against the limit 0.55'
        """
        text = f"{self.words} AUC {self.auc:.3f} ± {self.se:.3f}"
        if self.upper == self.upper:  # not NaN
            # four decimals where three would print the limit itself (0.5497 is not 0.550)
            near = threshold is not None and round(self.upper, 3) == round(threshold, 3)
            text += (
                f" (upper 95 % bound {self.upper:.4f})"
                if near
                else (f" (upper 95 % bound {self.upper:.3f})")
            )
        return text if threshold is None else f"{text} against the limit {threshold:g}"


_FIELDS = {
    "distance": ("auc_fit", "auc_fit_se", "auc_sd", "upper_distance", "auc", "auc_se"),
    "density": (
        "density_fit",
        "density_fit_se",
        "density_auc_sd",
        "upper_density",
        "density_auc",
        "density_auc_se",
    ),
    "released": (
        "released_fit",
        "released_fit_se",
        "released_auc_sd",
        "upper_released",
        "released_auc",
        "released_auc_se",
    ),
}


def _stats(point: CurvePoint, attack: str) -> tuple[float, float, float, float]:
    """(fit, its SE, SD, upper bound) of ``attack`` at ``point``; a point without a fit (an
    older record, a hand-made point) falls back to the raw mean, its SE and mean + 1.645 SE."""
    nan = float("nan")
    fit, fit_se, sd, upper, raw, raw_se = (getattr(point, f, nan) for f in _FIELDS[attack])
    if fit != fit:  # NaN: no fit recorded
        fit, fit_se = raw, raw_se
    if upper != upper:
        upper = fit + 1.6449 * fit_se
    return fit, fit_se, sd, upper


def binding_attack(
    point: CurvePoint, attacks: tuple[str, ...] = ("distance", "density", "released")
) -> BindingAttack:
    """The attack among ``attacks`` with the highest upper bound at ``point`` (the one the rule
    tests against the limit; ties go to the first named; attacks not measured are skipped).

    Example:
        >>> from types import SimpleNamespace
        >>> pt = SimpleNamespace(w=0.5, auc=0.51, auc_se=0.01, auc_sd=0.014, density_auc=0.57,
        ...                      density_auc_se=0.01, density_auc_sd=0.014, repeats=2)
        >>> binding_attack(pt).attack, round(binding_attack(pt).auc, 2)
        ('density', 0.57)
    """
    stats = {a: _stats(point, a) for a in attacks}
    measured = [a for a in attacks if stats[a][3] == stats[a][3]] or list(attacks)
    best = max(measured, key=lambda a: stats[a][3])
    fit, se, sd, upper = stats[best]
    return BindingAttack(best, point.w, fit, se, sd, point.repeats, upper)


def first_failure(
    curve: Sequence[CurvePoint],
    threshold: float,
    attacks: tuple[str, ...] = ("distance", "density", "released"),
) -> BindingAttack | None:
    """At the smallest w whose bound fails the limit, the attack that failed (None: none fails)."""
    for point in sorted(curve, key=lambda p: p.w):
        b = binding_attack(point, attacks)
        if not b.upper < threshold:
            return b
    return None


def roc_curve(
    member_scores: np.ndarray, nonmember_scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """ROC points (fpr, tpr) over all thresholds, ties as one diagonal step.

    Example:
        >>> [a.tolist() for a in roc_curve(np.array([2.0, 1.0]), np.array([1.0, 0.0]))]
        [[0.0, 0.0, 0.5, 1.0], [0.0, 0.5, 1.0, 1.0]]
    """
    scores = np.concatenate([member_scores, nonmember_scores])
    labels = np.concatenate([np.ones(len(member_scores)), np.zeros(len(nonmember_scores))])
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    last = np.r_[np.flatnonzero(np.diff(s) != 0), len(s) - 1]
    tp, fp = np.cumsum(y)[last], np.cumsum(1 - y)[last]
    return np.r_[0.0, fp / len(nonmember_scores)], np.r_[0.0, tp / len(member_scores)]


@dataclass
class Split:
    """One train/holdout split with its fitted map and density references."""

    train: np.ndarray
    hold: np.ndarray
    latent: np.ndarray
    lmap: LatentMap
    ref_log_members: np.ndarray  # log p_ref at each train row (KDE of the holdout)
    ref_log_hold: np.ndarray  # log p_ref at each holdout row (leave-one-out)
    basis: np.ndarray  # shared subspace of every KDE (one-hot row sums projected out)
    # common random numbers: repeat i draws its noise and samples from default_rng((seed, i)),
    # the same at every w, so two w's points differ by the effect of w alone
    seed: int = 0


def split_rows(n: int, config, perm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(train, holdout) row indices, sorted, of the split that permutation ``perm`` of ``n``
    rows gives (the first ``holdout_fraction`` of it held out, at least 2 rows)."""
    n_hold = max(2, int(round(n * config.holdout_fraction)))
    return np.sort(perm[n_hold:]), np.sort(perm[:n_hold])


def fold_rows(n: int, folds: int, perm: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """K-fold cross-fitting: (train, holdout) row indices, sorted, of each of ``folds`` folds of
    permutation ``perm`` of ``n`` rows; every row is held out in exactly one fold.

    Example:
        >>> [(len(t), h.tolist()) for t, h in fold_rows(6, 3, np.arange(6))]
        [(4, [0, 3]), (4, [1, 4]), (4, [2, 5])]
    """
    return [
        (np.sort(np.setdiff1d(perm, perm[k::folds])), np.sort(perm[k::folds])) for k in range(folds)
    ]


def make_split(X_model, X_dist, fit_map, config, rng, perm=None, rows=None) -> Split:
    """Random split (``perm``: the permutation drawn beforehand, else one drawn from ``rng``;
    ``rows``: the (train, holdout) indices, e.g. a fold of :func:`fold_rows`), map fitted on
    the train part, leave-one-out density reference on the holdout, and the split's seed of
    common random numbers drawn from ``rng``."""
    n = len(X_model)
    if rows is None:
        rows = split_rows(n, config, rng.permutation(n) if perm is None else perm)
    train, hold = rows
    lmap = fit_map(X_model[train])
    latent = np.asarray(lmap.to_latent(X_model[train]), dtype=np.float64)
    # M released copies: each member's latent code appears M times, so one Latent Noise
    # Injection pass draws M independent copies and the attacks see their union, as a recipient
    # of all M files would (the distance attack's minimum and the density both cover all copies).
    latent = np.tile(latent, (config.copies, 1))
    X_dist = X_dist[:, : X_dist.shape[1] - config.released_columns]  # the audit's own space
    basis = principal_basis(X_dist)
    method = getattr(config, "nn_method", "auto")  # "cuda": the kernel sums on the GPU
    ref_members, ref_hold = reference_densities(
        X_dist[train], X_dist[hold], basis, rng, method=method
    )
    seed = int(rng.integers(2**62))
    return Split(train, hold, latent, lmap, ref_members, ref_hold, basis, seed)


EXACT_REFERENCE_UP_TO = 2_000  # holdout rows: each one's reference fitted without it


def reference_densities(
    members: np.ndarray,
    holdout: np.ndarray,
    basis: np.ndarray,
    rng: np.random.Generator,
    *,
    method: str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """The density attack's reference log p_ref (a KDE of the holdout) at the members and at
    each holdout row, with no row scored by a KDE that holds it.

    Up to ``EXACT_REFERENCE_UP_TO`` holdout rows, each holdout row is scored by a KDE fitted
    (covariance and bandwidth included) on the other n - 1 holdout rows, and the members by a
    KDE on n - 1 holdout rows (one left out at random), so every row, member or not, is scored
    by the same estimator on n - 1 rows it is not part of. Dropping only the row's own kernel
    (as above that size) leaves the row inside the covariance and bandwidth: on small null
    tables (no membership signal at all) that biased the attack's AUC to 0.60 (83 rows, d = 6)
    and 0.55-0.68 on 172-442-row clinical tables, enough to refuse them; refitted, 0.49-0.50
    (``tests/test_small_cohorts.py``). Above that size the bias is below 0.005 and n refits
    would cost n^2. ``method``: the audit's ``nn_method`` (``"cuda"``: the kernel sums in
    torch on the GPU, :mod:`engine.search.device_kernels`).

    Example:
        >>> x = np.random.default_rng(0).standard_normal((40, 2))
        >>> m, h = reference_densities(x[:30], x[30:], np.eye(2), np.random.default_rng(1))
        >>> m.shape, h.shape
        ((30,), (10,))
    """
    n = len(holdout)
    if n > EXACT_REFERENCE_UP_TO or n < 3:
        kde = GaussianKDE(basis=basis, method=method).fit(holdout)
        return kde.log_density(members), kde.leave_one_out_log_density()
    keep = np.ones(n, dtype=bool)
    keep[rng.integers(n)] = False
    ref_members = GaussianKDE(basis=basis, method=method).fit(holdout[keep]).log_density(members)
    return ref_members, leave_one_out_refits(holdout, basis, method=method)  # each row's refit


@dataclass(frozen=True)
class Draw:
    """One repeat's synthetic set (distance space) and its density-attack samples."""

    synth_dist: np.ndarray
    members: np.ndarray  # indices into split.train scored by the density attack
    holdout: np.ndarray  # indices into split.hold scored by the density attack
    # indices into split.train / split.hold scored by the distance attack (None: all of them;
    # AuditConfig.score_max_rows)
    scored_members: np.ndarray | None = None
    scored_holdout: np.ndarray | None = None


def draw_common(split: Split, points: Sequence[tuple[float, int]], to_dist, config) -> list[Draw]:
    """The synthetic sets of ``points`` ((w, repeat) pairs) on ``split`` with common random
    numbers: repeat i's noise and its rows to score come from ``default_rng((split.seed, i))``
    whatever the w, so the same repeat at two w differs only by w. All points are decoded and
    mapped to the distance space in one pass (the decode's per-call overhead dominates small
    tables; the caller keeps a pass under a size it chooses).

    Example:
        >>> class Id:
        ...     def to_latent(self, X): return X
        ...     def from_latent(self, Z): return Z
        >>> from types import SimpleNamespace as NS
        >>> sp = NS(latent=np.zeros((4, 2)), train=np.arange(4), hold=np.arange(2), lmap=Id(),
        ...         seed=7)
        >>> cfg = NS(density_max_eval=10, score_max_rows=None)
        >>> a, b = draw_common(sp, [(0.0, 0), (0.5, 0)], lambda x: x, cfg)
        >>> bool(np.allclose(a.synth_dist * np.sqrt(0.5), b.synth_dist))  # the same noise
        True
    """
    draws: dict[int, tuple[np.ndarray, list[np.ndarray]]] = {}
    for _, rep in points:
        if rep not in draws:
            draws[rep] = _one_draw(split, np.random.default_rng((split.seed, rep)), config)
    ws = np.repeat([float(w) for w, _ in points], len(split.latent))
    latent = np.tile(split.latent, (len(points), 1))
    noise = np.concatenate([draws[rep][0] for _, rep in points])
    synth = split.lmap.from_latent(inject_latent_noise(latent, ws, noise))
    parts = np.split(np.asarray(to_dist(np.asarray(synth)), dtype=np.float64), len(points))
    return [Draw(part, *draws[rep][1]) for part, (_, rep) in zip(parts, points, strict=True)]


def _one_draw(split: Split, rng: np.random.Generator, config) -> tuple[np.ndarray, list]:
    """One repeat's latent noise and its rows to score: noise, the density attack's rows, then
    (a large split) the distance attack's sample of each side."""
    m = min(config.density_max_eval, len(split.train))
    h = min(config.density_max_eval, len(split.hold))
    cap: int = getattr(config, "score_max_rows", None) or 0
    noise = rng.standard_normal(split.latent.shape)
    pick = [
        rng.choice(len(split.train), size=m, replace=False),
        rng.choice(len(split.hold), size=h, replace=False),
    ]
    if cap > 0 and max(len(split.train), len(split.hold)) > cap:
        pick += [_sample(len(split.train), cap, rng), _sample(len(split.hold), cap, rng)]
    return noise, pick


def _sample(n: int, cap: int, rng: np.random.Generator) -> np.ndarray:
    """``min(n, cap)`` of ``range(n)`` at random, sorted."""
    return np.sort(rng.choice(n, size=cap, replace=False)) if n > cap else np.arange(n)


def rows_scored(split: Split, config) -> tuple[int, int]:
    """Members and holdout rows the distance attack scores per repeat on ``split``."""
    cap = getattr(config, "score_max_rows", None)
    if cap is None or max(len(split.train), len(split.hold)) <= cap:
        return len(split.train), len(split.hold)
    return min(len(split.train), cap), min(len(split.hold), cap)
