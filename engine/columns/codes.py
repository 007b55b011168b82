"""Coded categories: numbers that stand for groups, and levels too rare to show.

Clinical exports code categories as numbers (race 1-5, treatment group 1-4, stage 1-4, site
1-12). Read as an integer, such a column was bounded at its 10th-extreme values like a
measurement, so a code held by 7 people was clipped into its neighbour: a different race,
silently (issue 32). Here:

* **the kind** (:func:`code_kind`): whole numbers with 3 to :data:`MAX_CODE_LEVELS` distinct
  values are a *category* unless the name says a count or a measurement (``n_*``, ``count``,
  ``nodes``, ``children``, ``visits``, ``score``, ``age``, ``days``, ... see
  :data:`COUNT_TOKENS`) and, where the name says neither a code nor a count, unless the values
  do not look like codes (:func:`looks_coded`: from 0 or 1 to at most 12, one gap at most; an
  air flow of 50-80 is a measurement). The name also says whether the codes are *ordered*
  (``stage``, ``grade``, ``ecog``, ``nyha``, ``class``, ``severity``: the ordered probit, as before)
  or *unordered* (``race``, ``site``, ``group``, ``arm``, ``treatment``, ``centre``, ``region``,
  ``histology``, ``type``: one indicator per level, :mod:`engine.encoding.nominal`). A code whose
  name says neither stays ordered (the behaviour before). Measured on public tables in
  ``benchmarks/bench_kinds.py`` (its docstring lists the misread columns).
* **rare levels** (:func:`merge_rare`): a level held by fewer than 10 real people (the count
  rule of :mod:`engine.disclosure`) is merged into the explicit level :data:`OTHER`, written as
  such in the synthetic file, the report and ``audit.json``; it is never mapped to another
  real code. Its members are analysed as one group (a model withholds the group's terms when it
  has fewer than 10 people or events, and says so).

A coded column that is unordered or has a merged level is carried as text codes ("1", "2", ...,
"other (fewer than 10)") from the real table to the synthetic file, so every model reads it as a
factor, not as a number on a line.

References: issue 32; synthpop (``syn``: numeric variables with few values treated as factors,
``minnumlevels``) and SDV (``categorical`` sdtype for numeric codes) do the same.

Example:
    >>> import pandas as pd
    >>> race = pd.Series([1] * 40 + [2] * 30 + [3] * 20 + [4] * 12 + [5] * 6, name="race")
    >>> code_kind("race", race)[:2]
    ('categorical', 'numbers coding 5 unordered groups (race)')
    >>> code_kind("nodes", pd.Series([0, 1, 2, 3, 4] * 10)) is None
    True
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from engine.columns.kinds import ColumnSpec
from engine.disclosure import THRESHOLD
from engine.files.names import name_tokens
from engine.files.values import OTHER, other_code

MAX_CODE_LEVELS = 12
# names that say a count or a measurement: whole numbers that stay numbers
COUNT_TOKENS = frozenset(
    (
        "n num number no nr count counts cnt nodes node children child kids visits visit "
        "admissions episodes events score scores scale pain age years year yrs days day weeks week "
        "months month hours dose doses cigs cigarettes packs prior previous times size length "
        "weight height bmi sbp dbp pulse rate hr parity gravida drinks units duration total sum "
        "pnodes prio karno karnofsky apgar gcs qol rank wt ht temp"
    ).split()
)
# parts of a name that say a clinical score or scale, abbreviated as researchers write them
# (karnof, apg1, adlp, scoma1, ...): measured as numbers, not codes
SCORE_PARTS = ("score", "karn", "apg", "adl", "coma", "scale", "count", "index", "size")
ORDERED_TOKENS = frozenset(
    (
        "stage grade ecog nyha class severity tnm gleason level degree ps who ordinal edu educ "
        "education income tgrade tstage likert"
    ).split()
)
UNORDERED_TOKENS = frozenset(
    (
        "race ethnic ethnicity raceth site centre center inst institution hospital group grp arm "
        "arms treatment treat trt rx tx region country state province histology histol type "
        "celltype cell marital occupation job religion study cohort diagnosis dx cause sex gender "
        "strata cluster ward clinic practice insurance language"
    ).split()
)


def code_kind(name: str, present: pd.Series) -> tuple[str, str, tuple[Any, ...], bool] | None:
    """(kind, reason, labels, ordered) when whole-number values code a category, else None.

    ``present`` holds the column's non-missing values (numeric)."""
    tokens = set(name_tokens(name))
    if tokens & COUNT_TOKENS or any(part in t for t in tokens for part in SCORE_PARTS):
        return None
    values = np.unique(present.to_numpy(dtype="float64"))
    if not 3 <= len(values) <= MAX_CODE_LEVELS or not np.all(values == np.round(values)):
        return None
    if values.min() < 0:
        return None
    if not tokens & (UNORDERED_TOKENS | ORDERED_TOKENS) and not looks_coded(values):
        return None
    unordered = bool(tokens & UNORDERED_TOKENS) and not tokens & ORDERED_TOKENS
    labels = tuple(int(v) for v in values)
    word = "unordered groups" if unordered else "ordered levels"
    shown = ", ".join(sorted(tokens & (UNORDERED_TOKENS | ORDERED_TOKENS))) or "few whole values"
    return "categorical", f"numbers coding {len(values)} {word} ({shown})", labels, not unordered


def looks_coded(values: np.ndarray) -> bool:
    """Whether sorted distinct whole values read as codes by themselves (a name that says
    neither a code nor a count): they start at 0 or 1, end by :data:`MAX_CODE_LEVELS`, and
    leave at most one gap (1, 2, 3, 5 yes; an air flow of 50-80, waists of 31-46 inches or
    0-13 subcommittees no). Added after the first measurement on public tables, where 26 of 49
    numbers were read as codes (``benchmarks/bench_kinds.py``).

    Example:
        >>> looks_coded(np.array([1.0, 2, 3, 5])), looks_coded(np.array([50.0, 56, 62, 70, 80]))
        (True, False)
    """
    low, high = float(values[0]), float(values[-1])
    return low in (0.0, 1.0) and high <= MAX_CODE_LEVELS and high - low + 1 <= len(values) + 1


def code_text(value: Any) -> Any:
    """A code as text ("3" for 3 or 3.0); a missing value stays missing."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return value
    if isinstance(value, (int, np.integer)) or (
        isinstance(value, (float, np.floating)) and float(value).is_integer()
    ):
        return str(int(value))
    return str(value)


def merge_rare(spec: ColumnSpec, s: pd.Series) -> ColumnSpec:
    """A categorical spec with its levels held by fewer than 10 real rows merged into
    :data:`OTHER` (labels: the kept levels, then :data:`OTHER`); unchanged otherwise. Coded
    columns that are unordered or merged get text labels (see the module docstring).

    Example:
        >>> s = pd.Series(["a"] * 20 + ["b"] * 15 + ["c"] * 6)
        >>> spec = ColumnSpec("g", "categorical", "synthesize", "text", labels=("a", "b", "c"))
        >>> merged = merge_rare(spec, s); merged.labels, merged.merged
        (('a', 'b', 'other (fewer than 10)'), 1)
    """
    if spec.kind != "categorical" or spec.action != "synthesize" or not spec.labels:
        return spec
    counts = s.dropna().map(code_text if spec.ordered is not None else _same).value_counts()
    labels = [code_text(v) if spec.ordered is not None else v for v in spec.labels]
    rare = [v for v in labels if 0 < counts.get(v, 0) < THRESHOLD]
    kept = [v for v in labels if v not in rare]
    as_text = spec.ordered is False or (spec.ordered is not None and bool(rare))
    if not rare:
        return replace(spec, labels=tuple(labels)) if as_text else spec
    if len(kept) < 1:
        return spec
    reason = (
        f"{spec.reason}; {len(rare)} level{'s' if len(rare) > 1 else ''} held by fewer than "
        f"{THRESHOLD} people merged into '{OTHER}'"
    )
    if spec.ordered is not None and not as_text:  # pragma: no cover - as_text when rare
        kept = [int(v) for v in kept]
    return replace(spec, labels=(*kept, OTHER), merged=len(rare), reason=reason)


def recode(spec: ColumnSpec, s: pd.Series) -> pd.Series:
    """The real column as the spec reads it: codes as text where the spec's labels are text
    codes, levels outside the labels (the merged rare ones) as :data:`OTHER`."""
    if spec.kind != "categorical" or not spec.labels:
        return s
    text_codes = spec.ordered is not None and all(isinstance(v, str) for v in spec.labels)
    if not text_codes and not spec.merged:
        return s
    values = s.map(code_text) if text_codes else s
    known = set(spec.labels)
    out = values.where(values.isna() | values.isin(known), OTHER)
    return out.astype(object)


def _same(value: Any) -> Any:
    return value


def written_codes(schema: Any, real: pd.DataFrame) -> dict[str, int | None]:
    """The coded columns carried as text codes (:func:`merge_rare`), each with the number its
    merged level is written as in the synthetic file (:func:`engine.files.values.other_code`,
    above every real code), or None where no level was merged (issue 44: ``txgrp == 3`` must
    match rows of the written file). ``schema`` is :class:`engine.columns.schema.Schema`."""
    out: dict[str, int | None] = {}
    for c in schema.synthesized():
        if c.kind != "categorical" or c.ordered is None or not c.labels:
            continue
        if not all(isinstance(v, str) for v in c.labels) or c.name not in real.columns:
            continue
        out[c.name] = other_code(real[c.name].dropna().unique()) if c.merged else None
    return out
