"""What the wizard has collected so far, and the engine calls the pages start (no Qt here).

::

    Import   inspect_table(config)            engine.load_table + row subset + engine.schema_for
    Columns  engine.prepare(config)           with the user's roles, kinds and bounds
    Train    engine.synthesize(prepared, progress, cancel)
    Privacy  release_at(result, w, acknowledged, ...)  engine.release: same audit, new w
    Export   engine.write_outputs(result, folder, progress)

Every function here runs on a worker thread; it only composes the engine's public face
(``from engine import ...``; an import-linter contract forbids the engine's rooms here).
Heavy modules (pandas, torch, lifelines, statsmodels) are imported inside the functions so
the window opens fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine import Prepared, RunConfig, RunResult

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
    inspected: Inspected | None = None
    prepared: Prepared | None = None
    result: RunResult | None = None
    written: RunResult | None = None  # the result after write_outputs
    out: Path | None = None

    @property
    def input(self) -> Path | None:
        value = self.fields.get("input")
        return None if value is None else Path(value)

    def config(self, **changes: Any) -> RunConfig:
        """A validated :class:`engine.RunConfig` from the collected fields."""
        from engine import RunConfig

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

    table: Any  # engine.files.read.LoadedTable
    frame: Any  # pandas.DataFrame, the rows in use
    schema: Any  # engine.columns.schema.Schema
    rules: tuple[str, ...] = ()  # the rules found in the real rows (engine.suggest_rules)


def inspect_table(config: RunConfig, progress: Any = None, cancel: Any = None) -> Inspected:
    """Read the file, keep the chosen rows and infer column kinds (no model fitting)."""
    from engine import load_table, schema_for

    if progress:
        progress(0.1, "reading the file")
    table = load_table(config)
    frame = table.frame
    if cancel is not None:
        cancel.raise_if_cancelled()
    if progress:
        progress(0.6, "recognising column kinds")
    schema = schema_for(config, table)
    if progress:
        progress(0.8, "looking for rules between columns")
    from engine import suggest_rules

    return Inspected(table, frame, schema, suggest_rules(schema, frame))


def release_at(
    result: RunResult, w: float, acknowledged: bool, progress: Any, cancel: Any
) -> RunResult:
    """Release again at a user-chosen w, keeping the audit the user has just reviewed and the
    final model already trained (``engine.release``).

    Raising w above the audit's choice needs ``acknowledged``; the config then records
    ``forced_w`` and ``risk_acknowledged=True`` (audit.json ``settings``) and the verdict is
    "released with override".
    """
    from engine import InputError, PrivacyRefused, release

    if result.audit is None:
        raise InputError("this run has no privacy audit to release from: train and audit first")
    raising = result.above_choice(w)
    if raising and not acknowledged:
        raise PrivacyRefused(
            f"w = {w:.2f} is above the audited choice; tick the risk acknowledgement to use it"
        )
    cfg = replace(result.config, forced_w=float(w), risk_acknowledged=bool(raising))
    prep = replace(result.prepared, config=cfg)
    timings = {"audit_seconds": float(result.timings.get("audit_seconds", 0.0))}
    return release(
        prep, result.audit, progress=progress, cancel=cancel, flow=result.flow, timings=timings
    )


def demo_input() -> Path:
    """The embedded demo cohort CSV."""
    from engine import demo_input as engine_demo_input

    return engine_demo_input()
