"""The one-click path's two views: one progress view, then the summary (issue 16).

:class:`ProgressView` runs :func:`desktop.oneclick.run_oneclick` on a worker
(:class:`desktop.worker.Task`) with one progress bar, the time left and a working Cancel.
:class:`SummaryPage` shows the tool's recommendation, the fidelity in one line and the export
folder with "Open folder" and "Open report"; after a refusal it says what to try and offers the
wizard's Settings page. Neither view is a wizard step: the window shows them in its page stack
without a sidebar entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.oneclick import OneClickOutcome, run_oneclick
from desktop.pages.base import heading, note
from desktop.qt import QDesktopServices, QtCore, QtWidgets, Signal
from desktop.summary_text import (
    analysis_text,
    fidelity_text,
    recommendation_text,
    refusal_advice,
)
from desktop.worker import Task, TimeLeft


def plain_stage(fraction: float, partial: Any = None, text: str = "") -> str:
    """What the job is doing, in a clinician's words (never the engine's model sizes), moving
    with the work: the training round and the privacy test change the line as they go
    (issue 33: it stood still while the bar did).

    ``partial`` is the latest typed partial result (:class:`engine.EpochDone` or
    :class:`engine.AuditPointDone`), read by its fields, never parsed from text; ``text`` is
    the engine's status line, read only for the stages after the audit, which send none.

    Example:
        >>> from types import SimpleNamespace as S
        >>> plain_stage(0.01), plain_stage(0.97)
        ('Reading your file…', 'Writing the files…')
        >>> plain_stage(0.2, S(model="audit split 2, candidate 1 of 2", epoch=5, planned_epochs=25))
        'Learning the patterns of your table (a privacy test model, round 5 of about 25)…'
        >>> plain_stage(0.5, S(w=0.35, distance_auc=0.51, split=1))
        'Testing how well an attacker could spot your patients, at noise level w = 0.35…'
        >>> plain_stage(0.9, S(w=0.35, split=1), "comparing real and synthetic results")
        'Comparing the synthetic copy with your table…'
    """
    if fraction < 0.03:
        return "Reading your file…"
    if fraction >= 0.95:
        return "Writing the files…"
    words = text.lower()
    if "comparing" in words:
        return "Comparing the synthetic copy with your table…"
    final = "final model" in words or str(getattr(partial, "model", "")).startswith("final")
    if final and not hasattr(partial, "epoch"):
        return "Learning the patterns of your table for the synthetic copy…"
    if partial is not None and hasattr(partial, "w"):
        # no split number: it cycles from w to w and read as going backwards (issue 44)
        return (
            "Testing how well an attacker could spot your patients, at noise level "
            f"w = {partial.w:.2f}…"
        )
    rounds = ""
    if partial is not None and hasattr(partial, "epoch"):
        planned = int(getattr(partial, "planned_epochs", 0) or 0)
        about = f" of about {planned}" if planned >= partial.epoch else ""
        rounds = f"round {partial.epoch}{about}"
    model = str(getattr(partial, "model", "") or "")
    if model.startswith("audit split"):
        inner = "a privacy test model" + (f", {rounds}" if rounds else "")
        return f"Learning the patterns of your table ({inner})…"
    if final:
        inner = f" ({rounds})" if rounds else ""
        return f"Learning the patterns of your table for the synthetic copy{inner}…"
    return "Learning the patterns of your table" + (f" ({rounds})" if rounds else "") + "…"


class ProgressView(QtWidgets.QWidget):
    """One progress bar for the whole one-click job, with the time left and Cancel."""

    title = "Making a safe synthetic copy"
    subtitle = "Reading, learning the table, checking privacy, then writing, in one go."
    done = Signal(object)  # OneClickOutcome
    failed = Signal(object)  # an exception
    cancelled = Signal()

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Progress of the one-click job")
        self.task: Task | None = None
        layout = QtWidgets.QVBoxLayout(self)
        layout.addStretch(1)
        self.what = note("")
        layout.addWidget(self.what)
        self.bar = QtWidgets.QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setAccessibleName("Progress")
        self.bar.setMinimumHeight(28)
        layout.addWidget(self.bar)
        row = QtWidgets.QHBoxLayout()
        self.stage = QtWidgets.QLabel("Starting…")
        self.stage.setAccessibleName("Current step")
        self.stage.setStyleSheet("color: #555;")
        self.eta = QtWidgets.QLabel("estimating time left")
        self.eta.setAccessibleName("Time left")
        row.addWidget(self.stage, 1)
        row.addWidget(self.eta)
        layout.addLayout(row)
        self.cancel_button = QtWidgets.QPushButton("&Cancel")
        self.cancel_button.setAccessibleName("Cancel")
        self.cancel_button.setToolTip("Stop at the next step; nothing is written.")
        self.cancel_button.clicked.connect(self.cancel)
        self.time_left = TimeLeft(wait_for_audit=True)
        self.partial = None
        self.text = ""
        self._eta_timer = QtCore.QTimer(self)
        self._eta_timer.setInterval(1000)
        self._eta_timer.timeout.connect(self._update_eta)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        layout.addLayout(buttons)
        layout.addStretch(2)

    def start(self, config: Any, folder: Path, description: str) -> Task:
        """Run the job; ``done`` / ``failed`` / ``cancelled`` arrive on the GUI thread."""
        self.folder = folder
        self.what.setText(description)
        self.bar.setValue(0)
        self.stage.setText("Starting…")
        self.eta.setText("estimating time left")
        self.cancel_button.setEnabled(True)
        self.cancel_button.setText("&Cancel")
        task = Task(lambda progress, cancel: run_oneclick(config, folder, progress, cancel), self)
        self.partial: Any = None
        self.text = ""
        self.time_left = TimeLeft(wait_for_audit=True)
        self._eta_timer.start()
        task.progress.connect(self.on_progress)
        task.partial.connect(self.on_partial)
        task.result.connect(self.done)
        task.error.connect(self.failed)
        task.cancelled.connect(self.cancelled)
        self.task = task
        task.start()
        return task

    def is_busy(self) -> bool:
        return self.task is not None and self.task.is_running

    def on_partial(self, partial: Any) -> None:
        from engine import EpochDone

        self.partial = partial  # may arrive after its progress call: show it now too
        if isinstance(partial, EpochDone):
            self.time_left.epoch()
        elif hasattr(partial, "w"):
            self.time_left.audited()
        self.stage.setText(plain_stage(self.bar.value() / 1000, partial, self.text))

    def on_progress(self, fraction: float, text: str) -> None:
        self.text = text
        self.bar.setValue(int(round(fraction * 1000)))
        self.stage.setText(plain_stage(fraction, getattr(self, "partial", None), text))
        self.stage.setToolTip(text)  # the engine's own words, for whoever wants the detail
        self.time_left.update(fraction)
        self._update_eta()

    def _update_eta(self) -> None:
        """The time left from the stages measured so far (:class:`desktop.worker.TimeLeft`):
        refreshed every second, so a stalled stage shows a growing estimate, never a
        countdown (issue 33)."""
        if self.is_busy():
            self.eta.setText(self.time_left.text())
        else:
            self._eta_timer.stop()

    def cancel(self) -> None:
        if self.task is not None and self.task.is_running:
            self.task.cancel()
            self.cancel_button.setEnabled(False)
            self.cancel_button.setText("Cancelling…")
            self.stage.setText("Stopping at the next step; nothing will be written.")

    def shutdown(self) -> None:
        if self.task is not None:
            self.task.shutdown()


class SummaryPage(QtWidgets.QWidget):
    """Where the one-click path ends: the recommendation, fidelity, folder and next steps."""

    title = "Your synthetic copy"
    subtitle = "The tool's recommendation for the output checker, and where the files are."
    restart_requested = Signal()
    settings_requested = Signal()  # open the wizard at the page that can fix a refusal
    review_requested = Signal()  # open the wizard at the privacy page

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Summary of the one-click job")
        self.outcome: OneClickOutcome | None = None
        # the text scrolls: at the default window size (1180 x 760) a long verdict and the
        # model's lines would otherwise be cut (issue 44)
        outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        scroll = QtWidgets.QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        outer.addWidget(scroll)
        body = QtWidgets.QWidget()
        scroll.setWidget(body)
        layout = QtWidgets.QVBoxLayout(body)
        self.headline = QtWidgets.QLabel()
        self.headline.setAccessibleName("Recommendation")
        font = self.headline.font()
        font.setPointSizeF(font.pointSizeF() * 1.35)
        font.setBold(True)
        self.headline.setFont(font)
        layout.addWidget(self.headline)
        self.recommendation = note("")
        self.recommendation.setAccessibleName("Why")
        layout.addWidget(self.recommendation)
        self.advice = note("")
        self.advice.setAccessibleName("What to try")
        layout.addWidget(self.advice)
        layout.addSpacing(8)
        layout.addWidget(heading("Fidelity"))
        self.fidelity = note("")
        self.fidelity.setAccessibleName("Fidelity")
        layout.addWidget(self.fidelity)
        self.analysis = note("")
        self.analysis.setAccessibleName("The model compared")
        self.analysis.setToolTip("The model compared on your table and on the copy, and why.")
        layout.addWidget(self.analysis)
        self.outcome_note = note("")
        self.outcome_note.setStyleSheet("color: #8a5300;")
        layout.addWidget(self.outcome_note)
        layout.addSpacing(8)
        self.folder_heading = heading("Export folder")
        layout.addWidget(self.folder_heading)
        self.folder = note("")
        self.folder.setAccessibleName("Export folder")
        layout.addWidget(self.folder)
        self.files = note("")
        self.files.setAccessibleName("Files written")
        layout.addWidget(self.files)
        layout.addStretch(1)
        row = QtWidgets.QHBoxLayout()
        self.open_folder_button = _button("Open &folder", "Show the export folder.")
        self.open_folder_button.clicked.connect(self.open_folder)
        self.open_report_button = _button(
            "Open the &report", "The PDF report to give the output checker with the table."
        )
        self.open_report_button.clicked.connect(self.open_report)
        self.settings_button = _button(
            "Change the &privacy settings…",
            "Open the step-by-step wizard at its Settings page, with this run's audit kept.",
        )
        self.settings_button.clicked.connect(self.settings_requested)
        self.review_button = _button(
            "Review step by step…", "Open the wizard's Privacy page with this run's audit."
        )
        self.review_button.clicked.connect(self.review_requested)
        self.restart_button = _button("Back to the &file", "Return to the Import page.")
        self.restart_button.clicked.connect(self.restart_requested)
        for button in (
            self.open_folder_button,
            self.open_report_button,
            self.settings_button,
            self.review_button,
        ):
            row.addWidget(button)
        row.addStretch(1)
        row.addWidget(self.restart_button)
        layout.addLayout(row)

    def show_outcome(self, outcome: OneClickOutcome, outcome_note: str = "") -> None:
        """Render a finished job."""
        self.outcome = outcome
        result = outcome.result
        released = outcome.released
        self.headline.setText(
            "<span style='color:#1a7f37'>Recommendation: release</span>"
            if released
            else "<span style='color:#c00000'>Recommendation: do not release</span>"
        )
        self.recommendation.setText(recommendation_text(result) + _few_rows(result, released))
        self.advice.setText("" if released else refusal_advice(result))
        self.advice.setVisible(not released)
        self.fidelity.setText(
            fidelity_text(result) if released else "Not measured: no synthetic copy was released."
        )
        self.analysis.setText(analysis_text(result) if released else "")
        self.analysis.setVisible(released and bool(self.analysis.text()))
        self.outcome_note.setText(outcome_note)
        self.outcome_note.setVisible(bool(outcome_note))
        self.folder_heading.setVisible(released)
        folder = outcome.folder
        if folder is not None:
            self.folder.setText(str(folder))
            names = sorted(set(result.outputs) | {"results.json"})
            self.files.setText("Files: " + ", ".join(n for n in names if (folder / n).is_file()))
        else:
            self.folder.setText("")
            self.files.setText("")
        for widget in (self.folder, self.files, self.open_folder_button):
            widget.setVisible(released)
        self.open_report_button.setVisible(released and self.report_path() is not None)
        self.settings_button.setVisible(not released)
        self.review_button.setVisible(released)

    def report_path(self) -> Path | None:
        if self.outcome is None or self.outcome.folder is None:
            return None
        path = self.outcome.folder / "report.pdf"
        return path if path.is_file() else None

    def open_folder(self) -> bool:
        if self.outcome is None or self.outcome.folder is None:
            return False
        return _open(self.outcome.folder) or self._not_opened(self.outcome.folder, "folder")

    def open_report(self) -> bool:
        path = self.report_path()
        return path is not None and (_open(path) or self._not_opened(path, "report"))

    def _not_opened(self, path: Path, what: str) -> bool:
        """No program is registered to open it (common on a locked-down workstation): say
        where the file is, with a button that copies the path. Returns False (not opened)."""
        self.not_opened = NotOpened(path, what, self)
        self.not_opened.open()
        return False


class NotOpened(QtWidgets.QMessageBox):
    """'The report could not be opened' with the file's path and a Copy path button."""

    def __init__(self, path: Path, what: str, parent: QtWidgets.QWidget | None) -> None:
        super().__init__(parent)
        self.path = path
        kind = "PDF report" if what == "report" else "folder"
        self.setIcon(QtWidgets.QMessageBox.Icon.Information)
        self.setWindowTitle("latent-synth")
        self.setText(
            f"This computer has no program set up to open the {kind}. It is saved here:\n\n"
            f"{path}\n\nCopy the path and open it from your file manager or PDF reader."
        )
        self.copy_button = self.addButton("Copy path", QtWidgets.QMessageBox.ButtonRole.ActionRole)
        self.copy_button.clicked.disconnect()  # keep the box open after copying
        self.copy_button.clicked.connect(self.copy_path)
        self.addButton(QtWidgets.QMessageBox.StandardButton.Close)

    def copy_path(self) -> None:
        QtWidgets.QApplication.clipboard().setText(str(self.path))


def _few_rows(result: Any, released: bool) -> str:
    """The report's warning for a released table of fewer than 200 rows (issue 27), or ""."""
    from engine import few_rows_warning

    prepared = getattr(result, "prepared", None)
    few = few_rows_warning(len(prepared.real)) if released and prepared is not None else ""
    return f" {few}" if few else ""


def _open(path: Path) -> bool:
    return bool(QDesktopServices.openUrl(QtCore.QUrl.fromLocalFile(str(path))))


def _button(text: str, tip: str) -> QtWidgets.QPushButton:
    button = QtWidgets.QPushButton(text)
    button.setToolTip(tip)
    button.setAccessibleName(text.replace("&", "").rstrip("…"))
    return button
