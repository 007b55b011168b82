"""Level frequencies of a decoded batch set to the real table's, by rank of the model's scores.

A flow gives each coded column (binary, event, category) a score per synthetic row, and the
code is read off by thresholds. Read off at the *fixed* thresholds, a level's share drifts with
the flow's fit of that score's margin and with the noise of one draw (on 800-row tables 1-2
percentage points, against 0.5 for a Gaussian copula, which samples a fitted margin directly).
Read off by *rank* instead, the rows with the lowest ``count_0`` scores get level 0, the next
``count_1`` level 1, and so on, where ``count_k`` is the real share times the batch size
(largest remainders, so the counts add up). Which rows get which level, and with what else in
the row, is still what the flow learnt; only rows near a threshold can change level, and only to
the neighbouring level of the ordered probit. The missing-value indicators have done the same
since issue 13 item 4 (:meth:`engine.encoding.missing.MissingLayer.restore`).

Disclosure: a level's synthetic count then equals its real count (for a batch of the real
table's size), so this is done only for columns whose every level is held by at least
``MIN_LEVEL_ROWS`` real rows (the threshold rule of the report's tables); a column with a rarer
level keeps the fixed thresholds. Batches under ``CALIBRATE_ROWS`` rows (a few redrawn rows)
keep the fixed thresholds too.

References: issue 13 item 2 (categoricals as well as a copula); Hundepool et al. (2012)
*Statistical Disclosure Control*, 4.2 (threshold rule).

Example:
    >>> import numpy as np
    >>> scores = np.array([0.3, -1.2, 2.0, 0.1, -0.4, 1.1, 0.0, -2.0, 0.8, 0.5])
    >>> ranked_codes(scores, (0.5, 0.3, 0.2)).tolist()
    [1, 0, 2, 0, 0, 2, 0, 0, 1, 1]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CALIBRATE_ROWS = 200  # decoded batches at least this long get each column's real shares
MIN_LEVEL_ROWS = 10  # every level of a calibrated column is held by at least this many rows


def calibrated_shares(codes: np.ndarray, levels: int) -> tuple[float, ...] | None:
    """Each level's share of ``codes`` (0..levels-1), or None when a level is held by fewer
    than ``MIN_LEVEL_ROWS`` rows (its count must not be reproduced).

    Example:
        >>> calibrated_shares(np.r_[np.zeros(30), np.ones(10)].astype(int), 2)
        (0.75, 0.25)
        >>> calibrated_shares(np.r_[np.zeros(30), np.ones(9)].astype(int), 2) is None
        True
    """
    counts = np.bincount(np.asarray(codes, dtype=np.int64), minlength=levels)[:levels]
    if counts.min() < MIN_LEVEL_ROWS:
        return None
    return tuple(float(c) for c in counts / counts.sum())


def level_counts(shares: Sequence[float], n: int) -> np.ndarray:
    """``shares * n`` rounded to whole rows that add up to ``n`` (largest remainders).

    Example:
        >>> level_counts((0.5, 0.3, 0.2), 7).tolist()
        [4, 2, 1]
    """
    exact = np.asarray(shares, dtype="float64") * n
    counts = np.floor(exact).astype(np.int64)
    short = n - int(counts.sum())
    if short > 0:
        counts[np.argsort(-(exact - counts), kind="stable")[:short]] += 1
    return counts


def ranked_codes(scores: np.ndarray, shares: Sequence[float]) -> np.ndarray:
    """Level codes by rank of ``scores`` (lowest: level 0), with ``level_counts`` per level;
    ties and NaN (ranked last) broken by position."""
    y = np.asarray(scores, dtype="float64")
    counts = level_counts(shares, len(y))
    codes = np.empty(len(y), dtype=np.int64)
    codes[np.argsort(y, kind="stable")] = np.repeat(np.arange(len(counts)), counts)
    return codes


def top_rows(score: np.ndarray, rate: float) -> np.ndarray:
    """True for the round(rate n) highest scores (ties broken by position): a 0/1 column's
    rows set to 1 with the real rate (the missing-value indicators).

    Example:
        >>> top_rows(np.array([0.2, 0.9, -1.0, 0.5]), 0.5).tolist()
        [False, True, False, True]
    """
    k = int(round(rate * len(score)))
    flag = np.zeros(len(score), dtype=bool)
    if k > 0:
        flag[np.argsort(-score, kind="stable")[:k]] = True
    return flag
