"""The automatic analysis (engine.stats.plan) on the public tables of the bench and on the two
raw public tables the issue names (ACTG 320 with every column, flchain with the cause of
death): the survival pair recognised, the exposure, the columns left out and the rows used,
beside the hand-written model of ``benchmarks/bench_tables.py``. Prints one block per table.

Run: ``.venv-bench/bin/python benchmarks/bench_analysis_plan.py`` (scikit-survival, SurvSet).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tables import TABLES, load  # noqa: E402

from engine import RunConfig, recognise_survival_roles  # noqa: E402
from engine.pipeline.compare_step import analysis_plan  # noqa: E402
from engine.pipeline.prepare_step import prepare  # noqa: E402


def _raw() -> dict[str, pd.DataFrame]:
    from sksurv.datasets import load_aids, load_flchain

    x, y = load_aids(endpoint="aids")
    aids = pd.DataFrame({"time": y["time"], "censor": y["censor"].astype(int)})
    aids = pd.concat([aids, x.astype(str).apply(pd.to_numeric, errors="ignore")], axis=1)
    x, y = load_flchain()
    fl = x.copy()
    fl["futime"], fl["death"] = y["futime"], y["death"].astype(int)
    return {"ACTG 320 (raw)": aids, "flchain (raw)": fl}


def main() -> None:
    frames = {name: (load(name).frame, load(name).spec) for name in TABLES}
    frames.update({k: (v, None) for k, v in _raw().items()})
    folder = Path(tempfile.mkdtemp())
    for name, (frame, spec) in frames.items():
        found = recognise_survival_roles(frame)
        time = found.time or found.likely_time
        event = found.event or found.likely_event
        path = folder / f"{name.split()[0]}.csv"
        frame.to_csv(path, index=False)
        print(
            f"== {name}: {len(frame)} rows; recognised {time}/{event}"
            + (f" (asked: {found.question})" if found.question else "")
        )
        if spec is not None:
            print(f"   bench model: {spec.time}/{spec.event}; {', '.join(spec.covariates)}")
        if not (time and event):
            continue
        plan = analysis_plan(prepare(RunConfig(input=path, time=time, event=event, seed=1)))
        for line in plan.lines() if plan else ():
            print(f"   {line}")


if __name__ == "__main__":
    main()
