"""The audit of a nested family of candidate models, on shared splits (issue 27 items 1-2).

The candidates (:class:`Family`) run from the Gaussian copula of the normal scores (the floor:
the flow's whitened start with no MADE layer) to the flows, and come ranked by a fidelity
criterion measured on rows they did not train on (:func:`engine.flows.select.rank_family`:
the flows by the one-SE rule on validation NLL, the copula last unless it is best). The audit takes them in that order: each is audited at the smallest w of the grid on the SAME
splits (same members, same holdout, same density references); the first whose point passes
the limit is chosen, and only it is audited over the rest of the grid. A candidate that fails
at the smallest w is dropped, not refused. Only when the floor fails is nothing released; the
refusal then names the columns that drive the leak (:func:`column_drivers`).

Why in ranking order and stop at the first pass: it is the rule "drop the candidates that fail,
take the best-ranked of those left" (the ranking does not depend on the audit), and in the
common case (the first-ranked passes) it costs no more than auditing one model. The floor's
own refusal ends the search: the flows above it fit the rows more closely and leak more.

References: METHOD.md section 5; Breiman et al. (1984) one-standard-error rule.

Example:
    >>> import numpy as np
    >>> from engine.privacy.audit_result import AuditConfig
    >>> class Id:
    ...     def to_latent(self, X): return X
    ...     def from_latent(self, Z): return Z
    >>> X = np.random.default_rng(0).standard_normal((300, 2))
    >>> res = run_family_audit(X, X, SingleMap(lambda rows: Id()), config=AuditConfig(
    ...     grid=(0.0, 0.5), repeats=2, refine=False), rng=np.random.default_rng(1))
    >>> res.chosen, [c.status for c in res.candidates]
    ('model', ['chosen'])
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from engine.privacy.attacks import Split, binding_attack, make_split, rows_scored, split_rows
from engine.privacy.audit_result import AuditConfig, AuditResult, rule_text, validate_audit_inputs
from engine.privacy.drivers import DRIVER_SPLITS, column_drivers  # noqa: F401  (re-exported)
from engine.privacy.one_release import _bound_words, select_release_w
from engine.privacy.release import LatentMap, identity
from engine.progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress, report

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
    # ``fit_many(label, [X, ...])``: ``fit`` on each table at once (:class:`_Fits`)


class SingleMap:
    """A family of one (the floor): ``fit_map`` on every split, as before the family."""

    def __init__(self, fit_map: FitMap, label: str = "model") -> None:
        self.fit_map, self.label = fit_map, label

    def rank(self, X: np.ndarray) -> list[tuple[Candidate, LatentMap]]:
        return [(Candidate(self.label, floor=True), self.fit_map(X))]

    def fit(self, label: str, X: np.ndarray) -> LatentMap:
        return self.fit_map(X)


def run_family_audit(
    X_model: np.ndarray,
    X_dist: np.ndarray,
    family: Family,
    *,
    to_dist: Callable[[np.ndarray], np.ndarray] = identity,
    config: AuditConfig = AuditConfig(),  # noqa: B008 (frozen)
    rng: np.random.Generator,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    groups: dict[str, list[int]] | None = None,
) -> AuditResult:
    """Audit the family's candidates in ranking order at the smallest w, the chosen one over
    the whole grid (then refined near the limit), and select w (:func:`engine.privacy.audit.
    select_w`). ``groups``: distance-space columns of each table column, to name the columns
    that drive a refusal. ``AuditResult.candidates`` records every candidate."""
    from engine.privacy.decode_ahead import DecodeAhead

    with DecodeAhead() as ahead:  # large sets: the next repeat decoded while one is scored
        return _run_family_audit(
            X_model, X_dist, family, to_dist=to_dist, config=config, rng=rng,
            progress=progress, cancel=cancel, groups=groups, ahead=ahead,
        )  # fmt: skip


def _run_family_audit(
    X_model, X_dist, family, *, to_dist, config, rng, progress, cancel, groups, ahead
) -> AuditResult:
    """:func:`run_family_audit`'s body, with its decode thread (``ahead``)."""
    from engine.privacy.audit import _audit_w, _point_done, _Samples, _summarise

    X_model, X_dist = np.asarray(X_model, dtype=np.float64), np.asarray(X_dist, dtype=np.float64)
    validate_audit_inputs(X_model, X_dist, config)
    t0 = time.perf_counter()
    grid = sorted(set(float(w) for w in config.grid))
    w0, total = (
        grid[0],
        config.splits * (len(grid) + (config.refine_points if config.refine else 0)),
    )
    ranked: list[tuple[Candidate, LatentMap]] = []

    def first_fit(rows: np.ndarray) -> LatentMap:
        ranked.extend(family.rank(rows))
        return ranked[0][1]

    over_budget, done = False, 0
    # many splits and a family that trains a candidate on all of them at once: their rows drawn now
    fits = (
        _Fits(family, X_model, config, rng)
        if hasattr(family, "fit_many") and config.splits > 2
        else None
    )
    splits: list[Split] = []
    records: list[CandidateRecord] = []
    chosen: tuple[int, list[Split], dict[float, _Samples]] | None = None
    rank = 0
    while chosen is None:  # the candidates, in ranking order (the floor ends the search)
        acc: dict[float, _Samples] = {}
        mine: list[Split] = []
        for s in range(config.splits if rank == 0 else len(splits)):
            cancel.raise_if_cancelled()
            if rank == 0:
                if s > 0 and _over(t0, config):
                    over_budget = True
                    break
                progress(
                    done / total, f"audit: fitting the map on split {s + 1} of {config.splits}"
                )
                top = ranked[0][0].label if ranked else ""
                fit = (
                    first_fit
                    if s == 0
                    else _fitter(family, top)
                    if fits is None
                    else fits.fitter(top, s)
                )
                split = make_split(
                    X_model, X_dist, fit, config, rng, None if fits is None else fits.perms[s]
                )
                splits.append(split)
            else:
                label = ranked[rank][0].label
                lmap = (
                    ranked[rank][1]
                    if s == 0
                    else family.fit(label, X_model[splits[s].train])
                    if fits is None
                    else fits.get(label, s)
                )
                split = _refit(splits[s], X_model, lmap, config)
            mine.append(split)
            over_budget |= _audit_w(split, w0, X_dist, to_dist, config, rng, acc, t0, cancel, ahead=ahead)  # fmt: skip
            done += 1 if rank == 0 else 0
            point = _summarise(w0, acc[w0], False)
            report(progress, done / total, _w0_text(ranked[rank][0].label, w0, s, point), _point_done(point, s + 1))  # fmt: skip
        cand = ranked[rank][0]
        # A refusal is confirmed on more splits: the floor fits in a moment, and on two splits
        # its SE rests on one difference of two split means. (Twelve splits on every floor
        # cost the 1,608-row demo 5-9 s when the copula passes anyway: the holdout's
        # leave-one-out density references are refitted for each split.)
        failing = not _summarise(w0, acc[w0], False).passes(config.threshold, config.select_on)
        if cand.floor and failing and not over_budget:
            # the repeats a split gets: the minimum and maximum shared out over all the splits
            fconf = replace(config, splits=max(config.splits, config.floor_splits))
            for s in range(len(mine), config.floor_splits):
                cancel.raise_if_cancelled()
                split = make_split(X_model, X_dist, _fitter(family, cand.label), config, rng)
                mine.append(split)
                over_budget |= _audit_w(split, w0, X_dist, to_dist, fconf, rng, acc, t0, cancel)
                point = _summarise(w0, acc[w0], False)
                report(progress, done / total, _w0_text(cand.label, w0, s, point), _point_done(point, s + 1))  # fmt: skip
        point = _summarise(w0, acc[w0], False)
        passes = point.passes(config.threshold, config.select_on)
        records.append(_record(cand, rank, point, passes, config))
        if passes or cand.floor or rank + 1 >= len(ranked):
            chosen = (rank, mine, acc)
        rank += 1
    rank, mine, acc = chosen
    # The floor's extra splits decide its w = 0 point only (the refusal); the grid above runs
    # on the run's splits, as a flow's would.
    w0_splits, mine = len(mine), mine[: max(1, config.splits)]
    # The grid w by w over every split, then the refinement, each from its own generator, so
    # the points that decide are drawn alike whether or not the points above the first failure
    # get one repeat (issue 31), and the release after the audit draws the same noise.
    grid_rng, refine_rng = (np.random.default_rng(s) for s in rng.integers(2**63, size=2))
    curve = [_summarise(w0, acc[w0], False)]
    deciding = select_release_w(curve, config) is not None
    on_chosen = getattr(family, "on_chosen", None)
    if deciding and on_chosen is not None:  # something will be released: its model can start
        on_chosen(ranked[rank][0].label)
    for i, w in enumerate(grid[1:], start=1):
        runs = mine if deciding or not config.one_repeat_above_failure else mine[:1]
        fixed = None if deciding or not config.one_repeat_above_failure else 1
        # with one split the next call is known (the next w): its first repeat decodes early
        next_w = grid[i + 1] if len(mine) == 1 and i + 1 < len(grid) else None
        for k, split in enumerate(runs):
            over_budget |= _audit_w(split, w, X_dist, to_dist, config, grid_rng, acc, t0, cancel, fixed, ahead, next_w)  # fmt: skip
            pt = _summarise(w, acc[w], False, deciding)
            text = f"audit: w = {w:g} (split {k + 1}), AUC {pt.auc:.3f}, density AUC {pt.density_auc:.3f}"
            report(progress, (done + k + 1) / total, text, _point_done(pt, k + 1))
        done += len(mine)
        curve.append(_summarise(w, acc[w], False, deciding))
        deciding = deciding and select_release_w(curve, config) == w
    selected = select_release_w(curve, config)
    if config.refine and selected is not None and selected < grid[-1]:
        upper = grid[grid.index(selected) + 1]
        deciding = True
        refined = [
            round(float(x), 6) for x in np.linspace(selected, upper, config.refine_points + 2)[1:-1]
        ]
        for i, w in enumerate(refined):
            single = not deciding and config.one_repeat_above_failure
            next_w = refined[i + 1] if len(mine) == 1 and i + 1 < len(refined) else None
            for split in mine[:1] if single else mine:
                over_budget |= _audit_w(split, w, X_dist, to_dist, config, refine_rng, acc, t0, cancel, 1 if single else None, ahead, next_w)  # fmt: skip
            done += len(mine)
            curve.append(_summarise(w, acc[w], True, not single))
            report(progress, done / total, f"audit: refining, w = {w:g}", _point_done(curve[-1], len(mine)))  # fmt: skip
            deciding = deciding and select_release_w(curve, config) == w
        curve.sort(key=lambda p: p.w)
        selected = select_release_w(curve, config)
    records += [_not_audited(c, i) for i, (c, _) in enumerate(ranked) if i > rank]
    drivers: tuple[tuple[str, float], ...] = ()
    if selected is None and groups:
        drivers = column_drivers(mine, X_dist, groups, w0, to_dist, config, rng)
    progress(1.0, "audit: done")
    return AuditResult(
        threshold=config.threshold,
        holdout_fraction=config.holdout_fraction,
        repeats=min(p.repeats for p in curve if p.decides),
        splits=len(mine),
        smallest_w_splits=w0_splits,
        curve=tuple(curve),
        selected_w=selected,
        rule=rule_text(config.threshold, config.select_on) + _bound_words(config),
        seconds=time.perf_counter() - t0,
        budget_exhausted=over_budget,
        copies=config.copies,
        select_on=tuple(config.select_on),
        candidates=tuple(records),
        chosen=ranked[rank][0].label,
        chosen_because=_because(records, rank, selected is not None, ranked[rank][0].ranked),
        drivers=drivers,
        one_release_z=config.one_release_z,
        release_gap=config.release_gap,
        rows_scored=rows_scored(mine[0], config),
    )


def _w0_text(label: str, w0: float, split: int, point) -> str:
    """The progress line of a candidate's smallest-w point after ``split`` (0-based)."""
    return f"audit: {label}, w = {w0:g} (split {split + 1}), AUC {point.auc:.3f}, density AUC {point.density_auc:.3f}"


class _Fits:
    """Each candidate's maps on splits 2 to S trained at once (``family.fit_many``, e.g. one
    batched network: :mod:`engine.flows.ensemble`), the splits' rows drawn before the first
    split. On a small table the audit trains a flow on each of its twelve splits; one at a
    time, those tiny trainings cost their per-step overhead eleven times (issue 31)."""

    def __init__(self, family: Family, X_model: np.ndarray, config: AuditConfig, rng) -> None:
        n = len(X_model)
        self.perms = [rng.permutation(n) for _ in range(config.splits)]
        self.rows = [X_model[split_rows(n, config, p)[0]] for p in self.perms[1:]]
        self.fit_many = getattr(family, "fit_many")  # noqa: B009
        self.maps: dict[str, list[LatentMap]] = {}

    def get(self, label: str, s: int) -> LatentMap:
        """Split ``s``'s (1 to S - 1) map of candidate ``label``."""
        if label not in self.maps:
            self.maps[label] = self.fit_many(label, self.rows)
        return self.maps[label][s - 1]

    def fitter(self, label: str, s: int) -> FitMap:
        return lambda rows: self.get(label, s)


def _fitter(family: Family, label: str) -> FitMap:
    return lambda rows: family.fit(label, rows)


def _over(t0: float, config: AuditConfig) -> bool:
    return config.time_budget_s is not None and time.perf_counter() - t0 > config.time_budget_s


def _refit(split: Split, X_model: np.ndarray, lmap: LatentMap, config: AuditConfig) -> Split:
    """The same split (members, holdout, density references) with another candidate's map."""
    latent = np.asarray(lmap.to_latent(X_model[split.train]), dtype=np.float64)
    return replace(split, lmap=lmap, latent=np.tile(latent, (config.copies, 1)))


def _record(
    cand: Candidate, rank: int, point, passes: bool, config: AuditConfig
) -> CandidateRecord:
    """The record of an audited candidate (chosen when it passes or is the floor)."""
    upper = max(a.auc + a.se for a in (binding_attack(point, (n,)) for n in config.select_on))
    if passes:
        status, why = (
            "chosen",
            f"passes the limit {config.threshold:g} at w = {point.w:g} (highest AUC + SE {upper:.3f})",
        )
    elif cand.floor:
        status, why = (
            "chosen",
            f"the floor (a Gaussian copula) fails the limit at w = {point.w:g} (AUC + SE {upper:.3f}): nothing can be released",
        )
    else:
        status, why = (
            "dropped",
            f"gives members away at w = {point.w:g} (AUC + SE {upper:.3f} against the limit {config.threshold:g})",
        )
    return CandidateRecord(
        cand.label, rank + 1, cand.floor, cand.val_nll, status, why, point.w, point.auc,
        point.auc_se, point.density_auc, point.density_auc_se, point.released_auc,
        point.released_auc_se,
    )  # fmt: skip


def _not_audited(cand: Candidate, rank: int) -> CandidateRecord:
    return CandidateRecord(
        cand.label, rank + 1, cand.floor, cand.val_nll, "not audited",
        "ranked below the chosen model on validation rows (" + (cand.ranked or "lower") + ")",
    )  # fmt: skip


def _because(records: Sequence[CandidateRecord], rank: int, released: bool, why: str) -> str:
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
