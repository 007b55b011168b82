"""Page 3, Settings: the privacy limit, the analysis to compare, and advanced options.

Collects RunConfig fields ``auc_max, analysis, outcome, covariates, per`` and (Advanced)
``w_grid, budget, device, seed, copies, protect_outliers, repeats``. The GPU name is shown
when torch sees one (torch is imported on a worker, the first time the page opens).
"""

from __future__ import annotations

from typing import Any

from desktop.pages.analysis_box import AnalysisBox
from desktop.pages.base import Page, plain_message
from desktop.qt import QMessageBox, QSettings, Qt, QtWidgets


def detect_device(progress: Any = None, cancel: Any = None) -> str:
    """A plain description of the compute device (imports torch: run on a worker)."""
    try:
        import torch
    except Exception:  # noqa: BLE001 - no torch: the CPU text is still right
        return "CPU only (PyTorch is not available)"
    if torch.cuda.is_available():
        return f"GPU available: {torch.cuda.get_device_name(0)}"
    return "No GPU found: training runs on the processor (CPU)"


class SettingsPage(Page):
    title = "3  Settings"
    subtitle = (
        "How strict the privacy check is, and which analysis to compare on real and synthetic data."
    )

    def __init__(self, session: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(session, parent)
        settings = QSettings()
        outer = QtWidgets.QVBoxLayout(self)
        outer.addWidget(self._build_privacy(settings))
        box = self.analysis_box = AnalysisBox(session)
        outer.addWidget(box)
        # the box's widgets, as the page's own (the tests and the screenshots reach them here)
        self.analysis, self.outcome, self.exposure = box.analysis, box.outcome, box.exposure
        self.per, self.adjust = box.per, box.adjust
        self.analysis_note, self.problems = box.analysis_note, box.problems
        self._build_advanced(outer, settings)
        outer.addStretch(1)
        self.advanced_toggle.setChecked(settings.value("settings/advanced", "false") == "true")
        self._toggle_advanced(self.advanced_toggle.isChecked())
        self._filled_for: Any = None
        self._device_task_started = False
        self._shown_result: Any = None  # the run whose settings the widgets show
        self._touched = False  # whether the user changed a setting since the page opened
        self._watch_changes()

    # -- building -----------------------------------------------------------------------
    def _build_privacy(self, settings: QSettings) -> QtWidgets.QGroupBox:
        privacy = QtWidgets.QGroupBox("Privacy")
        form = QtWidgets.QFormLayout(privacy)
        self.auc = QtWidgets.QDoubleSpinBox()
        self.auc.setRange(0.50, 1.00)
        self.auc.setSingleStep(0.01)
        self.auc.setDecimals(3)
        self.auc.setValue(float(settings.value("settings/auc_max", 0.55)))
        self.auc.setAccessibleName("Membership AUC limit")
        self.auc.setToolTip(
            "How well an attacker may tell who was in your data. 0.5 = no better than a coin toss. "
            "The program picks the most faithful synthetic data that stays under this limit."
        )
        form.addRow("AUC &limit:", self.auc)
        return privacy

    def _build_advanced(self, outer: QtWidgets.QVBoxLayout, settings: QSettings) -> None:
        self.advanced_toggle = QtWidgets.QToolButton()
        self.advanced_toggle.setText("Ad&vanced settings")
        self.advanced_toggle.setCheckable(True)
        self.advanced_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.advanced_toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.advanced_toggle.setAccessibleName("Show advanced settings")
        self.advanced_toggle.toggled.connect(self._toggle_advanced)
        outer.addWidget(self.advanced_toggle)

        self.advanced = QtWidgets.QGroupBox()
        adv = QtWidgets.QFormLayout(self.advanced)
        self.grid_edit = QtWidgets.QLineEdit(str(settings.value("settings/w_grid", "")))
        self.grid_edit.setPlaceholderText("0, 0.05, 0.1, … 0.95 (the default)")
        self.grid_edit.setAccessibleName("Candidate w values")
        self.grid_edit.setToolTip(
            "The perturbation weights w to audit, separated by commas "
            "(0 = pure noise, near 1 = close to the real rows)."
        )
        adv.addRow("Candidate &w values:", self.grid_edit)
        self.budget = QtWidgets.QComboBox()
        self.budget.addItems(["fast", "default", "thorough"])
        self.budget.setCurrentText(str(settings.value("settings/budget", "fast")))
        self.budget.setAccessibleName("Model search effort")
        self.budget.setToolTip(
            "How much time to spend finding a good model. 'fast' is fine for trying out."
        )
        adv.addRow("Model &search effort:", self.budget)
        device_row = QtWidgets.QHBoxLayout()
        self.device = QtWidgets.QComboBox()
        self.device.addItems(["auto", "cpu", "cuda"])
        self.device.setCurrentText(str(settings.value("settings/device", "auto")))
        self.device.setAccessibleName("Compute device")
        self.device.setToolTip("Where the model is trained: 'auto' uses a GPU when there is one.")
        self.gpu_label = QtWidgets.QLabel("checking for a GPU…")
        self.gpu_label.setAccessibleName("GPU status")
        device_row.addWidget(self.device)
        device_row.addWidget(self.gpu_label, 1)
        device_label = QtWidgets.QLabel("&Device:")
        device_label.setBuddy(self.device)
        adv.addRow(device_label, device_row)
        seed_row = QtWidgets.QHBoxLayout()
        self.seeded = QtWidgets.QCheckBox("&Reproducible, with seed")
        self.seeded.setToolTip(
            "Use a fixed random seed so a run can be repeated exactly. Off: the "
            "noise comes from the computer's secure randomness (safer)."
        )
        self.seed = QtWidgets.QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setValue(1)
        self.seed.setAccessibleName("Seed")
        self.seed.setEnabled(False)
        self.seeded.toggled.connect(self.seed.setEnabled)
        seed_row.addWidget(self.seeded)
        seed_row.addWidget(self.seed)
        seed_row.addStretch(1)
        adv.addRow("Randomness:", seed_row)
        self.copies = QtWidgets.QSpinBox()
        self.copies.setRange(1, 50)
        self.copies.setAccessibleName("Number of synthetic copies")
        self.copies.setToolTip(
            "Several independent synthetic tables; results can be combined across them."
        )
        adv.addRow("&Copies:", self.copies)
        self.repeats = QtWidgets.QSpinBox()
        self.repeats.setRange(0, 50)
        self.repeats.setSpecialValueText("automatic")
        self.repeats.setAccessibleName("Audit repeats")
        self.repeats.setToolTip(
            "How many times each w is attacked in the audit (automatic: the program decides)."
        )
        adv.addRow("Audi&t repeats:", self.repeats)
        self.protect = QtWidgets.QCheckBox("Protect outl&iers (more noise for unusual records)")
        self.protect.setToolTip(
            "Records that stand out get a lower w of their own so they are harder to recognise."
        )
        adv.addRow("", self.protect)
        for spin in (self.auc, self.per, self.seed, self.copies, self.repeats):
            spin.setMaximumWidth(140)
        outer.addWidget(self.advanced)

    def _watch_changes(self) -> None:
        """Any change the user makes marks the page touched: only then does Next forget a
        kept audit (issue 33: after a refusal, Settings opened and Next trained again)."""
        for spin in (self.auc, self.per, self.seed, self.copies, self.repeats):
            spin.valueChanged.connect(self._touch)
        for combo in (self.analysis, self.outcome, self.exposure, self.budget, self.device):
            combo.currentIndexChanged.connect(self._touch)
        for box in (self.seeded, self.protect):
            box.toggled.connect(self._touch)
        self.grid_edit.textEdited.connect(self._touch)
        self.adjust.itemChanged.connect(self._touch)

    def _touch(self, *_: Any) -> None:
        self._touched = True

    # -- page life ----------------------------------------------------------------------
    def enter(self) -> None:
        prepared = self.session.prepared
        if prepared is not None and prepared is not self._filled_for:
            self._filled_for = prepared
            self.fill(prepared.schema)
        result = self.session.result
        if result is not None and result is not self._shown_result:
            self._shown_result = result
            self.show_run_settings(result.config)
        self._touched = False
        if not self._device_task_started:
            self._device_task_started = True
            self.run_task(
                detect_device,
                self.gpu_label.setText,
                lambda err: self.gpu_label.setText("could not check for a GPU"),
            )

    def show_run_settings(self, config: Any) -> None:
        """The privacy and advanced settings the kept run used (a one-click run used the
        defaults, not what this page last saved), so the page shows what was audited."""
        from engine import DEFAULT_GRID

        self.auc.setValue(float(config.auc_max))
        grid = tuple(config.w_grid or ())
        self.grid_edit.setText(
            "" if grid == tuple(DEFAULT_GRID) else ", ".join(f"{w:g}" for w in grid)
        )
        self.budget.setCurrentText(str(config.budget))
        self.device.setCurrentText(str(config.device))
        self.seeded.setChecked(config.seed is not None)
        if config.seed is not None:
            self.seed.setValue(int(config.seed))
        self.copies.setValue(int(config.copies or 1))
        self.repeats.setValue(int(config.repeats or 0))
        self.protect.setChecked(bool(config.protect_outliers))

    def fill(self, schema: Any) -> None:
        self.analysis_box.fill(schema)

    def analysis_problems(self) -> list[str]:
        """Why the chosen analysis cannot be fitted on this table (the engine's own check)."""
        return self.analysis_box.analysis_problems()

    def _toggle_advanced(self, shown: bool) -> None:
        self.advanced.setVisible(shown)
        self.advanced_toggle.setArrowType(
            Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow
        )

    # -- reading ------------------------------------------------------------------------
    def w_grid(self) -> tuple[float, ...] | None:
        text = self.grid_edit.text().strip()
        if not text:
            return None
        try:
            values = tuple(
                sorted({float(v) for v in text.replace(";", ",").split(",") if v.strip()})
            )
        except ValueError:
            values = ()
        if not values:
            raise ValueError(
                f"Candidate w values: '{text}' is not a list of numbers separated by commas."
            )
        return values  # their range is the engine's rule (RunConfig.validate), checked on Next

    def choices(self) -> dict[str, Any]:
        from engine import DEFAULT_GRID

        return {
            "auc_max": round(self.auc.value(), 3),
            **self.analysis_box.fields(),
            "w_grid": self.w_grid() or DEFAULT_GRID,
            "budget": self.budget.currentText(),
            "device": self.device.currentText(),
            "seed": int(self.seed.value()) if self.seeded.isChecked() else None,
            "copies": int(self.copies.value()),
            "repeats": int(self.repeats.value()) or None,
            "protect_outliers": self.protect.isChecked(),
        }

    def leave(self) -> bool:
        problems = self.analysis_problems()
        self.problems.setText("\n".join(problems))
        if problems:  # said once, in red under the analysis (issue 33: not in a dialog too)
            self.analysis.setFocus()
            return False
        if not self._touched and self.session.result is not None:
            return True  # nothing changed: the audit just made (or refused) is kept
        try:
            fields = self.choices()
            self.session.update(**fields)
            self.session.config()
        except Exception as err:  # noqa: BLE001 - ValueError or InputError: shown to the user
            QMessageBox.warning(self, "latent-synth: settings", plain_message(str(err)))
            return False
        settings = QSettings()
        settings.setValue("settings/auc_max", self.auc.value())
        settings.setValue("settings/budget", self.budget.currentText())
        settings.setValue("settings/device", self.device.currentText())
        settings.setValue("settings/w_grid", self.grid_edit.text())
        settings.setValue(
            "settings/advanced", "true" if self.advanced_toggle.isChecked() else "false"
        )
        return True

    def is_complete(self) -> bool:
        return self.session.prepared is not None

    def is_busy(self) -> bool:
        return False  # the only task here is the GPU check: it never blocks Next
