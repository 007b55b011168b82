"""Three ways to make synthetic rows from a trained flow (docs/method.md section 4).

* Latent Noise Injection (the paper's Algorithm 1, eq. 12):
  ``X~_i = f( sqrt(w) f^-1(X_i) + sqrt(1 - w) Z_i )`` — one synthetic row per real row.
* Flow Sampling (baseline): ``X~ = f(Z)`` — any number of rows.
* Direct Noise Injection (baseline): ``X~_i = sqrt(w) X_i + sqrt(1 - w) diag(s) Z_i``;
  biases correlations towards 0 by the factor w (kept for comparison only).

The latent map is anything with ``to_latent`` / ``from_latent`` on numpy arrays (a trained
MAF, or the exact Gaussian map in tests). Callers shuffle the released rows: the one-to-one
correspondence of LNI is its strength and its main leak (see :func:`shuffled`).

References: main paper (seeds/latent-noise-injection-paper.md) eq. 12 and section 3.1.1.

Example:
    >>> import numpy as np
    >>> class Identity:
    ...     def to_latent(self, x): return x
    ...     def from_latent(self, z): return z
    >>> x = np.zeros((3, 2))
    >>> bool(np.allclose(latent_noise_injection(Identity(), x, 1.0, np.random.default_rng(0)), x))
    True
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from engine.errors import InputError


class LatentMap(Protocol):
    """A bijection between model space and a standard Gaussian latent space."""

    def to_latent(self, X: np.ndarray) -> np.ndarray: ...

    def from_latent(self, Z: np.ndarray) -> np.ndarray: ...


GENERATE_CHUNK_ROWS = 65_536  # rows per block of latent_noise_injection (4 x 16,384)


def _check_weight(w: float | np.ndarray) -> None:
    arr = np.asarray(w, dtype=float)
    if not np.all((arr >= 0.0) & (arr <= 1.0)):
        raise InputError(
            f"perturbation weight w={w} is outside 0..1; choose a value between 0 and 1"
        )


def inject_latent_noise(Z: np.ndarray, w: float | np.ndarray, noise: np.ndarray) -> np.ndarray:
    """The latent step of eq. 12, ``sqrt(w) Z + sqrt(1 - w) noise``: the one implementation.

    The audit, the release and outlier protection all call this function, so the map that is
    audited is the map that is released. ``w`` is one number or one per row (a 1-D array with
    one entry per row of ``Z``); ``noise`` has ``Z``'s shape. With ``Z`` and ``noise`` standard
    Gaussian the result is standard Gaussian for every w (variance ``w + (1 - w) = 1``).

    References:
        main paper (seeds/latent-noise-injection-paper.md) eq. 12, Algorithm 1.

    Example:
        >>> inject_latent_noise(np.array([[2.0, -2.0]]), 0.25, np.array([[1.0, 0.0]])).round(4)
        array([[ 1.866, -1.   ]])
        >>> inject_latent_noise(np.ones((2, 1)), np.array([1.0, 0.0]), np.zeros((2, 1))).ravel()
        array([1., 0.])
    """
    _check_weight(w)
    Z = np.asarray(Z, dtype=float)
    noise = np.asarray(noise, dtype=float)
    if noise.shape != Z.shape:
        raise ValueError(f"noise shape {noise.shape} differs from latent shape {Z.shape}")
    w_col = np.asarray(w, dtype=float)
    if w_col.ndim == 1:
        w_col = w_col[:, None]
    return np.sqrt(w_col) * Z + np.sqrt(1.0 - w_col) * noise


def perturb_latent(Z: np.ndarray, w: float | np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """:func:`inject_latent_noise` with fresh noise ``N(0, I)`` drawn from ``rng``."""
    return inject_latent_noise(Z, w, rng.standard_normal(np.shape(Z)))


def latent_noise_injection(
    flow: LatentMap, X: np.ndarray, w: float | np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Perturb each real row in latent space and map back (eq. 12). Rows stay in input order.

    Runs in blocks of ``GENERATE_CHUNK_ROWS`` rows (a multiple of the flow's 16,384-row decode
    chunk), so a million rows need no million-row latent, noise and perturbed copies; the
    noise stream and every output bit are those of one pass (tests/test_speed_invariants.py).
    """
    _check_weight(w)
    # numpy: isscalar's TypeGuard drops float
    if np.isscalar(w) and float(w) == 1.0:  # type: ignore[arg-type]
        return np.array(X, dtype=float, copy=True)
    X = np.asarray(X, dtype=float)
    if len(X) <= GENERATE_CHUNK_ROWS:
        return flow.from_latent(perturb_latent(flow.to_latent(X), w, rng))
    per_row = np.ndim(w) == 1
    out = np.empty_like(X)
    for start in range(0, len(X), GENERATE_CHUNK_ROWS):
        rows = slice(start, start + GENERATE_CHUNK_ROWS)
        w_rows = np.asarray(w)[rows] if per_row else w
        out[rows] = flow.from_latent(perturb_latent(flow.to_latent(X[rows]), w_rows, rng))
    if hasattr(flow, "last_nonfinite"):  # a TrainedFlow counts over the whole output
        flow.last_nonfinite = int((~np.isfinite(out).all(axis=1)).sum())
    return out


def flow_sampling(flow: LatentMap, n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` fresh rows ``f(Z)`` with ``Z ~ N(0, I_d)``."""
    return flow.from_latent(rng.standard_normal((n, d)))


def direct_noise_injection(X: np.ndarray, w: float, rng: np.random.Generator) -> np.ndarray:
    """Baseline: add Gaussian noise in data space, scaled by each column's SD."""
    _check_weight(w)
    sd = X.std(axis=0, ddof=1)
    return np.sqrt(w) * X + np.sqrt(1.0 - w) * rng.standard_normal(X.shape) * sd


def shuffled(n: int, rng: np.random.Generator) -> np.ndarray:
    """A random order for released rows, so no row keeps its real partner's position."""
    return rng.permutation(n)
