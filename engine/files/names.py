"""Column names: word tokens, identifier-like names, and blank or repeated headers.

Every reader names its columns through :func:`name_columns` (a blank header becomes
``column_<k>``, a repeated one is refused), and both the readers (keep ID digits as text) and the
kind rules (:mod:`engine.columns.identifiers`) read names through :func:`name_tokens`, so a name
means the same thing everywhere. Kept apart from the readers because the schema uses it too.

References: docs/pitfalls.md "Data import" (ID columns lose leading zeros unless read as text).

Example:
    >>> name_tokens("PatientID"), is_id_like_name("subject_mrn"), is_id_like_name("midline")
    (['patient', 'id'], True, False)
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.errors import InputError

ID_NAME_TOKENS = frozenset({"id", "mrn", "nhs", "ssn", "uuid", "guid"})
ID_NAME_WHOLE = frozenset({"pid", "patid", "subjid", "patientid", "subjectid", "recordid"})


def name_tokens(name: str) -> list[str]:
    """Split a column name into lower-case word tokens: ``PatientID`` -> ``['patient', 'id']``."""
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", str(name))
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [t for t in re.split(r"[^A-Za-z0-9]+", text.lower()) if t]


def is_id_like_name(name: str, tokens: frozenset[str] = ID_NAME_TOKENS) -> bool:
    """Whether a column name looks like a record identifier (whole tokens only)."""
    parts = name_tokens(name)
    return bool(set(parts) & tokens) or "".join(parts) in ID_NAME_WHOLE


def name_columns(path: Path, header: list[str], notes: list[str]) -> list[str]:
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
