"""The output checker's attack, written apart from the engine: distance to the closest record
(DCR) of a released file, members vs real rows the generator never saw (issue 27, item 4).

The space is the one a checker would pick by hand, fitted on the real rows of both sides
(holdout + members), never on the synthetic file: numeric columns with more than two distinct
values z-scored (mean and SD of the real rows), every other column (text categories, yes/no and
0/1 columns) one-hot over the real levels (a synthetic level that the real rows lack is all
zeros). Each real row's score is its Euclidean distance to the nearest synthetic row
(``scipy.spatial.cKDTree``); a smaller distance says "member". The AUC is that of members
against holdout rows (0.5: no signal; ties count one half). Nothing here imports the engine, so
a bug shared with the audit cannot hide a leak.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree
from scipy.stats import rankdata

LIMIT = 0.55  # the audit's AUC limit: the bench counts seeds whose DCR AUC exceeds it


def _is_number(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def encode(real: pd.DataFrame, frames: list[pd.DataFrame]) -> list[np.ndarray]:
    """Each of ``frames`` in the checker's space fitted on ``real`` (its columns only)."""
    blocks: list[list[np.ndarray]] = [[] for _ in frames]
    for c in real.columns:
        s = real[c]
        if _is_number(s) and s.nunique(dropna=True) > 2:
            v = s.to_numpy(dtype=float)
            mu, sd = float(np.nanmean(v)), float(np.nanstd(v))
            sd = sd if sd > 0 else 1.0
            for i, f in enumerate(frames):
                x = (pd.to_numeric(f[c], errors="coerce").to_numpy(dtype=float) - mu) / sd
                blocks[i].append(np.nan_to_num(x, nan=0.0)[:, None])  # missing -> the mean
        else:
            levels = sorted(_texts(s).unique())
            for i, f in enumerate(frames):
                t = _texts(f[c]).to_numpy()
                blocks[i].append(np.stack([t == lv for lv in levels], axis=1).astype(float))
    return [np.hstack(b) for b in blocks]


def _texts(s: pd.Series) -> pd.Series:
    return s.astype(object).map(lambda v: "<NA>" if pd.isna(v) else _label(v))


def _label(v: object) -> str:
    """A level as text: 1, 1.0 and "1" are the same level."""
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(v)
    return str(int(f)) if f.is_integer() else str(f)


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(score of a positive > score of a negative) + half the ties (Mann-Whitney)."""
    r = rankdata(np.concatenate([pos, neg]))
    n1, n0 = len(pos), len(neg)
    return float((r[:n1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def dcr_auc(members: pd.DataFrame, holdout: pd.DataFrame, synth: pd.DataFrame) -> float:
    """The DCR attack's AUC on ``synth`` (members are the positives)."""
    cols = list(members.columns)
    real = pd.concat([holdout[cols], members[cols]], ignore_index=True)
    m, h, s = encode(real, [members[cols], holdout[cols], synth[cols]])
    tree = cKDTree(s)
    d_m, _ = tree.query(m, k=1)
    d_h, _ = tree.query(h, k=1)
    return auc(-np.asarray(d_m), -np.asarray(d_h))


if __name__ == "__main__":  # a self-check: copies of members leak, fresh draws do not
    rng = np.random.default_rng(0)
    full = pd.DataFrame(
        {
            "x": rng.normal(size=800),
            "y": rng.gamma(2.0, size=800),
            "g": rng.choice(list("abc"), 800),
        }
    )
    mem, hold = full.iloc[:400].reset_index(drop=True), full.iloc[400:].reset_index(drop=True)
    fresh = pd.DataFrame(
        {
            "x": rng.normal(size=400),
            "y": rng.gamma(2.0, size=400),
            "g": rng.choice(list("abc"), 400),
        }
    )
    print("fresh rows", round(dcr_auc(mem, hold, fresh), 3))
    print(
        "copied members",
        round(dcr_auc(mem, hold, mem.sample(400, replace=True, random_state=1)), 3),
    )
