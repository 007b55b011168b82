"""Page 1, Import: open a local file (dialog or drag-and-drop) or the demo cohort; preview.

Engine call: :func:`desktop.session.inspect_table` (``engine.tables.read.read_table`` + row subset +
``engine.tables.schema.infer_schema``) on a worker. A bad file gives a message box, never a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop.pages.base import Page, heading, note, table_from_frame
from desktop.qt import QSettings, Qt, QtWidgets
from desktop.session import DEMO_DEFAULTS, inspect_table

FILE_FILTER = (
    "Tables (*.csv *.tsv *.tab *.txt *.xlsx *.xlsm *.parquet *.pq *.sas7bdat *.xpt *.sav *.zsav "
    "*.dta);;All files (*)"
)


class ImportPage(Page):
    title = "1  Import"
    subtitle = "Choose the patient table to protect. It is only read, never changed."

    def __init__(self, session: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(session, parent)
        self.setAcceptDrops(True)
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
            "A simulated heart-study table shipped with the program (Framingham men), to try things out."
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
        """Read ``path`` on a worker; extra ``fields`` are RunConfig defaults (the demo's)."""
        if self.is_busy():
            return
        self.session.start_over(Path(path), **fields)
        self.file_label.setText(f"Reading {Path(path).name}…")
        self.preview.clear()
        self.preview.setRowCount(0)
        self.complete_changed.emit()
        try:
            config = self.session.config()
        except Exception as err:  # noqa: BLE001 - shown, not raised
            self.on_error(err)
            return
        self.status.setVisible(True)
        self.run_task(
            lambda progress, cancel: inspect_table(config, progress, cancel),
            self.on_loaded,
            self.on_error,
        )

    def on_loaded(self, inspected: Any) -> None:
        self.status.setVisible(False)
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
        self.complete_changed.emit()

    def on_error(self, err: BaseException) -> None:
        self.status.setVisible(False)
        self.session.inspected = None
        self.file_label.setText("No file loaded: the file could not be read (see the message).")
        self.complete_changed.emit()
        self.show_error(err)

    def is_complete(self) -> bool:
        return self.session.inspected is not None and not self.is_busy()

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
