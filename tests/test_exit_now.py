"""The command ends without the interpreter's teardown once its work is done (issue 31): the
exit status, the last words on standard output and the exit handlers are kept; a thread still
working is waited for."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SCRIPT = """
import atexit, sys, threading, time
from pathlib import Path
from engine.pipeline.console import exit_now

here = Path(sys.argv[1])

class Sentinel:
    def __del__(self):  # runs when the interpreter frees its modules' objects at teardown
        (here / "teardown").write_text("freed")

kept = Sentinel()
atexit.register(lambda: (here / "atexit").write_text("ran"))
if sys.argv[2] == "thread":
    def late():
        time.sleep(0.5)
        (here / "thread").write_text("finished")
    threading.Thread(target=late).start()
sys.stdout.write("last words, no newline")
if sys.argv[2] == "plain":
    sys.exit(3)
exit_now(3)
"""


def _run(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    folder = tmp_path / how
    folder.mkdir()
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script), str(folder), how], capture_output=True, text=True, timeout=60
    )
    return proc, {p.name for p in folder.iterdir()}


def test_exit_now_keeps_status_output_and_exit_handlers_but_skips_the_teardown(tmp_path):
    plain, plain_files = _run(tmp_path, "plain")
    fast, fast_files = _run(tmp_path, "fast")
    # the control: a normal exit frees the module's objects (the sentinel's file is written)
    assert plain.returncode == 3 and plain_files == {"atexit", "teardown"}
    assert fast.returncode == 3 and fast.stdout == "last words, no newline"
    assert fast_files == {"atexit"}, "the exit handlers ran, the teardown did not"
    assert fast.stderr == ""


def test_exit_now_waits_for_a_thread_still_working(tmp_path):
    proc, files = _run(tmp_path, "thread")
    assert proc.returncode == 3 and proc.stdout == "last words, no newline"
    assert files == {"atexit", "teardown", "thread"}, "the normal exit, which waits for it"


@pytest.mark.slow
def test_the_command_ended_this_way_writes_whole_files_and_its_exit_codes(tmp_path):
    """``python -m engine`` ends as the installed command does: a finished run leaves every
    file whole (the CSV reads back row for row) and exits 0; a bad file exits 2 with one line."""
    rng = np.random.default_rng(0)
    age = rng.normal(60, 9, 240).round(0)
    table = pd.DataFrame(
        {
            "age": age,
            "sex": rng.choice(["F", "M"], 240),
            "sbp": (120 + 0.5 * (age - 60) + rng.normal(0, 15, 240)).round(0),
            "time": rng.exponential(5, 240).round(2),
            "event": rng.integers(0, 2, 240),
        }
    )
    src = tmp_path / "cohort.csv"
    table.to_csv(src, index=False)
    out = tmp_path / "out"
    args = ["run", str(src), "--time", "time", "--event", "event", "--out", str(out)]
    args += ["--quiet", "--seed", "1", "--allow-risky", "--no-report"]
    done = subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "240 synthetic rows" in done.stdout and "Wrote the synthetic copy" in done.stdout
    synthetic = pd.read_csv(out / "synthetic.csv")
    assert synthetic.shape == (240, 5) and list(synthetic.columns) == list(table.columns)
    assert (out / "audit.json").read_text(encoding="utf-8").rstrip().endswith("}")
    bad = tmp_path / "bad.csv"
    bad.write_text("age,time\n", encoding="utf-8")
    wrong = subprocess.run(
        [sys.executable, "-m", "engine", "run", str(bad), "--quiet", "--out", str(tmp_path / "o2")],
        capture_output=True,
        text=True,
    )
    assert wrong.returncode == 2 and len(wrong.stderr.strip().splitlines()) == 1
    assert "bad.csv" in wrong.stderr and "Traceback" not in wrong.stderr
    assert not (tmp_path / "o2").exists()


class _Ended(Exception):
    pass


def test_the_installed_command_collects_less_and_ends_through_exit_now(tmp_path, monkeypatch):
    """``latent-synth run ...`` (the console script calls ``desktop.launch.main()`` with no
    arguments): the youngest generation is collected every 10,000 new objects, not 700, and the
    command ends through ``exit_now`` with the run's exit code; called with arguments (the
    tests, the wizard's process) neither happens."""
    import gc

    import engine.pipeline.console as console
    from desktop import launch

    ended: list[tuple[int, int]] = []

    def fake_exit(code: int) -> None:
        ended.append((code, gc.get_threshold()[0]))
        raise _Ended

    bad = tmp_path / "bad.csv"
    bad.write_text("age,time\n", encoding="utf-8")
    before = gc.get_threshold()
    monkeypatch.setattr(console, "exit_now", fake_exit)
    monkeypatch.setattr(
        sys, "argv", ["latent-synth", "run", str(bad), "--quiet", "--out", str(tmp_path / "o")]
    )
    try:
        with pytest.raises(_Ended):
            launch.main()
        assert (
            ended == [(2, console.COMMAND_GC_THRESHOLD)] and console.COMMAND_GC_THRESHOLD == 10_000
        )
        gc.set_threshold(*before)
        assert launch.main(["run", str(bad), "--quiet", "--out", str(tmp_path / "o")]) == 2
        assert len(ended) == 1 and gc.get_threshold() == before
    finally:
        gc.set_threshold(*before)
