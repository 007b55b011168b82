"""One measurement of the membership audit: the AUC (:func:`membership_auc`), the attacks scored
on one synthetic set (:func:`score_draw`: the distance attack, the density ratio and the distance
on the released columns) and a point of the audit's curve (:class:`CurvePoint`: the raw means,
the fitted curve, its SE and each attack's upper bound).

References: METHOD.md section 5 (eqs. 24-25); van Breugel et al. (2023) DOMIAS.

Example:
    >>> membership_auc(np.array([3.0, 2.0]), np.array([1.0, 2.0]))
    0.875
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import rankdata

from engine.privacy.attacks import ROC_FPR, Draw, Split, binding_attack, roc_curve
from engine.search.density import GaussianKDE
from engine.search.neighbours import nearest_distances

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


def score_draw(split: Split, draw: Draw, X_dist: np.ndarray, config) -> Score:
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
    kde = GaussianKDE(basis=split.basis, method=config.nn_method)  # "cuda": on the GPU
    log_synth = kde.fit(synth).log_density(X_dist[rows])
    ref = np.concatenate([split.ref_log_members[mi], split.ref_log_hold[hi]])
    ratio = log_synth - ref
    return Score(
        membership_auc(members, nonmembers),
        membership_auc(ratio[: len(mi)], ratio[len(mi) :]),
        released,
        np.interp(ROC_FPR, fpr, tpr),
    )
