"""Reading a local patient table into a pandas DataFrame, with notes a person can read.

::

    read_table(path, sheet=None, missing_codes=())  ->  LoadedTable
        ├── text  (.csv .tsv .tab .txt)   encoding + delimiter + decimal-comma sniffing
        ├── Excel (.xlsx .xlsm)           openpyxl; formula cells without a saved value -> note
        ├── Parquet (.parquet .pq)        pyarrow
        ├── SAS (.sas7bdat .xpt)          pyreadstat (decoded text)
        ├── SPSS (.sav .zsav)             pyreadstat, user_missing=True; labels kept in column_meta
        └── Stata (.dta)                  pyreadstat; labels kept in column_meta

Missing-value rule for text-like input (CSV/TSV and text cells of Excel):

* always missing: an empty cell, ``.``, ``NaN``/``nan``, ``N/A``, and every user ``missing_codes``
  entry (compared as text and, in numeric columns, as a number: ``-999`` matches ``-999.0``);
* the literal ``NA`` is missing, EXCEPT in a column that holds at least one other value that is
  not a number and has at most 20 distinct values (``NA`` counted): there ``NA`` is a category
  level (e.g. a grade ``A``/``B``/``NA``) and a note says so. Pass ``missing_codes=["NA"]`` to make
  it missing there too.

ID-like columns (name tokens such as ``id``/``mrn``/``nhs``/``ssn``, or any value written with a
leading zero such as ``007``) are kept as text so leading zeros survive (text cells only: typed
formats such as Parquet/SPSS keep the type they stored). ``inf``/``-inf`` in
numeric columns become missing (with a count per column). The input file is only read.

References: PITFALLS.md "Data import" (BOM, cp1252, "NA", leading zeros, SPSS user-missing,
Excel formula cache, URLs).

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text("id;grade;x\\n007;A;1,5\\n008;NA;2,5\\n")
    >>> t = read_table(p)
    >>> t.frame["id"].tolist(), t.frame["grade"].tolist(), t.frame["x"].tolist()
    (['007', '008'], ['A', 'NA'], [1.5, 2.5])
"""

from __future__ import annotations

import csv
import hashlib
import io as _stdio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import InputError

URL_PATTERN = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".txt": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".xls": "xlsx",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".sas7bdat": "sas7bdat",
    ".xpt": "xpt",
    ".sav": "sav",
    ".zsav": "sav",
    ".dta": "dta",
}
ALWAYS_MISSING = frozenset({"", ".", "NaN", "nan", "N/A", "n/a"})
NA_LITERAL = "NA"
MAX_NA_LEVELS = 20
ID_NAME_TOKENS = frozenset({"id", "mrn", "nhs", "ssn", "uuid", "guid"})
ID_NAME_WHOLE = frozenset({"pid", "patid", "subjid", "patientid", "subjectid", "recordid"})
DELIMITERS = (",", ";", "\t", "|")
_LEADING_ZERO = re.compile(r"^[+-]?0\d")
_DECIMAL_COMMA = re.compile(r"^[+-]?\d*,\d+$")
_INTEGER_TEXT = re.compile(r"^[+-]?\d+$")


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


@dataclass(frozen=True, eq=False)
class LoadedTable:
    """A table read from disk: the frame plus where it came from and what happened on the way."""

    path: Path
    format: str
    frame: pd.DataFrame
    sha256: str
    notes: tuple[str, ...] = ()
    column_meta: dict[str, ColumnMeta] = field(default_factory=dict)
    sheet: str | None = None
    rows: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Summary without the data (for audit.json's ``input``)."""
        return {
            "name": self.path.name,
            "format": self.format,
            "sha256": self.sha256,
            "rows": self.rows,
            "columns": [str(c) for c in self.frame.columns],
            "sheet": self.sheet,
            "notes": list(self.notes),
        }


def name_tokens(name: str) -> list[str]:
    """Split a column name into lower-case word tokens: ``PatientID`` -> ``['patient', 'id']``."""
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", str(name))
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [t for t in re.split(r"[^A-Za-z0-9]+", text.lower()) if t]


def is_id_like_name(name: str, tokens: frozenset[str] = ID_NAME_TOKENS) -> bool:
    """Whether a column name looks like a record identifier (whole tokens only)."""
    parts = name_tokens(name)
    return bool(set(parts) & tokens) or "".join(parts) in ID_NAME_WHOLE


def read_table(
    path: str | Path, *, sheet: str | int | None = None, missing_codes: Sequence[str | float] = ()
) -> LoadedTable:
    """Read a local table file (CSV/TSV/Excel/Parquet/SAS/SPSS/Stata) without modifying it.

    References: PITFALLS.md "Data import".
    """
    path = _check_path(path)
    fmt = FORMATS[path.suffix.lower()]
    data = path.read_bytes()
    if not data:
        raise InputError(f"{path.name}: the file is empty (0 bytes); export the table again.")
    notes: list[str] = []
    meta: dict[str, ColumnMeta] = {}
    sheet_name: str | None = None
    if fmt in ("csv", "tsv"):
        frame = _read_text(path, data, fmt, missing_codes, notes)
    elif fmt == "xlsx":
        frame, sheet_name = _read_excel(path, sheet, missing_codes, notes)
    else:
        frame, meta = _read_binary(path, fmt, notes)
        frame = _apply_typed_codes(frame, missing_codes, notes)
    frame = _finish(path, frame, notes)
    digest = hashlib.sha256(data).hexdigest()
    return LoadedTable(path, fmt, frame, digest, tuple(notes), meta, sheet_name, len(frame))


def _check_path(path: str | Path) -> Path:
    """Refuse URLs, missing paths, folders and unknown extensions."""
    text = str(path)
    if URL_PATTERN.match(text):
        raise InputError(
            f"{text}: is a URL; latent-synth only reads local files. "
            "Download/copy the file first and give its local path."
        )
    p = Path(text).expanduser()
    if not p.exists():
        raise InputError(f"{text}: file not found; check the path and the file name.")
    if p.is_dir():
        raise InputError(f"{p.name}: is a folder, not a file; choose the data file inside it.")
    suffix = p.suffix.lower()
    if suffix == ".xls":
        raise InputError(
            f"{p.name}: old Excel .xls files are not supported; save it as .xlsx in Excel."
        )
    if suffix not in FORMATS:
        known = ", ".join(sorted(FORMATS))
        raise InputError(f"{p.name}: unknown file type '{suffix or '(none)'}'; use one of {known}.")
    return p


# --------------------------------------------------------------------------- text files
def _decode(path: Path, data: bytes, notes: list[str]) -> str:
    """UTF-8 (BOM stripped) first, UTF-16 when it has a BOM, then cp1252 with a note."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        notes.append("read as UTF-16 (Unicode text from Excel)")
        return data.decode("utf-16")
    if b"\x00" in data[:65536]:
        raise InputError(
            f"{path.name}: is not a text table (it contains binary data); export it as CSV again."
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        raise InputError(
            f"{path.name}: cannot be decoded as UTF-8 or Windows cp1252 text; "
            "save it as 'CSV UTF-8' and try again."
        ) from None
    controls = sum(1 for ch in text[:65536] if ord(ch) < 32 and ch not in "\r\n\t")
    if controls > 0:
        raise InputError(
            f"{path.name}: is not a text table (it contains control bytes); export it as CSV again."
        )
    notes.append("read as cp1252 (Windows) because it is not UTF-8")
    return text


def sniff_delimiter(text: str, preferred: str | None = None) -> str:
    """Pick the delimiter that gives the header's field count on every sampled line (most fields wins)."""
    lines = text[:200_000].splitlines()
    lines = [ln for ln in (lines[:-1] if len(text) > 200_000 else lines)[:50] if ln.strip()]
    best, best_fields = preferred or ",", 1
    for delim in ((preferred,) if preferred else ()) + DELIMITERS:
        counts = {len(row) for row in csv.reader(lines, delimiter=delim)}
        if len(counts) == 1 and (n := counts.pop()) > best_fields:
            best, best_fields = delim, n
    return best


def _read_text(
    path: Path, data: bytes, fmt: str, codes: Sequence[str | float], notes: list[str]
) -> pd.DataFrame:
    """Parse a delimited text file with every cell as text, then type each column ourselves."""
    text = _decode(path, data, notes)
    delim = sniff_delimiter(text, "\t" if fmt == "tsv" else None)
    names = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
    if delim != ("\t" if fmt == "tsv" else ","):
        notes.append(f"columns separated by {names[delim]}")
    try:
        raw = pd.read_csv(
            _stdio.StringIO(text),
            sep=delim,
            header=None,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            skipinitialspace=False,
        )
    except pd.errors.EmptyDataError:
        raise InputError(
            f"{path.name}: contains no table (only blank lines); export the table again."
        ) from None
    except pd.errors.ParserError as exc:
        detail = str(exc).strip().splitlines()[-1].replace("C error: ", "")
        raise InputError(
            f"{path.name}: rows do not line up with the header ({detail}); fix that row."
        ) from None
    header = [str(h).strip() for h in raw.iloc[0].fillna("")]
    body = raw.iloc[1:].reset_index(drop=True).fillna("")
    header = _name_columns(path, header, notes)
    body.columns = header
    if len(body) == 0:
        raise InputError(
            f"{path.name}: has a header but no data rows; export the table with its rows."
        )
    decimal_comma = delim != ","
    return pd.DataFrame(
        {name: _type_text_column(name, body[name], decimal_comma, codes, notes) for name in header}
    )


def _name_columns(path: Path, header: list[str], notes: list[str]) -> list[str]:
    """Name blank headers ``column_<k>`` and refuse duplicated names."""
    out = []
    for k, name in enumerate(header, start=1):
        if name == "" or name.lower() == "nan" or name is None:
            name = f"column_{k}"
            notes.append(f"column {k} has no name; called it '{name}'")
        out.append(name)
    seen: dict[str, int] = {}
    for name in out:
        seen[name] = seen.get(name, 0) + 1
    dups = [n for n, c in seen.items() if c > 1]
    if dups:
        listed = ", ".join(f"'{d}'" for d in dups)
        raise InputError(
            f"{path.name}: column name {listed} appears more than once; rename the duplicates."
        )
    return out


def _type_text_column(
    name: str,
    values: pd.Series,
    decimal_comma: bool,
    codes: Sequence[str | float],
    notes: list[str],
) -> pd.Series:
    """Turn a column of text cells into numbers or text, applying the module's missing-value rule."""
    s = values.map(lambda v: "" if v is None else str(v).strip())
    code_text = _code_strings(codes)
    user_hit = s.isin(code_text)
    base_missing = s.isin(ALWAYS_MISSING) | user_hit
    is_na = (s == NA_LITERAL) & ~base_missing
    present = s[~base_missing & ~is_na]
    numbers = _parse_numbers(present, decimal_comma)
    keep_text = numbers is None or _looks_like_id(name, present)
    if keep_text and numbers is None and is_na.any() and NA_LITERAL not in code_text:
        levels = present.nunique() + 1
        if 0 < len(present) and levels <= MAX_NA_LEVELS:
            notes.append(
                f"column '{name}': kept 'NA' as a category ({int(is_na.sum())} rows); "
                "add NA to the missing codes if it means missing"
            )
            is_na[:] = False
    missing = base_missing | is_na
    if bool(missing.all()):
        _note_codes(name, int(user_hit.sum()), notes)
        return pd.Series(np.nan, index=s.index, dtype="float64")
    if keep_text:
        if numbers is not None:
            notes.append(f"column '{name}': kept as text so leading zeros / ID digits stay")
        result = s.astype(object).where(~missing, np.nan)
    else:
        assert numbers is not None  # keep_text is False only when the numbers parsed
        result = pd.Series(np.nan, index=s.index, dtype="float64")
        result[present.index] = numbers.to_numpy()
    _note_codes(name, int(user_hit.sum()), notes)
    if not keep_text:
        result = _mask_numeric_codes(name, result, codes, notes)
        result = _integers_if_whole(result)
    return result


def _code_strings(codes: Sequence[str | float]) -> set[str]:
    """Text forms of the user's missing codes (``-999`` -> ``{'-999', '-999.0'}``)."""
    out: set[str] = set()
    for code in codes:
        out.add(str(code).strip())
        number = _as_float(code)
        if number is not None and np.isfinite(number):
            out.add(repr(number))
            if float(number).is_integer():
                out.add(str(int(number)))
    return out


def _as_float(value: Any) -> float | None:
    """``float(value)`` or None."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _parse_numbers(present: pd.Series, decimal_comma: bool) -> pd.Series | None:
    """Numbers when every non-missing cell is a number (decimal comma allowed), else None."""
    if len(present) == 0:
        return None
    text = present
    if (
        decimal_comma
        and present.str.match(_DECIMAL_COMMA).any()
        and not present.str.contains(r"\.").any()
    ):
        text = present.str.replace(",", ".", regex=False)
    numbers = pd.to_numeric(text, errors="coerce")
    if numbers.isna().any():
        return None
    return numbers.astype("float64")


def _looks_like_id(name: str, present: pd.Series) -> bool:
    """Keep as text: leading zeros (``007``) or an ID-like name with whole-number values."""
    if len(present) == 0:
        return False
    if present.str.match(_LEADING_ZERO).any():
        return True
    return is_id_like_name(name) and bool(present.str.match(_INTEGER_TEXT).all())


def _note_codes(name: str, count: int, notes: list[str]) -> None:
    """Record how many cells a user missing code removed."""
    if count:
        notes.append(f"column '{name}': {count} cells with a missing code set to missing")


def _mask_numeric_codes(
    name: str, s: pd.Series, codes: Sequence[str | float], notes: list[str]
) -> pd.Series:
    """Numeric columns: values equal to a numeric missing code become NaN."""
    numbers = [f for c in codes if (f := _as_float(c)) is not None and np.isfinite(f)]
    if not numbers or not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return s
    hit = s.isin(numbers)
    if hit.any():
        _note_codes(name, int(hit.sum()), notes)
        s = s.astype("float64").where(~hit, np.nan)
    return s


def _integers_if_whole(s: pd.Series) -> pd.Series:
    """float64 -> int64 when every value is a whole number and none is missing."""
    if s.dtype.kind != "f" or s.isna().any() or len(s) == 0:
        return s
    v = s.to_numpy()
    if np.all(np.isfinite(v)) and np.all(v == np.round(v)) and np.all(np.abs(v) < 2**53):
        return s.astype("int64")
    return s


# --------------------------------------------------------------------------- Excel
def _read_excel(
    path: Path, sheet: str | int | None, codes: Sequence[str | float], notes: list[str]
) -> tuple[pd.DataFrame, str]:
    """First sheet (or the chosen one) via openpyxl; text cells follow the text rule."""
    import openpyxl

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file for the user
        raise InputError(
            f"{path.name}: cannot be read as an Excel workbook ({_one_line(exc)}); "
            "check that it is a .xlsx file and not damaged."
        ) from None
    try:
        names = list(book.sheetnames)
        name = _pick_sheet(path, names, sheet)
        rows = list(book[name].iter_rows(values_only=True))
    finally:
        book.close()
    _note_formulas(path, name, rows, notes)
    if not rows or all(v is None for v in rows[0]):
        raise InputError(f"{path.name}: sheet '{name}' is empty; choose the sheet with the table.")
    header = ["" if v is None else str(v).strip() for v in rows[0]]
    width = max(i + 1 for i, v in enumerate(rows[0]) if v is not None)
    header = _name_columns(path, header[:width], notes)
    body = [
        list(r[:width]) + [None] * (width - len(r))
        for r in rows[1:]
        if any(v is not None for v in r)
    ]
    if not body:
        raise InputError(
            f"{path.name}: sheet '{name}' has a header but no data rows; choose the sheet with the table."
        )
    raw = pd.DataFrame(body, columns=header, dtype=object)
    frame = pd.DataFrame({c: _type_excel_column(c, raw[c], codes, notes) for c in header})
    return frame, name


def _pick_sheet(path: Path, names: list[str], sheet: str | int | None) -> str:
    """Resolve ``sheet`` (name or 0-based index) or raise listing the sheets."""
    listed = ", ".join(f"'{n}'" for n in names)
    if sheet is None:
        return names[0]
    if isinstance(sheet, int) and not isinstance(sheet, bool):
        if 0 <= sheet < len(names):
            return names[sheet]
    elif str(sheet) in names:
        return str(sheet)
    raise InputError(f"{path.name}: has no sheet {sheet!r}; its sheets are {listed}.")


def _note_formulas(path: Path, sheet: str, cached: list[tuple[Any, ...]], notes: list[str]) -> None:
    """Formula cells whose saved (cached) value is empty read as missing: say so."""
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True, data_only=False)
    try:
        count = 0
        for r, row in enumerate(book[sheet].iter_rows(values_only=True)):
            for c, value in enumerate(row):
                if isinstance(value, str) and value.startswith("="):
                    saved = cached[r][c] if r < len(cached) and c < len(cached[r]) else None
                    count += saved is None
    finally:
        book.close()
    if count:
        notes.append(
            f"sheet '{sheet}': {count} formula cells have no saved value and read as missing; "
            "open and save the file in Excel (or paste values) first"
        )


def _type_excel_column(
    name: str, raw: pd.Series, codes: Sequence[str | float], notes: list[str]
) -> pd.Series:
    """Excel cells: all numbers/dates keep their type; anything with text follows the text rule."""
    present = raw.dropna()
    kinds = {type(v) for v in present}
    if present.empty:
        return pd.Series(np.nan, index=raw.index, dtype="float64")
    if kinds <= {int, float} or kinds <= {bool}:
        s = pd.Series(raw.tolist(), index=raw.index)
        s = s.astype("float64") if kinds <= {int, float} else s
        s = _mask_numeric_codes(name, s, codes, notes)
        return _integers_if_whole(s) if s.dtype.kind == "f" else s
    if all(hasattr(v, "year") for v in present):
        return pd.to_datetime(raw, errors="coerce")
    text = raw.map(lambda v: "" if v is None else _cell_text(v))
    return _type_text_column(name, text, False, codes, notes)


def _cell_text(value: Any) -> str:
    """Text of one Excel cell (whole floats without '.0')."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --------------------------------------------------------------------------- binary formats
def _read_binary(
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
            f"{path.name}: cannot be read as a {kind} file ({_one_line(exc)}); "
            "check that the file is complete and not damaged."
        ) from None


def _read_parquet(path: Path) -> pd.DataFrame:
    """Parquet with a duplicate-name check on the file's own schema."""
    import pyarrow.parquet as pq

    names = [str(n) for n in pq.read_schema(path).names if not str(n).startswith("__index_level_")]
    _name_columns(path, names, [])
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
            frame[col] = _integers_if_whole(frame[col])
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


def _apply_typed_codes(
    frame: pd.DataFrame, codes: Sequence[str | float], notes: list[str]
) -> pd.DataFrame:
    """Typed formats: user missing codes (numbers in numeric columns, text in text columns)."""
    if not codes:
        return frame
    code_text = _code_strings(codes)
    for col in frame.columns:
        s = frame[col]
        if s.dtype == object or pd.api.types.is_string_dtype(s):
            hit = s.astype(str).str.strip().isin(code_text) & s.notna()
            if hit.any():
                _note_codes(str(col), int(hit.sum()), notes)
                frame[col] = s.where(~hit, None)
        else:
            frame[col] = _mask_numeric_codes(str(col), s, codes, notes)
    return frame


# --------------------------------------------------------------------------- common end
def _finish(path: Path, frame: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Shared checks: string names, no duplicates, rows present, inf -> NaN, empty-column notes."""
    frame = frame.copy()
    frame.columns = _name_columns(path, [str(c) for c in frame.columns], notes)
    if len(frame) == 0:
        raise InputError(
            f"{path.name}: has a header but no data rows; export the table with its rows."
        )
    if frame.shape[1] == 0:
        raise InputError(f"{path.name}: has no columns; export the table again.")
    for col in frame.columns:
        s = frame[col]
        if s.dtype.kind == "f":
            bad = np.isinf(s.to_numpy())
            if bad.any():
                notes.append(
                    f"column '{col}': {int(bad.sum())} infinite values (inf/-inf) treated as missing"
                )
                frame[col] = s.where(~bad, np.nan)
        if frame[col].isna().all():
            notes.append(f"column '{col}': every value is missing; it will not be used")
    return frame


def _one_line(exc: BaseException) -> str:
    """An exception's text squeezed onto one short line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:160]
