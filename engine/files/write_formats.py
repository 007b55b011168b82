"""The export formats, and the writers of the three that carry labels: Parquet, SPSS, Stata.

:data:`FORMATS` names every format :func:`engine.files.write.write_table` writes, and
:func:`synthetic_file_name` the file each gets. Parquet keeps variable and value labels in its
schema metadata; SPSS (``.sav``) and Stata (``.dta``) get them as real labels via pyreadstat, with
text columns whose values are all labels written as labelled codes. The spreadsheet formats (CSV,
Excel), which need formula escaping, are written by :mod:`engine.files.write` itself. Split from
it so that each of the two modules reads in one sitting and the labelled formats' rules (variable
names, integer widths, Stata's long range) sit together.

References: pyreadstat ``write_sav`` / ``write_dta``; pyarrow ``parquet.write_table``;
docs/pitfalls.md ("Data import": SPSS value labels and missing codes kept for export).

Example:
    >>> synthetic_file_name("cohort", "sav"), format_name(".CSV")
    ('cohort_synthetic.sav', 'csv')
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import InputError

FORMATS: dict[str, str] = {
    "csv": ".csv",
    "xlsx": ".xlsx",
    "parquet": ".parquet",
    "sav": ".sav",
    "dta": ".dta",
}
_STATA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_SPSS_NAME = re.compile(r"^[A-Za-z@#$\u00c0-\uffff][\w.@#$\u00c0-\uffff]*$")
_STATA_LONG = (-2_147_483_647, 2_147_483_620)


def format_name(fmt: str) -> str:
    """Normalise ``".CSV"`` to ``"csv"``; InputError listing the formats otherwise."""
    name = str(fmt).strip().lower().lstrip(".")
    if name not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    return name


def synthetic_file_name(stem: str = "synthetic", fmt: str = "csv") -> str:
    """File name that says "synthetic": ``synthetic.csv``, or ``cohort_synthetic.sav``.

    References:
        docs/contracts.md (output folder: ``synthetic.<ext>``).

    Example:
        >>> synthetic_file_name("synthetic", "csv"), synthetic_file_name("cohort", ".DTA")
        ('synthetic.csv', 'cohort_synthetic.dta')
    """
    extension = FORMATS[format_name(fmt)]
    base = str(stem).strip() or "synthetic"
    if Path(base).name != base or base in {".", ".."}:
        raise InputError(f"{stem!r}: a file name stem must not contain a folder; give a name")
    if not base.lower().endswith("synthetic"):
        base = f"{base}_synthetic"
    return base + extension


def is_text(series: pd.Series) -> bool:
    """True for object, string and categorical columns (the ones that can hold text)."""
    dtype = series.dtype
    return (
        pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
        or isinstance(dtype, pd.CategoricalDtype)
    )


def _meta_field(meta: Any, name: str) -> Any:
    """Read ``name`` from a dict-like or attribute-style column description."""
    if meta is None:
        return None
    if isinstance(meta, Mapping):
        return meta.get(name)
    return getattr(meta, name, None)


def _labels_json(frame: pd.DataFrame, column_meta: Mapping[str, Any]) -> str:
    """Variable and value labels as JSON (Parquet schema metadata)."""
    labels: dict[str, Any] = {}
    for name in frame.columns:
        meta = column_meta.get(name)
        value_labels = _meta_field(meta, "value_labels") or {}
        labels[name] = {
            "variable_label": _meta_field(meta, "variable_label"),
            "value_labels": {str(k): str(v) for k, v in value_labels.items()},
        }
    return json.dumps(labels, ensure_ascii=False)


def write_parquet(frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any]) -> None:
    """Parquet via pyarrow; labels kept in the schema metadata ``latent_synth.column_meta``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise InputError(f"cannot store this table as Parquet ({err}); export as csv") from err
    metadata = dict(table.schema.metadata or {})
    metadata[b"latent_synth.column_meta"] = _labels_json(frame, column_meta).encode("utf-8")
    pq.write_table(table.replace_schema_metadata(metadata), tmp)


def _numeric_keys(value_labels: Any) -> dict[int | float, str] | None:
    """Value labels with numeric keys (``"1"`` -> 1); None when a key is not a number."""
    if not value_labels:
        return None
    out: dict[int | float, str] = {}
    for key, label in dict(value_labels).items():
        try:
            number = float(key)
        except (TypeError, ValueError):
            return None
        out[int(number) if number.is_integer() else number] = str(label)
    return out


def _labelled_column(
    series: pd.Series, value_labels: dict[int | float, str] | None, stata: bool
) -> tuple[pd.Series, dict[int | float, str] | None]:
    """Column as SPSS/Stata can hold it, plus the value labels that still apply."""
    if pd.api.types.is_bool_dtype(series.dtype) and not series.hasnans:
        series = series.astype("int32")
    elif is_text(series):
        present = set(series.dropna().unique())
        if value_labels and present <= set(value_labels.values()):
            codes = {label: code for code, label in value_labels.items()}
            series = series.astype(object).map(codes, na_action="ignore").astype("float64")
        elif isinstance(series.dtype, pd.CategoricalDtype) and pd.api.types.is_numeric_dtype(
            series.cat.categories.dtype
        ):
            series = series.astype("float64")
        else:
            text = series.astype(object)
            return text.where(text.notna(), None), None
    elif pd.api.types.is_extension_array_dtype(series.dtype) and pd.api.types.is_numeric_dtype(
        series.dtype
    ):
        series = series.astype("float64")
    if pd.api.types.is_float_dtype(series.dtype) and series.notna().all():
        if np.all(np.mod(series.to_numpy(), 1) == 0) and value_labels:
            series = series.astype("int64")
    if stata and pd.api.types.is_integer_dtype(series.dtype):
        low, high = _STATA_LONG
        if series.empty or (series.min() >= low and series.max() <= high):
            series = series.astype("int32")
        else:
            series = series.astype("float64")
    if stata and value_labels and not all(isinstance(k, int) for k in value_labels):
        value_labels = None
    return series, value_labels


def coded_numbers(
    series: pd.Series, value_labels: dict[int | float, str] | None
) -> tuple[pd.Series, dict[int | float, str] | None]:
    """A column of numeric codes carried as text ("1", "2", "other (fewer than 10)": issue 32,
    :mod:`engine.columns.codes`) as the numbers an SPSS or Stata user expects, the merged level
    as a code of its own with the value label "other (fewer than 10)": the first of 9, 99,
    999, ... above every code in the column, the usual place of "other" codes in survey
    data, never one of the levels written. Other columns are returned unchanged.

    Example:
        >>> s = pd.Series(["1", "3", "other (fewer than 10)", None])
        >>> out, labels = coded_numbers(s, None)
        >>> out.tolist()[:3], labels
        ([1.0, 3.0, 9.0], {9: 'other (fewer than 10)'})
    """
    from engine.files.values import OTHER

    if not is_text(series) or series.dropna().empty:
        return series, value_labels
    text = series.astype(object)
    merged = text == OTHER
    numbers = pd.to_numeric(text.where(~merged), errors="coerce")
    coded = numbers.notna() | merged | text.isna()
    finite = numbers.dropna()
    if not coded.all() or finite.empty or not np.all(np.mod(finite, 1) == 0):
        return series, value_labels
    written = text[numbers.notna()]
    shown = written.map(lambda v: v if isinstance(v, str) else str(int(v)))
    if not (shown == finite.astype("int64").map(str)).all():  # "007" stays text
        return series, value_labels
    if not merged.any():
        return numbers.astype("float64"), value_labels
    code = 9
    while code <= finite.max():
        code = code * 10 + 9
    return numbers.where(~merged, float(code)).astype("float64"), {
        **(value_labels or {}),
        code: OTHER,
    }


def _check_names(frame: pd.DataFrame, stata: bool) -> None:
    """Raise InputError naming a column that SPSS/Stata cannot hold."""
    pattern = _STATA_NAME if stata else _SPSS_NAME
    program = "Stata" if stata else "SPSS"
    for name in frame.columns:
        too_long = not stata and len(str(name).encode("utf-8")) > 64
        if too_long or not pattern.match(str(name)):
            raise InputError(
                f"column {name!r}: not a valid {program} variable name; "
                "rename it in the input or export as csv, xlsx or parquet"
            )


def _spss_integer_formats(data: pd.DataFrame) -> dict[str, str]:
    """``F<w>.0`` display formats for integer columns (SPSS has one numeric type)."""
    formats: dict[str, str] = {}
    for name in data.columns:
        column = data[name]
        if pd.api.types.is_integer_dtype(column.dtype) and not pd.api.types.is_bool_dtype(
            column.dtype
        ):
            digits = max((len(str(v)) for v in (column.min(), column.max())), default=1)
            formats[name] = f"F{max(8, digits + 1)}.0"
    return formats


def _write_labelled(
    frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any], stata: bool
) -> None:
    """SPSS ``.sav`` or Stata ``.dta`` via pyreadstat, with variable and value labels."""
    import pyreadstat

    _check_names(frame, stata)
    columns: dict[str, pd.Series] = {}
    variable_labels: dict[str, str | None] = {}
    value_labels: dict[str, dict[int | float, str]] = {}
    for name in frame.columns:
        meta = column_meta.get(name)
        labels = _numeric_keys(_meta_field(meta, "value_labels"))
        series, labels = coded_numbers(frame[name], labels)
        columns[name], labels = _labelled_column(series, labels, stata)
        if labels:
            value_labels[name] = labels
        label = _meta_field(meta, "variable_label")
        variable_labels[name] = None if label is None else str(label)[: 80 if stata else 256]
    data = pd.DataFrame(columns, index=range(len(frame)))
    options: dict[str, Any] = {}
    if not stata:  # SPSS stores doubles: show integers without decimals
        options["variable_format"] = _spss_integer_formats(data)
    writer = pyreadstat.write_dta if stata else pyreadstat.write_sav
    try:
        writer(
            data,
            str(tmp),
            column_labels=variable_labels,
            variable_value_labels=value_labels or None,
            **options,
        )
    except Exception as err:  # pyreadstat raises several unrelated types
        if isinstance(err, InputError):
            raise
        program = "Stata" if stata else "SPSS"
        raise InputError(
            f"cannot store this table as {program} ({err}); export as csv or parquet instead"
        ) from err


def write_sav(frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any]) -> None:
    """SPSS writer."""
    _write_labelled(frame, tmp, column_meta, stata=False)


def write_dta(frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any]) -> None:
    """Stata writer."""
    _write_labelled(frame, tmp, column_meta, stata=True)
