"""One click from a loaded table to an export the output checker can sign (issue 16).

::

    Import page ── "Make a safe synthetic copy" ──► plan_outcome(frame)  (ask once if unclear)
        └─► oneclick_config(fields) ──► run_oneclick on a worker (desktop.worker.Task):
              prepare ─► synthesize (audit, choice of w, release) ─► privacy decision
                 released: write_outputs(result, default_output_folder(...))
                 refused:  nothing is written at all
        └─► Summary page: recommendation, fidelity in one line, folder, Open folder / Open report

:func:`run_oneclick` is :func:`engine.pipeline.run_pipeline` with the writing moved after the
privacy decision: a refusal leaves no folder, no report and no audit record that a checker could
mistake for a release. The recognised roles and the engine's defaults are used; the only
question ever asked is which columns hold the survival outcome, and only when the engine's
schema did not recognise exactly one pair (:func:`plan_outcome`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from desktop.qt import QtCore, QtWidgets

# What the summary says lives in desktop.summary_text; the tests import these from here.
from desktop.summary_text import (
    RAISING_THE_LIMIT,  # noqa: F401
    REFUSAL_ADVICE,  # noqa: F401
    fidelity_text,  # noqa: F401
)

MAX_CHOICES = 4  # per role: more makes the one question long


# -- where it writes --------------------------------------------------------------------------
def documents_folder() -> Path:
    """The user's documents folder (Qt's idea of it), else the home folder."""
    location = QtCore.QStandardPaths.writableLocation(
        QtCore.QStandardPaths.StandardLocation.DocumentsLocation
    )
    return Path(location) if location else Path.home()


def default_output_folder(
    input_path: str | Path, today: date | None = None, base: Path | None = None
) -> Path:
    """``<Documents>/latent-synth/<input name> <YYYY-MM-DD>``, never an existing folder.

    Never beside the input (a TRE's input area is often read-only and shared); `` (2)``,
    `` (3)`` ... are added when the folder exists, so an earlier export is never overwritten.
    The wizard's Export page offers the same folder.

    Example:
        >>> import tempfile
        >>> home = Path(tempfile.mkdtemp())
        >>> default_output_folder("/data/cohort.csv", date(2025, 3, 1), home).name
        'cohort 2025-03-01'
        >>> (home / "latent-synth" / "cohort 2025-03-01").mkdir(parents=True)
        >>> default_output_folder("cohort.csv", date(2025, 3, 1), home).name
        'cohort 2025-03-01 (2)'
    """
    root = (base if base is not None else documents_folder()) / "latent-synth"
    stem = Path(input_path).stem or "table"
    first = root / f"{stem} {(today or date.today()).isoformat()}"
    candidate, number = first, 1
    while candidate.exists():
        number += 1
        candidate = first.with_name(f"{first.name} ({number})")
    return candidate


# -- the one question ---------------------------------------------------------------------
@dataclass(frozen=True)
class OutcomeChoice:
    """A survival outcome (follow-up time and event) or none (distributions only)."""

    time: str | None
    event: str | None
    event_value: Any = None  # the value meaning "the event happened" when not the usual one
    exposure: str | None = None  # the treatment or arm asked about; "" = none (NO_EXPOSURE)

    @property
    def label(self) -> str:
        if self.time is None or self.event is None:
            return "No survival outcome: compare distributions and correlations only"
        means = (
            "" if self.event_value is None else f" (“{self.event_value}” means the event happened)"
        )
        return f"Follow-up time “{self.time}” with event “{self.event}”{means}"


NO_OUTCOME = OutcomeChoice(None, None)


@dataclass(frozen=True)
class OutcomePlan:
    """What the one-click path does about the survival outcome."""

    recognised: OutcomeChoice | None  # exactly one pair: used without asking
    choices: tuple[OutcomeChoice, ...]  # else these are offered (NO_OUTCOME last)
    exposures: tuple[str, ...] = ()  # columns that look like a treatment or arm: asked too

    @property
    def must_ask(self) -> bool:
        return (self.recognised is None and len(self.choices) > 1) or bool(self.exposures)


def plan_outcome(frame: Any) -> OutcomePlan:
    """The survival pair the engine's schema recognises, else the candidates to ask about.

    Candidates use the engine's own rules (``recognise_survival_roles``): a time column is one
    the schema would accept as the follow-up time beside an unambiguous event; an event is one it
    would accept by name, or any column coded 0/1 (e.g. ``cvd``), which names alone would miss.
    """
    from engine import exposure_candidates, recognise_survival_roles

    found = recognise_survival_roles(frame)
    roles = {found.time, found.event, found.likely_time, found.likely_event} - {None}
    exposures = exposure_candidates(frame, exclude=roles)[:MAX_CHOICES]
    if found.time and found.event:
        recognised = OutcomeChoice(found.time, found.event, found.event_value)
        if exposures:  # asked with the exposure, the recognised pair preselected
            return OutcomePlan(None, (recognised, NO_OUTCOME), exposures)
        return OutcomePlan(recognised, ())
    times = list(found.time_candidates[:MAX_CHOICES])
    events = list(found.event_candidates[:MAX_CHOICES])
    pairs = [OutcomeChoice(t, e) for t in times for e in events]
    if found.likely_time and found.likely_event:  # the likely answer first: preselected
        likely = OutcomeChoice(found.likely_time, found.likely_event, found.event_value)
        pairs = [likely, *(p for p in pairs if (p.time, p.event) != (likely.time, likely.event))]
        if "censoring" in str(found.question):  # a censoring-looking name: the other reading too
            other = 0 if found.event_value is None else 1
            pairs.insert(1, OutcomeChoice(likely.time, likely.event, other))
    return OutcomePlan(None, (*pairs, NO_OUTCOME) if pairs or exposures else (), exposures)


class OutcomeQuestion(QtWidgets.QDialog):
    """The one short question: which columns are the survival outcome, or none."""

    def __init__(
        self,
        choices: tuple[OutcomeChoice, ...],
        parent: QtWidgets.QWidget | None,
        exposures: tuple[str, ...] = (),
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("latent-synth: one question")
        self.setAccessibleName("Which columns hold the survival outcome")
        layout = QtWidgets.QVBoxLayout(self)
        text = QtWidgets.QLabel(
            "Which columns hold the survival outcome? The synthetic copy is checked against your "
            "table with a survival model on these columns; without one, only distributions and "
            "correlations are compared."
        )
        text.setWordWrap(True)
        layout.addWidget(text)
        self.choices = choices
        self.combo = QtWidgets.QComboBox()
        self.combo.setAccessibleName("Survival outcome")
        self.combo.addItems([c.label for c in choices])
        layout.addWidget(self.combo)
        self.exposures = exposures
        self.exposure_combo = QtWidgets.QComboBox()
        self.exposure_combo.setAccessibleName("Treatment or exposure")
        if exposures:
            ask = QtWidgets.QLabel(
                "Which column is the treatment or exposure whose effect you want checked? Its "
                "effect leads the comparison of your table and the copy; the other columns are "
                "adjustments."
            )
            ask.setWordWrap(True)
            layout.addWidget(ask)
            self.exposure_combo.addItems(
                [f"“{name}” is the treatment or exposure" for name in exposures]
                + ["None: every column is an adjustment"]
            )
            layout.addWidget(self.exposure_combo)
        buttons = QtWidgets.QDialogButtonBox(
            QtWidgets.QDialogButtonBox.StandardButton.Ok
            | QtWidgets.QDialogButtonBox.StandardButton.Cancel
        )
        ok = buttons.button(QtWidgets.QDialogButtonBox.StandardButton.Ok)
        ok.setText("Continue")
        self.continue_button = ok
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def chosen(self) -> OutcomeChoice:
        """The outcome chosen, with the exposure when one was asked about."""
        choice = self.choices[self.combo.currentIndex()]
        if not self.exposures:
            return choice
        index = self.exposure_combo.currentIndex()
        exposure = self.exposures[index] if index < len(self.exposures) else ""
        return replace(choice, exposure=exposure)


def ask_outcome(
    choices: tuple[OutcomeChoice, ...],
    parent: QtWidgets.QWidget | None,
    exposures: tuple[str, ...] = (),
) -> OutcomeChoice | None:
    """Ask the question in a modal dialog; None when the user cancels."""
    dialog = OutcomeQuestion(choices, parent, exposures)
    try:
        accepted = dialog.exec() == QtWidgets.QDialog.DialogCode.Accepted
        return dialog.chosen() if accepted else None
    finally:
        dialog.deleteLater()


# -- the job ------------------------------------------------------------------------------
def oneclick_config(fields: dict[str, Any], choice: OutcomeChoice | None) -> Any:
    """A validated RunConfig: the wizard's fields so far (the file, a demo's subset) with the
    engine's defaults, the survival outcome ``choice`` when given, and no output folder."""
    from engine import RunConfig

    values = dict(fields)
    if choice is not None:
        values.update(time=choice.time, event=choice.event)
        if choice.event_value is not None:
            values.update(event_value=str(choice.event_value))
        if choice.time is None:
            values.update(analysis=None, covariates=(), per=())
        if choice.exposure is not None:
            values.update(exposure=choice.exposure)
    if values.get("time") and values.get("event"):
        values.setdefault("analysis", "cox")
    values["out"] = None
    config = RunConfig(**values)
    config.validate()
    return config


@dataclass(frozen=True)
class OneClickOutcome:
    """The finished job: the engine's result and, when released, the folder written."""

    result: Any  # engine.pipeline.RunResult
    folder: Path | None  # None: refused, nothing written

    @property
    def released(self) -> bool:
        return self.folder is not None


def run_oneclick(config: Any, folder: Path, progress: Any, cancel: Any) -> OneClickOutcome:
    """Prepare, audit and release; write to ``folder`` only when the audit allows a release.

    Runs on a worker thread. This is :func:`engine.pipeline.run_pipeline` with the writing moved
    after the privacy decision, so that a refusal writes nothing at all.
    """
    from engine import prepare, sub_progress, synthesize, write_outputs

    prepared = prepare(config, sub_progress(progress, 0.0, 0.03))
    cancel.raise_if_cancelled()
    result = synthesize(prepared, sub_progress(progress, 0.03, 0.95), cancel)
    cancel.raise_if_cancelled()
    if result.verdict == "refused":
        progress(1.0, "the privacy check refused a release; nothing was written")
        return OneClickOutcome(result, None)
    written = write_outputs(result, folder, sub_progress(progress, 0.95, 1.0))
    return OneClickOutcome(written, folder)
