"""Columns that identify people: e-mail addresses, phone numbers and record identifiers; and dates.

Identifiers are dropped before anything is modelled (docs/method.md section 2: direct
identifiers are never modelled). Dates are recognised here too; :mod:`engine.columns.kinds`
synthesizes them as days from a secret reference (:mod:`engine.columns.dates`) and drops exact
dates of birth. A column is an identifier when its values look like e-mail addresses or phone
numbers (a range of years such as ``1988-1993`` or of numbers such as ``10-19`` is not a phone
number), or when it is (almost) different in every row and has an ID-like name (whole tokens
such as ``id``, ``mrn``, ``subject_no``), text values, consecutive row numbers, or long numeric
codes; a measurement name (age, weight, days, ...) protects a numeric column from the last rule,
since a real covariate dropped by mistake would ruin the release. Split from
:mod:`engine.columns.kinds` because these rules protect privacy and are tuned on their own.

References: docs/method.md section 2; HIPAA Safe Harbor list of direct identifiers (45 CFR
164.514(b)(2)).

Example:
    >>> [id_like_name(n) for n in ("subject_no", "MRN", "nhs_number", "midline", "paid")]
    [True, True, True, False, False]
"""

from __future__ import annotations

import datetime as _dt
import re

import numpy as np
import pandas as pd

from engine.files.names import is_id_like_name, name_tokens
from engine.files.values import all_whole

ID_TOKENS = frozenset(
    {
        "id",
        "mrn",
        "nhs",
        "ssn",
        "patient",
        "email",
        "phone",
        "name",
        "address",
        "postcode",
        "zip",
        "uuid",
        "guid",
        "surname",
        "forename",
        "firstname",
        "lastname",
        "telephone",
        "mobile",
    }
)
# "subject_no", "record_number", "case_code": an ID-like subject followed by a number word.
ID_SUBJECTS = frozenset(
    (
        "subject subj record rec case participant patient pt pat person member sample specimen "
        "accession chart hospital study enrolment enrollment registration screening randomisation "
        "randomization"
    ).split()
)
ID_NUMBER_WORDS = frozenset({"no", "nr", "num", "number", "code", "key", "ref", "idx", "index"})
# Names of measurements that may hold many different whole numbers without being identifiers.
MEASURE_TOKENS = frozenset(
    (
        "age time times day days week weeks month months year years dur duration followup futime "
        "survival weight wt height ht bmi sbp dbp bp chol cholesterol hdl ldl glucose count cnt "
        "income salary cost charges price dose score level size length rate steps minutes hours "
        "seconds mm cm kg g mg ml cd4 cd8 rna platelets wbc volume distance amount total"
    ).split()
)
NAMED_ID_SHARE = 0.9
UNNAMED_ID_SHARE = 0.95
MIN_ID_ROWS = 20

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_PHONE = re.compile(r"^\+?[\d\s\-().]{7,}$")
_NUM = r"(\d{1,4})(?:\.\d+)?"
_RANGE = re.compile(rf"^[\[(]?\s*{_NUM}\s*[-\u2013]\s*{_NUM}\s*[\])]?$")
_DATE = re.compile(
    r"^(\d{4}-\d{1,2}-\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?|\d{1,2}[/.]\d{1,2}[/.]\d{2,4})$"
)


def date_or_identifier(
    s: pd.Series, present: pd.Series, n_distinct: int
) -> tuple[str, str, None] | None:
    """Dates, e-mail/phone values, and per-row unique identifiers (all dropped)."""
    if pd.api.types.is_datetime64_any_dtype(s) or _looks(present, _DATE) or _date_objects(present):
        return "date", "dates", None  # synthesized or dropped by engine.columns.kinds
    if _looks(present, _EMAIL):
        return "identifier", "values look like e-mail addresses (direct identifier)", None
    if _looks_phone(present):
        return "identifier", "values look like phone numbers (direct identifier)", None
    unique = n_distinct == len(present) and len(present) > 2
    share = n_distinct / len(present)
    name = str(s.name)
    text_values = all_text(present)
    if (
        id_like_name(name)
        and not set(name_tokens(name)) & MEASURE_TOKENS
        and len(present) > 2
        and share >= NAMED_ID_SHARE
        and (all_whole(present) or present.dtype == object)
    ):
        return (
            "identifier",
            f"likely a record identifier: an ID-like name and {_pct(share)} different values; "
            "not modelled (keep it only if it is a real measurement)",
            None,
        )
    if not unique:
        return _numeric_identifier(present, name, share)
    if text_values:
        if present.str.len().mean() > 30 or present.str.count(" ").mean() >= 3:
            return "text", "free text, different in every row; not modelled", None
        return "identifier", "text that is different in every row (likely a name or code)", None
    if _row_number(present):
        return "identifier", "consecutive whole numbers, one per row (a row number)", None
    return _numeric_identifier(present, name, share)


def id_like_name(name: str) -> bool:
    """Whether a column name reads like a record identifier (whole tokens, never substrings).

    Example:
        >>> [id_like_name(n) for n in ("subject_no", "MRN", "nhs_number", "midline", "paid")]
        [True, True, True, False, False]
    """
    tokens = name_tokens(name)
    if is_id_like_name(name, ID_TOKENS):
        return True
    return bool(set(tokens) & ID_SUBJECTS) and bool(set(tokens) & ID_NUMBER_WORDS)


def _numeric_identifier(
    present: pd.Series, name: str, share: float
) -> tuple[str, str, None] | None:
    """Whole numbers, >= 95 % different, in row order or fixed-width 6+ digit codes.

    Measurement names (age, weight, days, ...) are never flagged by this rule: a real covariate
    dropped by mistake would ruin the fidelity of the release.
    """
    if (
        share < UNNAMED_ID_SHARE
        or len(present) < MIN_ID_ROWS
        or not all_whole(present)
        or set(name_tokens(name)) & MEASURE_TOKENS
    ):
        return None
    v = present.to_numpy(dtype="float64")
    in_row_order = abs(float(pd.Series(v).corr(pd.Series(np.arange(len(v))), "spearman"))) >= 0.95
    digits = np.floor(np.log10(np.maximum(np.abs(v), 1.0))) + 1
    long_codes = bool(digits.min() >= 6 and digits.max() - digits.min() <= 1)
    if not (in_row_order or long_codes):
        return None
    how = "in row order" if in_row_order else f"codes of {int(digits.min())}+ digits"
    return (
        "identifier",
        f"likely a record identifier: whole numbers, {_pct(share)} different, {how}; not "
        "modelled (keep it only if it is a real measurement)",
        None,
    )


def _pct(share: float) -> str:
    """A share as a whole percentage, never rounded up to 100 % when below it."""
    return f"{int(np.floor(share * 100))} %"


def all_text(present: pd.Series) -> bool:
    """Whether every value is text, judged on the distinct values (issue 31: a million-row
    column cost 0.1-0.2 s a test cell by cell). Values equal to a text are text, so the
    distinct values are text exactly when every value is; a numeric column holds none.

    Example:
        >>> s = pd.Series
        >>> all_text(s(["a", "b", "a"])), all_text(s([1, 2])), all_text(s(["a", 1]))
        (True, False, False)
    """
    if len(present) == 0:
        return True
    if pd.api.types.is_numeric_dtype(present) or pd.api.types.is_datetime64_any_dtype(present):
        return False
    return all(isinstance(v, str) for v in pd.unique(present.to_numpy()))


def _looks(present: pd.Series, pattern: re.Pattern[str], share: float = 0.8) -> bool:
    """Whether most text values match a pattern (non-text columns never do); each distinct
    value is matched once and counted for its rows."""
    if present.dtype != object or len(present) == 0 or not all_text(present):
        return False
    rows, distinct = pd.factorize(present)
    hits = pd.Series(distinct, dtype=object).str.strip().str.match(pattern).to_numpy(dtype=bool)
    return bool(hits[rows].mean() >= share)


def _date_objects(present: pd.Series) -> bool:
    """Python ``date``/``datetime`` objects (a Parquet ``date32`` column read by pandas)."""
    if present.dtype != object or len(present) == 0:
        return False
    return all(isinstance(v, (_dt.date, pd.Timestamp)) for v in pd.unique(present.to_numpy()))


def _looks_phone(present: pd.Series) -> bool:
    """Text like ``+44 20 7946 0958`` or ``(555) 123-4567``: 7+ digits with separators; a
    column whose values are mostly ranges such as ``1988-1993`` (see :func:`_is_range`) is a
    category of ranges, not phone numbers."""
    if not _looks(present, _PHONE):
        return False
    text = present.astype(str).str.strip()
    if text.map(_is_range).astype(bool).mean() >= 0.8:
        return False
    digits = text.str.count(r"\d")
    separated = text.str.contains(r"[\s\-()+.]")
    return bool(((digits >= 7) & separated).mean() >= 0.8)


def _is_range(value: str) -> bool:
    """Whether a value is a range of two numbers joined by a dash, lower end first: two years
    1800-2100 (``1988-1993``) or two numbers with as many digits (``10-19``, ``1000-1999``).

    A local phone number splits its digits unevenly (``555-1234``) and a column of them is not
    ordered low-high in every row, so such values stay phone-like.

    Example:
        >>> [_is_range(v) for v in ("1988-1993", "10-19", "555-1234", "2001-1999")]
        [True, True, False, False]
    """
    m = _RANGE.match(value)
    if m is None:
        return False
    a, b = m.group(1), m.group(2)
    if int(a) >= int(b):
        return False
    years = all(1800 <= int(x) <= 2100 and len(x) == 4 for x in (a, b))
    return years or len(a) == len(b)


def _row_number(present: pd.Series) -> bool:
    """Unique consecutive whole numbers (0..n-1, 1..n, ...)."""
    if not pd.api.types.is_numeric_dtype(present) or pd.api.types.is_bool_dtype(present):
        return False
    v = np.sort(present.to_numpy(dtype="float64"))
    return all_whole(present) and bool(np.all(np.diff(v) == 1))
