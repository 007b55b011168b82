"""Page 3, Settings: the privacy limit, the analysis to compare, and advanced options.

Collects RunConfig fields ``auc_max, analysis, outcome, covariates, per`` and (Advanced)
``w_grid, budget, device, seed, copies, protect_outliers, repeats``. The GPU name is shown
when torch sees one (torch is imported on a worker, the first time the page opens).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from desktop.pages.base import Page, note, plain_message
from desktop.qt import QMessageBox, QSettings, Qt, QtWidgets

ANALYSES = (
    ("cox", "Cox model (survival: time to event)"),
    ("ols", "Linear regression (a numeric outcome)"),
    ("logistic", "Logistic regression (a yes/no outcome)"),
    (None, "No regression comparison"),
)


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
        self._why_none = ""  # why the program chose no regression comparison, if it did
        settings = QSettings()
        outer = QtWidgets.QVBoxLayout(self)
        outer.addWidget(self._build_privacy(settings))
        outer.addWidget(self._build_analysis())
        self._build_advanced(outer, settings)
        outer.addStretch(1)
        self.advanced_toggle.setChecked(settings.value("settings/advanced", "false") == "true")
        self._toggle_advanced(self.advanced_toggle.isChecked())
        self._filled_for: Any = None
        self._device_task_started = False
        self._exposure = ""  # the exposure before the latest change (issue 33)
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

    def _build_analysis(self) -> QtWidgets.QGroupBox:
        analysis = QtWidgets.QGroupBox("Analysis to compare (real vs synthetic)")
        grid = QtWidgets.QFormLayout(analysis)
        self.analysis = QtWidgets.QComboBox()
        for key, text in ANALYSES:
            self.analysis.addItem(text, key)
        self.analysis.setAccessibleName("Analysis")
        self.analysis.setToolTip(
            "The model fitted on both the real and the synthetic table, to show "
            "whether the synthetic copy gives the same answer."
        )
        self.analysis.currentIndexChanged.connect(self._analysis_changed)
        grid.addRow("Anal&ysis:", self.analysis)
        self.outcome = QtWidgets.QComboBox()
        self.outcome.setAccessibleName("Outcome")
        self.outcome.setToolTip(
            "The column the model explains (not used by a Cox model: it uses "
            "the time and event columns)."
        )
        self.outcome.currentTextChanged.connect(self._check)
        grid.addRow("&Outcome:", self.outcome)
        self._grid = grid  # the Outcome row is shown only for an analysis that has an outcome
        self.exposure = QtWidgets.QComboBox()
        self.exposure.setAccessibleName("Exposure")
        self.exposure.setToolTip("The variable whose effect you care about most.")
        self.exposure.currentTextChanged.connect(self._exposure_changed)
        grid.addRow("&Exposure:", self.exposure)
        self.per = QtWidgets.QDoubleSpinBox()
        self.per.setRange(0.001, 1e6)
        self.per.setValue(1.0)
        self.per.setAccessibleName("Effect per units of exposure")
        self.per.setToolTip("Report the effect per this many units of the exposure, e.g. 10 mmHg.")
        grid.addRow("Effect &per units:", self.per)
        self.adjust = QtWidgets.QListWidget()
        self.adjust.setAccessibleName("Adjust for")
        self.adjust.setToolTip("Tick the variables to adjust for.")
        self.adjust.setMaximumHeight(110)
        self.adjust.itemChanged.connect(self._check)
        grid.addRow("Ad&just for:", self.adjust)
        self.analysis_note = note("")
        self.analysis_note.setAccessibleName("Why the analysis was changed")
        grid.addRow(self.analysis_note)
        self.problems = note("")
        self.problems.setStyleSheet("QLabel { color: #a00; }")
        self.problems.setAccessibleName("Why this analysis cannot run")
        self.problems.setToolTip("Fix these before training: the analysis would fail after it.")
        grid.addRow(self.problems)
        return analysis

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

    def fill(self, schema: Any) -> None:
        fields = self.session.fields
        names = [c.name for c in schema.synthesized() if c.name not in (schema.time, schema.event)]
        self.outcome.clear()
        self.outcome.addItems(names)
        self.exposure.clear()
        self.exposure.addItems([NO_EXPOSURE_TEXT, *names])
        covariates = list(fields.get("covariates", ()))
        plan = self._plan()  # the automatic analysis: its exposure and columns are the defaults
        per = dict(fields.get("per", ()))
        survival = bool(schema.time and schema.event)
        analysis = fields.get("analysis", "cox" if survival else None)
        self._why_none = ""
        if analysis == "cox" and not survival:
            analysis = None
            self._why_none = (
                "The Cox model was switched off: no column is marked as the follow-up time and "
                "the event on the Columns page. Go back to mark them, or choose another analysis."
            )
        elif analysis is None and "analysis" not in fields:
            self._why_none = (
                "No regression comparison is chosen because no column is marked as a follow-up "
                "time and an event (a survival outcome). You may choose a linear or logistic "
                "regression instead."
            )
        self.analysis.setCurrentIndex(max(self.analysis.findData(analysis), 0))
        if fields.get("outcome"):
            self.outcome.setCurrentText(fields["outcome"])
        chosen = fields.get("exposure")
        if covariates:
            exposure = covariates[0] if chosen is None else chosen
        else:
            exposure = chosen if chosen is not None else (plan.exposure if plan else None) or ""
        self.exposure.setCurrentText(exposure or NO_EXPOSURE_TEXT)
        self.per.setValue(float(per.get(exposure, 1.0)))
        self.adjust.clear()
        left = dict(plan.left_out) if plan is not None and not covariates else {}
        for name in names:
            item = QtWidgets.QListWidgetItem(name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            checked = name in covariates if covariates else name not in left
            item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
            if name in left:
                item.setToolTip(f"Left out of the automatic model: {left[name]}.")
            self.adjust.addItem(item)
        self._exposure = exposure
        self._analysis_changed()
        self._exposure_changed()

    def _plan(self) -> Any:
        """The automatic analysis of the prepared table (None before it is prepared)."""
        from engine import analysis_plan

        prepared = self.session.prepared
        if prepared is None:
            return None
        try:
            return analysis_plan(prepared)
        except Exception:  # noqa: BLE001 - the defaults fall back to every column
            return None

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

    def _exposure_changed(self, *_: Any) -> None:
        """Hide the exposure from "Adjust for"; the previous exposure stays in the model as a
        ticked covariate, and no other tick changes (issue 33: age was silently unticked)."""
        exposure = self.exposure.currentText()
        previous, self._exposure = self._exposure, exposure
        for i in range(self.adjust.count()):
            item = self.adjust.item(i)
            if previous and item.text() == previous != exposure:
                item.setCheckState(Qt.CheckState.Checked)
            item.setHidden(item.text() == exposure)
        self._check()

    def _analysis_changed(self) -> None:
        key = self.analysis.currentData()
        has_outcome = key in ("ols", "logistic")
        self.outcome.setEnabled(has_outcome)
        # a Cox model (or none) has no outcome column: no greyed "Outcome: age" (issue 33)
        self._grid.setRowVisible(self.outcome, has_outcome)
        for widget in (self.exposure, self.per, self.adjust):
            widget.setEnabled(key is not None)
        # why the program chose no comparison: true only while none is chosen
        self.analysis_note.setText(self._why_none if key is None else "")
        self._check()

    def analysis_problems(self) -> list[str]:
        """Why the chosen analysis cannot be fitted on this table (the engine's own check)."""
        from engine import check_analysis

        prepared = self.session.prepared
        if prepared is None:
            return []
        try:
            fields = self._analysis_fields()
        except ValueError as err:
            return [str(err)]
        config = replace(prepared.config, **fields)
        problems = check_analysis(config, prepared.schema, prepared.real)
        return [_sentence(plain_message(p)) for p in problems]

    def _check(self, *_: Any) -> None:
        self.problems.setText("\n".join(self.analysis_problems()))

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

    def _analysis_fields(self) -> dict[str, Any]:
        """The RunConfig fields of the analysis box; ValueError when they contradict."""
        key = self.analysis.currentData()
        exposure = self.exposure.currentText()
        exposure = "" if exposure == NO_EXPOSURE_TEXT else exposure
        adjust = [
            self.adjust.item(i).text()
            for i in range(self.adjust.count())
            if self.adjust.item(i).checkState() == Qt.CheckState.Checked
            and self.adjust.item(i).text() != exposure
        ]
        outcome = self.outcome.currentText() if key in ("ols", "logistic") else None
        if outcome is not None:  # an outcome that is also the exposure: check_analysis says so
            adjust = [a for a in adjust if a != outcome]
        covariates = (exposure, *adjust) if exposure else tuple(adjust)
        return {
            "analysis": key,
            "outcome": outcome,
            "covariates": tuple(covariates) if key else (),
            "exposure": exposure if key else None,
            "per": ((exposure, float(self.per.value())),) if key and exposure else (),
        }

    def choices(self) -> dict[str, Any]:
        from engine import DEFAULT_GRID

        return {
            "auc_max": round(self.auc.value(), 3),
            **self._analysis_fields(),
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


NO_EXPOSURE_TEXT = "None: every column is an adjustment"


def _sentence(text: str) -> str:
    """An engine message as a sentence: capital first letter, full stop at the end."""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
