"""The common shape of a wizard page: collect settings, start a task, render its result."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from desktop.qt import QMessageBox, Qt, QtWidgets, Signal
from desktop.session import Session
from desktop.worker import Task


class Page(QtWidgets.QWidget):
    """One step of the wizard.

    ``complete_changed`` tells the window to re-check :meth:`is_complete` (the Next button).
    :meth:`leave` runs on Next and may refuse (return False) after telling the user why;
    it may also start a task and call ``self.advance()`` when the task is done.
    """

    title = ""
    subtitle = ""
    complete_changed = Signal()
    advance_requested = Signal()
    busy_changed = Signal(bool)

    def __init__(self, session: Session, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.task: Task | None = None
        self.setAccessibleName(self.title)

    # -- hooks --------------------------------------------------------------------------
    def enter(self) -> None:
        """The page is shown (forward or back)."""

    def is_complete(self) -> bool:
        return True

    def leave(self) -> bool:
        """Next was pressed; return True to move on now."""
        return True

    def is_busy(self) -> bool:
        return self.task is not None and self.task.is_running

    # -- helpers ------------------------------------------------------------------------
    def advance(self) -> None:
        self.advance_requested.emit()

    def run_task(
        self,
        fn: Callable[[Any, Any], Any],
        on_result: Callable[[Any], None],
        on_error: Callable[[BaseException], None] | None = None,
        on_progress: Callable[[float, str], None] | None = None,
    ) -> Task:
        """Start ``fn(progress, cancel)`` on a worker; the callbacks run on the GUI thread."""
        task = Task(fn, parent=self)
        task.result.connect(on_result)
        task.error.connect(on_error or self.show_error)
        if on_progress is not None:
            task.progress.connect(on_progress)
        task.started.connect(self._on_task_started)
        task.finished.connect(self._on_task_finished)
        self.task = task
        task.start()
        return task

    def _on_task_started(self) -> None:
        self.busy_changed.emit(True)
        self.complete_changed.emit()

    def _on_task_finished(self) -> None:
        self.busy_changed.emit(False)
        self.complete_changed.emit()

    def show_error(self, err: BaseException) -> None:
        """A readable message box for any failure; never a traceback."""
        from engine import LatentSynthError

        if isinstance(err, (LatentSynthError, OSError)):
            text = plain_message(str(err))
        else:
            text = (
                f"Something went wrong inside the program ({type(err).__name__}: {err}). "
                "Nothing was written. Please report this message."
            )
        QMessageBox.warning(self, f"latent-synth: {self.title}", text)

    def shutdown(self) -> None:
        if self.task is not None:
            self.task.shutdown()


# What each command-line option is called in the wizard. Engine messages should already name
# settings in plain words; this is the wizard's safety net for any that still name a flag.
SETTING_NAMES = {
    "--time": "the time role (Columns page)",
    "--event": "the event role (Columns page)",
    "--drop": "the drop role (Columns page)",
    "--keep": "the covariate role (Columns page)",
    "--kind": "the Kind column (Columns page)",
    "--bounds": "the bounds (Columns page)",
    "--analysis": "the Analysis setting",
    "--outcome": "the Outcome setting",
    "--covariates": "the Exposure and Adjust for settings",
    "--exposure": "the Exposure setting",
    "--adjust": "the Adjust for setting",
    "--per": "the Effect per units setting",
    "--by": "the site column",
    "--summary": "a summary table",
    "--copies": "the Copies setting",
    "--repeats": "the Audit repeats setting",
    "--w-grid": "the Candidate w values setting",
    "--w": "the w you choose on the Privacy page",
    "--auc-max": "the AUC limit",
    "--allow-risky": "the risk acknowledgement (Privacy page)",
    "--protect-outliers": "the Protect outliers setting",
    "--seed": "the Reproducible setting",
    "--device": "the Device setting",
    "--budget": "the Model search effort setting",
    "--format": "the Format setting (Export page)",
    "--out": "the folder (Export page)",
    "--keys": "the key columns (Columns page)",
    "--disclosure-margin": "the disclosure margin",
}
_FLAG = re.compile(r"--([a-z][a-z-]*)(?: [A-Z][A-Z_,:=]*(?:\b|$))?")


def plain_message(text: str) -> str:
    """An engine message with any command-line flag replaced by the wizard's name for it.

    Example:
        >>> plain_message("no covariates given: list them with --covariates COL,COL")
        'no covariates given: list them with the Exposure and Adjust for settings'
        >>> plain_message("column 'x' is a survival role and also in --drop; remove one.")
        "column 'x' is a survival role and also in the drop role (Columns page); remove one."
    """

    def name(match: re.Match[str]) -> str:
        return SETTING_NAMES.get(f"--{match.group(1)}", "the matching setting")

    return _FLAG.sub(name, text)


def heading(text: str) -> QtWidgets.QLabel:
    label = QtWidgets.QLabel(f"<b>{text}</b>")
    label.setTextFormat(Qt.TextFormat.RichText)
    return label


def note(text: str) -> QtWidgets.QLabel:
    label = QtWidgets.QLabel(text)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def table_from_frame(table: QtWidgets.QTableWidget, frame: Any, max_rows: int = 200) -> None:
    """Fill a read-only QTableWidget from a DataFrame (first ``max_rows`` rows)."""
    rows = frame.head(max_rows)
    table.clear()
    table.setColumnCount(len(rows.columns))
    table.setRowCount(len(rows))
    table.setHorizontalHeaderLabels([str(c) for c in rows.columns])
    for r, values in enumerate(rows.itertuples(index=False)):
        for c, value in enumerate(values):
            item = QtWidgets.QTableWidgetItem(_cell(value))
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
            table.setItem(r, c, item)
    table.resizeColumnsToContents()


def _cell(value: Any) -> str:
    """A preview cell as the file holds it: a whole number without thousands separators (a
    year column with an empty cell is read as floats: 1997, not "1,997"; issue 33).

    Example:
        >>> [_cell(v) for v in (1997.0, 12.3456, float("nan"), "M", 42)]
        ['1997', '12.35', '', 'M', '42']
    """
    import numpy as np  # loaded by the time a table is shown

    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return number(v, 4)
    return str(value)


def number(value: Any, digits: int = 3) -> str:
    """A number as a person reads it: ``digits`` significant digits, thousands separated,
    never in ``1.2e+03`` notation and never as a Python type (``np.float64(...)``).

    Example:
        >>> [number(v) for v in (1234.5, 12.345, 0.5, 0.000012, 0, -3.14159, None)]
        ['1,234', '12.3', '0.5', '0.000012', '0', '-3.14', '–']
    """
    import math

    if value is None:
        return "–"
    v = float(value)
    if not math.isfinite(v):
        return "–" if v != v else ("more than any number" if v > 0 else "less than any number")
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 10 ** (digits - 1):
        return f"{v:,.0f}"
    decimals = min(digits - 1 - math.floor(math.log10(a)), 12)
    text = f"{v:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def estimate_text(value: Any) -> str:
    """An estimate (or a CI end) for people: three decimals, or :func:`number`'s form when it is
    1,000 or more, infinite or missing.

    Example:
        >>> [estimate_text(v) for v in (1.10517, -0.5, 12345.678, float("nan"), None)]
        ['1.105', '-0.500', '12,346', '–', '–']
    """
    import math

    if value is None:
        return "–"
    v = float(value)
    return f"{v:.3f}" if math.isfinite(v) and abs(v) < 1000 else number(v)


def p_value_text(p: Any) -> str:
    """A p-value for people: three decimals, 'below 0.001' rather than an exponent.

    Example:
        >>> [p_value_text(v) for v in (0.04567, 0.0004, None)]
        ['0.046', 'below 0.001', '–']
    """
    if p is None or p != p:
        return "–"
    return "below 0.001" if float(p) < 0.001 else f"{float(p):.3f}"
