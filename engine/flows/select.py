"""Train and select the Masked Autoregressive Flow (docs/method.md section 3; paper section 2.1.1).

Decision: hand-written MAF (``engine/flows/maf.py``), not zuko. Measured on a shared 2-core
machine, one thread (``benchmarks/bench_flow.py``; n = 15,000, d = 7, 5 flows, hidden 64,
batch 512): training 0.186 s/epoch with masked spectral norm vs zuko 0.245 s/epoch without
it (1.3x) and 0.339 s with torch's ``spectral_norm`` (which normalizes ``W``, not ``W * M``);
generating 100,000 rows 0.24 s vs 1.18 s at d = 7 (4.9x) and 0.60 s vs 13.1 s at d = 50
(22x), with less memory (273 vs 1,717 MiB peak RSS at d = 50). zuko also cannot normalize the
*masked* weight, the quantity Lemma 2 needs, without patching its layers.

* ``FlowConfig``: architecture and schedule; ``train_flow``: a whitened start (the Gaussian of
  the training rows, :mod:`engine.flows.whiten`), Adam (fused), 80/20 seeded split,
  ReduceLROnPlateau down to ``min_lr``, early stopping on validation NLL of an exponential
  moving average of the weights, best (averaged) weights restored.
* ``TrainedFlow``: ``to_latent`` / ``from_latent`` on float64 numpy arrays (float32 on the
  device, chunks of 16,384 rows; docs/pitfalls.md), non-finite output rows counted in
  ``last_nonfinite``.
* ``select_flow``: the paper's Table 4 grid (hidden {32, 64, 128} x hidden layers {1, 2} x
  flows {3, 4, 5}) by validation NLL, under a time budget ``fast`` / ``default`` / ``thorough``;
  the ``fast`` budget on small cohorts (up to 2,000 rows) compares smaller flows
  (``SMALL_CANDIDATES``), which memorize their training rows less.

Defaults (lr 3e-3, about 25 mini-batches per epoch, at most 300 epochs, patience 20, weights
averaged over about one epoch), measured on a skewed, correlated 5-column, 8,000-row table
(5 flows, hidden 64, one thread). Without averaging: lr 3e-3 batch 256 reached validation NLL
5.176 in 10 s; lr 1e-3 batch 512 5.210 (18 s); lr 3e-3 batch 512 5.200 (18 s); lr 1e-2 5.184;
a long lr 1e-3 batch 128 run 5.165 (39 s). With the moving average of the weights the default
reaches 5.161 in 132 epochs / 7.8 s, and on n = 2,500 compound-symmetry data the largest latent
mean fell from 0.04-0.10 to 0.01-0.03 (three seeds). The paper's lr 1e-4 full batch takes one
step per epoch and would need thousands of epochs.

References: Papamakarios et al. 2017 (MAF); Germain et al. 2015 (MADE); Miyato et al. 2018
(spectral normalization); main paper section 4.2 and Table 4.

Example:
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> flow = train_flow(X, FlowConfig(flows=2, hidden=8, max_epochs=3), seed=0)
    >>> Z = flow.to_latent(X)
    >>> bool(np.allclose(flow.from_latent(Z), X, atol=1e-4))
    True
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any

import numpy as np

from engine.errors import InputError
from engine.flows.config import STEP_BUDGET_FROM
from engine.flows.maf import MAF
from engine.flows.preference import preference_order
from engine.flows.train import (
    CHUNK_ROWS,
    FlowConfig,
    TrainedFlow,
    check_table,
    cpu_threads,
    resolve_device,
    split_indices,
    train_flow,
)
from engine.progress import (
    NEVER_CANCELLED,
    CancelToken,
    ProgressFn,
    labelled,
    no_progress,
    sub_progress,
)

__all__ = [
    "MAF",
    "FlowConfig",
    "TrainedFlow",
    "train_flow",
    "select_flow",
    "resolve_device",
    "cpu_threads",
    "GRID",
    "GAUSSIAN",
    "fast_candidates",
    "family_configs",
    "family_recipe",
    "rank_family",
    "preference_order",
    "family_order",
]


# The paper's Table 4 grid, and the candidates of the "default" budget.
GRID = [
    FlowConfig(flows=k, hidden=h, layers=depth)
    for h in (32, 64, 128)
    for depth in (1, 2)
    for k in (3, 4, 5)
]
DEFAULT_CANDIDATES = [
    FlowConfig(flows=3, hidden=32),
    FlowConfig(flows=5, hidden=64),
    FlowConfig(flows=5, hidden=128, layers=2),
]
SUBSAMPLE_ROWS = 4_000
# The ``fast`` budget's candidates, smallest first, and the table size up to which it compares
# them (above it the default alone: a larger table supports the larger model and training time
# dominates the run). Chosen by the one-standard-error rule on validation NLL (see _parsimonious).
FAST_CANDIDATES = [FlowConfig(flows=3, hidden=32), FlowConfig()]
FAST_SEARCH_UP_TO = 20_000
# Small cohorts (issue 13 item 6): up to SMALL_UP_TO rows the ``fast`` budget compares 2 x 16
# and 3 x 32 flows, again by the one-standard-error rule. Measured on the bench tables (see
# benchmarks/bench_fidelity.py, "Small cohorts"): the density attack's AUC at w = 0 fell from
# 0.623 to 0.601 on diabetes and 0.543 to 0.527 on breast (an oracle flow fitted on rows the
# audit never sees, i.e. no membership signal at all: 0.566 and 0.516), breast and demo
# refusals went from 1/3 each to 0/3. A 1 x 8 candidate underfits (the slope of a 0.6
# regression came out 0.36-0.45 on 200-row tables; the one-SE rule on a 40-row validation set
# cannot see it) and Gaussian input noise (``FlowConfig.input_noise`` 0.3) removed a little more
# of the leak (0.585 on diabetes) but shifted binary shares (demo TV 0.010 -> 0.017), so it
# is available but off.
# With the whitened start (``FlowConfig.whiten``) both pairs leak about as little (200-row
# tables: 0.531 small, 0.528 larger); the larger pair on the bench tables (6 seeds, mean z-gap
# small -> larger): kidney 0.53 -> 1.00, lung 1.07 -> 1.18, heart 1.00 -> 2.39, diabetes 1.07 ->
# 0.89, demo 1.06 -> 0.92, breast 1.36 -> 1.34. No clear gain, so the small pair stays.
SMALL_CANDIDATES = [FlowConfig(flows=2, hidden=16), FlowConfig(flows=3, hidden=32)]
SMALL_UP_TO = 2_000
SMALL_MAX_COLUMNS = 16  # model columns (indicators included); wider tables: FAST_CANDIDATES
# The floor of the candidate family (issue 27): the whitened start with no MADE layer, i.e. the
# Gaussian of the rows' normal scores (a Gaussian copula). Nothing to train.
GAUSSIAN = FlowConfig(flows=0)


def select_flow(
    X: np.ndarray,
    *,
    budget: str = "default",
    device: str = "auto",
    seed: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    architecture: FlowConfig | None = None,
) -> TrainedFlow:
    """Choose a MAF configuration by validation NLL under a time budget.

    ``fast``: up to 20,000 rows, 3 flows x 32 hidden or the default ``FlowConfig`` (5 x 64),
    the smaller unless the larger is better on validation rows by more than one standard error
    (:func:`_parsimonious`); up to 2,000 rows (small cohorts) 2 x 16 or 3 x 32 by the same
    rule (:func:`fast_candidates`); above 20,000, the default alone. ``default``: three
    candidates on a subsample of at most 4,000 rows with a short schedule, then the best
    retrained on all rows. ``thorough``: the full 18-configuration grid of Table 4 on all rows.
    All candidates share one split (same seed), so their validation losses are comparable.

    ``architecture``: train exactly this configuration, no search (the pipeline passes the one
    the audit chose on its first split, so the audited and the released model are the same
    architecture).

    References: main paper section 4.2 and Table 4; Papamakarios et al. 2017.

    Example:
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(100, 2))
        >>> select_flow(X, budget="fast", seed=0).config.flows  # 2 columns of noise: the small one
        2
    """
    if budget not in ("fast", "default", "thorough"):
        raise InputError(f"unknown model-search budget '{budget}'; use fast, default or thorough")
    X = check_table(X)
    seed = secrets.randbits(31) if seed is None else int(seed)
    kw: dict[str, Any] = {"device": device, "seed": seed, "cancel": cancel}
    if architecture is not None:
        return train_flow(X, architecture, progress=_prefixed(progress, architecture), **kw)
    if budget == "fast":
        if len(X) > FAST_SEARCH_UP_TO:
            return train_flow(X, FlowConfig(), progress=progress, **kw)
        return _parsimonious(X, fast_candidates(*X.shape), progress, kw)
    if budget == "thorough":
        return _best_of(X, GRID, 0.0, 1.0, progress, kw)
    sub = X
    if len(X) > SUBSAMPLE_ROWS:
        sub = X[np.random.default_rng(seed).choice(len(X), SUBSAMPLE_ROWS, replace=False)]
    short = [replace(c, max_epochs=60, patience=10) for c in DEFAULT_CANDIDATES]
    best = _best_of(sub, short, 0.0, 0.4, progress, kw)
    chosen = replace(best.config, max_epochs=FlowConfig.max_epochs, patience=FlowConfig.patience)
    inner = sub_progress(progress, 0.4, 1.0)
    return train_flow(X, chosen, progress=_prefixed(inner, chosen), **kw)


def _prefixed(progress: ProgressFn, config: FlowConfig) -> ProgressFn:
    """``progress`` with the flow's architecture before each text; a copula's own lines name it
    already ("fitting the Gaussian copula: done")."""
    return progress if config.flows == 0 else labelled(progress, f"{config.label()}: ")


def fast_candidates(n_rows: int, n_cols: int = 0) -> list[FlowConfig]:
    """The ``fast`` budget's candidates (smallest first) for a table of ``n_rows`` rows and
    ``n_cols`` model columns: :data:`SMALL_CANDIDATES` up to :data:`SMALL_UP_TO` rows and
    :data:`SMALL_MAX_COLUMNS` columns, else :data:`FAST_CANDIDATES`. Wider tables keep the larger
    pair: on a 1,000-row, 20-column table with missing values (40 model columns with the
    indicators) 2 x 16 halved the pairwise co-missingness (0.022 against 0.05 real), and on
    the 31-column breast table it moved a binary share by 5-7 points.

    Example:
        >>> [c.label() for c in fast_candidates(500, 8)]
        ['2 flows, 16 hidden x 1 layer', '3 flows, 32 hidden x 1 layer']
        >>> fast_candidates(5_000)[0].label(), fast_candidates(500, 40)[0].label()
        ('3 flows, 32 hidden x 1 layer', '3 flows, 32 hidden x 1 layer')
    """
    small = n_rows <= SMALL_UP_TO and n_cols <= SMALL_MAX_COLUMNS
    return list(SMALL_CANDIDATES if small else FAST_CANDIDATES)


def family_configs(n_rows: int, n_cols: int = 0) -> list[FlowConfig]:
    """The ``fast`` budget's nested candidate family, smallest first: :data:`GAUSSIAN`, then
    :func:`fast_candidates` up to :data:`FAST_SEARCH_UP_TO` rows, else the default flow alone.

    Example:
        >>> [c.flows for c in family_configs(500, 8)], [c.flows for c in family_configs(50_000)]
        ([0, 2, 3], [0, 5])
    """
    flows = fast_candidates(n_rows, n_cols) if n_rows <= FAST_SEARCH_UP_TO else [FlowConfig()]
    return [GAUSSIAN, *flows]


def family_recipe(
    n_rows: int, n_cols: int = 0, *, table_rows: int | None = None
) -> list[FlowConfig]:
    """The ``fast`` family of :func:`rank_family` for ``n_rows`` x ``n_cols`` ranking rows, each
    with the recipe it trains with: from :data:`STEP_BUDGET_FROM` rows of the whole table
    (``table_rows``) a budget of steps (:meth:`FlowConfig.on_step_budget`).

    Example:
        >>> [c.flows for c in family_recipe(40_000, 10, table_rows=100_000)]
        [0, 5]
        >>> family_recipe(40_000, 10, table_rows=100_000)[1].steps_per_epoch is not None
        True
    """
    large = (table_rows or n_rows) >= STEP_BUDGET_FROM
    return [c.on_step_budget() if large else c for c in family_configs(n_rows, n_cols)]


def rank_family(
    X: np.ndarray,
    *,
    budget: str = "fast",
    device: str = "auto",
    seed: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    table_rows: int | None = None,
) -> list[tuple[TrainedFlow, str]]:
    """Every candidate of the family trained on ``X`` (one shared validation split), in the
    order of :func:`family_order`, each with the rule's words for its place. ``fast``:
    :func:`family_configs`; ``default`` / ``thorough``: the Gaussian and the flow their search
    chooses (:func:`select_flow`). The audit takes them in this order and keeps the first
    whose smallest w passes (:mod:`engine.privacy.family`). ``table_rows``: the rows of the
    whole table; from :data:`STEP_BUDGET_FROM` the flows train on a budget of steps
    (:meth:`FlowConfig.on_step_budget`), the recipe the final model then trains with.

    Example:
        >>> X = np.random.default_rng(0).normal(size=(120, 2))
        >>> sorted(f.config.flows for f, _ in rank_family(X, seed=0))
        [0, 2, 3]
    """
    X = check_table(X)
    seed = secrets.randbits(31) if seed is None else int(seed)
    kw: dict[str, Any] = {"device": device, "seed": seed, "cancel": cancel}
    if budget == "fast":
        configs = family_recipe(*X.shape, table_rows=table_rows)
        flows = []
        for i, cfg in enumerate(configs):
            inner = sub_progress(progress, i / len(configs), (i + 1) / len(configs))
            label = f"choosing the model, candidate {i + 1}/{len(configs)} ({cfg.label()})"
            named = labelled(inner, f"{label}: ", model=f"candidate {i + 1} of {len(configs)}")
            flows.append(train_flow(X, cfg, progress=named, **kw))
    else:
        flows = [
            train_flow(X, GAUSSIAN, **kw),
            select_flow(X, budget=budget, progress=progress, **kw),
        ]
    return family_order(flows)


def family_order(flows: list[TrainedFlow]) -> list[tuple[TrainedFlow, str]]:
    """The family in the order the audit tries it: the flows by :func:`preference_order` (the
    one-standard-error rule on their per-row validation NLLs), and the Gaussian copula (the
    floor) last, unless its mean validation NLL is the best of all, then first.

    Why not the one-SE rule across the whole family: the copula is the smallest model, so the
    rule prefers it whenever the flows are not better by one SE, which on tables of a few
    hundred rows is nearly always; measured (``benchmarks/bench_fidelity.py``, 6 tables, 3
    seeds, the same splits) it cost fidelity where the flows had been released: mean |z-gap|
    kidney 0.51 -> 0.79, demo 0.87 -> 1.21 (above the real holdout's 1.07), diabetes 0.75 ->
    1.13, though the copula allowed a higher w on demo (0.46 -> 0.61). The flows start from
    the copula and learn what it misses (hazard shapes, interactions) that the regressions of
    the bench see but a per-row likelihood on 40-160 validation rows cannot resolve. So the
    copula is the fallback, used when every flow gives members away at the smallest w.

    Example:
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(120, 2))
        >>> [f.config.flows for f, _ in family_order([train_flow(X, c, seed=0) for c in
        ...  family_configs(120, 2)])][-1]  # noise: the copula is not best by mean, so last
        0
    """
    floor = [f for f in flows if f.config.flows == 0]
    others = [f for f in flows if f.config.flows > 0]
    ranked = (
        [
            (others[i], why)
            for i, why in preference_order(
                np.stack([f.val_row_nll for f in others]), [f.config.label() for f in others]
            )
        ]
        if others
        else []
    )
    if not floor:
        return ranked
    gauss = floor[0]
    if not others or gauss.val_row_nll.mean() < min(f.val_row_nll.mean() for f in others):
        return [(gauss, "the best validation likelihood")] + ranked
    return ranked + [(gauss, "the floor, tried when every flow gives members away")]


def _parsimonious(
    X: np.ndarray, configs: list[FlowConfig], progress: ProgressFn, kw: dict[str, Any]
) -> TrainedFlow:
    """The smallest candidate (``configs`` smallest first) whose validation NLL is within one
    standard error of the best one's: the one-standard-error rule (Breiman et al. 1984; Hastie,
    Tibshirani & Friedman, ESL section 7.10). The SE is that of the per-row NLL differences to
    the best candidate on the shared validation rows (same seed, same split for all).

    Why: on the small clinical tables of ``benchmarks/bench_fidelity.py`` the validation NLLs of
    3 flows x 32 hidden and 5 x 64 differ by less than their noise (demo cohort, 643 training
    rows: 8.412 vs 8.406 nats), while the larger flow memorizes more: the density attack's AUC
    at w = 0 was 0.545 vs 0.516, enough to refuse the release outright. A model no better on
    held-out rows is not worth its extra leak.
    """
    flows = []
    for i, cfg in enumerate(configs):
        lo = i / len(configs)
        inner = sub_progress(progress, lo, lo + 1.0 / len(configs))
        label = f"choosing flow, candidate {i + 1}/{len(configs)} ({cfg.label()})"
        named = labelled(inner, f"{label}: ", model=f"candidate {i + 1} of {len(configs)}")
        flows.append(train_flow(X, cfg, progress=named, **kw))
    cfg0 = configs[0]
    _, val = split_indices(
        len(X), cfg0.val_fraction, np.random.default_rng(kw["seed"]), cfg0.val_max_rows
    )
    nll = np.stack([_row_nll(f, X[val]) for f in flows])
    best = int(np.argmin(nll.mean(axis=1)))
    for i in range(len(flows)):
        diff = nll[i] - nll[best]
        se = float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else 0.0
        if diff.mean() <= se:
            return flows[i]
    return flows[best]


def _row_nll(flow: TrainedFlow, rows: np.ndarray) -> np.ndarray:
    """Negative log-likelihood of each row under the flow (float64)."""
    import torch

    model = flow.model
    model.eval()
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    out = []
    with torch.no_grad():
        for start in range(0, len(rows), CHUNK_ROWS):
            chunk = torch.as_tensor(rows[start : start + CHUNK_ROWS], dtype=torch.float32)
            out.append(-model.log_prob(chunk.to(device)).double().cpu().numpy())
    return np.concatenate(out) if out else np.empty(0)


def _best_of(
    X: np.ndarray,
    configs: list[FlowConfig],
    a: float,
    b: float,
    progress: ProgressFn,
    kw: dict[str, Any],
) -> TrainedFlow:
    best: TrainedFlow | None = None
    for i, cfg in enumerate(configs):
        lo = a + (b - a) * i / len(configs)
        inner = sub_progress(progress, lo, lo + (b - a) / len(configs))
        label = f"choosing flow, candidate {i + 1}/{len(configs)} ({cfg.label()})"
        flow = train_flow(
            X,
            cfg,
            progress=labelled(inner, f"{label}: ", model=f"candidate {i + 1} of {len(configs)}"),
            **kw,
        )
        if best is None or flow.val_nll < best.val_nll:
            best = flow
    assert best is not None
    return best
