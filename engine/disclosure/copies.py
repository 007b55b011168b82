"""Exact copies: synthetic rows equal to a real row on every column.

They are counted (:func:`copy_masks`), and those that copy a record unique in the real data get
fresh noise (:func:`redraw_unique_copies`) until none is left or the tries run out; the result is
a :class:`CopyCheck` (``audit.json["release"]["exact_copies"]``), told in plain words by
:func:`copies_sentence` for ``README.txt`` and the report. A module of its own because it is the
only disclosure rule that changes the released rows rather than what is shown of them.

References: main paper eq. 12 (Latent Noise Injection); ACRO default threshold (counts shown).

Example:
    >>> r = pd.DataFrame({"a": [1, 1, 2]})
    >>> [m.tolist() for m in copy_masks(r, pd.DataFrame({"a": [1, 2, 3]}))]
    [[True, True, False], [False, True, False]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.disclosure.counts import SMALL, small_count

REDRAW_TRIES = 20
KEY_ROWS = 100_000  # rows turned into text at a time (issue 31: peak memory on a million rows)


def _as_text(column: pd.Series) -> pd.Series:
    """``column.astype(str)``, each distinct value turned into text once (issue 31: a million
    rows x 10 columns made 10 million strings, 6.5 of the 8 s of the copy check); the same
    strings. Numbers, flags and pure text only; other columns (dates, mixed objects, whose
    text may depend on the whole column or on a value's type) as before."""
    numeric = pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)
    plain = isinstance(column.dtype, np.dtype)  # not a pandas extension dtype
    if len(column) < KEY_ROWS // 10 or not plain or not (numeric or column.dtype == object):
        return column.astype(str)
    distinct: Any
    if column.dtype.kind == "f":  # by bit pattern: -0.0 and 0.0 read differently
        values = column.to_numpy()
        codes, bits = pd.factorize(values.view(f"i{values.dtype.itemsize}"))
        distinct = bits.view(values.dtype)
    else:
        codes, distinct = pd.factorize(column, use_na_sentinel=False)
    if column.dtype == object and not all(type(v) is str for v in distinct):
        return column.astype(str)
    text = pd.Series(distinct, dtype=column.dtype).astype(str).to_numpy(dtype=object)
    return pd.Series(text[codes], index=column.index, dtype=object, name=column.name)


def _row_keys(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    """One hash per row over ``columns`` (values compared as text, so 1 and 1.0 differ only
    when the dtypes differ; synthetic columns are decoded to the real dtypes)."""
    parts = [  # in blocks: the text of a million rows x 10 columns is 10 million strings
        pd.util.hash_pandas_object(
            pd.DataFrame({c: _as_text(block[c]) for c in columns}, index=block.index),
            index=False,
        )
        for block in (frame[columns].iloc[i : i + KEY_ROWS] for i in range(0, len(frame), KEY_ROWS))
    ]
    return (
        pd.concat(parts)
        if len(parts) > 1
        else (parts[0] if parts else pd.Series([], dtype="uint64"))
    )


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
