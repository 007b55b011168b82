"""The engine works where PySide6 is not installed and where there is no network at all."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

BLOCK_QT = r"""
import importlib.abc, sys
class _NoQt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"PySide6", "shiboken6", "PyQt5", "PyQt6"}:
            raise ImportError(f"{name} is blocked: this test simulates a machine without Qt")
        return None
sys.meta_path.insert(0, _NoQt())
"""


@pytest.mark.slow
def test_engine_tests_pass_without_pyside6(tmp_path: Path) -> None:
    """Run a representative set of engine tests in a process where PySide6 cannot be imported."""
    plugin = tmp_path / "noqt_plugin.py"
    plugin.write_text(BLOCK_QT)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "MPLBACKEND": "Agg"}
    files = [
        "tests/test_encoder.py",
        "tests/test_schema.py",
        "tests/test_meta.py",
        "tests/test_export.py",
    ]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "noqt_plugin",
            "-p",
            "no:pytest-qt",
            "-p",
            "no:cacheprovider",
            *files,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    counts = result.stdout.strip().splitlines()[-1]  # "N passed in T s", after the durations
    assert " passed" in counts and "failed" not in counts, counts


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="unshare -n is not permitted here")
@pytest.mark.slow
def test_demo_runs_with_no_network(tmp_path: Path) -> None:
    """`latent-synth demo` under `unshare -n` (no network interface at all) writes its outputs."""
    out = tmp_path / "demo"
    cmd = [
        sys.executable,
        "-m",
        "engine",
        "demo",
        "--out",
        str(out),
        "--quiet",
        "--seed",
        "1",
        "--w-grid",
        "0,0.4,0.8",
        "--repeats",
        "2",
        "--no-report",
    ]
    result = subprocess.run(
        ["unshare", "-n", *cmd],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert (out / "synthetic.csv").stat().st_size > 10_000
    assert (out / "audit.json").exists()
