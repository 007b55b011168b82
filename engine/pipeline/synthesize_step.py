"""Audit over the w grid, choose w (or refuse) and hand over to the release.

References: docs/architecture.md; main paper Algorithm 1 and section 4.3.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np

from engine.pipeline.compare_step import fidelity_of
from engine.pipeline.config import (
    FLOOR_ROUNDS,
    FLOOR_ROUNDS_UP_TO,
    SPLIT_TWICE_UP_TO,
    Prepared,
    RunConfig,
    audit_rounds,
    make_rng,
)
from engine.pipeline.final_model import FinalBesideAudit
from engine.pipeline.record import build_audit_json
from engine.pipeline.release_step import release
from engine.pipeline.results import DPAudit, DPResult, RunResult
from engine.progress import (
    NEVER_CANCELLED,
    CancelToken,
    Partial,
    ProgressFn,
    labelled,
    no_progress,
    report,
    sub_progress,
)

# Shares of the progress bar, as measured (800-row demo table, 2 splits, CPU): the audit took
# 85 % of synthesize's time, and within a split training its flow about 30 %. Bars weighted
# by time keep the wizard's time left honest (it was twice the real time with 55 % and 50 %).
AUDIT_SHARE, TRAIN_SHARE = 0.85, 0.3
# Added to the released-columns attack's bound above the smallest w: the gap between the audit's
# split models and the released model (trained on every row). Issue 27 measured 0.013 against a
# checker's attack on released files; issue 43's oracle (benchmarks/bench_audit_power.py: the
# released model attacked with the audit's own attacks, 10 public tables x 10 splits) measured
# the audit's fitted AUC 0.010-0.015 under the release's below w = 0.5 and 0.000-0.008 at the
# w the tool chooses (0.5-0.8), with the 95 % bound's own margin 0.012-0.016 there. Keeping
# 0.013 on top left the mean chosen w 0.2 below the oracle's w* on actg and rossi (0.49 and 0.52
# against 0.70 and 0.75) with no run above it; without it, 3 runs in 100 above w* + 0.05.
RELEASE_GAP = 0.0
# The released-columns attack up to this many audited rows.
# Above it one released file's AUC spreads by under 0.005 and the two spaces differ only in how
# yes/no and category columns are scaled (on the 1,608-row demo both attacks agreed to 0.001 at
# every w), while its exact search per repeat cost 45 % of the 100,000-row run (101 -> 150 s).
RELEASED_ATTACK_UP_TO = 20_000
# Members and non-members the distance attack scores per repeat, each side (issue 31): a fresh
# random sample of each where a side holds more. Its sampling SD at an AUC near the limit is
# about 0.006 (sqrt((1/m + 1/h) / 12)), so the SE target of 0.01 is still met after the
# minimum three repeats. Measured on 100,000 x 10 rows (50,000 audited): the audit's
# neighbour search 96 -> 37 s, and 41 -> 24 s on the survival table (bench_pipeline.py).
SCORED_ROWS = 5_000

if TYPE_CHECKING:
    from engine.flows.train import FlowConfig
    from engine.privacy.audit import AuditResult
    from engine.privacy.family import Candidate
    from engine.privacy.release import LatentMap


class _AuditProgress:
    """One forward-only progress line for an audit: 90 % for the S splits (each split's share
    spent TRAIN_SHARE on training its flow, the rest on attacking its G grid values), 10 % for
    the R refinement values. ``run_family_audit`` reports its attacks as one count over all of
    them (S * (G + R) steps; the smallest w on every split first, then the rest of the grid)
    and the flow reports each fit separately; this maps both onto one line. Fits of a
    candidate dropped at the smallest w add no progress (the line waits)."""

    def __init__(self, progress: ProgressFn, splits: int, grid: int, refine: int) -> None:
        self.progress, self.splits, self.grid_len, self.refine_len = progress, splits, grid, refine
        self.fits = 0  # flows trained so far
        self.units = 0.0  # (split, w) attacks done so far
        self.shown = 0.0

    def _emit(self, fraction: float, text: str, partial: Partial | None = None) -> None:
        self.shown = max(self.shown, min(fraction, 1.0))
        report(self.progress, self.shown, text, partial)

    def _at(self, fits: float) -> float:
        S, G = self.splits, self.grid_len
        trained = min(fits, S) * TRAIN_SHARE
        return 0.9 * (trained + (1 - TRAIN_SHARE) * min(self.units, S * G) / G) / S

    def fit(self, fraction: float, text: str, partial: Partial | None = None) -> None:
        self._emit(self._at(self.fits - 1 + fraction), text, partial)

    def fits_from(self, first: int, count: int) -> ProgressFn:
        """The progress of ``count`` fits trained at once after the ``first``."""

        def inner(fraction: float, text: str, partial: Partial | None = None) -> None:
            self._emit(self._at(first + fraction * count), text, partial)

        return inner

    def grid(self, fraction: float, text: str, partial: Partial | None = None) -> None:
        S, G, R = self.splits, self.grid_len, self.refine_len
        self.units = fraction * S * (G + R)
        if fraction >= 1.0:
            self._emit(1.0, text, partial)
        elif self.units <= S * G + 1e-9:
            self._emit(self._at(self.fits), text, partial)
        else:
            self._emit(0.9 + 0.1 * min((self.units - S * G) / max(S * R, 1), 1.0), text, partial)


# Up to this many rows the final model trains after the audit, not beside it: its network is
# small (2 x 16 or 3 x 32 units, 128 rows a step), so a training step is Python calls holding
# the interpreter lock, and the two threads slow each other down. Measured on a 2-core
# machine (the re-run of synthesize, paired): 300 rows 2.77-3.78 s beside, 2.38-3.43 s after
# (4 of 4 pairs); 1,600 rows 5.68 s against 5.34 s on average (3 pairs); 10,000 rows 26.5 s
# against 27.3 s (beside ahead).
BESIDE_FROM_ROWS = 2_000


class _FamilyFitter:
    """The candidate family with the run's settings (:mod:`engine.privacy.family`): ranked on
    the first split's members (:func:`engine.flows.select.rank_family`), each candidate then
    trained with its own architecture on every split it is audited on."""

    def __init__(
        self,
        config: RunConfig,
        tracker: _AuditProgress,
        cancel: CancelToken,
        rows: int,
        final: FinalBesideAudit | None = None,
    ) -> None:
        self.config, self.tracker, self.cancel, self.rows = config, tracker, cancel, rows
        self.configs: dict[str, FlowConfig] = {}
        self.final = final

    def on_chosen(self, label: str) -> None:
        """The audit chose ``label`` at the smallest w: the final model can start training,
        beside the rest of the grid, on tables above :data:`BESIDE_FROM_ROWS` rows."""
        if self.final is not None and self.rows > BESIDE_FROM_ROWS:
            self.final.begin(self.configs[label])

    def rank(self, X: np.ndarray) -> list[tuple[Candidate, LatentMap]]:
        from engine.flows.select import family_recipe, rank_family
        from engine.privacy.family import Candidate

        self.tracker.fits += 1
        if self.final is not None and self.config.budget == "fast":
            flows = [c for c in family_recipe(*X.shape, table_rows=self.rows) if c.flows > 0]
            if len(flows) == 1:  # one flow to choose (large tables): its final model starts now
                self.final.begin(flows[0])
        ranked = rank_family(
            X,
            budget=self.config.budget,
            device=self.config.device,
            seed=self.config.seed,
            progress=labelled(self.tracker.fit, model="audit split 1"),
            cancel=self.cancel,
            table_rows=self.rows,
        )
        out: list[tuple[Candidate, LatentMap]] = []
        for flow, why in ranked:
            label = flow.config.label()
            self.configs[label] = flow.config
            out.append((Candidate(label, flow.config.flows == 0, flow.val_nll, why), flow))
        return out

    def fit(self, label: str, X: np.ndarray) -> LatentMap:
        from engine.flows.select import select_flow

        self.tracker.fits += 1
        return select_flow(
            X,
            budget=self.config.budget,
            device=self.config.device,
            seed=self.config.seed,
            progress=labelled(self.tracker.fit, model=f"audit split {self.tracker.fits}"),
            cancel=self.cancel,
            architecture=self.configs[label],
        )

    def fit_many(self, label: str, Xs: list[np.ndarray]) -> list[LatentMap]:
        """``fit`` on each table at once: one batched network (:mod:`engine.flows.ensemble`)."""
        from engine.flows.ensemble import train_flows

        first, count = self.tracker.fits, len(Xs)
        names = [f"audit split {first + 1 + i}" for i in range(count)]
        self.tracker.fits = first + count
        return list(
            train_flows(
                Xs,
                self.configs[label],
                device=self.config.device,
                seed=self.config.seed,
                progress=self.tracker.fits_from(first, count),
                cancel=self.cancel,
                names=names,
            )
        )


def _audit(
    prep: Prepared,
    rng: np.random.Generator,
    progress: ProgressFn,
    cancel: CancelToken,
    final: FinalBesideAudit | None = None,
) -> AuditResult:
    from engine.device import nn_method_for, resolve_device
    from engine.privacy.audit import AuditConfig
    from engine.privacy.family import run_family_audit
    from engine.privacy.released_space import ReleasedSpace

    cfg = prep.config
    enc = prep.encoder
    choice = resolve_device(cfg.device)  # probed once; an unusable explicit GPU stops here
    if choice.note:
        progress(0.0, choice.note)
    # Above audit_max_rows the audit runs on a random subsample. That errs on the safe side:
    # with fewer rows each member's synthetic partner stands out more among fewer neighbours,
    # and a flow fitted to fewer rows memorizes more, so both attacks' AUCs are higher and the
    # chosen w lower than on the full table. The record states the number of rows audited.
    real = prep.real
    if len(real) > cfg.audit_max_rows:
        real = real.iloc[np.sort(rng.choice(len(real), cfg.audit_max_rows, replace=False))]
    X_model = enc.transform(real, rng)
    # The audit's own distance space, then the released columns as a checker sees them (the
    # "released" attack, :mod:`engine.privacy.released_space`): one decode serves both.
    space = ReleasedSpace.fit(real) if len(real) <= RELEASED_ATTACK_UP_TO else None
    X_dist = enc.distance_space(real)
    if space is not None:
        X_dist = np.hstack([X_dist, space.transform(real)])

    def to_dist(rows: np.ndarray) -> np.ndarray:
        frame = enc.inverse_transform(rows).frame
        dist = enc.distance_space(frame)
        return dist if space is None else np.hstack([dist, space.transform(frame)])

    grid = tuple(
        sorted(
            set(cfg.w_grid)
            | ({cfg.forced_w} if cfg.forced_w is not None and cfg.forced_w < 1 else set())
        )
    )
    # Cross-fitted folds (a model trained with each fold held out) up to SPLIT_TWICE_UP_TO
    # rows, with rounds of fresh folds while the SE at the decision is above its target; one
    # split above (engine.privacy.crossfit).
    crossfit = len(real) <= SPLIT_TWICE_UP_TO
    # With M copies the audit's synthetic set is the union of M draws per member (what a
    # recipient of all M files holds), so the chosen w is the one safe for M copies.
    audit_cfg = AuditConfig(
        threshold=cfg.auc_max,
        grid=grid,
        repeats=cfg.repeats,
        splits=1,
        crossfit=crossfit,
        max_rounds=audit_rounds(len(real)),
        copies=cfg.copies,
        nn_method=nn_method_for(choice.device, X_dist.shape[1]),
        released_columns=0 if space is None else space.width,
        select_on=("distance", "density") + (() if space is None else ("released",)),
        release_gap=RELEASE_GAP,
        score_max_rows=SCORED_ROWS,
        floor_rounds=FLOOR_ROUNDS if len(real) <= FLOOR_ROUNDS_UP_TO else 0,
    )
    splits = audit_cfg.split_count
    refine = audit_cfg.refine_points if audit_cfg.refine else 0
    tracker = _AuditProgress(progress, splits, len(grid), refine)
    fitter = _FamilyFitter(cfg, tracker, cancel, len(prep.real), final)  # the recipe: all rows
    result = run_family_audit(
        X_model,
        X_dist,
        fitter,
        to_dist=to_dist,
        config=audit_cfg,
        rng=rng,
        progress=tracker.grid,
        cancel=cancel,
        groups=enc.distance_groups(),
    )
    return replace(result, architecture=fitter.configs.get(result.chosen or ""))


def synthesize(
    prep: Prepared, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED
) -> RunResult:
    """Audit, choose w, retrain on all rows, release and compare. Writes nothing."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    rng = make_rng(prep.config.seed)
    t0 = time.perf_counter()
    dp = prep.config.dp_epsilon is not None  # the DP release gets the last 20 %
    audit_end = AUDIT_SHARE * (0.8 if dp else 1.0)
    final = FinalBesideAudit(prep, rng, cancel)
    try:
        audit = _audit(prep, rng, sub_progress(progress, 0.0, audit_end), cancel, final)
        timings = {"audit_seconds": time.perf_counter() - t0}
        cancel.raise_if_cancelled()
        end = 0.8 if dp else 1.0
        result = release(
            prep,
            audit,
            progress=sub_progress(progress, audit_end, end),
            cancel=cancel,
            rng=rng,
            started=started,
            timings=timings,
            final=final if final.ready_for(audit) else None,
        )
    finally:
        final.stop()  # a refusal, a cancel or an error: the thread is not left running
    if dp:
        result = with_dp_release(result, rng, sub_progress(progress, 0.8, 1.0), cancel)
    return result


def with_dp_release(
    result: RunResult, rng: np.random.Generator, progress: ProgressFn, cancel: CancelToken
) -> RunResult:
    """Formal DP mode (issue 8): a DP-SGD flow, Flow Sampling from it, the same membership
    audit on it, and its model results beside the LNI release's."""
    from engine.privacy.dp.release import dp_membership_audit, dp_release

    prep, cfg = result.prepared, result.config
    if cfg.dp_epsilon is None:
        raise ValueError("with_dp_release needs a run in formal DP mode (dp_epsilon set)")
    t0 = time.perf_counter()
    dp = dp_release(
        prep,
        epsilon=cfg.dp_epsilon,
        delta=cfg.dp_delta,
        rng=rng,
        seed=cfg.seed,
        device=cfg.device,
        progress=sub_progress(progress, 0.0, 0.5),
        cancel=cancel,
    )
    dp_audit = dp_membership_audit(
        prep,
        epsilon=cfg.dp_epsilon,
        delta=cfg.dp_delta,
        rng=rng,
        seed=cfg.seed,
        device=cfg.device,
        repeats=cfg.repeats,
        progress=sub_progress(progress, 0.5, 0.95),
        cancel=cancel,
    )
    point = dp_audit.curve[0]
    info = DPResult(
        release=dp,
        audit=DPAudit(
            auc=point.auc,
            auc_sd=point.auc_sd,
            density_auc=point.density_auc,
            repeats=dp_audit.repeats,
        ),
        fidelity=fidelity_of(prep, (dp.synthetic,)),
        file=f"synthetic_dp.{cfg.file_format}",
    )
    timings = {**result.timings, "dp_seconds": time.perf_counter() - t0}
    release_info = replace(result.release, dp=info)
    out = replace(result, release=release_info, timings=timings, dp_synthetic=dp.synthetic)
    return replace(out, audit_json=build_audit_json(out))
