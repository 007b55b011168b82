"""Issue 31: the release's metrics and disclosure measures run on threads beside the fidelity
models, and every number is what the steps give one after another."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.pipeline import RunConfig, prepare, synthesize
from engine.pipeline.release_beside import Beside
from engine.pipeline.release_step import release
from engine.privacy.release import metric_rows, release_metrics
from tests.test_disclosure_risk import _fine_cohort


def test_rows_drawn_beforehand_give_the_same_metrics_and_the_same_draws() -> None:
    """Above 20,000 records the ranks are taken on a sample: drawn before the metrics run (on a
    thread), it is the sample they drew themselves, and the generator is left where they left it."""
    rng = np.random.default_rng(0)
    real = rng.standard_normal((21_000, 3))
    synth = real + rng.normal(scale=0.3, size=real.shape)
    inside, before = np.random.default_rng(5), np.random.default_rng(5)
    drawn_inside = release_metrics(real, synth, rng=inside)
    rows = metric_rows(len(real), before)
    assert rows is not None and len(rows) == 20_000 and np.all(np.diff(rows) > 0)
    given = release_metrics(real, synth, rng=np.random.default_rng(99), rows=rows)
    assert asdict(given) == asdict(drawn_inside)
    assert not given.exact and given.rows_evaluated == 20_000
    assert 0.0 < given.closer_probability < 0.05
    assert inside.integers(2**62) == before.integers(2**62)  # the same one draw taken
    assert metric_rows(20_000, before) is None  # exact: all records, nothing drawn


def _spy(monkeypatch: pytest.MonkeyPatch, seen: dict[str, list[str]]) -> None:
    """Record the thread each step runs on."""
    import engine.pipeline.disclosure_step as disclosure_step
    import engine.privacy.audit as audit

    for module, name in ((disclosure_step, "measure_release"), (audit, "release_metrics")):
        original = getattr(module, name)

        def spy(*args, _original=original, _name=name, **kwargs):  # type: ignore[no-untyped-def]
            seen.setdefault(_name, []).append(threading.current_thread().name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)


def test_side_by_side_release_equals_one_after_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same audit and model released twice from the same generator state: the steps on
    threads and the steps in turn give the same file, metrics, disclosure measures and
    fidelity, bit for bit; and the threads were used."""
    path = tmp_path / "cohort.csv"
    _fine_cohort(600, 0).to_csv(path, index=False)
    prep = prepare(RunConfig(input=path, w_grid=(0.0, 0.25, 0.5), repeats=2, seed=3))
    first = synthesize(prep)
    assert first.release is not None and first.release.disclosure is not None

    def again(beside_up_to: int) -> tuple[object, dict[str, list[str]]]:
        seen: dict[str, list[str]] = {}
        with monkeypatch.context() as patch:
            patch.setattr("engine.pipeline.release_beside.BESIDE_UP_TO", beside_up_to)
            _spy(patch, seen)
            out = release(prep, first.audit, rng=np.random.default_rng(7), flow=first.flow)
        return out, seen

    threaded, on_threads = again(10**9)
    in_turn, on_main = again(0)
    assert on_main == {"measure_release": ["MainThread"], "release_metrics": ["MainThread"]}
    assert all(name.startswith("release") for names in on_threads.values() for name in names)
    assert set(on_threads) == {"measure_release", "release_metrics"}
    pd.testing.assert_frame_equal(threaded.synthetic, in_turn.synthetic)
    for block in ("release", "disclosure_risk", "fidelity"):
        assert threaded.audit_json[block] == in_turn.audit_json[block], block
    assert threaded.audit_json["disclosure_risk"]["keys"] == ["age", "sex", "ethnicity"]


def test_a_cancel_does_not_wait_for_a_step_still_running() -> None:
    """An error (the user's cancel) inside the block returns at once; a normal exit waits."""
    began = time.perf_counter()
    with pytest.raises(RuntimeError), Beside(rows=100) as beside:
        beside.run(time.sleep, 1.5)
        raise RuntimeError("cancelled")
    assert time.perf_counter() - began < 1.0
    began = time.perf_counter()
    with Beside(rows=100) as beside:
        beside.run(time.sleep, 0.3)
    assert time.perf_counter() - began >= 0.3
