"""The worker layer with small fake jobs: signals on the GUI thread, throttling, errors, cancel."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import threading  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("PySide6")

from desktop.qt import QThread  # noqa: E402
from desktop.worker import Task, eta_text  # noqa: E402
from engine.errors import InputError  # noqa: E402

pytestmark = pytest.mark.gui


def _collect(task):
    got = {
        "progress": [],
        "log": [],
        "result": [],
        "error": [],
        "cancelled": 0,
        "finished": 0,
        "threads": set(),
    }
    gui = QThread.currentThread()

    def note_thread():
        got["threads"].add(QThread.currentThread() is gui)

    task.progress.connect(lambda f, t: (got["progress"].append((f, t)), note_thread()))
    task.log.connect(lambda batch: got["log"].extend(batch))
    task.result.connect(lambda r: (got["result"].append(r), note_thread()))
    task.error.connect(lambda e: got["error"].append(e))
    task.cancelled.connect(lambda: got.__setitem__("cancelled", got["cancelled"] + 1))
    task.finished.connect(lambda: (got.__setitem__("finished", got["finished"] + 1), note_thread()))
    return got


def test_result_and_throttled_progress_arrive_on_the_gui_thread(qtbot):
    worker_threads = []

    def job(progress, cancel):
        worker_threads.append(threading.current_thread())
        for i in range(4000):
            progress(i / 4000, f"step {i}")
        time.sleep(0.35)  # the fake job's own work, on the worker thread
        return 42

    task = Task(job)
    got = _collect(task)
    with qtbot.waitSignal(task.finished, timeout=10000):  # emitted on the GUI thread
        task.start()
    assert got["result"] == [42]
    assert got["finished"] == 1 and not got["error"]
    assert got["threads"] == {True}  # every slot ran on the GUI thread
    assert worker_threads[0] is not threading.main_thread()
    assert len(got["progress"]) < 50  # throttled (~10 per second)
    assert len(got["log"]) == 4000  # every message kept for curves (up to a cap)
    assert not task.is_running


def test_an_engine_error_is_reported_not_raised(qtbot):
    def job(progress, cancel):
        raise InputError("data.csv: column 'x' is empty; remove it")

    task = Task(job)
    got = _collect(task)
    with qtbot.waitSignal(task.finished, timeout=5000):
        task.start()
    assert len(got["error"]) == 1 and "column 'x'" in str(got["error"][0])
    assert got["result"] == []


def test_cancel_stops_the_job_at_its_next_step(qtbot):
    started = threading.Event()

    def job(progress, cancel):
        started.set()
        for _ in range(10000):
            cancel.raise_if_cancelled()
            time.sleep(0.01)
        return "not cancelled"

    task = Task(job)
    got = _collect(task)
    task.start()
    qtbot.waitUntil(started.is_set, timeout=5000)
    t0 = time.monotonic()
    with qtbot.waitSignal(task.finished, timeout=2000):
        task.cancel()
    assert time.monotonic() - t0 < 2.0
    assert got["cancelled"] == 1 and got["result"] == [] and got["error"] == []


def test_shutdown_joins_a_running_thread(qtbot):
    def job(progress, cancel):
        while True:
            cancel.raise_if_cancelled()
            time.sleep(0.005)

    task = Task(job)
    task.start()
    task.shutdown(5000)
    assert task not in Task.running_tasks
    assert task._runner.isFinished()


def test_eta_text():
    assert eta_text(30.0, 0.25) == "about 1:30 left"
    assert eta_text(0.1, 0.9) == "estimating time left"
