"""The meta-analysis window: three typed summary rows pooled by DerSimonian-Laird."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("MPLBACKEND", "Agg")

import json  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("PySide6")

pytestmark = pytest.mark.gui


def test_meta_window_pools_three_summary_rows(window, qtbot, messages, tmp_path):
    from engine.stats.meta import pool

    meta = window.open_meta()
    assert meta.isVisible()
    meta.tabs.setCurrentIndex(2)
    rows = [("Site A", 0.10, 0.10), ("Site B", 0.30, 0.12), ("Site C", 0.22, 0.09)]
    for row in rows:
        meta.add_summary_row(*row)
    meta.method.setCurrentIndex(meta.method.findData("dl"))
    config = meta.config()
    assert list(config.summary["study"]) == [r[0] for r in rows]  # in memory, not a file
    meta.pool()
    qtbot.waitUntil(lambda: meta.run is not None and not meta.task.is_running, timeout=30000)
    expected = pool([r[1] for r in rows], [r[2] for r in rows], "dl", [r[0] for r in rows])
    result = meta.run.primary
    assert result.k == 3
    assert result.estimate == pytest.approx(expected.estimate)
    assert result.tau2 >= 0.0
    assert meta.studies.rowCount() == 3 and meta.canvas is not None
    headers = [
        meta.studies.horizontalHeaderItem(c).text() for c in range(meta.studies.columnCount())
    ]
    assert headers[:5] == [
        "Site",
        "Estimate (log scale)",
        "Standard error",
        "95% CI from",
        "95% CI to",
    ]
    assert not any("_" in h for h in headers)  # no column names from the code
    assert "Pooled (DL, k = 3)" in meta.result_label.text()
    assert not list(meta._workdir.rglob("*.csv"))  # no temporary summary file
    assert f"k = 3): {expected.estimate:.3f} (95% CI {expected.ci_low:.3f}" in (
        meta.result_label.text()
    )
    out = meta.export(str(tmp_path / "meta"))
    data = json.loads((out / "meta.json").read_text())
    assert data["k"] == 3 and (out / "forest.pdf").read_bytes().startswith(b"%PDF")
    assert not messages


def test_meta_window_explains_too_few_rows(window, qtbot, messages):
    meta = window.open_meta()
    meta.tabs.setCurrentIndex(2)
    meta.add_summary_row("only one", 0.1, 0.1)
    meta.pool()
    assert messages and "at least two studies" in messages[-1][1]
    assert meta.task is None
