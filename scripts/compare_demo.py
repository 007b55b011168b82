"""Run ``latent-synth demo`` on two checkouts with the same seed and compare what a recipient
and an output checker get: ``audit.json`` (keys, their order and values; run-dependent fields
masked), ``README.txt`` (date lines masked), ``synthetic.csv`` and ``report.pdf`` bytes.

Usage (from any checkout; the venv's python is used for both runs)::

    python scripts/compare_demo.py --before /work/main --after . --seed 7

Exit status 0 when nothing but masked fields differs, 1 otherwise.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

VOLATILE = {
    "started", "date", "seconds", "train_seconds", "audit_seconds", "release_seconds",
    "fidelity_seconds", "dp_seconds", "timings", "outputs", "software",
}  # fmt: skip


def run_demo(root: Path, out: Path, seed: int) -> None:
    """``python -m engine demo --seed SEED --out OUT`` with ``root``'s engine on the path."""
    env = {**os.environ, "PYTHONPATH": str(root.resolve()), "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "engine", "demo", "--seed", str(seed), "--out", str(out)]
    subprocess.run(cmd, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Every differing key order, length or value between two JSON trees (VOLATILE skipped)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [] if list(a) == list(b) else [f"{path}: keys {list(a)} vs {list(b)}"]
        for key in a:
            if key in b and key not in VOLATILE:
                out += differences(a[key], b[key], f"{path}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = [] if len(a) == len(b) else [f"{path}: length {len(a)} vs {len(b)}"]
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


def compare(before: Path, after: Path) -> bool:
    """Print the differences between two output folders; True when they match."""
    audit = differences(
        json.loads((before / "audit.json").read_text(encoding="utf-8")),
        json.loads((after / "audit.json").read_text(encoding="utf-8")),
    )
    print(f"audit.json: {len(audit)} differences")
    for line in audit[:40]:
        print("  ", line)
    readme = [
        [line for line in (folder / "README.txt").read_text(encoding="utf-8").splitlines()
         if "Date" not in line and "date" not in line]
        for folder in (before, after)
    ]  # fmt: skip
    print("README.txt identical (date lines masked):", readme[0] == readme[1])
    print("\n".join(difflib.unified_diff(*readme, lineterm="")))
    same = {
        name: (before / name).read_bytes() == (after / name).read_bytes()
        for name in ("synthetic.csv", "report.pdf")
    }
    print("byte-identical:", same)
    return not audit and readme[0] == readme[1] and all(same.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout to compare against")
    parser.add_argument("--after", type=Path, default=Path("."), help="checkout under test")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folders = Path(tmp) / "before", Path(tmp) / "after"
        run_demo(args.before, folders[0], args.seed)
        run_demo(args.after, folders[1], args.seed)
        return 0 if compare(*folders) else 1


if __name__ == "__main__":
    raise SystemExit(main())
