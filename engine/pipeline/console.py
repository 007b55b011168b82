"""How a run shows itself on a terminal (the command line's face, with no argparse): a progress
bar with the time left, the default output folder, the survival columns recognised when none
are named, and the one-line summary of a release.

References: docs/contracts.md (``latent-synth run`` without ``--out``; exit codes and messages).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import re
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from engine.errors import LatentSynthError

if TYPE_CHECKING:
    from engine.pipeline.results import RunResult


class TerminalProgress:
    """A one-line progress bar on stderr with stage, percentage and time left."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr is not None
        self.start = time.monotonic()
        self.last = 0.0
        self.tty = bool(self.enabled and sys.stderr.isatty())
        self.last_text = ""
        self.last_stage = ""
        self.last_line = 0.0
        self.stage_text, self.stage_start = "", 0.0

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
        else:  # a log file: one line per stage when it ends, with its time
            self._log(stage_of(text), text, now, fraction)
        self.last_text = text
        sys.stderr.flush()

    def _log(self, stage: str, text: str, now: float, fraction: float) -> None:
        """Write the finished stage's line when a new stage starts (and a "still running"
        line every :data:`HEARTBEAT_S` seconds within a long one)."""
        if not self.last_stage:
            self.last_stage, self.stage_text, self.stage_start = stage, text, now
            self.last_line = now
        elif stage != self.last_stage:
            self._write_stage(now, fraction)
            self.last_stage, self.stage_text, self.stage_start = stage, text, now
        elif now - self.last_line > HEARTBEAT_S:
            took = now - self.stage_start
            sys.stderr.write(
                f"{_clock(now - self.start)}  {self.stage_text}: still running ({took:.0f} s)\n"
            )
            self.last_line = now

    def _write_stage(self, now: float, fraction: float) -> None:
        took = now - self.stage_start
        sys.stderr.write(
            f"{_clock(now - self.start)}  {fraction * 100:3.0f}%  {self.stage_text} ({took:.1f} "
            "s)\n"
        )
        self.last_line = now

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")
        elif self.enabled and self.last_stage:
            now = time.monotonic()
            self._write_stage(now, 1.0)
            sys.stderr.write(f"{_clock(now - self.start)}  done in {now - self.start:.1f} s\n")
            sys.stderr.flush()
            self.last_stage = ""


HEARTBEAT_S = 30.0
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?(?:e-?\d+)?")


def stage_of(text: str) -> str:
    """The stage a progress text belongs to, for a log: its first two parts (split at ": ")
    with every number blanked, so the epochs of one model, the w values of one audit split or
    the candidates of one search are one stage each.

    Example:
        >>> first = stage_of("audit: w = 0.35 (split 1), AUC 0.481")
        >>> first == stage_of("audit: w = 0.4 (split 1), AUC 0.5")
        True
        >>> stage_of("choosing flow, candidate 1/2 (2 flows): training flow: epoch 3/300")
        'choosing flow, candidate #/# (# flows): training flow'
    """
    return ": ".join(_NUMBER.sub("#", part) for part in text.split(": ")[:2])


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def print_summary(result: RunResult, out: Path) -> None:
    """One line on stdout: the verdict, rows, w, the deciding attack and the release metrics
    (nothing for a refused run)."""
    rel = result.released
    if rel is None or result.audit is None:
        return
    binding = result.audit.binding(rel.w)
    attack = "" if binding is None else f" ({binding.quote(result.config.auc_max)})"
    if rel.chosen_by.startswith("the disclosure rule"):  # issue 29: the rule, not an attack
        attack = f" (w set by {rel.chosen_by})"
    print(
        f"{result.verdict}: {rel.rows} synthetic rows at w = {rel.w:.2f}{attack}; "
        f"closer probability {rel.metrics.closer_probability:.3f}, "
        f"median rank {rel.metrics.median_rank:.0f}. Files in {out}"
    )
    plan = getattr(result.fidelity, "plan", None)
    if plan is not None:  # the model the comparison rests on (issue 44), one choice a line
        for line in plan.lines():
            print(f"  {line}")
    verdict = getattr(result.fidelity, "verdict", None)
    if verdict is not None:
        print(f"  Fidelity: {verdict.line}")


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


def recognise_roles(ns: Any) -> dict[str, Any]:
    """Without --time/--event: use the survival pair recognised by name and coding, and say so
    in one line; the settings for the run's record (``roles_how``) are returned.

    A pair the wizard would ask about (a censoring-looking event, a time not named like one,
    two close candidates) is used too, with the likely coding, and the line says why it is not
    certain and how to choose others; only an event that is a blind guess (the first of several
    two-valued columns, none named like an event) is not used, and the line says so. Why not stop
    with exit 2 instead: the survival model compared on the real and synthetic rows is a check of
    fidelity, not a privacy decision (the audit and the release do not depend on it), so a likely
    pair costs nothing a line cannot undo, while a headless run that stops to ask costs a second
    run, and a run without a pair checks no model at all (issue 44). The wizard keeps asking its one
    question.
    """
    from engine.files.read import read_table

    try:
        sheet = int(ns.sheet) if ns.sheet and ns.sheet.isdigit() else ns.sheet
        frame = read_table(ns.input, sheet=sheet, missing_codes=tuple(ns.missing)).frame
    except LatentSynthError:
        return {}  # the run itself reports the problem with the file
    found = command_line_roles(frame.drop(columns=[c for c in ns.drop if c in frame]))
    for line in found.lines:
        print(line)
    if found.time is None or found.event is None:
        return {}
    ns.time = found.time
    ns.event = found.event if found.event_value is None else f"{found.event}={found.event_value}"
    return {"roles_how": found.how}


@dataclass(frozen=True)
class CommandLineRoles:
    """The survival pair a run without --time/--event uses, how it was found, and the lines
    that say so (``how``: "recognised", or "likely, used: " and why it is not certain)."""

    time: str | None
    event: str | None
    event_value: Any
    how: str | None
    lines: tuple[str, ...]


def command_line_roles(frame: Any) -> CommandLineRoles:
    """The pair the command line uses: a recognised one, else the likely one the wizard would
    ask about (with its likely coding), else none.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"pfs": [5.0, 3.0, 9.0, 4.0], "progressed": [1, 0, 1, 0]})
        >>> r = command_line_roles(df); (r.time, r.event, r.how)
        ('pfs', 'progressed', 'recognised')
    """
    from engine.columns.schema import recognise_survival_roles

    roles = recognise_survival_roles(frame)
    notes = tuple(f"survival columns: {note}" for note in roles.notes)
    if roles.time and roles.event:
        said = (
            f"recognised survival columns: time '{roles.time}', event '{roles.event}' "
            "(give --time and --event to choose others)"
        )
        return CommandLineRoles(roles.time, roles.event, None, "recognised", (*notes, said))
    if not roles.must_ask or roles.likely_time is None or roles.likely_event is None:
        return CommandLineRoles(None, None, None, None, notes)
    if _blind_guess(roles.likely_event, roles.event_candidates):
        said = (
            f"survival columns: no event column is named like one ('{roles.likely_event}' is "
            f"one of several two-valued columns), so no survival model is compared; to compare "
            f"one, run again with --time {roles.likely_time} --event COL"
        )
        return CommandLineRoles(None, None, None, None, (*notes, said))
    value = _value_text(roles.event_value)
    coded = "" if value is None else f", {value} taken as the event"
    said = (
        f"likely survival columns, used: time '{roles.likely_time}', event "
        f"'{roles.likely_event}'{coded} (not certain: {roles.question}); to choose others, "
        f"run again with --time COL --event COL, or --event COL=VALUE for the event's value"
    )
    return CommandLineRoles(
        roles.likely_time,
        roles.likely_event,
        value,
        f"likely, used: {roles.question}",
        (*notes, said),
    )


def _blind_guess(event: str, candidates: tuple[str, ...]) -> bool:
    """Whether the likely event is only the first of several two-valued columns none of which
    is named like an event (``ascites`` before ``hepatomegaly``, ``TRT`` before ``SEX``): a
    model of the time to such a column would be compared as if it were the user's, so none is.
    """
    from engine.columns.survival_names import event_score

    unnamed = [c for c in candidates if event_score(c) == 0]
    return event_score(event) == 0 and len(unnamed) > 1


def _value_text(value: Any) -> str | None:
    """An event value as the file writes it (``0``, ``2``, ``false``), None for the usual."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# The settings engine messages name in plain words (the wizard shows them as they are), and the
# command-line option that sets each: the command line adds the option to its one-line error.
COMMAND_LINE_OPTIONS = {
    "the time column": "--time COL",
    "the event column": "--event COL",
    "the columns to drop": "--drop COL",
    "the columns to keep": "--keep COL",
    "the column kinds": "--kind COL=KIND",
    "the bounds setting": "--bounds COL=LO:HI",
    "the outcome column": "--outcome COL",
    "the covariates": "--covariates COL,COL",
    "the effect-per-units setting": "--per COL=UNITS",
    "the number of copies": "--copies N",
    "the output folder": "--out DIR",
    "the key columns": "--keys COL,COL",
    "the disclosure margin": "--disclosure-margin POINTS",
}
META_OPTIONS = {"the covariates": "--exposure COL --adjust COL,COL"}


def command_line_message(text: str, command: str = "run") -> str:
    """An engine message with the command-line options for the settings it names appended.

    Example:
        >>> command_line_message("the event column must be binary (0/1).")
        'the event column must be binary (0/1). (command line: --event COL)'
        >>> command_line_message(
        ...     "no covariates given: list them in the covariates", "meta"
        ... )  # doctest: +NORMALIZE_WHITESPACE
        'no covariates given: list them in the covariates
        (command line: --exposure COL --adjust COL,COL)'
        >>> command_line_message("AUC limit 0.4: the limit must be above 0.5")
        'AUC limit 0.4: the limit must be above 0.5'
    """
    options = {**COMMAND_LINE_OPTIONS, **(META_OPTIONS if command == "meta" else {})}
    named = [option for setting, option in options.items() if setting in text]
    return f"{text} (command line: {', '.join(named)})" if named else text


def exit_now(code: int) -> NoReturn:
    """End the command with exit status ``code``, skipping the interpreter's teardown.

    Why: once a run is done Python frees every module and object one by one before the process
    ends: 1.3 s after a 300-row run and after a 100,000-row run alike on a 2-core machine
    (importing torch alone leaves 0.65 s of it; ``os._exit`` ends the same process in 0.04 s),
    a tenth of a small table's command, paid after the files are written and closed. The
    operating system frees the memory at once. What a normal exit does that matters still
    happens: the exit handlers run (``atexit``: logging, coverage) and standard output and
    error are flushed. When a thread the normal exit would wait for is still alive (one that is
    not a daemon; a refusal or an error can leave one working), the normal exit runs instead.
    """
    main = threading.main_thread()
    if any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe: nothing more to say there
            if stream is not None:
                stream.flush()
    os._exit(code)


COMMAND_GC_THRESHOLD = 10_000  # new objects between young collections (Python's default: 700)


def collect_less() -> None:
    """Fewer garbage collections for the command's one run: the youngest generation every
    10,000 new objects instead of Python's 700 (the older generations' ratios unchanged).

    Why: a run's libraries (torch, scipy, pandas, matplotlib) leave some 370,000 long-lived
    objects, and every full collection walks them all: 6-7 full collections took 0.6-0.8 s of
    a 300-row run and about 0.8 s of the 100,000- and 1,000,000-row runs (0.85-1.05 s with the
    younger ones); with this threshold none to two, 0.3-0.35 s in all. Memory is still freed
    by reference counting at once; only garbage caught in reference cycles waits longer (the
    million-row run's peak 1,707 -> 1,719 MiB). The command line only: the wizard is a
    long-lived process and keeps Python's default.
    """
    gc.set_threshold(COMMAND_GC_THRESHOLD, *gc.get_threshold()[1:])
