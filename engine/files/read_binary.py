"""Typed table formats: Parquet (pyarrow) and the statistics files SAS, SPSS and Stata (pyreadstat).

These files store each column's type, so nothing is re-typed from text; what they say about a
column beyond its values (variable and value labels, SPSS user-missing codes, measure, display
format) is kept in a :class:`ColumnMeta` for the schema and the export. SPSS user-missing values
are read (``user_missing=True``) and then set to missing with a note, never silently lost. A
module of its own because the readers and the metadata they return belong together.

References: docs/pitfalls.md "Data import" (``pd.read_sas`` bytes and XPORT v5; SPSS user-missing
codes); pyreadstat documentation.

Example:
    >>> ColumnMeta("Sex", {1: "F", 2: "M"}).to_dict()["value_labels"]
    {'1': 'F', '2': 'M'}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import InputError
from engine.files.names import name_columns
from engine.files.read_text import (
    code_strings,
    integers_if_whole,
    mask_numeric_codes,
    note_codes,
    one_line,
)


@dataclass(frozen=True)
class ColumnMeta:
    """What a statistics file says about one column (labels, user-missing codes, formats)."""

    variable_label: str | None = None
    value_labels: dict[Any, str] | None = None
    user_missing: tuple[Any, ...] | None = None
    measure: str | None = None
    display_format: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dictionary (JSON-friendly keys as text)."""
        labels = (
            None if self.value_labels is None else {str(k): v for k, v in self.value_labels.items()}
        )
        return {
            "variable_label": self.variable_label,
            "value_labels": labels,
            "user_missing": None if self.user_missing is None else list(self.user_missing),
            "measure": self.measure,
            "display_format": self.display_format,
        }


def read_binary(
    path: Path, fmt: str, notes: list[str]
) -> tuple[pd.DataFrame, dict[str, ColumnMeta]]:
    """Parquet via pyarrow; SAS/SPSS/Stata via pyreadstat with their metadata."""
    try:
        if fmt == "parquet":
            return _read_parquet(path), {}
        return _read_stat(path, fmt, notes)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file for the user
        kind = {
            "parquet": "Parquet",
            "sas7bdat": "SAS",
            "xpt": "SAS transport (XPORT)",
            "sav": "SPSS",
            "dta": "Stata",
        }[fmt]
        raise InputError(
            f"{path.name}: cannot be read as a {kind} file ({one_line(exc)}); "
            "check that the file is complete and not damaged."
        ) from None


def _read_parquet(path: Path) -> pd.DataFrame:
    """Parquet with a duplicate-name check on the file's own schema."""
    import pyarrow.parquet as pq

    names = [str(n) for n in pq.read_schema(path).names if not str(n).startswith("__index_level_")]
    name_columns(path, names, [])
    frame = pq.read_table(path).to_pandas()
    if not isinstance(frame.index, pd.RangeIndex):
        frame = frame.reset_index(drop=True)
    return frame


def _read_stat(
    path: Path, fmt: str, notes: list[str]
) -> tuple[pd.DataFrame, dict[str, ColumnMeta]]:
    """pyreadstat readers; SPSS user-missing values become NaN but are recorded in the metadata."""
    import pyreadstat

    readers: dict[str, Callable[..., tuple[pd.DataFrame, Any]]] = {
        "sas7bdat": pyreadstat.read_sas7bdat,
        "xpt": pyreadstat.read_xport,
        "sav": pyreadstat.read_sav,
        "dta": pyreadstat.read_dta,
    }
    kwargs: dict[str, Any] = {"dates_as_pandas_datetime": True}
    if fmt == "sav":
        kwargs["user_missing"] = True
    frame, meta = readers[fmt](str(path), **kwargs)
    labels = getattr(meta, "column_names_to_labels", {}) or {}
    value_labels = getattr(meta, "variable_value_labels", {}) or {}
    measures = getattr(meta, "variable_measure", {}) or {}
    formats = getattr(meta, "original_variable_types", {}) or {}
    ranges = getattr(meta, "missing_ranges", {}) or {}
    out: dict[str, ColumnMeta] = {}
    for col in frame.columns:
        user = _user_missing(ranges.get(col))
        if user:
            frame[col] = _drop_user_missing(col, frame[col], ranges[col], notes)
        measure = measures.get(col)
        out[str(col)] = ColumnMeta(
            labels.get(col) or None,
            dict(value_labels[col]) if col in value_labels else None,
            user,
            None if measure in (None, "unknown") else measure,
            formats.get(col),
        )
    frame = frame.apply(lambda s: s.where(s != "", None) if s.dtype == object else s)
    for col in frame.columns:
        if frame[col].dtype.kind == "f":
            frame[col] = integers_if_whole(frame[col])
    return frame, out


def _user_missing(spec: list[dict[str, Any]] | None) -> tuple[Any, ...] | None:
    """SPSS missing ranges as a tuple: single codes as values, ranges as (lo, hi)."""
    if not spec:
        return None
    return tuple(r["lo"] if r["lo"] == r["hi"] else (r["lo"], r["hi"]) for r in spec)


def _drop_user_missing(
    col: str, s: pd.Series, spec: list[dict[str, Any]], notes: list[str]
) -> pd.Series:
    """Values inside an SPSS missing range become NaN; count them in a note."""
    hit = pd.Series(False, index=s.index)
    for r in spec:
        if pd.api.types.is_numeric_dtype(s):
            hit |= (s >= r["lo"]) & (s <= r["hi"])
        else:
            hit |= s.isin({r["lo"], r["hi"]})
    if hit.any():
        codes = ", ".join(str(v) for v in sorted(s[hit].unique(), key=str))
        notes.append(
            f"column '{col}': {int(hit.sum())} SPSS user-missing values ({codes}) set to missing"
        )
        s = s.where(~hit, np.nan if pd.api.types.is_numeric_dtype(s) else None)
    return s


def apply_typed_codes(
    frame: pd.DataFrame, codes: Sequence[str | float], notes: list[str]
) -> pd.DataFrame:
    """Typed formats: user missing codes (numbers in numeric columns, text in text columns)."""
    if not codes:
        return frame
    code_text = code_strings(codes)
    for col in frame.columns:
        s = frame[col]
        if s.dtype == object or pd.api.types.is_string_dtype(s):
            hit = s.astype(str).str.strip().isin(code_text) & s.notna()
            if hit.any():
                note_codes(str(col), int(hit.sum()), notes)
                frame[col] = s.where(~hit, None)
        else:
            frame[col] = mask_numeric_codes(str(col), s, codes, notes)
    return frame
