"""Fixtures every test file sees without importing them (pytest reads this file first).

The GUI tests (marked ``pytestmark = pytest.mark.gui``) run offscreen, with QSettings in a
private folder, and fail when a worker thread outlives them. Qt is imported only inside a GUI
test's fixtures, so the engine's tests run where PySide6 or pytest-qt is not installed
(``tests/test_headless.py``). The helpers GUI tests call (``load``, ``fast_settings``,
``DEMO_FIELDS``) are in ``tests/gui_helpers.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("MPLBACKEND", "Agg")

SMALL_ROWS = 800


def _qapp(request: pytest.FixtureRequest):
    """The QApplication of a GUI test (skipped where PySide6 or pytest-qt is missing); None for
    every other test, which then never imports Qt."""
    if request.node.get_closest_marker("gui") is None:
        return None
    pytest.importorskip("PySide6")
    pytest.importorskip("pytestqt")
    return request.getfixturevalue("qapp")


@pytest.fixture(autouse=True)
def _private_qsettings(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """QSettings of a GUI test go to a temporary folder, never the user's real settings."""
    qapp = _qapp(request)
    if qapp is not None:
        from desktop.qt import QSettings

        folder = tmp_path_factory.mktemp("qsettings")
        QSettings.setDefaultFormat(QSettings.Format.IniFormat)
        QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
        qapp.setOrganizationName("latent-synth-tests")
        qapp.setApplicationName("latent-synth-tests")
    yield


@pytest.fixture(autouse=True)
def _no_leaked_threads(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a GUI test that leaves a worker thread running."""
    gui = _qapp(request) is not None
    yield
    if gui:
        from desktop.worker import Task

        leaked = [t for t in Task.running_tasks if t.is_running]
        for task in leaked:
            task.shutdown()
        assert not leaked, f"{len(leaked)} worker thread(s) still running after the test"


@pytest.fixture
def window(qtbot):
    """The main window, shown offscreen and closed after the test."""
    from desktop.wizard import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    yield win
    win.close()


@pytest.fixture
def messages(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record message boxes instead of showing them; question() answers Yes."""
    from desktop.qt import QMessageBox

    seen: list[tuple[str, str]] = []

    def record(kind):
        def box(parent, title, text, *args, **kwargs):
            seen.append((kind, str(text)))
            if kind == "question":
                return QMessageBox.StandardButton.Yes
            return QMessageBox.StandardButton.Ok

        return box

    for kind in ("warning", "information", "critical", "question", "about"):
        monkeypatch.setattr(QMessageBox, kind, staticmethod(record(kind)))
    return seen


@pytest.fixture(scope="session")
def small_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 800 rows of the demo cohort's Framingham M study (keeps GUI tests fast)."""
    import pandas as pd

    from engine.cli import demo_input

    frame = pd.read_csv(demo_input(), dtype={"participant_id": str})
    small = frame[frame["study"] == "Framingham M"].head(SMALL_ROWS)
    path = tmp_path_factory.mktemp("input") / "framingham_m_small.csv"
    small.to_csv(path, index=False)
    return path
