"""The whole job, from a frozen config to a frozen result: the one function both faces call.

::

    read -> infer schema -> complete cases -> encode -> audit (train on 80 %, w grid)
         -> choose w -> retrain on all rows -> release (LNI, decode, clip, shuffle)
         -> release metrics, epsilon -> fidelity -> write (atomic)

The command line (``engine.cli``) and the desktop wizard both call :func:`run_pipeline` (or
its two halves :func:`prepare` and :func:`synthesize`) with a progress callback and a cancel
token; neither re-implements a step. Outputs are written only after every computation has
finished, each file atomically, so a failed or cancelled run leaves no partial file.

Modules, in the order a run visits them: :mod:`~engine.pipeline.config` (RunConfig, Prepared),
:mod:`~engine.pipeline.results` (RunResult and its typed blocks),
:mod:`~engine.pipeline.prepare_step` (read, schema), :mod:`~engine.pipeline.synthesize_step`
(audit, choice of w), :mod:`~engine.pipeline.release_step` (LNI release, metrics),
:mod:`~engine.pipeline.disclosure_step` (identity and attribute disclosure: keep, lower w or
refuse),
:mod:`~engine.pipeline.compare_step` (fidelity),
:mod:`~engine.pipeline.record` (audit.json and README fields, built once),
:mod:`~engine.pipeline.outputs` (atomic writing), :mod:`~engine.pipeline.run` (the whole job);
:mod:`~engine.pipeline.meta` is the file-based meta-analysis job.

References: docs/architecture.md; main paper Algorithm 1 and section 4.3.
"""

from engine.pipeline.config import (
    AUDIT_MAX_ROWS,
    BUDGETS,
    DEFAULT_GRID,
    FORMATS,
    SPLIT_TWICE_UP_TO,
    Prepared,
    RunConfig,
    RunResult,
    make_rng,
)
from engine.pipeline.outputs import write_outputs
from engine.pipeline.prepare_step import load_table, prepare, schema_for
from engine.pipeline.record import build_audit_json
from engine.pipeline.release_step import refusal_reason, release
from engine.pipeline.results import (
    DPResult,
    Fidelity,
    ModelSummary,
    Refusal,
    Release,
    Verdict,
)
from engine.pipeline.run import run_pipeline
from engine.pipeline.synthesize_step import synthesize, with_dp_release

__all__ = [
    "AUDIT_MAX_ROWS",
    "BUDGETS",
    "DEFAULT_GRID",
    "FORMATS",
    "SPLIT_TWICE_UP_TO",
    "DPResult",
    "Fidelity",
    "ModelSummary",
    "Prepared",
    "Refusal",
    "Release",
    "RunConfig",
    "RunResult",
    "Verdict",
    "build_audit_json",
    "load_table",
    "make_rng",
    "prepare",
    "refusal_reason",
    "release",
    "run_pipeline",
    "schema_for",
    "synthesize",
    "with_dp_release",
    "write_outputs",
]
