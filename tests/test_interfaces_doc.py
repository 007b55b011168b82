"""docs/interfaces.md cannot rot: every name it lists exists where it says, with the parameters
it shows (issue 12, item 7)."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[1] / "docs" / "interfaces.md"
TOKEN = re.compile(r"`([^`]+)`")
CALL = re.compile(r"^([A-Za-z_][\w.]*)(?:\((.*?)\))?(?:\s*->.*)?$")


def _rows(text: str) -> list[tuple[str, list[str]]]:
    """(module, backticked entries of the last column) for each table row naming a module."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) < 3 or not cells[0].startswith("`engine"):
            continue
        rows.append((cells[0].strip("`"), TOKEN.findall(cells[-1])))
    return rows


def _split_params(text: str) -> list[str]:
    """Top-level comma-separated parts of a parameter list."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def _resolve(module: str, dotted: str) -> Any:
    """``dotted`` inside ``module``, or a sibling module of that name; raises AttributeError."""
    obj: Any = importlib.import_module(module)
    head, *rest = dotted.split(".")
    try:
        obj = getattr(obj, head)
    except AttributeError:
        parent = module if not rest and hasattr(obj, "__path__") else module.rpartition(".")[0]
        obj = importlib.import_module(f"{parent}.{head}")
    for part in rest:
        obj = getattr(obj, part)
    return obj


def problems_in(module: str, entry: str) -> list[str]:
    """What is wrong with one backticked entry of the doc (empty: it matches the code)."""
    match = CALL.match(entry.strip())
    if match is None:
        return [f"{module}: cannot read `{entry}`"]
    dotted, params = match.groups()
    try:
        obj = _resolve(module, dotted)
    except (AttributeError, ModuleNotFoundError):
        return [f"{module}: no `{dotted}`"]
    if params is None:
        return []
    try:
        actual = [n for n in inspect.signature(obj).parameters if n != "self"]
    except (TypeError, ValueError):
        return []
    parts = _split_params(params)
    shown = [p.split("=")[0].strip().lstrip("*") for p in parts if p not in ("*", "/", "...")]
    if "..." in parts:
        it = iter(actual)
        ok = all(name in it for name in shown)  # in this order, others may be left out
    else:
        ok = shown == actual
    return [] if ok else [f"{module}.{dotted}: the doc shows {shown}, the code has {actual}"]


def test_every_listed_name_exists_with_the_listed_parameters() -> None:
    rows = _rows(DOC.read_text(encoding="utf-8"))
    found = [p for module, entries in rows for e in entries for p in problems_in(module, e)]
    assert found == []
    assert len(rows) >= 20  # the rooms' rows were read
    assert sum(len(entries) for _, entries in rows) >= 100
    assert sum("(" in e for _, entries in rows for e in entries) >= 40  # signatures checked


def test_the_checker_catches_a_wrong_signature_and_a_missing_name() -> None:
    assert problems_in("engine.flows.generate", "flow_sampling(flow, n, d, rng)") == []
    assert problems_in("engine.flows.generate", "flow_sampling(flow, n, rng)") != []
    assert problems_in("engine.stats.meta", "pool(estimates, ses, ...)") == []
    assert problems_in("engine.stats.meta", "pool(ses, estimates, ...)") != []
    assert problems_in("engine.pipeline.meta", "run_meta") == []
    assert problems_in("engine.pipeline.meta", "run_meta_job") != []
    assert problems_in("engine.privacy.audit", "attacks") == []  # a sibling module
    assert problems_in("engine", "no_such_public_name") != []
