"""Text tables (CSV, TSV) and the rule that types a column of text cells.

A text file is decoded (UTF-8 with or without a byte-order mark, UTF-16, else cp1252 with a
note), its delimiter sniffed, every cell read as text, and each column typed here: numbers
(decimal comma allowed) or text, with the missing-value rule of :mod:`engine.files.read`
(``NA`` kept as a category where it is one; user missing codes compared as text and number;
ID digits kept as text). Excel's text cells (:mod:`engine.files.read_excel`) and the typed
formats (:mod:`engine.files.read_binary`) reuse the cell helpers, which is why they live here.

References: docs/pitfalls.md "Data import" (BOM, cp1252, "NA", leading zeros).

Example:
    >>> sniff_delimiter("a;b;c\\n1;2,5;3\\n")
    ';'
    >>> type_text_column("x", pd.Series(["1,5", "NA"]), True, (), []).tolist()
    [1.5, nan]
"""

from __future__ import annotations

import csv
import io as _stdio
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from engine.disclosure import finite
from engine.errors import InputError
from engine.files.names import is_id_like_name, name_columns
from engine.files.values import all_whole

ALWAYS_MISSING = frozenset({"", ".", "NaN", "nan", "N/A", "n/a"})
NA_LITERAL = "NA"
MAX_NA_LEVELS = 20
DELIMITERS = (",", ";", "\t", "|")

_LEADING_ZERO = re.compile(r"^[+-]?0\d")
_DECIMAL_COMMA = re.compile(r"^[+-]?\d*,\d+$")
_INTEGER_TEXT = re.compile(r"^[+-]?\d+$")


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
    """Pick the delimiter that gives the header's field count on every sampled line (most fields
    wins)."""
    lines = text[:200_000].splitlines()
    lines = [ln for ln in (lines[:-1] if len(text) > 200_000 else lines)[:50] if ln.strip()]
    best, best_fields = preferred or ",", 1
    for delim in ((preferred,) if preferred else ()) + DELIMITERS:
        counts = {len(row) for row in csv.reader(lines, delimiter=delim)}
        if len(counts) == 1 and (n := counts.pop()) > best_fields:
            best, best_fields = delim, n
    return best


def read_text_table(
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
    header = name_columns(path, header, notes)
    body.columns = header
    if len(body) == 0:
        raise InputError(
            f"{path.name}: has a header but no data rows; export the table with its rows."
        )
    decimal_comma = delim != ","
    return pd.DataFrame(
        {name: type_text_column(name, body[name], decimal_comma, codes, notes) for name in header}
    )


def type_text_column(
    name: str,
    values: pd.Series,
    decimal_comma: bool,
    codes: Sequence[str | float],
    notes: list[str],
) -> pd.Series:
    """Turn a column of text cells into numbers or text, applying the module's missing-value rule.

    Typed once per distinct cell and spread back to the rows (issue 31: a million-row column of
    a few hundred distinct values took 0.7-0.9 s cell by cell, about 0.05 s this way); counts in
    the notes are of rows. Columns with missing cells (``None`` / NaN, from a spreadsheet) or
    mostly distinct cells are typed cell by cell, as before."""
    if len(values) >= _DISTINCT_FROM and values.dtype == object and not values.isna().any():
        rows, distinct = pd.factorize(values, sort=False)
        if len(distinct) * 4 <= len(values):
            weight = np.bincount(rows, minlength=len(distinct))
            typed = _type_text(
                name, pd.Series(distinct, dtype=object), decimal_comma, codes, notes, weight
            )
            return pd.Series(typed.to_numpy()[rows], index=values.index, dtype=typed.dtype)
    return _type_text(name, values, decimal_comma, codes, notes, None)


_DISTINCT_FROM = 10_000  # rows from which a column is typed by its distinct cells


def _type_text(
    name: str,
    values: pd.Series,
    decimal_comma: bool,
    codes: Sequence[str | float],
    notes: list[str],
    weight: np.ndarray | None,
) -> pd.Series:
    """:func:`type_text_column` on ``values`` where each cell stands for ``weight`` rows (None:
    one each): the counts in the notes are weighted."""

    def count(mask: pd.Series) -> int:
        return int(mask.sum()) if weight is None else int(weight[mask.to_numpy(dtype=bool)].sum())

    s = values.map(lambda v: "" if v is None else str(v).strip())
    code_text = code_strings(codes)
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
                f"column '{name}': kept 'NA' as a category ({count(is_na)} rows); "
                "add NA to the missing codes if it means missing"
            )
            is_na[:] = False
    missing = base_missing | is_na
    if bool(missing.all()):
        note_codes(name, count(user_hit), notes)
        return pd.Series(np.nan, index=s.index, dtype="float64")
    if keep_text or numbers is None:  # keep_text is False only when the numbers parsed
        if numbers is not None:
            notes.append(f"column '{name}': kept as text so leading zeros / ID digits stay")
        result = s.astype(object).where(~missing, np.nan)
    else:
        result = pd.Series(np.nan, index=s.index, dtype="float64")
        result[present.index] = numbers.to_numpy()
    note_codes(name, count(user_hit), notes)
    if not keep_text:
        result = mask_numeric_codes(name, result, codes, notes, weight)
        result = integers_if_whole(result)
    return result


def code_strings(codes: Sequence[str | float]) -> set[str]:
    """Text forms of the user's missing codes (``-999`` -> ``{'-999', '-999.0'}``)."""
    out: set[str] = set()
    for code in codes:
        out.add(str(code).strip())
        number = finite(code)
        if number is not None:
            out.add(repr(number))
            if number.is_integer():
                out.add(str(int(number)))
    return out


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


def note_codes(name: str, count: int, notes: list[str]) -> None:
    """Record how many cells a user missing code removed."""
    if count:
        notes.append(f"column '{name}': {count} cells with a missing code set to missing")


def mask_numeric_codes(
    name: str,
    s: pd.Series,
    codes: Sequence[str | float],
    notes: list[str],
    weight: np.ndarray | None = None,
) -> pd.Series:
    """Numeric columns: values equal to a numeric missing code become NaN (``weight``: rows each
    value stands for, in the note's count)."""
    numbers = [f for c in codes if (f := finite(c)) is not None]
    if not numbers or not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return s
    hit = s.isin(numbers)
    if hit.any():
        hits = int(hit.sum()) if weight is None else int(weight[hit.to_numpy(dtype=bool)].sum())
        note_codes(name, hits, notes)
        s = s.astype("float64").where(~hit, np.nan)
    return s


def integers_if_whole(s: pd.Series) -> pd.Series:
    """float64 -> int64 when every value is a whole number and none is missing."""
    if s.dtype.kind != "f" or s.isna().any() or len(s) == 0:
        return s
    if all_whole(s) and bool(np.all(np.abs(s.to_numpy()) < 2**53)):
        return s.astype("int64")
    return s


def one_line(exc: BaseException) -> str:
    """An exception's text squeezed onto one short line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:160]
