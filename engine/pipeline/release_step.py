"""The release at the chosen w: Latent Noise Injection, decoding, outlier protection, unique-copy
redraws, release metrics, epsilon and fidelity.

References: docs/architecture.md; main paper Algorithm 1 and section 4.3.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from engine.disclosure import CopyCheck, redraw_unique_copies
from engine.errors import PrivacyRefused
from engine.flows.generate import latent_noise_injection
from engine.pipeline.compare_step import fidelity_of, protection_effect, real_fit_beside
from engine.pipeline.config import Prepared, RunConfig, make_rng
from engine.pipeline.record import build_audit_json
from engine.pipeline.refusal import refusal_reason
from engine.pipeline.release_beside import Beside
from engine.pipeline.results import (
    Fidelity,
    ModelSummary,
    OutlierProtection,
    ProtectionEffect,
    Refusal,
    Release,
    RunResult,
    Verdict,
)
from engine.privacy.curve import above_choice
from engine.progress import (
    NEVER_CANCELLED,
    CancelToken,
    ProgressFn,
    labelled,
    no_progress,
    sub_progress,
)

if TYPE_CHECKING:
    from engine.encoding.encoder import Decoded
    from engine.encoding.layered import LayeredEncoder
    from engine.flows.train import TrainedFlow
    from engine.privacy.audit import AuditResult
    from engine.privacy.release import EpsilonStatement, ProtectResult, ReleaseMetrics


class _Refusal(PrivacyRefused):
    """A refusal in plain words (``reason``) with the command-line hint (``hint``) apart."""

    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(f"{reason}; {hint}")
        self.reason, self.hint = reason, hint


def _choose_w(cfg: RunConfig, audit: AuditResult) -> tuple[float, Verdict]:
    """The released w and the verdict; raises PrivacyRefused when nothing is safe."""
    selected = audit.selected_w
    if cfg.forced_w is not None:
        risky = above_choice(audit, cfg.forced_w)
        if risky and not (cfg.allow_risky or cfg.risk_acknowledged):
            raise _Refusal(*refusal_reason(cfg, audit))
        return cfg.forced_w, Verdict.RELEASED_WITH_OVERRIDE if risky else Verdict.RELEASED
    if selected is None:
        if not cfg.allow_risky:
            raise _Refusal(*refusal_reason(cfg, audit))
        return 0.0, Verdict.RELEASED_WITH_OVERRIDE
    return float(selected), Verdict.RELEASED


def release(
    prep: Prepared,
    audit: AuditResult,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    rng: np.random.Generator | None = None,
    flow: TrainedFlow | None = None,
    started: str | None = None,
    timings: dict[str, float] | None = None,
    disclosure_rule: bool = True,
    final: Any = None,
) -> RunResult:
    """The second half of a run, for an audit already done: choose w (``prep.config.forced_w``
    forces one; raising it above the audit's choice needs ``allow_risky`` or ``risk_acknowledged``),
    train the final flow on all rows (or reuse ``flow``), inject noise, decode, shuffle, measure,
    compare, and apply the disclosure rule (``engine.pipeline.disclosure_step``, which may lower w
    or refuse). The wizard calls this again when the user moves w. ``final``: the final model
    already training on a thread (``wait(progress)`` gives the flow, the model rows it trained on
    and its seconds; :mod:`engine.pipeline.final_model`)."""
    cfg = prep.config
    started = started or datetime.now(UTC).isoformat(timespec="seconds")
    timings = dict(timings or {})
    rng = rng if rng is not None else make_rng(cfg.seed)
    try:
        w, verdict = _choose_w(cfg, audit)
    except _Refusal as refusal:
        return refused_result(prep, audit, started, timings, refusal.reason, refusal.hint)

    near = None
    if flow is None and final is not None:  # trained beside the audit, on rows drawn then
        progress(0.0, "the final model on all rows, trained beside the audit")
        flow, X_model, timings["train_seconds"] = final.wait(
            labelled(sub_progress(progress, 0.0, 0.7), model="final model")
        )
        near = getattr(final, "near", None)  # found on its thread once it had trained
    else:
        X_model = prep.encoder.transform(prep.real, rng)
    if flow is None:
        flow = _train_final(prep, audit, X_model, progress, cancel, timings)
    cancel.raise_if_cancelled()

    progress(0.7, f"generating synthetic rows at w = {w:.2f}")
    t0 = time.perf_counter()
    # the real model does not wait for the synthetic rows (begun beside the audit, if it was)
    real_fit = getattr(final, "real_fit", None) or real_fit_beside(prep)
    with Beside(len(prep.real)) as beside:  # the metrics and disclosure measures on threads
        drawn = _draw_copies(prep, flow, X_model, w, rng, cancel)
        released, metrics, eps = _measure(prep, flow, X_model, w, rng, drawn, near, beside)
        timings["release_seconds"] = time.perf_counter() - t0
        record_order = drawn.decoded[0][1].frame.set_axis(prep.real.index[drawn.decoded[0][0]])
        first = None
        if disclosure_rule and not drawn.protects:  # nothing else draws from rng until it is done
            from engine.pipeline.disclosure_step import measured_beside

            first = beside.run(measured_beside, prep, record_order, rng)
        cancel.raise_if_cancelled()

        progress(0.8, "comparing real and synthetic results")
        t0 = time.perf_counter()
        fidelity = fidelity_of(prep, released, real_fit)
        timings["fidelity_seconds"] = time.perf_counter() - t0
        protection = None
        if drawn.protects:
            effect = protection_effect(prep, flow, X_model, w, rng, released[0], fidelity)
            protection = _protection(drawn.protects, w, effect)
        release_info = Release(
            w=float(w),
            chosen_by=_chosen_by(cfg, audit, w),
            copies=cfg.copies,
            clipped={k: int(v) for k, v in drawn.decoded[0][1].clip_counts.items()},
            non_finite=drawn.non_finite,
            metrics=metrics(),
            epsilon=eps,
            binding=audit.binding(w) if audit is not None else None,
            copies_audited=getattr(audit, "copies", 1),
            exact_copies=CopyCheck.total(drawn.copy_checks),
            protect_outliers=protection,
        )
        result = RunResult(
            config=cfg,
            prepared=prep,
            audit=audit,
            model=ModelSummary.of(flow),
            release=release_info,
            synthetic=released[0],
            copies=released,
            fidelity=fidelity,
            verdict=verdict,
            timings=timings,
            started=started,
            history=tuple(getattr(flow, "history", ())),
            flow=flow,
            record_order=record_order,
        )
        if disclosure_rule:  # identity and attribute disclosure; may lower w or refuse (issue 29)
            from engine.pipeline.disclosure_step import apply_disclosure_rule

            steps = (release, refused_result)
            result = apply_disclosure_rule(result, rng, progress, cancel, steps, first)
    progress(1.0, "done")
    return replace(result, audit_json=build_audit_json(result))


def _train_final(
    prep: Prepared,
    audit: AuditResult,
    X_model: np.ndarray,
    progress: ProgressFn,
    cancel: CancelToken,
    timings: dict[str, float],
) -> TrainedFlow:
    """The final flow on all rows, with the audited architecture (no new search)."""
    from engine.flows.select import select_flow

    cfg = prep.config
    progress(0.0, "training the final model on all rows")
    t0 = time.perf_counter()
    flow = select_flow(
        X_model,
        budget=cfg.budget,
        device=cfg.device,
        seed=cfg.seed,
        progress=labelled(sub_progress(progress, 0.0, 0.7), model="final model"),
        cancel=cancel,
        architecture=getattr(audit, "architecture", None),
    )
    timings["train_seconds"] = time.perf_counter() - t0
    return flow


@dataclass
class _Drawn:
    """The copies drawn at one w: per copy, which records kept a finite row and the decoded
    table; the exact-copy checks, the outlier protections and the non-finite repairs."""

    decoded: list[tuple[np.ndarray, Decoded]] = field(default_factory=list)
    copy_checks: list[CopyCheck] = field(default_factory=list)
    protects: list[ProtectResult] = field(default_factory=list)
    non_finite: dict[str, int] = field(
        default_factory=lambda: {"rows_redrawn": 0, "rows_dropped": 0}
    )


def _draw_copies(
    prep: Prepared,
    flow: TrainedFlow,
    X_model: np.ndarray,
    w: float,
    rng: np.random.Generator,
    cancel: CancelToken,
) -> _Drawn:
    """Every copy drawn the same way: outlier protection when asked for, rows that decode to
    NaN/inf redrawn or dropped, rows that copy a unique real row redrawn."""
    from engine.encoding.encoder import redraw_non_finite
    from engine.privacy.audit import protect_outliers

    cfg, enc = prep.config, prep.encoder
    # the real rows' distance space only where outlier protection needs it (a million rows:
    # 100 MB and 3 s otherwise spent for nothing)
    X_dist = enc.distance_space(prep.real) if cfg.protect_outliers and w > 0 else None

    def to_dist(rows: np.ndarray) -> np.ndarray:
        return enc.distance_space(enc.inverse_transform(rows).frame)

    def redraw(idx: np.ndarray) -> np.ndarray:
        return latent_noise_injection(flow, X_model[idx], w, rng)

    drawn = _Drawn()
    for _ in range(cfg.copies):
        cancel.raise_if_cancelled()
        w_rows: float | np.ndarray = w
        if X_dist is not None:
            protected = protect_outliers(flow, X_model, X_dist, w, to_dist=to_dist, rng=rng)
            drawn.protects.append(protected)
            synth_model, w_rows = protected.synthetic_model_rows, protected.w_per_record
        else:
            synth_model = latent_noise_injection(flow, X_model, w, rng)
        # With outlier protection a redraw at the global w would undo the record's lower w.
        synth_model, repaired = redraw_non_finite(
            synth_model, redraw, tries=0 if drawn.protects else 5
        )
        drawn.non_finite = {k: drawn.non_finite[k] + repaired[k] for k in drawn.non_finite}
        finite = np.isfinite(synth_model).all(axis=1)  # rows still NaN/inf are dropped, counted
        synth_model, check = release_without_unique_copies(
            flow,
            X_model[finite],
            synth_model[finite],
            w if not drawn.protects else np.asarray(w_rows)[finite],
            rng,
            enc,
            prep.real,
        )
        drawn.copy_checks.append(check)
        drawn.decoded.append((finite, enc.inverse_transform(synth_model)))
    return drawn


def _measure(
    prep: Prepared,
    flow: TrainedFlow,
    X_model: np.ndarray,
    w: float,
    rng: np.random.Generator,
    drawn: _Drawn,
    near: np.ndarray | None,
    beside: Beside,
) -> tuple[tuple[pd.DataFrame, ...], Callable[[], ReleaseMetrics], EpsilonStatement]:
    """Shuffle the copies; the release metrics over each record's closest copy (what a holder
    of all copies sees; begun on ``beside``, their getter returned) and epsilon for that many
    copies. ``near``: the real rows' neighbour distances when known
    (:func:`engine.privacy.release.real_neighbours` of every real row)."""
    from engine.device import resolve_device
    from engine.flows.generate import shuffled
    from engine.privacy.audit import epsilon_for_copies, epsilon_statement, release_metrics
    from engine.privacy.release import metric_rows

    cfg, enc = prep.config, prep.encoder
    X_dist = enc.distance_space(prep.real)
    kept_in_all = np.logical_and.reduce([finite for finite, _ in drawn.decoded])
    aligned = []  # each copy's rows for the records kept in every copy, in record order
    for finite, dec in drawn.decoded:
        rows_of_record = np.cumsum(finite) - 1
        aligned.append(enc.distance_space(dec.frame)[rows_of_record[kept_in_all]])
    real, closest = X_dist[kept_in_all], _closest_copy(X_dist[kept_in_all], aligned)
    rows = metric_rows(len(real), rng)  # the metrics' one draw, taken here: they run beside
    near, device = near if kept_in_all.all() else None, resolve_device(cfg.device).device
    metrics = beside.run(
        partial(release_metrics, rng=rng, rows=rows, device=device, near=near), real, closest
    )
    copies = [dec.frame for _, dec in drawn.decoded]
    released = tuple(c.iloc[shuffled(len(c), rng)].reset_index(drop=True) for c in copies)
    eps = epsilon_for_copies(
        epsilon_statement(flow.to_latent(X_model), w, delta=1.0 / len(prep.real)), cfg.copies
    )
    return released, metrics, eps


def _protection(
    protects: list[ProtectResult], w: float, effect: ProtectionEffect
) -> OutlierProtection:
    """The worst copy's counts before and after outlier protection."""
    return OutlierProtection(
        at_risk_before=max(int(p.at_risk_before) for p in protects),
        at_risk_after=max(int(p.at_risk_after) for p in protects),
        records_with_lower_w=max(int(np.sum(p.w_per_record < w)) for p in protects),
        copies_protected=len(protects),
        effect=effect,
    )


def _closest_copy(real: np.ndarray, copies: list[np.ndarray]) -> np.ndarray:
    """Row i: the copy of record i that lies closest to it (distance space).

    Example:
        >>> real = np.zeros((2, 1))
        >>> copies = [np.array([[1.0], [-0.1]]), np.array([[0.5], [2.0]])]
        >>> _closest_copy(real, copies).ravel().tolist()
        [0.5, -0.1]
    """
    if len(copies) == 1:
        return copies[0]
    stack = np.stack(copies)  # (M, n, d)
    own = np.sqrt(((stack - real[None]) ** 2).sum(-1))
    return stack[np.argmin(own, axis=0), np.arange(len(real))]


def _chosen_by(cfg: RunConfig, audit: AuditResult, w: float) -> str:
    if cfg.forced_w is None:
        found = audit.selected_w is not None
        return "the audit: the largest w meeting the AUC limit" if found else "override: w = 0"
    if not above_choice(audit, w):
        return "the user, at or below the audited choice"
    return "the user, above the audited choice (risk acknowledged)"


def refused_result(
    prep: Prepared, audit: AuditResult, started: str, timings: dict[str, float], why: str, hint: str
) -> RunResult:
    result = RunResult(
        config=prep.config,
        prepared=prep,
        audit=audit,
        model=None,
        release=Refusal(reason=why, hint=hint, binding=audit.binding(prep.config.forced_w)),
        synthetic=None,
        copies=(),
        fidelity=Fidelity(),
        verdict=Verdict.REFUSED,
        timings=timings,
        started=started,
    )
    return replace(result, audit_json=build_audit_json(result))


def release_without_unique_copies(
    flow: TrainedFlow,
    X_model: np.ndarray,
    synth_model: np.ndarray,
    w: float | np.ndarray,
    rng: np.random.Generator,
    encoder: LayeredEncoder,
    real: pd.DataFrame,
) -> tuple[np.ndarray, CopyCheck]:
    """:func:`engine.disclosure.redraw_unique_copies` for a Latent Noise Injection release: the
    affected rows' real partners get fresh noise from
    :func:`engine.flows.generate.latent_noise_injection` (same w, or each row's own w when outlier
    protection set one per row; w = 0, a fresh draw from the model, for rows still copying after
    half the tries)."""
    w_rows = np.asarray(w, dtype=float)

    def redraw(rows: np.ndarray, last_resort: bool) -> np.ndarray:
        w_here = w_rows[rows] if w_rows.ndim == 1 else float(w_rows)
        if last_resort:
            w_here = 0.0 * np.asarray(w_here)
        return latent_noise_injection(flow, X_model[rows], w_here, rng)

    def decode(model_rows: np.ndarray) -> pd.DataFrame:
        return encoder.inverse_transform(model_rows).frame

    return redraw_unique_copies(synth_model, redraw, decode, real)
