"""Page 1, Import: open a local file (dialog or drag-and-drop) or the demo cohort; preview.

Engine call: :func:`desktop.session.inspect_table` (``engine.load_table`` + row subset +
``engine.schema_for``) on a worker. A bad file gives a one-line error on the page
and a message box, never a crash, and keeps the previously loaded file and its preview.

Once a file is loaded, the primary button "Make a safe synthetic copy" asks the window to run
the whole job in one go (``oneclick_requested``; :mod:`desktop.oneclick`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.launch import TABLE_SUFFIXES
from desktop.pages.base import Page, heading, note, plain_message, table_from_frame
from desktop.qt import QSettings, Qt, QtWidgets, Signal
from desktop.session import DEMO_DEFAULTS, Session, inspect_table

FILE_FILTER = "Tables (" + " ".join(f"*{s}" for s in TABLE_SUFFIXES) + ");;All files (*)"


class ImportPage(Page):
    title = "1  Import"
    subtitle = "Choose the patient table to protect. It is only read, never changed."
    oneclick_requested = Signal()
    loaded = Signal()  # a new file was read and is now the session's input

    def __init__(self, session: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(session, parent)
        self.setAcceptDrops(True)
        self._pending: tuple[Path, dict[str, Any]] | None = None
        layout = QtWidgets.QVBoxLayout(self)

        buttons = QtWidgets.QHBoxLayout()
        self.open_button = QtWidgets.QPushButton("&Open a file…")
        self.open_button.setToolTip(
            "Pick a CSV, Excel, Parquet, SAS, SPSS or Stata file on this computer."
        )
        self.open_button.setAccessibleName("Open a file")
        self.open_button.clicked.connect(self.choose_file)
        self.demo_button = QtWidgets.QPushButton("Load the &demo cohort")
        self.demo_button.setToolTip(
            "A simulated heart-study table shipped with the program (Framingham men), to try "
            "things out."
        )
        self.demo_button.setAccessibleName("Load the demo cohort")
        self.demo_button.clicked.connect(self.load_demo)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.demo_button)
        buttons.addStretch(1)
        layout.addLayout(buttons)

        self.drop_label = QtWidgets.QLabel(
            "…or drag a file from your file manager and drop it here."
        )
        self.drop_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.drop_label.setMinimumHeight(48)
        self.drop_label.setStyleSheet(
            "QLabel { border: 2px dashed #999; border-radius: 6px; color: #555; }"
        )
        self.drop_label.setAccessibleName("Drop area for a file")
        layout.addWidget(self.drop_label)

        self.file_label = note("No file loaded yet.")
        self.file_label.setAccessibleName("Loaded file")
        layout.addWidget(self.file_label)
        self.notes_label = note("")
        self.notes_label.setStyleSheet("color: #8a5300;")
        layout.addWidget(self.notes_label)
        self.error_label = note("")
        self.error_label.setAccessibleName("Why the last file could not be read")
        self.error_label.setStyleSheet("color: #c00000;")
        self.error_label.setVisible(False)
        layout.addWidget(self.error_label)

        oneclick = QtWidgets.QHBoxLayout()
        self.oneclick_button = QtWidgets.QPushButton("Make a safe synthetic copy")
        self.oneclick_button.setAccessibleName("Make a safe synthetic copy")
        self.oneclick_button.setToolTip(
            "Do everything in one go with the recommended settings: learn the table, check "
            "privacy, and write the copy and its report only if the privacy check allows it."
        )
        self.oneclick_button.setMinimumHeight(40)
        self.oneclick_button.setStyleSheet(
            "QPushButton { background: #1f6feb; color: white; font-weight: bold; padding: 6px 18px;"
            " border-radius: 5px; font-size: 11pt; }"
            "QPushButton:disabled { background: #9db7e0; }"
        )
        self.oneclick_button.setEnabled(False)
        self.oneclick_button.clicked.connect(self.oneclick_requested)
        self.oneclick_hint = note(
            "…or press Next to choose the columns and settings yourself, step by step."
        )
        oneclick.addWidget(self.oneclick_button)
        oneclick.addWidget(self.oneclick_hint, 1)
        layout.addLayout(oneclick)

        layout.addWidget(heading("First rows"))
        self.preview = QtWidgets.QTableWidget()
        self.preview.setAccessibleName("Preview of the first rows")
        self.preview.setToolTip("The first rows of the table as the program read them.")
        self.preview.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        layout.addWidget(self.preview, 1)
        self.status = QtWidgets.QProgressBar()
        self.status.setRange(0, 0)
        self.status.setVisible(False)
        self.status.setAccessibleName("Reading the file")
        layout.addWidget(self.status)

    # -- loading ------------------------------------------------------------------------
    def choose_file(self) -> None:
        settings = QSettings()
        start = str(settings.value("import/last_folder", str(Path.home())))
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Open a patient table", start, FILE_FILTER
        )
        if path:
            settings.setValue("import/last_folder", str(Path(path).parent))
            self.load_file(Path(path))

    def load_demo(self) -> None:
        from desktop.session import demo_input

        self.load_file(demo_input(), **DEMO_DEFAULTS)

    def load_file(self, path: Path, **fields: Any) -> None:
        """Read ``path`` on a worker; extra ``fields`` are RunConfig defaults (the demo's).

        The session (and the preview) change only once the file has been read: a file that
        cannot be read leaves the previously loaded one in place.
        """
        if self.is_busy():
            return
        self._pending = (Path(path), fields)
        self.error_label.setVisible(False)
        self.status.setFormat(f"Reading {Path(path).name}…")
        try:
            config = Session(fields={"input": Path(path), **fields}).config()
        except Exception as err:  # noqa: BLE001 - shown, not raised
            self.on_error(err)
            return
        self.status.setVisible(True)
        self.run_task(
            lambda progress, cancel: inspect_table(config, progress, cancel),
            self.on_loaded,
            self.on_error,
        )
        self._update_oneclick()

    def on_loaded(self, inspected: Any) -> None:
        self.status.setVisible(False)
        if self._pending is None:  # a result always follows a load_file
            return
        path, fields = self._pending
        self.session.start_over(path, **fields)
        self.session.inspected = inspected
        table, frame = inspected.table, inspected.frame
        subset = self.session.fields.get("subset")
        which = f" (rows with {subset[0]} = {subset[1]})" if subset else ""
        label = self.session.fields.get("input_label") or table.path.name
        self.file_label.setText(
            f"<b>{label}</b>: {len(frame):,} rows{which} and {frame.shape[1]} columns, "
            f"format {table.format}."
        )
        self.notes_label.setText("\n".join(f"• {n}" for n in table.notes[:8]))
        table_from_frame(self.preview, frame, max_rows=50)
        self.loaded.emit()
        self.complete_changed.emit()
        self._update_oneclick()

    def on_error(self, err: BaseException) -> None:
        """Keep the previous file, its notes and preview; say in one line, once, what went
        wrong: on the page, not in a dialog as well (issue 33). A file that was read but holds
        too few rows is called too small, not unreadable."""
        self.status.setVisible(False)
        self.error_label.setText(load_error_text(err, self._pending, self.session))
        self.error_label.setVisible(True)
        self.complete_changed.emit()
        self._update_oneclick()

    def is_complete(self) -> bool:
        return self.session.inspected is not None and not self.is_busy()

    def _update_oneclick(self) -> None:
        self.oneclick_button.setEnabled(self.is_complete())

    # -- drag and drop ------------------------------------------------------------------
    def dragEnterEvent(self, event: Any) -> None:  # noqa: N802 - Qt naming
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: Any) -> None:  # noqa: N802 - Qt naming
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if not urls:
            self.show_error(ValueError("only files on this computer can be opened"))
            return
        event.acceptProposedAction()
        self.load_file(Path(urls[0].toLocalFile()))


def load_error_text(err: BaseException, pending: Any, session: Any) -> str:
    """The Import page's one line on a file that did not load.

    Example:
        >>> from engine import TooFewRows
        >>> from types import SimpleNamespace as NS
        >>> err = TooFewRows("three.csv: only 3 rows; 50 are needed.")
        >>> load_error_text(err, (Path("three.csv"), {}), NS(inspected=None, input=None))
        'three.csv was read, but it is too small for a synthetic copy: only 3 rows; 50 are needed.'
    """
    from engine import LatentSynthError, TooFewRows

    name = pending[0].name if pending else "the file"
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    first = first.removeprefix(f"{name}: ")
    if not isinstance(err, (LatentSynthError, OSError)):
        first = (
            f"something went wrong inside the program ({type(err).__name__}: {first}); "
            "please report this message"
        )
    else:
        first = plain_message(first)
    kept = (
        f" The table loaded before, {session.input.name}, is still loaded."
        if session.inspected is not None and session.input is not None
        else ""
    )
    how = (
        "was read, but it is too small for a synthetic copy"
        if isinstance(err, TooFewRows)
        else "could not be read"
    )
    return f"{name} {how}: {first}.{kept}".replace("..", ".")
