"""The release at the chosen w: Latent Noise Injection, decoding, outlier protection, unique-copy
redraws, release metrics, epsilon and fidelity.

References: ARCHITECTURE.md; main paper Algorithm 1 and section 4.3.
"""

import time
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, cast

import numpy as np
import pandas as pd

from engine.disclosure import CopyCheck, redraw_unique_copies
from engine.errors import PrivacyRefused
from engine.flows.generate import latent_noise_injection
from engine.pipeline.config import Prepared, RunConfig, RunResult, make_rng
from engine.pipeline.record import build_audit_json
from engine.progress import (
    NEVER_CANCELLED,
    CancelToken,
    ProgressFn,
    labelled,
    no_progress,
    sub_progress,
)


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
    from engine.device import resolve_device
    from engine.flows.generate import latent_noise_injection, shuffled
    from engine.flows.select import select_flow
    from engine.privacy.audit import (
        epsilon_for_copies,
        epsilon_statement,
        protect_outliers,
        release_metrics,
    )
    from engine.tables.encoder import redraw_non_finite

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
            progress=labelled(sub_progress(progress, 0.0, 0.7), model="final model"),
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
            c
            for c in columns
            if c not in (schema.time, schema.event, cfg.outcome)
            and schema.by_name(c).kind != "date"  # a date is no covariate (issue 13)
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
            combined = combine_synthetic_copies(fits)
            if report.comparison is not None:  # withhold what the real groups' sizes withhold
                real_withheld = report.comparison.real.withheld
                withheld = tuple(dict.fromkeys(real_withheld + combined.withheld))
                combined = replace(combined, withheld=withheld)
            out["combined_copies"] = combined.to_dict()
        except ModelNotConverged as exc:
            out["combined_copies"] = {"model_status": f"did not converge: {exc}"}
    return out


def release_without_unique_copies(
    flow: Any,
    X_model: np.ndarray,
    synth_model: np.ndarray,
    w: float | np.ndarray,
    rng: np.random.Generator,
    encoder: Any,
    real: pd.DataFrame,
) -> tuple[np.ndarray, CopyCheck]:
    """:func:`engine.disclosure.redraw_unique_copies` for a Latent Noise Injection release: the affected rows'
    real partners get fresh noise from :func:`engine.flows.generate.latent_noise_injection` (same w,
    or each row's own w when outlier protection set one per row; w = 0, a fresh draw from the
    model, for rows still copying after half the tries)."""
    w_rows = np.asarray(w, dtype=float)

    def redraw(rows: np.ndarray, last_resort: bool) -> np.ndarray:
        w_here = w_rows[rows] if w_rows.ndim == 1 else float(w_rows)
        if last_resort:
            w_here = 0.0 * np.asarray(w_here)
        return latent_noise_injection(flow, X_model[rows], w_here, rng)

    def decode(model_rows: np.ndarray) -> pd.DataFrame:
        frame: pd.DataFrame = encoder.inverse_transform(model_rows).frame
        return frame

    return redraw_unique_copies(synth_model, redraw, decode, real)
