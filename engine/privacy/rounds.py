"""The audit's rounds of splits, shared by every candidate model (:class:`Rounds`): each
round's (train, holdout) rows drawn once (cross-fitted folds, or random splits), each
candidate's maps trained on a round's members (several at once where the family can), and
the round's splits made once (their density references and common-random-number seeds) and
reused by later candidates with their own maps. The driver: :mod:`engine.privacy.crossfit`.

References: METHOD.md section 5; Chernozhukov et al. (2018) cross-fitting.

Example:
    >>> class Id:
    ...     def to_latent(self, X): return X
    ...     def from_latent(self, Z): return Z
    >>> from engine.privacy.audit_result import AuditConfig
    >>> from engine.privacy.candidates import SingleMap
    >>> X = np.random.default_rng(0).standard_normal((100, 2))
    >>> r = Rounds(X, X, SingleMap(lambda rows: Id()), AuditConfig(crossfit=True),
    ...            np.random.default_rng(1))
    >>> sorted(np.concatenate([hold for _, hold in r.rows(0)])) == list(range(100))
    True
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from engine.privacy.attacks import Split, fold_rows, make_split, split_rows
from engine.privacy.audit_result import AuditConfig
from engine.privacy.release import LatentMap

Rows = list[tuple[np.ndarray, np.ndarray]]


class Rounds:
    """The rounds of one audit run (module docstring)."""

    def __init__(
        self,
        X_model: np.ndarray,
        X_dist: np.ndarray,
        family: Any,
        config: AuditConfig,
        rng: np.random.Generator,
    ) -> None:
        self.X_model, self.X_dist, self.family = X_model, X_dist, family
        self.config, self.rng = config, rng
        self.round_rows: list[Rows] = []
        self.base: list[list[Split]] = []  # each round's splits as first made (density refs)

    def rows(self, r: int) -> Rows:
        """Round ``r``'s (train, holdout) rows, drawn once and shared by every candidate."""
        while len(self.round_rows) <= r:
            n = len(self.X_model)
            if self.config.crossfit:
                rows = fold_rows(n, self.config.split_count, self.rng.permutation(n))
            else:
                rows = [
                    split_rows(n, self.config, self.rng.permutation(n))
                    for _ in range(self.config.split_count)
                ]
            self.round_rows.append(rows)
        return self.round_rows[r]

    def maps(self, label: str, rows: Rows) -> list[LatentMap]:
        """The candidate's map trained on each split's members (several at once where the
        family can: one batched network, :mod:`engine.flows.batched`, whatever the folds'
        sizes; a copula or a family without ``fit_many``: one by one)."""
        tables = [self.X_model[train] for train, _ in rows]
        if len(tables) >= 2 and hasattr(self.family, "fit_many"):
            return list(self.family.fit_many(label, tables))
        return [self.family.fit(label, t) for t in tables]

    def splits(self, r: int, maps: list[LatentMap]) -> list[Split]:
        """Round ``r``'s splits with ``maps``: the round's first splits are made once, later
        candidates reuse them (same members, holdout, density references and seeds)."""
        if len(self.base) <= r:
            self.base.append(
                [
                    make_split(
                        self.X_model, self.X_dist, lambda _x, m=m: m, self.config, self.rng, rows=rw
                    )
                    for rw, m in zip(self.rows(r), maps, strict=True)
                ]
            )
            return self.base[r]
        return [self._refit(s, m) for s, m in zip(self.base[r], maps, strict=True)]

    def _refit(self, split: Split, lmap: LatentMap) -> Split:
        latent = np.asarray(lmap.to_latent(self.X_model[split.train]), dtype=np.float64)
        return replace(split, lmap=lmap, latent=np.tile(latent, (self.config.copies, 1)))
