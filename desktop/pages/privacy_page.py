"""Page 5, Privacy: the audit curves, the limit, the chosen w and the per-record risk summary.

The user may lower w freely. Raising it above the audit's choice needs the acknowledgement
checkbox *and* a confirmation dialog; the new config then carries ``risk_acknowledged=True``,
which ``audit.json`` (``settings``) and the report record. Either way the release runs again
on a worker through :func:`desktop.session.release_at` (the release half of ``synthesize``,
keeping the audit the user reviewed).
"""

from __future__ import annotations

from typing import Any

from desktop.pages.base import Page, heading, note
from desktop.pages.privacy_text import (
    EXPLAIN_HTML,
    ack_text,
    disclosure_lines,  # noqa: F401 - the tests import it here
    summary_html,
)
from desktop.plots import PlotWidget, privacy_curve
from desktop.qt import QMessageBox, QtCore, QtWidgets
from desktop.session import release_at


class PrivacyPage(Page):
    title = "5  Privacy"
    subtitle = "How easily an attacker could tell whether a person was in your data, for each w."

    def __init__(self, session: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(session, parent)
        layout = QtWidgets.QHBoxLayout(self)
        self.plot = PlotWidget(
            "Membership AUC by w: the attack that decides with its 95 % band, the limit and the "
            "chosen w",
            height=3.4,
        )
        layout.addWidget(self.plot, 3)
        panel = QtWidgets.QWidget()
        side = QtWidgets.QVBoxLayout(panel)
        side.setContentsMargins(0, 0, 6, 0)
        # the panel scrolls: at the default window size its text no longer ends mid-sentence
        scroll = QtWidgets.QScrollArea()
        scroll.setWidget(panel)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMaximumWidth(460)
        layout.addWidget(scroll, 2)
        side.addWidget(heading("Result of the audit"))
        self.summary = note("")
        self.summary.setAccessibleName("Privacy summary")
        self.summary.setToolTip(
            "<p><b>w</b>: how close each synthetic row stays to its real record (0 = pure noise "
            "from the model, 1 = the real data). <b>Limit</b>: the highest membership AUC you "
            "allow. <b>Membership AUC</b>: how well an attacker tells who was in your data; "
            "0.5 = a coin toss, 1 = always right. <b>Rows</b>: the number of synthetic rows "
            "released.</p><p><b>Closer chance</b>: how often a synthetic row lies nearer its "
            "own real record than another real record does (small is safer). <b>Median "
            "rank</b>: among the real records, the typical position of a synthetic row's own "
            "record by closeness (large is safer). <b>Records at risk</b>: real people whose "
            "own row is among the few nearest to their synthetic row. <b>ε</b>: the theoretical "
            "privacy bound for this w, usually large; the attack audit is the practical "
            "check.</p>"
        )
        side.addWidget(self.summary)
        self.explain = note(EXPLAIN_HTML)
        self.explain.setAccessibleName("How to read the audit")
        self.explain.setToolTip(
            "AUC 0.5: the attacker does no better than a coin toss; 1: always right. "
            "ε: smaller is safer; for this method it is a worst-case ceiling."
        )
        side.addWidget(self.explain)
        side.addWidget(heading("Choose w yourself"))
        row = QtWidgets.QHBoxLayout()
        label = QtWidgets.QLabel("&w:")
        self.w_spin = QtWidgets.QDoubleSpinBox()
        self.w_spin.setRange(0.0, 0.99)
        self.w_spin.setSingleStep(0.01)
        self.w_spin.setDecimals(2)
        self.w_spin.setAccessibleName("Perturbation weight w")
        self.w_spin.setToolTip(
            "Lower w = more noise = safer but less faithful. Raising w above the "
            "audited choice needs your explicit acknowledgement."
        )
        label.setBuddy(self.w_spin)
        self.w_spin.valueChanged.connect(self._w_changed)
        row.addWidget(label)
        row.addWidget(self.w_spin)
        self.apply_button = QtWidgets.QPushButton("&Apply this w")
        self.apply_button.setToolTip(
            "Make the synthetic copy again with this w (about as long as the first run took)."
        )
        self.apply_button.clicked.connect(self.apply_w)
        row.addWidget(self.apply_button)
        row.addStretch(1)
        side.addLayout(row)
        self.ack = QtWidgets.QCheckBox("I &understand and accept the higher risk")
        self.ack.setStyleSheet("QCheckBox { color: #a00; }")
        self.ack.setAccessibleName("Acknowledge the privacy risk of a higher w")
        self.ack.setToolTip(
            "A w above the audited choice makes it easier to tell who was in the "
            "data. Needed only to raise w; the report records it."
        )
        side.addWidget(self.ack)
        self.ack_label = QtWidgets.QLabel()
        self.ack_label.setWordWrap(True)
        self.ack_label.setToolTip(
            "Whether the w in the box is above the audited choice, i.e. riskier than your limit."
        )
        side.addWidget(self.ack_label)
        self.bar = QtWidgets.QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setVisible(False)
        self.bar.setAccessibleName("Progress of the new release")
        self.bar.setToolTip("How far the new synthetic copy has got.")
        side.addWidget(self.bar)
        self.cancel_button = QtWidgets.QPushButton("Cance&l")
        self.cancel_button.setVisible(False)
        self.cancel_button.clicked.connect(self._cancel)
        side.addWidget(self.cancel_button)
        side.addStretch(1)
        self._shown: Any = None

    # -- page life ----------------------------------------------------------------------
    def enter(self) -> None:
        result = self.session.result
        if result is not None and result is not self._shown:
            self._shown = result
            self.render(result)

    def is_complete(self) -> bool:
        result = self.session.result
        return result is not None and result.synthetic is not None and not self.is_busy()

    def selected_w(self) -> float | None:
        result = self.session.result
        return None if result is None else result.audit.selected_w

    def render(self, result: Any) -> None:
        released = result.release.w
        self.w_spin.blockSignals(True)
        self.w_spin.setValue(released if released is not None else 0.0)
        self.w_spin.blockSignals(False)
        # Ticked exactly when this release is above the audited choice with your acceptance.
        self.ack.setChecked(bool(result.config.risk_acknowledged) and result.synthetic is not None)
        self._draw()
        self.summary.setText(summary_html(result))
        self._w_changed()

    def _draw(self) -> None:
        result = self.session.result
        if result is None:
            return
        limit = result.config.auc_max
        chosen = result.release.w
        candidate = self.w_spin.value()

        selected = result.audit.selected_w
        trying = None if result.is_released_w(candidate) else candidate
        # the engine's one privacy-curve drawing (the PDF draws the same): the deciding attack's
        # fitted curve and its 95 % band, whose top is what the rule compares with the limit
        curve_with_choice = privacy_curve(
            result.audit, limit, selected, trying, chosen_label="audited choice w"
        )

        def draw(ax: Any) -> None:
            curve_with_choice(ax)
            if chosen is not None and (selected is None or abs(chosen - selected) > 1e-9):
                ax.axvline(
                    chosen, color="#8c564b", lw=1.2, ls="--", label=f"released w = {chosen:.2f}"
                )
                ax.legend(loc="upper left", fontsize=7)

        self.plot.draw(draw)

    def _w_changed(self) -> None:
        result = self.session.result
        w = self.w_spin.value()
        if result is not None:
            self.ack_label.setText(ack_text(result, w))
        self.ack.setEnabled(result is None or result.above_choice(w))
        self._draw()

    # -- changing w ---------------------------------------------------------------------
    def apply_w(self) -> None:
        result = self.session.result
        if result is None or self.is_busy():
            return
        w = round(self.w_spin.value(), 2)
        if result.synthetic is not None and result.is_released_w(w):
            return
        selected = result.audit.selected_w
        raising = result.above_choice(w)
        if raising:
            if not self.ack.isChecked():
                QMessageBox.warning(
                    self,
                    "latent-synth: privacy",
                    (
                        f"w = {w:.2f} is above the audited choice. "
                        if selected is not None
                        else f"No w passed the audit, so w = {w:.2f} goes beyond your limit. "
                    )
                    + "Tick the acknowledgement box first if you accept the higher risk.",
                )
                return
            answer = QMessageBox.question(
                self,
                "latent-synth: confirm a higher risk",
                f"Release at w = {w:.2f}? The audit found attackers may recognise members more "
                "easily than your limit allows. The report will record that you accepted this "
                "risk.",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.No,
            )
            if answer != QMessageBox.StandardButton.Yes:
                return
        self.bar.setValue(0)
        self.bar.setVisible(True)
        self.cancel_button.setVisible(True)
        self.apply_button.setEnabled(False)
        acknowledged = raising and self.ack.isChecked()
        task = self.run_task(
            lambda progress, cancel: release_at(result, w, acknowledged, progress, cancel),
            self._released,
            self._failed,
            lambda f, t: self.bar.setValue(int(f * 1000)),
        )
        task.finished.connect(self._stopped)

    def _cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def _stopped(self) -> None:
        self.bar.setVisible(False)
        self.cancel_button.setVisible(False)
        self.apply_button.setEnabled(True)

    def _released(self, result: Any) -> None:
        self.session.result = result
        self.session.written = None
        self._shown = result
        self.render(result)

    def _failed(self, err: BaseException) -> None:
        self.show_error(err)
