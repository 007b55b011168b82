"""Counts from the real data as they may be shown: ``"< 10"`` below the threshold, totals that
would reveal a small count withheld, category levels held by 1-9 rows suppressed.

The threshold (:data:`THRESHOLD` = 10, the ACRO default) and the count rules every other module
of :mod:`engine.disclosure` builds on; kept in one module so that the single number every rule
depends on, and the one meaning of "small", are defined once.

References: ACRO (AI-SDC/ACRO) default rules: threshold 10, zeros suppressed; Griffiths et al.
(2019) "Handbook on Statistical Disclosure Control for Outputs", frequency tables.

Example:
    >>> safe_count(3), small_count(3), small_count(12), safe_total(400, 397)
    ('< 10', '< 10', 12, '< 10 more than the rows used')
"""

from __future__ import annotations

import math
import re
from typing import Any

THRESHOLD = 10
NOT_AVAILABLE = "not available"
SMALL = f"< {THRESHOLD}"
NOT_SHOWN_GROUP = f"not shown: fewer than {THRESHOLD} people in this group"


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
