"""Benchmark of the formal DP mode (prints figures).

Run: ``.venv/bin/python benchmarks/bench_dp.py [--quick] [--no-demo]``.

1. Accounting: the DP-NF paper's four (sigma, mu, epsilon) settings (r = 0.5, T = 8000,
   delta = 0.01) with our mu-GDP, our RDP bound, and Google's ``dp-accounting`` PLD and RDP
   accountants when installed.
   Then the calibration at the shipped defaults (expected batch 256, T = 1000, delta = n^-1.1)
   for n = 1,608 / 8,000 / 50,000: sigma calibrated on PLD, with its PLD, RDP and mu-GDP
   epsilons, beside the old mu-GDP sigma and its PLD epsilon.
2. One DP-SGD step (per-record gradients by ``vmap(grad)``, clip, noise) against one ordinary
   batched backward pass and against a Python loop of single-record backward passes.
3. Demo cohort, Framingham M (time ``time_cvd_years``, event ``cvd``; bounds: clinical presets
   plus follow-up 0-40 years): DP release at epsilon = 8 beside the ordinary LNI release:
   membership AUC (the same distance audit) and the Cox HR for SBP per 10 mmHg.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.flows.maf import MAF  # noqa: E402
from engine.privacy.dp.accountant import (  # noqa: E402
    epsilon_for_sigma,
    gdp_mu,
    gdp_sigma_for_epsilon,
    pld_epsilon,
    rdp_epsilon,
    sigma_for_epsilon,
)
from engine.privacy.dp.release import dp_membership_audit, dp_release  # noqa: E402
from engine.privacy.dp.train import noisy_mean_gradient  # noqa: E402

PAPER = [(7.36, 6.10, 32.0), (11.44, 3.92, 16.0), (18.28, 2.45, 8.0), (29.93, 1.49, 4.0)]


def accounting() -> None:
    logging.getLogger("absl").setLevel(logging.ERROR)
    try:
        import dp_accounting
        from dp_accounting import rdp
    except ImportError:
        dp_accounting = None
    print("sigma  mu(paper) mu     eps(paper) eps_GDP  eps_PLD  eps_RDP(ours) eps_RDP(lib)")
    for sigma, mu_p, eps_p in PAPER:
        lib_rdp = float("nan")
        if dp_accounting is not None:
            acc = rdp.RdpAccountant()
            acc.compose(
                dp_accounting.SelfComposedDpEvent(
                    dp_accounting.PoissonSampledDpEvent(0.5, dp_accounting.GaussianDpEvent(sigma)),
                    8000,
                )
            )
            lib_rdp = acc.get_epsilon(0.01)
        pld = pld_epsilon(sigma, 0.01, 0.5, 8000)
        print(
            f"{sigma:<6} {mu_p:<9} {gdp_mu(sigma, 0.5, 8000):<6.3f} {eps_p:<10} "
            f"{epsilon_for_sigma(sigma, 0.01, 0.5, 8000):<8.3f} "
            f"{float('nan') if pld is None else pld:<8.3f} "
            f"{rdp_epsilon(sigma, 0.01, 0.5, 8000):<13.3f} {lib_rdp:.3f}"
        )


def calibration(sizes: tuple[int, ...] = (1_608, 8_000, 50_000)) -> None:
    """Markdown table: sigma calibrated on PLD at the shipped defaults, three accountants."""
    print(
        "| n | rate | target eps | sigma (PLD) | PLD eps | RDP eps | mu-GDP eps "
        "| old sigma (mu-GDP) | its PLD eps | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        delta, r, T = n**-1.1, min(256 / n, 0.5), 1000
        for target in (1.0, 4.0, 8.0):
            t = time.perf_counter()
            sigma = sigma_for_epsilon(target, delta, r, T)
            seconds = time.perf_counter() - t
            old = gdp_sigma_for_epsilon(target, delta, r, T)
            print(
                f"| {n:,} | {r:.4g} | {target:g} | {sigma:.4f} "
                f"| {pld_epsilon(sigma, delta, r, T):.3f} | {rdp_epsilon(sigma, delta, r, T):.3f} "
                f"| {epsilon_for_sigma(sigma, delta, r, T):.3f} | {old:.4f} "
                f"| {pld_epsilon(old, delta, r, T):.3f} | {seconds:.2f} |"
            )


def step_timing(batch: int = 256, d: int = 6) -> None:
    torch.set_num_threads(1)
    model = MAF(d, flows=3, hidden=32, batch_norm=False)
    X = torch.randn(batch, d)
    gen = torch.Generator().manual_seed(0)

    def dp_step() -> None:
        noisy_mean_gradient(model, X, clip=1.0, sigma=2.0, expected_batch=batch, gen=gen)

    def plain() -> None:
        model.zero_grad()
        (-model.log_prob(X)).mean().backward()

    def loop() -> None:
        for i in range(batch):
            model.zero_grad()
            (-model.log_prob(X[i : i + 1])).sum().backward()

    for name, fn, reps in (
        ("DP step (vmap)", dp_step, 20),
        ("plain", plain, 20),
        ("loop", loop, 2),
    ):
        fn()
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        print(
            f"{name:<16} {1000 * (time.perf_counter() - t) / reps:8.1f} ms (batch {batch}, d {d})"
        )


def demo(epsilon: float = 8.0, seed: int = 1) -> None:
    from engine.cli import demo_input
    from engine.pipeline import RunConfig, prepare, synthesize
    from engine.stats.models import ModelSpec, fit_model

    cfg = RunConfig(
        input=demo_input(),
        subset=("study", "Framingham M"),
        time="time_cvd_years",
        event="cvd",
        bounds=(("time_cvd_years", 0.0, 40.0),),
        seed=seed,
        repeats=5,
    )
    prep = prepare(cfg)
    covs = ("age", "totchol", "hdl", "sbp")
    spec = ModelSpec("cox", time="time_cvd_years", event="cvd", covariates=covs, per={"sbp": 10.0})

    def hr(frame) -> str:
        c = fit_model(frame, spec).coefficient("sbp")
        low, high = np.exp(10 * c.ci_low), np.exp(10 * c.ci_high)
        return f"{np.exp(10 * c.estimate):.3f} ({low:.3f}-{high:.3f})"

    print(f"rows {len(prep.real)}; real HR(SBP per 10 mmHg) {hr(prep.real)}")
    t = time.perf_counter()
    rel = dp_release(prep, epsilon=epsilon, rng=np.random.default_rng(seed), seed=seed)
    print(f"DP release ({time.perf_counter() - t:.1f} s): {rel.guarantee['statement']}")
    t = time.perf_counter()
    audit = dp_membership_audit(
        prep, epsilon=epsilon, rng=np.random.default_rng(seed + 1), seed=seed, repeats=5
    )
    p = audit.curve[0]
    print(
        f"DP audit ({time.perf_counter() - t:.1f} s): distance AUC {p.auc:.3f} +- {p.auc_se:.3f}, "
        f"density AUC {p.density_auc:.3f}; HR {hr(rel.synthetic)}; clipped {rel.clip_counts}"
    )
    t = time.perf_counter()
    lni = synthesize(prep)
    if lni.synthetic is None:
        why = lni.refusal.reason if lni.refusal else ""
        print(f"LNI release refused ({time.perf_counter() - t:.1f} s): {why}")
        return
    w = lni.release.w
    q = min(lni.audit.curve, key=lambda c: abs(c.w - w))
    print(
        f"LNI release ({time.perf_counter() - t:.1f} s) at w = {w:.2f}: distance AUC "
        f"{q.auc:.3f} +- {q.auc_se:.3f}, density AUC {q.density_auc:.3f}; HR {hr(lni.synthetic)}"
    )


def main(argv: list[str]) -> None:
    accounting()
    calibration()
    step_timing(batch=64 if "--quick" in argv else 256)
    if "--no-demo" not in argv:
        demo()


if __name__ == "__main__":
    main(sys.argv[1:])
