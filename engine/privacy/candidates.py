"""The candidate models of the audit's family and what the audit records of each: a candidate
as ranked (:class:`Candidate`), its record (:class:`CandidateRecord`: chosen, dropped or not
audited, with its fitted AUCs at the smallest w and why), the family's protocol, and a family of
one model (:class:`SingleMap`). The audit itself: :mod:`engine.privacy.crossfit`.

References: METHOD.md section 5; Breiman et al. (1984) one-standard-error rule.

Example:
    >>> because([CandidateRecord("flow", 1, False, 3.9, "dropped", ""),
    ...          CandidateRecord("copula", 2, True, 4.0, "chosen", "")], 1, True, "")
    'copula: ranked 2 on validation rows; flow gave members away at the smallest w and was dropped'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from engine.privacy.audit_result import AuditConfig
from engine.privacy.decision import REFUSAL_MARGIN, Decision
from engine.privacy.release import LatentMap

FitMap = Callable[[np.ndarray], LatentMap]


@dataclass(frozen=True)
class Candidate:
    """One model of the family as ranked: its label, whether it is the floor (the Gaussian),
    its validation NLL and the ranking rule's words for its place."""

    label: str
    floor: bool = False
    val_nll: float | None = None
    ranked: str = ""


@dataclass(frozen=True)
class CandidateRecord:
    """What the audit found for one candidate: ``status`` chosen / dropped / not audited, the
    attacks' mean AUC (and SE) at the smallest w, and why, in plain words."""

    label: str
    rank: int
    floor: bool
    val_nll: float | None
    status: str
    why: str
    w0: float | None = None
    auc_w0: float | None = None
    auc_w0_se: float | None = None
    density_auc_w0: float | None = None
    density_auc_w0_se: float | None = None
    released_auc_w0: float | None = None
    released_auc_w0_se: float | None = None

    def to_dict(self) -> dict:
        """JSON-safe dict for ``audit.json``'s ``candidates`` list."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class Family(Protocol):
    """The candidates, ranked on the first split's members, and fitted on any split's."""

    def rank(self, X: np.ndarray) -> list[tuple[Candidate, LatentMap]]: ...

    def fit(self, label: str, X: np.ndarray) -> LatentMap: ...

    # optional: ``on_chosen(label)``, called once the chosen candidate passes at the smallest w
    # (the rest of the grid cannot change the model, only w), e.g. to train the final model;
    # ``fit_many(label, [X, ...])``: ``fit`` on each table at once (one batched network:
    # engine.pipeline.synthesize_step's family, engine.flows.batched)


class SingleMap:
    """A family of one (the floor): ``fit_map`` on every split, as before the family."""

    def __init__(self, fit_map: FitMap, label: str = "model") -> None:
        self.fit_map, self.label = fit_map, label

    def rank(self, X: np.ndarray) -> list[tuple[Candidate, LatentMap]]:
        return [(Candidate(self.label, floor=True), self.fit_map(X))]

    def fit(self, label: str, X: np.ndarray) -> LatentMap:
        return self.fit_map(X)


def candidate_record(
    cand: Candidate, rank: int, curves: dict, d: Decision, config: AuditConfig
) -> CandidateRecord:
    """The record of an audited candidate from its fitted curves at the smallest w and its
    decision there: chosen when it passes (or is the floor), else dropped."""
    w0 = d.bounds[0][0] if d.bounds else 0.0
    upper = d.upper
    if d.w is not None and not d.uncertain:
        status, why = (
            "chosen",
            (
                f"passes the limit {config.threshold:g} at w = {w0:g} "
                f"(highest upper bound {upper:.3f})"
            ),
        )
    elif d.w is not None:
        status, why = (
            "chosen",
            (
                f"the floor (a Gaussian copula): its estimate at w = {w0:g} ({d.fit:.3f}) is under "
                f"{config.threshold - REFUSAL_MARGIN:g}, but too uncertain to show it is under the "
                f"limit (upper bound {upper:.3f}); released at w = {w0:g} with the spread stated"
            ),
        )
    elif cand.floor:
        status, why = (
            "chosen",
            (
                f"the floor (a Gaussian copula) fails the limit at w = {w0:g} (upper bound "
                f"{upper:.3f}, estimate {d.fit:.3f}): nothing can be released"
            ),
        )
    else:
        status, why = (
            "dropped",
            (
                f"gives members away at w = {w0:g} (upper bound {upper:.3f} against the limit "
                f"{config.threshold:g})"
            ),
        )

    def fit(attack: str) -> tuple[float | None, float | None]:
        c = curves.get(attack)
        return (None, None) if c is None else c.at(w0)

    (a, a_se), (b, b_se), (r, r_se) = fit("distance"), fit("density"), fit("released")
    return CandidateRecord(
        cand.label,
        rank + 1,
        cand.floor,
        cand.val_nll,
        status,
        why,
        w0,
        a,
        a_se,
        b,
        b_se,
        r,
        r_se,
    )


def not_audited(cand: Candidate, rank: int) -> CandidateRecord:
    return CandidateRecord(
        cand.label,
        rank + 1,
        cand.floor,
        cand.val_nll,
        "not audited",
        "ranked below the chosen model on validation rows (" + (cand.ranked or "lower") + ")",
    )


def because(records: Sequence[CandidateRecord], rank: int, released: bool, why: str) -> str:
    """Why the chosen candidate, in plain words (``why``: the ranking rule's words for it)."""
    chosen = records[rank]
    dropped = [r.label for r in records if r.status == "dropped"]
    first = (
        "ranked first on validation rows" if rank == 0 else f"ranked {rank + 1} on validation rows"
    )
    text = f"{chosen.label}: {first}"
    if dropped:
        text += (
            "; "
            + ", ".join(dropped)
            + " gave members away at the smallest w and "
            + ("was" if len(dropped) == 1 else "were")
            + " dropped"
        )
    if not released:
        text += "; the floor itself fails the limit, so nothing is released"
    return text


class FloorOnly:
    """The family's floor alone (its label), for the rows advice's audit of half the rows."""

    def __init__(self, family: Any, label: str) -> None:
        self.family, self.label = family, label

    def rank(self, X: np.ndarray) -> list:
        return [(Candidate(self.label, floor=True), self.family.fit(self.label, X))]

    def fit(self, label: str, X: np.ndarray) -> LatentMap:
        return self.family.fit(self.label, X)

    def fit_many(self, label: str, Xs: list[np.ndarray]) -> list[LatentMap]:
        """The family's ``fit_many`` where it has one (the folds of half the rows trained as
        one batched network, :mod:`engine.flows.batched`), else ``fit`` on each table."""
        many = getattr(self.family, "fit_many", None)
        if many is None:
            return [self.family.fit(self.label, X) for X in Xs]
        return list(many(self.label, Xs))
