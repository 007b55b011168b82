"""Simulate the embedded demo cohort from the paper's Table 3 (docs/method.md section 8).

Twelve sub-studies (six cohorts x sex) with the published size, CVD event share and
mean (SD) of follow-up time, age, total cholesterol, HDL and systolic blood pressure.
Survival times follow a proportional-hazards model with a realistic positive effect of
SBP (HR 1.17 per 10 mmHg, the paper's pooled adjusted estimate), age and total
cholesterol, and a protective effect of HDL; administrative censoring at each
participant's follow-up end. The baseline hazard of each sub-study is calibrated so the
event share matches Table 3. Every value is simulated: no real participant is in it.

Run: ``python scripts/make_demo_cohort.py`` (fixed seed; rewrites resources/demo_cohort.csv).

References: Table 3 of the main paper (seeds/latent-noise-injection-paper.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20241123
# study, sex, n, event share, time mean, time sd, age, sd, tc, sd, hdl, sd, sbp, sd
TABLE3 = [
    ("ARIC", "F", 8101, 0.16, 20, 6, 54, 6, 218, 43, 57, 17, 120, 19),
    ("ARIC", "M", 6762, 0.26, 18, 7, 55, 6, 211, 40, 44, 14, 122, 18),
    ("CARDIA", "F", 2743, 0.04, 33, 4, 25, 4, 177, 33, 56, 13, 107, 10),
    ("CARDIA", "M", 2297, 0.07, 32, 6, 25, 4, 176, 34, 50, 13, 115, 10),
    ("CHS", "F", 3254, 0.42, 13, 7, 72, 5, 221, 39, 59, 16, 137, 22),
    ("CHS", "M", 2413, 0.50, 10, 7, 73, 6, 198, 36, 48, 13, 136, 21),
    ("MESA", "F", 3552, 0.09, 14, 4, 62, 10, 200, 36, 56, 15, 127, 23),
    ("MESA", "M", 3176, 0.13, 14, 4, 62, 10, 188, 35, 45, 12, 126, 19),
    ("Framingham", "F", 1766, 0.13, 27, 7, 44, 10, 201, 40, 54, 13, 118, 17),
    ("Framingham", "M", 1608, 0.22, 25, 9, 44, 10, 204, 37, 43, 11, 126, 16),
    ("Jackson Heart", "F", 1913, 0.04, 10, 2, 50, 12, 197, 38, 54, 14, 124, 17),
    ("Jackson Heart", "M", 1196, 0.05, 9, 2, 49, 12, 197, 40, 45, 12, 126, 16),
]
LOG_HR = {"sbp": np.log(1.17) / 10, "age": 0.05, "totchol": 0.004, "hdl": -0.012}
# correlations among age, totchol, hdl, sbp (plausible epidemiological values)
CORR = np.array(
    [
        [1.0, 0.15, 0.05, 0.35],
        [0.15, 1.0, 0.15, 0.15],
        [0.05, 0.15, 1.0, -0.05],
        [0.35, 0.15, -0.05, 1.0],
    ]
)


def _event_share(scale: float, lp: np.ndarray, follow: np.ndarray, u: np.ndarray) -> float:
    t = -np.log(u) / (scale * np.exp(lp))
    return float(np.mean(t < follow))


def simulate_study(row: tuple, rng: np.random.Generator) -> pd.DataFrame:
    cohort, sex, n, share, tm, ts, *ms = row
    means = np.array(ms[0::2], dtype=float)
    sds = np.array(ms[1::2], dtype=float)
    cov = CORR * np.outer(sds, sds)
    x = rng.multivariate_normal(means, cov, size=n)
    x[:, 0] = np.clip(x[:, 0], 18, 95)
    x[:, 1] = np.clip(x[:, 1], 90, 400)
    x[:, 2] = np.clip(x[:, 2], 15, 120)
    x[:, 3] = np.clip(x[:, 3], 80, 230)
    x = np.round(x)
    lp = sum(
        LOG_HR[k] * (x[:, i] - means[i]) for i, k in enumerate(["age", "totchol", "hdl", "sbp"])
    )
    follow = np.clip(rng.normal(tm / (1 - share / 2), ts, size=n), 0.5, None)
    u = rng.uniform(size=n)
    lo, hi = 1e-6, 1.0
    for _ in range(60):  # bisection on the log scale for the baseline hazard
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if _event_share(mid, lp, follow, u) < share else (lo, mid)
    t_event = -np.log(u) / (np.sqrt(lo * hi) * np.exp(lp))
    time = np.minimum(t_event, follow)
    return pd.DataFrame(
        {
            "study": f"{cohort} {sex}",
            "cohort": cohort,
            "sex": sex,
            "time_cvd_years": np.round(np.clip(time, 0.05, None), 2),
            "cvd": (t_event < follow).astype(int),
            "age": x[:, 0].astype(int),
            "totchol": x[:, 1].astype(int),
            "hdl": x[:, 2].astype(int),
            "sbp": x[:, 3].astype(int),
        }
    )


def main() -> None:
    rng = np.random.default_rng(SEED)
    frame = pd.concat([simulate_study(r, rng) for r in TABLE3], ignore_index=True)
    # a study-specific participant number with leading zeros: an identifier the tool must drop
    frame.insert(0, "participant_id", [f"{i:06d}" for i in rng.permutation(len(frame)) + 1])
    out = Path(__file__).resolve().parents[1] / "resources" / "demo_cohort.csv"
    frame.to_csv(out, index=False)
    summary = frame.groupby("study").agg(
        n=("cvd", "size"),
        event=("cvd", "mean"),
        time=("time_cvd_years", "mean"),
        sbp=("sbp", "mean"),
    )
    print(summary.round(2).to_string())
    print(f"wrote {out} ({len(frame)} rows)")


if __name__ == "__main__":
    main()
