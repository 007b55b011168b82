"""latent-synth engine: from a local table to a privacy-audited synthetic copy.

Pure Python + numpy/pandas/torch/scipy/lifelines/statsmodels/matplotlib (Agg). The engine
never imports Qt or the ``desktop`` package (an import-linter contract enforces this).

The public face is lazy (PEP 562, as napari does): ``import engine`` loads no heavy library;
each name below is imported from its room on first use.

Example:
    >>> import engine
    >>> engine.RunConfig.__module__
    'engine.pipeline.config'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_PUBLIC = {
    # the whole job (engine.pipeline)
    "run_pipeline": "engine.pipeline",
    "RunConfig": "engine.pipeline",
    "RunResult": "engine.pipeline",
    "Prepared": "engine.pipeline",
    "Verdict": "engine.pipeline",
    "prepare": "engine.pipeline",
    "synthesize": "engine.pipeline",
    "release": "engine.pipeline",
    "write_outputs": "engine.pipeline",
    "load_table": "engine.pipeline",
    "schema_for": "engine.pipeline",
    "DEFAULT_GRID": "engine.pipeline",
    "check_analysis": "engine.pipeline.config",
    "demo_input": "engine.pipeline.demo",
    "MetaConfig": "engine.pipeline.meta",
    "run_meta": "engine.pipeline.meta",
    "effect_label": "engine.pipeline.meta",
    # the Python face for analysts (engine.api, docs/api.md)
    "Synthesizer": "engine.api",
    "Metadata": "engine.api",
    # tables
    "read_table": "engine.files.read",
    "infer_schema": "engine.columns.schema",
    "recognise_survival_roles": "engine.columns.schema",
    "event_labels": "engine.columns.events",
    "atomic_write_bytes": "engine.files.write",
    "suggest_keys": "engine.columns.keys",
    "suggest_rules": "engine.pipeline.rules_step",
    "check_rule": "engine.pipeline.rules_step",
    # statistics and the report
    "pool": "engine.stats.meta",
    "read_summary": "engine.stats.meta",
    "build_report": "engine.report.build",
    "draw_privacy_curve": "engine.report.curve_plot",
    "forest_figure": "engine.report.forest",
    "few_rows_warning": "engine.report.sections.summary",
    "analysis_plan": "engine.pipeline.compare_step",
    "exposure_candidates": "engine.stats.plan",
    "rule_cost_words": "engine.stats.topcoded",
    "refusal_findings": "engine.pipeline.refusal",
    # errors and progress
    "LatentSynthError": "engine.errors",
    "InputError": "engine.errors",
    "TooFewRows": "engine.errors",
    "PrivacyRefused": "engine.errors",
    "Cancelled": "engine.errors",
    "CancelToken": "engine.progress",
    "EpochDone": "engine.progress",
    "AuditPointDone": "engine.progress",
    "sub_progress": "engine.progress",
}

__all__ = [
    "__version__",
    "few_rows_warning",
    "refusal_findings",
    "analysis_plan",
    "exposure_candidates",
    "rule_cost_words",
    "run_pipeline",
    "RunConfig",
    "RunResult",
    "Prepared",
    "Verdict",
    "prepare",
    "synthesize",
    "release",
    "write_outputs",
    "load_table",
    "schema_for",
    "DEFAULT_GRID",
    "check_analysis",
    "demo_input",
    "MetaConfig",
    "run_meta",
    "effect_label",
    "Synthesizer",
    "Metadata",
    "read_table",
    "infer_schema",
    "recognise_survival_roles",
    "event_labels",
    "atomic_write_bytes",
    "suggest_keys",
    "suggest_rules",
    "check_rule",
    "pool",
    "read_summary",
    "build_report",
    "draw_privacy_curve",
    "forest_figure",
    "LatentSynthError",
    "InputError",
    "TooFewRows",
    "PrivacyRefused",
    "Cancelled",
    "CancelToken",
    "EpochDone",
    "AuditPointDone",
    "sub_progress",
]


if TYPE_CHECKING:
    from engine.api import Metadata, Synthesizer
    from engine.columns.events import event_labels
    from engine.columns.keys import suggest_keys
    from engine.columns.schema import infer_schema, recognise_survival_roles
    from engine.errors import Cancelled, InputError, LatentSynthError, PrivacyRefused, TooFewRows
    from engine.files.read import read_table
    from engine.files.write import atomic_write_bytes
    from engine.pipeline import (
        DEFAULT_GRID,
        Prepared,
        RunConfig,
        RunResult,
        Verdict,
        load_table,
        prepare,
        release,
        run_pipeline,
        schema_for,
        synthesize,
        write_outputs,
    )
    from engine.pipeline.compare_step import analysis_plan
    from engine.pipeline.config import check_analysis
    from engine.pipeline.demo import demo_input
    from engine.pipeline.meta import MetaConfig, effect_label, run_meta
    from engine.pipeline.rules_step import check_rule, suggest_rules
    from engine.progress import AuditPointDone, CancelToken, EpochDone, sub_progress
    from engine.report.build import build_report
    from engine.report.curve_plot import draw_privacy_curve
    from engine.report.forest import forest_figure
    from engine.stats.meta import pool, read_summary
    from engine.stats.plan import exposure_candidates
    from engine.stats.topcoded import rule_cost_words


def __getattr__(name: str) -> Any:
    """Import a public name from its room on first access (PEP 562)."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
