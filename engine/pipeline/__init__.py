"""The whole job, from a frozen config to a frozen result: the one function both faces call.

::

    read -> infer schema -> complete cases -> encode -> audit (train on 80 %, w grid)
         -> choose w -> retrain on all rows -> release (LNI, decode, clip, shuffle)
         -> release metrics, epsilon -> fidelity -> write (atomic)

The command line (``engine.cli``) and the desktop wizard both call :func:`run_pipeline` (or
its two halves :func:`prepare` and :func:`synthesize`) with a progress callback and a cancel
token; neither re-implements a step. Outputs are written only after every computation has
finished, each file atomically, so a failed or cancelled run leaves no partial file.

References: ARCHITECTURE.md; main paper Algorithm 1 and section 4.3.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from engine import __version__
from engine.errors import InputError, PrivacyRefused
from engine.progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress, sub_progress

FORMATS = ("csv", "xlsx", "parquet", "sav", "dta")
BUDGETS = ("fast", "default", "thorough")
DEFAULT_GRID = tuple(round(0.05 * i, 2) for i in range(20))
SPLIT_TWICE_UP_TO = 20_000  # rows; above this one split (training dominates the run time)
AUDIT_MAX_ROWS = (
    50_000  # larger tables are audited on a random subsample (conservative, see _audit)
)


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs; the wizard and the CLI both build one of these."""

    input: Path | str  # kept as given: a URL must reach the reader intact to be refused
    out: Path | None = None
    sheet: str | int | None = None
    missing_codes: tuple[str, ...] = ()
    subset: tuple[str, str] | None = None  # (column, value): keep only these rows (one site)
    time: str | None = None
    event: str | None = None
    drop: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    kinds: tuple[tuple[str, str], ...] = ()
    bounds: tuple[tuple[str, float | None, float | None], ...] = ()
    auc_max: float = 0.55
    w: float | None = None
    w_grid: tuple[float, ...] = DEFAULT_GRID
    repeats: int | None = None
    audit_max_rows: int = AUDIT_MAX_ROWS
    seed: int | None = None
    device: str = "auto"
    fmt: str = "csv"
    budget: str = "fast"
    analysis: str | None = None
    outcome: str | None = None
    covariates: tuple[str, ...] = ()
    per: tuple[tuple[str, float], ...] = ()
    allow_risky: bool = False
    risk_acknowledged: bool = False  # the wizard's explicit acknowledgement for a raised w
    protect_outliers: bool = False
    copies: int = 1
    report: bool = True
    dp_epsilon: float | None = None  # formal DP mode: also release Flow Sampling from a DP-SGD flow
    dp_delta: float | None = None  # default 1 / n^1.1
    input_label: str | None = None  # e.g. "demo cohort, ARIC F"

    def validate(self) -> None:
        """Raise :class:`InputError` for options that cannot work, before any heavy work."""
        if not 0.5 < self.auc_max <= 1.0:
            raise InputError(
                f"--auc-max {self.auc_max}: the AUC limit must be above 0.5 (a coin toss) and at most 1"
            )
        if self.w is not None and not 0.0 <= self.w <= 1.0:
            raise InputError(f"--w {self.w}: the perturbation weight must be between 0 and 1")
        bad = [v for v in self.w_grid if not 0.0 <= v < 1.0]
        if bad or not self.w_grid:
            raise InputError(
                f"--w-grid: values must lie in 0..1 (1 excluded); got {list(self.w_grid)}"
            )
        if self.fmt not in FORMATS:
            raise InputError(f"--format {self.fmt}: choose one of {', '.join(FORMATS)}")
        if self.budget not in BUDGETS:
            raise InputError(f"--budget {self.budget}: choose one of {', '.join(BUDGETS)}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise InputError(f"--device {self.device}: choose auto, cpu or cuda")
        if self.audit_max_rows < 200:
            raise InputError(f"--audit-max-rows {self.audit_max_rows}: audit at least 200 rows")
        if self.copies < 1 or self.copies > 50:
            raise InputError(f"--copies {self.copies}: choose between 1 and 50")
        if self.dp_epsilon is not None and not 0.0 < self.dp_epsilon <= 100.0:
            raise InputError(
                f"--dp-epsilon {self.dp_epsilon}: choose a value above 0 (e.g. 1 to 10)"
            )
        if self.dp_delta is not None and not 0.0 < self.dp_delta < 1.0:
            raise InputError(f"--dp-delta {self.dp_delta}: choose a value between 0 and 1")
        if self.analysis not in (None, "cox", "ols", "logistic"):
            raise InputError(f"--analysis {self.analysis}: choose cox, ols or logistic")


@dataclass(frozen=True)
class Prepared:
    """The result of reading, schema inference and encoding (the wizard's first pages)."""

    config: RunConfig
    table: Any  # engine.tables.read.LoadedTable
    schema: Any  # engine.tables.schema.Schema
    real: pd.DataFrame  # complete cases of the synthesized columns, input order
    rows_dropped: dict[str, Any]
    encoder: Any  # engine.tables.encoder.TableEncoder (fitted)


@dataclass(frozen=True)
class RunResult:
    """Everything a run produced. ``synthetic`` is in released (shuffled) order."""

    config: RunConfig
    prepared: Prepared
    audit: Any  # engine.privacy.audit.AuditResult
    model: dict[str, Any]
    release: dict[str, Any]
    synthetic: pd.DataFrame | None
    copies: tuple[pd.DataFrame, ...]
    fidelity: dict[str, Any]
    verdict: str  # released | refused | released with override
    timings: dict[str, float]
    started: str
    outputs: dict[str, str] = field(default_factory=dict)
    audit_json: dict[str, Any] = field(default_factory=dict)
    history: tuple[tuple[int, float, float], ...] = ()
    flow: Any = field(default=None, repr=False, compare=False)  # in memory only, never exported
    dp_synthetic: pd.DataFrame | None = None  # formal DP mode's Flow Sampling release


def make_rng(seed: int | None) -> np.random.Generator:
    """Seeded generator for reproducible audits, else the OS's secure randomness."""
    return np.random.default_rng(seed if seed is not None else secrets.randbits(128))


def load_table(config: RunConfig) -> Any:
    """Read the input file and keep the selected rows (``config.subset``, e.g. one site)."""
    from engine.tables.read import read_table

    table = read_table(config.input, sheet=config.sheet, missing_codes=config.missing_codes)
    if config.subset is None:
        return table
    column, value = config.subset
    frame = table.frame
    if column not in frame.columns:
        raise InputError(f"{table.path.name}: no column '{column}' to select rows by")
    frame = frame.loc[frame[column].astype(str) == str(value)].reset_index(drop=True)
    if frame.empty:
        raise InputError(f"{table.path.name}: no rows with {column} = '{value}'")
    return replace(table, frame=frame)


def schema_for(config: RunConfig, table: Any) -> Any:
    """Column kinds and roles for the table, with the user's overrides from ``config``."""
    from engine.tables.schema import infer_schema

    return infer_schema(
        table,
        time=config.time,
        event=config.event,
        drop=config.drop,
        keep=config.keep,
        kinds=dict(config.kinds) or None,
        bounds={name: (lo, hi) for name, lo, hi in config.bounds} or None,
    )


def prepare(config: RunConfig, progress: ProgressFn = no_progress) -> Prepared:
    """Read the file, infer the schema, keep complete cases and fit the encoder."""
    from engine.tables.encoder import TableEncoder

    config.validate()
    progress(0.0, "reading the file")
    table = load_table(config)
    progress(0.5, "recognising column kinds")
    schema = schema_for(config, table)
    if config.dp_epsilon is not None:  # refuse before any training when bounds are missing
        from engine.privacy.dp.bounds import resolve_bounds

        resolve_bounds(schema, {name: (lo, hi) for name, lo, hi in config.bounds})
    encoder = TableEncoder(schema)
    real, rows_dropped = encoder.complete_cases(table.frame)
    encoder.fit(real)
    progress(1.0, "data ready")
    return Prepared(config, table, schema, real, rows_dropped, encoder)


class _AuditProgress:
    """One forward-only progress line for an audit: 90 % for the S splits (each split's share
    spent half on training its flow, half on attacking its G grid values), 10 % for the R
    refinement values. ``run_audit`` reports its attacks as one count over all of them
    (S * (G + R) steps) and the flow reports each fit separately; this maps both onto one line.
    """

    def __init__(self, progress: ProgressFn, splits: int, grid: int, refine: int) -> None:
        self.progress, self.splits, self.grid_len, self.refine_len = progress, splits, grid, refine
        self.fits = 0  # flows trained so far (the current split is fits - 1)
        self.shown = 0.0

    def _emit(self, fraction: float, text: str) -> None:
        self.shown = max(self.shown, min(fraction, 1.0))
        self.progress(self.shown, text)

    def fit(self, fraction: float, text: str) -> None:
        self._emit(0.9 * (self.fits - 1 + 0.5 * fraction) / self.splits, text)

    def grid(self, fraction: float, text: str) -> None:
        S, G, R = self.splits, self.grid_len, self.refine_len
        done = fraction * S * (G + R)
        if self.fits == 0:  # "fitting the map on split 1": nothing done yet
            self._emit(0.0, text)
        elif fraction >= 1.0:
            self._emit(1.0, text)
        elif done <= S * G + 1e-9:
            split = self.fits - 1
            within = min(max((done - split * G) / G, 0.0), 1.0)
            self._emit(0.9 * (split + 0.5 + 0.5 * within) / S, text)
        else:
            self._emit(0.9 + 0.1 * min((done - S * G) / max(S * R, 1), 1.0), text)


class _FlowFitter:
    """Trains a flow with the run's settings; handed to the audit as its ``fit_map``."""

    def __init__(self, config: RunConfig, tracker: _AuditProgress, cancel: CancelToken) -> None:
        self.config, self.tracker, self.cancel = config, tracker, cancel
        self.architecture_: Any = None  # chosen on the first split, reused on the others

    def __call__(self, X: np.ndarray) -> Any:
        from engine.flows.select import select_flow

        self.tracker.fits += 1
        flow = select_flow(
            X,
            budget=self.config.budget,
            device=self.config.device,
            seed=self.config.seed,
            progress=self.tracker.fit,
            cancel=self.cancel,
            architecture=self.architecture_,
        )
        if self.architecture_ is None:
            self.architecture_ = flow.config
        return flow


def _audit(
    prep: Prepared, rng: np.random.Generator, progress: ProgressFn, cancel: CancelToken
) -> Any:
    from engine.privacy.audit import AuditConfig, run_audit
    from engine.device import nn_method_for, resolve_device

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
    X_dist = enc.distance_space(real)

    def to_dist(rows: np.ndarray) -> np.ndarray:
        return enc.distance_space(enc.inverse_transform(rows).frame)

    grid = tuple(sorted(set(cfg.w_grid) | ({cfg.w} if cfg.w is not None and cfg.w < 1 else set())))
    # Two fresh train/holdout splits (the flow is retrained for each) where that is cheap, so
    # the spread of the AUC reflects the choice of split and not only the noise draws.
    splits = 2 if len(real) <= SPLIT_TWICE_UP_TO else 1
    # With M copies the audit's synthetic set is the union of M draws per member (what a
    # recipient of all M files holds), so the chosen w is the one safe for M copies.
    audit_cfg = AuditConfig(
        threshold=cfg.auc_max, grid=grid, repeats=cfg.repeats, splits=splits, copies=cfg.copies,
        nn_method=nn_method_for(choice.device, X_dist.shape[1]),
    )  # fmt: skip
    refine = audit_cfg.refine_points if audit_cfg.refine else 0
    tracker = _AuditProgress(progress, splits, len(grid), refine)
    fitter = _FlowFitter(cfg, tracker, cancel)
    result = run_audit(
        X_model,
        X_dist,
        fitter,
        to_dist=to_dist,
        config=audit_cfg,
        rng=rng,
        progress=tracker.grid,
        cancel=cancel,
    )
    return replace(result, architecture=fitter.architecture_)


class _Refusal(PrivacyRefused):
    """A refusal in plain words (``reason``, for the report and the wizard) with the
    command-line hint (``hint``) kept apart, since words a person reads never name a flag."""

    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(f"{reason}; {hint}")
        self.reason, self.hint = reason, hint


def refusal_reason(cfg: RunConfig, audit: Any) -> tuple[str, str]:
    """(plain reason, command-line hint) when nothing may be released, naming the attack that
    decided: at a forced w, the attack that binds there; otherwise the attack that failed first
    (at the smallest w that failed), with its mean ± SE."""
    selected = audit.selected_w
    copies = f" with {cfg.copies} copies of every record" if cfg.copies > 1 else ""
    if cfg.w is not None:
        binding = audit.binding(cfg.w)
        meets = "no tested w meets it" if selected is None else f"w = {selected:.2f} meets it"
        return (
            f"at the requested w = {cfg.w:g}{copies} the {binding.quote(cfg.auc_max)} "
            f"is not safely below it ({meets})",
            "lower --w or add --allow-risky to override",
        )
    failed = audit.binding(None)
    where = (
        ""
        if failed is None
        else f": already at w = {failed.w:.2f} the {failed.quote(cfg.auc_max)} failed the limit"
    )
    return (
        f"no perturbation weight kept the membership attacks below the AUC limit "
        f"{cfg.auc_max:g}{copies}{where}; nothing was exported",
        "add --allow-risky to export at w = 0 anyway",
    )


def _choose_w(cfg: RunConfig, audit: Any) -> tuple[float, str]:
    """The released w and the verdict; raises PrivacyRefused when nothing is safe."""
    selected = audit.selected_w
    if cfg.w is not None:
        risky = selected is None or cfg.w > selected + 1e-9
        if risky and not (cfg.allow_risky or cfg.risk_acknowledged):
            raise _Refusal(*refusal_reason(cfg, audit))
        return cfg.w, "released with override" if risky else "released"
    if selected is None:
        if not cfg.allow_risky:
            raise _Refusal(*refusal_reason(cfg, audit))
        return 0.0, "released with override"
    return float(selected), "released"


def synthesize(
    prep: Prepared, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED
) -> RunResult:
    """Audit, choose w, retrain on all rows, release and compare. Writes nothing."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    rng = make_rng(prep.config.seed)
    t0 = time.perf_counter()
    audit = _audit(prep, rng, sub_progress(progress, 0.0, 0.55), cancel)
    timings = {"audit_seconds": time.perf_counter() - t0}
    cancel.raise_if_cancelled()
    end = 1.0 if prep.config.dp_epsilon is None else 0.8
    result = release(
        prep, audit, progress=sub_progress(progress, 0.55, end), cancel=cancel, rng=rng,
        started=started, timings=timings,
    )  # fmt: skip
    if prep.config.dp_epsilon is not None:
        result = with_dp_release(result, rng, sub_progress(progress, 0.8, 1.0), cancel)
    return result


def with_dp_release(
    result: RunResult, rng: np.random.Generator, progress: ProgressFn, cancel: CancelToken
) -> RunResult:
    """Formal DP mode (issue 8): a DP-SGD flow, Flow Sampling from it, the same membership
    audit on it, and its model results beside the LNI release's."""
    from engine.privacy.dp.release import dp_membership_audit, dp_release

    prep, cfg = result.prepared, result.config
    assert cfg.dp_epsilon is not None  # only called in DP mode
    t0 = time.perf_counter()
    dp = dp_release(
        prep, epsilon=cfg.dp_epsilon, delta=cfg.dp_delta, rng=rng, seed=cfg.seed,
        device=cfg.device, progress=sub_progress(progress, 0.0, 0.5), cancel=cancel,
    )  # fmt: skip
    dp_audit = dp_membership_audit(
        prep, epsilon=cfg.dp_epsilon, delta=cfg.dp_delta, rng=rng, seed=cfg.seed,
        device=cfg.device, repeats=cfg.repeats, progress=sub_progress(progress, 0.5, 0.95),
        cancel=cancel,
    )  # fmt: skip
    point = dp_audit.curve[0]
    info = {
        **dp.to_dict(),
        "audit": {
            "auc": point.auc,
            "auc_sd": point.auc_sd,
            "density_auc": point.density_auc,
            "repeats": dp_audit.repeats,
        },
        "fidelity": _fidelity(prep, (dp.synthetic,)),
        "file": f"synthetic_dp.{cfg.fmt}",
    }
    timings = {**result.timings, "dp_seconds": time.perf_counter() - t0}
    release_info = {**result.release, "dp": info}
    out = replace(result, release=release_info, timings=timings, dp_synthetic=dp.synthetic)
    return replace(out, audit_json=build_audit_json(out))


def release(
    prep: Prepared,
    audit: Any,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    rng: np.random.Generator | None = None,
    flow: Any = None,
    started: str | None = None,
    timings: dict[str, float] | None = None,
) -> RunResult:
    """The second half of a run, for an audit already done: choose w (``prep.config.w`` forces
    one; raising it above the audit's choice needs ``allow_risky`` or ``risk_acknowledged``),
    train the final flow on all rows (or reuse ``flow``), inject noise, decode, shuffle,
    measure and compare. The wizard calls this again when the user moves w."""
    from engine.privacy.audit import (
        epsilon_for_copies,
        epsilon_statement,
        protect_outliers,
        release_metrics,
    )
    from engine.device import resolve_device
    from engine.disclosure import CopyCheck, release_without_unique_copies
    from engine.tables.encoder import redraw_non_finite
    from engine.flows.select import select_flow
    from engine.flows.generate import latent_noise_injection, shuffled

    cfg = prep.config
    started = started or datetime.now(timezone.utc).isoformat(timespec="seconds")
    timings = dict(timings or {})
    rng = rng if rng is not None else make_rng(cfg.seed)
    enc = prep.encoder
    try:
        w, verdict = _choose_w(cfg, audit)
    except _Refusal as refusal:
        return _refused(prep, audit, started, timings, refusal.reason, refusal.hint)

    X_model = enc.transform(prep.real, rng)
    if flow is None:
        progress(0.0, "training the final model on all rows")
        t0 = time.perf_counter()
        flow = select_flow(
            X_model,
            budget=cfg.budget,
            device=cfg.device,
            seed=cfg.seed,
            progress=sub_progress(progress, 0.0, 0.7),
            cancel=cancel,
            architecture=getattr(audit, "architecture", None),  # the audited one, no new search
        )
        timings["train_seconds"] = time.perf_counter() - t0
    cancel.raise_if_cancelled()

    progress(0.7, f"generating synthetic rows at w = {w:.2f}")
    t0 = time.perf_counter()
    X_dist = enc.distance_space(prep.real)

    def to_dist(rows: np.ndarray) -> np.ndarray:
        return enc.distance_space(enc.inverse_transform(rows).frame)

    # Every copy is drawn the same way (with outlier protection when asked for; rows that decode
    # to NaN/inf redrawn or dropped; rows that copy a unique real row redrawn), and the release
    # metrics take, for each record, its closest copy: what a holder of all M sees.
    protects: list[Any] = []
    decoded_copies = []
    copy_checks = []
    non_finite = {"rows_redrawn": 0, "rows_dropped": 0}
    kept_in_all = np.ones(len(X_model), dtype=bool)
    for _ in range(cfg.copies):
        cancel.raise_if_cancelled()
        w_rows: Any = w
        if cfg.protect_outliers and w > 0:
            protects.append(protect_outliers(flow, X_model, X_dist, w, to_dist=to_dist, rng=rng))
            synth_model = protects[-1].synthetic_model_rows
            w_rows = protects[-1].w_per_record
        else:
            synth_model = latent_noise_injection(flow, X_model, w, rng)

        def redraw(idx: np.ndarray) -> np.ndarray:
            return latent_noise_injection(flow, X_model[idx], w, rng)

        # With outlier protection a redraw at the global w would undo the record's lower w.
        synth_model, nf = redraw_non_finite(synth_model, redraw, tries=0 if protects else 5)
        non_finite = {k: non_finite[k] + nf[k] for k in non_finite}
        finite = np.isfinite(synth_model).all(axis=1)  # rows still NaN/inf are dropped, counted
        kept_in_all &= finite
        synth_model, check = release_without_unique_copies(
            flow,
            X_model[finite],
            synth_model[finite],
            w if not protects else np.asarray(w_rows)[finite],
            rng,
            enc,
            prep.real,
        )
        copy_checks.append(check)
        decoded_copies.append((finite, enc.inverse_transform(synth_model)))
    decoded = decoded_copies[0][1]
    copy_check = CopyCheck.total(copy_checks)
    aligned = []  # each copy's rows for the records kept in every copy, in record order
    for finite, dec in decoded_copies:
        rows_of_record = np.cumsum(finite) - 1
        aligned.append(enc.distance_space(dec.frame)[rows_of_record[kept_in_all]])
    metrics = release_metrics(
        X_dist[kept_in_all], _closest_copy(X_dist[kept_in_all], aligned), rng=rng,
        device=resolve_device(cfg.device).device,
    )  # fmt: skip
    copies = [dec.frame for _, dec in decoded_copies]
    released = tuple(c.iloc[shuffled(len(c), rng)].reset_index(drop=True) for c in copies)
    eps = epsilon_for_copies(
        epsilon_statement(flow.to_latent(X_model), w, delta=1.0 / len(prep.real)), cfg.copies
    )
    timings["release_seconds"] = time.perf_counter() - t0
    cancel.raise_if_cancelled()

    progress(0.8, "comparing real and synthetic results")
    t0 = time.perf_counter()
    fidelity = _fidelity(prep, released)
    timings["fidelity_seconds"] = time.perf_counter() - t0
    release_info = {
        "w": float(w),
        "chosen_by": _chosen_by(cfg, audit, w),
        "rows": int(len(released[0])),
        "copies": cfg.copies,
        "shuffled": True,
        "clipped": {k: int(v) for k, v in decoded.clip_counts.items()},
        "non_finite": non_finite,
        **metrics.to_dict(),
        "metrics_over": "the closest of all copies per record" if cfg.copies > 1 else "one copy",
        "epsilon": {**eps.to_dict(), "copies": cfg.copies},
        **_binding_info(audit, w),
        "exact_copies": copy_check.to_dict(),
    }
    if protects:
        release_info["protect_outliers"] = {
            "at_risk_before": max(int(p.at_risk_before) for p in protects),
            "at_risk_after": max(int(p.at_risk_after) for p in protects),
            "records_with_lower_w": max(int(np.sum(p.w_per_record < w)) for p in protects),
            "copies_protected": len(protects),
            "effect": _protection_effect(prep, flow, X_model, w, rng, released[0], fidelity),
        }
    result = RunResult(
        config=cfg,
        prepared=prep,
        audit=audit,
        model=flow.to_dict(),
        release=release_info,
        synthetic=released[0],
        copies=released,
        fidelity=fidelity,
        verdict=verdict,
        timings=timings,
        started=started,
        history=tuple(getattr(flow, "history", ())),
        flow=flow,
    )
    progress(1.0, "done")
    return replace(result, audit_json=build_audit_json(result))


def _closest_copy(real: np.ndarray, copies: list[np.ndarray]) -> np.ndarray:
    """Row i: the copy of record i that lies closest to it (distance space).

    Example:
        >>> real = np.zeros((2, 1))
        >>> _closest_copy(real, [np.array([[1.0], [-0.1]]), np.array([[0.5], [2.0]])]).ravel().tolist()
        [0.5, -0.1]
    """
    if len(copies) == 1:
        return copies[0]
    stack = np.stack(copies)  # (M, n, d)
    own = np.sqrt(((stack - real[None]) ** 2).sum(-1))
    return stack[np.argmin(own, axis=0), np.arange(len(real))]


def _binding_info(audit: Any, w: float) -> dict[str, Any]:
    """The attack that decides at the released w (for the record, the README and the summary)."""
    binding = audit.binding(w) if audit is not None and hasattr(audit, "binding") else None
    if binding is None:
        return {}
    return {
        "binding_attack": binding.attack,
        "binding_auc": binding.auc,
        "binding_auc_se": binding.se,
        "binding_auc_sd": binding.sd,
        "copies_audited": getattr(audit, "copies", 1),
    }


def _protection_effect(
    prep: Prepared,
    flow: Any,
    X_model: np.ndarray,
    w: float,
    rng: np.random.Generator,
    protected: pd.DataFrame,
    fidelity: dict[str, Any],
) -> dict[str, Any]:
    """What --protect-outliers cost in fidelity: the same measures for a plain release at the
    same w (never exported) beside the protected one."""
    from engine.flows.generate import latent_noise_injection

    plain = prep.encoder.inverse_transform(latent_noise_injection(flow, X_model, w, rng)).frame
    plain_fidelity = _fidelity(prep, (plain,))

    def coefficients(fid: dict[str, Any]) -> dict[str, float]:
        fit = ((fid.get("model") or {}).get("synthetic") or {}).get("coefficients", [])
        return {c["name"]: c.get("hr", c.get("or", c["estimate"])) for c in fit}

    def mean_shift(frame: pd.DataFrame) -> float:
        numeric = prep.real.select_dtypes("number").columns
        diff = (frame[numeric].mean() - prep.real[numeric].mean()).abs() / prep.real[numeric].std()
        return float(diff.max()) if len(numeric) else 0.0

    return {
        "model_without": coefficients(plain_fidelity),
        "model_with": coefficients(fidelity),
        "model_real": {
            c["name"]: c.get("hr", c.get("or", c["estimate"]))
            for c in ((fidelity.get("model") or {}).get("real") or {}).get("coefficients", [])
        },
        "largest_mean_shift_sd_without": mean_shift(plain),
        "largest_mean_shift_sd_with": mean_shift(protected),
    }


def _chosen_by(cfg: RunConfig, audit: Any, w: float) -> str:
    if cfg.w is None:
        return (
            "the audit: the largest w meeting the AUC limit"
            if audit.selected_w is not None
            else "override: w = 0"
        )
    if audit.selected_w is not None and w <= audit.selected_w + 1e-9:
        return "the user, at or below the audited choice"
    return "the user, above the audited choice (risk acknowledged)"


def _refused(
    prep: Prepared, audit: Any, started: str, timings: dict, why: str, hint: str
) -> RunResult:
    binding = audit.binding(prep.config.w)
    result = RunResult(
        config=prep.config,
        prepared=prep,
        audit=audit,
        model={},
        release={
            "w": None,
            "rows": 0,
            "refused": why,
            "refused_hint": hint,
            "binding_attack": None if binding is None else binding.attack,
            "binding_auc": None if binding is None else binding.auc,
            "binding_auc_se": None if binding is None else binding.se,
        },
        synthetic=None,
        copies=(),
        fidelity={},
        verdict="refused",
        timings=timings,
        started=started,
    )
    return replace(result, audit_json=build_audit_json(result))


def _fidelity(prep: Prepared, released: tuple[pd.DataFrame, ...]) -> dict[str, Any]:
    """Real vs synthetic statistics; empty when the stats module cannot run them."""
    from engine.stats.models import Analysis, ModelSpec, fidelity_report

    cfg = prep.config
    schema = prep.schema
    columns = [c.name for c in schema.synthesized()]
    spec = None
    if cfg.analysis is not None or (schema.time and schema.event):
        analysis = cfg.analysis or "cox"
        covariates = cfg.covariates or tuple(
            c for c in columns if c not in (schema.time, schema.event, cfg.outcome)
        )
        spec = ModelSpec(
            analysis=cast(Analysis, analysis),  # checked in RunConfig.__post_init__
            outcome=cfg.outcome,
            covariates=tuple(covariates),
            time=schema.time,
            event=schema.event,
            per=dict(cfg.per) or None,
        )
    report = fidelity_report(prep.real, released[0], spec, columns)
    out = report.to_dict()
    if len(released) > 1 and spec is not None and report.model_error is None:
        from engine.stats.models import ModelNotConverged, combine_synthetic_copies, fit_model

        try:
            fits = [fit_model(c, spec) for c in released]
            out["combined_copies"] = combine_synthetic_copies(fits).to_dict()
        except ModelNotConverged as exc:
            out["combined_copies"] = {"model_status": f"did not converge: {exc}"}
    return out


def build_audit_json(result: RunResult) -> dict[str, Any]:
    """The machine-readable record (CONTRACTS.md keys plus extras)."""
    from engine.provenance import library_versions

    prep, cfg = result.prepared, result.config
    table = prep.table
    from engine.disclosure import safe_record

    return safe_record(_jsonable(
        {
            "tool": {"name": "latent-synth", "version": __version__},
            "verdict": result.verdict,
            "started": result.started,
            "input": {
                "name": cfg.input_label or table.path.name,
                "sha256": table.sha256,
                "format": table.format,
                "rows": int(table.rows),
                "rows_selected": int(len(table.frame)),
                "rows_used": int(len(prep.real)),
                "rows_dropped": prep.rows_dropped,
                "columns": [str(c) for c in table.frame.columns],
                "notes": list(table.notes),
            },
            "columns": prep.schema.to_dict(),
            "model": result.model,
            "audit": None
            if result.audit is None
            else {
                **result.audit.to_dict(),
                "rows_audited": min(len(prep.real), cfg.audit_max_rows),
                "subsampled": len(prep.real) > cfg.audit_max_rows,
            },
            "release": result.release,
            "fidelity": result.fidelity,
            "settings": _settings(cfg),
            "timings": result.timings,
            "software": library_versions(),
            "outputs": result.outputs,
        }
    ))  # fmt: skip


def _settings(cfg: RunConfig) -> dict[str, Any]:
    """Settings for the record. The seed itself is never written: only whether one was set."""
    return {
        "auc_max": cfg.auc_max,
        "w_forced": cfg.w,
        "w_grid": list(cfg.w_grid),
        "seeded": cfg.seed is not None,
        "device": cfg.device,
        "format": cfg.fmt,
        "budget": cfg.budget,
        "analysis": cfg.analysis,
        "outcome": cfg.outcome,
        "covariates": list(cfg.covariates),
        "allow_risky": cfg.allow_risky,
        "risk_acknowledged": cfg.risk_acknowledged,
        "protect_outliers": cfg.protect_outliers,
        "audit_max_rows": cfg.audit_max_rows,
        "copies": cfg.copies,
        "dp_epsilon": cfg.dp_epsilon,
        "dp_delta": cfg.dp_delta,
        "time": cfg.time,
        "event": cfg.event,
        "drop": list(cfg.drop),
        "missing_codes": list(cfg.missing_codes),
    }


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return None if not math.isfinite(float(obj)) else float(obj)
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_outputs(result: RunResult, out: Path, progress: ProgressFn = no_progress) -> RunResult:
    """Write synthetic file(s), README.txt, report.pdf, audit.json and results.json: all or none.

    Every file is staged as a temporary file in ``out`` first (the hashes in audit.json and
    results.json are of those bytes); only then are the targets replaced, and when one cannot
    be (a report open in a PDF viewer), the files already replaced get their old content back,
    so the folder never holds a new table beside an old report.
    """
    from engine.tables.write import AtomicBatch, recipient_readme_bytes, table_writer
    from engine.provenance import results_json, sha256_file

    cfg = result.config
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: the output path is a file; give a folder with --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(
            f"{out}: cannot create this output folder ({err.strerror or err}); "
            "choose another folder, with a shorter path"
        ) from err
    meta = result.prepared.table.column_meta
    outputs: dict[str, str] = {}
    progress(0.0, "writing files")
    with AtomicBatch(forbid=Path(cfg.input).resolve()) as batch:
        tables = [
            (f"synthetic.{cfg.fmt}" if i == 0 else f"synthetic_{i + 1}.{cfg.fmt}", frame)
            for i, frame in enumerate(result.copies)
        ]
        if result.dp_synthetic is not None and result.synthetic is not None:
            tables.append((f"synthetic_dp.{cfg.fmt}", result.dp_synthetic))
        for name, frame in tables:
            outputs[name] = sha256_file(
                batch.stage(out / name, table_writer(frame, cfg.fmt, column_meta=meta))
            )
        if result.synthetic is not None:
            readme = recipient_readme_bytes(_readme_info(result))
            outputs["README.txt"] = sha256_file(batch.stage(out / "README.txt", readme))
        if cfg.report:
            progress(0.3, "writing the PDF report")
            from engine.report.build import render_report

            pdf = render_report(result)
            outputs["report.pdf"] = sha256_file(batch.stage(out / "report.pdf", pdf))
        result = replace(result, outputs=outputs)
        audit_json = build_audit_json(result)
        data = json.dumps(audit_json, indent=2, ensure_ascii=False).encode("utf-8")
        outputs["audit.json"] = sha256_file(batch.stage(out / "audit.json", data))
        records = [
            {"name": name, "sha256": digest, "summary": _summary_for(name, result)}
            for name, digest in outputs.items()
        ]
        batch.stage(out / "results.json", json.dumps(results_json(records), indent=2).encode())
    progress(1.0, "files written")
    return replace(result, outputs=outputs, audit_json=audit_json)


def _readme_info(result: RunResult) -> dict[str, Any]:
    schema = result.prepared.schema
    audit = result.audit
    binding = audit.binding(result.release["w"]) if audit is not None else None
    return {
        "version": __version__,
        "date": result.started,
        "w": result.release["w"],
        "rows": result.release["rows"],
        "auc": None if binding is None else binding.auc,
        "auc_se": None if binding is None else binding.se,
        "auc_attack": None if binding is None else binding.words,
        "copies": result.config.copies,
        "auc_max": result.config.auc_max,
        "verdict": result.verdict,
        "dropped": [c.name for c in schema.dropped()],
        "columns": [c.name for c in schema.synthesized()],
        "format": result.config.fmt,
        "exact_copies": result.release.get("exact_copies"),
    }


def _summary_for(name: str, result: RunResult) -> str:
    if name.startswith("synthetic_dp"):
        g = result.release["dp"]["guarantee"]
        return f"synthetic table from a DP-SGD flow (Flow Sampling), ({g['epsilon']:.3g}, {g['delta']:.2g})-DP"
    if name.startswith("synthetic"):
        return (
            f"synthetic table, {result.release['rows']} rows, Latent Noise Injection at "
            f"w = {result.release['w']:.2f}; verdict: {result.verdict}"
        )
    if name == "report.pdf":
        return "privacy and fidelity report for the output checker"
    if name == "audit.json":
        return (
            "machine-readable audit record (no real records, no seeds, no model weights; "
            "counts under 10 shown as '< 10', as in the report)"
        )
    return "explanation for the recipient"


def run_pipeline(
    config: RunConfig, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED
) -> RunResult:
    """Run the whole job and write its outputs to ``config.out``; raise PrivacyRefused (exit 3)
    after writing the audit record and report when no w is safe and no override was given."""
    prep = prepare(config, sub_progress(progress, 0.0, 0.03))
    cancel.raise_if_cancelled()
    result = synthesize(prep, sub_progress(progress, 0.03, 0.95), cancel)
    cancel.raise_if_cancelled()
    if config.out is not None:
        result = write_outputs(result, config.out, sub_progress(progress, 0.95, 1.0))
    if result.verdict == "refused":
        rel = result.release
        hint = rel.get("refused_hint")
        raise PrivacyRefused(f"{rel['refused']}; {hint}" if hint else rel["refused"])
    return result
