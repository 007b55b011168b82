"""Small tests on a column's values that the kind rules share: whole numbers, decimal places,
and a sort that tolerates mixed types.

Kept apart so that :mod:`engine.columns.identifiers`, :mod:`engine.columns.kinds` and
:mod:`engine.columns.schema` use one definition each (a column is "whole numbers" by one rule).

References: docs/method.md section 2 (kinds decide how a column is modelled).

Example:
    >>> import pandas as pd
    >>> all_whole(pd.Series([1.0, 2.0])), decimal_places(pd.Series([1.25, 3.5]))
    (True, 2)
    >>> sorted_values([2, "a", 1])
    [1, 2, 'a']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from engine.disclosure import THRESHOLD

# The one level every rare coded category is merged into (:mod:`engine.columns.codes`); here, below
# both rooms, because the writers label it too.
OTHER = f"other (fewer than {THRESHOLD})"

MAX_DECIMALS = 6


def all_whole(present: pd.Series) -> bool:
    """All values are whole numbers."""
    if pd.api.types.is_bool_dtype(present) or not pd.api.types.is_numeric_dtype(present):
        return False
    v = present.to_numpy(dtype="float64")
    return bool(np.all(np.isfinite(v)) and np.all(v == np.round(v)))


def decimal_places(s: pd.Series) -> int:
    """Most decimal places seen in a numeric column (0 for whole numbers, cap 6)."""
    v = s.dropna().to_numpy(dtype="float64")
    v = v[np.isfinite(v)]
    unresolved = v
    for k in range(MAX_DECIMALS + 1):
        unresolved = unresolved[
            np.abs(np.round(unresolved, k) - unresolved) > 1e-9 * np.maximum(1, np.abs(unresolved))
        ]
        if unresolved.size == 0:
            return k
    return MAX_DECIMALS


def sorted_values(values: Any) -> list[Any]:
    """Sorted values; mixed types sort by their text."""
    vals = list(values)
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=str)


def other_code(codes: Any) -> int:
    """The number that stands for :data:`OTHER` in a written file: the first of 9, 99, 999, ...
    above every real code of the column (the merged rare ones too, so it is never a real code).

    Example:
        >>> other_code([1, 2, 3, 4]), other_code([1, 9]), other_code([101, 112])
        (9, 99, 999)
    """
    found = pd.to_numeric(pd.Series(list(codes), dtype=object), errors="coerce").dropna()
    high = float(found.max()) if len(found) else 0.0
    code = 9
    while code <= high:
        code = code * 10 + 9
    return code


def numeric_codes(
    frame: pd.DataFrame, codes: Mapping[str, int | None], *, nullable: bool = True
) -> pd.DataFrame:
    """``frame`` with each coded column of ``codes`` (text codes "1", "2", ..., and
    :data:`OTHER`; :mod:`engine.columns.codes`) written back as the numbers it came as, the
    merged level as its code (``codes[name]``, :func:`other_code`).

    Why a number and not a missing value: an analyst in R, Stata or pandas who writes
    ``txgrp == 3`` expects the column to be numeric as in the real table; a missing value would
    mix the merged group with the real missing values and drop it from every complete-case
    model, while a code above every real code, as survey data code "other" (9, 99, ...), keeps
    it a group of its own, explained in README.txt and labelled in SPSS, Stata and Parquet
    files. The rare real codes themselves never appear (the disclosure rule: no group under 10
    is shown). Whole numbers become ``Int64`` (``nullable``; missing values stay empty) or
    ``float64`` for the labelled writers. A column that is not all codes is left as it is.

    Example:
        >>> f = pd.DataFrame({"txgrp": ["1", "3", OTHER, None]})
        >>> numeric_codes(f, {"txgrp": 9})["txgrp"].tolist()
        [1, 3, 9, <NA>]
    """
    out = frame.copy(deep=False)
    for name, code in codes.items():
        if name not in out.columns:
            continue
        text = out[name].astype(object)
        merged = text == OTHER
        numbers = pd.to_numeric(text.where(~merged), errors="coerce")
        if not (numbers.notna() | merged | text.isna()).all() or (merged.any() and code is None):
            continue
        finite = numbers.dropna().to_numpy(dtype="float64")
        if not np.all(finite == np.round(finite)):
            continue
        values = numbers.where(~merged, float(code or 0)).astype("float64")
        out[name] = values.astype("Int64") if nullable else values
    return out


def with_other_labels(
    column_meta: Mapping[str, Any], codes: Mapping[str, int | None]
) -> dict[str, Any]:
    """``column_meta`` with the value label :data:`OTHER` on each merged level's code (SPSS,
    Stata and Parquet files carry it; README.txt says it for CSV and Excel)."""
    out: dict[str, Any] = dict(column_meta)
    for name, code in codes.items():
        if code is None:
            continue
        meta = out.get(name)
        labels = dict(_field(meta, "value_labels") or {})
        label = _field(meta, "variable_label")
        out[name] = {"variable_label": label, "value_labels": {**labels, code: OTHER}}
    return out


def _field(meta: Any, name: str) -> Any:
    """``name`` of a column description given as a dict or an object (None when absent)."""
    if isinstance(meta, Mapping):
        return meta.get(name)
    return getattr(meta, name, None)
