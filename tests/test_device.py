"""Device choice (issue 17, items 10-13): the GPU is used only after a probe kernel ran on it,
"cpu" never touches CUDA, "auto" falls back with the cause in words, an explicit GPU that cannot
run stops with exit 2, and a GPU out of memory finishes on the CPU with the same numbers.

The CPU tests mock the CUDA probe: ``torch.cuda.is_available`` says True and every CUDA
initialisation (the first step of any tensor on the GPU) is recorded and raises. The GPU tests
at the end run only where a GPU passes the probe."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

import engine.device as device_mod
from engine.cli import main
from engine.device import ieee_float32, nn_method_for, resolve_device, seeded_determinism
from engine.errors import InputError
from engine.flows.train import FlowConfig, train_flow
from engine.pipeline import RunConfig, run_pipeline
from engine.search.neighbours import nearest_distances

GPU_NAME, GPU_CAPABILITY = "Tesla V100-SXM2-16GB", (7, 0)
NO_KERNEL = "CUDA error: no kernel image is available for execution on the device"
FAST = ["--w-grid", "0,0.5", "--repeats", "2", "--budget", "fast", "--quiet", "--no-report"]
FAST += ["--allow-risky"]


class CudaTouched(RuntimeError):
    """Raised by the mocked CUDA initialisation."""


@pytest.fixture(autouse=True)
def fresh_probe() -> Any:
    device_mod.probe_cuda.cache_clear()
    yield
    device_mod.probe_cuda.cache_clear()


def _fake_gpu(monkeypatch: pytest.MonkeyPatch, failure: BaseException | None = None) -> list[str]:
    """Pretend a CUDA build on a machine with a V100; every CUDA use is recorded in the list
    returned and raises ``failure`` (default: CudaTouched)."""
    touched: list[str] = []

    def touch(what: str) -> Any:
        def raiser(*args: Any, **kwargs: Any) -> Any:
            touched.append(what)
            raise failure if failure is not None else CudaTouched(what)

        return raiser

    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: GPU_NAME)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: GPU_CAPABILITY)
    monkeypatch.setattr(torch.cuda, "_lazy_init", touch("cuda init"))
    monkeypatch.setattr(torch.cuda, "synchronize", touch("synchronize"))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch.Tensor, "cuda", touch("Tensor.cuda"))
    return touched


def _cohort(path: Path, n: int = 300) -> Path:
    rng = np.random.default_rng(4)
    age = rng.normal(55, 8, n).round()
    frame = pd.DataFrame(
        {
            "age": age.astype(int),
            "sbp": (120 + 0.5 * (age - 55) + rng.normal(0, 15, n)).round().astype(int),
            "chol": rng.normal(210, 40, n).round(1),
            "smoker": rng.choice(["yes", "no"], n),
        }
    )
    frame.to_csv(path, index=False)
    return path


# ----------------------------------------------------------------- the probe, three causes
def test_probe_names_a_cpu_only_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    choice = resolve_device("auto")
    assert (choice.device, choice.note) == (
        "cpu",
        "running on the CPU: this PyTorch build has no CUDA support",
    )


def test_probe_names_a_missing_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto").note == "running on the CPU: no NVIDIA GPU found"


def test_probe_runs_a_kernel_and_names_an_unsupported_card(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    touched = _fake_gpu(monkeypatch, RuntimeError(NO_KERNEL + "\nCUDA kernel errors might be"))
    calls: list[int] = []
    available = torch.cuda.is_available
    monkeypatch.setattr(torch.cuda, "is_available", lambda: calls.append(1) or available())
    first, second = resolve_device("auto"), resolve_device("auto")
    assert first == second and first.device == "cpu"
    assert first.note == (
        "running on the CPU: the GPU (Tesla V100-SXM2-16GB, compute capability 7.0) is not "
        f"supported by this PyTorch build: {NO_KERNEL}"
    )
    assert len(touched) == 1 and len(calls) == 1  # probed once, then cached


def test_explicit_cpu_never_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    touched = _fake_gpu(monkeypatch)
    assert resolve_device("cpu").device == "cpu" and touched == []


def test_explicit_cuda_that_cannot_run_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_gpu(monkeypatch, RuntimeError(NO_KERNEL))
    with pytest.raises(InputError, match="compute capability 7.0.*no kernel image"):
        resolve_device("cuda")


# ----------------------------------------------------------------- method choice
def test_nn_method_follows_the_resolved_device_and_dimension() -> None:
    assert [nn_method_for(dev, d) for dev in ("cpu", "cuda") for d in (7, 15, 16, 30)] == [
        "kdtree",
        "kdtree",
        "brute",
        "brute",
        "cuda",
        "cuda",
        "cuda",
        "cuda",
    ]


def test_auto_neighbour_search_stays_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    touched = _fake_gpu(monkeypatch)
    rng = np.random.default_rng(0)
    for d in (3, 30):
        q, r = rng.normal(size=(200, d)), rng.normal(size=(500, d))
        exact = np.sqrt(((q[:, None, :] - r[None, :, :]) ** 2).sum(-1)).min(1)
        assert np.abs(nearest_distances(q, r) - exact).max() < 1e-12
    assert touched == []


# ----------------------------------------------------------------- the pipeline and the CLI
def test_device_cpu_run_never_touches_cuda(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    touched = _fake_gpu(monkeypatch)
    src = _cohort(tmp_path / "cohort.csv")
    out = tmp_path / "out"
    code = main(["run", str(src), "--out", str(out), "--device", "cpu", "--seed", "5", *FAST])
    assert code == 0 and touched == []
    record = json.loads((out / "audit.json").read_text())
    assert record["model"]["device"] == "cpu" and record["model"]["device_note"] is None
    assert len(record["audit"]["curve"]) >= 2


def test_auto_falls_back_with_the_cause_shown_and_recorded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    touched = _fake_gpu(monkeypatch, RuntimeError(NO_KERNEL))
    src = _cohort(tmp_path / "cohort.csv")
    seen: list[str] = []
    config = RunConfig(
        input=src,
        out=tmp_path / "out",
        w_grid=(0.0, 0.5),
        repeats=2,
        seed=5,
        report=False,
        allow_risky=True,
    )
    run_pipeline(config, lambda f, t: seen.append(t))
    record = json.loads((tmp_path / "out" / "audit.json").read_text())
    cause = f"compute capability 7.0) is not supported by this PyTorch build: {NO_KERNEL}"
    assert record["model"]["device"] == "cpu" and cause in record["model"]["device_note"]
    assert any(cause in text for text in seen)
    assert len(touched) == 1  # the probe kernel only, once for the whole run


def test_explicit_cuda_without_cuda_build_exits_2_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(torch.version, "cuda", None)
    src = _cohort(tmp_path / "cohort.csv")
    out = tmp_path / "out"
    code = main(["run", str(src), "--out", str(out), "--device", "cuda", *FAST])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "this PyTorch build has no CUDA support" in err and "Traceback" not in err
    assert not (out / "synthetic.csv").exists()


# ----------------------------------------------------------------- out of memory -> CPU
def test_training_out_of_memory_retries_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    X = np.random.default_rng(2).normal(size=(300, 3))
    config = FlowConfig(flows=2, hidden=8, max_epochs=5)
    on_cpu = train_flow(X, config, device="cpu", seed=3)
    oom = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    _fake_gpu(monkeypatch, oom)
    monkeypatch.setattr(device_mod, "_run_kernel", lambda: None)  # the probe passes
    seen: list[str] = []
    flow = train_flow(X, config, device="cuda", seed=3, progress=lambda f, t: seen.append(t))
    assert flow.device == "cpu" and flow.val_nll == on_cpu.val_nll
    assert flow.to_dict()["device_note"] == (
        "the GPU ran out of memory, so the flow was trained on the CPU"
    )
    assert any("ran out of memory" in text for text in seen)


def test_cpu_brute_force_is_exact_on_tight_clusters_with_duplicates() -> None:
    """Tight clusters make most float32 winners uncertain (near-ties): those rows go to the
    k-d tree, and every distance must still equal the float64 answer, duplicates giving 0."""
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(20, 16)) * 3.0
    r = centres[rng.integers(0, 20, 3000)] + 1e-3 * rng.normal(size=(3000, 16))
    q = np.vstack([r[:200], centres[rng.integers(0, 20, 800)] + 1e-3 * rng.normal(size=(800, 16))])
    got = nearest_distances(q, r, method="brute")
    exact = np.sqrt(((q[:, None, :] - r[None, :, :]) ** 2).sum(-1)).min(axis=1)
    assert np.array_equal(got[:200], np.zeros(200))
    assert np.abs(got - exact).max() < 1e-12
    assert got[200:].min() > 0


def test_neighbour_search_out_of_memory_finishes_on_the_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fake_gpu(monkeypatch, torch.cuda.OutOfMemoryError("CUDA out of memory"))
    rng = np.random.default_rng(1)
    q, r = rng.normal(size=(300, 20)), rng.normal(size=(400, 20))
    with pytest.warns(RuntimeWarning, match="out of memory"):
        got = nearest_distances(q, r, method="cuda")
    assert np.abs(got - nearest_distances(q, r, method="kdtree")).max() < 1e-12


# ----------------------------------------------------------------- TF32 and determinism
def test_ieee_float32_turns_tf32_off_and_restores_it() -> None:
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        with ieee_float32():
            inside = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
            precision = torch.get_float32_matmul_precision()
        assert inside == (False, False) and precision == "highest"
        assert torch.backends.cuda.matmul.allow_tf32 is True
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before[0]
    assert torch.backends.cudnn.allow_tf32 == before[1]


def test_seeded_gpu_runs_use_deterministic_algorithms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    with seeded_determinism("cuda", seeded=True):
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert not torch.are_deterministic_algorithms_enabled()
    with seeded_determinism("cuda", seeded=False):
        assert not torch.are_deterministic_algorithms_enabled()


# ----------------------------------------------------------------- on a real GPU only
def _gpu_usable() -> bool:
    device_mod.probe_cuda.cache_clear()
    return device_mod.probe_cuda() is None


needs_gpu = pytest.mark.skipif(
    not torch.cuda.is_available() or not _gpu_usable(), reason="needs a usable CUDA GPU"
)


@needs_gpu
def test_gpu_train_flow_matches_the_cpu_and_is_reproducible() -> None:
    X = np.random.default_rng(0).multivariate_normal(np.zeros(4), 0.5 + 0.5 * np.eye(4), 4000)
    config = FlowConfig(flows=3, hidden=32, max_epochs=40)
    gpu_a = train_flow(X, config, device="cuda", seed=11)
    gpu_b = train_flow(X, config, device="cuda", seed=11)
    cpu = train_flow(X, config, device="cpu", seed=11)
    assert gpu_a.device == "cuda" and gpu_a.device_note is None
    assert gpu_a.val_nll == gpu_b.val_nll  # seeded GPU runs repeat exactly
    assert abs(gpu_a.val_nll - cpu.val_nll) < 0.05
    Z = gpu_a.to_latent(X)
    assert np.abs(gpu_a.from_latent(Z) - X).max() < 1e-3


def _tables() -> list[tuple[str, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    n = 200_000
    # duplicate-heavy: 3^7 = 2,187 cells hold 200k reference rows; queries on cell corners and
    # half-way points, so many neighbours tie exactly and many distances are exactly 0
    cells = rng.integers(0, 3, size=(n, 7)).astype(np.float64)
    corners = rng.integers(0, 3, size=(n, 7)) + 0.5 * rng.integers(0, 2, size=(n, 7))
    return [
        ("gaussian d=7", rng.normal(size=(n, 7)), rng.normal(size=(n, 7))),
        ("gaussian d=30", rng.normal(size=(n, 30)), rng.normal(size=(n, 30))),
        ("discrete d=7", corners.astype(np.float64), cells),
    ]


@needs_gpu
@pytest.mark.parametrize("case", range(3), ids=["gaussian-d7", "gaussian-d30", "discrete-d7"])
def test_gpu_neighbour_search_equals_the_kd_tree(case: int) -> None:
    _, queries, reference = _tables()[case]
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True  # a user's global TF32 must not break exactness
    try:
        got = nearest_distances(queries, reference, method="cuda")  # all 200k queries
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    assert torch.backends.cuda.matmul.allow_tf32 == previous
    # the k-d tree degenerates at d = 30 (35 s for 20k x 20k on 2 cores): check 2,000 queries
    m = len(queries) if queries.shape[1] < 16 else 2_000
    expected = nearest_distances(queries[:m], reference, method="kdtree")
    assert np.abs(got[:m] - expected).max() < 1e-9
    assert (got[:m] == 0).sum() == (expected == 0).sum()


@needs_gpu
def test_gpu_dp_sgd_gives_the_cpu_guarantee_and_a_comparable_model() -> None:
    from engine.privacy.dp.train import DPConfig, train_dp_flow

    X = np.random.default_rng(3).uniform(-1, 1, size=(2000, 3))
    config = DPConfig(flows=2, hidden=16, steps=200)
    gpu = train_dp_flow(X, epsilon=4.0, config=config, device="cuda", seed=1)
    cpu = train_dp_flow(X, epsilon=4.0, config=config, device="cpu", seed=1)
    assert gpu.device == "cuda" and gpu.guarantee is not None and cpu.guarantee is not None
    assert gpu.guarantee.epsilon == cpu.guarantee.epsilon <= 4.0
    with torch.no_grad():
        t = torch.as_tensor(X, dtype=torch.float32)
        ll_gpu = float(gpu.model.cpu().log_prob(t).mean())
        ll_cpu = float(cpu.model.log_prob(t).mean())
    assert np.isfinite(ll_gpu) and abs(ll_gpu - ll_cpu) < 0.1
