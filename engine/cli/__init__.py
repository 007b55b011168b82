"""The ``latent-synth`` command line (CONTRACTS.md): ``run``, ``demo``, ``meta``. (With no
arguments the console script opens the desktop wizard instead: see ``desktop/launch.py``.)

Exit codes: 0 success; 2 bad usage or input (one line on stderr naming the file, column or row
and what to do); 3 refused for privacy; 130 cancelled (Ctrl-C). Never a traceback for a user
error: unexpected errors print one line and, with ``--debug``, the traceback.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from engine import __version__
from engine.errors import Cancelled, InputError, LatentSynthError
from engine.progress import CancelToken, ProgressFn

DEMO_STUDIES = ("ARIC F", "ARIC M", "CARDIA F", "CARDIA M", "CHS F", "CHS M", "MESA F", "MESA M",
                "Framingham F", "Framingham M", "Jackson Heart F", "Jackson Heart M")  # fmt: skip
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
            raise argparse.ArgumentTypeError(f"--per '{part}': use NUMBER or COLUMN=NUMBER") from None
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
    roles.add_argument("--event", help="event column (1 = event); COL=VALUE names the event value")
    repeatable = (  # (option, metavar, type, help): each may be given several times
        ("--drop", None, str, "exclude this column (repeatable); never exported"),
        ("--keep", None, str, "synthesize a column that looks like an identifier"),
        ("--kind", "COL=KIND", str, "override a column's kind"),
        ("--bounds", "COL=LO:HI", _bound, "allowed range"),
        ("--missing", "CODE", str, "extra missing-value code, e.g. -999"),
        ("--keys", "COL,COL", str, "columns an attacker may know, for the disclosure measures"),
        ("--rule", "RULE", str, "a rule every synthetic row keeps: 'a <= b', 'a >= 0', "
         "'a determines b', 'b only when a = v'"),
        ("--no-rule", "RULE", str, "a rule found in the real rows not to keep (as listed)"),
    )
    for option, metavar, kind, text in repeatable:
        roles.add_argument(
            option, action="append", default=[], metavar=metavar, type=kind, help=text
        )
    roles.add_argument("--sheet", help="Excel sheet name or number (default: the first)")
    complete = "leave out rows with a missing value instead of modelling the missing values"
    roles.add_argument("--complete-cases", action="store_true", help=complete)
    priv = p.add_argument_group("privacy")
    limit = "membership-AUC limit (default 0.55)"
    priv.add_argument("--auc-max", type=float, default=0.55, help=limit)
    force = "force this perturbation weight (the audit still runs)"
    priv.add_argument("--w", dest="forced_w", metavar="W", type=float, help=force)
    priv.add_argument("--w-grid", type=_float_list, help="candidate w values, e.g. 0,0.25,0.5,0.75")
    repeats = "audit repeats per w (default: until the AUC's SE < 0.01)"
    priv.add_argument("--repeats", type=int, help=repeats)
    priv.add_argument(
        "--audit-max-rows",
        type=int,
        default=50_000,
        help="audit larger tables on a random subsample of this many rows (safe side; default 50000)",
    )
    risky = "export even if no w meets the limit (recorded)"
    outliers = "extra noise for records that stay recognisable"
    priv.add_argument("--allow-risky", action="store_true", help=risky)
    priv.add_argument("--protect-outliers", action="store_true", help=outliers)
    priv.add_argument(
        "--dp-epsilon",
        type=float,
        help="formal DP mode: also release data from a DP-SGD-trained flow at this epsilon "
        "(needs --bounds for every column without a clinical preset)",
    )
    margin = "lower the disclosure rule's margin (percentage points)"
    priv.add_argument("--disclosure-margin", type=float, metavar="POINTS", help=margin)
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
    efforts = ("fast", "default", "thorough")
    model.add_argument("--budget", default="fast", choices=efforts, help="model search effort")
    model.add_argument(
        "--format",
        dest="file_format",
        default="csv",
        choices=("csv", "xlsx", "parquet", "sav", "dta"),
    )
    model.add_argument("--copies", type=int, default=1, help="independent synthetic tables")
    model.add_argument("--no-report", action="store_true", help="skip the PDF report")
    stats = p.add_argument_group("analysis (real vs synthetic)")
    stats.add_argument("--analysis", choices=("cox", "ols", "logistic"))
    stats.add_argument("--outcome", help="outcome column for ols / logistic")
    stats.add_argument("--covariates", type=_name_list, default=(), help="COL,COL")
    stats.add_argument("--exposure", help="treatment column whose effect leads ('none': none)")
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


def _config_from_args(ns: argparse.Namespace, input_path: Path | str, **extra: Any) -> Any:
    from engine.pipeline import DEFAULT_GRID, RunConfig

    kinds = []
    for item in ns.kind:
        name, sep, kind = item.partition("=")
        if not sep:
            raise InputError(f"--kind '{item}': use COLUMN=KIND, e.g. stage=categorical")
        kinds.append((name, kind))
    per = tuple((name or (ns.covariates[0] if ns.covariates else ""), v) for name, v in ns.per)
    same = (
        "out", "time", "event", "auc_max", "forced_w", "repeats", "audit_max_rows", "seed",
        "device", "file_format", "budget", "analysis", "outcome", "allow_risky",
        "protect_outliers", "copies", "dp_epsilon", "dp_delta", "complete_cases", "disclosure_margin",
    )  # fmt: skip
    values: dict[str, Any] = {name: getattr(ns, name) for name in same}
    values.update(
        input=input_path,
        sheet=int(ns.sheet) if ns.sheet and ns.sheet.isdigit() else ns.sheet,
        missing_codes=tuple(ns.missing),
        drop=tuple(ns.drop),
        keep=tuple(ns.keep),
        kinds=tuple(kinds),
        bounds=tuple(ns.bounds),
        w_grid=ns.w_grid or DEFAULT_GRID,
        keys=tuple(k for v in ns.keys for k in _name_list(v)) if ns.keys else None,
        rules=tuple(ns.rule), rules_off=tuple(ns.no_rule),
        covariates=tuple(ns.covariates),
        exposure=None if ns.exposure is None else ("" if ns.exposure == "none" else ns.exposure),
        per=per,
        report=not ns.no_report,
    )
    if ns.event and "=" in ns.event:  # --event COL=VALUE: VALUE means the event happened
        values["event"], _, values["event_value"] = ns.event.partition("=")
    values.update(extra)
    return RunConfig(**values)


def _run(ns: argparse.Namespace, progress: ProgressFn, cancel: CancelToken) -> int:
    from engine.pipeline import run_pipeline
    from engine.pipeline.console import default_out_folder, print_summary, recognise_roles

    found = recognise_roles(ns) if ns.time is None and ns.event is None else {}
    if ns.out is None:
        ns.out = default_out_folder(ns.input)
    config = _config_from_args(ns, ns.input, **found)
    result = run_pipeline(config, progress, cancel)
    print_summary(result, ns.out)
    if result.released is not None:
        print(f"Wrote the synthetic copy to {ns.out.resolve()}")
    return 0


def demo_input() -> Path:
    """The embedded demo cohort (kept here for callers of the command line's helper)."""
    from engine.pipeline.demo import demo_input as embedded

    return embedded()


def _demo(ns: argparse.Namespace, progress: ProgressFn, cancel: CancelToken) -> int:
    from engine.pipeline.console import print_summary
    from engine.pipeline.demo import DEMO_EVENT, DEMO_TIME, run_demo

    ns.time, ns.event = ns.time or DEMO_TIME, ns.event or DEMO_EVENT
    if ns.analysis is None:
        ns.analysis, ns.per = "cox", ns.per or (("sbp", 10.0),)
    return run_demo(
        _config_from_args(ns, demo_input()),
        DEMO_STUDIES if ns.all else (ns.study,),
        ns.out,
        every_study=ns.all,
        progress=progress,
        cancel=cancel,
        on_released=print_summary,
        echo=_echo,
    )


def _echo(text: str, to_stderr: bool) -> None:
    print(text, file=sys.stderr if to_stderr else sys.stdout)


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
    from engine.pipeline.console import TerminalProgress

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
        from engine.pipeline.console import command_line_message as with_option

        word = "refused" if err.exit_code == 3 else "error"
        print(f"latent-synth: {word}: {with_option(str(err), ns.command)}", file=sys.stderr)
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


def program(argv: Sequence[str] | None = None) -> NoReturn:
    """The installed command's one run: fewer garbage collections, and no interpreter teardown
    once it is done (:func:`engine.pipeline.console.collect_less` and ``exit_now``)."""
    from engine.pipeline.console import collect_less, exit_now

    collect_less()
    exit_now(main(argv))


if __name__ == "__main__":
    program()
