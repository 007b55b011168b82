"""The training page draws from the engine's typed partial results (issue 12 item 4, issue 14
item 6): one loss line per model, a sentence for a validation loss that rose, the live privacy
curve with SE bars, and a time left measured after the first epochs."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from types import SimpleNamespace  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("PySide6")

from desktop.pages.train_page import TrainPage  # noqa: E402
from desktop.worker import Task, TimeLeft, eta_text  # noqa: E402
from engine import AuditPointDone, EpochDone  # noqa: E402

pytestmark = pytest.mark.gui

AUDIT_VAL = [3.0, 2.6, 2.4, 2.3]
FINAL_VAL = [2.9, 2.5, 2.2]


def _epochs(model: str, vals: list[float], planned: int = 25) -> list[EpochDone]:
    return [EpochDone(e, 300, v - 0.1, v, 0.01, e, planned, model) for e, v in enumerate(vals, 1)]


def _page(qtbot) -> TrainPage:
    session = SimpleNamespace(fields={"auc_max": 0.55}, result=None, prepared=None)
    page = TrainPage(session)
    qtbot.addWidget(page)
    return page


def _run_fake(qtbot, page: TrainPage, partials: list) -> None:
    """A fake engine job on a worker thread sends the partial results through the Task."""

    def job(progress, cancel):
        for k, partial in enumerate(partials, 1):
            progress(k / len(partials), "working", partial)
        return None

    task = Task(job)
    task.partial.connect(page.on_partial)
    with qtbot.waitSignal(task.finished, timeout=10000):
        task.start()
    page._draw_live()


def _val_lines(page: TrainPage) -> dict[str, list[float]]:
    ax = page.loss_plot.figure.axes[0]
    return {
        line.get_label(): [float(y) for y in line.get_ydata()]
        for line in ax.get_lines()
        if line.get_linestyle() == "-" and not line.get_label().startswith("(")
    }


def test_two_models_give_two_loss_lines_not_one_joined_line(qtbot) -> None:
    page = _page(qtbot)
    _run_fake(qtbot, page, _epochs("audit split 1", AUDIT_VAL) + _epochs("final model", FINAL_VAL))
    lines = _val_lines(page)
    assert lines == {"audit split 1": AUDIT_VAL, "final model": FINAL_VAL}
    ax = page.loss_plot.figure.axes[0]
    xs = {line.get_label(): list(line.get_xdata()) for line in ax.get_lines()}
    assert xs["final model"] == [1, 2, 3]  # each model's epochs count from 1
    assert page.loss_note.text() == ""  # no validation loss rose


def test_a_rising_validation_loss_is_explained_in_one_sentence(qtbot) -> None:
    page = _page(qtbot)
    rising = [
        EpochDone(1, 300, 2.9, 3.0, 0.01, 1, 21, "final model"),
        EpochDone(2, 300, 2.6, 2.5, 0.01, 2, 22, "final model"),
        EpochDone(3, 300, 2.3, 2.7, 0.01, 2, 22, "final model"),
        EpochDone(22, 300, 1.9, 2.9, 0.01, 2, 22, "final model"),  # early stopping ends here
    ]
    _run_fake(qtbot, page, rising)
    text = page.loss_note.text()
    assert "final model's error on rows held back from training rose after round 2" in text
    assert "stopped early" in text and "from round 2" in text
    assert text.count(".") == 1  # one sentence


def test_live_privacy_curve_draws_se_bars_from_audit_partials(qtbot) -> None:
    page = _page(qtbot)
    points = [
        AuditPointDone(0.0, 1, 0.50, 0.004, 0.51, 0.006, 3),
        AuditPointDone(0.5, 1, 0.53, 0.010, 0.56, 0.020, 3),
    ]
    _run_fake(qtbot, page, points)
    ax = page.auc_plot.figure.axes[0]
    assert "SE" in ax.get_title() and "SD" not in ax.get_title()
    distance = ax.containers[0]  # errorbar container: (line, caps, bar segments)
    assert list(distance.lines[0].get_ydata()) == [0.50, 0.53]
    half = [(seg[1][1] - seg[0][1]) / 2 for seg in distance.lines[2][0].get_segments()]
    assert half == pytest.approx([0.004, 0.010])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "distance attack (mean ± SE)" in labels and "limit 0.55" in labels


def test_time_left_comes_from_measured_epochs_not_the_slow_start() -> None:
    # a 25-second run: 5 s of reading and encoding (progress 0 -> 1 %), then epochs of 0.1 s that
    # move the progress evenly to 100 % at 25 s
    est = TimeLeft(min_epochs=3)

    def fraction(t: float) -> float:
        return 0.01 * t / 5 if t <= 5 else 0.01 + 0.99 * (t - 5) / 20

    t = 0.0
    texts = []
    while t < 24.95:
        t = round(t + 0.1, 2)
        if t > 5:
            est.epoch()
        est.update(fraction(t), now=t)
        if t > 6:
            texts.append(est.text(now=t))
    assert est.seconds(now=10.0) is not None
    # at 10 s: 15 s are left; measured after the first epochs the estimate is within 0.5 s
    est10 = TimeLeft(min_epochs=3)
    for k in range(1, 101):
        t = k / 10
        if t > 5:
            est10.epoch()
        est10.update(fraction(t), now=t)
    assert est10.seconds(now=10.0) == pytest.approx(15.0, abs=0.5)
    assert est10.text(now=10.0) == "about 15 seconds left"
    # extrapolating over the whole elapsed time (the old way) says about twice as long
    assert eta_text(10.0, fraction(10.0)) == "about 30 seconds left"
    # never minutes for a run that takes 25 seconds
    assert texts and all(":" not in x and "minute" not in x for x in texts)


def test_time_left_waits_for_the_first_epochs() -> None:
    est = TimeLeft(min_epochs=3)
    est.update(0.2, now=1.0)
    est.update(0.4, now=2.0)
    assert est.text(now=2.0) == "estimating time left"  # no epoch measured yet
    for _ in range(3):
        est.epoch()
    est.update(0.4, now=2.0)
    est.update(0.5, now=4.0)
    assert est.seconds(now=4.0) == pytest.approx(10.0)  # 0.1 per 2 s, 0.5 to go


def test_page_counts_epochs_for_its_estimate(qtbot) -> None:
    page = _page(qtbot)
    _run_fake(qtbot, page, _epochs("final model", FINAL_VAL))
    assert page.time_left.epochs == 3
    assert "few minutes" not in page.subtitle
