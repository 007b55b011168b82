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
    "run_pipeline": "engine.pipeline",
    "RunConfig": "engine.pipeline",
    "RunResult": "engine.pipeline",
    "prepare": "engine.pipeline",
    "synthesize": "engine.pipeline",
    "write_outputs": "engine.pipeline",
    "read_table": "engine.tables.read",
    "infer_schema": "engine.tables.schema",
    "pool": "engine.stats.meta",
    "build_report": "engine.report.build",
    "InputError": "engine.errors",
    "PrivacyRefused": "engine.errors",
    "Cancelled": "engine.errors",
    "CancelToken": "engine.progress",
    "EpochDone": "engine.progress",
    "AuditPointDone": "engine.progress",
    "draw_privacy_curve": "engine.report.curve_plot",
}

__all__ = [
    "__version__",
    "run_pipeline",
    "RunConfig",
    "RunResult",
    "prepare",
    "synthesize",
    "write_outputs",
    "read_table",
    "infer_schema",
    "pool",
    "build_report",
    "InputError",
    "PrivacyRefused",
    "Cancelled",
    "CancelToken",
    "EpochDone",
    "AuditPointDone",
    "draw_privacy_curve",
]


if TYPE_CHECKING:
    from engine.errors import Cancelled, InputError, PrivacyRefused
    from engine.pipeline import (
        RunConfig,
        RunResult,
        prepare,
        run_pipeline,
        synthesize,
        write_outputs,
    )
    from engine.progress import AuditPointDone, CancelToken, EpochDone
    from engine.report.build import build_report
    from engine.report.curve_plot import draw_privacy_curve
    from engine.stats.meta import pool
    from engine.tables.read import read_table
    from engine.tables.schema import infer_schema


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
