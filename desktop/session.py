"""What the wizard has collected so far, and the engine calls the pages start (no Qt here).

::

    Import   inspect_table(config)            read_table + row subset + infer_schema
    Columns  engine.pipeline.prepare(config)  with the user's roles, kinds and bounds
    Train    engine.pipeline.synthesize(prepared, progress, cancel)
    Privacy  release_at(result, w, acknowledged, ...)  the release half of synthesize, same audit
    Export   engine.pipeline.write_outputs(result, folder, progress)

Every function here runs on a worker thread; it only composes public engine functions.
Heavy modules (pandas, torch, lifelines, statsmodels) are imported inside the functions so
the window opens fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

DEMO_STUDY = "Framingham M"
DEMO_DEFAULTS: dict[str, Any] = {
    "subset": ("study", DEMO_STUDY),
    "time": "time_cvd_years",
    "event": "cvd",
    "analysis": "cox",
    "per": (("sbp", 10.0),),
    "covariates": ("sbp", "age", "totchol", "hdl"),
    "input_label": f"demo cohort (simulated), {DEMO_STUDY}",
}


@dataclass
class Session:
    """The wizard's state: the config fields chosen so far and what the engine returned."""

    fields: dict[str, Any] = field(default_factory=dict)  # RunConfig keyword arguments
    inspected: Any = None  # Inspected
    prepared: Any = None  # engine.pipeline.Prepared
    result: Any = None  # engine.pipeline.RunResult
    written: Any = None  # RunResult after write_outputs
    out: Path | None = None

    @property
    def input(self) -> Path | None:
        value = self.fields.get("input")
        return None if value is None else Path(value)

    def config(self, **changes: Any) -> Any:
        """A validated :class:`engine.pipeline.RunConfig` from the collected fields."""
        from engine.pipeline import RunConfig

        values = {**self.fields, **changes}
        values.setdefault("input", Path("."))
        config = RunConfig(**values)
        config.validate()
        return config

    def update(self, **changes: Any) -> None:
        """Change config fields; results computed from older settings are forgotten."""
        if any(self.fields.get(k) != v for k, v in changes.items()):
            self.fields.update(changes)
            self.result = self.written = None

    def start_over(self, input_path: Path, **fields: Any) -> None:
        """A new input file: forget everything else."""
        self.fields = {"input": Path(input_path), **fields}
        self.inspected = self.prepared = self.result = self.written = None


@dataclass(frozen=True)
class Inspected:
    """A table as read (after the row subset) and its inferred schema."""

    table: Any  # engine.io.LoadedTable
    frame: Any  # pandas.DataFrame, the rows in use
    schema: Any  # engine.schema.Schema


def inspect_table(config: Any, progress: Any = None, cancel: Any = None) -> Inspected:
    """Read the file, keep the chosen rows and infer column kinds (no model fitting)."""
    from engine.errors import InputError
    from engine.io import read_table
    from engine.schema import infer_schema

    if progress:
        progress(0.1, "reading the file")
    table = read_table(config.input, sheet=config.sheet, missing_codes=config.missing_codes)
    frame = table.frame
    if config.subset is not None:
        column, value = config.subset
        if column not in frame.columns:
            raise InputError(f"{table.path.name}: no column '{column}' to select rows by")
        frame = frame.loc[frame[column].astype(str) == str(value)].reset_index(drop=True)
        if frame.empty:
            raise InputError(f"{table.path.name}: no rows with {column} = '{value}'")
        table = replace(table, frame=frame)
    if cancel is not None:
        cancel.raise_if_cancelled()
    if progress:
        progress(0.6, "recognising column kinds")
    schema = infer_schema(
        table,
        time=config.time,
        event=config.event,
        drop=config.drop,
        keep=config.keep,
        kinds=dict(config.kinds) or None,
        bounds={name: (lo, hi) for name, lo, hi in config.bounds} or None,
    )
    return Inspected(table, frame, schema)


def release_at(result: Any, w: float, acknowledged: bool, progress: Any, cancel: Any) -> Any:
    """Release again at a user-chosen w, keeping the audit the user has just reviewed.

    Raising w above the audit's choice needs ``acknowledged``; the config then records
    ``w`` and ``risk_acknowledged=True`` (audit.json ``settings``) and the verdict is
    "released with override". This is the second half of ``engine.pipeline.synthesize``
    (retrain on all rows, inject noise, decode, shuffle, release metrics, epsilon, fidelity)
    composed from engine functions, because ``synthesize`` always re-runs the audit, whose
    curve and choice would then differ from the ones shown. Engine hook wanted: an
    ``audit=`` argument to ``synthesize`` (or a public ``release(prepared, audit, w)``).
    """
    import time
    from datetime import datetime, timezone

    import numpy as np

    from engine import pipeline
    from engine.audit import epsilon_statement, protect_outliers, release_metrics
    from engine.errors import PrivacyRefused
    from engine.flow import select_flow
    from engine.generate import latent_noise_injection, shuffled
    from engine.progress import sub_progress

    audit = result.audit
    selected = audit.selected_w
    raising = selected is None or w > float(selected) + 1e-9
    if raising and not acknowledged:
        raise PrivacyRefused(
            f"w = {w:.2f} is above the audited choice; tick the risk acknowledgement to use it"
        )
    cfg = replace(result.config, w=float(w), risk_acknowledged=bool(raising))
    prep = replace(result.prepared, config=cfg)
    enc = prep.encoder
    rng = pipeline.make_rng(cfg.seed)
    timings = {"audit_seconds": float(result.timings.get("audit_seconds", 0.0))}
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")

    progress(0.0, "training the final model on all rows")
    t0 = time.perf_counter()
    X_model = enc.transform(prep.real, rng)
    flow = select_flow(
        X_model,
        budget=cfg.budget,
        device=cfg.device,
        seed=cfg.seed,
        progress=sub_progress(progress, 0.0, 0.75),
        cancel=cancel,
    )
    timings["train_seconds"] = time.perf_counter() - t0
    cancel.raise_if_cancelled()

    progress(0.76, f"generating synthetic rows at w = {w:.2f}")
    t0 = time.perf_counter()
    X_dist = enc.distance_space(prep.real)

    def to_dist(rows: Any) -> Any:
        return enc.distance_space(enc.inverse_transform(rows).frame)

    protect = None
    if cfg.protect_outliers and w > 0:
        protect = protect_outliers(flow, X_model, X_dist, w, to_dist=to_dist, rng=rng)
        synth_model = protect.synthetic_model_rows
    else:
        synth_model = latent_noise_injection(flow, X_model, w, rng)
    decoded = enc.inverse_transform(synth_model)
    metrics = release_metrics(X_dist, enc.distance_space(decoded.frame), rng=rng)
    copies = [decoded.frame]
    for _ in range(cfg.copies - 1):
        cancel.raise_if_cancelled()
        copies.append(enc.inverse_transform(latent_noise_injection(flow, X_model, w, rng)).frame)
    released = tuple(c.iloc[shuffled(len(c), rng)].reset_index(drop=True) for c in copies)
    eps = epsilon_statement(flow.to_latent(X_model), w, delta=1.0 / len(prep.real))
    timings["release_seconds"] = time.perf_counter() - t0
    cancel.raise_if_cancelled()

    progress(0.88, "comparing real and synthetic results")
    t0 = time.perf_counter()
    fidelity = pipeline._fidelity(prep, released)
    timings["fidelity_seconds"] = time.perf_counter() - t0
    release = {
        "w": float(w),
        "rows": int(len(released[0])),
        "copies": cfg.copies,
        "shuffled": True,
        "clipped": {k: int(v) for k, v in decoded.clip_counts.items()},
        **metrics.to_dict(),
        "epsilon": eps.to_dict(),
        "chosen_by": "user, above the audited choice"
        if raising
        else "user, at or below the audited choice",
    }
    if protect is not None:
        release["protect_outliers"] = {
            "at_risk_before": int(protect.at_risk_before),
            "at_risk_after": int(protect.at_risk_after),
            "records_with_lower_w": int(np.sum(protect.w_per_record < w)),
        }
    out = replace(
        result,
        config=cfg,
        prepared=prep,
        model=flow.to_dict(),
        release=release,
        synthetic=released[0],
        copies=released,
        fidelity=fidelity,
        verdict="released with override" if raising else "released",
        timings=timings,
        started=started,
        outputs={},
        history=tuple(getattr(flow, "history", ())),
    )
    progress(1.0, "done")
    return replace(out, audit_json=pipeline.build_audit_json(out))


def demo_input() -> Path:
    """The embedded demo cohort CSV."""
    from engine.cli import demo_input as engine_demo_input

    return engine_demo_input()


def column_values_binary(frame: Any, name: str) -> bool:
    """Whether a column holds exactly two distinct non-missing values (an event must)."""
    values = frame[name].dropna().unique()
    return len(values) == 2
