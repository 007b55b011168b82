"""The main window: seven wizard pages on a QStackedWidget with Back / Next, plus menus.

::

    1 Import ─► 2 Columns ─► 3 Settings ─► 4 Train and audit ─► 5 Privacy ─► 6 Fidelity ─►
    inspect_table  prepare                   synthesize            release_at
    ─► 7 Export
       write_outputs

The Import page's "Make a safe synthetic copy" runs the whole job in one go
(:mod:`desktop.oneclick`): an optional single question, one progress view, then a summary page;
neither view is a step of the sidebar. The sidebar changes the page to any step already passed
(like Back), never to one ahead. A file dropped anywhere on the window, or given on the command
line (:meth:`MainWindow.open_path`), is loaded on the Import page.

Analysis ▸ Meta-analysis opens :class:`desktop.meta_window.MetaWindow`; Help ▸ User guide (F1)
opens the offline guide (:mod:`desktop.help`); Help ▸ About lists versions and licences (the
menus and the about box: :mod:`desktop.menus`). Window geometry and page settings are kept with
QSettings. Heavy libraries (pandas, torch, lifelines, statsmodels, matplotlib) load only when
first needed.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any, cast

from desktop.menus import about_html, build_menus
from desktop.oneclick import (
    NO_OUTCOME,
    OneClickOutcome,
    OutcomeChoice,
    ask_outcome,
    default_output_folder,
    oneclick_config,
    plan_outcome,
)
from desktop.pages.base import Page
from desktop.pages.columns_page import ColumnsPage
from desktop.pages.export_page import ExportPage
from desktop.pages.fidelity_page import FidelityPage
from desktop.pages.import_page import ImportPage
from desktop.pages.privacy_page import PrivacyPage
from desktop.pages.settings_page import SettingsPage
from desktop.pages.summary_page import ProgressView, SummaryPage
from desktop.pages.train_page import TrainPage
from desktop.qt import (
    QMessageBox,
    QSettings,
    Qt,
    QtGui,
    QTimer,
    QtWidgets,
)
from desktop.session import Session
from desktop.summary_text import outcome_note
from desktop.worker import shutdown_all

PAGES = (ImportPage, ColumnsPage, SettingsPage, TrainPage, PrivacyPage, FidelityPage, ExportPage)
SETTINGS_STEP, PRIVACY_STEP = 2, 4


class MainWindow(QtWidgets.QMainWindow):
    """The latent-synth wizard."""

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("latent-synth: privacy-protected synthetic data")
        self.setAccessibleName("latent-synth main window")
        self.session = Session()
        self.setAcceptDrops(True)
        # RunConfig fields the one-click path uses over the engine's defaults (tests: fast ones)
        self.oneclick_settings: dict[str, Any] = {}
        self._oneclick_changes: dict[str, Any] = {}
        self._oneclick_note = ""
        self.meta_window: Any = None
        self.help_dialog: Any = None

        central = QtWidgets.QWidget()
        self.setCentralWidget(central)
        outer = QtWidgets.QHBoxLayout(central)
        self.steps = QtWidgets.QListWidget()
        self.steps.setAccessibleName("Steps of the wizard")
        self.steps.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.steps.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.steps.setFixedWidth(170)
        self.steps.setStyleSheet(
            "QListWidget { border: none; background: palette(window); font-size: 10.5pt; }"
            "QListWidget::item { padding: 6px; }"
            "QListWidget::item:selected { background: palette(highlight);"
            " color: palette(highlighted-text); border-radius: 4px; }"
        )
        outer.addWidget(self.steps)
        right = QtWidgets.QVBoxLayout()
        outer.addLayout(right, 1)
        self.title = QtWidgets.QLabel()
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.5)
        font.setBold(True)
        self.title.setFont(font)
        self.subtitle = QtWidgets.QLabel()
        self.subtitle.setWordWrap(True)
        right.addWidget(self.title)
        right.addWidget(self.subtitle)
        self.stack = QtWidgets.QStackedWidget()
        right.addWidget(self.stack, 1)
        self.pages: list[Page] = []
        for cls in PAGES:
            page = cls(self.session, self.stack)
            self.pages.append(page)
            self.stack.addWidget(page)
            self.steps.addItem(page.title)
            page.complete_changed.connect(self._update_buttons)
            page.advance_requested.connect(self._advance)
            page.busy_changed.connect(self._update_buttons)
        self.import_page = cast(ImportPage, self.pages[0])
        self.steps.currentRowChanged.connect(self._step_chosen)
        self.import_page.oneclick_requested.connect(self.start_oneclick)
        self.progress_view = ProgressView(self.stack)
        self.progress_view.done.connect(self._oneclick_done)
        self.progress_view.failed.connect(self._oneclick_failed)
        self.progress_view.cancelled.connect(self._oneclick_cancelled)
        self.summary_page = SummaryPage(self.stack)
        self.summary_page.restart_requested.connect(lambda: self.go_to(0))
        self.summary_page.settings_requested.connect(lambda: self.go_to(SETTINGS_STEP))
        self.summary_page.review_requested.connect(lambda: self.go_to(PRIVACY_STEP))
        for view in (self.progress_view, self.summary_page):
            self.stack.addWidget(view)

        buttons = QtWidgets.QHBoxLayout()
        buttons.addStretch(1)
        self.back_button = QtWidgets.QPushButton("< &Back")
        self.back_button.setAccessibleName("Back")
        self.back_button.setToolTip("Go to the previous step (Alt+B).")
        self.back_button.clicked.connect(self.back)
        self.next_button = QtWidgets.QPushButton("&Next >")
        self.next_button.setAccessibleName("Next")
        self.next_button.setToolTip("Check this step and go to the next one (Alt+N).")
        self.next_button.setDefault(True)
        self.next_button.clicked.connect(self.next)
        buttons.addWidget(self.back_button)
        buttons.addWidget(self.next_button)
        right.addLayout(buttons)

        build_menus(self)
        self.statusBar().showMessage(
            "Everything stays on this computer: no network connection is used."
        )
        settings = QSettings()
        geometry = settings.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1180, 760)
        self.go_to(0)

    # -- menus --------------------------------------------------------------------------
    def open_path(self, path: str | Path) -> None:
        """Load ``path`` on the Import page (a file given on the command line or dropped)."""
        if self.is_busy():
            self.statusBar().showMessage("Busy: wait for the current step or cancel it first.")
            return
        self.go_to(0)
        self.import_page.load_file(Path(path))

    def dragEnterEvent(self, event: QtGui.QDragEnterEvent) -> None:  # noqa: N802 - Qt naming
        if any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QtGui.QDropEvent) -> None:  # noqa: N802 - Qt naming
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            event.acceptProposedAction()
            self.open_path(urls[0].toLocalFile())

    def open_file(self) -> None:
        self.go_to(0)
        self.import_page.choose_file()

    def load_demo(self) -> None:
        self.go_to(0)
        self.import_page.load_demo()

    def open_meta(self) -> Any:
        from desktop.meta_window import MetaWindow

        if self.meta_window is None:
            self.meta_window = MetaWindow(self)
            self.meta_window.setWindowFlag(Qt.WindowType.Window, True)
        self.meta_window.show()
        self.meta_window.raise_()
        self.meta_window.activateWindow()
        return self.meta_window

    def open_help(self) -> Any:
        from desktop.help import HelpDialog

        if self.help_dialog is None:
            self.help_dialog = HelpDialog(self)
        self.help_dialog.show()
        self.help_dialog.raise_()
        self.help_dialog.activateWindow()
        return self.help_dialog

    def about(self) -> None:
        QMessageBox.about(self, "About latent-synth", about_html())

    # -- navigation ---------------------------------------------------------------------
    @property
    def current(self) -> Page:
        """The wizard page shown (the Import page while a one-click view is shown)."""
        widget = self.stack.currentWidget()
        return widget if isinstance(widget, Page) else self.pages[0]

    def on_step(self) -> bool:
        """Whether a wizard step (not a one-click view) is shown."""
        return isinstance(self.stack.currentWidget(), Page)

    def is_busy(self) -> bool:
        return self.progress_view.is_busy() or any(p.is_busy() for p in self.pages)

    def go_to(self, index: int) -> None:
        index = max(0, min(index, len(self.pages) - 1))
        self.stack.setCurrentIndex(index)
        self._select_step(index)
        page = self.pages[index]
        self.title.setText(page.title.split("  ", 1)[-1])
        self.subtitle.setText(page.subtitle)
        page.enter()
        self._update_buttons()

    def _select_step(self, row: int) -> None:
        """Highlight ``row`` in the sidebar (-1: none) without treating it as a click."""
        self.steps.blockSignals(True)
        self.steps.setCurrentRow(row)
        if row < 0:
            self.steps.clearSelection()
        self.steps.blockSignals(False)

    def reachable(self, row: int) -> bool:
        """Whether the sidebar may go to step ``row``: a step already passed, never one ahead
        (its Next checks would be skipped), and nothing while a task runs. After the one-click
        job the steps up to Privacy hold its result and are reachable."""
        if self.is_busy() or not 0 <= row < len(self.pages):
            return False
        if self.on_step():
            return row <= self.stack.currentIndex()
        if self.stack.currentWidget() is self.summary_page and self.session.result is not None:
            return row <= PRIVACY_STEP
        return row == 0

    def _step_chosen(self, row: int) -> None:
        if self.on_step() and row == self.stack.currentIndex():
            return
        if self.reachable(row):
            self.go_to(row)
            return
        self._restore_step()
        # the click selects its row after this signal (current first, selection after):
        # restore again once the click is done, or the step stays highlighted (issue 33)
        QTimer.singleShot(0, self._restore_step)
        self.statusBar().showMessage(
            "That step is not open yet: finish this one and press Next.", 6000
        )

    def _restore_step(self) -> None:
        """Highlight the step shown (none while a one-click view is shown)."""
        self._select_step(self.stack.currentIndex() if self.on_step() else -1)

    def _show_view(self, view: Any) -> None:
        self.stack.setCurrentWidget(view)
        self._select_step(-1)
        self.title.setText(view.title)
        self.subtitle.setText(view.subtitle)
        self._update_buttons()

    def next(self) -> None:
        page = self.current
        if not self.next_button.isEnabled():
            return
        if page.leave():
            self._advance()

    def _advance(self) -> None:
        sender = self.sender()
        if isinstance(sender, Page) and sender is not self.current:
            return
        self.go_to(self.stack.currentIndex() + 1)

    def back(self) -> None:
        if self.current.is_busy():
            return
        self.go_to(self.stack.currentIndex() - 1)

    def _update_buttons(self, *_: Any) -> None:
        on_step = self.on_step()
        self.back_button.setVisible(on_step)
        self.next_button.setVisible(on_step)
        if not on_step:
            return
        index = self.stack.currentIndex()
        page = self.current
        self.back_button.setEnabled(index > 0 and not page.is_busy())
        last = index == len(self.pages) - 1
        self.next_button.setEnabled(not last and page.is_complete() and not page.is_busy())

    # -- one click ------------------------------------------------------------------------
    def start_oneclick(self) -> bool:
        """Run the whole job on the loaded file with the recognised roles and the defaults,
        after at most one question about the survival outcome. False when not started."""
        inspected, source = self.session.inspected, self.session.input
        if inspected is None or source is None or self.is_busy():
            return False
        fields = dict(self.session.fields)
        choice: OutcomeChoice | None = None
        if not (fields.get("time") and fields.get("event")):
            plan = plan_outcome(inspected.frame)
            if plan.must_ask:
                choice = ask_outcome(plan.choices, self, plan.exposures)
                if choice is None:
                    return False
            else:
                choice = plan.recognised or NO_OUTCOME
        self._oneclick_note = outcome_note(choice)
        fields.update(self.oneclick_settings)
        try:
            config = oneclick_config(fields, choice)
        except Exception as err:  # noqa: BLE001 - shown, not raised
            self.pages[0].show_error(err)
            return False
        keys = ("time", "event", "analysis", "covariates", "exposure", "per")
        keys += tuple(self.oneclick_settings)
        self._oneclick_changes = {k: getattr(config, k) for k in keys}
        folder = default_output_folder(source, date.today())
        label = fields.get("input_label") or source.name
        self.progress_view.start(
            config,
            folder,
            f"Making a synthetic copy of <b>{label}</b>. The files are written to {folder} "
            "only if the privacy check allows a release.",
        )
        self._show_view(self.progress_view)
        return True

    def _oneclick_done(self, outcome: OneClickOutcome) -> None:
        self.session.update(**self._oneclick_changes)
        result = outcome.result
        self.session.prepared = replace(result.prepared, config=self.session.config())
        self.session.result = result
        self.session.written = result if outcome.released else None
        self.session.out = outcome.folder
        self.summary_page.show_outcome(outcome, self._oneclick_note)
        self._show_view(self.summary_page)

    def _oneclick_failed(self, err: BaseException) -> None:
        self.go_to(0)
        self.pages[0].show_error(err)

    def _oneclick_cancelled(self) -> None:
        self.go_to(0)
        self.statusBar().showMessage("Cancelled: nothing was written.", 10000)

    # -- closing ------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Cancel and join every worker thread (idempotent)."""
        self.progress_view.shutdown()
        for page in self.pages:
            page.shutdown()
        if self.meta_window is not None:
            self.meta_window.shutdown()
        shutdown_all()

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 - Qt naming
        QSettings().setValue("window/geometry", self.saveGeometry())
        self.shutdown()
        super().closeEvent(event)
