"""Page 4, Train and audit: ``engine.synthesize`` on a worker thread.

Shows the stage, percentage and time left (measured once the first epochs and the first audited w
are done); a live loss plot with one line per model and the AUC-vs-w plot filling in as the audit
runs, both drawn from the engine's typed partial results (:class:`engine.EpochDone`,
:class:`engine.AuditPointDone`), never from its progress texts; then redrawn from the result. Cancel
sets the token; the engine stops at its next epoch or w and nothing is written (synthesize writes no
files).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from desktop.pages.base import Page, note
from desktop.plots import PlotWidget, kept_round, loss_curve, privacy_curve
from desktop.qt import QMessageBox, QTimer, QtWidgets
from desktop.worker import TimeLeft

RISE = 0.01  # a validation loss this far above its best counts as risen (nats per row)


def rising_validation_note(series: Mapping[str, Sequence[Any]]) -> str:
    """One plain sentence for the latest model whose error on held-back rows (validation loss)
    rose after its best training round (epoch); "" when none did.

    Example:
        >>> from engine import EpochDone
        >>> eps = [EpochDone(e, 300, 2.0 - 0.1 * e, v, 0.1, 2, 22 if e < 22 else e)
        ...        for e, v in [(1, 2.0), (2, 1.8), (3, 1.85), (22, 1.95)]]
        >>> rising_validation_note({"final model": eps})[:72]
        "The final model's error on rows held back from training rose after round"
    """
    for name, points in reversed(list(series.items())):
        if not points:
            continue
        best = kept_round(points)
        last = points[-1]
        if last.epoch > best.epoch and last.val_loss > best.val_loss + RISE:
            who = f"The {name}'s" if name else "The model's"
            done = last.epoch >= last.planned_epochs
            stopped = (
                "training stopped early and kept"
                if done
                else "training will stop early unless it improves, and keep"
            )
            kept = (
                f"its version from round {best.epoch}, where that error "
                f"{'was' if done else 'is'} lowest (the dot on the curve)"
            )
            if best.epoch == 1:  # rising from the start: it looks like a failure, it is not
                return (
                    f"{who} error on rows held back from training rose after round 1: the "
                    "model starts from each column's distribution and their correlations, so "
                    "its first round already fitted what new rows have in common and later "
                    f"rounds fitted its training rows more closely than new rows; {stopped} "
                    f"{kept}, so the rising line is not a failure."
                )
            return (
                f"{who} error on rows held back from training rose after round {best.epoch}: "
                f"it began to fit its training rows more closely than new rows, so {stopped} "
                f"{kept}."
            )
    return ""


def training_verdict(series: Mapping[str, Sequence[Any]], finished: bool = False) -> str:
    """The plain verdict on the training (issue 33: not only "validation loss" and "epoch"):
    whether the latest model learned the table's pattern, in words a clinician reads.

    Example:
        >>> from engine import EpochDone
        >>> good = [EpochDone(e, 300, v - 0.1, v, 0.1, e, 25) for e, v in [(1, 3.0), (2, 2.4)]]
        >>> training_verdict({"final model": good}, finished=True)[:60]
        'Training went well: the model describes rows it never saw be'
        >>> flat = [EpochDone(e, 300, 2.0, 2.0, 0.1, 1, 21) for e in (1, 2, 21)]
        >>> training_verdict({"final model": flat}, finished=True)[:40]
        'The model learned little beyond each col'
    """
    drawn = [list(points) for points in series.values() if points]
    if not drawn:
        return ""
    points = drawn[-1]
    first, last = points[0], points[-1]
    best = min(points, key=lambda p: p.val_loss)
    improved = first.val_loss - best.val_loss > RISE
    rose = last.epoch > best.epoch and last.val_loss > best.val_loss + RISE
    after = " Whether it gives anyone away is measured by the privacy audit." if finished else ""
    if not finished:
        trend = (
            "is learning: its fit to rows it has not seen is improving"
            if improved and not rose
            else "is learning; it now fits its training rows better than new rows, so the "
            "program keeps its best version so far"
            if rose
            else "has not yet improved on rows it has not seen"
        )
        return f"So far the model {trend}."
    if not improved:
        return (
            "The model learned little beyond each column's own distribution (its fit to rows "
            "it never saw did not improve): the synthetic copy keeps each column's values but "
            "may keep fewer links between columns; the Fidelity page shows which." + after
        )
    if rose:
        return (
            "Training went well: the model learned your table's pattern, then began to "
            "memorise its training rows, so the program kept its best version (from round "
            f"{best.epoch})." + after
        )
    return (
        "Training went well: the model describes rows it never saw better and better, and "
        "training stopped once it no longer improved." + after
    )


class TrainPage(Page):
    title = "4  Train and audit"
    subtitle = (
        "The program learns the shape of your data, then attacks its own synthetic copies to "
        "measure the privacy risk at each w. The time left is shown once the first training "
        "rounds and the first privacy test have been timed."
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
        self.verdict = note("")
        self.verdict.setStyleSheet("QLabel { font-weight: bold; }")
        self.verdict.setAccessibleName("How the training went")
        layout.addWidget(self.verdict)
        plots = QtWidgets.QHBoxLayout()
        self.loss_plot = PlotWidget("Loss curve of the model training")
        self.auc_plot = PlotWidget("Membership AUC by w, filling in during the audit")
        plots.addWidget(self.loss_plot, 1)
        plots.addWidget(self.auc_plot, 1)
        layout.addLayout(plots, 1)
        self.loss_note = note("")
        self.loss_note.setAccessibleName("About the loss curve")
        layout.addWidget(self.loss_note)
        self.losses: dict[str, list[Any]] = {}  # model name -> its EpochDone results
        self.audited: dict[float, Any] = {}  # w -> its latest AuditPointDone
        self.time_left = TimeLeft(wait_for_audit=True)
        self._dirty = False
        self._redraw = QTimer(self)
        self._redraw.setInterval(500)
        self._redraw.timeout.connect(self._redraw_live)
        self._eta_timer = QTimer(self)
        self._eta_timer.setInterval(1000)
        self._eta_timer.timeout.connect(self._update_eta)
        self._fraction = 0.0
        self._plots_ready = False
        self._rendered_for: Any = None  # the result the plots show

    # -- page life ----------------------------------------------------------------------
    def enter(self) -> None:
        if not self._plots_ready:
            self._plots_ready = True
            self._draw_live()
        result = self.session.result
        if result is None and not self.is_busy():
            self.start()
        elif result is not None and result is not self._rendered_for and not self.is_busy():
            # a run kept from elsewhere (the one-click job): show it, do not train again
            self.losses.clear()
            self.audited.clear()
            self.bar.setValue(1000)
            self.eta.setText("")
            self.render(result)
            self.stage.setText(_finished_text(result))

    def is_complete(self) -> bool:
        return self.session.result is not None and not self.is_busy()

    def start(self) -> None:
        from engine import synthesize

        if self.is_busy() or self.session.prepared is None:
            return
        self.session.result = None
        prepared = replace(self.session.prepared, config=self.session.config())
        self.losses.clear()
        self.audited.clear()
        self.loss_note.setText("")
        self.verdict.setText("")
        self.time_left = TimeLeft(wait_for_audit=True)
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
        task.partial.connect(self.on_partial)
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
        self.time_left.update(self._fraction)
        self.bar.setValue(int(round(self._fraction * 1000)))
        self.stage.setText(_stage_text(text))
        self._update_eta()

    def _update_eta(self) -> None:
        if self.task is not None and self.is_busy():
            self.eta.setText(self.time_left.text())

    def on_partial(self, partial: Any) -> None:
        """A typed partial result from the engine: an epoch's losses or an audited w's AUCs."""
        from engine import AuditPointDone, EpochDone

        if isinstance(partial, EpochDone):
            self.losses.setdefault(partial.model, []).append(partial)
            self.time_left.epoch()
            self._dirty = True
        elif isinstance(partial, AuditPointDone):
            self.audited[partial.w] = partial
            self.time_left.audited()
            self._dirty = True

    def _redraw_live(self) -> None:
        if self._dirty:
            self._dirty = False
            self._draw_live()

    def _draw_live(self) -> None:
        self.loss_plot.draw(loss_curve(self.losses))
        self.loss_note.setText(rising_validation_note(self.losses))
        self.verdict.setText(training_verdict(self.losses))
        limit = float(self.session.fields.get("auc_max", 0.55))
        self.auc_plot.draw(privacy_curve(list(self.audited.values()), limit))

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
        self.stage.setText(_finished_text(result))
        if result.refusal is not None:
            QMessageBox.information(
                self,
                "latent-synth: privacy audit",
                "No perturbation weight kept the membership AUC under your limit, so nothing can "
                "be exported as it stands. On the next page you can see the audit and, if you "
                "accept the risk explicitly, choose a w yourself.",
            )

    def render(self, result: Any) -> None:
        from engine import EpochDone

        self._rendered_for = result
        history = list(getattr(result, "history", ()) or ())
        if history and not self.losses:  # no live epochs (e.g. a result loaded back): final model
            self.losses = {
                "final model": [
                    EpochDone(int(h[0]), int(h[0]), float(h[1]), float(h[2]), 0.0, 0, 0)
                    for h in history
                    if len(h) >= 3
                ]
            }
        self.loss_plot.draw(loss_curve(self.losses))
        self.loss_note.setText(rising_validation_note(self.losses))
        self.verdict.setText(training_verdict(self.losses, finished=True))
        if result.audit is not None:
            chosen = result.release.w
            self.auc_plot.draw(
                privacy_curve(
                    result.audit, result.config.auc_max, chosen, chosen_label="released w"
                )
            )

    def on_error(self, err: BaseException) -> None:
        self.stage.setText("Stopped because of an error (see the message). Nothing was written.")
        self.eta.setText("")
        self.show_error(err)

    def on_cancelled(self) -> None:
        self.stage.setText("Cancelled. Nothing was written. Press Start again to retry.")
        self.eta.setText("")
        self.bar.setValue(0)


def model_words(model: Any) -> str:
    """The fitted model in plain words (issue 44: a copula is "fitted", it has no epochs).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> model_words(NS(flows=0, hidden=0, layers=0, whitened=True))
        'the Gaussian copula of the columns was fitted'
        >>> model_words(NS(flows=3, hidden=32, layers=1, whitened=True))
        'a flow model (3 flows of 32 hidden units) was trained'
    """
    if model is None:
        return ""
    if not model.flows:
        what = "Gaussian copula" if getattr(model, "whitened", True) else "independent normal model"
        return f"the {what} of the columns was fitted"
    return f"a flow model ({model.flows} flows of {model.hidden} hidden units) was trained"


def _finished_text(result: Any) -> str:
    """The stage line once a run is done (here or kept from the one-click job)."""
    fitted = model_words(getattr(result, "model", None))
    fitted = f"{fitted}; " if fitted else ""
    if result.refusal is not None:
        return f"Finished: {fitted}no w met the privacy limit. See the next page."
    return (
        f"Finished: {fitted}w = {result.release.w:.2f} chosen ({result.verdict}). "
        "Press Next to review the privacy audit."
    )


def _stage_text(text: str) -> str:
    text = text.strip()
    return (text[:1].upper() + text[1:]) if text else "Working…"
