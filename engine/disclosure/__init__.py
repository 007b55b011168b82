"""Disclosure rules for everything that leaves the secure environment (docs/contracts.md, last
paragraph).

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

The rules live in four small modules, re-exported here so ``engine.disclosure.<name>`` is the
one name callers use:

* :mod:`engine.disclosure.counts`: the threshold, :func:`safe_count`, :func:`small_count`,
  :func:`safe_total`, :func:`suppressed_levels` (what a count may show);
* :mod:`engine.disclosure.ranges`: :func:`safe_bounds`, :func:`safe_quantile`,
  :func:`coarse_km_grid` (where a value read from real data may lie);
* :mod:`engine.disclosure.copies`: :func:`copy_masks`, :func:`redraw_unique_copies`,
  :class:`CopyCheck` (exact copies of real rows);
* :mod:`engine.disclosure.record`: :func:`safe_roc`, :func:`safe_record` (``audit.json``).

References:
    ACRO (AI-SDC/ACRO) default rules: threshold 10, zeros suppressed; Griffiths et al. (2019)
    "Handbook on Statistical Disclosure Control for Outputs", frequency tables, graphs and
    "dominance"/extreme values; main paper eq. 12 (Latent Noise Injection).

Example:
    >>> safe_count(3), small_count(3), small_count(12), safe_bounds(range(100))
    ('< 10', '< 10', 12, (9.0, 90.0))
"""

from __future__ import annotations

from engine.disclosure.copies import (
    REDRAW_TRIES,
    CopyCheck,
    copies_sentence,
    copy_masks,
    redraw_unique_copies,
)
from engine.disclosure.counts import (
    NOT_AVAILABLE,
    NOT_SHOWN_GROUP,
    SMALL,
    THRESHOLD,
    finite,
    safe_count,
    safe_note,
    safe_total,
    safe_total_text,
    small_count,
    suppressed_levels,
)
from engine.disclosure.ranges import (
    coarse_km_grid,
    nice_floor,
    safe_bounds,
    safe_quantile,
)
from engine.disclosure.record import (
    NOT_SHOWN_HOLDOUT,
    NOT_SHOWN_MEMBERS,
    audit_sizes,
    safe_audit,
    safe_low_fpr_tpr,
    safe_record,
    safe_roc,
)

__all__ = [
    "CopyCheck",
    "NOT_AVAILABLE",
    "NOT_SHOWN_GROUP",
    "NOT_SHOWN_HOLDOUT",
    "NOT_SHOWN_MEMBERS",
    "REDRAW_TRIES",
    "SMALL",
    "THRESHOLD",
    "audit_sizes",
    "coarse_km_grid",
    "copies_sentence",
    "copy_masks",
    "finite",
    "nice_floor",
    "redraw_unique_copies",
    "safe_audit",
    "safe_bounds",
    "safe_count",
    "safe_low_fpr_tpr",
    "safe_note",
    "safe_quantile",
    "safe_record",
    "safe_roc",
    "safe_total",
    "safe_total_text",
    "small_count",
    "suppressed_levels",
]
