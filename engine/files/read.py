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

This module is the dispatch (path checks, format by extension, the shared end checks) and the
:class:`LoadedTable` it returns; the readers are :mod:`engine.files.read_text` (CSV/TSV and the
text-cell rule), :mod:`engine.files.read_excel` and :mod:`engine.files.read_binary` (Parquet,
SAS, SPSS, Stata, with :class:`ColumnMeta`); column names go through :mod:`engine.files.names`.
Their public names are re-exported here.

References: docs/pitfalls.md "Data import" (BOM, cp1252, "NA", leading zeros, SPSS user-missing,
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

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import InputError
from engine.files.names import (
    ID_NAME_TOKENS,
    ID_NAME_WHOLE,
    is_id_like_name,
    name_columns,
    name_tokens,
)
from engine.files.read_binary import ColumnMeta, apply_typed_codes, read_binary
from engine.files.read_excel import read_excel
from engine.files.read_text import (
    ALWAYS_MISSING,
    DELIMITERS,
    MAX_NA_LEVELS,
    NA_LITERAL,
    read_text_table,
    sniff_delimiter,
)

__all__ = [
    "ALWAYS_MISSING",
    "DELIMITERS",
    "FORMATS",
    "ID_NAME_TOKENS",
    "ID_NAME_WHOLE",
    "MAX_NA_LEVELS",
    "NA_LITERAL",
    "URL_PATTERN",
    "ColumnMeta",
    "LoadedTable",
    "is_id_like_name",
    "name_tokens",
    "read_table",
    "sniff_delimiter",
]

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


def read_table(
    path: str | Path, *, sheet: str | int | None = None, missing_codes: Sequence[str | float] = ()
) -> LoadedTable:
    """Read a local table file (CSV/TSV/Excel/Parquet/SAS/SPSS/Stata) without modifying it.

    References: docs/pitfalls.md "Data import".
    """
    path = _check_path(path)
    fmt = FORMATS[path.suffix.lower()]
    data = path.read_bytes()
    if not data:
        raise InputError(f"{path.name}: the file is empty (0 bytes); export the table again.")
    digest = hashlib.sha256(data).hexdigest()
    key = (str(path.resolve()), sheet, tuple(missing_codes), digest)
    if _LAST_READ and _LAST_READ[0] == key:  # the same bytes read again (roles, then the run)
        hit = _LAST_READ[1]
        _LAST_READ.clear()  # handed over once: no second copy kept
        return hit
    notes: list[str] = []
    meta: dict[str, ColumnMeta] = {}
    sheet_name: str | None = None
    if fmt in ("csv", "tsv"):
        frame = read_text_table(path, data, fmt, missing_codes, notes)
    elif fmt == "xlsx":
        frame, sheet_name = read_excel(path, sheet, missing_codes, notes)
    else:
        frame, meta = read_binary(path, fmt, notes)
        frame = apply_typed_codes(frame, missing_codes, notes)
    frame = _finish(path, frame, notes)
    loaded = LoadedTable(path, fmt, frame, digest, tuple(notes), meta, sheet_name, len(frame))
    _LAST_READ.clear()
    if frame.memory_usage(index=False).sum() <= _CACHE_BYTES:
        _LAST_READ[:] = [key, replace(loaded, frame=frame.copy(), column_meta=dict(meta))]
    return loaded


# The last table read, keyed by its path, options and the SHA-256 of its bytes: the command
# line reads a file once to recognise the survival columns and again to run (1.5 s of parsing
# at 100,000 rows); the next read of the same bytes takes this copy (once). Changed bytes,
# options or paths never match.
_LAST_READ: list[Any] = []
_CACHE_BYTES = 256 * 2**20  # larger tables are parsed again rather than held twice


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


def _finish(path: Path, frame: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Shared checks: string names, no duplicates, rows present, inf -> NaN, empty-column notes."""
    frame = frame.copy()
    frame.columns = name_columns(path, [str(c) for c in frame.columns], notes)
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
                    f"column '{col}': {int(bad.sum())} infinite values (inf/-inf) treated as "
                    "missing"
                )
                frame[col] = s.where(~bad, np.nan)
        if frame[col].isna().all():
            notes.append(f"column '{col}': every value is missing; it will not be used")
    return frame
