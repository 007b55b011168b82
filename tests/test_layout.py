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


def test_public_names_resolve_to_their_rooms() -> None:
    code = (
        "import json\n"
        "from engine import run_pipeline, RunConfig, read_table, infer_schema, pool, build_report\n"
        "from engine import draw_privacy_curve, EpochDone, AuditPointDone\n"
        "import engine\n"
        "names = ['run_pipeline', 'RunConfig', 'read_table', 'infer_schema', 'pool', 'build_report',\n"
        "         'draw_privacy_curve', 'EpochDone', 'AuditPointDone']\n"
        "print(json.dumps({'modules': [getattr(engine, n).__module__ for n in names],\n"
        "  'all': sorted(set(names) - set(engine.__all__)),\n"
        "  'pooled': round(pool([0.1, 0.3, 0.2], [0.1, 0.1, 0.1]).estimate, 6)}))"
    )
    got = _run(code)
    assert got["modules"] == [
        "engine.pipeline.run",
        "engine.pipeline.config",
        "engine.tables.read",
        "engine.tables.schema",
        "engine.stats.meta",
        "engine.report.build",
        "engine.report.curve_plot",
        "engine.progress",
        "engine.progress",
    ]
    assert got["all"] == []
    assert got["pooled"] == 0.2


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
        "cli",
        "device",
        "errors",
        "progress",
        "provenance",
    ]
    assert (ROOT / "engine" / "disclosure" / "__init__.py").is_file()  # a room of its own
    assert not (ROOT / "engine" / "io.py").exists()  # no shadowing of the standard library's io
