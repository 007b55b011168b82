"""Which processor a run uses: a probed GPU, or the CPU with a stated reason.

Why a probe: ``torch.cuda.is_available()`` only says that a driver and a device exist. An old
card (Maxwell to Volta) under a build compiled for newer architectures reports available and
fails at the first kernel; a CPU-only PyTorch build on a GPU machine reports "not available"
where the truth is "this build has no CUDA". So the probe runs a tiny kernel and a tiny matrix
product (cuBLAS) once per process and names the cause when they fail.

* ``resolve_device(requested)``: ``"auto"`` -> the GPU when the probe passes, else the CPU with
  ``DeviceChoice.note`` naming the cause (shown in progress, recorded as ``model.device_note``);
  ``"cuda"`` that fails -> :class:`~engine.errors.InputError` (exit 2); ``"cpu"`` never probes.
* ``nn_method_for(device, d)``: the exact nearest-neighbour method for a resolved device.
* ``ieee_float32()``: TF32 off for a block (the float32 pre-filter's error bound assumes IEEE).
* ``seeded_determinism(device, seeded)``: PyTorch's deterministic algorithms for seeded GPU runs.

References: PyTorch notes "CUDA semantics" (TF32) and "Reproducibility";
docs/pitfalls.md "Nearest neighbours".

Example:
    >>> resolve_device("cpu")
    DeviceChoice(device='cpu', requested='cpu', note=None)
    >>> nn_method_for("cpu", 7), nn_method_for("cuda", 7), nn_method_for("cpu", 30)
    ('kdtree', 'cuda', 'brute')
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from engine.errors import InputError

__all__ = [
    "DeviceChoice",
    "resolve_device",
    "probe_cuda",
    "nn_method_for",
    "ieee_float32",
    "seeded_determinism",
    "is_out_of_memory",
]

BRUTE_FORCE_MIN_DIM = 16
"""Fewest columns for which the exact search uses the certified float32 brute force on the CPU
(the k-d tree below). Kept at 16 (same crossover as :mod:`engine.search.neighbours`):
``benchmarks/bench_neighbours.py``, 20,000 queries x 20,000 rows, median wall seconds of 3
(1 at d >= 16), 2 shared cores, k-d tree / brute force::

    d    Gaussian      20 tight clusters   half one-hot (3-4 levels)
    8    0.35 / 0.48   0.13 / 3.63 *       0.05 / 0.54
    10   0.85 / 0.53   0.29 / 3.62 *       0.15 / 0.54
    12   3.10 / 0.79   0.23 / 0.84         0.25 / 0.47
    14   6.86 / 0.73   0.31 / 3.20 *       0.56 / 0.59
    16   3.05 / 0.30   0.33 / 1.01         0.99 / 0.57
    20   4.96 / 0.29   0.45 / 0.94         3.73 / 0.32

(* before near-ties went to the tree.) Brute force wins on Gaussian data from d = 10, but the
tree wins on clustered data at every d and on one-hot tables up to d = 12 (even at 14), so
lowering the threshold would slow the tables a patient file usually gives."""
_CUBLAS_WORKSPACE = ":4096:8"  # needed by cuBLAS for deterministic results; set before first use


@dataclass(frozen=True)
class DeviceChoice:
    """The resolved device (``"cpu"`` or ``"cuda"``) and, after a fallback, why."""

    device: str
    requested: str
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"device": ..., "device_note": ...}`` for the run record."""
        return {"device": self.device, "device_note": self.note}


def _gpu_label() -> str:
    """``"Tesla V100, compute capability 7.0"``, or as much of it as the driver tells."""
    try:
        name = torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001 - a broken driver may fail here too
        name = "unknown GPU"
    try:
        major, minor = torch.cuda.get_device_capability(0)
        return f"{name}, compute capability {major}.{minor}"
    except Exception:  # noqa: BLE001
        return name


def _run_kernel() -> None:
    """A tiny elementwise kernel and a tiny cuBLAS product, checked against the known answer."""
    x = torch.arange(4, dtype=torch.float32, device="cuda")
    total = float((x * 2.0 + 1.0).sum().item())
    product = float((x[None, :] @ x[:, None]).item())
    if total != 16.0 or product != 14.0:
        raise RuntimeError(f"wrong results ({total}, {product} instead of 16, 14)")


@functools.lru_cache(maxsize=1)
def probe_cuda() -> str | None:
    """``None`` when the GPU runs kernels; otherwise the cause, in words. Cached per process.

    Example:
        >>> probe_cuda() is None or isinstance(probe_cuda(), str)
        True
    """
    if torch.version.cuda is None:
        return "this PyTorch build has no CUDA support"
    if not torch.cuda.is_available():
        return "no NVIDIA GPU found"
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", _CUBLAS_WORKSPACE)
    try:
        _run_kernel()
    except Exception as err:  # noqa: BLE001 - any failure means "not usable"
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        return f"the GPU ({_gpu_label()}) is not supported by this PyTorch build: {first}"
    return None


def resolve_device(requested: str) -> DeviceChoice:
    """Resolve ``"auto"``, ``"cpu"`` or ``"cuda"`` (``"cuda:N"``) to a usable device.

    Example:
        >>> resolve_device("gpu")
        Traceback (most recent call last):
        ...
        engine.errors.InputError: unknown device 'gpu'; use 'auto', 'cpu' or 'cuda'
    """
    if requested == "cpu":
        return DeviceChoice("cpu", requested)
    if requested != "auto" and not requested.startswith("cuda"):
        raise InputError(f"unknown device '{requested}'; use 'auto', 'cpu' or 'cuda'")
    cause = probe_cuda()
    if cause is None:
        return DeviceChoice("cuda" if requested == "auto" else requested, requested)
    if requested == "auto":
        return DeviceChoice("cpu", requested, f"running on the CPU: {cause}")
    raise InputError(f"device '{requested}' was requested but {cause}; use device 'cpu' or 'auto'")


def nn_method_for(device: str, d: int) -> str:
    """Nearest-neighbour method for ``d`` columns on a resolved device: on a GPU ``cuda`` at
    every d (the audit's distance and density kernels in float64 blocks on the device,
    :mod:`engine.search.device_kernels`; issue 45: the old float32 search synchronised with
    the host per chunk and lost to the k-d tree below 16 columns); on the CPU the exact k-d
    tree below 16 columns and the CPU brute force above."""
    if device.startswith("cuda"):
        return "cuda"
    return "kdtree" if d < BRUTE_FORCE_MIN_DIM else "brute"


def _tf32_switches() -> list[tuple[Any, str]]:
    return [(torch.backends.cuda.matmul, "allow_tf32"), (torch.backends.cudnn, "allow_tf32")]


@contextlib.contextmanager
def ieee_float32() -> Iterator[None]:
    """Run the block with TF32 off (IEEE float32 products), restoring the previous settings.

    Example:
        >>> with ieee_float32():
        ...     torch.backends.cuda.matmul.allow_tf32
        False
    """
    saved: list[tuple[Any, str, Any]] = []
    # torch refuses the global precision getter once the legacy per-backend switches were set in
    # this process ("mix of the legacy and new APIs"): then only the legacy switches are used.
    try:
        precision: str | None = torch.get_float32_matmul_precision()
    except RuntimeError:
        precision = None
    for owner, attr in _tf32_switches():
        with contextlib.suppress(AttributeError, RuntimeError):
            saved.append((owner, attr, getattr(owner, attr)))
            setattr(owner, attr, False)
    if precision is not None:
        torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        if precision is not None:
            torch.set_float32_matmul_precision(precision)
        for owner, attr, value in reversed(saved):
            with contextlib.suppress(AttributeError, RuntimeError):
                setattr(owner, attr, value)


@contextlib.contextmanager
def seeded_determinism(device: str, seeded: bool) -> Iterator[None]:
    """For a seeded GPU run: PyTorch's deterministic algorithms (warn-only where none exists),
    restored afterwards. Same GPU, driver and PyTorch give the same numbers; the CPU's differ in
    the last bits. A no-op on the CPU, which is deterministic already.

    Example:
        >>> with seeded_determinism("cpu", True):
        ...     torch.are_deterministic_algorithms_enabled()
        False
    """
    if not (seeded and device.startswith("cuda")):
        yield
        return
    before = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", _CUBLAS_WORKSPACE)
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is the GPU running out of memory (typed, or an older RuntimeError)."""
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(err, oom):
        return True
    return isinstance(err, RuntimeError) and "CUDA out of memory" in str(err)
