"""The meta-analysis window: pool sites' estimates (DL / FE / HKSJ) and draw a forest plot.

Input: several files (one per site), one file with a site column, or a summary table (typed
in or loaded) with ``study, estimate, se``. ``engine.run_meta`` runs on a worker into a
private temporary folder; *Export* copies ``forest.pdf`` and ``meta.json`` (atomically) to the
folder the user picks.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

from desktop.meta_inputs import BY_COLUMN, FILES, SUMMARY, MetaInputs, line_edit, warn
from desktop.pages.base import estimate_text, heading, note, number, p_value_text
from desktop.qt import QSettings, QtWidgets
from desktop.worker import Task

METHODS = (
    ("dl", "Random effects, DerSimonian-Laird"),
    ("hksj", "Random effects, Hartung-Knapp-Sidik-Jonkman"),
    ("fe", "Fixed effect (inverse variance)"),
)
ANALYSES = (("cox", "Cox (survival)"), ("logistic", "Logistic"), ("ols", "Linear (OLS)"))


# The per-site table's headers in words (the estimates are on the model's log scale)
STUDY_HEADERS = {
    "study": "Site",
    "estimate": "Estimate (log scale)",
    "se": "Standard error",
    "ci_low": "95% CI from",
    "ci_high": "95% CI to",
    "weight": "Weight (%)",
}


class MetaWindow(QtWidgets.QMainWindow):
    """Meta-analysis across sites (from the main window's *Analysis* menu)."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("latent-synth: meta-analysis across sites")
        self.setAccessibleName("Meta-analysis window")
        self.task: Task | None = None
        self.run: Any = None
        self._workdir = Path(tempfile.mkdtemp(prefix="latent-synth-meta-"))
        central = QtWidgets.QWidget()
        self.setCentralWidget(central)
        outer = QtWidgets.QHBoxLayout(central)
        left = QtWidgets.QVBoxLayout()
        outer.addLayout(left, 2)

        left.addWidget(heading("1. What to pool"))
        self.tabs = MetaInputs()
        self.tabs.demo_requested.connect(self.use_demo)
        left.addWidget(self.tabs)

        left.addWidget(heading("2. Model (for patient-level files)"))
        self.model_box = QtWidgets.QWidget()
        form = QtWidgets.QFormLayout(self.model_box)
        self.analysis = QtWidgets.QComboBox()
        for key, text in ANALYSES:
            self.analysis.addItem(text, key)
        self.analysis.setAccessibleName("Per-site model")
        form.addRow("Mo&del:", self.analysis)
        self.time = line_edit("time column, e.g. time_cvd_years", "Survival time column")
        self.event = line_edit("event column (0/1), e.g. cvd", "Event column")
        self.outcome = line_edit("outcome column (linear / logistic)", "Outcome column")
        self.exposure = line_edit("exposure column, e.g. sbp", "Exposure column")
        self.adjust = line_edit("adjust for, e.g. age, totchol, hdl", "Adjustment columns")
        self.per = QtWidgets.QDoubleSpinBox()
        self.per.setRange(0.001, 1e6)
        self.per.setValue(1.0)
        self.per.setAccessibleName("Effect per units of exposure")
        self.per.setToolTip("Report the effect per this many units of the exposure, e.g. 10 mmHg.")
        form.addRow("&Time:", self.time)
        form.addRow("E&vent:", self.event)
        form.addRow("O&utcome:", self.outcome)
        form.addRow("E&xposure:", self.exposure)
        form.addRow("Ad&just for:", self.adjust)
        form.addRow("Effect per u&nits:", self.per)
        left.addWidget(self.model_box)

        left.addWidget(heading("3. Pooling method"))
        self.method = QtWidgets.QComboBox()
        for key, text in METHODS:
            self.method.addItem(text, key)
        self.method.setAccessibleName("Pooling method")
        self.method.setToolTip(
            "Random effects (DerSimonian-Laird) allows the true effect to differ "
            "between sites; HKSJ gives wider, safer intervals with few sites."
        )
        left.addWidget(self.method)
        row = QtWidgets.QHBoxLayout()
        self.pool_button = QtWidgets.QPushButton("&Pool")
        self.pool_button.setToolTip("Estimate the effect in each site and combine them.")
        self.pool_button.clicked.connect(self.pool)
        self.export_button = QtWidgets.QPushButton("&Export PDF and meta.json…")
        self.export_button.setEnabled(False)
        self.export_button.clicked.connect(self.export)
        row.addWidget(self.pool_button)
        row.addWidget(self.export_button)
        left.addLayout(row)
        self.bar = QtWidgets.QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setVisible(False)
        left.addWidget(self.bar)
        left.addStretch(1)

        right = QtWidgets.QVBoxLayout()
        outer.addLayout(right, 3)
        right.addWidget(heading("Result"))
        self.result_label = note("Nothing pooled yet.")
        self.result_label.setAccessibleName("Pooled result")
        right.addWidget(self.result_label)
        self.plot_scroll = QtWidgets.QScrollArea()
        self.plot_scroll.setWidgetResizable(False)
        self.plot_scroll.setAccessibleName("Forest plot area")
        right.addWidget(self.plot_scroll, 1)
        self.canvas: Any = None
        self.studies = QtWidgets.QTableWidget()
        self.studies.setAccessibleName("Per-site estimates and weights")
        self.studies.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.studies.setMaximumHeight(170)
        right.addWidget(self.studies)
        self.tabs.currentChanged.connect(self._mode_changed)
        self._mode_changed()
        self.resize(1150, 720)

    def _mode_changed(self) -> None:
        self.model_box.setEnabled(self.tabs.currentIndex() != SUMMARY)

    def use_demo(self) -> None:
        from desktop.session import demo_input

        self.tabs.setCurrentIndex(BY_COLUMN)
        self.tabs.by_file.setText(str(demo_input()))
        self.tabs.by_column.setText("study")
        self.analysis.setCurrentIndex(0)
        self.time.setText("time_cvd_years")
        self.event.setText("cvd")
        self.exposure.setText("sbp")
        self.adjust.setText("age, totchol, hdl")
        self.per.setValue(10.0)

    def add_summary_row(self, study: str, estimate: Any, se: Any) -> None:
        self.tabs.add_summary_row(study, estimate, se)

    # -- pooling ------------------------------------------------------------------------
    def config(self) -> Any:
        """The MetaConfig for the current inputs; raises ValueError with a readable message."""
        from engine import MetaConfig

        out = self._workdir / "latest"
        method = self.method.currentData()
        mode = self.tabs.currentIndex()
        if mode == SUMMARY:
            return MetaConfig(out=out, summary=self.tabs.summary_frame(), method=method)
        model = dict(
            analysis=self.analysis.currentData(),
            time=self.time.text().strip() or None,
            event=self.event.text().strip() or None,
            outcome=self.outcome.text().strip() or None,
            exposure=self.exposure.text().strip() or None,
            adjust=tuple(a.strip() for a in self.adjust.text().split(",") if a.strip()),
            per=float(self.per.value()),
            method=method,
        )
        if mode == FILES:
            files = tuple(
                Path(self.tabs.file_list.item(i).text()) for i in range(self.tabs.file_list.count())
            )
            if len(files) < 2:
                raise ValueError("Add at least two site files.")
            return MetaConfig(out=out, files=files, **model)
        if not self.tabs.by_file.text().strip() or not self.tabs.by_column.text().strip():
            raise ValueError("Choose the file and name the column that tells the sites apart.")
        return MetaConfig(
            out=out,
            files=(Path(self.tabs.by_file.text().strip()),),
            by=self.tabs.by_column.text().strip(),
            **model,
        )

    def pool(self) -> None:
        if self.task is not None and self.task.is_running:
            return
        try:
            config = self.config()
        except Exception as err:  # noqa: BLE001 - ValueError / InputError: shown
            warn(self, err)
            return
        from engine import run_meta

        self.bar.setValue(0)
        self.bar.setVisible(True)
        self.pool_button.setEnabled(False)
        self.task = Task(lambda progress, cancel: run_meta(config, progress, cancel), parent=self)
        self.task.progress.connect(self._progress)
        self.task.result.connect(self.show_result)
        self.task.error.connect(self._failed)
        self.task.finished.connect(self._stopped)
        self.task.start()

    def _progress(self, fraction: float, text: str) -> None:
        self.bar.setValue(int(fraction * 1000))
        self.bar.setFormat(f"%p%  {text}")

    def _stopped(self) -> None:
        self.bar.setVisible(False)
        self.pool_button.setEnabled(True)

    def _failed(self, err: BaseException) -> None:
        warn(self, err)

    def show_result(self, run: Any) -> None:
        from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg

        from engine import effect_label, forest_figure

        self.run = run
        res = run.primary
        exp = run.config.shows_ratio()
        f = math.exp if exp else float
        self.result_label.setText(
            f"<b>Pooled ({res.method.upper()}, k = {res.k}): {estimate_text(f(res.estimate))} "
            f"(95% CI {estimate_text(f(res.ci_low))} to {estimate_text(f(res.ci_high))})</b>, "
            f"p = {p_value_text(res.p)}<br>"
            f"Between-site variance τ² = {number(res.tau2, 4)}; I² = {res.I2:.1f}%; "
            f"Q = {res.Q:.2f} on {res.Q_df} df (p = {p_value_text(res.Q_p)})."
            + ("<br>" + "<br>".join(run.notes) if run.notes else "")
        )
        figure = forest_figure(run.sets, exponentiate=exp, xlabel=effect_label(run.config))
        width_in, height_in = figure.get_size_inches()
        room = max(self.plot_scroll.viewport().width() - 4, 300)
        figure.set_dpi(max(55.0, min(100.0, room / width_in)))
        self.canvas = FigureCanvasQTAgg(figure)
        self.canvas.setAccessibleName("Forest plot")
        self.canvas.setFixedSize(int(width_in * figure.dpi), int(height_in * figure.dpi))
        self.plot_scroll.setWidget(self.canvas)  # the previous canvas is deleted
        frame = res.to_frame()
        self.studies.clear()
        self.studies.setColumnCount(len(frame.columns))
        headers = [STUDY_HEADERS.get(str(c), str(c)) for c in frame.columns]
        self.studies.setHorizontalHeaderLabels(headers)
        self.studies.setRowCount(len(frame))
        for r, values in enumerate(frame.itertuples(index=False)):
            for c, v in enumerate(values):
                text = number(v, 4) if isinstance(v, float) else str(v)
                self.studies.setItem(r, c, QtWidgets.QTableWidgetItem(text))
        self.studies.resizeColumnsToContents()
        self.export_button.setEnabled(True)

    def export(self, folder: str | None = None) -> Path | None:
        """Copy forest.pdf and meta.json (atomically) into a folder the user picks."""
        if self.run is None:
            return None
        if not folder:
            settings = QSettings()
            folder = QtWidgets.QFileDialog.getExistingDirectory(
                self, "Folder for forest.pdf and meta.json", str(settings.value("meta/folder", ""))
            )
            if not folder:
                return None
            settings.setValue("meta/folder", folder)
        from engine import atomic_write_bytes

        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        for src in (self.run.forest_pdf, self.run.meta_json):
            atomic_write_bytes(out / src.name, Path(src).read_bytes())
        self.result_label.setText(self.result_label.text() + f"<br>Saved to {out}.")
        return out

    def shutdown(self) -> None:
        """Stop a running pooling and delete the private working folder (at program exit)."""
        if self.task is not None:
            self.task.shutdown()
        shutil.rmtree(self._workdir, ignore_errors=True)
