"""Disclosure rules for everything that leaves the secure environment (CONTRACTS.md, last paragraph).

One threshold (:data:`THRESHOLD` = 10, the ACRO default) and the rules built on it, used by the
PDF (:mod:`engine.report.data` re-exports them), ``audit.json``, ``README.txt`` and the release:

* counts: a count from the real data below 10 (zero included) is shown as ``"< 10"``
  (:func:`safe_count` for text, :func:`small_count` for JSON), and a total is withheld when a
  subtraction of two shown totals would reveal a small count (:func:`safe_total`);
* Kaplan-Meier: curves of real data are read on :func:`coarse_km_grid`, whose every step holds
  0 or at least 10 real events and which ends (rounded down) where 10 real records remain;
* bounds: a column's default range is its 10th smallest to 10th largest real value
  (:func:`safe_bounds`), so no synthetic value reproduces a real extreme held by fewer than 10;
* exact copies: synthetic rows equal to a real row on every column are counted, and those that
  copy a record unique in the real data get fresh noise (:func:`redraw_unique_copies`);
* :func:`safe_record` applies the count rules to the whole ``audit.json`` record.

References:
    ACRO (AI-SDC/ACRO) default rules: threshold 10, zeros suppressed; Griffiths et al. (2019)
    "Handbook on Statistical Disclosure Control for Outputs", frequency tables, graphs and
    "dominance"/extreme values; main paper eq. 12 (Latent Noise Injection).

Example:
    >>> safe_count(3), small_count(3), small_count(12), safe_bounds(range(100))
    ('< 10', '< 10', 12, (9.0, 90.0))
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

THRESHOLD = 10
NOT_AVAILABLE = "not available"
SMALL = f"< {THRESHOLD}"
REDRAW_TRIES = 20


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else None.

    Example:
        >>> finite("0.5"), finite(float("nan")), finite(None)
        (0.5, None, None)
    """
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def safe_count(n: Any, threshold: int = THRESHOLD) -> str:
    """A count for text: ``"< 10"`` below the threshold (zero included), else with commas.

    Example:
        >>> safe_count(9), safe_count(10), safe_count(None), safe_count(12345)
        ('< 10', '10', 'not available', '12,345')
    """
    value = finite(n)
    if value is None:
        return NOT_AVAILABLE
    if value < threshold:
        return f"< {threshold}"
    return f"{int(round(value)):,}"


def small_count(n: Any) -> int | str | None:
    """A count for JSON: the integer when at least 10, else ``"< 10"`` (None stays None).

    Example:
        >>> small_count(0), small_count(9), small_count(10.0), small_count(None)
        ('< 10', '< 10', 10, None)
    """
    value = finite(n)
    if value is None:
        return None
    return SMALL if value < THRESHOLD else int(round(value))


def safe_total(total: Any, shown: Any) -> int | str | None:
    """``total`` unless ``total - shown`` is a count of 1-9 that the two figures would reveal.

    ``shown`` is a figure printed elsewhere (e.g. rows used, which the synthetic file's length
    reveals anyway). A difference of 0 is kept: it says every row was used, nothing about anyone.

    Example:
        >>> safe_total(400, 397), safe_total(400, 400), safe_total(420, 400)
        ('< 10 more than the rows used', 400, 420)
    """
    t, s = finite(total), finite(shown)
    if t is None:
        return None
    if s is not None and 0 < t - s < THRESHOLD:
        return f"{SMALL} more than the rows used"
    return int(round(t))


def safe_total_text(total: Any, shown: Any) -> str:
    """:func:`safe_total` for text: ``"12,345"`` or ``"< 10 more than the rows used"``.

    Example:
        >>> safe_total_text(12345, 12340), safe_total_text(12345, 12000)
        ('< 10 more than the rows used', '12,345')
    """
    value = safe_total(total, shown)
    return value if isinstance(value, str) else safe_count(value)


def safe_note(note: str) -> str:
    """A note for the record with every count of 1-9 things written as ``"< 10"``.

    Example:
        >>> safe_note("column 'x': 3 cells with a missing code set to missing")
        "column 'x': < 10 cells with a missing code set to missing"
    """
    return re.sub(
        r"(?<![\w.'])(\d+)(?= (?:cells|rows|formula|SPSS|infinite|values|records))",
        lambda m: str(small_count(int(m.group(1)))),
        note,
    )


# ------------------------------------------------------------------------------ bounds


def safe_bounds(values: Any, k: int = THRESHOLD) -> tuple[float | None, float | None]:
    """The k-th smallest and k-th largest value (k = 10), so at least k real rows lie at or
    beyond each bound. With fewer than 2k values (not reachable for a synthesized column, which
    needs 50 complete rows) the range shrinks to the middle value(s).

    Example:
        >>> safe_bounds([21] + [50] * 30 + [18]), safe_bounds([1.0, 2.0, 3.0]), safe_bounds([])
        ((50.0, 50.0), (2.0, 2.0), (None, None))
    """
    v = np.sort(pd.to_numeric(pd.Series(values), errors="coerce").dropna().to_numpy(float))
    if v.size == 0:
        return None, None
    k = min(k, (v.size + 1) // 2)
    return float(v[k - 1]), float(v[v.size - k])


def safe_quantile(values: Any, q: float, k: int = THRESHOLD) -> float | None:
    """The ``q`` quantile, pulled in to the k-th smallest / k-th largest value where fewer than
    k rows lie at or beyond it (a 5th percentile of 150 rows lies beyond only 7 of them), so at
    least k real rows lie at or beyond every value shown. None with fewer than 2k values.

    Example:
        >>> v = np.arange(150.0)
        >>> float(np.quantile(v, 0.05)), safe_quantile(v, 0.05), safe_quantile(v, 0.5)
        (7.45, 9.0, 74.5)
    """
    v = np.sort(pd.to_numeric(pd.Series(values), errors="coerce").dropna().to_numpy(float))
    if v.size < 2 * k:
        return None
    x = float(np.quantile(v, q))
    return float(min(max(x, v[k - 1]), v[v.size - k]))


def suppressed_levels(counts: dict[Any, int]) -> set[Any]:
    """Levels whose count is not shown: those held by 1-9 rows, plus (secondary suppression) the
    smallest shown level(s) while the hidden levels add up to 1-9 rows, since the total minus
    the shown counts (or 100 % minus the shown shares) would reveal them.

    Example:
        >>> sorted(suppressed_levels({"A": 200, "B": 193, "C": 4}))
        ['B', 'C']
        >>> sorted(suppressed_levels({"A": 200, "B": 3, "C": 8})), suppressed_levels({"A": 5})
        (['B', 'C'], {'A'})
    """
    hidden = {lv for lv, n in counts.items() if 0 < n < THRESHOLD}
    shown = sorted((n, str(lv), lv) for lv, n in counts.items() if lv not in hidden and n > 0)
    while hidden and 0 < sum(counts[lv] for lv in hidden) < THRESHOLD and shown:
        hidden.add(shown.pop(0)[2])
    return hidden


# ------------------------------------------------------------------------------ membership audit

NOT_SHOWN_HOLDOUT = f"not shown: fewer than {THRESHOLD} holdout rows"
NOT_SHOWN_MEMBERS = f"not shown: fewer than {THRESHOLD} training rows"
NOT_SHOWN_GROUP = f"not shown: fewer than {THRESHOLD} people in this group"


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


# ------------------------------------------------------------------------------ Kaplan-Meier


def nice_floor(x: float) -> float:
    """Round ``x`` down to 2 significant digits so no plotted time equals an individual's.

    Example:
        >>> nice_floor(17.26), nice_floor(0.0)
        (17.0, 0.0)
    """
    if x <= 0 or not math.isfinite(x):
        return 0.0
    step = 10 ** (math.floor(math.log10(x)) - 1)
    return float(round(math.floor(x / step) * step, 12))


def coarse_km_grid(time: np.ndarray, event: np.ndarray, *, intervals: int = 12) -> np.ndarray:
    """Grid times from 0 to where >= 10 real records are still at risk (rounded down).

    Starts with ``intervals`` equal steps; an interval holding 1-9 real events is merged with the
    next one, so every drop of the real curve read on it reflects 0 or at least 10 events. The
    last point is the 10th largest time rounded down to 2 significant digits, not one patient's.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> t = rng.exponential(10, 500); e = rng.random(500) < 0.5
        >>> g = coarse_km_grid(t, e)
        >>> counts = np.histogram(t[e], bins=g)[0]
        >>> bool(g[0] == 0 and ((counts == 0) | (counts >= 10)).all())
        True
    """
    order = np.sort(np.asarray(time, dtype=float))
    if len(order) < THRESHOLD:
        return np.array([0.0])
    end = nice_floor(float(order[len(order) - THRESHOLD]))
    if end <= 0:
        return np.array([0.0])
    edges = list(np.linspace(0.0, end, intervals + 1))
    ev = np.sort(np.asarray(time, dtype=float)[np.asarray(event).astype(bool)])
    i = 1
    while i < len(edges):
        n = int(np.searchsorted(ev, edges[i], "right") - np.searchsorted(ev, edges[i - 1], "right"))
        if 0 < n < THRESHOLD:
            del edges[i]  # merge with the next interval (at the end: stop earlier)
            continue
        i += 1
    return np.array(edges, dtype=float)


# ------------------------------------------------------------------------------ exact copies


def _row_keys(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    """One hash per row over ``columns`` (values compared as text, so 1 and 1.0 differ only
    when the dtypes differ; synthetic columns are decoded to the real dtypes)."""
    return pd.util.hash_pandas_object(frame[columns].astype(str), index=False)


def copy_masks(real: pd.DataFrame, synth: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(equal to any real row, equal to a real row that is unique in the real table) per
    synthetic row, over the real table's columns.

    Example:
        >>> r = pd.DataFrame({"a": [1, 1, 2], "b": ["x", "x", "y"]})
        >>> s = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "y"]})
        >>> [m.tolist() for m in copy_masks(r, s)]
        [[True, True, False], [False, True, False]]
    """
    columns = [str(c) for c in real.columns]
    real_counts = _row_keys(real, columns).value_counts()
    keys = _row_keys(synth, columns)
    held = keys.map(real_counts).fillna(0).to_numpy()
    return held > 0, held == 1


@dataclass(frozen=True)
class CopyCheck:
    """Exact copies before and after the redraw, and how many rows got fresh noise."""

    of_any_real_row: int
    of_unique_real_row: int
    redrawn: int
    of_any_real_row_after: int
    of_unique_real_row_after: int
    tries: int

    @classmethod
    def total(cls, checks: Sequence[CopyCheck]) -> CopyCheck:
        """The counts of several released copies added up (the tries: the most any copy took)."""
        names = ("of_any_real_row", "of_unique_real_row", "redrawn")
        sums = {n: sum(getattr(c, n) for c in checks) for n in names}
        after = {f"{n}_after": sum(getattr(c, f"{n}_after") for c in checks) for n in names[:2]}
        return cls(**sums, **after, tries=max(c.tries for c in checks))

    def to_dict(self) -> dict[str, Any]:
        """For ``audit.json``: every count through :func:`small_count`."""
        return {
            "of_any_real_row": small_count(self.of_any_real_row),
            "of_unique_real_row": small_count(self.of_unique_real_row),
            "redrawn": small_count(self.redrawn),
            "of_any_real_row_after": small_count(self.of_any_real_row_after),
            "of_unique_real_row_after": small_count(self.of_unique_real_row_after),
            "none_copies_a_unique_real_row": self.of_unique_real_row_after == 0,
            "rule": "rows equal to a record unique in the real data get fresh noise (up to "
            f"{REDRAW_TRIES} tries; in the last {REDRAW_TRIES - REDRAW_TRIES // 2} at w = 0)",
        }


def redraw_unique_copies(
    synth_model: np.ndarray,
    redraw: Callable[[np.ndarray, bool], np.ndarray],
    decode: Callable[[np.ndarray], pd.DataFrame],
    real: pd.DataFrame,
    *,
    tries: int = REDRAW_TRIES,
) -> tuple[np.ndarray, CopyCheck]:
    """Give fresh noise to the synthetic rows that copy a unique real row, at most ``tries``
    times. ``redraw(rows, last_resort)`` returns new model-space rows for those row indices (the
    release's own noise injection of their real partners; in the second half of the tries
    ``last_resort`` is True and the caller may use more noise); ``decode`` maps model rows to a
    table.

    Example:
        >>> real = pd.DataFrame({"a": [0, 1, 2]})
        >>> decode = lambda m: pd.DataFrame({"a": np.floor(m[:, 0]).astype(int)})
        >>> fresh = lambda rows, last_resort: np.full((len(rows), 1), 7.5)
        >>> out, check = redraw_unique_copies(np.array([[0.5], [9.5], [2.5]]), fresh, decode, real)
        >>> out[:, 0].tolist(), check.of_unique_real_row, check.of_unique_real_row_after
        ([7.5, 9.5, 7.5], 2, 0)
    """
    out = np.array(synth_model, dtype=float, copy=True)
    any_copy, unique_copy = copy_masks(real, decode(out))
    before_any, before_unique = int(any_copy.sum()), int(unique_copy.sum())
    redrawn: set[int] = set()
    attempt = 0
    while unique_copy.any() and attempt < tries:
        attempt += 1
        rows = np.flatnonzero(unique_copy)
        redrawn.update(rows.tolist())
        out[rows] = redraw(rows, attempt > tries // 2)
        any_copy, unique_copy = copy_masks(real, decode(out))
    check = CopyCheck(
        before_any,
        before_unique,
        len(redrawn),
        int(any_copy.sum()),
        int(unique_copy.sum()),
        attempt,
    )
    return out, check


# ------------------------------------------------------------------------------ audit.json

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


def _in_words(count: Any) -> str:
    return "fewer than 10" if count == SMALL else str(count)


def copies_sentence(copies: dict[str, Any] | None) -> str:
    """Plain words on exact copies for README.txt and the report (from ``CopyCheck.to_dict``).

    Example:
        >>> c = CopyCheck(66, 44, 44, 22, 0, 2).to_dict()
        >>> copies_sentence(c)[:68]
        'No synthetic row is a copy of a record that is unique in the real da'
    """
    if not copies:
        return "Synthetic rows equal to a real row were not counted."
    after = _in_words(copies.get("of_any_real_row_after"))
    if copies.get("none_copies_a_unique_real_row"):
        text = (
            "No synthetic row is a copy of a record that is unique in the real data (the "
            f"{_in_words(copies.get('redrawn'))} rows that matched one were generated again with "
            f"fresh noise). {after[:1].upper() + after[1:]} rows equal, on every column, a "
            "combination of values that two or more real people share."
        )
    else:
        text = (
            f"{_in_words(copies.get('of_unique_real_row_after'))} synthetic rows are exact copies "
            "of a record that is unique in the real data (fresh noise did not change them); "
            f"{after} rows equal a real row on every column."
        )
    return text
