"""How far apart two fresh real samples' disclosure measures fall: the margin of the disclosure
rule (issue 29, ``engine/disclosure/check.py``).

For each public table (lifelines' lung, rossi, gbsg2, kidney_transplant, lymph_node, scikit-learn's
diabetes, the demo cohort; with ``SKSURV_DATA`` set, scikit-survival's whas500, actg320 and
flchain) and seed, the rows are split at random into P (the "real table") and Q
(a "release" that is a second fresh real sample: people not in P, disclosing nothing about P by
construction), Q's rows are paired with P's at random, and the comparison of the pipeline runs
(``measure_disclosure``: halves of P, the release's share vs the other half) gives the excess of
DiSCO (per target) and repU of this "release" over the fresh sample. Its spread is what the rule
must allow for a release that is as good as a fresh sample; the script prints, per table, the
mean, the 95th and 99th percentiles and the maximum of the excess (percentage points), and the
same for the inference attack's success.

Keys and targets are the suggested ones (``engine/columns/keys.py``): age, sex, race and the like;
the event and the clinical columns.

Results: docs/bench.md ("Speed history", ``disclosure_margin.py``).

Run: ``PYTHONPATH=. nice -n 10 python benchmarks/disclosure_margin.py [--seeds 20]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from engine.columns.keys import suggest_keys, suggest_targets
from engine.columns.schema import infer_schema
from engine.disclosure.check import NUMERIC_KINDS, measure_disclosure

# candidate rules: (floor in points, multiple of the fresh sample's spread over the halvings)
RULES = {"3": (3.0, 0.0), "5": (5.0, 0.0), "max(3,3sd)": (3.0, 3.0), "max(3,4sd)": (3.0, 4.0),
         "max(2,4sd)": (2.0, 4.0), "max(3,5sd)": (3.0, 5.0)}  # fmt: skip


def tables() -> dict[str, tuple[pd.DataFrame, str | None, str | None]]:
    """name -> (frame, time column, event column)."""
    import lifelines.datasets as ld
    from sklearn.datasets import load_diabetes

    from engine.pipeline.demo import demo_input

    demo = pd.read_csv(demo_input(), dtype={"participant_id": str})
    demo = demo[demo["study"] == "Framingham M"].drop(columns=["study", "cohort"])
    diabetes = load_diabetes(as_frame=True, scaled=False).frame
    out = {
        "lung": (ld.load_lung(), "time", "status"),
        "rossi": (ld.load_rossi(), "week", "arrest"),
        "gbsg2": (ld.load_gbsg2(), "time", "cens"),
        "kidney": (ld.load_kidney_transplant(), "time", "death"),
        "lymph_node": (ld.load_lymph_node(), "survtime", "censrec"),
        "diabetes": (diabetes, None, None),
        "demo": (demo, "time_cvd_years", "cvd"),
    }
    return out | sksurv_tables()


def sksurv_tables() -> dict[str, tuple[pd.DataFrame, str | None, str | None]]:
    """scikit-survival's whas500, actg320 (AIDS) and flchain, read from the ARFF files of its
    wheel (``pip download --no-deps scikit-survival``, unzip ``sksurv/datasets/data``) in the
    folder named by ``SKSURV_DATA``: no install, so no second numpy or torch. Empty without it."""
    import os
    from pathlib import Path

    from scipy.io import arff

    folder = os.environ.get("SKSURV_DATA")
    if not folder:
        return {}

    def load(name: str) -> pd.DataFrame:
        data, _ = arff.loadarff(Path(folder) / f"{name}.arff")
        frame = pd.DataFrame(data)
        for c in frame.columns:
            if frame[c].dtype == object:
                frame[c] = frame[c].str.decode("utf-8")
                numbers = pd.to_numeric(frame[c], errors="coerce")
                if numbers.notna().sum() == frame[c].ne("?").sum():  # "0"/"1" coded as nominal
                    frame[c] = numbers
        return frame

    flchain = load("flchain").drop(columns=["chapter"])  # chapter: the cause of death, as text
    return {
        "whas500": (load("whas500"), "lenfol", "fstat"),
        "actg320": (load("actg320").drop(columns=["time_d", "censor_d"]), "time", "censor"),
        "flchain": (
            flchain.assign(death=(flchain["death"] == "dead").astype(int)),
            "futime",
            "death",
        ),
    }


def one_table(frame: pd.DataFrame, time_col: str | None, event: str | None, seeds: int) -> dict:
    schema = infer_schema(frame, time=time_col, event=event)
    cols = schema.synthesized()
    keys = suggest_keys(cols)
    targets = suggest_targets(cols, keys, event=schema.event)
    numeric = [c.name for c in cols if c.kind in NUMERIC_KINDS]
    real = frame[[c.name for c in cols]].dropna().reset_index(drop=True)
    excess: dict[str, list[float]] = {"repU": []}
    inference: list[float] = []
    refused: dict[str, list[bool]] = {}
    worst: list[float] = []  # per run: the largest excess / fresh sd over repU and the targets
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(real))
        half = len(real) // 2
        p, q = real.iloc[perm[:half]], real.iloc[perm[half : 2 * half]]
        out = measure_disclosure(p, q, keys, targets, rng=rng, numeric=numeric)
        excess["repU"].append(out.repu_release - out.repu_fresh)
        ratio = [(out.repu_release - out.repu_fresh) / max(out.repu_fresh_sd, 0.5)]
        for t in out.targets:
            excess.setdefault(f"DiSCO {t.target}", []).append(t.disco_release - t.disco_fresh)
            inference.append(t.inference_release - t.inference_fresh)
            ratio.append((t.disco_release - t.disco_fresh) / max(t.disco_fresh_sd, 0.5))
        worst.append(max(ratio))
        pairs = [(out.repu_release - out.repu_fresh, out.repu_fresh_sd)] + [
            (t.disco_release - t.disco_fresh, t.disco_fresh_sd) for t in out.targets
        ]
        refused.setdefault("the rule", []).append(not out.holds)
        for name, (floor, z) in RULES.items():
            refused.setdefault(name, []).append(any(e > max(floor, z * sd) for e, sd in pairs))
    return {"rows": len(real), "keys": keys, "targets": targets, "excess": excess,
            "inference": inference, "worst": worst, "refused": refused}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    everything: list[float] = []
    worst: list[float] = []
    refusals: dict[str, list[bool]] = {}
    for name, (frame, time_col, event) in tables().items():
        t0 = time.perf_counter()
        res = one_table(frame, time_col, event, args.seeds)
        print(f"\n{name}: {res['rows']} rows, keys {res['keys']}, targets {res['targets']} "
              f"({time.perf_counter() - t0:.1f} s)")  # fmt: skip
        for what, values in res["excess"].items():
            v = np.asarray(values)
            everything += list(v)
            print(
                f"  {what:28s} mean {v.mean():+5.2f}  sd {v.std():4.2f}  p95 "
                f"{np.percentile(v, 95):+5.2f}  p99 {np.percentile(v, 99):+5.2f}  "
                f"max {v.max():+5.2f}"
            )
        worst += res["worst"]
        for name, flags in res["refused"].items():
            refusals.setdefault(name, []).extend(flags)
        print(
            "  false refusals: "
            + ", ".join(f"{k} {np.mean(v):.0%}" for k, v in res["refused"].items())
        )
        w = np.asarray(res["worst"])
        print(
            f"  {'largest excess / fresh sd':28s} p50 {np.median(w):5.2f}  p95 "
            f"{np.percentile(w, 95):5.2f}  max {w.max():5.2f}"
        )
        inf = np.asarray(res["inference"])
        print(
            f"  {'inference success (all)':28s} mean {inf.mean():+5.2f}  p95 "
            f"{np.percentile(inf, 95):+5.2f}  p99 {np.percentile(inf, 99):+5.2f}  "
            f"max {inf.max():+5.2f}"
        )
    w = np.asarray(worst)
    print(
        f"\nper run, largest excess / fresh sd: p90 {np.percentile(w, 90):.2f}, p95 "
        f"{np.percentile(w, 95):.2f}, p99 {np.percentile(w, 99):.2f}, max {w.max():.2f}"
    )
    print(
        "false refusals over all runs: "
        + ", ".join(f"{k} {np.mean(v):.1%}" for k, v in refusals.items())
    )
    allv = np.asarray(everything)
    print(f"\nall DiSCO/repU excesses: p95 {np.percentile(allv, 95):.2f}, p99 "
          f"{np.percentile(allv, 99):.2f}, max {allv.max():.2f} points")  # fmt: skip


if __name__ == "__main__":
    main()
