"""Identity and attribute disclosure of one file against the real table: synthpop 1.9's UiO,
repU, DiO and DiSCO, and anonymeter's inference attack with a control set.

Given the key columns an attacker knows (:mod:`engine.columns.keys`), grouped as in
:mod:`engine.disclosure.key_groups`, and one target column, synthpop's ``disclosure()`` counts, over
the N real records (percentages of N):

- **UiO**: records whose key combination is unique in the real table (identity: who could be
  singled out at all);
- **repU** (replicated uniques): records unique in the real table whose key combination is also
  unique in the synthetic file (identity: a real unique that stands alone in the release too);
- **DiO**: records whose key group in the real table has one target value only (what the real
  table itself would disclose);
- **DiSCO** (disclosive in synthetic, correct original): records whose key combination occurs in
  the synthetic file, where every synthetic record with it has one target value, and that value
  is the real record's (attribute: the synthetic file tells the attacker the right value).

The inference attack (anonymeter's ``InferenceEvaluator``) guesses a target record's secret as
the secret of the synthetic record nearest to it on the keys (Gower-like L1 distance, 1 nearest
neighbour); a guess is right when it equals the secret (a category) or lies within 5 % of the
guess (a number: ``|guess - secret| <= 0.05 |guess|``). Run on the members (the records the file
was made from: the *main* attack) and on real records the file was not made from (the *control*
attack), the risk is the members' excess success over the control's, scaled by the room left:
``risk = (main - control) / (1 - control)``, each rate a Wilson score estimate with its 95 %
half-width and the risk's error propagated (anonymeter ``residual_success``).

Written here rather than calling synthpop (R) or anonymeter (pins numpy < 1.27, against the
lock's numpy 2): both are a few group counts or one nearest-neighbour query (scipy's cKDTree,
exact for the L1 metric), and the tests cross-check these numbers against a worked example by
hand and, where it is installed, anonymeter itself (``benchmarks/anonymeter_crosscheck.py``).

References: Raab, Nowok & Dibben (2024) "Practical privacy metrics for synthetic data",
arXiv:2406.16826 (UiO, repU, DiO, DiSCO); synthpop 1.9 R/disclosure.R; Giomi et al. (2023) "A
unified framework for quantifying privacy risk in synthetic data", PoPETs 2023(2) (anonymeter);
anonymeter 1.1 ``evaluators/inference_evaluator.py``, ``stats/confidence.py``; Wilson (1927)
JASA 22:209.

Example (the worked example of ``tests/test_disclosure_risk.py``):
    >>> keys_real, t_real = np.array([0, 0, 1, 2]), np.array([1, 1, 0, 1])
    >>> keys_syn, t_syn = np.array([0, 1, 2, 2]), np.array([1, 0, 1, 0])
    >>> f = synthpop_figures(keys_real, t_real, keys_syn, t_syn)
    >>> f.uio, f.repu, f.dio, f.disco
    (50.0, 25.0, 100.0, 75.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree
from scipy.stats import norm

REL_TOLERANCE = 0.05  # anonymeter's evaluate_inference_guesses tolerance for numeric secrets


@dataclass(frozen=True)
class SynthpopFigures:
    """synthpop's identity and attribute measures, in % of the real records (``n_real``)."""

    uio: float
    repu: float
    dio: float
    disco: float
    n_real: int
    n_synthetic: int


def synthpop_figures(
    keys_real: np.ndarray, target_real: np.ndarray, keys_syn: np.ndarray, target_syn: np.ndarray
) -> SynthpopFigures:
    """UiO, repU, DiO and DiSCO (synthpop 1.9 ``disclosure()``, no exclusions) from integer
    codes: ``keys_*`` one code per key combination and ``target_*`` one per target level, both
    shared between the real and the synthetic file
    (:func:`engine.disclosure.key_groups.cell_codes`)."""
    kr, ks = np.asarray(keys_real), np.asarray(keys_syn)
    tr, ts = np.asarray(target_real), np.asarray(target_syn)
    n_keys = int(max(kr.max(initial=-1), ks.max(initial=-1))) + 1
    n_levels = int(max(tr.max(initial=-1), ts.max(initial=-1))) + 1
    n_real = len(kr)
    if n_real == 0:
        return SynthpopFigures(0.0, 0.0, 0.0, 0.0, 0, len(ks))
    kd = np.bincount(kr, minlength=n_keys)  # real records per key combination
    kn = np.bincount(ks, minlength=n_keys)  # synthetic records per key combination
    cd = np.bincount(kr * n_levels + tr, minlength=n_keys * n_levels)  # real per (key, level)
    cs = np.bincount(ks * n_levels + ts, minlength=n_keys * n_levels)  # synthetic per (key, level)
    unique_real = kd[kr] == 1
    uio = unique_real.mean()
    repu = (unique_real & (kn[kr] == 1)).mean()
    dio = (cd[kr * n_levels + tr] == kd[kr]).mean()
    disco = ((kn[kr] > 0) & (cs[kr * n_levels + tr] == kn[kr])).mean()
    return SynthpopFigures(
        uio=100.0 * float(uio),
        repu=100.0 * float(repu),
        dio=100.0 * float(dio),
        disco=100.0 * float(disco),
        n_real=n_real,
        n_synthetic=len(ks),
    )


def nearest_guesses(
    syn_coords: np.ndarray, syn_secret: np.ndarray, target_coords: np.ndarray
) -> np.ndarray:
    """Each target's guess: the secret of the synthetic record nearest on the keys (L1, one
    neighbour; anonymeter ``KNNInferencePredictor``). Ties go to whichever the exact search
    returns first, as anonymeter's ``argsort`` does; the released file is in random order.

    Example:
        >>> nearest_guesses(np.array([[0.0], [1.0]]), np.array([5, 7]), np.array([[0.9], [0.2]]))
        array([7, 5])
    """
    if len(target_coords) == 0:
        return np.asarray(syn_secret)[:0]
    _, idx = cKDTree(syn_coords).query(target_coords, k=1, p=1)
    return np.asarray(syn_secret)[np.asarray(idx, dtype=int)]


def guesses_right(guesses: np.ndarray, secrets: np.ndarray, numeric: bool) -> np.ndarray:
    """anonymeter's ``evaluate_inference_guesses``: equal (a category), within 5 % of the guess
    (a number), or both missing.

    Example:
        >>> guesses_right(np.array([100.0, 100.0]), np.array([104.0, 106.0]), numeric=True).tolist()
        [True, False]
    """
    g, s = np.asarray(guesses), np.asarray(secrets)
    if numeric:
        gf, sf = g.astype(float), s.astype(float)
        with np.errstate(invalid="ignore"):
            right = np.abs(gf - sf) / (gf + 1e-12) <= REL_TOLERANCE
        both_missing = np.isnan(gf) & np.isnan(sf)
        return np.asarray(right | both_missing)
    return np.asarray(g == s)


@dataclass(frozen=True)
class Rate:
    """A success rate as anonymeter gives it: Wilson's point estimate and 95 % half-width."""

    value: float
    error: float

    @classmethod
    def wilson(cls, successes: float, total: float, level: float = 0.95) -> Rate:
        """anonymeter ``success_rate``: Wilson (1927) score interval.

        Example:
            >>> r = Rate.wilson(50, 100)
            >>> round(r.value, 3), round(r.error, 3)
            (0.5, 0.096)
        """
        if total <= 0:
            return cls(0.0, 1.0)
        z = float(norm.ppf(0.5 * (1.0 + level)))
        z2 = z * z
        var = successes * (total - successes) / total
        denominator = total + z2
        return cls(
            (successes + 0.5 * z2) / denominator,
            (z / denominator) * math.sqrt(max(var, 0.0) + 0.25 * z2),
        )


@dataclass(frozen=True)
class InferenceRisk:
    """anonymeter's inference risk: main and control success, and the excess of one over the
    other, bounded to [0, 1] with its 95 % interval."""

    main: Rate
    control: Rate
    risk: float
    ci_low: float
    ci_high: float

    @classmethod
    def of(cls, main: Rate, control: Rate) -> InferenceRisk:
        """anonymeter ``residual_success`` + ``bind_value``.

        Example:
            >>> r = InferenceRisk.of(Rate(0.6, 0.05), Rate(0.5, 0.05))
            >>> round(r.risk, 3), round(r.ci_low, 3), round(r.ci_high, 3)
            (0.2, 0.072, 0.328)
        """
        room = 1.0 - control.value
        if room <= 0:
            return cls(main, control, 0.0, 0.0, 1.0)
        residual = (main.value - control.value) / room
        d_main = 1.0 / abs(room)
        d_control = (main.value - 1.0) / room**2
        error = math.sqrt((main.error * d_main) ** 2 + (control.error * d_control) ** 2)

        def bound(x: float) -> float:
            return min(max(x, 0.0), 1.0)

        return cls(main, control, bound(residual), bound(residual - error), bound(residual + error))
