"""Decoded codes and numbers back to a column's own labels and dtype (the table encoder and the
formal-DP encoder share these).

Example:
    >>> from types import SimpleNamespace
    >>> col = SimpleNamespace(labels=("F", "M"), dtype=np.dtype(object))
    >>> restore_labels(np.array([1, 0]), col).tolist()
    ['M', 'F']
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pandas as pd


class Restorable(Protocol):
    """What the restore helpers read (a :class:`ColumnTransform` or the DP encoder's view)."""

    @property
    def labels(self) -> tuple[Any, ...] | None: ...

    @property
    def dtype(self) -> Any: ...


def restore_labels(codes: np.ndarray, col: Restorable) -> pd.Series:
    """Codes -> the original labels with the original dtype."""
    assert col.labels is not None  # only called for label kinds
    labels = np.empty(len(col.labels), dtype=object)
    labels[:] = list(col.labels)
    values = labels[np.asarray(codes, dtype=np.int64)]
    if isinstance(col.dtype, pd.CategoricalDtype):
        return pd.Series(pd.Categorical(values, dtype=col.dtype))
    return pd.Series(values, dtype=object).astype(col.dtype)


def restore_number(v: np.ndarray, col: Restorable, *, whole: bool) -> pd.Series:
    """Numbers back to the original dtype; whole-number kinds become int64 when they were floats."""
    kind = (
        np.dtype(col.dtype).kind
        if not isinstance(col.dtype, pd.api.extensions.ExtensionDtype)
        else "x"
    )
    if kind in "iu" or (whole and kind == "f"):
        target = col.dtype if kind in "iu" else np.dtype("int64")
        return pd.Series(np.round(v).astype(target))
    if kind == "f":
        return pd.Series(v.astype(col.dtype))
    return pd.Series(np.round(v) if whole else v).astype(col.dtype)
