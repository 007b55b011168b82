"""The membership audit's one driver: the candidate models at the smallest w, then the chosen
one over the grid, measured until the standard error at the decision reaches its target.

Three designs cut the variance of the estimated risk for the same compute (issue 43):

* **Cross-fitting.** A round splits the rows into K folds (K = 1 / holdout share, 5 by
  default); a model is trained with each fold held out, so every real row is scored once as a
  non-member, not only the 20 % one random split happened to hold out.
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

Why by hand: no library audits a generator over a parameter with re-fitted split models (scipy
does the neighbours, ranks and isotonic fit; torch the flows).

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
from dataclasses import replace
from typing import Any

import numpy as np

import engine.privacy.book as book_module
from engine.privacy.attacks import rows_scored
from engine.privacy.audit_result import (
    MAX_REPEATS,
    MIN_REPEATS,
    AuditConfig,
    AuditResult,
    validate_audit_inputs,
)
from engine.privacy.book import Book, Meter, curve_points, decoded, report_point
from engine.privacy.candidates import FloorOnly, because, candidate_record, not_audited
from engine.privacy.decision import Decision, decide, rule_words, se_at
from engine.privacy.measure import score_draw
from engine.privacy.release import LatentMap, identity
from engine.privacy.rounds import Rounds
from engine.progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress
from engine.threads import pool


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
    with pool(1, name="audit-decode") as decoder:
        driver = _Driver(X_model, X_dist, family, to_dist, config, rng, progress, cancel, decoder)
        return driver.run(groups)


class _Driver:
    """The state of one audit run (see :func:`run_crossfit_audit`)."""

    def __init__(self, X_model, X_dist, family, to_dist, config, rng, progress, cancel, pool):
        self.X_model, self.X_dist, self.family, self.to_dist = X_model, X_dist, family, to_dist
        self.config, self.rng, self.progress, self.cancel, self.pool = (
            config,
            rng,
            progress,
            cancel,
            pool,
        )
        self.t0 = time.perf_counter()
        self.grid = sorted({float(w) for w in config.grid})
        self.attacks = tuple(
            a for a in config.select_on if a != "released" or config.released_columns > 0
        ) or ("distance",)
        self.rounds = Rounds(X_model, X_dist, family, config, rng)  # shared by every candidate
        self.ranked: list = []
        per_round = config.split_count
        self.min_reps = config.repeats or max(
            1 if per_round >= 2 else 2, -(-MIN_REPEATS // per_round)
        )
        self.max_reps = config.repeats or max(self.min_reps, MAX_REPEATS // per_round)
        self.meter = Meter(
            per_round * (len(self.grid) + config.refine_points),
            max(config.max_rounds, config.floor_rounds),
        )
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
        curve = curve_points(book, cap, self.grid[0], self.config.release_gap, self.config.z)
        drivers: tuple[tuple[str, float], ...] = ()
        if d.w is None and groups:
            from engine.privacy.drivers import column_drivers

            drivers = column_drivers(
                book.splits, self.X_dist, groups, w0, self.to_dist, config, self.rng
            )
        advise = d.w is None and book.floor and self.advise
        rows_advice, checker = (
            self._rows_advice(book, d) if advise else None,
            self._checker(book, d),
        )
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
        floor = FloorOnly(self.family, book.label)
        sub = replace(self.config, grid=(w0,), refine=False, time_budget_s=None)
        driver = _Driver(
            self.X_model[half],
            self.X_dist[half],
            floor,
            self.to_dist,
            sub,
            self.rng,
            no_progress,
            self.cancel,
            self.pool,
        )
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
        return checker_statement(rows, d.w, fit + gap, se, self.rng, limit=self.config.threshold)

    def _settle_w0(self, book: Book) -> Decision:
        """The candidate's decision at the smallest w, with more rounds where one cannot tell:
        the floor up to ``floor_rounds`` before a refusal, a flow up to ``max_rounds`` while its
        estimate is under the limit and only its margin over it (noise must not choose)."""
        w0, limit = self.grid[0], self.config.threshold
        self._measure(book, [w0], range(len(book.splits)), book.reps)
        d = self._decide(book, [w0])
        most = (
            max(self.config.floor_rounds, self.config.max_rounds)
            if book.floor
            else (self.config.max_rounds)
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

    def _over(self) -> bool:  # the time budget, if any, spent
        budget = self.config.time_budget_s
        over = budget is not None and time.perf_counter() - self.t0 > budget
        self.over_budget |= over
        return over

    def _decide(self, book: Book, ws: Sequence[float]) -> Decision:
        c = self.config
        return decide(
            book.curves(self.attacks, ws),
            c.threshold,
            gap=c.release_gap,
            z=c.z,
            floor=book.floor,
        )

    # ------------------------------------------------------------------ splits and models
    def _book(self, rank: int) -> Book:
        """Candidate ``rank``'s book on round 0's splits (rank 0: the family ranked on the
        first split's members, the first candidate's maps on the rest)."""
        rows = self.rounds.rows(0)
        if rank == 0:
            self.cancel.raise_if_cancelled()
            self.progress(0.0, "audit: ranking the models on the first split")
            self.ranked = list(self.family.rank(self.X_model[rows[0][0]]))
        cand, first_map = self.ranked[rank]
        book = Book(cand.label, bool(cand.floor), reps=self.min_reps)
        maps = [first_map] + self.rounds.maps(cand.label, rows[1:])
        self._attach(book, 0, maps)
        return book

    def _add_round(self, book: Book, ws: Sequence[float]) -> None:
        """Fresh splits (folds) for ``book`` and its measurements at ``ws``."""
        self.cancel.raise_if_cancelled()
        r = book.round_count
        rows = self.rounds.rows(r)
        self.meter.add(len(rows) * len(ws))
        self._attach(book, r, self.rounds.maps(book.label, rows))
        self._measure(book, ws, [i for i, rr in enumerate(book.rounds) if rr == r], book.reps)

    def _attach(self, book: Book, r: int, maps: list[LatentMap]) -> None:
        splits = self.rounds.splits(r, maps)
        book.splits.extend(splits)
        book.rounds.extend([r] * len(splits))

    # ------------------------------------------------------------------ measuring
    def _measure(self, book: Book, ws: Sequence[float], splits, reps: int) -> bool:
        """Score every (split, repeat < ``reps``, w in ``ws``) not yet scored; True if any."""
        any_new = False
        for s in splits:
            todo = [
                (float(w), r)
                for w in ws
                for r in range(reps)
                if (s, r, float(w)) not in book.scores
            ]
            if not todo:
                continue
            any_new = True
            split = book.splits[s]
            per_pass = max(1, book_module.BATCH_ROWS // max(1, len(split.latent)))
            draws = decoded(
                split, todo, per_pass, self.pool, self.to_dist, self.config, self.cancel
            )
            for (w, r), draw in zip(todo, draws, strict=True):
                self.cancel.raise_if_cancelled()
                book.scores[(s, r, w)] = score_draw(split, draw(), self.X_dist, self.config)
                if r == reps - 1 or (s, r + 1, w) in book.scores:
                    report_point(book, s, w, self.meter, self.progress)
        return any_new
