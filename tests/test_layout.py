"""The engine's public face and its rooms (issue 12): lazy imports, layers, no cycles."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "lifelines", "reportlab", "statsmodels", "matplotlib")


def _run(code: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_import_engine_loads_no_heavy_library() -> None:
    code = (
        "import json, sys, engine; "
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    )
    assert loaded == []


# Each public name and the module that defines it (what ``engine.<name>.__module__`` says).
PUBLIC_HOMES = {
    "few_rows_warning": "engine.report.sections.summary",
    "refusal_findings": "engine.pipeline.refusal",
    "run_pipeline": "engine.pipeline.run",
    "RunConfig": "engine.pipeline.config",
    "RunResult": "engine.pipeline.results",
    "Prepared": "engine.pipeline.config",
    "Verdict": "engine.pipeline.results",
    "prepare": "engine.pipeline.prepare_step",
    "synthesize": "engine.pipeline.synthesize_step",
    "release": "engine.pipeline.release_step",
    "write_outputs": "engine.pipeline.outputs",
    "load_table": "engine.pipeline.prepare_step",
    "schema_for": "engine.pipeline.prepare_step",
    "check_analysis": "engine.pipeline.config",
    "demo_input": "engine.pipeline.demo",
    "MetaConfig": "engine.pipeline.meta",
    "run_meta": "engine.pipeline.meta",
    "effect_label": "engine.pipeline.meta",
    "Synthesizer": "engine.api.synthesizer",
    "Metadata": "engine.api.metadata",
    "read_table": "engine.files.read",
    "infer_schema": "engine.columns.schema",
    "recognise_survival_roles": "engine.columns.roles",
    "event_labels": "engine.columns.events",
    "analysis_plan": "engine.pipeline.compare_step",
    "exposure_candidates": "engine.stats.plan",
    "rule_cost_words": "engine.stats.topcoded",
    "atomic_write_bytes": "engine.files.atomic",
    "suggest_keys": "engine.columns.keys",
    "suggest_rules": "engine.pipeline.rules_step",
    "check_rule": "engine.pipeline.rules_step",
    "pool": "engine.stats.meta",
    "read_summary": "engine.stats.meta",
    "build_report": "engine.report.build",
    "draw_privacy_curve": "engine.report.curve_plot",
    "forest_figure": "engine.report.forest",
    "LatentSynthError": "engine.errors",
    "InputError": "engine.errors",
    "TooFewRows": "engine.errors",
    "PrivacyRefused": "engine.errors",
    "Cancelled": "engine.errors",
    "CancelToken": "engine.progress",
    "EpochDone": "engine.progress",
    "AuditPointDone": "engine.progress",
    "sub_progress": "engine.progress",
}


def test_public_names_resolve_to_their_rooms() -> None:
    code = (
        "import json\n"
        "from engine import run_pipeline, RunConfig, read_table, infer_schema, pool, build_report\n"
        "from engine import draw_privacy_curve, EpochDone, AuditPointDone\n"
        "import engine\n"
        f"names = {sorted(PUBLIC_HOMES)!r}\n"
        "print(json.dumps({'modules': {n: getattr(engine, n).__module__ for n in names},\n"
        "  'missing': sorted(set(names) - set(engine.__all__)),\n"
        "  'unlisted': sorted(set(engine.__all__) - set(names)\n"
        "                    - {'__version__', 'DEFAULT_GRID'}),\n"
        "  'grid': [engine.DEFAULT_GRID[0], engine.DEFAULT_GRID[-1], len(engine.DEFAULT_GRID)],\n"
        "  'refused': engine.Verdict('refused') is engine.Verdict.REFUSED,\n"
        "  'pooled': round(pool([0.1, 0.3, 0.2], [0.1, 0.1, 0.1]).estimate, 6)}))"
    )
    got = _run(code)
    assert got["modules"] == PUBLIC_HOMES
    assert got["missing"] == [] and got["unlisted"] == []
    assert got["grid"] == [0.0, 0.95, 20] and got["refused"] is True
    assert got["pooled"] == 0.2


def test_the_desktop_imports_only_the_public_face() -> None:
    """Every ``from engine... import`` in desktop/ names ``engine`` itself, except the console
    script's command-line dispatch (``engine.cli``): no desktop module reaches into a room."""
    import ast

    allowed_rooms = {"desktop/launch.py": {"engine.cli"}}
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "desktop").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine."):
                found.setdefault(rel, set()).add(str(node.module))
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("engine."):
                        found.setdefault(rel, set()).add(alias.name)
    assert found == allowed_rooms
    assert len(list((ROOT / "desktop").rglob("*.py"))) >= 15  # the desktop's modules were read


def test_engine_has_no_import_cycle() -> None:
    import grimp

    graph = grimp.build_graph("engine", exclude_type_checking_imports=True)
    modules = sorted(m for m in graph.modules if m != "engine")
    cycles = []
    for module in modules:
        for other in graph.find_modules_directly_imported_by(module):
            if other != "engine" and graph.find_shortest_chain(importer=other, imported=module):
                cycles.append((module, other))
    assert cycles == []
    assert len(modules) >= 40  # the rooms' modules, not an empty graph


def test_no_flat_module_left_in_engine() -> None:
    flat = sorted(p.stem for p in (ROOT / "engine").glob("*.py"))
    assert flat == [
        "__init__",
        "__main__",
        "device",
        "errors",
        "progress",
        "provenance",
        "threads",
    ]
    assert (ROOT / "engine" / "disclosure" / "__init__.py").is_file()  # a room of its own
    assert (ROOT / "engine" / "cli" / "options.py").is_file()  # the command line: a package
    assert not (ROOT / "engine" / "io.py").exists()  # no shadowing of the standard library's io


def test_the_desktop_lists_of_formats_match_the_engine() -> None:
    """The desktop keeps its own copies only to open fast (no pandas at start): the files it
    offers to open are the ones the engine reads, the formats it offers to write the ones a
    RunConfig accepts, in the same order."""
    import pytest

    pytest.importorskip("PySide6")
    from desktop.launch import TABLE_SUFFIXES
    from desktop.pages.export_page import FORMATS as EXPORT_CHOICES
    from engine.files.read import FORMATS as READ
    from engine.pipeline.config import FORMATS as WRITTEN

    assert sorted(TABLE_SUFFIXES) == sorted(READ) and len(READ) >= 14
    assert tuple(key for key, _ in EXPORT_CHOICES) == WRITTEN


def test_no_room_holds_more_than_15_percent_of_the_code() -> None:
    """Issue 46: the privacy room had grown to 17.5 % of the code doing five jobs. A room is a
    package under engine/ or desktop/ (the flat modules of each count as one room)."""
    lines: dict[str, int] = {}
    for top in ("engine", "desktop"):
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).parts
            room = "/".join(parts[:2]) if len(parts) > 2 else f"{top} (flat)"
            lines[room] = lines.get(room, 0) + len(path.read_text(encoding="utf-8").splitlines())
    total = sum(lines.values())
    shares = {room: round(100 * n / total, 1) for room, n in lines.items()}
    assert len(shares) >= 12 and total > 20_000  # the rooms were read
    assert max(shares.values()) <= 15.0, sorted(shares.items(), key=lambda kv: -kv[1])[:3]


def test_no_private_name_is_imported_across_modules() -> None:
    """Issue 46: 26 private names were imported across modules in 12 files. A name another
    module needs is public in its home (an alias such as ``import x as _x`` is the importer's
    own business and allowed)."""
    import ast

    offenders = []
    for path in (ROOT / "engine").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        offenders.append(f"{path.relative_to(ROOT)}: {alias.name}")
    assert offenders == []
