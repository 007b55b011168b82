"""The meta-analysis window's inputs: what to pool, as one of three tabs (several files, one
per site; one file with a site column; a summary table of ``study, estimate, se`` typed in or
loaded), with the file dialogs and the summary table read as a DataFrame."""

from __future__ import annotations

from typing import Any

from desktop.pages.base import note, plain_message
from desktop.qt import QMessageBox, QtWidgets, Signal

TABLE_FILTER = "Tables (*.csv *.tsv *.txt *.xlsx *.parquet *.sav *.dta *.sas7bdat);;All files (*)"
FILES, BY_COLUMN, SUMMARY = range(3)  # the tabs, in order


class MetaInputs(QtWidgets.QTabWidget):
    """What to pool: the three kinds of input, one tab each."""

    demo_requested = Signal()  # "Use the demo cohort": the window fills the model too

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Kind of input")
        self._files_tab()
        self._by_tab()
        self._summary_tab()

    def _files_tab(self) -> None:
        tab = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(tab)
        self.file_list = QtWidgets.QListWidget()
        self.file_list.setAccessibleName("One file per site")
        layout.addWidget(self.file_list)
        row = QtWidgets.QHBoxLayout()
        add = QtWidgets.QPushButton("&Add files…")
        add.clicked.connect(self.add_files)
        remove = QtWidgets.QPushButton("Remo&ve")
        remove.clicked.connect(
            lambda: [
                self.file_list.takeItem(self.file_list.row(i))
                for i in self.file_list.selectedItems()
            ]
        )
        row.addWidget(add)
        row.addWidget(remove)
        row.addStretch(1)
        layout.addLayout(row)
        self.addTab(tab, "Several &files")

    def _by_tab(self) -> None:
        tab = QtWidgets.QWidget()
        form = QtWidgets.QFormLayout(tab)
        row = QtWidgets.QHBoxLayout()
        self.by_file = line_edit("one file holding every site", "File with all sites")
        browse = QtWidgets.QPushButton("Bro&wse…")
        browse.clicked.connect(self._browse_by_file)
        row.addWidget(self.by_file, 1)
        row.addWidget(browse)
        form.addRow("File:", row)
        self.by_column = line_edit("site column, e.g. study", "Site column")
        form.addRow("&Site column:", self.by_column)
        demo = QtWidgets.QPushButton("Use the demo co&hort")
        demo.setToolTip(
            "The simulated demo cohort, 12 sub-studies, Cox model of CVD on blood pressure."
        )
        demo.clicked.connect(lambda: self.demo_requested.emit())
        form.addRow("", demo)
        self.addTab(tab, "One file, site c&olumn")

    def _summary_tab(self) -> None:
        tab = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(tab)
        layout.addWidget(
            note("One row per study: its estimate (e.g. a log hazard ratio) and standard error.")
        )
        self.summary_table = QtWidgets.QTableWidget(0, 3)
        self.summary_table.setHorizontalHeaderLabels(["study", "estimate", "se"])
        self.summary_table.setAccessibleName("Summary table: study, estimate, standard error")
        self.summary_table.horizontalHeader().setStretchLastSection(True)
        layout.addWidget(self.summary_table)
        row = QtWidgets.QHBoxLayout()
        add = QtWidgets.QPushButton("Add &row")
        add.clicked.connect(lambda: self.add_summary_row("", "", ""))
        remove = QtWidgets.QPushButton("Remove ro&w")
        remove.clicked.connect(
            lambda: self.summary_table.removeRow(self.summary_table.currentRow())
        )
        load = QtWidgets.QPushButton("&Load a summary file…")
        load.clicked.connect(self._load_summary)
        row.addWidget(add)
        row.addWidget(remove)
        row.addWidget(load)
        row.addStretch(1)
        layout.addLayout(row)
        self.addTab(tab, "Su&mmary table")

    def add_files(self) -> None:
        paths, _ = QtWidgets.QFileDialog.getOpenFileNames(self, "Add site files", "", TABLE_FILTER)
        for p in paths:
            self.file_list.addItem(p)

    def _browse_by_file(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "File with all sites", "", TABLE_FILTER
        )
        if path:
            self.by_file.setText(path)

    def add_summary_row(self, study: str, estimate: Any, se: Any) -> None:
        r = self.summary_table.rowCount()
        self.summary_table.insertRow(r)
        for c, value in enumerate((study, estimate, se)):
            self.summary_table.setItem(r, c, QtWidgets.QTableWidgetItem(str(value)))

    def _load_summary(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Summary table", "", TABLE_FILTER)
        if not path:
            return
        try:
            from engine import read_summary

            table = read_summary(path)
        except Exception as err:  # noqa: BLE001 - shown to the user
            warn(self, err)
            return
        self.summary_table.setRowCount(0)
        for row in table.itertuples(index=False):
            self.add_summary_row(row.study, row.estimate, row.se)

    def summary_frame(self) -> Any:
        """The typed-in rows as a DataFrame (study, estimate, se), handed to the engine as is."""
        import pandas as pd

        rows = []
        for r in range(self.summary_table.rowCount()):
            cells = [self.summary_table.item(r, c) for c in range(3)]
            values = [c.text().strip() if c is not None else "" for c in cells]
            if not any(values):
                continue
            try:
                rows.append((values[0], float(values[1]), float(values[2])))
            except ValueError:
                raise ValueError(
                    f"Row {r + 1}: the estimate and the standard error must be numbers."
                ) from None
        if len(rows) < 2:
            raise ValueError("Enter at least two studies (study, estimate, se).")
        return pd.DataFrame(rows, columns=["study", "estimate", "se"])


def line_edit(placeholder: str, name: str) -> QtWidgets.QLineEdit:
    edit = QtWidgets.QLineEdit()
    edit.setPlaceholderText(placeholder)
    edit.setAccessibleName(name)
    edit.setToolTip(placeholder[0].upper() + placeholder[1:])
    return edit


def warn(parent: QtWidgets.QWidget, err: BaseException) -> None:
    text = plain_message(str(err)) or type(err).__name__
    QMessageBox.warning(parent, "latent-synth: meta-analysis", text)
