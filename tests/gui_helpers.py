"""What the GUI tests do on the window: load a file, choose fast settings; the demo's fields.

The fixtures they use (``window``, ``messages``, ``small_demo``, the offscreen and private
QSettings set-up) are in ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

DEMO_FIELDS = dict(
    time="time_cvd_years",
    event="cvd",
    analysis="cox",
    covariates=("sbp", "age", "totchol", "hdl"),
    per=(("sbp", 10.0),),
)


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
