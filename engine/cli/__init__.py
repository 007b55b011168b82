"""The ``latent-synth`` command line (docs/contracts.md): ``run``, ``demo``, ``meta``. (With no
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

from engine.cli.options import (
    DEFAULT_DEMO_STUDY,
    DEMO_STUDIES,
    build_parser,
    config_from_args,
)
from engine.errors import Cancelled, InputError, LatentSynthError
from engine.progress import CancelToken, ProgressFn

# The name the tests and benchmarks import (the parser lives in engine.cli.options).
_config_from_args = config_from_args
__all__ = ["DEFAULT_DEMO_STUDY", "DEMO_STUDIES", "build_parser", "demo_input", "main", "program"]


def _run(ns: argparse.Namespace, progress: ProgressFn, cancel: CancelToken) -> int:
    from engine.pipeline import run_pipeline
    from engine.pipeline.console import default_out_folder, print_summary, recognise_roles

    found = recognise_roles(ns) if ns.time is None and ns.event is None else {}
    if ns.out is None:
        ns.out = default_out_folder(ns.input)
    config = config_from_args(ns, ns.input, **found)
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
        config_from_args(ns, demo_input()),
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
