"""Small tests on a column's values that the kind rules share: whole numbers, decimal places,
and a sort that tolerates mixed types.

Kept apart so that :mod:`engine.columns.identifiers`, :mod:`engine.columns.kinds` and
:mod:`engine.columns.schema` use one definition each (a column is "whole numbers" by one rule).

References: METHOD.md section 2 (kinds decide how a column is modelled).

Example:
    >>> import pandas as pd
    >>> all_whole(pd.Series([1.0, 2.0])), decimal_places(pd.Series([1.25, 3.5])), sorted_values([2, "a", 1])
    (True, 2, [1, 2, 'a'])
"""

from __future__ import annotations

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
