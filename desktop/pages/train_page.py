"""Page 4, Train and audit: ``engine.pipeline.synthesize`` on a worker thread.

Shows the stage, percentage and time left; a live loss curve and the AUC-vs-w plot filling in
as the audit runs (both parsed from the engine's progress texts, then redrawn from the result:
``RunResult.history`` and ``RunResult.audit.curve``). Cancel sets the token; the engine stops
at its next epoch or w and nothing is written (synthesize writes no files).
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import Any

from desktop.pages.base import Page, note
from desktop.plots import PlotWidget, auc_curve, loss_curve
from desktop.qt import QMessageBox, QTimer, QtWidgets
from desktop.worker import eta_text

_NUM = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
EPOCH = re.compile(r"\bepoch\s*\d+", re.I)
VAL = re.compile(r"val(?:idation)?[ _]?(?:loss|nll)\s*[=:]?\s*" + _NUM, re.I)
TRAIN = re.compile(r"train(?:ing)?[ _]?(?:loss|nll)\s*[=:]?\s*" + _NUM, re.I)
ANY_LOSS = re.compile(r"(?:loss|nll)\s*[=:]?\s*" + _NUM, re.I)
W_DONE = re.compile(r"\bw\s*=\s*(\d*\.?\d+)", re.I)
AUC = re.compile(r"\bauc\s*[=:]?\s*(\d*\.\d+)", re.I)
DENSITY_AUC = re.compile(r"density auc\s*[=:]?\s*(\d*\.\d+)", re.I)


def parse_progress(
    text: str,
) -> tuple[tuple[float | None, float | None] | None, tuple[float, float | None] | None]:
    """(loss point (training, validation), audit point (w, AUC)) found in one progress text.

    Example:
        >>> parse_progress("training flow: epoch 3/300, validation loss 8.05")
        ((None, 8.05), None)
        >>> parse_progress("epoch 3: training loss 1.25, validation loss 1.31")
        ((1.25, 1.31), None)
        >>> parse_progress("audit: w = 0.3 (split 1)")
        (None, (0.3, None))
        >>> parse_progress("audit: w = 0.3, AUC 0.512")
        (None, (0.3, 0.512))
    """
    loss_point = audit_point = None
    if EPOCH.search(text):
        val, train = VAL.search(text), TRAIN.search(text)
        if train is None and val is None:
            train = ANY_LOSS.search(text)
        if train is not None or val is not None:
            loss_point = (
                float(train.group(1)) if train else None,
                float(val.group(1)) if val else None,
            )
    if "audit" in text.lower():
        w = W_DONE.search(text)
        if w:
            auc = AUC.search(text)
            audit_point = (float(w.group(1)), float(auc.group(1)) if auc else None)
    return loss_point, audit_point


class TrainPage(Page):
    title = "4  Train and audit"
    subtitle = (
        "The program learns the shape of your data, then attacks its own synthetic copies to "
        "measure the privacy risk at each w. This takes a few minutes."
    )

    def __init__(self, session: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(session, parent)
        layout = QtWidgets.QVBoxLayout(self)
        self.stage = note("Not started.")
        self.stage.setAccessibleName("Current stage")
        layout.addWidget(self.stage)
        row = QtWidgets.QHBoxLayout()
        self.bar = QtWidgets.QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setFormat("%p%")
        self.bar.setAccessibleName("Progress")
        row.addWidget(self.bar, 1)
        self.eta = QtWidgets.QLabel("")
        self.eta.setAccessibleName("Time left")
        self.eta.setMinimumWidth(150)
        row.addWidget(self.eta)
        self.start_button = QtWidgets.QPushButton("&Start")
        self.start_button.setToolTip("Train the model and run the privacy audit.")
        self.start_button.clicked.connect(self.start)
        row.addWidget(self.start_button)
        self.cancel_button = QtWidgets.QPushButton("&Cancel")
        self.cancel_button.setToolTip("Stop the work within a second or two. Nothing is written.")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.cancel_button)
        layout.addLayout(row)
        plots = QtWidgets.QHBoxLayout()
        self.loss_plot = PlotWidget("Loss curve of the model training")
        self.auc_plot = PlotWidget("Membership AUC by w, filling in during the audit")
        plots.addWidget(self.loss_plot, 1)
        plots.addWidget(self.auc_plot, 1)
        layout.addLayout(plots, 1)
        self.losses: list[tuple[int, float | None, float | None]] = []
        self.audited: dict[float, float | None] = {}
        self.density_audited: dict[float, float] = {}
        self._dirty = False
        self._redraw = QTimer(self)
        self._redraw.setInterval(500)
        self._redraw.timeout.connect(self._redraw_live)
        self._eta_timer = QTimer(self)
        self._eta_timer.setInterval(1000)
        self._eta_timer.timeout.connect(self._update_eta)
        self._fraction = 0.0
        self._plots_ready = False

    # -- page life ----------------------------------------------------------------------
    def enter(self) -> None:
        if not self._plots_ready:
            self._plots_ready = True
            self._draw_live()
        if self.session.result is None and not self.is_busy():
            self.start()

    def is_complete(self) -> bool:
        return self.session.result is not None and not self.is_busy()

    def start(self) -> None:
        from engine.pipeline import synthesize

        if self.is_busy() or self.session.prepared is None:
            return
        self.session.result = None
        prepared = replace(self.session.prepared, config=self.session.config())
        self.losses.clear()
        self.audited.clear()
        self.density_audited.clear()
        self._fraction = 0.0
        self.bar.setValue(0)
        self.stage.setText("Starting…")
        self.eta.setText("estimating time left")
        self.start_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self._draw_live()
        task = self.run_task(
            lambda progress, cancel: synthesize(prepared, progress, cancel),
            self.on_done,
            self.on_error,
            self.on_progress,
        )
        task.log.connect(self.on_log)
        task.cancelled.connect(self.on_cancelled)
        task.finished.connect(self._stopped)
        self._redraw.start()
        self._eta_timer.start()

    def cancel(self) -> None:
        if self.task is not None and self.is_busy():
            self.task.cancel()
            self.cancel_button.setEnabled(False)
            self.stage.setText("Stopping at the next step…")

    # -- progress -----------------------------------------------------------------------
    def on_progress(self, fraction: float, text: str) -> None:
        # the engine's nested sub-ranges can step back a little: show the furthest point reached
        self._fraction = max(self._fraction, fraction)
        self.bar.setValue(int(round(self._fraction * 1000)))
        self.stage.setText(_stage_text(text))
        self._update_eta()

    def _update_eta(self) -> None:
        if self.task is not None and self.is_busy():
            self.eta.setText(eta_text(time.monotonic() - self.task.started_at, self._fraction))

    def on_log(self, batch: list) -> None:
        for _fraction, text in batch:
            loss, audit = parse_progress(text)
            if loss is not None:
                self.losses.append((len(self.losses) + 1, loss[0], loss[1]))
                self._dirty = True
            if audit is not None:
                w, auc = audit
                if auc is not None or w not in self.audited:
                    self.audited[w] = auc
                    self._dirty = True
                density = DENSITY_AUC.search(text)
                if density is not None:
                    self.density_audited[w] = float(density.group(1))

    def _redraw_live(self) -> None:
        if self._dirty:
            self._dirty = False
            self._draw_live()

    def _draw_live(self) -> None:
        self.loss_plot.draw(loss_curve(self.losses))
        limit = float(self.session.fields.get("auc_max", 0.55))
        known = [(w, a, 0.0) for w, a in self.audited.items() if a is not None]
        density = [(w, a, 0.0) for w, a in self.density_audited.items()]
        pending = sorted(w for w, a in self.audited.items() if a is None)

        def draw(ax: Any) -> None:
            auc_curve(known, limit, density=density)(ax)
            if pending:
                ax.plot(
                    pending,
                    [0.5] * len(pending),
                    "o",
                    mfc="none",
                    color="grey",
                    ms=7,
                    label="w attacked so far (AUC shown when the audit ends)",
                )
                ax.legend(fontsize=7, loc="upper left")

        self.auc_plot.draw(draw)

    # -- results ------------------------------------------------------------------------
    def _stopped(self) -> None:
        self._redraw.stop()
        self._eta_timer.stop()
        self.start_button.setEnabled(True)
        self.start_button.setText("&Start again")
        self.cancel_button.setEnabled(False)

    def on_done(self, result: Any) -> None:
        self.session.result = result
        self.session.written = None
        self.bar.setValue(1000)
        self.eta.setText("")
        self.render(result)
        if result.verdict == "refused":
            self.stage.setText("Finished: no w met the privacy limit. See the next page.")
            QMessageBox.information(
                self,
                "latent-synth: privacy audit",
                "No perturbation weight kept the membership AUC under your limit, so nothing can be "
                "exported as it stands. On the next page you can see the audit and, if you accept "
                "the risk explicitly, choose a w yourself.",
            )
        else:
            self.stage.setText(
                f"Finished: w = {result.release['w']:.2f} chosen ({result.verdict}). "
                "Press Next to review the privacy audit."
            )

    def render(self, result: Any) -> None:
        history = list(getattr(result, "history", ()) or ())
        if history:
            self.losses = [
                (int(h[0]), float(h[1]), None if len(h) < 3 else float(h[2])) for h in history
            ]
        self.loss_plot.draw(loss_curve(self.losses))
        points = result.audit.curve if result.audit else ()
        curve = [(p.w, p.auc, p.auc_sd) for p in points]
        density = [(p.w, p.density_auc, p.density_auc_sd) for p in points]
        w = result.release.get("w")
        self.auc_plot.draw(auc_curve(curve, result.config.auc_max, w, density=density))

    def on_error(self, err: BaseException) -> None:
        self.stage.setText("Stopped because of an error (see the message). Nothing was written.")
        self.eta.setText("")
        self.show_error(err)

    def on_cancelled(self) -> None:
        self.stage.setText("Cancelled. Nothing was written. Press Start again to retry.")
        self.eta.setText("")
        self.bar.setValue(0)


def _stage_text(text: str) -> str:
    text = text.strip()
    return (text[:1].upper() + text[1:]) if text else "Working…"
