"""How honest the wizard's "time left" is (issue 33, item 3): record the one-click job's progress
trace on a table, then replay it through the estimators and compare each estimate with the time
that was really left.

Run: ``python benchmarks/bench_time_left.py TABLE.csv --time T --event E [--trace out.json]``,
or ``--replay trace.json`` to score a trace recorded before. Prints, per estimator:

* the first estimate shown and its error against the real time left at that moment;
* the median and worst absolute error over the run (estimates read once a second);
* the longest countdown while the bar stood still (seconds the estimate fell with no progress).

Estimators: ``old one-click`` (the whole elapsed time extrapolated, shown from 2 % on),
``old wizard`` (the rate after the first epochs, counting down between reports), ``new, rate
from the first epochs`` (:class:`desktop.worker.TimeLeft`: the rate up to now, so a stalled
stage makes the estimate grow, never count down) and ``new (used)`` (the same, its rate measured
from the first privacy test on, ``wait_for_audit``: what both faces show now).

Results: docs/bench.md ("Speed history", ``bench_time_left.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def record(table: Path, fields: dict) -> list[tuple[float, float, str, str]]:
    """(seconds since start, fraction, status text, "epoch" / "audit" / "") per progress call."""
    from engine import RunConfig, prepare, sub_progress, synthesize
    from engine.progress import AuditPointDone, EpochDone

    config = RunConfig(input=table, **fields)
    config.validate()
    t0 = time.monotonic()
    rows: list[tuple[float, float, str, str]] = []

    def progress(fraction: float, text: str, partial: object = None) -> None:
        kind = (
            "epoch"
            if isinstance(partial, EpochDone)
            else "audit"
            if isinstance(partial, AuditPointDone)
            else ""
        )
        rows.append((time.monotonic() - t0, fraction, text, kind))

    prep = prepare(config, sub_progress(progress, 0.0, 0.03))
    synthesize(prep, sub_progress(progress, 0.03, 0.95))
    rows.append((time.monotonic() - t0, 1.0, "done", ""))
    return rows


def _old_wizard_seconds(anchor: tuple[float, float] | None, last: tuple[float, float], now: float):
    if anchor is None:
        return None
    (t0, f0), (tl, fl) = anchor, last
    moved, spent = fl - f0, tl - t0
    if moved <= 0 or spent < 0.5:
        return None
    return max((1.0 - fl) * spent / moved - (now - tl), 0.0)


def replay(rows: list[tuple[float, float, str, str]]) -> dict[str, dict[str, float]]:
    """Each estimator read once a second over the trace; errors against the real time left, and
    the longest countdown while the bar stood still."""
    from desktop.worker import TimeLeft

    total = rows[-1][0]
    new, new_wait = TimeLeft(), TimeLeft(wait_for_audit=True)
    epochs, anchor, last, furthest, k, now = 0, None, (0.0, 0.0), 0.0, 0, 0.0
    reads: dict[str, list[tuple[float, float, float]]] = {
        "old one-click": [], "old wizard": [], "new, rate from the first epochs": [],
        "new (used)": [],
    }  # fmt: skip
    while now < total - 1.0:
        now += 1.0
        while k < len(rows) and rows[k][0] <= now:
            t, f, _, kind = rows[k]
            if kind == "epoch":
                epochs += 1
                new.epoch()
                new_wait.epoch()
            elif kind == "audit":
                new_wait.audited()
            furthest = max(furthest, f)
            new.update(f, now=t)
            new_wait.update(f, now=t)
            last = (t, furthest)
            if anchor is None and epochs >= new.min_epochs:
                anchor = last
            k += 1
        truth = total - now
        if furthest > 0.02:
            reads["old one-click"].append((truth, now / furthest * (1 - furthest), furthest))
        old = _old_wizard_seconds(anchor, last, now)
        if old is not None:
            reads["old wizard"].append((truth, old, furthest))
        for name, estimator in (("new, rate from the first epochs", new), ("new (used)", new_wait)):
            est = estimator.seconds(now=now)
            if est is not None:
                reads[name].append((truth, est, furthest))
    return {name: _score(pairs, total) for name, pairs in reads.items()}


def _score(reads: list[tuple[float, float, float]], total: float) -> dict[str, float]:
    nan = float("nan")
    if not reads:
        return dict.fromkeys(
            ("first_s", "truth_s", "first_pct", "median_s", "worst_s", "down_s"), nan
        )
    errors = [abs(e - t) for t, e, _ in reads]
    down, run = 0.0, 0.0
    for (_, e0, f0), (_, e1, f1) in zip(reads[:-1], reads[1:], strict=False):
        run = run + (e0 - e1) if (f1 <= f0 + 1e-6 and e1 < e0) else 0.0
        down = max(down, run)
    truth, first = reads[0][0], reads[0][1]
    return {
        "first_s": first,
        "truth_s": truth,
        "first_pct": 100 * abs(first - truth) / max(truth, 1e-9),
        "median_s": statistics.median(errors),
        "worst_s": max(errors),
        "down_s": down,
    }


def _stalls(rows: list[tuple[float, float, str, str]]) -> float:
    """The longest time the bar stood still (seconds)."""
    longest, since, f_then = 0.0, 0.0, -1.0
    for t, f, _, _ in rows:
        if f > f_then + 1e-4:
            longest, since, f_then = max(longest, t - since), t, f
    return longest


def _kind(value: object) -> str:
    """A recorded trace marks a partial as "epoch" / "audit" or as ``{"kind": ...}``."""
    return str(value.get("kind", "")) if isinstance(value, dict) else str(value or "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", nargs="?")
    parser.add_argument("--time")
    parser.add_argument("--event")
    parser.add_argument("--trace", help="write the recorded trace here (JSON)")
    parser.add_argument("--replay", help="score a trace recorded before (JSON)")
    args = parser.parse_args()
    if args.replay:
        raw = json.loads(Path(args.replay).read_text())
        rows = [(r[0], r[1], r[2], _kind(r[3])) for r in raw]
    else:
        fields = {k: v for k, v in (("time", args.time), ("event", args.event)) if v}
        rows = record(Path(args.table), fields)
        if args.trace:
            Path(args.trace).write_text(json.dumps(rows))
    print(f"run: {rows[-1][0]:.0f} s; the bar stood still for up to {_stalls(rows):.0f} s")
    for name, r in replay(rows).items():
        print(
            f"{name:32s} first {r['first_s']:5.0f} s (really {r['truth_s']:4.0f} s left: "
            f"{r['first_pct']:3.0f} % off); median error {r['median_s']:4.0f} s, worst "
            f"{r['worst_s']:4.0f} s; longest countdown with the bar still {r['down_s']:3.0f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
