"""Theorem 2's local-DP statement for several released copies of every record
(:func:`epsilon_for_copies`; re-exported by :mod:`engine.privacy.audit`).

References: LNI paper Theorem 2 and Lemma 1; Mironov (2017) Rényi DP.
"""

from __future__ import annotations

import math
from dataclasses import replace

from engine.privacy.release import EpsilonStatement

__all__ = ["epsilon_for_copies"]


def epsilon_for_copies(statement: EpsilonStatement, copies: int) -> EpsilonStatement:
    """Theorem 2's epsilon for ``copies`` independent releases of every record.

    Each copy is the Gaussian mechanism sqrt(w) f^-1(x) + sqrt(1 - w) Z, with Rényi DP
    alpha * rho at every order alpha, rho = w C^2 / (2 (1 - w)). Rényi DP composes additively,
    so M copies give alpha * M rho, and the same conversion as Theorem 2's gives
    eps_M = M rho + 2 sqrt(M rho log(1/delta)) (M = 1: Theorem 2 itself). ``tests`` cross-check
    it against dp-accounting's RDP accountant with M self-composed Gaussian events.

    References: LNI paper Theorem 2 and Lemma 1; Mironov (2017) Rényi DP, Proposition 1
    (composition) and Proposition 3 (conversion).

    Example:
        >>> import numpy as np
        >>> from engine.privacy.release import epsilon_statement
        >>> s = epsilon_statement(np.array([[0.0], [2.0]]), 0.5, 0.01)
        >>> epsilon_for_copies(s, 1).value == s.value
        True
        >>> rho = 4 * 2.0 ** 2 * 0.5 / (2 * 0.5)
        >>> expected = rho + 2 * math.sqrt(rho * math.log(100))
        >>> round(epsilon_for_copies(s, 4).value, 6) == round(expected, 6)
        True
    """
    if copies < 1:
        raise ValueError("copies must be at least 1")
    if copies == 1:
        return statement
    w, C, delta = statement.w, statement.C, statement.delta
    if w >= 1.0:
        value = math.inf
    else:
        rho = copies * w * C**2 / (2 * (1 - w))
        value = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    sentence = (
        f"At w = {w:g} with {copies} synthetic copies of every record, the injected noise gives "
        f"local ({value:.3g}, {delta:.2g})-differential privacy per record (Rényi composition of "
        f"the {copies} copies) if the flow's latent codes of any two records lie at most "
        f"C = {C:.3g} apart ({statement.C_method}, from the data); this is {statement.nature}."
    )
    return replace(statement, value=float(value), sentence=sentence)
