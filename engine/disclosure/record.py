"""``audit.json`` under the disclosure rules: the membership audit's curves and the whole record.

The audit's ROC curves are re-read on steps of at least 10 holdout rows (:func:`safe_roc`), a
true-positive rate at a low false-positive rate is withheld where it rests on fewer than 10 rows
(:func:`safe_low_fpr_tpr`), and :func:`safe_record` passes every count of the record through the
count rules of :mod:`engine.disclosure.counts`. Kept apart from those rules because it knows the
shape of ``audit.json`` (docs/contracts.md), which they do not.

References: ACRO (AI-SDC/ACRO) default rules; docs/contracts.md (audit.json keys, last paragraph).

Example:
    >>> audit_sizes(397, 0.2)
    (318, 79)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.disclosure.counts import (
    THRESHOLD,
    finite,
    safe_note,
    safe_total,
    small_count,
)

NOT_SHOWN_HOLDOUT = f"not shown: fewer than {THRESHOLD} holdout rows"
NOT_SHOWN_MEMBERS = f"not shown: fewer than {THRESHOLD} training rows"


def audit_sizes(rows: Any, holdout_fraction: Any) -> tuple[int, int] | None:
    """(members, non-members) of the audit's split, as :mod:`engine.privacy.audit` draws it.

    Example:
        >>> audit_sizes(397, 0.2)
        (318, 79)
    """
    n, frac = finite(rows), finite(holdout_fraction)
    if n is None or frac is None:
        return None
    n_hold = max(2, int(round(n * frac)))
    return int(n) - n_hold, n_hold


def safe_low_fpr_tpr(tpr: Any, fpr_level: float, members: int, non_members: int) -> Any:
    """A TPR at a low false-positive rate, or why it is withheld: fewer than 10 holdout rows
    make up that rate, or the members it catches are 1-9 rows.

    Example:
        >>> safe_low_fpr_tpr(0.2, 0.01, 8000, 2000), safe_low_fpr_tpr(0.2, 0.01, 320, 80)
        (0.2, 'not shown: fewer than 10 holdout rows')
    """
    if fpr_level * non_members < THRESHOLD:
        return NOT_SHOWN_HOLDOUT
    value = finite(tpr)
    if value is not None and 0 < value * members < THRESHOLD:
        return NOT_SHOWN_MEMBERS
    return tpr


def safe_roc(
    fpr: Sequence[float] | np.ndarray,
    tpr: Sequence[float] | np.ndarray,
    members: int,
    non_members: int,
    points: int = 50,
) -> tuple[list[float], list[float]]:
    """An ROC curve re-read on equal false-positive-rate steps of at least 10 holdout rows,
    then thinned so that every rise of the true-positive rate between two shown points is 0 or
    at least 10 members. Starts at (0, 0) and ends at (1, 1), which say nothing about anyone.

    Example:
        >>> f, t = safe_roc([0, .001, .5, 1], [.014, .014, .7, 1], members=320, non_members=80)
        >>> len(f), f[1] * 80, min(b - a for a, b in zip(t, t[1:])) * 320 >= 10
        (9, 10.0, True)
    """
    f, t = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
    order = np.argsort(f, kind="stable")
    steps = max(1, min(points, non_members // THRESHOLD))
    grid = np.linspace(0.0, 1.0, steps + 1)
    read = np.interp(grid, f[order], t[order]) if len(f) else grid.copy()
    read[0], read[-1] = 0.0, 1.0
    read = np.maximum.accumulate(read)
    keep_f, keep_t = [0.0], [0.0]
    for x, y in zip(grid[1:-1], read[1:-1], strict=True):
        rise = (y - keep_t[-1]) * members
        if rise < 1e-9 or rise >= THRESHOLD - 1e-9:
            keep_f.append(float(x))
            keep_t.append(float(y))
    while len(keep_t) > 1 and 1e-9 < (1.0 - keep_t[-1]) * members < THRESHOLD - 1e-9:
        keep_f.pop()
        keep_t.pop()
    return keep_f + [1.0], keep_t + [1.0]


def safe_audit(block: dict[str, Any]) -> dict[str, Any]:
    """The ``audit`` block of ``audit.json`` with every ROC curve on :func:`safe_roc` and the
    low-FPR TPRs through :func:`safe_low_fpr_tpr` (sizes from ``rows_audited``)."""
    sizes = audit_sizes(block.get("rows_audited"), block.get("holdout_fraction", 0.2))
    if sizes is None:
        return block
    members, non_members = sizes
    curve = []
    for point in block.get("curve") or []:
        p = dict(point)
        for key, level in (("tpr_at_1pct_fpr", 0.01), ("tpr_at_01pct_fpr", 0.001)):
            if key in p:
                p[key] = safe_low_fpr_tpr(p[key], level, members, non_members)
        roc = p.get("roc")
        if isinstance(roc, dict) and "fpr" in roc and "tpr" in roc:
            f, t = safe_roc(roc["fpr"], roc["tpr"], members, non_members)
            p["roc"] = {**roc, "fpr": f, "tpr": t}
        curve.append(p)
    return {**block, "curve": curve, "n_members": members, "n_holdout": non_members}


_COUNT_KEYS = frozenset(
    {"n", "n_events", "n_dropped", "at_risk", "records_with_lower_w", "at_risk_before"}
    | {"at_risk_after", "real_missing", "synth_missing"}
)


def _counts(obj: Any) -> Any:
    """Walk a record and pass every count-valued key through :func:`small_count`."""
    if isinstance(obj, dict):
        return {
            k: small_count(v) if k in _COUNT_KEYS and finite(v) is not None else _counts(v)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_counts(v) for v in obj]
    return obj


def safe_record(doc: dict[str, Any]) -> dict[str, Any]:
    """``audit.json`` under the disclosure rules: small counts as ``"< 10"`` (rows dropped,
    missing values per column, clipped values, model n/events, records at risk, notes), and
    totals that a subtraction would turn into a small count withheld.

    Example:
        >>> doc = {"input": {"rows": 400, "rows_selected": 400, "rows_used": 397,
        ...        "rows_dropped": {"rows_in": 400, "rows_used": 397, "rows_dropped": 3,
        ...        "missing_by_column": {"sbp": 3}}, "notes": []},
        ...        "release": {"clipped": {"age": 25, "sbp": 1}}}
        >>> out = safe_record(doc)
        >>> out["input"]["rows"], out["input"]["rows_dropped"]["missing_by_column"]["sbp"]
        ('< 10 more than the rows used', '< 10')
        >>> out["release"]["clipped"]
        {'age': 25, 'sbp': '< 10'}
    """
    out = _counts(dict(doc))
    inp = dict(out.get("input") or {})
    if inp:
        used = inp.get("rows_used")
        for key in ("rows", "rows_selected"):
            if key in inp:
                inp[key] = safe_total(inp[key], used)
        dropped = dict(inp.get("rows_dropped") or {})
        if dropped:
            if "rows_in" in dropped:
                dropped["rows_in"] = safe_total(dropped["rows_in"], used)
            if "rows_dropped" in dropped:
                dropped["rows_dropped"] = small_count(dropped["rows_dropped"])
            missing = dropped.get("missing_by_column") or {}
            dropped["missing_by_column"] = {k: small_count(v) for k, v in missing.items()}
            inp["rows_dropped"] = dropped
        inp["notes"] = [safe_note(str(n)) for n in inp.get("notes") or []]
        out["input"] = inp
    release = dict(out.get("release") or {})
    if isinstance(release.get("clipped"), dict):
        release["clipped"] = {k: small_count(v) for k, v in release["clipped"].items()}
        out["release"] = release
    if isinstance(out.get("audit"), dict):
        out["audit"] = safe_audit(out["audit"])
    return out
