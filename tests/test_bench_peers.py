"""The family bench's own pieces (benchmarks/bench_dcr.py, bench_peers.py): the checker's
distance attack catches copied members and stays near 0.5 on fresh rows; sequential CART keeps
the members' marginals and their strongest relation."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_dcr import dcr_auc  # noqa: E402
from bench_peers import cart  # noqa: E402


def _rows(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x = rng.normal(size=n)
    return pd.DataFrame(
        {
            "x": x,
            "y": 2.0 * x + rng.normal(size=n),
            "g": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1]),
            "flag": (rng.random(n) < 0.3).astype(int),
        }
    )


def test_dcr_catches_copied_members_and_not_fresh_rows():
    rng = np.random.default_rng(3)
    members, holdout, fresh = _rows(rng, 400), _rows(rng, 400), _rows(rng, 400)
    # a file of 400 fresh rows from the same distribution: no signal
    assert abs(dcr_auc(members, holdout, fresh) - 0.5) < 0.05
    # a planted leak: 100 of the 400 released rows are members copied as they are
    leaky = pd.concat([fresh.iloc[:300], members.iloc[:100]], ignore_index=True)
    assert dcr_auc(members, holdout, leaky) > 0.6


def test_cart_keeps_marginals_and_the_slope():
    rng = np.random.default_rng(4)
    members = _rows(rng, 600)
    kinds = {"x": "continuous", "y": "continuous", "g": "categorical", "flag": "binary"}
    synth = cart(members, seed=1, kinds=kinds)
    assert len(synth) == len(members) and list(synth.columns) == list(members.columns)
    assert abs(synth["flag"].mean() - members["flag"].mean()) < 0.05
    assert abs((synth["g"] == "a").mean() - 0.6) < 0.06
    slope = np.polyfit(synth["x"], synth["y"], 1)[0]
    assert 1.7 < slope < 2.3  # the members' slope is 2
