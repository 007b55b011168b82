"""The final model trained beside the audit (issue 31): it is the model a training after the
audit gives (same rows, seed and recipe, weight for weight), two trainings on two threads give
the same weights as one after the other, and a cancel or a refusal leaves no thread running."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from engine.flows.select import select_flow
from engine.flows.train import FlowConfig, train_flow
from engine.pipeline import RunConfig, prepare, synthesize, synthesize_step
from engine.pipeline.config import make_rng
from engine.pipeline.final_model import FinalModel
from engine.progress import Cancelled, CancelToken


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _table(tmp_path: Path, n: int = 300) -> Path:
    rng = np.random.default_rng(0)
    age = rng.normal(60, 9, n).round(0)
    frame = pd.DataFrame(
        {
            "age": age,
            "sbp": (120 + 0.5 * (age - 60) + rng.normal(0, 15, n)).round(0),
            "smoker": rng.integers(0, 2, n),
            "time": rng.exponential(5, n).round(2),
            "event": rng.integers(0, 2, n),
        }
    )
    src = tmp_path / "t.csv"
    frame.to_csv(src, index=False)
    return src


def _final_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "final-model" and t.is_alive()]


def test_two_trainings_on_two_threads_equal_one_after_the_other() -> None:
    """The initial weights come from torch's process-wide generator (held under a lock); the
    rest of a training uses its own generator: the same weights, whatever runs beside."""
    rng = np.random.default_rng(1)
    X1, X2 = rng.standard_normal((400, 3)), rng.standard_normal((500, 3))
    cfg = FlowConfig(flows=2, hidden=16, max_epochs=8)
    alone = [train_flow(X1, cfg, seed=5, device="cpu"), train_flow(X2, cfg, seed=6, device="cpu")]
    out: dict[int, object] = {}

    def run(i: int, X: np.ndarray, seed: int) -> None:
        out[i] = train_flow(X, cfg, seed=seed, device="cpu")

    threads = [threading.Thread(target=run, args=a) for a in ((0, X1, 5), (1, X2, 6))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        assert _same_weights(alone[i].model, out[i].model)  # type: ignore[attr-defined]
        assert alone[i].val_nll == out[i].val_nll  # type: ignore[attr-defined]


def test_the_released_model_is_the_one_trained_after_the_audit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """synthesize trains the final model (all 300 rows) on its own thread from the moment the
    audit chose its architecture; a flow trained afterwards on the same rows (drawn from the
    generator spawned off the run's) with the same seed and architecture has the same weights."""
    import engine.flows.select as select_module

    trained_on: list[tuple[str, int]] = []

    def spy(X, **kwargs):  # type: ignore[no-untyped-def]
        trained_on.append((threading.current_thread().name, len(X)))
        return select_flow(X, **kwargs)

    import engine.privacy.audit as audit_module
    from engine.privacy.release import real_neighbours

    given: list[np.ndarray | None] = []

    def metrics_spy(real, synth, **kwargs):  # type: ignore[no-untyped-def]
        given.append(kwargs.get("near"))
        return release_metrics(real, synth, **kwargs)

    import engine.pipeline.compare_step as compare_step
    import engine.pipeline.release_step as release_step

    fitted_on: list[str] = []

    def fit_spy(prep):  # type: ignore[no-untyped-def]
        fitted_on.append(threading.current_thread().name)
        return real_fit_beside(prep)

    real_fit_beside = compare_step.real_fit_beside
    monkeypatch.setattr(compare_step, "real_fit_beside", fit_spy)
    monkeypatch.setattr(release_step, "real_fit_beside", fit_spy)
    release_metrics = audit_module.release_metrics
    monkeypatch.setattr(select_module, "select_flow", spy)
    monkeypatch.setattr(audit_module, "release_metrics", metrics_spy)
    monkeypatch.setattr(synthesize_step, "BESIDE_FROM_ROWS", 0)  # (300 rows: after, by default)
    config = RunConfig(
        input=_table(tmp_path),
        time="time",
        event="event",
        seed=3,
        w_grid=(0.0, 0.3, 0.6),
        allow_risky=True,
    )
    prep = prepare(config)
    result = synthesize(prep)
    # the real rows' neighbours, found on the model's thread, are those of every real row
    near = given[0]
    assert near is not None
    assert np.array_equal(near, real_neighbours(prep.encoder.distance_space(prep.real)))
    # the real table's model was begun there too, not again by the release
    assert fitted_on == ["final-model"] and result.fidelity.result is not None
    assert ("final-model", 300) in trained_on  # every row, on the thread beside the audit
    assert all(name != "final-model" for name, n in trained_on if n < 300)  # splits: main
    assert result.flow is not None and result.audit.architecture is not None
    X = prep.encoder.transform(prep.real, make_rng(config.seed).spawn(1)[0])
    after = select_flow(
        X,
        budget=config.budget,
        device="cpu",
        seed=config.seed,
        architecture=result.audit.architecture,
    )
    assert _same_weights(after.model, result.flow.model)
    assert result.timings["train_seconds"] > 0
    assert not _final_threads()


def test_a_small_table_trains_its_final_model_after_the_audit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to BESIDE_FROM_ROWS rows the final model (all 300 rows) trains on the run's own
    thread once the audit is done: its small network's steps would only contend with the
    audit's for the interpreter."""
    import engine.flows.select as select_module

    trained_on: list[tuple[str, int]] = []

    def spy(X, **kwargs):  # type: ignore[no-untyped-def]
        trained_on.append((threading.current_thread().name, len(X)))
        return select_flow(X, **kwargs)

    monkeypatch.setattr(select_module, "select_flow", spy)
    config = RunConfig(
        input=_table(tmp_path),
        time="time",
        event="event",
        seed=3,
        w_grid=(0.0, 0.3, 0.6),
        allow_risky=True,
    )
    result = synthesize(prepare(config))
    assert 300 <= synthesize_step.BESIDE_FROM_ROWS
    assert trained_on[-1] == (threading.main_thread().name, 300)
    assert all(name != "final-model" for name, _ in trained_on)
    assert result.flow is not None and result.timings["train_seconds"] > 0


def test_a_cancel_during_the_audit_stops_the_final_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user cancels while the audit scores the grid (the final model already training
    beside it): synthesize raises Cancelled and no training thread is left running."""
    monkeypatch.setattr(synthesize_step, "BESIDE_FROM_ROWS", 0)
    config = RunConfig(
        input=_table(tmp_path),
        time="time",
        event="event",
        seed=3,
        w_grid=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5),
        allow_risky=True,
    )
    prep = prepare(config)
    token = CancelToken()
    seen: list[bool] = []

    def progress(fraction: float, text: str) -> None:
        if "audit: w = 0.3" in text:
            seen.append(bool(_final_threads()))
            token.cancel()

    with pytest.raises(Cancelled):
        synthesize(prep, progress, token)
    assert seen  # the cancel came during the grid
    assert not _final_threads()


def test_a_stopped_model_raises_nothing_and_a_failed_one_raises_on_wait() -> None:
    """stop() ends a model the run no longer needs; a training that fails re-raises its
    error where the release waits for it (not lost on the thread)."""
    gate = threading.Event()

    def slow(progress, cancel):  # type: ignore[no-untyped-def]
        while not gate.wait(0.01):
            cancel.raise_if_cancelled()
        return "never"

    model = FinalModel(slow)
    model.start()
    model.stop()
    assert model.thread is not None and not model.thread.is_alive()
    assert isinstance(model.error, Cancelled)

    def broken(progress, cancel):  # type: ignore[no-untyped-def]
        progress(0.5, "half way")
        raise ValueError("the rows are bad")

    failed = FinalModel(broken)
    failed.start()
    seen: list[str] = []
    with pytest.raises(ValueError, match="the rows are bad"):
        failed.wait(lambda f, t: seen.append(t))
    assert seen == ["half way"]  # its progress was passed on before the error


def test_the_real_model_fitted_beside_the_release_gives_the_same_comparison(
    tmp_path: Path,
) -> None:
    """The real table's Cox fit runs on a thread while the release draws its rows; the
    comparison is the one made in line, estimate for estimate; a real fit that fails is
    reported where it was before (the model error), not lost on the thread."""
    from dataclasses import replace

    from engine.pipeline.compare_step import fidelity_of, real_fit_beside

    config = RunConfig(input=_table(tmp_path), time="time", event="event", seed=3)
    prep = prepare(config)
    synth = prep.real.sample(frac=1.0, random_state=1).reset_index(drop=True)
    synth["sbp"] = synth["sbp"] + 3.0
    inline = fidelity_of(prep, (synth,)).result.comparison
    beside = fidelity_of(prep, (synth,), real_fit_beside(prep)).result.comparison
    assert inline is not None and beside is not None
    assert [(r.name, r.real_estimate, r.real_se, r.synth_estimate) for r in inline.rows] == [
        (r.name, r.real_estimate, r.real_se, r.synth_estimate) for r in beside.rows
    ]
    # a covariate the real rows hold one value of: the real fit cannot be made
    flat = replace(prep, real=prep.real.assign(sbp=120.0))
    inline_error = fidelity_of(flat, (synth,)).result.model_error
    beside_error = fidelity_of(flat, (synth,), real_fit_beside(flat)).result.model_error
    assert inline_error == beside_error
