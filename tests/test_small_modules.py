"""Every room stays small (issue 12, issue 46): no module under engine/ or desktop/ over 400
lines or with a ``# fmt: skip`` (a module near the limit is split by job, not squeezed), and every
name callers import from a former big module is the one object defined in its new home."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 400
ROOMS = ("engine", "desktop")
ELSEWHERE: tuple[str, ...] = ()  # every module of the engine and the desktop is checked


def _modules() -> dict[str, str]:
    """Path (relative, with /) -> text of every checked module."""
    return {
        p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
        for room in ROOMS
        for p in sorted((ROOT / room).rglob("*.py"))
        if not ELSEWHERE or not p.relative_to(ROOT).as_posix().startswith(ELSEWHERE)
    }


# (old import path, name, module that defines it)
MOVED = [
    ("engine.stats.models", "fit_model", "engine.stats.regression"),
    ("engine.stats.models", "ModelSpec", "engine.stats.fits"),
    ("engine.stats.models", "json_safe", "engine.stats.fits"),
    ("engine.stats.models", "combine_synthetic_copies", "engine.stats.combine"),
    ("engine.stats.models", "compare_fits", "engine.stats.compare"),
    ("engine.stats.models", "fidelity_report", "engine.stats.fidelity"),
    ("engine.stats.models", "KMComparison", "engine.stats.fidelity"),
    ("engine.disclosure", "safe_count", "engine.disclosure.counts"),
    ("engine.disclosure", "safe_total", "engine.disclosure.counts"),
    ("engine.disclosure", "small_count", "engine.disclosure.counts"),
    ("engine.disclosure", "safe_bounds", "engine.disclosure.ranges"),
    ("engine.disclosure", "coarse_km_grid", "engine.disclosure.ranges"),
    ("engine.disclosure", "copy_masks", "engine.disclosure.copies"),
    ("engine.disclosure", "safe_record", "engine.disclosure.record"),
    ("engine.files.read", "ColumnMeta", "engine.files.read_binary"),
    ("engine.files.read", "sniff_delimiter", "engine.files.read_text"),
    ("engine.files.read", "name_tokens", "engine.files.names"),
    ("engine.columns.schema", "recognise_survival_roles", "engine.columns.roles"),
    ("engine.columns.schema", "ColumnSpec", "engine.columns.kinds"),
    ("engine.columns.schema", "binary_labels", "engine.columns.kinds"),
    ("engine.columns.schema", "id_like_name", "engine.columns.identifiers"),
    ("engine.files.write", "atomic_write_bytes", "engine.files.atomic"),
    ("engine.files.write", "AtomicBatch", "engine.files.atomic"),
    ("engine.files.write", "synthetic_file_name", "engine.files.write_formats"),
    ("engine.files.write", "write_recipient_readme", "engine.files.readme"),
    ("engine.files.write", "escape_formula", "engine.files.write"),  # mutation target
]


def test_no_module_is_over_400_lines() -> None:
    sizes = {path: len(text.splitlines()) for path, text in _modules().items()}
    assert len(sizes) >= 120  # every room was read, desktop included, not an empty glob
    assert any(path.startswith("desktop/pages/") for path in sizes)
    assert {path: n for path, n in sizes.items() if n > LIMIT} == {}


def test_no_module_keeps_its_formatting_by_hand() -> None:
    """No ``# fmt: skip``: ruff format lays out every line (a table of words can be one string,
    split)."""
    marker = "fmt: " + "skip"
    skipped = {path for path, text in _modules().items() if marker in text}
    assert skipped == set()


@pytest.mark.parametrize(("old", "name", "home"), MOVED)
def test_old_import_path_gives_the_one_definition(old: str, name: str, home: str) -> None:
    moved = getattr(importlib.import_module(old), name)
    assert moved is getattr(importlib.import_module(home), name)
    assert moved.__module__ == home
