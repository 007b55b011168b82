"""The flow's fixed first step: whitening by the training rows' mean and Cholesky factor
(:func:`whitening`, set on the model by :meth:`engine.flows.maf.MAF.set_whitening`).

Hand-written because it is four lines of numpy; scikit-learn's Ledoit-Wolf shrinkage would
pull the start towards independent columns, the very bias this step removes, and is not a
dependency of the app.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["WHITEN_RIDGE", "whitening"]

WHITEN_RIDGE = 1e-3  # relative ridge on the covariance before the Cholesky factor


def whitening(X: np.ndarray, ridge: float = WHITEN_RIDGE) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mean, L)`` of the training rows, ``L`` the lower Cholesky factor of their covariance
    with ``ridge`` times its diagonal added (and a floor of 1e-6 for a constant column), so that
    collinear columns still give a well-conditioned factor. For :meth:`MAF.set_whitening`.

    Why (issue 13 item 3): every MADE layer starts close to the identity, so a flow that early
    stopping halts after a few epochs (as it does on a 100-row table, 20 validation rows) is
    close to *independent* columns, and every association comes out shrunk towards zero. From
    a whitened start it is close to the Gaussian copula of the training rows instead, and
    the MADE layers learn only what is not Gaussian. Lung cancer (lifelines, 84 members,
    fixed w 0.2, 6 seeds x 3 draws): mean |z-gap| of the Cox terms 1.50 -> 1.29, ECOG's mean z
    -2.15 -> -0.87 (SDV's copula 1.43; members resampled with replacement 1.01).

    Example:
        >>> import numpy as np
        >>> X = np.random.default_rng(0).multivariate_normal([0, 0], [[1, .8], [.8, 1]], 5000)
        >>> mean, L = whitening(X)
        >>> round(float(L[1, 0]), 1), round(float(L[0, 1]), 1)
        (0.8, 0.0)
    """
    mean = X.mean(axis=0)
    C = np.atleast_2d(np.cov(X, rowvar=False))
    C[np.diag_indices_from(C)] = np.maximum(np.diag(C), 1e-6) * (1.0 + ridge)
    L = np.linalg.cholesky(C)
    return torch.as_tensor(mean, dtype=torch.float32), torch.as_tensor(L, dtype=torch.float32)
