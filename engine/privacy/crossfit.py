"""The membership audit's one driver: the candidate models at the smallest w, then the chosen
one over the grid, measured until the standard error at the decision reaches its target.

Three designs cut the variance of the estimated risk for the same compute (issue 43):

* **Cross-fitting.** A round splits the rows into K folds (K = 1 / holdout share, 5 by
  default); a model is trained with each fold held out, so every real row is scored once as a
  non-member and K - 1 times as a member. One random 80/20 split leaves the AUC resting on
  which 20 % happened to be held out. Further rounds draw fresh folds.
* **Common random numbers.** Repeat i of a split draws its latent noise (and its rows to
  score) from ``default_rng((split seed, i))`` at every w (:func:`engine.privacy.attacks.
  draw_common`), so neighbouring points of the curve differ by the effect of w alone.
* **One fitted curve.** The risk rises with w, so each attack's AUC is fitted as one monotone
  curve over every split and repeat, and its SE is pooled over the points the fit pools
  (:mod:`engine.privacy.decision`), instead of point by point with "every smaller w must pass".

The candidates (:mod:`engine.privacy.family`) are taken in ranking order at the smallest w on
the same splits; the first whose bound is below the limit is chosen (the floor, a Gaussian
copula, also when its estimate is too uncertain to call, see ``decision.decide``). The chosen
one is measured over the whole grid on the first round, then refined between the chosen grid
w and the next; the points up to two grid steps above the choice (the *deciding range*) get
every round and repeat. Rounds (cross-fitting) or repeats (one split) are added while the SE
of the deciding attack's fit at the decision exceeds the target and the budget allows.

Why by hand: no library audits a generator over a parameter with re-fitted split models; the
parts used are scipy (nearest neighbours, ranks, the isotonic fit) and torch (the flows).

References: METHOD.md section 5; Chernozhukov et al. (2018) cross-fitting; Glasserman & Yao
(1992) common random numbers.

Example:
    >>> class Id:
    ...     def to_latent(self, X): return X
    ...     def from_latent(self, Z): return Z
    >>> from engine.privacy.candidates import SingleMap
    >>> X = np.random.default_rng(0).standard_normal((300, 2))
    >>> res = run_crossfit_audit(X, X, SingleMap(lambda rows: Id()), config=AuditConfig(
    ...     grid=(0.0, 0.3, 0.6, 0.9), refine=False, crossfit=True), rng=np.random.default_rng(1))
    >>> res.splits, res.selected_w is not None and res.selected_w < 0.9
    (5, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from engine.privacy.attacks import (
    ROC_FPR,
    Split,
    draw_common,
    fold_rows,
    make_split,
    rows_scored,
    split_rows,
)
from engine.privacy.audit_result import (
    MAX_REPEATS,
    MIN_REPEATS,
    AuditConfig,
    AuditResult,
    validate_audit_inputs,
)
from engine.privacy.candidates import because, candidate_record, not_audited
from engine.privacy.decision import (
    Decision,
    FittedCurve,
    bounds_at,
    decide,
    monotone_fit,
    rule_words,
    se_at,
)
from engine.privacy.measure import ONE_REPEAT_NOTE, CurvePoint, Score, score_draw  # noqa: F401
from engine.privacy.release import LatentMap, identity
from engine.progress import (
    NEVER_CANCELLED,
    AuditPointDone,
    CancelToken,
    ProgressFn,
    no_progress,
    report,
)

BATCH_ROWS = 16_384  # synthetic rows decoded in one pass (a larger split: one point a pass)
ATTACK_FIELDS = {"distance": "distance", "density": "density", "released": "released"}


@dataclass
class Book:
    """One candidate's measurements: its splits (``rounds[i]``: the round of ``splits[i]``),
    the repeats each split gets on the deciding range, and every :class:`Score` by (split,
    repeat, w)."""

    label: str
    floor: bool
    splits: list[Split] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    reps: int = 1
    scores: dict[tuple[int, int, float], Score] = field(default_factory=dict)
    refined: set[float] = field(default_factory=set)

    @property
    def round_count(self) -> int:
        return max(self.rounds) + 1 if self.rounds else 0

    def ws(self) -> list[float]:
        return sorted({w for _, _, w in self.scores})

    def values(self, attack: str, ws: Sequence[float]) -> np.ndarray:
        """Units x ws of ``attack``'s AUC: the splits (each its mean over repeats) when there
        are two or more, else the repeats of the one split; NaN where not measured."""
        col = {w: j for j, w in enumerate(ws)}
        if len(self.splits) >= 2:
            sums = np.zeros((len(self.splits), len(ws)))
            counts = np.zeros_like(sums)
            for (s, _, w), sc in self.scores.items():
                if w in col:
                    sums[s, col[w]] += getattr(sc, attack)
                    counts[s, col[w]] += 1
            with np.errstate(invalid="ignore"):
                return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        reps = 1 + max((r for _, r, _ in self.scores), default=0)
        out = np.full((reps, len(ws)), np.nan)
        for (_, r, w), sc in self.scores.items():
            if w in col:
                out[r, col[w]] = getattr(sc, attack)
        return out

    def curves(self, attacks: Sequence[str], ws: Sequence[float] | None = None) -> dict:
        ws = list(ws) if ws is not None else self.ws()
        return {a: monotone_fit(ws, self.values(a, ws)) for a in attacks}


def run_crossfit_audit(
    X_model: np.ndarray,
    X_dist: np.ndarray,
    family,
    *,
    to_dist: Callable[[np.ndarray], np.ndarray] = identity,
    config: AuditConfig = AuditConfig(),  # noqa: B008 (frozen)
    rng: np.random.Generator,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    groups: dict[str, list[int]] | None = None,
) -> AuditResult:
    """Audit the family's candidates and choose w (module docstring). ``groups``: each table
    column's distance-space columns, to name the columns that drive a refusal."""
    X_model, X_dist = np.asarray(X_model, dtype=np.float64), np.asarray(X_dist, dtype=np.float64)
    validate_audit_inputs(X_model, X_dist, config)
    with ThreadPoolExecutor(1, thread_name_prefix="audit-decode") as pool:
        driver = _Driver(X_model, X_dist, family, to_dist, config, rng, progress, cancel, pool)
        return driver.run(groups)


class _Driver:
    """The state of one audit run (see :func:`run_crossfit_audit`)."""

    def __init__(self, X_model, X_dist, family, to_dist, config, rng, progress, cancel, pool):
        self.X_model, self.X_dist, self.family, self.to_dist = X_model, X_dist, family, to_dist
        self.config, self.rng, self.progress, self.cancel, self.pool = (
            config, rng, progress, cancel, pool,
        )  # fmt: skip
        self.t0 = time.perf_counter()
        self.grid = sorted({float(w) for w in config.grid})
        self.attacks = tuple(
            a for a in config.select_on if a != "released" or config.released_columns > 0
        ) or ("distance",)
        self.round_rows: list[list[tuple[np.ndarray, np.ndarray]]] = []
        self.base: list[list[Split]] = []  # each round's splits as first made (density refs)
        self.ranked: list = []
        per_round = config.split_count
        self.min_reps = config.repeats or max(1 if per_round >= 2 else 2, -(-MIN_REPEATS // per_round))
        self.max_reps = config.repeats or max(self.min_reps, MAX_REPEATS // per_round)
        self.done, self.planned = 0, per_round * (len(self.grid) + config.refine_points)
        self.over_budget = False
        self.advise = True  # at a refusal, measure whether more rows would help

    # ------------------------------------------------------------------ the run
    def run(self, groups) -> AuditResult:
        config, w0 = self.config, self.grid[0]
        records, rank = [], 0
        while True:  # the candidates in ranking order at the smallest w
            book = self._book(rank)
            cand = self.ranked[rank][0]
            d = self._settle_w0(book)
            last = cand.floor or rank + 1 >= len(self.ranked)
            if d.w is not None and hasattr(self.family, "on_chosen"):
                self.family.on_chosen(cand.label)  # something will be released: it can start
            w0_splits = len(book.splits)
            if d.w is not None or last:
                # the grid; its rounds near the decision also measure the smallest w again,
                # and a flow whose bound there then goes over the limit is dropped after all
                d, cap = self._grid(book, d)
            records.append((cand, book, d))
            if d.w is not None or last:
                break
            rank += 1
        curve = self._curve(book, d, cap)
        drivers: tuple[tuple[str, float], ...] = ()
        if d.w is None and groups:
            from engine.privacy.drivers import column_drivers

            drivers = column_drivers(
                book.splits, self.X_dist, groups, w0, self.to_dist, config, self.rng
            )
        advise = d.w is None and book.floor and self.advise
        rows_advice = self._rows_advice(book, d) if advise else None
        checker = self._checker(book, d)
        self.progress(1.0, "audit: done")
        cand_records = [
            candidate_record(c, i, b.curves(self.attacks, [w0]), dd, config)
            for i, (c, b, dd) in enumerate(records)
        ]
        cand_records += [not_audited(c, i) for i, (c, _) in enumerate(self.ranked) if i > rank]
        return AuditResult(
            threshold=config.threshold,
            holdout_fraction=config.holdout_fraction,
            repeats=min(p.repeats for p in curve if p.decides),
            splits=len(book.splits),
            smallest_w_splits=w0_splits,
            curve=tuple(curve),
            selected_w=d.w,
            rule=rule_words(config.threshold, self.attacks, config.release_gap, config.z),
            seconds=time.perf_counter() - self.t0,
            budget_exhausted=self.over_budget,
            copies=config.copies,
            select_on=self.attacks,
            candidates=tuple(cand_records),
            chosen=cand.label,
            chosen_because=because(cand_records, rank, d.w is not None, cand.ranked),
            drivers=drivers,
            release_gap=config.release_gap,
            rows_scored=rows_scored(book.splits[0], config),
            decision=d,
            rounds=book.round_count,
            crossfit=config.crossfit,
            z=config.z,
            se_target=config.se_target,
            checker=checker,
            rows_advice=rows_advice,
        )

    def _rows_advice(self, book: Book, d: Decision) -> Any:
        """The floor audited again at the smallest w on a random half of the rows: whether
        more rows would lower the attack (:mod:`engine.privacy.advice`). Under 100 rows the
        half is too small to audit."""
        from engine.privacy.advice import RowsAdvice

        n = len(self.X_model)
        w0 = self.grid[0]
        fit = max(c.at(w0)[0] for c in book.curves(self.attacks, [w0]).values())
        if n < 100:
            return RowsAdvice(n, 0, fit, math.nan, self.config.threshold)
        self.progress(0.99, "audit: measuring whether more rows would help")
        half = np.sort(self.rng.choice(n, n // 2, replace=False))
        floor = _FloorOnly(self.family, book.label)
        sub = replace(self.config, grid=(w0,), refine=False, time_budget_s=None)
        driver = _Driver(
            self.X_model[half], self.X_dist[half], floor, self.to_dist, sub, self.rng,
            no_progress, self.cancel, self.pool,
        )  # fmt: skip
        driver.advise = False
        res = driver.run(None)
        p = res.curve[0]
        half_fit = max(v for v in (p.auc_fit, p.density_fit, p.released_fit) if v == v)
        return RowsAdvice(n, len(half), fit, half_fit, self.config.threshold)

    def _checker(self, book: Book, d: Decision) -> Any:
        """What one checker's attack on the released file may read, beside a fresh real
        sample (:mod:`engine.privacy.checker`): on the released columns where the audit has
        them, else in its own distance space; None when nothing is released."""
        from engine.privacy.checker import checker_statement

        if d.w is None:
            return None
        k = self.X_dist.shape[1] - self.config.released_columns
        attack = "released" if self.config.released_columns else "distance"
        rows = self.X_dist[:, k:] if self.config.released_columns else self.X_dist
        fit, se = book.curves((attack,))[attack].at(d.w)
        gap = self.config.release_gap if attack == "released" and d.w > self.grid[0] else 0.0
        return checker_statement(
            rows, d.w, fit + gap, se, self.rng, limit=self.config.threshold
        )

    def _settle_w0(self, book: Book) -> Decision:
        """The candidate's decision at the smallest w, with more rounds where one round cannot
        tell: the floor (copulas fit in a moment) up to ``floor_rounds`` before a refusal, a
        flow up to ``max_rounds`` while its estimate is under ``limit - REFUSAL_MARGIN`` and
        only its margin is over the limit (a flow dropped on one round's noise costs fidelity:
        ACTG 320, seed 10, both flows dropped at 0.560-0.566 on five folds, the copula then
        released at w = 0.05)."""
        w0, limit = self.grid[0], self.config.threshold
        self._measure(book, [w0], range(len(book.splits)), book.reps)
        d = self._decide(book, [w0])
        most = max(self.config.floor_rounds, self.config.max_rounds) if book.floor else (
            self.config.max_rounds
        )

        def unsure(d: Decision) -> bool:
            point = max(c.at(w0)[0] for c in book.curves(self.attacks, [w0]).values())
            return book.floor or point < limit

        while not d.upper < limit and unsure(d) and book.round_count < most:
            if self._over():
                break
            self._add_round(book, [w0])
            d = self._decide(book, [w0])
        return d

    def _grid(self, book: Book, d0: Decision) -> tuple[Decision, float]:
        """The grid on the first round, the refinement, and rounds (folds) or repeats (one
        split) near the decision until the SE target; returns the decision and the top of the
        deciding range."""
        config, w0 = self.config, self.grid[0]
        first = [i for i, r in enumerate(book.rounds) if r == 0]
        self._measure(book, self.grid[1:], first, 1)  # the overview: one repeat a split
        if d0.w is None or d0.uncertain:  # the smallest w decides; the rest is shown only
            return self._decide(book, book.ws()) if d0.w is None else d0, w0
        while True:
            d = self._decide(book, book.ws())
            cap = self._cap(d)
            if config.refine and d.w is not None and d.w < self.grid[-1]:
                lo = max(g for g in self.grid if g <= d.w + 1e-12)
                hi = min(g for g in self.grid if g > lo)
                pts = np.linspace(lo, hi, config.refine_points + 2)[1:-1]
                book.refined |= {round(float(x), 6) for x in pts}
            every = [w for w in sorted(set(self.grid) | book.refined) if w <= cap + 1e-12]
            if self._measure(book, every, range(len(book.splits)), min(book.reps, self.min_reps)):
                continue  # the deciding range at the first repeats: decide again
            if self._measure(book, self._near(book, d, cap), range(len(book.splits)), book.reps):
                continue  # new measurements near the decision: decide again
            se = se_at(book.curves(self.attacks), d.w if d.w is not None else w0)
            if se <= config.se_target or self._over() or not self._grow(book, d, cap):
                return d, cap

    def _near(self, book: Book, d: Decision, cap: float) -> list[float]:
        """The w the units added near the decision measure: from two grid steps below the
        chosen w to ``cap`` (the whole grid has the first round's units, or on one split its
        first ``min_reps`` repeats; the fit pools a flat stretch over all of its units)."""
        ws = sorted(set(self.grid) | book.refined)
        lo = self.grid[0]
        if d.w is not None:
            below = [g for g in self.grid if g < d.w - 1e-12]
            lo = below[-2] if len(below) >= 2 else lo
        return [w for w in ws if lo - 1e-12 <= w <= cap + 1e-12]

    def _cap(self, d: Decision) -> float:
        """The top of the deciding range: two grid steps above the chosen w."""
        if d.w is None:
            return self.grid[0]
        above = [g for g in self.grid if g > d.w + 1e-12]
        return above[min(1, len(above) - 1)] if above else d.w

    def _grow(self, book: Book, d: Decision, cap: float) -> bool:
        """One more round of folds (cross-fitting: a unit is a split, and repeats on a split
        barely move its mean) or one more repeat (one split: a unit is a repeat); False when
        the allowance is spent."""
        if len(book.splits) >= 2:
            if book.round_count >= self.config.max_rounds:
                return False
            self._add_round(book, self._near(book, d, cap))
            return True
        if book.reps >= self.max_reps:
            return False
        book.reps += 1
        return True

    def _over(self) -> bool:
        budget = self.config.time_budget_s
        over = budget is not None and time.perf_counter() - self.t0 > budget
        self.over_budget |= over
        return over

    def _decide(self, book: Book, ws: Sequence[float]) -> Decision:
        c = self.config
        return decide(
            book.curves(self.attacks, ws), c.threshold, gap=c.release_gap, z=c.z,
            floor=book.floor,
        )  # fmt: skip

    # ------------------------------------------------------------------ splits and models
    def _rows(self, r: int) -> list[tuple[np.ndarray, np.ndarray]]:
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

    def _maps(self, label: str, rows: list[tuple[np.ndarray, np.ndarray]]) -> list[LatentMap]:
        """The candidate's map trained on each split's members (several at once where the
        family can: one batched network, :mod:`engine.flows.ensemble`)."""
        tables = [self.X_model[train] for train, _ in rows]
        if len(tables) >= 2 and hasattr(self.family, "fit_many"):
            return list(self.family.fit_many(label, tables))
        return [self.family.fit(label, t) for t in tables]

    def _book(self, rank: int) -> Book:
        """Candidate ``rank``'s book on round 0's splits (rank 0: the family ranked on the
        first split's members, the first candidate's maps on the rest)."""
        rows = self._rows(0)
        if rank == 0:
            self.cancel.raise_if_cancelled()
            self.progress(0.0, "audit: ranking the models on the first split")
            self.ranked = list(self.family.rank(self.X_model[rows[0][0]]))
        cand, first_map = self.ranked[rank]
        book = Book(cand.label, bool(cand.floor), reps=self.min_reps)
        maps = [first_map] + self._maps(cand.label, rows[1:])
        self._attach(book, 0, maps)
        return book

    def _add_round(self, book: Book, ws: Sequence[float]) -> None:
        """Fresh splits (folds) for ``book`` and its measurements at ``ws``."""
        self.cancel.raise_if_cancelled()
        r = book.round_count
        rows = self._rows(r)
        self.planned += len(rows) * len(ws)
        self._attach(book, r, self._maps(book.label, rows))
        self._measure(book, ws, [i for i, rr in enumerate(book.rounds) if rr == r], book.reps)

    def _attach(self, book: Book, r: int, maps: list[LatentMap]) -> None:
        """Round ``r``'s splits with ``maps``: the round's first splits are made once (their
        density references and seeds), later candidates reuse them with their own maps."""
        rows = self._rows(r)
        if len(self.base) <= r:
            made = [
                make_split(self.X_model, self.X_dist, lambda _x, m=m: m, self.config, self.rng,
                           rows=rw)
                for rw, m in zip(rows, maps, strict=True)
            ]  # fmt: skip
            self.base.append(made)
            splits = made
        else:
            splits = [self._refit(s, m) for s, m in zip(self.base[r], maps, strict=True)]
        book.splits.extend(splits)
        book.rounds.extend([r] * len(splits))

    def _refit(self, split: Split, lmap: LatentMap) -> Split:
        latent = np.asarray(lmap.to_latent(self.X_model[split.train]), dtype=np.float64)
        return replace(split, lmap=lmap, latent=np.tile(latent, (self.config.copies, 1)))

    # ------------------------------------------------------------------ measuring
    def _measure(self, book: Book, ws: Sequence[float], splits, reps: int) -> bool:
        """Score every (split, repeat < ``reps``, w in ``ws``) not yet scored; True if any."""
        any_new = False
        for s in splits:
            todo = [
                (float(w), r) for w in ws for r in range(reps) if (s, r, float(w)) not in book.scores
            ]
            if not todo:
                continue
            any_new = True
            split = book.splits[s]
            per_pass = max(1, BATCH_ROWS // max(1, len(split.latent)))
            draws = self._decoded(split, todo, per_pass)
            for (w, r), draw in zip(todo, draws, strict=True):
                self.cancel.raise_if_cancelled()
                book.scores[(s, r, w)] = score_draw(split, draw(), self.X_dist, self.config)
                if r == reps - 1 or (s, r + 1, w) in book.scores:
                    self._report(book, s, w)
        return any_new

    def _decoded(self, split: Split, todo: list[tuple[float, int]], per_pass: int) -> list:
        """A getter per point: small splits decode ``per_pass`` points in one pass; a large
        split decodes each point on the decode thread while the one before is scored."""
        if per_pass > 1:
            out: list = []
            for i in range(0, len(todo), per_pass):
                chunk = todo[i : i + per_pass]
                self.cancel.raise_if_cancelled()
                draws = draw_common(split, chunk, self.to_dist, self.config)
                out += [lambda d=d: d for d in draws]
            return out
        futures: list = [None] * len(todo)

        def submit(i: int) -> None:
            if i < len(todo) and futures[i] is None:
                futures[i] = self.pool.submit(
                    lambda p=todo[i]: draw_common(split, [p], self.to_dist, self.config)[0]
                )

        def getter(i: int):
            def get():
                submit(i)
                submit(i + 1)  # the next point decodes while this one is scored
                return futures[i].result()

            return get

        return [getter(i) for i in range(len(todo))]

    def _report(self, book: Book, s: int, w: float) -> None:
        self.done += 1
        at = [sc for (_, _, ww), sc in book.scores.items() if ww == w]
        dist = [sc.distance for sc in at]
        dens = [sc.density for sc in at]
        se = _se(dist), _se(dens)
        r = book.rounds[s]
        where = f"split {s + 1}" + (f", round {r + 1}" if r else "")
        text = (
            f"audit: w = {w:g} ({book.label}, {where}), AUC {np.mean(dist):.3f}, "
            f"density AUC {np.mean(dens):.3f}"
        )
        partial = AuditPointDone(
            w, s + 1, float(np.mean(dist)), se[0], float(np.mean(dens)), se[1], len(at),
            w in book.refined,
        )  # fmt: skip
        report(self.progress, min(self.done / max(self.planned, 1), 0.99), text, partial)

    # ------------------------------------------------------------------ the curve
    def _curve(self, book: Book, d: Decision, cap: float) -> list[CurvePoint]:
        """Every measured w as a :class:`CurvePoint`: raw means, the fits and the bounds."""
        ws = book.ws()
        all_fits = book.curves(_measured(book), ws)  # bounds of every attack, deciding or not
        points = []
        for w in ws:
            at = [sc for (_, _, ww), sc in book.scores.items() if ww == w]
            bounds = bounds_at(all_fits, w, gap=self.config.release_gap, z=self.config.z,
                               smallest=self.grid[0])  # fmt: skip
            points.append(_point(w, at, all_fits, bounds, w in book.refined, w <= cap + 1e-12))
        return points


class _FloorOnly:
    """The family's floor alone (its label), for the rows advice's audit of half the rows."""

    def __init__(self, family: Any, label: str) -> None:
        self.family, self.label = family, label

    def rank(self, X: np.ndarray) -> list:
        from engine.privacy.candidates import Candidate

        return [(Candidate(self.label, floor=True), self.family.fit(self.label, X))]

    def fit(self, label: str, X: np.ndarray) -> LatentMap:
        return self.family.fit(self.label, X)


def _measured(book: Book) -> list[str]:
    """The attacks with a finite AUC in the book (the released one only where it ran)."""
    first = next(iter(book.scores.values()))
    return [a for a in ("distance", "density", "released") if math.isfinite(getattr(first, a))]


def _se(values: list[float]) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan


def _point(
    w: float, at: list[Score], fits: dict[str, FittedCurve], bounds: dict[str, float],
    refined: bool, decides: bool,
) -> CurvePoint:  # fmt: skip
    """One curve point from its measurements ``at``, the fitted curves and the bounds at w."""
    nan = math.nan

    def raw(attack: str) -> tuple[float, float]:
        v = np.array([getattr(sc, attack) for sc in at], dtype=float)
        if not np.isfinite(v).all():
            return nan, nan
        return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0

    def fitted(attack: str) -> tuple[float, float]:
        fit = fits.get(attack)
        return (nan, nan) if fit is None else fit.at(w)

    (auc, auc_sd), (dens, dens_sd), (rel, rel_sd) = (
        raw(a) for a in ("distance", "density", "released")
    )
    tpr = np.mean([sc.tpr for sc in at], axis=0)
    at_fpr = dict(zip(ROC_FPR, tpr, strict=False))
    step = max(1, len(ROC_FPR) // 50)
    unit_se = {a: _unit_se(fits.get(a), w) for a in ("distance", "density", "released")}
    return CurvePoint(
        w=float(w), auc=auc, auc_sd=auc_sd, auc_se=unit_se["distance"],
        tpr_at_1pct_fpr=float(at_fpr[0.01]), tpr_at_01pct_fpr=float(at_fpr[0.001]),
        density_auc=dens, density_auc_sd=dens_sd, density_auc_se=unit_se["density"],
        repeats=len(at), refined=refined,
        roc_fpr=tuple(float(x) for x in ROC_FPR[::step]),
        roc_tpr=tuple(float(x) for x in tpr[::step]),
        released_auc=rel, released_auc_sd=rel_sd, released_auc_se=unit_se["released"],
        decides=decides,
        auc_fit=fitted("distance")[0], auc_fit_se=fitted("distance")[1],
        density_fit=fitted("density")[0], density_fit_se=fitted("density")[1],
        released_fit=fitted("released")[0], released_fit_se=fitted("released")[1],
        upper_distance=bounds.get("distance", nan), upper_density=bounds.get("density", nan),
        upper_released=bounds.get("released", nan),
        units=fits["distance"].units[fits["distance"].ws.index(w)] if "distance" in fits else 0,
    )  # fmt: skip


def _unit_se(fit: FittedCurve | None, w: float) -> float:
    """The SE of the raw mean at ``w`` over units (NaN without a fit or with one unit)."""
    if fit is None:
        return math.nan
    return fit.raw_se[fit.ws.index(w)]
