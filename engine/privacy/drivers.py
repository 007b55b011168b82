"""The columns that drive a refusal: the distance attack with each table column left out
(:func:`column_drivers`, used by :mod:`engine.privacy.family` when nothing can be released).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from engine.privacy.attacks import Split, draw_common
from engine.privacy.audit_result import AuditConfig

DRIVER_SPLITS = 4  # splits scored for the columns that drive a refusal (one draw each)


def column_drivers(
    splits: Sequence[Split],
    X_dist: np.ndarray,
    groups: dict[str, list[int]],
    w: float,
    to_dist: Callable[[np.ndarray], np.ndarray],
    config: AuditConfig,
    rng: np.random.Generator,
) -> tuple[tuple[str, float], ...]:
    """The distance attack's AUC at ``w`` with each table column left out (its distance-space
    columns dropped from members, holdout and synthetic rows alike), on one fresh draw per
    split (at most :data:`DRIVER_SPLITS`), highest drop first: the columns whose absence
    lowers the attack most are the ones that single members out. Returns ``(column, AUC
    without it)`` pairs after a first pair ``("", AUC with every column)``.

    Example:
        >>> import numpy as np
        >>> from engine.privacy.audit_result import AuditConfig
        >>> class Id:
        ...     def to_latent(self, X): return X
        ...     def from_latent(self, Z): return Z
        >>> rng = np.random.default_rng(0)
        >>> X = np.c_[rng.standard_normal(200), np.arange(200.0)]  # the second column is unique
        >>> cfg = AuditConfig(holdout_fraction=0.3)
        >>> from engine.privacy.attacks import make_split
        >>> from engine.privacy.release import identity
        >>> split = make_split(X, X, lambda r: Id(), cfg, rng)
        >>> out = column_drivers([split], X, {"x": [0], "id": [1]}, 0.99, identity, cfg, rng)
        >>> out[1][0]  # leaving the identifying column out lowers the attack most
        'id'
    """
    from engine.privacy.measure import membership_auc
    from engine.search.neighbours import nearest_distances

    own = np.arange(X_dist.shape[1] - config.released_columns)  # the audit's own space
    keep_sets = {"": own}
    for name, cols in groups.items():
        rest = np.setdiff1d(own, cols)
        if len(rest):
            keep_sets[name] = rest
    aucs: dict[str, list[float]] = {k: [] for k in keep_sets}
    for split in list(splits)[:DRIVER_SPLITS]:
        synth = draw_common(split, [(w, 0)], to_dist, config)[0].synth_dist
        for name, keep in keep_sets.items():
            score = -nearest_distances(X_dist[:, keep], synth[:, keep])
            aucs[name].append(membership_auc(score[split.train], score[split.hold]))
    means = {k: float(np.mean(v)) for k, v in aucs.items() if v}
    order = sorted((k for k in means if k), key=lambda k: means[k])
    return (("", means.get("", float("nan"))),) + tuple((k, means[k]) for k in order)
