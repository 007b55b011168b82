"""Privacy accounting for DP-SGD with Poisson subsampling (METHOD.md section 9).

Three accountants for ``T`` steps of the subsampled Gaussian mechanism (rate ``r``, noise
multiplier ``sigma``):

* **mu-GDP** (the DP-NF paper's, Dong et al. 2019; Bu et al. 2020):
  ``mu = r * sqrt(T * (exp(1/sigma^2) - 1))`` and its exact (epsilon, delta) dual
  ``delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) Phi(-eps/mu - mu/2)``. The ``mu`` formula is a
  central-limit *approximation* of the composed subsampled mechanism: accurate for many steps
  (it matches Google's PLD accountant to 0.5 % at the paper's T = 8,000; see tests/test_dp.py)
  but it can under-state epsilon for few steps.
* **RDP** (Mironov et al. 2019, integer orders; conversion of Canonne, Kamath & Steinke 2020 /
  Balle et al. 2020): a rigorous *upper bound*, looser than GDP (40.4 vs 32.0 at the
  paper's first setting). Implemented here with no dependency.
* **PLD** (Google's ``dp-accounting``, optional): numerically tight, used to cross-check when the
  package is installed (:func:`pld_epsilon` returns ``None`` otherwise).

The engine chooses sigma by mu-GDP (:func:`sigma_for_epsilon`; closed form once mu is found)
and states the RDP bound (and the PLD value when available) beside it.

References: Dong, Roth & Su 2019 (Gaussian DP, Cor. 2.13 and Thm. 5); Bu, Dong, Long & Su
2020 (Deep learning with Gaussian DP); Mironov, Talwar & Zhang 2019 (RDP of the sampled
Gaussian); DP-NF paper (seeds/dp-normalizing-flows-paper.md) sections 2.2 and 3.2.

Example:
    >>> mu = gdp_mu(7.36, 0.5, 8000)
    >>> round(mu, 2), round(epsilon_for_delta(0.01, mu), 1)
    (6.1, 32.0)
    >>> s = sigma_for_epsilon(4.0, 0.01, 0.5, 8000)
    >>> round(s, 1), round(epsilon_for_sigma(s, 0.01, 0.5, 8000), 6)
    (29.9, 4.0)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaln, log_ndtr, logsumexp, ndtr

from engine.errors import InputError

RDP_ORDERS = tuple(range(2, 257))


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


def sigma_for_epsilon(epsilon: float, delta: float, r: float, T: int) -> float:
    """Noise multiplier for a target (epsilon, delta) with rate ``r`` and ``T`` steps (mu-GDP)."""
    _check(sigma=1.0, r=r, T=T)
    return sigma_for_mu(mu_for_epsilon(epsilon, delta), r, T)


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


def pld_epsilon(sigma: float, delta: float, r: float, T: int) -> float | None:
    """epsilon from Google's PLD accountant (``dp-accounting``), or ``None`` if not installed."""
    try:
        import dp_accounting
        from dp_accounting import pld
    except ImportError:
        return None
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(r, dp_accounting.GaussianDpEvent(sigma)), int(T)
    )
    accountant = pld.PLDAccountant()
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


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

    ``epsilon`` is the mu-GDP value the engine targeted; ``epsilon_rdp_bound`` a rigorous upper
    bound; ``epsilon_pld`` Google's PLD value when ``dp-accounting`` is installed.
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
    accountant: str = "mu-GDP (Dong et al. 2019), CLT for Poisson-subsampled DP-SGD"
    adjacency: str = "add/remove one record"

    @classmethod
    def for_training(
        cls, sigma: float, delta: float, r: float, T: int, clip: float, *, check_pld: bool = True
    ) -> DPGuarantee:
        """Compute every figure for the given training parameters."""
        mu = gdp_mu(sigma, r, T)
        return cls(
            epsilon=epsilon_for_delta(delta, mu),
            delta=float(delta),
            mu=mu,
            sigma=float(sigma),
            sampling_rate=float(r),
            steps=int(T),
            clip=float(clip),
            epsilon_rdp_bound=rdp_epsilon(sigma, delta, r, T),
            epsilon_pld=pld_epsilon(sigma, delta, r, T) if check_pld else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """All fields, JSON-ready."""
        return asdict(self)

    def statement(self) -> str:
        """One plain sentence for the report."""
        extra = "" if self.epsilon_pld is None else f", PLD accountant {self.epsilon_pld:.2f}"
        return (
            f"({self.epsilon:.2f}, {self.delta:.2g})-differential privacy (mu-GDP, mu = {self.mu:.2f}; "
            f"rigorous RDP bound epsilon <= {self.epsilon_rdp_bound:.2f}{extra}) for the model and "
            f"every sample drawn from it: DP-SGD with noise multiplier {self.sigma:.2f}, clipping "
            f"norm {self.clip:g}, Poisson sampling rate {self.sampling_rate:.3g}, {self.steps} steps"
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
