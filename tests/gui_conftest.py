"""Shared fixtures of the GUI tests (imported by tests/test_gui_*.py; not a pytest conftest).

Every GUI test runs offscreen, with QSettings in a private folder, and fails when a worker
thread outlives it.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("MPLBACKEND", "Agg")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

__all__ = [
    "DEMO_FIELDS",
    "_no_leaked_threads",
    "_private_qsettings",
    "fast_settings",
    "load",
    "messages",
    "small_demo",
    "window",
]

SMALL_ROWS = 800
DEMO_FIELDS = dict(
    time="time_cvd_years",
    event="cvd",
    analysis="cox",
    covariates=("sbp", "age", "totchol", "hdl"),
    per=(("sbp", 10.0),),
)


@pytest.fixture(autouse=True)
def _private_qsettings(qapp, tmp_path_factory):
    """QSettings go to a temporary folder, never the user's real settings."""
    from desktop.qt import QSettings

    folder = tmp_path_factory.mktemp("qsettings")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    qapp.setOrganizationName("latent-synth-tests")
    qapp.setApplicationName("latent-synth-tests")
    yield


@pytest.fixture(autouse=True)
def _no_leaked_threads(qapp):
    """Fail a test that leaves a worker thread running."""
    yield
    from desktop.worker import Task

    leaked = [t for t in Task.running_tasks if t.is_running]
    for task in leaked:
        task.shutdown()
    assert not leaked, f"{len(leaked)} worker thread(s) still running after the test"


@pytest.fixture
def window(qtbot):
    from desktop.wizard import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    yield win
    win.close()


@pytest.fixture
def messages(monkeypatch):
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
def small_demo(tmp_path_factory) -> Path:
    """The first 800 rows of the demo cohort's Framingham M study (keeps GUI tests fast)."""
    import pandas as pd

    from engine.cli import demo_input

    frame = pd.read_csv(demo_input(), dtype={"participant_id": str})
    small = frame[frame["study"] == "Framingham M"].head(SMALL_ROWS)
    path = tmp_path_factory.mktemp("input") / "framingham_m_small.csv"
    small.to_csv(path, index=False)
    return path


def load(window, qtbot, path: Path, **fields) -> None:
    """Load a file on the Import page and wait for the preview."""
    page = window.pages[0]
    page.load_file(path, **fields)
    qtbot.waitUntil(lambda: not page.is_busy(), timeout=30000)


def fast_settings(window) -> None:
    """Small grid, two repeats, a seed: a few seconds of training on 800 rows."""
    page = window.pages[2]
    # A limit of 0.60: with 800 rows and two repeats the AUC's standard error is about 0.015,
    # so the default 0.55 can refuse by chance; these tests are about the wizard, not the audit.
    page.auc.setValue(0.60)
    page.advanced_toggle.setChecked(True)
    page.grid_edit.setText("0, 0.3, 0.6")
    page.repeats.setValue(2)
    page.seeded.setChecked(True)
    page.seed.setValue(1)
    page.budget.setCurrentText("fast")
    page.device.setCurrentText("cpu")
