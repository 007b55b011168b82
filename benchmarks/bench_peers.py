"""Peer generators for the family bench (issue 27, item 4), each fitted on the members only and
asked for one row per member.

* ``copula``: SDV's ``GaussianCopulaSynthesizer`` (``bench_fidelity.copula``: default settings,
  labels and 0/1 columns categorical, the rest numerical).
* ``cart``: sequential CART, synthpop's default method (Nowok et al. 2016), written here with
  scikit-learn's trees: the first column is drawn from its members' values; each next column is
  a tree fitted on the columns before it (classification for labels, regression for numbers,
  ``min_samples_leaf=5`` as synthpop's ``minbucket``), and a synthetic row takes the value of a
  random member in the leaf its earlier synthetic values fall in. Text categories enter the
  trees as integer codes (rpart splits factors by level sets; codes only allow ordered splits).
  Column order is the table's (synthpop's default visit sequence).
* ``mostly``: MOSTLY AI's ``mostlyai-engine`` (TabularARGN), CPU, default settings but a small
  budget (``MOSTLY_MINUTES`` of training, at most ``MOSTLY_EPOCHS`` epochs). ``None`` with a note
  when the package cannot be imported.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_fidelity import LABEL_KINDS, copula, sdv_available  # noqa: E402

MOSTLY_MINUTES = 0.25
MOSTLY_EPOCHS = 50
MIN_LEAF = 5

__all__ = ["cart", "copula", "mostly", "mostly_available", "sdv_available"]


def cart(members: pd.DataFrame, seed: int, kinds: dict[str, str]) -> pd.DataFrame:
    """Sequential CART synthesis (synthpop's method) of ``len(members)`` rows."""
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    rng = np.random.default_rng(seed)
    n = len(members)
    cols = list(members.columns)
    labels = {c for c in cols if kinds.get(c) in LABEL_KINDS or not _numeric(members[c])}
    codes: dict[str, list[object]] = {c: sorted(members[c].dropna().unique()) for c in labels}

    def as_x(frame: pd.DataFrame, upto: list[str]) -> np.ndarray:
        out = []
        for c in upto:
            if c in labels:
                lookup = {v: i for i, v in enumerate(codes[c])}
                out.append(frame[c].map(lookup).fillna(-1).to_numpy(dtype=float))
            else:
                out.append(frame[c].to_numpy(dtype=float))
        return np.nan_to_num(np.column_stack(out), nan=-1e9)

    synth = pd.DataFrame(index=range(n))
    first = cols[0]
    synth[first] = members[first].to_numpy()[rng.integers(0, n, n)]
    for j, c in enumerate(cols[1:], start=1):
        before = cols[:j]
        x_m, x_s = as_x(members, before), as_x(synth, before)
        y = members[c]
        if c in labels:
            tree = DecisionTreeClassifier(min_samples_leaf=MIN_LEAF, random_state=seed)
            tree.fit(x_m, y.astype(str))
        else:
            tree = DecisionTreeRegressor(min_samples_leaf=MIN_LEAF, random_state=seed)
            tree.fit(x_m, y.fillna(y.median()).to_numpy(dtype=float))
        leaf_m, leaf_s = tree.apply(x_m), tree.apply(x_s)
        donors: dict[int, np.ndarray] = {}
        for leaf in np.unique(leaf_m):
            donors[int(leaf)] = np.flatnonzero(leaf_m == leaf)
        values = y.to_numpy()
        picks = np.array([rng.choice(donors[int(leaf)]) for leaf in leaf_s])
        synth[c] = values[picks]
    return synth.astype(members.dtypes.to_dict())


def _numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def mostly_available() -> bool:
    """True when MOSTLY AI's engine imports (a bench-only package)."""
    try:
        import mostlyai.engine  # type: ignore[import-not-found]  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return False
    return True


def mostly(members: pd.DataFrame, seed: int, kinds: dict[str, str]) -> pd.DataFrame | None:
    """MOSTLY AI's TabularARGN on CPU with a small budget; ``None`` when it cannot run."""
    try:
        from mostlyai import engine  # type: ignore[import-not-found]
    except Exception as exc:  # noqa: BLE001
        print(f"  mostly skipped: {exc}", file=sys.stderr)
        return None
    import torch

    logging.getLogger("mostlyai").setLevel(logging.ERROR)
    dtype = torch.get_default_dtype()
    try:
        return _mostly(engine, members, seed, kinds)
    finally:
        # its training flushes denormals to zero for the whole process (CPU flags) and sets the
        # default dtype; left so, scipy's cKDTree in the next latent-synth run overflows its
        # stack (a segfault on lung, seed 2)
        torch.set_flush_denormal(False)
        torch.set_default_dtype(dtype)


def _mostly(engine: Any, members: pd.DataFrame, seed: int, kinds: dict[str, str]) -> pd.DataFrame:
    frame = members.copy()
    for c in frame.columns:  # labels as text so that the engine treats them as categories
        if kinds.get(c) in LABEL_KINDS and kinds.get(c) != "event":
            frame[c] = frame[c].astype(str)
    with tempfile.TemporaryDirectory() as ws, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine.set_random_state(seed)
        engine.split(tgt_data=frame, model_type="TABULAR", workspace_dir=ws)
        engine.analyze(workspace_dir=ws)
        engine.encode(workspace_dir=ws)
        engine.train(
            workspace_dir=ws,
            max_training_time=MOSTLY_MINUTES,
            max_epochs=MOSTLY_EPOCHS,
            device="cpu",
        )
        engine.generate(workspace_dir=ws, sample_size=len(frame), device="cpu")
        out = pd.read_parquet(Path(ws) / "SyntheticData")
    for c in members.columns:  # back to the members' types (text labels that were numbers)
        if c in out and _numeric(members[c]):
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
        elif c in out:
            out[c] = out[c].astype(object).where(out[c].notna(), None)
    return out[list(members.columns)].reset_index(drop=True)
