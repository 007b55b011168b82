"""Safe, atomic writing of the synthetic table: formula escaping, CSV and Excel, one entry point.

:func:`write_table` (and :func:`table_writer`, for a batch of files) checks the format, escapes
what a spreadsheet could run, and writes through :func:`engine.files.atomic.atomic_path`: a
temporary file in the target folder, fsync'ed and moved over the target, so a failed or
cancelled export leaves the previous file (or nothing) and never a partial one. The input file
is never a target (``forbid``).

The export is split in four modules, all re-exported here (``engine.files.write.<name>`` keeps
working): this one (escaping, CSV, Excel, dispatch), :mod:`engine.files.atomic` (atomic files
and batches), :mod:`engine.files.write_formats` (the format list, Parquet, SPSS and Stata with
labels) and :mod:`engine.files.readme` (``README.txt`` for the recipient).

CSV and Excel cells are defused against formula injection (OWASP "CSV Injection", ASVS V1.2.10):
a text cell or column name starting with ``=``, ``+``, ``-``, ``@``, tab, CR, LF or NUL gets a
leading ``'``; numeric columns are never touched. Characters that XML (Excel) and most CSV
readers cannot carry (NUL and the other C0 controls except tab, CR and LF) become U+FFFD.

Formats: ``csv`` (UTF-8; a byte-order mark only when some text is not ASCII, see below),
``xlsx`` (openpyxl, every text cell typed as a string), ``parquet`` (pyarrow), ``sav`` (SPSS) and
``dta`` (Stata) via pyreadstat with labels.

The byte-order mark, decided by who reads ``synthetic.csv`` (issue 44):

* R's ``read.csv`` (and Python's :mod:`csv` with ``encoding="utf-8"``) keep the mark as part of
  the first header (``X.U.FEFF.age``, ``\\ufeffage``); ``readr::read_csv``,
  ``data.table::fread`` and pandas drop it; Stata's ``import delimited`` reads UTF-8 (Stata 14
  and later) and needs no mark.
* Excel, opening a CSV by double-click, reads it in the computer's code page (cp1252 in Western
  Europe) unless the file starts with the mark: "München" then shows as "MÃ¼nchen".
* ASCII is the same bytes in UTF-8 and in every such code page, so a table whose headers and text
  are all ASCII is written without the mark and every reader above gets ``age``. A table with
  non-ASCII text gets the mark, so Excel shows it right; R users then read it with
  ``read.csv(file, fileEncoding = "UTF-8-BOM")`` or ``readr::read_csv(file)``, Python users with
  ``encoding="utf-8-sig"``. ``README.txt`` says so in words.

References:
    OWASP ASVS 4.0.3 V1.2.10 (injection into CSV / spreadsheet output);
    OWASP "CSV Injection", https://owasp.org/www-community/attacks/CSV_Injection.

Example:
    >>> escape_formula("=HYPERLINK(1)"), escape_formula("-3"), escape_formula("ok")
    ("'=HYPERLINK(1)", "'-3", 'ok')
    >>> synthetic_file_name("synthetic", "sav")
    'synthetic.sav'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from engine.errors import InputError
from engine.files.atomic import (
    AtomicBatch,
    Content,
    PathLike,
    atomic_path,
    atomic_write_bytes,
    write_all_or_nothing,
)
from engine.files.readme import recipient_readme_bytes, write_recipient_readme
from engine.files.write_formats import (
    FORMATS,
    format_name,
    is_text,
    synthetic_file_name,
    write_dta,
    write_parquet,
    write_sav,
)

__all__ = [
    "FORMATS",
    "FORMULA_TRIGGERS",
    "AtomicBatch",
    "Content",
    "PathLike",
    "atomic_path",
    "all_ascii",
    "atomic_write_bytes",
    "csv_encoding",
    "escape_formula",
    "escape_frame",
    "recipient_readme_bytes",
    "synthetic_file_name",
    "table_writer",
    "write_all_or_nothing",
    "write_recipient_readme",
    "write_table",
]

FORMULA_TRIGGERS: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r", "\n", "\0")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_EXCEL_MAX_ROWS = 1_048_576
_EXCEL_MAX_COLUMNS = 16_384
_EXCEL_MAX_TEXT = 32_767


# ---------------------------------------------------------------- formula injection


def escape_formula(value: str) -> str:
    """Prefix ``'`` to a text cell a spreadsheet could read as a formula.

    References:
        OWASP "CSV Injection" (leading ``=``, ``+``, ``-``, ``@``, tab, CR, LF, NUL);
        OWASP ASVS V1.2.10.

    Example:
        >>> [escape_formula(v) for v in ["=1+1", "@SUM(A1)", "\\tx", "a=b", ""]]
        ["'=1+1", "'@SUM(A1)", "'\\tx", 'a=b', '']
    """
    if value and value[0] in FORMULA_TRIGGERS:
        return "'" + value
    return value


def _escape_cell(value: Any) -> Any:
    """Escape ``value`` when it is text; leave numbers, dates and missing values alone."""
    return escape_formula(value) if isinstance(value, str) else value


def _map_text(series: pd.Series, fn: Callable[[Any], Any]) -> pd.Series:
    """Apply ``fn`` to every text value, keeping categorical/string dtypes where possible."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        new = [fn(c) for c in series.cat.categories]
        if len(set(new)) == len(new):
            return series.cat.rename_categories(new)
        series = series.astype(object)
    if pd.api.types.is_object_dtype(series.dtype):
        return series.map(fn, na_action="ignore")
    return series.map(fn, na_action="ignore").astype(series.dtype)


def escape_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Return a copy with text cells and column names defused; numeric columns untouched.

    References:
        OWASP "CSV Injection"; OWASP ASVS V1.2.10.

    Example:
        >>> df = pd.DataFrame({"=x": ["-a", "b"], "n": [-1, 2]})
        >>> out = escape_frame(df)
        >>> list(out.columns), out["'=x"].tolist(), out["n"].tolist()
        (["'=x", 'n'], ["'-a", 'b'], [-1, 2])
    """
    return _map_text_cells(frame.copy(), _escape_cell)


def _map_text_cells(out: pd.DataFrame, fn: Callable[[Any], Any]) -> pd.DataFrame:
    """Apply ``fn`` in place to every text cell and every column name of ``out``; return it."""
    for i in range(out.shape[1]):
        column = out.iloc[:, i]
        if is_text(column):
            # pandas-stubs: isetitem takes a Series
            out.isetitem(i, _map_text(column, fn))  # type: ignore[arg-type]
    out.columns = [fn(c) for c in out.columns]
    return out


def _replace_controls(value: Any) -> Any:
    """Replace NUL and other C0 controls (not tab/CR/LF) by U+FFFD in text."""
    return _CONTROL_CHARS.sub("\ufffd", value) if isinstance(value, str) else value


def _spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Escaped frame whose text also survives XML and common CSV readers."""
    return _map_text_cells(escape_frame(frame), _replace_controls)


# ---------------------------------------------------------------- spreadsheets


def _is_ascii(value: Any) -> bool:
    """False only for text with a character outside ASCII."""
    return not isinstance(value, str) or value.isascii()


def all_ascii(frame: pd.DataFrame) -> bool:
    """True when every column name and every text cell of ``frame`` is ASCII.

    Example:
        >>> all_ascii(pd.DataFrame({"age": [1], "city": ["Leeds"]}))
        True
        >>> all_ascii(pd.DataFrame({"city": ["Zürich"]}))
        False
    """
    if not all(_is_ascii(str(c)) for c in frame.columns):
        return False
    for i in range(frame.shape[1]):
        column = frame.iloc[:, i]
        if not is_text(column):
            continue
        if isinstance(column.dtype, pd.CategoricalDtype):
            values: Any = column.cat.categories
        else:
            values = column.dropna().unique()
        if not all(_is_ascii(v) for v in values):
            return False
    return True


def csv_encoding(frame: pd.DataFrame) -> str:
    """``"utf-8"`` for an all-ASCII table, else ``"utf-8-sig"`` (a byte-order mark for Excel).

    See the module docstring for who reads the file and why.

    Example:
        >>> csv_encoding(pd.DataFrame({"age": [1]})), csv_encoding(pd.DataFrame({"Größe": [1]}))
        ('utf-8', 'utf-8-sig')
    """
    return "utf-8" if all_ascii(frame) else "utf-8-sig"


def _write_csv(frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any]) -> None:
    """UTF-8 CSV, RFC 4180 line ends (so CR and LF in a cell are quoted); a byte-order mark only
    when some text is not ASCII (:func:`csv_encoding`)."""
    safe = _spreadsheet_safe(frame)
    safe.to_csv(tmp, index=False, encoding=csv_encoding(safe), lineterminator="\r\n")


def _excel_values(series: pd.Series, name: str) -> list[Any]:
    """Python values for one column: None for missing, naive datetimes, text unchanged."""
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        series = series.dt.tz_localize(None)
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        return [None if pd.isna(v) else v.to_pydatetime() for v in series]
    values = series.astype(object).where(series.notna(), None).tolist()
    for v in values:
        if isinstance(v, str) and len(v) > _EXCEL_MAX_TEXT:
            raise InputError(
                f"column {name!r}: text longer than Excel's 32,767 characters; "
                "export as csv or parquet instead"
            )
    return values


def _write_xlsx(frame: pd.DataFrame, tmp: Path, column_meta: Mapping[str, Any]) -> None:
    """Excel workbook; every text cell has ``data_type = "s"`` so nothing is a formula.

    Text is escaped before CR becomes LF, so a cell that started with CR still starts with ``'``.
    """
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell

    if len(frame) + 1 > _EXCEL_MAX_ROWS or frame.shape[1] > _EXCEL_MAX_COLUMNS:
        raise InputError(
            f"{frame.shape[0]} rows x {frame.shape[1]} columns exceed Excel's limits; "
            "export as csv or parquet instead"
        )
    safe = _spreadsheet_safe(frame)
    book = Workbook(write_only=True)
    sheet = book.create_sheet("synthetic")

    def cell(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        # XML parsers turn CR into LF anyway; do it here so what we write is what is read.
        text = WriteOnlyCell(sheet, value=value.replace("\r\n", "\n").replace("\r", "\n"))
        text.data_type = "s"
        return text

    sheet.append([cell(str(c)) for c in safe.columns])
    columns = [_excel_values(safe.iloc[:, i], str(frame.columns[i])) for i in range(safe.shape[1])]
    for row in zip(*columns, strict=True):
        sheet.append([cell(v) for v in row])
    book.save(tmp)


_WRITERS: dict[str, Callable[[pd.DataFrame, Path, Mapping[str, Any]], None]] = {
    "csv": _write_csv,
    "xlsx": _write_xlsx,
    "parquet": write_parquet,
    "sav": write_sav,
    "dta": write_dta,
}


# ---------------------------------------------------------------- one entry point


def table_writer(
    frame: pd.DataFrame, fmt: str, column_meta: Mapping[str, Any] | None = None
) -> Callable[[Path], None]:
    """A function that writes ``frame`` as ``fmt`` to the path it is given (for
    :class:`AtomicBatch`); the format is checked now, the table written when called.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "t.csv"
        >>> table_writer(pd.DataFrame({"a": [1]}), "csv")(p)
        >>> p.read_bytes()  # ASCII only: no byte-order mark
        b'a\\r\\n1\\r\\n'
    """
    name = format_name(fmt)
    data = frame.copy(deep=False)
    data.columns = [str(c) for c in data.columns]
    meta = {str(k): v for k, v in (column_meta or {}).items()}

    def write(tmp: Path) -> None:
        _WRITERS[name](data.reset_index(drop=True), tmp, meta)

    return write


def write_table(
    frame: pd.DataFrame,
    path: PathLike,
    fmt: str,
    column_meta: Mapping[str, Any] | None = None,
    *,
    forbid: PathLike | None = None,
) -> Path:
    """Write ``frame`` atomically to ``path`` as ``fmt`` and return the path.

    ``column_meta`` maps a column name to an object or dict with ``variable_label`` and
    ``value_labels`` ({code: label}); SPSS and Stata get them as labels, Parquet as schema
    metadata. Text columns whose values are all labels are written as labelled codes. CSV is
    UTF-8, with a byte-order mark only when some text is not ASCII (so Excel shows it right).

    References:
        OWASP ASVS V1.2.10 and OWASP "CSV Injection" (CSV and Excel cells are escaped).

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "synthetic.csv"
        >>> _ = write_table(pd.DataFrame({"a": ["=1", "x"], "b": [-1, 2]}), p, "csv")
        >>> p.read_text(encoding="utf-8").splitlines()
        ['a,b', "'=1,-1", 'x,2']
    """
    target = Path(path)
    writer = table_writer(frame, fmt, column_meta)
    with atomic_path(target, forbid=forbid) as tmp:
        writer(tmp)
    return target
