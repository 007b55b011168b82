"""The whole job in one call: :func:`run_pipeline` = prepare -> synthesize -> write outputs.

References: docs/architecture.md; main paper Algorithm 1 and section 4.3.
"""

from engine.errors import PrivacyRefused
from engine.pipeline.config import RunConfig
from engine.pipeline.outputs import write_outputs
from engine.pipeline.prepare_step import prepare
from engine.pipeline.results import RunResult
from engine.pipeline.synthesize_step import synthesize
from engine.progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress, sub_progress


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
    if result.refusal is not None:
        raise PrivacyRefused(result.refusal.message)
    return result
