"""The order of preference among candidate models: the one-standard-error rule on their
per-row validation NLLs, applied again to those left (:mod:`engine.flows.select` ranks the
family with it).

References: Breiman et al. (1984) one-standard-error rule; Hastie, Tibshirani & Friedman, ESL
section 7.10.
"""

from __future__ import annotations

import numpy as np


def preference_order(nll: np.ndarray, labels: list[str] | None = None) -> list[tuple[int, str]]:
    """Candidates (rows of ``nll``: per-row validation NLLs, smallest model first) in order of
    preference: the one-standard-error rule (``engine.flows.select._parsimonious``) picks the
    first, then is applied again to those left, and so on. Returns ``(index, why)`` pairs.

    Why this criterion: validation NLL is measured on rows no candidate trained on, on the
    scale the flow is fitted in, for every table and analysis alike (a utility check would
    need an analysis the user may not name), and the one-SE rule prefers the smaller model
    when the data cannot tell them apart, which is also the one that gives members away less.

    Example:
        >>> nll = np.array([[1.0, 1.2, 0.9, 1.1], [1.0, 1.0, 0.8, 1.2], [0.2, 0.4, 0.1, 0.3]])
        >>> [i for i, _ in preference_order(nll)]  # the third is better by far, then the rule
        [2, 0, 1]
        >>> preference_order(nll, ["G", "A", "B"])[1][1]
        'within one standard error of the best left (A, 0.050 nats a row better, SE 0.065)'
    """
    labels = labels or [str(i) for i in range(len(nll))]
    left, order = list(range(len(nll))), list[tuple[int, str]]()
    while left:
        best = left[int(np.argmin(nll[left].mean(axis=1)))]
        for i in left:
            diff = nll[i] - nll[best]
            se = float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else 0.0
            if diff.mean() <= se:
                break
        if i == best:
            why = "the best validation likelihood" + (" of those left" if order else "")
        else:
            why = (
                f"within one standard error of the best left ({labels[best]}, "
                f"{float(diff.mean()):.3f} nats a row better, SE {se:.3f})"
            )
        order.append((i, why))
        left.remove(i)
    return order
