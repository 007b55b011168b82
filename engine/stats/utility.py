"""General utility: can a classifier tell the synthetic rows from the real ones?

The propensity-score mean squared error of synthpop's ``utility.gen`` (Snoke, Raab, Nowok,
Dibben & Slavkovic 2018; Raab, Nowok & Dibben 2021): stack the real rows (t = 0) and the
synthetic rows (t = 1), fit a propensity model for t, and measure how far the fitted scores
p_i stray from the share of synthetic rows c = m / (n + m):

    pMSE = (1 / N) * sum_i (p_i - c)^2,    N = n + m.

``logistic`` (synthpop's ``method = "logit"``, ``maxorder = 0``: main effects; categories as
0/1 columns, a missing value as an indicator): under the null that both sets come from one
distribution its expectation is (k - 1)(1 - c)^2 c / N for k parameters (intercept included),
and the standardized ratio S_pMSE = pMSE / that expectation is about 1 for data a classifier
cannot tell apart (its 95th percentile under the null is about chi2_{k-1, 0.95} / (k - 1)).
``cart`` (synthpop's default ``method = "cart"``): a classification tree (minimum 5 rows a
leaf, as synthpop's ``minbucket``), whose null has no closed form: its expectation is the
mean pMSE of ``permutations`` refits with the labels shuffled (synthpop's
``resamp.method = "perm"``).

Why by hand: the logistic fit is statsmodels' (``Logit``); what no library gives is the pMSE
with synthpop's null and its standardization, and the offline kit ships no tree library, so the
small tree (Gini splits, greedy, depth-limited) is written here.

References: Snoke et al. (2018) JRSS A 181:663; Raab, Nowok & Dibben (2021) J Priv Confid 11;
synthpop 1.9 ``utility.gen`` documentation; Woo et al. (2009) J Priv Confid 1 (the pMSE).

Example:
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> real = pd.DataFrame({"x": rng.normal(size=400), "g": rng.choice(["a", "b"], 400)})
    >>> same = pd.DataFrame({"x": rng.normal(size=400), "g": rng.choice(["a", "b"], 400)})
    >>> shifted = same.assign(x=same["x"] + 1.0)
    >>> propensity_utility(real, same).s_pmse < 3 < propensity_utility(real, shifted).s_pmse
    True
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

MAX_ROWS = 10_000  # each table is subsampled to at most this many rows (fixed seed)
MAX_LEVELS = 20  # a category's rarer levels beyond these share one column
MIN_LEAF = 5  # synthpop's minbucket
MAX_DEPTH = 6
PERMUTATIONS = 20


@dataclass(frozen=True)
class PropensityUtility:
    """pMSE, its null expectation and the standardized ratio S_pMSE."""

    method: str  # "logistic" or "cart"
    pmse: float
    expected: float
    s_pmse: float
    parameters: int  # k: the propensity model's parameters (logistic) or leaves (cart)
    rows_real: int
    rows_synthetic: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe (the ``fidelity.utility`` block of audit.json; new keys)."""
        return {
            "method": self.method,
            "pmse": float(self.pmse),
            "expected_null": float(self.expected),
            "s_pmse": float(self.s_pmse),
            "parameters": int(self.parameters),
            "rows_real": int(self.rows_real),
            "rows_synthetic": int(self.rows_synthetic),
            "reference": "synthpop utility.gen (Snoke et al. 2018): 1 means a classifier "
            "cannot tell the synthetic rows from the real ones",
        }

    @property
    def words(self) -> str:
        """The plain reading: how well a classifier tells the synthetic rows from the real."""
        if self.s_pmse <= 2:
            return "a classifier cannot tell the synthetic rows from the real ones"
        if self.s_pmse <= 10:
            return "a classifier tells the synthetic rows from the real ones only a little"
        return "a classifier tells many synthetic rows from the real ones"


def design(
    real: pd.DataFrame, synth: pd.DataFrame, columns: Sequence[str] | None = None
) -> np.ndarray:
    """The stacked main-effects matrix (real rows first): numbers standardized, a missing
    number as 0 plus an indicator column, categories as 0/1 columns (first level left out)."""
    cols = [c for c in (columns or real.columns) if c in real.columns and c in synth.columns]
    both = pd.concat([real[cols], synth[cols]], ignore_index=True)
    blocks: list[np.ndarray] = []
    for c in cols:
        s = both[c]
        if pd.api.types.is_datetime64_any_dtype(s):
            s = (s - s.min()).dt.days.astype(float)
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            v = s.to_numpy(dtype="float64")
            miss = np.isnan(v)
            sd = np.nanstd(v)
            z = (v - np.nanmean(v)) / sd if sd > 0 else np.zeros_like(v)
            blocks.append(np.nan_to_num(z, nan=0.0)[:, None])
            if miss.any() and not miss.all():
                blocks.append(miss.astype(float)[:, None])
            continue
        text = s.astype(object).where(s.notna(), "(missing)").astype(str)
        levels = text.value_counts().index.tolist()
        keep = levels[: MAX_LEVELS - 1] if len(levels) > MAX_LEVELS else levels
        coded = text.where(text.isin(keep), "(other)")
        dummies = pd.get_dummies(coded, drop_first=True, dtype=float)
        if dummies.shape[1]:
            blocks.append(dummies.to_numpy())
    return np.hstack(blocks) if blocks else np.zeros((len(both), 0))


def propensity_utility(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    method: str = "logistic",
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> PropensityUtility:
    """synthpop's pMSE and S_pMSE of ``synth`` against ``real`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    real, synth = _at_most(real, rng), _at_most(synth, rng)
    X = design(real, synth, columns)
    t = np.r_[np.zeros(len(real)), np.ones(len(synth))]
    c = len(synth) / len(t)
    if method == "logistic":
        p = _logistic_scores(X, t)
        k = X.shape[1] + 1
        expected = (k - 1) * (1 - c) ** 2 * c / len(t)
    elif method == "cart":
        p, k = _tree_scores(X, t)
        expected = float(
            np.mean(
                [
                    np.mean((_tree_scores(X, rng.permutation(t))[0] - c) ** 2)
                    for _ in range(permutations)
                ]
            )
        )
    else:
        raise ValueError(f"unknown propensity method '{method}'; use logistic or cart")
    pmse = float(np.mean((p - c) ** 2))
    ratio = pmse / expected if expected > 0 else float("nan")
    return PropensityUtility(method, pmse, float(expected), float(ratio), k, len(real), len(synth))


def _at_most(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    if len(frame) <= MAX_ROWS:
        return frame.reset_index(drop=True)
    return frame.iloc[np.sort(rng.choice(len(frame), MAX_ROWS, replace=False))].reset_index(
        drop=True
    )


def _logistic_scores(X: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Fitted propensities of a main-effects logistic regression (statsmodels ``Logit``)."""
    # the model's own module: statsmodels.api imports every model family and its plots
    # (1.1-3.5 s of a fresh command, issue 31)
    from statsmodels.discrete.discrete_model import Logit

    design_ = np.column_stack([np.ones(len(t)), X])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # separation and convergence notes: the scores stand
        fit = Logit(t, design_).fit(disp=0, method="bfgs", maxiter=300)
    return np.asarray(fit.predict(design_), dtype=float)


def _tree_scores(X: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, int]:
    """Leaf shares of t from a greedy Gini tree (``MIN_LEAF`` rows a leaf, ``MAX_DEPTH``);
    returns the scores and the number of leaves."""
    p = np.empty(len(t))
    leaves = 0
    stack = [(np.arange(len(t)), 0)]
    while stack:
        rows, depth = stack.pop()
        split = _best_split(X[rows], t[rows]) if depth < MAX_DEPTH else None
        if split is None:
            p[rows] = t[rows].mean()
            leaves += 1
            continue
        j, cut = split
        left = X[rows, j] <= cut
        stack += [(rows[left], depth + 1), (rows[~left], depth + 1)]
    return p, leaves


def _best_split(X: np.ndarray, t: np.ndarray) -> tuple[int, float] | None:
    """The (column, cut) with the largest Gini decrease, both sides >= ``MIN_LEAF`` rows."""
    n = len(t)
    if n < 2 * MIN_LEAF or t.min() == t.max():
        return None
    best, gain_best = None, 1e-12
    parent = n * _gini(t.mean())
    for j in range(X.shape[1]):
        order = np.argsort(X[:, j], kind="stable")
        x, y = X[order, j], t[order]
        ones = np.cumsum(y)[MIN_LEAF - 1 : n - MIN_LEAF]
        sizes = np.arange(MIN_LEAF, n - MIN_LEAF + 1)
        valid = x[MIN_LEAF - 1 : n - MIN_LEAF] < x[MIN_LEAF : n - MIN_LEAF + 1]
        if not valid.any():
            continue
        left = sizes * _gini(ones / sizes)
        right = (n - sizes) * _gini((y.sum() - ones) / (n - sizes))
        gain = np.where(valid, parent - left - right, -np.inf)
        i = int(np.argmax(gain))
        if gain[i] > gain_best:
            gain_best = float(gain[i])
            best = (j, float((x[MIN_LEAF - 1 + i] + x[MIN_LEAF + i]) / 2))
    return best


def _gini(share: Any) -> Any:
    return 2 * share * (1 - share)
