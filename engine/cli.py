"""The ``latent-synth`` command line (CONTRACTS.md): ``run``, ``demo``, ``meta``. (With no
arguments the console script opens the desktop wizard instead: see ``desktop/launch.py``.)

Exit codes: 0 success; 2 bad usage or input (one line on stderr naming the file, column or
row and what to do); 3 refused for privacy; 130 cancelled (Ctrl-C). Never a traceback for a
user error: unexpected errors print one line and, with ``--debug``, the traceback.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any, NoReturn

from engine import __version__
from engine.errors import Cancelled, InputError, LatentSynthError, PrivacyRefused
from engine.progress import CancelToken, ProgressFn

DEMO_STUDIES = (
    "ARIC F", "ARIC M", "CARDIA F", "CARDIA M", "CHS F", "CHS M", "MESA F", "MESA M",
    "Framingham F", "Framingham M", "Jackson Heart F", "Jackson Heart M",
)  # fmt: skip
DEFAULT_DEMO_STUDY = "Framingham M"


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"latent-synth: error: {message} (see '{self.prog} --help')\n")


def _float_list(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.replace(";", ",").split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a comma-separated list of numbers"
        ) from None


def _name_list(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _per(text: str) -> tuple[tuple[str, float], ...]:
    """``--per 10`` (the first covariate) or ``--per sbp=10,age=5``."""
    pairs = []
    for part in _name_list(text):
        name, _, value = part.rpartition("=")
        try:
            pairs.append((name, float(value)))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--per '{part}': use NUMBER or COLUMN=NUMBER"
            ) from None
    return tuple(pairs)


def _bound(text: str) -> tuple[str, float | None, float | None]:
    """``--bounds sbp=70:250`` (either side may be empty)."""
    try:
        name, rng = text.split("=", 1)
        lo, hi = rng.split(":", 1)
        return name, float(lo) if lo else None, float(hi) if hi else None
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--bounds '{text}': use COLUMN=LOW:HIGH, e.g. sbp=70:250"
        ) from None


def _add_run_options(p: argparse.ArgumentParser, out_required: bool = True) -> None:
    p.add_argument(
        "--out",
        required=out_required,
        type=Path,
        help="output folder"
        + ("" if out_required else " (default: a new INPUT-synthetic-DATE folder here)"),
    )
    roles = p.add_argument_group("columns")
    roles.add_argument("--time", help="time-to-event column (survival analysis)")
    roles.add_argument("--event", help="event indicator column (0 = censored, 1 = event)")
    roles.add_argument(
        "--drop",
        action="append",
        default=[],
        help="exclude this column (repeatable); never exported",
    )
    roles.add_argument(
        "--keep",
        action="append",
        default=[],
        help="synthesize a column that looks like an identifier",
    )
    roles.add_argument(
        "--kind", action="append", default=[], metavar="COL=KIND", help="override a column's kind"
    )
    roles.add_argument(
        "--bounds",
        action="append",
        default=[],
        type=_bound,
        metavar="COL=LO:HI",
        help="allowed range",
    )
    roles.add_argument(
        "--missing",
        action="append",
        default=[],
        metavar="CODE",
        help="extra missing-value code, e.g. -999",
    )
    roles.add_argument("--sheet", help="Excel sheet name or number (default: the first)")
    priv = p.add_argument_group("privacy")
    priv.add_argument(
        "--auc-max", type=float, default=0.55, help="membership-AUC limit (default 0.55)"
    )
    priv.add_argument(
        "--w", type=float, help="force this perturbation weight (the audit still runs)"
    )
    priv.add_argument("--w-grid", type=_float_list, help="candidate w values, e.g. 0,0.25,0.5,0.75")
    priv.add_argument(
        "--repeats", type=int, help="audit repeats per w (default: until the AUC's SE < 0.01)"
    )
    priv.add_argument(
        "--audit-max-rows",
        type=int,
        default=50_000,
        help="audit larger tables on a random subsample of this many rows (safe side; default 50000)",
    )
    priv.add_argument(
        "--allow-risky", action="store_true", help="export even if no w meets the limit (recorded)"
    )
    priv.add_argument(
        "--protect-outliers",
        action="store_true",
        help="extra noise for records that stay recognisable",
    )
    priv.add_argument(
        "--dp-epsilon",
        type=float,
        help="formal DP mode: also release data from a DP-SGD-trained flow at this epsilon "
        "(needs --bounds for every column without a clinical preset)",
    )
    priv.add_argument("--dp-delta", type=float, help="delta for --dp-epsilon (default 1/n^1.1)")
    priv.add_argument(
        "--seed",
        type=int,
        help="reproducible run (otherwise noise comes from the OS's secure randomness): on the "
        "CPU the same computer and software versions give identical files; on a GPU it also "
        "turns on PyTorch's deterministic algorithms, which should make a rerun on the same GPU "
        "repeat, but this has not yet been checked on a GPU (GPU and CPU results differ in "
        "the last digits)",
    )
    model = p.add_argument_group("model and output")
    model.add_argument(
        "--device",
        default="auto",
        choices=("auto", "cpu", "cuda"),
        help="auto: the NVIDIA GPU when a test kernel runs on it, else the CPU with the reason "
        "shown and recorded in audit.json; cuda: stop with exit code 2 if the GPU cannot run; "
        "cpu: never touch the GPU (default auto)",
    )
    model.add_argument(
        "--budget",
        default="fast",
        choices=("fast", "default", "thorough"),
        help="model search effort",
    )
    model.add_argument(
        "--format", dest="fmt", default="csv", choices=("csv", "xlsx", "parquet", "sav", "dta")
    )
    model.add_argument(
        "--copies", type=int, default=1, help="number of independent synthetic tables"
    )
    model.add_argument("--no-report", action="store_true", help="skip the PDF report")
    stats = p.add_argument_group("analysis (real vs synthetic)")
    stats.add_argument("--analysis", choices=("cox", "ols", "logistic"))
    stats.add_argument("--outcome", help="outcome column for ols / logistic")
    stats.add_argument("--covariates", type=_name_list, default=(), help="COL,COL")
    stats.add_argument("--per", type=_per, default=(), help="effect per units, e.g. sbp=10")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="latent-synth", description="Privacy-protected synthetic copies of patient tables."
    )
    parser.add_argument("--version", action="version", version=f"latent-synth {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    common.add_argument("--quiet", action="store_true", help="no progress bar")
    # Typed with the base class: typeshed would otherwise want the parents to be _Parser too.
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", parser_class=_Parser
    )

    run = sub.add_parser("run", parents=[common], help="make a synthetic copy of INPUT")
    run.add_argument("input", type=str, help="CSV, TSV, Excel, Parquet, SAS, SPSS or Stata file")
    _add_run_options(run, out_required=False)

    demo = sub.add_parser(
        "demo", parents=[common], help="run the pipeline on the embedded, simulated demo cohort"
    )
    which = demo.add_mutually_exclusive_group()
    which.add_argument(
        "--study", default=DEFAULT_DEMO_STUDY, choices=DEMO_STUDIES, help="one sub-study"
    )
    which.add_argument("--all", action="store_true", help="every sub-study, then a meta-analysis")
    _add_run_options(demo)

    meta = sub.add_parser(
        "meta", parents=[common], help="DerSimonian-Laird meta-analysis across sites"
    )
    meta.add_argument(
        "files", nargs="*", type=str, help="one file per site (or one file with --by)"
    )
    meta.add_argument("--out", required=True, type=Path)
    meta.add_argument(
        "--summary", type=str, help="summary table: study, estimate, se (or ci_low, ci_high)"
    )
    meta.add_argument(
        "--synthetic",
        nargs="*",
        type=str,
        default=[],
        help="synthetic files, site by site, to compare",
    )
    meta.add_argument("--by", help="split one file into sites by this column")
    meta.add_argument("--analysis", default="cox", choices=("cox", "ols", "logistic"))
    meta.add_argument("--time")
    meta.add_argument("--event")
    meta.add_argument("--outcome")
    meta.add_argument("--exposure")
    meta.add_argument("--adjust", type=_name_list, default=())
    meta.add_argument(
        "--per", type=float, default=1.0, help="effect per this many units, e.g. 10 (mmHg)"
    )
    meta.add_argument("--method", default="dl", choices=("dl", "fe", "hksj"))
    meta.add_argument(
        "--exp",
        action="store_true",
        help="--summary estimates are log ratios (log HR / log OR): show them as ratios",
    )
    return parser


class TerminalProgress:
    """A one-line progress bar on stderr with stage, percentage and time left."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr is not None
        self.start = time.monotonic()
        self.last = 0.0
        self.tty = bool(self.enabled and sys.stderr.isatty())
        self.last_text = ""
        self.last_stage = ""  # the text, or the kind of partial result, of the last line
        self.last_line = 0.0

    def __call__(self, fraction: float, text: str, partial: object = None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.2 and fraction < 1.0 and text == self.last_text:
            return
        self.last = now
        elapsed = now - self.start
        left = elapsed / fraction * (1 - fraction) if fraction > 0.02 else None
        eta = (
            f"{int(left // 60)}:{int(left % 60):02d} left"
            if left is not None
            else "estimating time"
        )
        bar = "#" * int(fraction * 24)
        line = f"[{bar:<24}] {fraction * 100:5.1f}%  {eta:>15}  {text}"
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns
            sys.stderr.write("\r" + line[: width - 1].ljust(width - 1))
        else:  # a log file: one line per stage, or every 10 seconds within a long stage
            # epochs and audited w values of one model / audit are one stage (typed, not parsed)
            stage = (
                text
                if partial is None
                else f"{type(partial).__name__} {getattr(partial, 'model', '')}"
            )
            if stage != self.last_stage or now - self.last_line > 10 or fraction >= 1.0:
                sys.stderr.write(line + "\n")
                self.last_stage, self.last_line = stage, now
        self.last_text = text
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")


def _config_from_args(ns: argparse.Namespace, input_path: Path | str, **extra: Any) -> Any:
    from engine.pipeline import DEFAULT_GRID, RunConfig

    kinds = []
    for item in ns.kind:
        name, sep, kind = item.partition("=")
        if not sep:
            raise InputError(f"--kind '{item}': use COLUMN=KIND, e.g. stage=categorical")
        kinds.append((name, kind))
    per = tuple((name or (ns.covariates[0] if ns.covariates else ""), v) for name, v in ns.per)
    values = dict(
        input=input_path,
        out=ns.out,
        sheet=int(ns.sheet) if ns.sheet and ns.sheet.isdigit() else ns.sheet,
        missing_codes=tuple(ns.missing),
        time=ns.time,
        event=ns.event,
        drop=tuple(ns.drop),
        keep=tuple(ns.keep),
        kinds=tuple(kinds),
        bounds=tuple(ns.bounds),
        auc_max=ns.auc_max,
        w=ns.w,
        w_grid=ns.w_grid or DEFAULT_GRID,
        repeats=ns.repeats,
        audit_max_rows=ns.audit_max_rows,
        seed=ns.seed,
        device=ns.device,
        fmt=ns.fmt,
        budget=ns.budget,
        analysis=ns.analysis,
        outcome=ns.outcome,
        covariates=tuple(ns.covariates),
        per=per,
        allow_risky=ns.allow_risky,
        protect_outliers=ns.protect_outliers,
        copies=ns.copies,
        report=not ns.no_report,
        dp_epsilon=ns.dp_epsilon,
        dp_delta=ns.dp_delta,
    )
    values.update(extra)
    return RunConfig(**values)


def _print_summary(result: Any, out: Path) -> None:
    rel = result.release
    if result.verdict == "refused":
        return
    binding = result.audit.binding(rel["w"])
    print(
        f"{result.verdict}: {rel['rows']} synthetic rows at w = {rel['w']:.2f} "
        f"({binding.quote(result.config.auc_max)}); "
        f"closer probability {rel.get('closer_probability', float('nan')):.3f}, "
        f"median rank {rel.get('median_rank', float('nan')):.0f}. Files in {out}"
    )


def _run(ns: argparse.Namespace, progress: ProgressFn, cancel: CancelToken) -> int:
    from engine.pipeline import run_pipeline

    if ns.time is None and ns.event is None:
        _recognise_roles(ns)
    if ns.out is None:
        ns.out = default_out_folder(ns.input)
    config = _config_from_args(ns, ns.input)
    result = run_pipeline(config, progress, cancel)
    _print_summary(result, ns.out)
    if result.verdict != "refused":
        print(f"Wrote the synthetic copy to {ns.out.resolve()}")
    return 0


def default_out_folder(
    input_path: str | Path, today: date | None = None, folder: Path | None = None
) -> Path:
    """A new ``<input name>-synthetic-<date>`` folder in ``folder`` (default: the current
    folder, the convention of command-line tools); ``-2``, ``-3`` ... are added when it exists,
    so an earlier export is never overwritten.

    Example:
        >>> import tempfile
        >>> here = Path(tempfile.mkdtemp())
        >>> default_out_folder("data/cohort.csv", date(2025, 3, 1), here).name
        'cohort-synthetic-2025-03-01'
        >>> (here / "cohort-synthetic-2025-03-01").mkdir()
        >>> default_out_folder("cohort.csv", date(2025, 3, 1), here).name
        'cohort-synthetic-2025-03-01-2'
    """
    stamp = (today or date.today()).isoformat()
    base = (folder or Path.cwd()) / f"{Path(input_path).stem}-synthetic-{stamp}"
    candidate, number = base, 1
    while candidate.exists():
        number += 1
        candidate = base.with_name(f"{base.name}-{number}")
    return candidate


def _recognise_roles(ns: argparse.Namespace) -> None:
    """Without --time/--event: use a time/event pair recognised by name and coding, and say so."""
    from engine.tables.read import read_table
    from engine.tables.schema import recognise_survival_roles

    try:
        sheet = int(ns.sheet) if ns.sheet and ns.sheet.isdigit() else ns.sheet
        frame = read_table(ns.input, sheet=sheet, missing_codes=tuple(ns.missing)).frame
    except LatentSynthError:
        return  # the run itself reports the problem with the file
    roles = recognise_survival_roles(frame.drop(columns=[c for c in ns.drop if c in frame]))
    for note in roles.notes:
        print(f"survival columns: {note}")
    if roles.time and roles.event:
        ns.time, ns.event = roles.time, roles.event
        print(
            f"recognised survival columns: time '{roles.time}', event '{roles.event}' "
            "(give --time and --event to choose others)"
        )


def demo_input() -> Path:
    """The embedded demo cohort (simulated from the paper's Table 3)."""
    from importlib.resources import files

    return Path(str(files("resources").joinpath("demo_cohort.csv")))


def _scaled(progress: ProgressFn, start: float, share: float, prefix: str) -> ProgressFn:
    def inner(fraction: float, text: str) -> None:
        progress(start + fraction * share, prefix + text)

    return inner


def _demo(ns: argparse.Namespace, progress: ProgressFn, cancel: CancelToken) -> int:
    from engine.pipeline import run_pipeline

    source = demo_input()
    studies: tuple[str, ...] = DEMO_STUDIES if ns.all else (ns.study,)
    time_col = ns.time or "time_cvd_years"
    event_col = ns.event or "cvd"
    ns.time, ns.event = time_col, event_col
    if ns.analysis is None:
        ns.analysis, ns.per = "cox", ns.per or (("sbp", 10.0),)
    share = 1.0 / (len(studies) + (1 if ns.all else 0))
    released: list[str] = []
    for i, study in enumerate(studies):
        out = ns.out / study.replace(" ", "_") if ns.all else ns.out
        config = _config_from_args(
            ns,
            source,
            out=out,
            subset=("study", study),
            input_label=f"demo cohort (simulated), {study}",
        )
        try:
            result = run_pipeline(config, _scaled(progress, i * share, share, f"{study}: "), cancel)
        except PrivacyRefused as refusal:
            if not ns.all:
                raise
            print(f"{study}: refused: {refusal}", file=sys.stderr)
            continue
        released.append(study)
        _print_summary(result, out)
    refused = tuple(s for s in studies if s not in released)
    studies = tuple(released)
    if ns.all:
        from engine.pipeline.meta import MetaConfig, run_meta

        if len(studies) < 2:
            print(
                f"meta-analysis not run: {len(studies)} sub-studies were released and at least 2 "
                "are needed",
                file=sys.stderr,
            )
            return 3

        files = [ns.out / s.replace(" ", "_") / f"synthetic.{ns.fmt}" for s in studies]
        meta_cfg = MetaConfig(
            real_files=(source,),
            by="study",
            synthetic_files=tuple(files),
            out=ns.out / "meta",
            analysis="cox",
            time=time_col,
            event=event_col,
            exposure="sbp",
            adjust=("age", "totchol", "hdl"),
            per=10.0,
            method="dl",
            include=studies,
            excluded=refused,
        )
        if refused:
            print(
                f"meta-analysis: {', '.join(refused)} left out of both the real and the synthetic "
                "pooling (release refused), so both pool the same studies"
            )
        meta_progress = _scaled(progress, 1.0 - share, share, "meta-analysis: ")
        run_meta(meta_cfg, progress=meta_progress, cancel=cancel)
        print(f"meta-analysis written to {ns.out / 'meta'}")
    return 0


def _meta(ns: argparse.Namespace, progress: ProgressFn, cancel: CancelToken) -> int:
    from engine.pipeline.meta import MetaConfig, run_meta

    if not ns.files and ns.summary is None:
        raise InputError(
            "meta: give one file per site, one file with --by COLUMN, or --summary FILE"
        )
    config = MetaConfig(
        real_files=tuple(ns.files),
        synthetic_files=tuple(ns.synthetic),
        summary=ns.summary,
        by=ns.by,
        out=ns.out,
        analysis=ns.analysis,
        time=ns.time,
        event=ns.event,
        outcome=ns.outcome,
        exposure=ns.exposure,
        adjust=tuple(ns.adjust),
        per=ns.per,
        method=ns.method,
        exponentiate=True if ns.exp else None,
    )
    result = run_meta(config, progress=progress, cancel=cancel)
    print(f"pooled estimate {result.summary_line()} ; files in {ns.out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("MPLBACKEND", "Agg")
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.command is None:
        parser.print_help(sys.stderr)
        return 2
    cancel = CancelToken()
    progress = TerminalProgress(enabled=not ns.quiet)
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum: int, frame: Any) -> None:
        if cancel.cancelled:  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        cancel.cancel()
        sys.stderr.write(
            "\nlatent-synth: cancelling at the next step (Ctrl-C again to stop at once)\n"
        )

    signal.signal(signal.SIGINT, on_sigint)
    handler = {"run": _run, "demo": _demo, "meta": _meta}[ns.command]
    try:
        return handler(ns, progress, cancel)
    except (Cancelled, KeyboardInterrupt):
        progress.close()
        print("latent-synth: cancelled; no output files were written", file=sys.stderr)
        return 130
    except LatentSynthError as err:
        progress.close()
        print(
            f"latent-synth: {'refused' if err.exit_code == 3 else 'error'}: {err}", file=sys.stderr
        )
        return err.exit_code
    except Exception as err:  # noqa: BLE001 - the last line of defence against tracebacks
        progress.close()
        if ns.debug:
            raise
        print(
            f"latent-synth: internal error ({type(err).__name__}: {err}); no output was written. "
            "Please report it; run again with --debug for details",
            file=sys.stderr,
        )
        return 1
    finally:
        progress.close()
        signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    sys.exit(main())
