"""Which attack decides at a w, the ROC machinery both attacks share, and the audit's splits.

The audit (:mod:`engine.privacy.audit`) scores two membership attacks at every w; the selection
rule tests each attack's mean AUC + one standard error against the limit. This module names the
attack that decides (the *binding* attack) at one curve point or at the first failing w, and
turns member / non-member scores into ROC points. :func:`make_split` draws one train/holdout
split with its fitted map and the holdout's density reference; :func:`_draw_repeats` draws
and decodes several repeats of one w in one pass.

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
from engine.privacy.density import GaussianKDE, leave_one_out_refits, principal_basis

if TYPE_CHECKING:
    from engine.privacy.audit import CurvePoint
    from engine.privacy.release import LatentMap

ROC_FPR = tuple(sorted({round(i / 40, 4) for i in range(41)} | {0.001, 0.002, 0.005, 0.01, 0.02}))
ATTACK_WORDS = {
    "distance": "distance attack",
    "density": "density attack",
    "released": "distance attack on the released columns",
}


@dataclass(frozen=True)
class BindingAttack:
    """The attack that decides at one w: the one whose mean AUC + one SE is highest."""

    attack: str  # "distance" | "density" | "released"
    w: float
    auc: float
    se: float
    sd: float
    repeats: int

    @property
    def words(self) -> str:
        """``"density attack"``: the attack's name in plain words."""
        return ATTACK_WORDS[self.attack]

    def quote(self, threshold: float | None = None) -> str:
        """``"density attack AUC 0.561 ± 0.004 (mean ± SE over 6 repeats) against the limit 0.55"``.

        Example:
            >>> BindingAttack("density", 0.5, 0.5612, 0.0041, 0.01, 6).quote(0.55)
            'density attack AUC 0.561 ± 0.004 (mean ± SE over 6 repeats) against the limit 0.55'
        """
        text = f"{self.words} AUC {self.auc:.3f} ± {self.se:.3f} (mean ± SE over {self.repeats} repeats)"
        return text if threshold is None else f"{text} against the limit {threshold:g}"


def binding_attack(
    point: CurvePoint, attacks: tuple[str, ...] = ("distance", "density")
) -> BindingAttack:
    """The attack among ``attacks`` with the highest mean AUC + one SE at ``point`` (the one the
    selection rule tests against the limit; ties go to the distance attack).

    Example:
        >>> from types import SimpleNamespace
        >>> pt = SimpleNamespace(w=0.5, auc=0.51, auc_se=0.01, auc_sd=0.014, density_auc=0.57,
        ...                      density_auc_se=0.01, density_auc_sd=0.014, repeats=2)
        >>> binding_attack(pt).attack, round(binding_attack(pt).auc, 2)
        ('density', 0.57)
    """
    stats = {
        "distance": (point.auc, point.auc_se, point.auc_sd),
        "density": (point.density_auc, point.density_auc_se, point.density_auc_sd),
        "released": (
            getattr(point, "released_auc", float("nan")),
            getattr(point, "released_auc_se", float("nan")),
            getattr(point, "released_auc_sd", float("nan")),
        ),
    }
    best = max(attacks, key=lambda a: stats[a][0] + stats[a][1])
    auc, se, sd = stats[best]
    return BindingAttack(best, point.w, auc, se, sd, point.repeats)


def first_failure(
    curve: Sequence[CurvePoint],
    threshold: float,
    attacks: tuple[str, ...] = ("distance", "density"),
) -> BindingAttack | None:
    """At the smallest w that fails the limit, the attack that failed (None: every w passes)."""
    for point in sorted(curve, key=lambda p: p.w):
        if not point.passes(threshold, attacks):
            return binding_attack(point, attacks)
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


def split_rows(n: int, config, perm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(train, holdout) row indices, sorted, of the split that permutation ``perm`` of ``n``
    rows gives (the first ``holdout_fraction`` of it held out, at least 2 rows)."""
    n_hold = max(2, int(round(n * config.holdout_fraction)))
    return np.sort(perm[n_hold:]), np.sort(perm[:n_hold])


def make_split(X_model, X_dist, fit_map, config, rng, perm=None) -> Split:
    """Random split (``perm``: the permutation drawn beforehand, else one drawn from ``rng``),
    map fitted on the train part, leave-one-out density reference on the holdout."""
    n = len(X_model)
    train, hold = split_rows(n, config, rng.permutation(n) if perm is None else perm)
    lmap = fit_map(X_model[train])
    latent = np.asarray(lmap.to_latent(X_model[train]), dtype=np.float64)
    # M released copies: each member's latent code appears M times, so one Latent Noise
    # Injection pass draws M independent copies and the attacks see their union, as a recipient
    # of all M files would (the distance attack's minimum and the density both cover all copies).
    latent = np.tile(latent, (config.copies, 1))
    X_dist = X_dist[:, : X_dist.shape[1] - config.released_columns]  # the audit's own space
    basis = principal_basis(X_dist)
    ref_members, ref_hold = reference_densities(X_dist[train], X_dist[hold], basis, rng)
    return Split(train, hold, latent, lmap, ref_members, ref_hold, basis)


EXACT_REFERENCE_UP_TO = 2_000  # holdout rows: each one's reference fitted without it


def reference_densities(
    members: np.ndarray, holdout: np.ndarray, basis: np.ndarray, rng: np.random.Generator
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
    would cost n^2.

    Example:
        >>> x = np.random.default_rng(0).standard_normal((40, 2))
        >>> m, h = reference_densities(x[:30], x[30:], np.eye(2), np.random.default_rng(1))
        >>> m.shape, h.shape
        ((30,), (10,))
    """
    n = len(holdout)
    if n > EXACT_REFERENCE_UP_TO or n < 3:
        kde = GaussianKDE(basis=basis).fit(holdout)
        return kde.log_density(members), kde.leave_one_out_log_density()
    keep = np.ones(n, dtype=bool)
    keep[rng.integers(n)] = False
    ref_members = GaussianKDE(basis=basis).fit(holdout[keep]).log_density(members)
    return ref_members, leave_one_out_refits(holdout, basis)  # each row's own refit


@dataclass(frozen=True)
class _Draw:
    """One repeat's synthetic set (distance space) and its density-attack samples."""

    synth_dist: np.ndarray
    members: np.ndarray  # indices into split.train scored by the density attack
    holdout: np.ndarray  # indices into split.hold scored by the density attack
    # indices into split.train / split.hold scored by the distance attack (None: all of them;
    # AuditConfig.score_max_rows)
    scored_members: np.ndarray | None = None
    scored_holdout: np.ndarray | None = None


def _draw_repeats(split: Split, w: float, count: int, to_dist, config, rng) -> list[_Draw]:
    """``count`` repeats at w: each repeat's noise, then its density samples, drawn in turn from
    ``rng`` (as one repeat at a time would), and all synthetic sets decoded and mapped to the
    distance space in one pass (the decode's per-call overhead dominates small tables)."""
    m = min(config.density_max_eval, len(split.train))
    h = min(config.density_max_eval, len(split.hold))
    cap: int = getattr(config, "score_max_rows", None) or 0
    sampled = cap > 0 and max(len(split.train), len(split.hold)) > cap
    noise, picks = [], []
    for _ in range(count):
        noise.append(rng.standard_normal(split.latent.shape))
        pick = [
            rng.choice(len(split.train), size=m, replace=False),
            rng.choice(len(split.hold), size=h, replace=False),
        ]
        if sampled:  # drawn only then: the draws of a small table are as before
            pick += [_sample(len(split.train), cap, rng), _sample(len(split.hold), cap, rng)]
        picks.append(pick)
    latent = inject_latent_noise(np.tile(split.latent, (count, 1)), w, np.concatenate(noise))
    synth = np.asarray(to_dist(np.asarray(split.lmap.from_latent(latent))), dtype=np.float64)
    parts = np.split(synth, count)
    return [_Draw(part, *pick) for part, pick in zip(parts, picks, strict=True)]


def _sample(n: int, cap: int, rng: np.random.Generator) -> np.ndarray:
    """``min(n, cap)`` of ``range(n)`` at random, sorted."""
    return np.sort(rng.choice(n, size=cap, replace=False)) if n > cap else np.arange(n)


def rows_scored(split: Split, config) -> tuple[int, int]:
    """Members and holdout rows the distance attack scores per repeat on ``split``."""
    cap = getattr(config, "score_max_rows", None)
    if cap is None or max(len(split.train), len(split.hold)) <= cap:
        return len(split.train), len(split.hold)
    return min(len(split.train), cap), min(len(split.hold), cap)
