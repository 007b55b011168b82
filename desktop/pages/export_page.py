"""Page 7, Export: folder and format; ``engine.write_outputs`` on a worker.

Writes the synthetic table, ``report.pdf``, ``audit.json``, ``results.json`` (each file
atomically) and offers to open the folder (``QDesktopServices``, a local file URL only).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from desktop.oneclick import default_output_folder
from desktop.pages.base import Page, heading, note
from desktop.qt import QDesktopServices, QMessageBox, QSettings, QtCore, QtWidgets

FORMATS = (
    ("csv", "CSV (any program)"),
    ("xlsx", "Excel workbook"),
    ("parquet", "Parquet"),
    ("sav", "SPSS (.sav)"),
    ("dta", "Stata (.dta)"),
)


class ExportPage(Page):
    title = "7  Export"
    subtitle = "Write the synthetic copy and its privacy report to a folder for the output checker."

    def __init__(self, session: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(session, parent)
        settings = QSettings()
        layout = QtWidgets.QVBoxLayout(self)
        form = QtWidgets.QFormLayout()
        row = QtWidgets.QHBoxLayout()
        # Empty at start: a folder remembered from an earlier table would mix two tables' files;
        # the last folder only starts the Browse dialog.
        self.folder = QtWidgets.QLineEdit()
        self.folder.setPlaceholderText("a new or empty folder")
        self.folder.setAccessibleName("Output folder")
        self.folder.setToolTip("Where the files go. Use a new or empty folder.")
        browse = QtWidgets.QPushButton("&Browse…")
        browse.setAccessibleName("Choose the output folder")
        browse.clicked.connect(self.choose_folder)
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        label = QtWidgets.QLabel("&Folder:")
        label.setBuddy(self.folder)
        form.addRow(label, row)
        self.fmt = QtWidgets.QComboBox()
        for key, text in FORMATS:
            self.fmt.addItem(text, key)
        self.fmt.setCurrentIndex(max(self.fmt.findData(settings.value("export/format", "csv")), 0))
        self.fmt.setAccessibleName("File format of the synthetic table")
        self.fmt.setToolTip(
            "The file type of the synthetic table. Column names, types and value "
            "labels are kept where the format allows."
        )
        fmt_label = QtWidgets.QLabel("F&ormat:")
        fmt_label.setBuddy(self.fmt)
        form.addRow(fmt_label, self.fmt)
        layout.addLayout(form)
        buttons = QtWidgets.QHBoxLayout()
        self.export_button = QtWidgets.QPushButton("&Export")
        self.export_button.setToolTip(
            "Write the synthetic table, the PDF report and the audit record."
        )
        self.export_button.clicked.connect(self.export)
        self.open_button = QtWidgets.QPushButton("O&pen the folder")
        self.open_button.setToolTip("Show the written files in your file manager.")
        self.open_button.setEnabled(False)
        self.open_button.clicked.connect(self.open_folder)
        buttons.addWidget(self.export_button)
        buttons.addWidget(self.open_button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.bar = QtWidgets.QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setVisible(False)
        self.bar.setAccessibleName("Writing progress")
        layout.addWidget(self.bar)
        self.summary = note("")
        layout.addWidget(self.summary)
        layout.addWidget(heading("Written files"))
        self.files = QtWidgets.QListWidget()
        self.files.setAccessibleName("Written files")
        layout.addWidget(self.files, 1)
        self._table: Any = None  # the table (session.inspected) the page was last shown for

    def enter(self) -> None:
        table = self.session.inspected
        if self._table is not None and table is not self._table:
            self.forget_previous_table()
        self._table = table
        if self.session.written is None:  # the list belongs to an earlier release
            self.files.clear()
            self.open_button.setEnabled(False)
        result = self.session.result
        if result is None:
            self.summary.setText("Nothing to export yet.")
        elif result.synthetic is None:
            self.summary.setText(
                "Nothing to export: no w passed the privacy audit. The Privacy page explains "
                "why and what you can do."
            )
        else:
            self.summary.setText(
                f"Ready: {result.release.rows:,} synthetic rows at w = {result.release.w:.2f} "
                f"({result.verdict})."
            )
        ready = result is not None and result.synthetic is not None
        if ready and not self.folder.text().strip() and self.session.input is not None:
            # the one-click path's folder, under Documents: never beside the input, never reused
            self.folder.setText(str(default_output_folder(self.session.input)))
        self.export_button.setEnabled(ready)

    def forget_previous_table(self) -> None:
        """A new table was loaded: its files must not go to (or be listed from) the old folder."""
        self.folder.clear()
        self.files.clear()
        self.open_button.setEnabled(False)
        self.session.out = None

    def choose_folder(self) -> None:
        last = str(QSettings().value("export/folder", ""))
        start = self.folder.text() or (str(Path(last).parent) if last else str(Path.home()))
        path = QtWidgets.QFileDialog.getExistingDirectory(self, "Choose the output folder", start)
        if path:
            self.folder.setText(path)

    def export(self) -> None:
        from engine import write_outputs

        result = self.session.result
        text = self.folder.text().strip()
        if result is None or self.is_busy():
            return
        if not text:
            QMessageBox.warning(
                self, "latent-synth: export", "Choose a folder for the files first."
            )
            return
        out = Path(text).expanduser()
        if out.exists() and any(out.glob("synthetic*")):
            answer = QMessageBox.question(
                self,
                "latent-synth: export",
                f"{out} already holds a synthetic table. Replace the files there?",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.No,
            )
            if answer != QMessageBox.StandardButton.Yes:
                return
        fmt = self.fmt.currentData()
        result = replace(result, config=replace(result.config, file_format=fmt, out=out))
        settings = QSettings()
        settings.setValue("export/folder", str(out))
        settings.setValue("export/format", fmt)
        self.bar.setVisible(True)
        self.export_button.setEnabled(False)
        self.files.clear()
        task = self.run_task(
            lambda progress, cancel: write_outputs(result, out, progress),
            self._written,
            self._failed,
            lambda f, t: self.bar.setValue(int(f * 1000)),
        )
        task.finished.connect(self._stopped)
        self.session.out = out

    def _stopped(self) -> None:
        self.bar.setVisible(False)
        self.export_button.setEnabled(True)

    def _written(self, result: Any) -> None:
        self.session.written = result
        out = self.session.out
        names = sorted(set(result.outputs) | {"results.json"})
        written = [out / n for n in names if (out / n).is_file()]
        for path in written:
            self.files.addItem(f"{path.name}  ({path.stat().st_size:,} bytes)")
        self.summary.setText(
            f"Done: {len(written)} files written to {out}. Give the whole "
            "folder, report included, to your output checker."
        )
        self.open_button.setEnabled(True)
        self.complete_changed.emit()

    def _failed(self, err: BaseException) -> None:
        if isinstance(err, PermissionError):
            err = OSError(
                f"{err.filename}: permission denied. Close the file if it is open "
                "(e.g. in Excel) or choose another folder."
            )
        self.show_error(err)

    def open_folder(self) -> None:
        if self.session.out is not None:
            QDesktopServices.openUrl(QtCore.QUrl.fromLocalFile(str(self.session.out)))

    def is_complete(self) -> bool:
        return False  # the last page
