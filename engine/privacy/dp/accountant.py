"""Privacy accounting for DP-SGD with Poisson subsampling (METHOD.md section 9).

Three accountants for ``T`` steps of the subsampled Gaussian mechanism (rate ``r``, noise
multiplier ``sigma``), add/remove-one adjacency:

* **PLD** (Google's ``dp-accounting``, privacy loss distributions, Koskela et al. 2020;
  Doroshenko et al. 2022): numerically tight. With the pessimistic estimate (the library's
  default) and a value discretization interval of ``PLD_DISCRETIZATION`` = 1e-3 it is an upper
  bound on the true epsilon up to the library's floating-point error. **This is the stated
  epsilon**, and sigma is calibrated on it (:func:`sigma_for_epsilon`, bisection).
* **RDP** (Mironov et al. 2019, integer orders; conversion of Canonne, Kamath & Steinke 2020 /
  Balle et al. 2020): a rigorous upper bound, looser than PLD. No dependency; the fallback
  accountant when ``dp-accounting`` cannot be imported, and always reported beside PLD.
* **mu-GDP** (the DP-NF paper's, Dong et al. 2019; Bu et al. 2020):
  ``mu = r * sqrt(T * (exp(1/sigma^2) - 1))`` and its (epsilon, delta) dual
  ``delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) Phi(-eps/mu - mu/2)``. The ``mu`` formula is a
  central-limit *approximation*: close to PLD at the paper's r = 0.5, T = 8,000, but it
  under-states epsilon at small sampling rates (n = 50,000, expected batch 256, T = 1,000,
  target 4: the mu-GDP sigma 0.536 has PLD epsilon 6.59). Reported as a secondary figure only
  (:func:`gdp_sigma_for_epsilon` keeps the closed-form calibration for comparison).

References: Dong, Roth & Su 2019 (Gaussian DP, Cor. 2.13 and Thm. 5); Bu, Dong, Long & Su
2020 (Deep learning with Gaussian DP); Mironov, Talwar & Zhang 2019 (RDP of the sampled
Gaussian); Koskela, Jalko & Honkela 2020 and Doroshenko et al. 2022 (PLD accounting);
DP-NF paper (seeds/dp-normalizing-flows-paper.md) sections 2.2 and 3.2.

Example:
    >>> mu = gdp_mu(7.36, 0.5, 8000)
    >>> round(mu, 2), round(epsilon_for_delta(0.01, mu), 1)
    (6.1, 32.0)
    >>> s = sigma_for_epsilon(4.0, 0.01, 0.5, 8000)
    >>> round(s, 1), 3.99 <= accountant_epsilon(s, 0.01, 0.5, 8000) <= 4.0
    (29.9, True)
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaln, log_ndtr, logsumexp, ndtr

from engine.errors import InputError

RDP_ORDERS = tuple(range(2, 257))
PLD_DISCRETIZATION = 1e-3  # value discretization interval of the stated PLD epsilon
_PLD_COARSE = 1e-2  # coarser (still pessimistic) grid, only to bracket sigma quickly
_SIGMA_RTOL = 1e-3  # calibrated sigma is at most 0.1 % above the smallest admissible one
_SIGMA_MAX = 1e4


def gdp_mu(sigma: float, r: float, T: int) -> float:
    """mu of ``T`` Poisson-subsampled Gaussian steps (CLT, Bu et al. 2020).

    Example:
        >>> round(gdp_mu(29.93, 0.5, 8000), 2)
        1.49
    """
    _check(sigma=sigma, r=r, T=T)
    return float(r * math.sqrt(T * math.expm1(1.0 / sigma**2)))


def sigma_for_mu(mu: float, r: float, T: int) -> float:
    """Inverse of :func:`gdp_mu` in sigma (closed form).

    Example:
        >>> round(sigma_for_mu(gdp_mu(11.44, 0.5, 8000), 0.5, 8000), 6)
        11.44
    """
    if not mu > 0:
        raise InputError(f"mu = {mu}: the GDP parameter must be positive")
    return float(1.0 / math.sqrt(math.log1p((mu / r) ** 2 / T)))


def delta_for_epsilon(epsilon: float, mu: float) -> float:
    """delta(epsilon) of a mu-GDP mechanism (Dong et al. 2019, Cor. 2.13), computed in log space.

    Example:
        >>> round(delta_for_epsilon(32.0, gdp_mu(7.36, 0.5, 8000)), 3)
        0.01
    """
    if mu <= 0:
        return 0.0
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    second = math.exp(min(epsilon + float(log_ndtr(b)), 700.0))
    return float(max(float(ndtr(a)) - second, 0.0))


def epsilon_for_delta(delta: float, mu: float) -> float:
    """The smallest epsilon >= 0 with delta(epsilon) <= ``delta`` (root finding)."""
    _check_delta(delta)
    if delta_for_epsilon(0.0, mu) <= delta:
        return 0.0
    hi = max(1.0, mu * mu)
    while delta_for_epsilon(hi, mu) > delta:
        hi *= 2.0
    return float(
        brentq(lambda e: delta_for_epsilon(e, mu) - delta, 0.0, hi, xtol=1e-10, rtol=1e-12)
    )


def epsilon_for_sigma(sigma: float, delta: float, r: float, T: int) -> float:
    """epsilon at ``delta`` of DP-SGD with noise multiplier ``sigma`` (mu-GDP accountant)."""
    return epsilon_for_delta(delta, gdp_mu(sigma, r, T))


def mu_for_epsilon(epsilon: float, delta: float) -> float:
    """The mu whose GDP dual gives exactly (``epsilon``, ``delta``) (root finding in mu)."""
    _check_delta(delta)
    if not epsilon > 0:
        raise InputError(f"epsilon = {epsilon}: the privacy budget must be positive")
    f = lambda m: delta_for_epsilon(epsilon, m) - delta  # noqa: E731 - increasing in mu
    lo, hi = 1e-6, 1.0
    while f(hi) < 0:
        hi *= 2.0
    return float(brentq(f, lo, hi, xtol=1e-12, rtol=1e-12))


def gdp_sigma_for_epsilon(epsilon: float, delta: float, r: float, T: int) -> float:
    """Noise multiplier for (epsilon, delta) under the mu-GDP approximation (closed form once mu
    is found). Secondary only: it can under-state epsilon at small sampling rates.

    Example:
        >>> round(gdp_sigma_for_epsilon(4.0, 50_000**-1.1, 256 / 50_000, 1000), 3)
        0.536
    """
    _check(sigma=1.0, r=r, T=T)
    return sigma_for_mu(mu_for_epsilon(epsilon, delta), r, T)


def sigma_for_epsilon(epsilon: float, delta: float, r: float, T: int) -> float:
    """The noise multiplier that makes ``T`` Poisson-subsampled Gaussian steps
    (``epsilon``, ``delta``)-DP by the engine's accountant (PLD; RDP bound without
    ``dp-accounting``): :func:`accountant_epsilon` of the result is <= ``epsilon``, and sigma is
    within 0.1 % of the smallest such value. Geometric bisection, cached.

    Example:
        >>> s = sigma_for_epsilon(4.0, 50_000**-1.1, 256 / 50_000, 1000)
        >>> round(s, 2), accountant_epsilon(s, 50_000**-1.1, 256 / 50_000, 1000) <= 4.0
        (0.62, True)
    """
    _check(sigma=1.0, r=r, T=T)
    _check_delta(delta)
    if not epsilon > 0:
        raise InputError(f"epsilon = {epsilon}: the privacy budget must be positive")
    return _calibrated_sigma(float(epsilon), float(delta), float(r), int(T), accountant_name())


@lru_cache(maxsize=256)
def _calibrated_sigma(epsilon: float, delta: float, r: float, T: int, accountant: str) -> float:
    start = gdp_sigma_for_epsilon(epsilon, delta, r, T)
    if accountant.startswith("PLD"):
        # Coarse-grid PLD is pessimistic too (an upper bound on the fine-grid value), so its
        # answer is admissible; the fine grid then only lowers sigma a little.
        coarse = _bisect_sigma(
            lambda s: _pld(s, delta, r, T, _PLD_COARSE), epsilon, start, 1.5, 1e-2
        )
        return _bisect_sigma(
            lambda s: _pld(s, delta, r, T, PLD_DISCRETIZATION), epsilon, coarse, 1.03, _SIGMA_RTOL
        )
    return _bisect_sigma(lambda s: rdp_epsilon(s, delta, r, T), epsilon, start, 1.5, _SIGMA_RTOL)


def _bisect_sigma(
    eps_of: Callable[[float], float], target: float, start: float, step: float, rtol: float
) -> float:
    """Smallest sigma (to ``rtol``) with ``eps_of(sigma) <= target``; ``eps_of`` decreasing."""
    hi = lo = start
    if eps_of(start) <= target:
        lo = start / step
        while eps_of(lo) <= target:
            hi, lo = lo, lo / step
    else:
        hi = start * step
        while eps_of(hi) > target:
            if hi > _SIGMA_MAX:
                raise InputError(
                    f"epsilon = {target}: not reachable with these settings; "
                    "choose a larger epsilon or delta"
                )
            lo, hi = hi, hi * step
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        if eps_of(mid) <= target:
            hi = mid
        else:
            lo = mid
    return float(hi)


def rdp_epsilon(
    sigma: float, delta: float, r: float, T: int, orders: tuple[int, ...] = RDP_ORDERS
) -> float:
    """Rigorous upper bound on epsilon by Renyi DP at integer orders.

    Per step (Mironov et al. 2019, eq. for integer alpha):
    ``A_a = sum_k C(a,k) (1-r)^(a-k) r^k exp((k^2 - k) / (2 sigma^2))``, ``rdp_a = log A_a/(a-1)``;
    conversion ``eps = T rdp_a + log((a-1)/a) - (log delta + log a)/(a-1)``, minimized over a.

    Example:
        >>> round(rdp_epsilon(7.36, 0.01, 0.5, 8000), 1)
        40.4
    """
    _check(sigma=sigma, r=r, T=T)
    _check_delta(delta)
    best = math.inf
    for a in orders:
        k = np.arange(a + 1, dtype=float)
        log_binom = gammaln(a + 1) - gammaln(k + 1) - gammaln(a - k + 1)
        log_q = np.log(r) * k + (
            np.log1p(-r) * (a - k) if r < 1 else np.where(k == a, 0.0, -np.inf)
        )
        log_a = float(logsumexp(log_binom + log_q + (k * k - k) / (2.0 * sigma**2)))
        rdp = T * log_a / (a - 1)
        eps = rdp + math.log1p(-1.0 / a) - (math.log(delta) + math.log(a)) / (a - 1)
        best = min(best, eps)
    return float(max(best, 0.0))


def pld_epsilon(
    sigma: float, delta: float, r: float, T: int, discretization: float = PLD_DISCRETIZATION
) -> float | None:
    """epsilon from Google's PLD accountant (``dp-accounting``; pessimistic estimate, value
    discretization interval ``discretization``), or ``None`` if the package is missing.

    Example:
        >>> round(pld_epsilon(0.536, 50_000**-1.1, 256 / 50_000, 1000), 2)
        6.59
    """
    if not _pld_available():
        return None
    _check(sigma=sigma, r=r, T=T)
    _check_delta(delta)
    return _pld(float(sigma), float(delta), float(r), int(T), float(discretization))


@lru_cache(maxsize=1024)
def _pld(sigma: float, delta: float, r: float, T: int, discretization: float) -> float:
    import dp_accounting
    from dp_accounting import pld

    logging.getLogger("absl").setLevel(logging.ERROR)
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(r, dp_accounting.GaussianDpEvent(sigma)), T
    )
    accountant = pld.PLDAccountant(value_discretization_interval=discretization)
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def _pld_available() -> bool:
    try:
        import dp_accounting.pld  # noqa: F401
    except ImportError:
        return False
    return True


_RDP_NAME = "RDP (integer orders 2-256, Canonne-Kamath-Steinke conversion)"


@lru_cache(maxsize=1)
def accountant_name() -> str:
    """The accountant that states epsilon and calibrates sigma, in words.

    Example:
        >>> accountant_name().split(" (")[0]
        'PLD'
    """
    if _pld_available():
        from importlib.metadata import version

        return (
            f"PLD (Google dp-accounting {version('dp-accounting')}, pessimistic estimate, "
            f"discretization {PLD_DISCRETIZATION:g})"
        )
    return _RDP_NAME


def accountant_epsilon(sigma: float, delta: float, r: float, T: int) -> float:
    """The stated epsilon: PLD when ``dp-accounting`` is importable, else the RDP bound."""
    value = pld_epsilon(sigma, delta, r, T)
    return rdp_epsilon(sigma, delta, r, T) if value is None else value


def default_delta(n: int) -> float:
    """The default delta ``1 / n^1.1`` (smaller than 1/n, as DP practice asks).

    Example:
        >>> round(default_delta(1000), 6)
        0.000501
    """
    if n < 2:
        raise InputError(f"{n} rows: DP training needs at least 2 rows")
    return float(n**-1.1)


@dataclass(frozen=True)
class DPGuarantee:
    """The (epsilon, delta)-DP statement of a DP-SGD-trained flow and its parameters.

    ``epsilon`` is the stated value, by ``accountant`` (PLD, or the RDP bound without
    ``dp-accounting``); ``epsilon_target`` the budget asked for (``epsilon`` <= it);
    ``epsilon_rdp_bound`` a rigorous upper bound; ``epsilon_pld`` Google's PLD value;
    ``epsilon_gdp`` (with ``mu``) the mu-GDP approximation, secondary only.

    Example:
        >>> g = DPGuarantee.for_training(0.536, 50_000**-1.1, 256 / 50_000, 1000, 1.0)
        >>> round(g.epsilon, 2), round(g.epsilon_gdp, 2), g.accountant.split(" (")[0]
        (6.59, 4.0, 'PLD')
    """

    epsilon: float
    delta: float
    mu: float
    sigma: float
    sampling_rate: float
    steps: int
    clip: float
    epsilon_rdp_bound: float
    epsilon_pld: float | None = None
    accountant: str = "PLD"
    adjacency: str = "add/remove one record"
    epsilon_gdp: float | None = None
    epsilon_target: float | None = None

    @classmethod
    def for_training(
        cls,
        sigma: float,
        delta: float,
        r: float,
        T: int,
        clip: float,
        *,
        target: float | None = None,
        check_pld: bool = True,
    ) -> DPGuarantee:
        """Compute every figure for the given training parameters (``check_pld=False``: the
        RDP bound is the stated epsilon, as without ``dp-accounting``)."""
        mu = gdp_mu(sigma, r, T)
        rdp = rdp_epsilon(sigma, delta, r, T)
        pld_value = pld_epsilon(sigma, delta, r, T) if check_pld else None
        return cls(
            epsilon=rdp if pld_value is None else pld_value,
            delta=float(delta),
            mu=mu,
            sigma=float(sigma),
            sampling_rate=float(r),
            steps=int(T),
            clip=float(clip),
            epsilon_rdp_bound=rdp,
            epsilon_pld=pld_value,
            accountant=accountant_name() if pld_value is not None else _RDP_NAME,
            epsilon_gdp=epsilon_for_delta(delta, mu),
            epsilon_target=None if target is None else float(target),
        )

    def to_dict(self) -> dict[str, Any]:
        """All fields, JSON-ready."""
        return asdict(self)

    def statement(self) -> str:
        """One plain sentence for the report."""
        return (
            f"({self.epsilon:.2f}, {self.delta:.2g})-differential privacy by the "
            f"{self.accountant} accountant (rigorous RDP bound epsilon <= "
            f"{self.epsilon_rdp_bound:.2f}; the mu-GDP approximation of the DP-NF paper, shown for "
            f"comparison only, gives {self.epsilon_gdp:.2f} with mu = {self.mu:.2f}) for the model "
            f"and every sample drawn from it: DP-SGD with noise multiplier {self.sigma:.3g}, "
            f"clipping norm {self.clip:g}, Poisson sampling rate {self.sampling_rate:.3g}, "
            f"{self.steps} steps"
        )


def _check(*, sigma: float, r: float, T: int) -> None:
    if not sigma > 0:
        raise InputError(f"noise multiplier {sigma}: must be positive")
    if not 0 < r <= 1:
        raise InputError(f"sampling rate {r}: must lie in (0, 1]")
    if int(T) < 1:
        raise InputError(f"{T} steps: DP-SGD needs at least one step")


def _check_delta(delta: float) -> None:
    if not 0 < delta < 1:
        raise InputError(f"delta = {delta}: must lie strictly between 0 and 1")
