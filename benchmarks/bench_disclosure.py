"""Identity and attribute disclosure of latent-synth's releases on public tables (issue 29): the
measures, the fresh-sample reference, the margin, and whether the disclosure rule binds.

Each table (lifelines' lung, rossi, gbsg2, kidney_transplant, lymph_node; scikit-learn's
diabetes; the demo cohort's Framingham M; with ``SKSURV_DATA`` set, scikit-survival's whas500,
actg320 and flchain: ``benchmarks/disclosure_margin.py``) runs through the real pipeline
(``prepare`` + ``synthesize``, ``fast`` budget, suggested keys and targets) for each seed; the
script prints per run the audit's w, the released w and who chose it, the verdict, repU (release /
fresh / margin) and per target DiSCO (release / fresh / margin) and anonymeter's inference risk, and
the disclosure seconds.

Results: docs/bench.md ("Speed history", ``bench_disclosure.py``).

Run: ``PYTHONPATH=. nice -n 10 python benchmarks/bench_disclosure.py [--seeds 3]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from benchmarks.disclosure_margin import tables
from engine.pipeline import RunConfig, prepare, synthesize


def one_run(path: Path, time_col: str | None, event: str | None, seed: int) -> str:
    t0 = time.perf_counter()
    config = RunConfig(input=path, time=time_col, event=event, seed=seed, report=False)
    result = synthesize(prepare(config))
    seconds = time.perf_counter() - t0
    found = getattr(result.release, "disclosure", None)
    rel = result.release
    head = (
        f"  seed {seed}: audit w {result.audit.selected_w}, released w {rel.w}, "
        f"{result.verdict} ({seconds:.1f} s, disclosure "
        f"{result.timings.get('disclosure_seconds', 0.0):.2f} s)"
    )
    if found is None:
        return head + " - no keys"
    lines = [head, f"    chosen by: {getattr(rel, 'chosen_by', 'refused')}"]
    lines.append(
        f"    UiO {found.uio:5.1f}  repU {found.repu_release:5.1f} / fresh {found.repu_fresh:5.1f}"
        f" / margin {found.repu_margin:4.1f}  (whole file {found.repu_whole:5.1f})"
    )
    for t in found.targets:
        inf = t.inference
        lines.append(
            f"    {t.target:16s} DiO {t.dio:5.1f}  DiSCO {t.disco_release:5.1f} / fresh "
            f"{t.disco_fresh:5.1f} / margin {t.margin:4.1f} {'ok ' if t.holds else 'BAD'}  "
            f"infer {t.inference_release:5.1f} / {t.inference_fresh:5.1f}  risk {inf.risk:.2f} "
            f"[{inf.ci_low:.2f}, {inf.ci_high:.2f}]"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench_disclosure_"))
    for name, (frame, time_col, event) in tables().items():
        if args.only and name not in args.only:
            continue
        path = folder / f"{name}.csv"
        pd.DataFrame(frame).to_csv(path, index=False)
        print(f"\n{name}: {len(frame)} rows")
        for seed in range(args.seeds):
            print(one_run(path, time_col, event, seed), flush=True)


if __name__ == "__main__":
    main()
