"""How soon Cancel stops a run (issue 44; the guide says a second or two): seconds from the
cancel request to the stop, per stage, on a generated table.

Run: ``python benchmarks/bench_cancel.py [--rows 8000] [--seed 1] [--stages audit,final,...]``.

Two measurements, both on a generated cohort of ``--rows`` rows x 10 columns (age, sex, BMI,
blood pressure, cholesterol, smoker, stage, arm, follow-up time, death):

* **trace** (one whole run, prepare to written files): every place the run could see a cancel
  is timed (the token's checks, and each progress report, which the desktop's worker turns into
  a check); per stage, the longest stretch between two such places is the worst wait a Cancel
  pressed in that stage can have, with the token's checks only (before issue 44) and with the
  reports too.
* **cancel** (one run per stage): Cancel is pressed a little after the stage starts (at the
  first progress report whose words name it, plus ``--delay`` seconds, from another thread as
  the desktop does) and the seconds until the run stops are printed; the output folder must
  then be empty.

The stages: ``ranking`` (the audit's candidate models), ``audit-models`` (its split models,
trained side by side), ``attacks`` (its attacks at each w), ``release`` (drawing the synthetic
rows), ``disclosure`` (when the run has that step), ``compare`` (real against synthetic
results), ``report`` (writing the files and the PDF). The final model trains beside the audit.

Results: docs/bench.md ("Speed history", ``bench_cancel.py``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STAGES = {  # stage -> words of the first progress report that belongs to it
    "ranking": ("choosing the model",),  # the audit's candidates, trained one by one
    "audit-models": ("training flow (",),  # the audit's split models, trained side by side
    "attacks": ("audit: w =",),  # the audit's attacks, one (split, w) at a time
    "release": ("generating synthetic rows",),
    "disclosure": ("disclosure",),
    "compare": ("comparing",),
    "report": ("writing",),
}


def cohort(rows: int, seed: int) -> pd.DataFrame:
    """A generated cohort: 10 columns, survival outcome, a few links between columns."""
    rng = np.random.default_rng(seed)
    age = rng.normal(62, 11, rows).round().clip(25, 95)
    sex = rng.choice(["F", "M"], rows)
    bmi = (rng.normal(27, 4.5, rows) + 0.03 * (age - 62)).round(1)
    sbp = (110 + 0.5 * age + rng.normal(0, 14, rows)).round()
    chol = rng.normal(5.2, 1.0, rows).round(2)
    smoker = rng.choice(["never", "former", "current"], rows, p=[0.5, 0.3, 0.2])
    stage = rng.choice(["I", "II", "III", "IV"], rows, p=[0.3, 0.3, 0.25, 0.15])
    arm = rng.choice(["control", "treatment"], rows)
    hazard = np.exp(
        0.03 * (age - 62) + 0.4 * (stage == "IV") - 0.3 * (arm == "treatment") + 0.2 * (sex == "M")
    )
    t_event = rng.exponential(2000 / hazard)
    t_cens = rng.uniform(200, 3000, rows)
    time_ = np.minimum(t_event, t_cens).round().clip(1, None)
    died = (t_event <= t_cens).astype(int)
    return pd.DataFrame(
        {
            "age": age,
            "sex": sex,
            "bmi": bmi,
            "sbp": sbp,
            "chol": chol,
            "smoker": smoker,
            "stage": stage,
            "arm": arm,
            "fu_days": time_,
            "died": died,
        }
    )  # noqa: E501


def _stage_of(text: str, current: str) -> str:
    words = text.lower()
    for name, keys in STAGES.items():
        if any(k in words for k in keys):
            return name
    return current


def _run(table: Path, out: Path, seed: int, progress, token) -> None:
    """prepare, synthesize and write, as the one-click job does."""
    from engine import RunConfig, prepare, sub_progress, synthesize
    from engine.pipeline import write_outputs

    config = RunConfig(input=table, time="fu_days", event="died", seed=seed, out=out)
    prep = prepare(config, sub_progress(progress, 0.0, 0.03))
    result = synthesize(prep, sub_progress(progress, 0.03, 0.95), token)
    if result.synthetic is not None:
        write_outputs(result, out, sub_progress(progress, 0.95, 1.0))


class _Watched:
    """A cancel token that times each check (and is never set)."""

    def __init__(self, checks: list[float]) -> None:
        from engine.progress import CancelToken

        self.token = CancelToken()
        token, record = self.token, checks.append

        class Token(type(token)):  # type: ignore[misc]
            def raise_if_cancelled(self) -> None:
                record(time.perf_counter())
                super().raise_if_cancelled()

            @property
            def cancelled(self) -> bool:
                record(time.perf_counter())
                return super().cancelled

        self.token.__class__ = Token


def trace(table: Path, seed: int) -> None:
    checks: list[float] = []  # the token's own checks
    reports: list[float] = []  # progress reports (checks too, through the desktop's worker)
    stages: list[tuple[float, str]] = [(time.perf_counter(), "reading")]
    watched = _Watched(checks)

    def progress(fraction: float, text: str, partial: object = None) -> None:
        now = time.perf_counter()
        reports.append(now)
        stage = _stage_of(text, stages[-1][1])
        if stage != stages[-1][1]:
            stages.append((now, stage))

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        _run(table, Path(tmp) / "out", seed, progress, watched.token)
    end = time.perf_counter()
    stages.append((end, "end"))
    print(f"trace: whole run {end - t0:.1f} s; longest wait for a cancel to be seen, per stage")
    print(f"  {'stage':<12}{'seconds':>9}{'token checks only':>19}{'and each report':>17}")
    for (a, name), (b, _) in zip(stages, stages[1:], strict=False):
        gaps = []
        for places in (checks, checks + reports):
            points = [a, *sorted(c for c in places if a <= c <= b), b]
            gaps.append(max(y - x for x, y in zip(points, points[1:], strict=False)))
        print(f"  {name:<12}{b - a:>9.1f}{gaps[0]:>19.2f}{gaps[1]:>17.2f}")


def cancel_at(table: Path, seed: int, stage: str, delay: float, old: bool) -> None:
    from engine.errors import Cancelled
    from engine.progress import CancelToken

    token = CancelToken()
    pressed: list[float] = []
    timers: list[threading.Thread] = []

    def press() -> None:
        time.sleep(delay)
        pressed.append(time.perf_counter())
        token.cancel()

    def progress(fraction: float, text: str, partial: object = None) -> None:
        if not timers and _stage_of(text, "") == stage:
            timers.append(threading.Thread(target=press, daemon=True))
            timers[0].start()
        if not old and fraction < 1.0:  # what desktop.worker.Task does with each report but
            token.raise_if_cancelled()  # the last ("files written", after the files are in place)

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        t0 = time.perf_counter()
        try:
            _run(table, out, seed, progress, token)
        except Cancelled:
            stopped = time.perf_counter()
            left = sorted(p.name for p in out.iterdir()) if out.exists() else []
            wait = stopped - pressed[0]
            print(
                f"  {stage:<12} pressed at {pressed[0] - t0:6.1f} s, stopped {wait:5.2f} s "
                f"later; files left: {left or 'none'}"
            )
            return
        print(f"  {stage:<12} the run ended ({time.perf_counter() - t0:.1f} s) before a cancel")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--old", action="store_true", help="cancel: token checks only")
    parser.add_argument("--no-trace", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "cohort.csv"
        cohort(args.rows, args.seed).to_csv(table, index=False)
        print(f"table: {args.rows} rows x 10 columns (generated, seed {args.seed})")
        if not args.no_trace:
            trace(table, args.seed)
        print(f"cancel pressed {args.delay:g} s after each stage starts:")
        for stage in [s for s in args.stages.split(",") if s]:
            cancel_at(table, args.seed, stage, args.delay, args.old)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
