"""The command line's options: the parser of ``run``, ``demo`` and ``meta`` (with its one-line
usage errors and the types of the list-valued options), and the RunConfig the options ask for.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

from engine import __version__
from engine.errors import InputError

DEMO_STUDIES = tuple(
    f"{cohort} {sex}"
    for cohort in ("ARIC", "CARDIA", "CHS", "MESA", "Framingham", "Jackson Heart")
    for sex in ("F", "M")
)
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
    roles.add_argument("--event", help="event column (1 = event); COL=VALUE names the event value")
    repeatable = (  # (option, metavar, type, help): each may be given several times
        ("--drop", None, str, "exclude this column (repeatable); never exported"),
        ("--keep", None, str, "synthesize a column that looks like an identifier"),
        ("--kind", "COL=KIND", str, "override a column's kind"),
        ("--bounds", "COL=LO:HI", _bound, "allowed range"),
        ("--missing", "CODE", str, "extra missing-value code, e.g. -999"),
        ("--keys", "COL,COL", str, "columns an attacker may know, for the disclosure measures"),
        (
            "--rule",
            "RULE",
            str,
            "a rule every synthetic row keeps: 'a <= b', 'a >= 0', "
            "'a determines b', 'b only when a = v'",
        ),
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
        help="audit larger tables on a random subsample of this many rows "
        "(safe side; default 50000)",
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


def config_from_args(ns: argparse.Namespace, input_path: Path | str, **extra: Any) -> Any:
    from engine.pipeline import DEFAULT_GRID, RunConfig

    kinds = []
    for item in ns.kind:
        name, sep, kind = item.partition("=")
        if not sep:
            raise InputError(f"--kind '{item}': use COLUMN=KIND, e.g. stage=categorical")
        kinds.append((name, kind))
    per = tuple((name or (ns.covariates[0] if ns.covariates else ""), v) for name, v in ns.per)
    same = (
        "out time event auc_max forced_w repeats audit_max_rows seed device file_format budget "
        "analysis outcome allow_risky protect_outliers copies dp_epsilon dp_delta complete_cases "
        "disclosure_margin"
    ).split()
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
        rules=tuple(ns.rule),
        rules_off=tuple(ns.no_rule),
        covariates=tuple(ns.covariates),
        exposure=None if ns.exposure is None else ("" if ns.exposure == "none" else ns.exposure),
        per=per,
        report=not ns.no_report,
    )
    if ns.event and "=" in ns.event:  # --event COL=VALUE: VALUE means the event happened
        values["event"], _, values["event_value"] = ns.event.partition("=")
    values.update(extra)
    return RunConfig(**values)
