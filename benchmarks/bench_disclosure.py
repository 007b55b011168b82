"""Identity and attribute disclosure of latent-synth's releases on public tables (issue 29): the
measures, the fresh-sample reference, the margin, and whether the disclosure rule binds.

Each table (lifelines' lung, rossi, gbsg2, kidney_transplant, lymph_node; scikit-learn's
diabetes; the demo cohort's Framingham M; with ``SKSURV_DATA`` set, scikit-survival's whas500,
actg320 and flchain: ``benchmarks/disclosure_margin.py``) runs through the real pipeline
(``prepare`` + ``synthesize``, ``fast`` budget, suggested keys and targets) for each seed; the
script prints per run the audit's w, the released w and who chose it, the verdict, repU (release /
fresh / margin) and per target DiSCO (release / fresh / margin) and anonymeter's inference risk, and
the disclosure seconds.

Measured (3 seeds, flchain 2; ``fast`` budget, 2-core machine, suggested keys): 27 of 29 runs
released (gbsg2 seed 1 and diabetes seed 2 refused by the membership audit, before any
disclosure measure), and the disclosure rule held on all 27 files at the audit's w: it never
bound. actg320 (AIDS trial, 1,151 rows, keys sex, race/ethnicity and age): the event's DiSCO
45-49 % against 49-51 % for the fresh sample, inference risk 0.00-0.06; whas500 (keys age and
gender): 26-33 % against 32-36 %; flchain (7,874 rows): 1.6-2.4 % against 1.7-2.0 %. The released
file's DiSCO sat within -13 to +7 points of the fresh real sample's (largest excess: lung's status,
keys age and sex, 39.5 % against 32.7 %, margin 25; rossi's arrest 15.0 % against 11.9 %; the demo's
cvd 8.5 % against 6.3 %), repU within -1.5 to +1 point, anonymeter's inference risk at most 0.07
(upper 95 % bounds up to 0.31 on lung's 228 rows). Forced to w = 0.9 and 0.99 (risk acknowledged) on
lung, rossi, kidney and the demo the rule still held: with keys as coarse as age and sex a key group
holds several patients, so a file that copies them discloses about what the group's share in any
real sample does (DiSCO 4.6 % against 2.1 % at most); the rule binds on fine keys
(``tests/test_disclosure_rule.py``: age x sex x ethnicity, 600 rows, a copying release at 68 %
against 27 %). The measures took 0.05-0.7 s a run (0.05 s on the demo after the nearest records were
found once per halving).

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
