"""Exact latent maps the audit tests train instead of a flow: fast, and with known answers."""

from __future__ import annotations

import numpy as np


class FittedGaussian:
    """The exact Gaussian map of the rows it was fitted on (what the flow's whitened start is):
    ``X = mean + L Z`` with ``L`` the Cholesky factor of the rows' covariance."""

    def __init__(self, rows: np.ndarray) -> None:
        self.mean = rows.mean(axis=0)
        self.L = np.linalg.cholesky(np.cov(rows, rowvar=False))

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return np.linalg.solve(self.L, (X - self.mean).T).T

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return Z @ self.L.T + self.mean
