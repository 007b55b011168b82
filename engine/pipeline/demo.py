"""The embedded demo cohort and the ``demo`` job: one sub-study, or every sub-study and then a
DerSimonian-Laird meta-analysis of the released ones (``latent-synth demo``).

The command line builds one :class:`~engine.pipeline.config.RunConfig` from its options and
hands it here; each sub-study runs :func:`~engine.pipeline.run.run_pipeline` on its rows.

References: docs/architecture.md; main paper Table 3 (the cohorts the demo data are simulated from).
"""

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.errors import PrivacyRefused
from engine.pipeline.config import RunConfig
from engine.pipeline.run import run_pipeline
from engine.progress import CancelToken, ProgressFn

DEMO_TIME, DEMO_EVENT = "time_cvd_years", "cvd"
META_EXPOSURE, META_ADJUST, META_PER = "sbp", ("age", "totchol", "hdl"), 10.0
Echo = Callable[[str, bool], None]  # (text, to_stderr)


def demo_input() -> Path:
    """The embedded demo cohort CSV (simulated from the paper's Table 3).

    Example:
        >>> demo_input().name
        'demo_cohort.csv'
    """
    from importlib.resources import files

    return Path(str(files("resources").joinpath("demo_cohort.csv")))


def study_folder(out: Path, study: str, every_study: bool) -> Path:
    """``out`` itself for one sub-study; ``out/<study>`` (spaces as ``_``) for ``--all``.

    Example:
        >>> study_folder(Path("d"), "ARIC F", True).as_posix()
        'd/ARIC_F'
    """
    return out / study.replace(" ", "_") if every_study else out


def scaled(progress: ProgressFn, start: float, share: float, prefix: str) -> ProgressFn:
    """``progress`` for one of several jobs: its 0..1 onto ``start..start+share``, text prefixed."""

    def inner(fraction: float, text: str) -> None:
        progress(start + fraction * share, prefix + text)

    return inner


def run_demo(
    base: RunConfig,
    studies: tuple[str, ...],
    out: Path,
    *,
    every_study: bool,
    progress: ProgressFn,
    cancel: CancelToken,
    on_released: Callable[[Any, Path], None],
    echo: Echo,
) -> int:
    """Run ``base`` (its input: the demo cohort) on each sub-study; with ``every_study`` a
    refusal is reported and skipped, then the released studies are pooled. Returns the exit
    code: 0, or 3 when fewer than two studies were released for the meta-analysis."""
    share = 1.0 / (len(studies) + (1 if every_study else 0))
    released: list[str] = []
    for i, study in enumerate(studies):
        folder = study_folder(out, study, every_study)
        config = replace(
            base,
            out=folder,
            subset=("study", study),
            input_label=f"demo cohort (simulated), {study}",
        )
        try:
            result = run_pipeline(config, scaled(progress, i * share, share, f"{study}: "), cancel)
        except PrivacyRefused as refusal:
            if not every_study:
                raise
            echo(f"{study}: refused: {refusal}", True)
            continue
        released.append(study)
        on_released(result, folder)
    if not every_study:
        return 0
    refused = tuple(s for s in studies if s not in released)
    if len(released) < 2:
        echo(
            f"meta-analysis not run: {len(released)} sub-studies were released and at least 2 "
            "are needed",
            True,
        )
        return 3
    if refused:
        echo(
            f"meta-analysis: {', '.join(refused)} left out of both the real and the synthetic "
            "pooling (release refused), so both pool the same studies",
            False,
        )
    _pool(
        base,
        tuple(released),
        refused,
        out,
        scaled(progress, 1.0 - share, share, "meta-analysis: "),
        cancel,
    )
    echo(f"meta-analysis written to {out / 'meta'}", False)
    return 0


def _pool(
    base: RunConfig,
    studies: tuple[str, ...],
    refused: tuple[str, ...],
    out: Path,
    progress: ProgressFn,
    cancel: CancelToken,
) -> None:
    from engine.pipeline.meta import MetaConfig, run_meta

    files = [study_folder(out, s, True) / f"synthetic.{base.file_format}" for s in studies]
    meta_cfg = MetaConfig(
        real_files=(Path(base.input),),
        by="study",
        synthetic_files=tuple(files),
        out=out / "meta",
        analysis="cox",
        time=base.time or DEMO_TIME,
        event=base.event or DEMO_EVENT,
        exposure=META_EXPOSURE,
        adjust=META_ADJUST,
        per=META_PER,
        method="dl",
        include=studies,
        excluded=refused,
    )
    run_meta(meta_cfg, progress=progress, cancel=cancel)
