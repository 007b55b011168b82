"""Gaussian kernel density for the density-ratio membership attack (DOMIAS).

Why by hand: the attack needs log-densities of one data set evaluated at another, thousands of
times per audit; ``scipy.stats.gaussian_kde`` computes the same estimator (Scott's factor times
the sample covariance) but in float64 loops that are ~10x slower. Here the points are whitened
once with the bandwidth's Cholesky factor and the kernel sums run as chunked float32 matrix
products with a shifted log-sum-exp (numpy; measured 3x faster than torch
on 2 CPU cores at these sizes). Only ranks of the scores matter to the AUC, so float32
rounding (relative 1e-6) is harmless here, unlike in the nearest-neighbour score.

References:
    van Breugel, Sun, Qian, van der Schaar (2023), "Membership inference attacks against
    synthetic data through overfitting detection" (DOMIAS), AISTATS; Scott (1992),
    Multivariate Density Estimation, bandwidth factor n^(-1/(d+4)).

Example:
    >>> import numpy as np
    >>> kde = GaussianKDE().fit(np.random.default_rng(0).standard_normal((500, 2)))
    >>> bool(kde.log_density(np.zeros((1, 2)))[0] > kde.log_density(np.full((1, 2), 3.0))[0])
    True
"""

from __future__ import annotations

import math

import numpy as np

_CHUNK_ELEMENTS = 2**23


class GaussianKDE:
    """Gaussian KDE with Scott's rule on the full covariance (as ``scipy.stats.gaussian_kde``)."""

    def fit(self, points: np.ndarray) -> GaussianKDE:
        """Store whitened points; returns ``self``."""
        x = np.asarray(points, dtype=np.float64)
        n, d = x.shape
        factor = n ** (-1.0 / (d + 4))
        cov = np.atleast_2d(np.cov(x, rowvar=False)) * factor**2
        cov += np.eye(d) * max(1e-12, 1e-9 * float(np.trace(cov)) / d)  # constant columns
        self.chol_ = np.linalg.cholesky(cov)
        white = np.linalg.solve(self.chol_, x.T).T
        self.points_ = white.astype(np.float32)
        self.norm2_ = (self.points_ * self.points_).sum(1)
        self.log_const_ = (
            -math.log(n)
            - 0.5 * d * math.log(2 * math.pi)
            - float(np.log(np.diag(self.chol_)).sum())
        )
        return self

    def log_density(self, queries: np.ndarray) -> np.ndarray:
        """log p(x) for each query row (float64 array)."""
        q = np.linalg.solve(self.chol_, np.asarray(queries, dtype=np.float64).T).T
        q32 = q.astype(np.float32)
        chunk = max(1, _CHUNK_ELEMENTS // len(self.points_))
        out = np.empty(len(q32))
        for start in range(0, len(q32), chunk):
            qc = q32[start : start + chunk]
            part = self.norm2_[None, :] - 2.0 * (qc @ self.points_.T)  # |x - p|^2 - |x|^2
            shift = part.min(axis=1, keepdims=True)
            part -= shift
            part *= -0.5
            np.exp(part, out=part)
            log_sum = np.log(part.sum(axis=1, dtype=np.float64))
            out[start : start + len(qc)] = log_sum - 0.5 * (shift[:, 0] + (qc * qc).sum(1))
        return out + self.log_const_
