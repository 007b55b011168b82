"""The Settings page's analysis box: which model is fitted on the real and the synthetic
table (Cox, linear, logistic or none), its outcome, the exposure, the effect per units and the
columns to adjust for, with the engine's own check of whether that model can be fitted.

Collects the RunConfig fields ``analysis, outcome, covariates, exposure, per``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from desktop.pages.base import note, plain_message
from desktop.qt import Qt, QtWidgets

ANALYSES = (
    ("cox", "Cox model (survival: time to event)"),
    ("ols", "Linear regression (a numeric outcome)"),
    ("logistic", "Logistic regression (a yes/no outcome)"),
    (None, "No regression comparison"),
)
NO_EXPOSURE_TEXT = "None: every column is an adjustment"


class AnalysisBox(QtWidgets.QGroupBox):
    """The analysis to compare (real vs synthetic), on the session's prepared table."""

    def __init__(self, session: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__("Analysis to compare (real vs synthetic)", parent)
        self.session = session
        self._why_none = ""  # why the program chose no regression comparison, if it did
        self._exposure = ""  # the exposure before the latest change (issue 33)
        grid = QtWidgets.QFormLayout(self)
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

    def fill(self, schema: Any) -> None:
        """The choices for ``schema``: the session's fields, else the automatic analysis."""
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
            fields = self.fields()
        except ValueError as err:
            return [str(err)]
        config = replace(prepared.config, **fields)
        problems = check_analysis(config, prepared.schema, prepared.real)
        return [_sentence(plain_message(p)) for p in problems]

    def _check(self, *_: Any) -> None:
        self.problems.setText("\n".join(self.analysis_problems()))

    def fields(self) -> dict[str, Any]:
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


def _sentence(text: str) -> str:
    """An engine message as a sentence: capital first letter, full stop at the end."""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
