"""End-to-end time, per-stage CPU / wall time and peak memory of the pipeline (prints figures).

Run: ``python benchmarks/bench_pipeline.py`` (every case), or ``--cases demo survival300``;
cases: ``survival300`` (a 300-row survival table), ``demo`` (the 1,608-row demo cohort),
``wide`` (``--rows`` x 10 columns, default 100,000: 8 correlated normals, a category, a flag),
``survival`` (``--rows`` x 10 columns, default 100,000: the survival table with three more
measurements), ``survival1m`` (the same table, 1,000,000 rows) and ``generate`` (1,000,000
rows, d = 10, generated in chunks from a trained flow). Each case runs in a fresh child process
(imports counted, as a user pays them), so its peak RSS is the child's own. The stages are timed
by wrapping the pipeline's functions (CPU seconds from ``time.process_time``, which on a shared
machine moves much less than wall time); nested stages are shown indented and are part of
their parent. SDV's Gaussian copula is timed as the 300-row anchor in a fresh process of an
interpreter that has ``sdv`` (this one, else ``.venv-bench``, a benchmark-only extra).

Issue 31's Done-when in one run: ``--cases survival300 survival survival1m`` (the small-table
ratios against SDV, 100,000 rows in 60 s, a million in 180 s under 2 GB; each printed with
"met" / "not met").

Results: docs/bench.md ("Speed history", ``bench_pipeline.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CASES = ("survival300", "demo", "wide", "survival", "survival1m", "generate")
# issue 31's Done-when: (wall seconds at most, peak MiB below) per case; the small-table ratios
# are printed with the survival300 case (:func:`_print_anchor`)
WIZARD_RERUNS = 3  # the wizard's re-run is timed this many times (median shown)
TARGETS = {"survival": (60.0, None), "survival1m": (180.0, 2048.0)}

# (label, module, attribute): functions looked up at call time, so patching the attribute times
# every call. A method is named "Class.method". Labels nest by the call stack.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("read", "engine.files.read", "read_table"),
    ("schema", "engine.columns.schema", "infer_schema"),
    ("encode", "engine.encoding.encoder", "TableEncoder.fit"),
    ("encode", "engine.encoding.encoder", "TableEncoder.transform"),
    ("audit", "engine.privacy.crossfit", "run_crossfit_audit"),
    ("split fit", "engine.privacy.crossfit", "make_split"),
    ("train flow", "engine.flows.select", "select_flow"),
    ("rank models", "engine.flows.select", "rank_family"),  # the audit's candidates, split 1
    ("train flows at once", "engine.flows.ensemble", "train_flows"),  # splits 2-12, batched
    ("final model", "engine.pipeline.release_step", "_train_final"),
    ("release draw", "engine.pipeline.release_step", "_draw_copies"),
    ("release measure", "engine.pipeline.release_step", "_measure"),
    ("disclosure rule", "engine.pipeline.disclosure_step", "apply_disclosure_rule"),
    ("decode", "engine.privacy.book", "draw_common"),
    ("score", "engine.privacy.crossfit", "score_draw"),
    ("checker statement", "engine.privacy.checker", "checker_statement"),
    ("decode latent", "engine.flows.train", "TrainedFlow.from_latent"),
    ("to distance space", "engine.encoding.encoder", "TableEncoder.distance_space"),
    ("neighbour search", "engine.privacy.measure", "nearest_distances"),
    ("density attack", "engine.search.density", "GaussianKDE.log_density"),
    ("release metrics", "engine.privacy.audit", "release_metrics"),  # imported at call time
    ("ranks", "engine.privacy.release", "record_ranks"),
    ("neighbours", "engine.privacy.release", "neighbour_distances"),
    ("protect outliers", "engine.privacy.audit", "protect_outliers"),
    ("fidelity models", "engine.pipeline.release_step", "fidelity_of"),
    ("PDF", "engine.report.build", "render_report"),
    ("write table", "engine.files.write", "table_writer"),
)


class StageClock:
    """Inclusive CPU and wall seconds per stage path ("audit/split fit/train flow")."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.per_w: dict[float, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
        self.local = threading.local()  # each thread's own stack of stages

    @property
    def stack(self) -> list[str]:
        """The calling thread's stages; a thread other than the main one (the final model
        beside the audit, the audit's decode ahead) starts under "[thread name]"."""
        if not hasattr(self.local, "stack"):
            main = threading.current_thread() is threading.main_thread()
            self.local.stack = [] if main else [f"[{threading.current_thread().name}]"]
        return self.local.stack

    def wrap(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` timed under ``label`` (nested under the stages running when it is called)."""

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            path = "/".join([*self.stack, label]) if label not in self.stack else None
            if path is None:  # recursion into the same stage: already counted
                return fn(*args, **kwargs)
            self.stack.append(label)
            c0, w0 = time.process_time(), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                cpu, wall = time.process_time() - c0, time.perf_counter() - w0
                self.stack.pop()
                self.cpu[path] += cpu
                self.wall[path] += wall
                self.calls[path] += 1
                if label == "per w":
                    rec = self.per_w[round(float(args[1]), 6)]
                    rec[0], rec[1], rec[2] = rec[0] + cpu, rec[1] + wall, rec[2] + 1

        return timed

    @contextlib.contextmanager
    def installed(self) -> Iterator[StageClock]:
        """Patch every stage of ``STAGES`` for the duration (modules imported here)."""
        undo: list[tuple[Any, str, Any]] = []
        for label, module_name, attr in STAGES:
            owner: Any = importlib.import_module(module_name)
            *path, name = attr.split(".")
            for part in path:
                owner = getattr(owner, part)
            original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            undo.append((owner, name, original))
            setattr(owner, name, self.wrap(label, original))
        try:
            yield self
        finally:
            for owner, name, original in reversed(undo):
                setattr(owner, name, original)


def _survival_table(rows: int, seed: int = 0) -> pd.DataFrame:
    """A survival table like a small cohort: age, sex, sbp, chol, smoker, time, event."""
    rng = np.random.default_rng(seed)
    age = rng.normal(60, 9, rows).round(0)
    sex = rng.choice(["F", "M"], rows)
    sbp = (120 + 0.5 * (age - 60) + rng.normal(0, 15, rows)).round(0)
    chol = rng.normal(5.4, 1.0, rows).round(1)
    smoker = rng.integers(0, 2, rows)
    hazard = 0.05 * np.exp(0.04 * (age - 60) + 0.4 * smoker + 0.01 * (sbp - 120))
    t_event, t_cens = rng.exponential(1 / hazard), rng.uniform(2, 15, rows)
    return pd.DataFrame(
        {
            "age": age, "sex": sex, "sbp": sbp, "chol": chol, "smoker": smoker,
            "time": np.minimum(t_event, t_cens).round(2), "event": (t_event <= t_cens).astype(int),
        }
    )  # fmt: skip


def _survival10_table(rows: int, seed: int = 0) -> pd.DataFrame:
    """:func:`_survival_table` with three more measurements (bmi, glucose, hdl): 10 columns."""
    frame = _survival_table(rows, seed)
    rng = np.random.default_rng(seed + 1)
    frame["bmi"] = (27 + 0.05 * (frame["age"] - 60) + rng.normal(0, 4, rows)).round(1)
    frame["glucose"] = (5.5 + 0.08 * (frame["bmi"] - 27) + rng.gamma(2.0, 0.4, rows)).round(1)
    frame["hdl"] = (1.4 - 0.02 * (frame["bmi"] - 27) + rng.normal(0, 0.3, rows)).round(2)
    return frame


def _wide_table(rows: int, cols: int = 8, seed: int = 0) -> pd.DataFrame:
    """``cols`` correlated continuous columns plus a 3-level category and a flag."""
    rng = np.random.default_rng(seed)
    X = rng.multivariate_normal(np.zeros(cols), 0.5 * np.eye(cols) + 0.5, rows)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(cols)]).round(2)
    frame["group"] = rng.choice(["a", "b", "c"], rows)
    frame["flag"] = rng.integers(0, 2, rows)
    return frame


def _write_table(case: str, rows: int, folder: Path) -> Path:
    """The case's table as a CSV file in ``folder`` (the user's file: not part of the timing)."""
    tables = {
        "survival300": _survival_table, "survival": _survival10_table,
        "survival1m": _survival10_table,
    }  # fmt: skip
    src = folder / "table.csv"
    tables.get(case, _wide_table)(rows).to_csv(src, index=False)
    return src


def _child_pipeline(
    case: str, rows: int, seed: int, tmp: Path, table: Path | None = None
) -> dict[str, Any]:
    """Run one pipeline case in this process with the stage clock installed (on ``table``,
    written by the parent before the clock started; else written here first)."""
    from engine.cli import main as cli_main

    if case == "demo":
        argv = ["demo"]
    else:
        src = table or _write_table(case, rows, tmp)
        argv = ["run", str(src)] + (["--time", "time", "--event", "event"] * (case != "wide"))
    argv += ["--out", str(tmp / "out"), "--quiet", "--seed", str(seed), "--allow-risky"]
    clock = StageClock()
    from engine.pipeline.console import collect_less

    default_gc = gc.get_threshold()
    collect_less()  # as the installed command runs (the re-runs below: the wizard's default)
    with clock.installed(), contextlib.suppress(SystemExit):
        cli_main(argv)
    gc.set_threshold(*default_gc)
    # the same run again in this process: what a re-run costs in the wizard, where the
    # libraries are already loaded (a clinician re-runs after every change of columns)
    warm_argv = [a if a != str(tmp / "out") else str(tmp / "out-warm") for a in argv]
    start, cpu0 = time.perf_counter(), time.process_time()
    if case not in ("wide", "survival", "survival1m"):  # (the large cases are long enough)
        from engine.files import read as table_read

        table_read._LAST_READ.clear()  # the file is read again, as after a change of columns
        with contextlib.suppress(SystemExit):
            cli_main(warm_argv)
    warm, warm_cpu = time.perf_counter() - start, time.process_time() - cpu0
    # the wizard's re-run three times (the same run each time: the spread is the machine's);
    # the median is the figure
    reruns = (
        [_wizard_rerun(argv, tmp) for _ in range(WIZARD_RERUNS)]
        if case not in ("wide", "survival", "survival1m")
        else [(0.0, 0.0)]
    )
    wizard_all = sorted(r[0] for r in reruns)
    wizard, wizard_cpu = float(np.median(wizard_all)), float(np.median([r[1] for r in reruns]))
    wizard_total = (sum(r[0] for r in reruns), sum(r[1] for r in reruns))
    record = json.loads((tmp / "out" / "audit.json").read_text())
    audit = record.get("audit", {})
    return {
        "warm_wall": warm,
        "warm_cpu": warm_cpu,
        "wizard_wall": wizard,
        "wizard_cpu": wizard_cpu,
        "wizard_all": wizard_all,
        "wizard_total": wizard_total,
        "stages": {k: [clock.cpu[k], clock.wall[k], clock.calls[k]] for k in clock.cpu},
        "per_w": {str(w): v for w, v in sorted(clock.per_w.items())},
        "selected_w": audit.get("selected_w"),
        "rows_audited": audit.get("rows_audited"),
        "curve": [[p["w"], p["auc"], p.get("density_auc")] for p in audit.get("curve", [])],
    }


def _wizard_rerun(argv: list[str], tmp: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the wizard's re-run after a change of columns, in this warm process:
    the Columns page's ``engine.prepare`` (read, kinds, encoder) and the Train page's
    ``engine.synthesize`` (audit, w, release, comparison); the PDF and the files are written
    later, when the user exports (desktop/session.py)."""
    from engine import prepare, synthesize
    from engine.cli import _config_from_args, build_parser
    from engine.files import read as table_read

    ns = build_parser().parse_args(argv)
    config = _config_from_args(ns, ns.input) if hasattr(ns, "input") else None
    if config is None:  # the demo: the command's own configuration
        return 0.0, 0.0
    table_read._LAST_READ.clear()
    start, cpu0 = time.perf_counter(), time.process_time()
    synthesize(prepare(config))
    return time.perf_counter() - start, time.process_time() - cpu0


def _child_generate(rows: int, seed: int) -> dict[str, Any]:
    """Train a flow on 20,000 rows (d = 10), then generate ``rows`` rows by Latent Noise
    Injection in chunks; peak memory is the process's."""
    from engine.flows.generate import latent_noise_injection
    from engine.flows.train import FlowConfig, train_flow

    rng = np.random.default_rng(seed)
    d = 10
    X_fit = rng.multivariate_normal(np.zeros(d), 0.5 * np.eye(d) + 0.5, 20_000)
    flow = train_flow(X_fit, FlowConfig(max_epochs=5), seed=seed)
    X = rng.multivariate_normal(np.zeros(d), 0.5 * np.eye(d) + 0.5, rows)
    c0, w0 = time.process_time(), time.perf_counter()
    out = latent_noise_injection(flow, X, 0.5, rng)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    finite = float(np.isfinite(out).all(axis=1).mean())
    return {"stages": {"generate": [cpu, wall, 1]}, "finite_share": finite, "rows": len(out)}


SDV_PYTHON = ROOT / ".venv-bench" / "bin" / "python"  # the benchmark extra (sdv 2)


def _anchor_sdv_child(rows: int) -> dict[str, float]:
    """In this process (which has sdv): import it, then fit + sample SDV's Gaussian copula on
    the ``rows``-row survival table three times; wall seconds of the import and of each fit +
    sample (the figure the issue compares with)."""
    start = time.perf_counter()
    from sdv.metadata import Metadata  # type: ignore[import-not-found]
    from sdv.single_table import GaussianCopulaSynthesizer  # type: ignore[import-not-found]

    imported = time.perf_counter() - start
    frame = _survival_table(rows)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            meta = Metadata.detect_from_dataframes({"t": frame})
            model = GaussianCopulaSynthesizer(meta)
            model.fit({"t": frame})  # SDV 2: a dict of tables
            model.sample(rows)
        times.append(time.perf_counter() - start)
    return {"import": imported, "fit_sample": float(np.median(times)), "first": times[0]}


def _anchor_sdv(rows: int) -> dict[str, float] | None:
    """SDV Gaussian copula fit + sample on the ``rows``-row survival table, in a fresh process
    of an interpreter that has sdv (this one, else ``.venv-bench``); None without sdv."""
    candidates = [Path(sys.executable), SDV_PYTHON, Path("/work/main/.venv-bench/bin/python")]
    for python in candidates:
        if not python.exists():
            continue
        cmd = [str(python), __file__, "--sdv-child", "--rows", str(rows)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode == 0 and proc.stdout.strip():
            return json.loads(proc.stdout.strip().splitlines()[-1])
    return None


def _run_child(case: str, rows: int, seed: int) -> dict[str, Any]:
    """One case in a fresh interpreter; wall, CPU and peak RSS measured from outside. The
    table file is written here first, as a user brings it: its making (0.9 s of CSV writing
    at 100,000 rows, about 9 s and the frame's memory at a million) is not the command's."""
    cmd = [sys.executable, __file__, "--child", case, "--rows", str(rows), "--seed", str(seed)]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    with tempfile.TemporaryDirectory() as folder:
        if case not in ("demo", "generate"):
            cmd += ["--table", str(_write_table(case, rows, Path(folder)))]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        out, _ = proc.communicate()
        wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"case {case} failed with exit status {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    # the fresh command alone: the child's re-runs (the command again, the wizard's) are taken off
    total_wall, total_cpu = result.get("wizard_total", (0.0, 0.0))
    result["wall"] = wall - result.get("warm_wall", 0.0) - total_wall
    result["cpu"] -= result.get("warm_cpu", 0.0) + total_cpu
    return result


def _print_case(case: str, rows: int, result: dict[str, Any]) -> None:
    print(
        f"\n{case} ({rows:,} rows): {result['wall']:.1f} s wall, {result['cpu']:.1f} s CPU, "
        f"peak RSS {result['peak_mib']:.0f} MiB"
    )
    if result.get("warm_wall", 0.0) > 0.5:
        print(
            "  the same run again in the same process (a re-run in the wizard): "
            f"{result['warm_wall']:.1f} s wall"
        )
    for path, (cpu, wall, calls) in sorted(result["stages"].items()):
        depth = path.count("/")
        name = path.rsplit("/", 1)[-1]
        print(
            f"  {'  ' * depth}{name:<{28 - 2 * depth}} {cpu:7.2f} s CPU {wall:7.2f} s wall  "
            f"x{calls}"
        )
    for w, (cpu, wall, calls) in result.get("per_w", {}).items():
        print(f"    w = {float(w):<8g} {cpu:6.2f} s CPU {wall:6.2f} s wall over {calls} splits")
    if "selected_w" in result:
        print(f"  selected w {result['selected_w']}, rows audited {result['rows_audited']}")
    if "finite_share" in result:
        print(f"  finite rows {result['finite_share']:.4f}")


def _print_anchor(rows: int, result: dict[str, Any]) -> None:
    """The small-table ratios of issue 31: our fresh command (at most 15x) and our re-run in
    the same process (at most 5x) against SDV's Gaussian copula fit + sample on the same table
    (median of three in a warm process; its import is shown apart)."""
    anchor = _anchor_sdv(rows)
    if anchor is None:
        print("  SDV GaussianCopula: sdv not installed (the .venv-bench extra); no ratios")
        return
    base = anchor["fit_sample"]
    cold, warm = result["wall"] / base, result["warm_wall"] / base
    print(
        f"  SDV GaussianCopula fit + sample {base:.2f} s (its import {anchor['import']:.1f} s "
        f"apart): a fresh command {result['wall']:.2f} s = {cold:.1f}x (target 15x, "
        f"{'met' if cold <= 15 else 'not met'}), the whole command again in the same process "
        f"{result['warm_wall']:.2f} s = {warm:.1f}x (PDF and files included)"
    )
    if result.get("wizard_wall"):
        wiz = result["wizard_wall"] / base
        print(
            f"  the wizard's re-run after a change of columns (prepare + synthesize, the PDF "
            f"written at export) {result['wizard_wall']:.2f} s = {wiz:.1f}x (target 5x, "
            f"{'met' if wiz <= 5 else 'not met'}; median of "
            f"{', '.join(f'{x:.2f}' for x in result.get('wizard_all', []))} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--rows", type=int, default=None, help="rows of the wide / generate case")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--sdv-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--table", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sdv_child:
        print(json.dumps(_anchor_sdv_child(args.rows or 300)))
        return
    if args.child:
        with tempfile.TemporaryDirectory() as tmp:
            if args.child == "generate":
                result = _child_generate(args.rows, args.seed)
            else:
                result = _child_pipeline(args.child, args.rows, args.seed, Path(tmp), args.table)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        result["cpu"] = usage.ru_utime + usage.ru_stime
        result["peak_mib"] = usage.ru_maxrss / 1024
        print(json.dumps(result))
        from engine.pipeline.console import exit_now

        exit_now(0)  # as the installed command ends: without the interpreter's teardown
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    default_rows = {
        "survival300": 300, "demo": 1608, "wide": 100_000, "survival": 100_000,
        "survival1m": 1_000_000, "generate": 1_000_000,
    }  # fmt: skip
    for case in args.cases:
        large = ("wide", "survival", "generate")
        rows = args.rows if args.rows is not None and case in large else None
        rows = rows or default_rows[case]
        result = _run_child(case, rows, args.seed)
        _print_case(case, rows, result)
        if case == "survival300":
            _print_anchor(rows, result)
        if case in TARGETS and rows == default_rows[case]:
            wall, peak = TARGETS[case]
            met = result["wall"] <= wall and (peak is None or result["peak_mib"] < peak)
            limit = f"{wall:.0f} s" + ("" if peak is None else f", peak under {peak:.0f} MiB")
            print(f"  issue 31 target ({limit}): {'met' if met else 'not met'}")
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
