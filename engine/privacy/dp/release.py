"""Formal differential-privacy mode: a DP-SGD-trained flow and a Flow Sampling release.

::

    prepared (complete cases) -> BoundedEncoder (user bounds / clinical presets, no data moments)
        -> DP-SGD MAF (sigma calibrated on the PLD accountant) -> Flow Sampling n rows
        -> decode, clip to the declared bounds -> DPRelease(synthetic, guarantee, flow)

The released rows are post-processing of the DP model and inherit its (epsilon, delta)
guarantee. Latent Noise Injection does *not* (it maps each real record), so the DP release is
always Flow Sampling. Parts: :mod:`engine.privacy.dp.accountant` (PLD, RDP bound, mu-GDP for
comparison), :mod:`engine.privacy.dp.train` (per-record gradients, clipping, noise),
:mod:`engine.privacy.dp.bounds` (data-independent ranges, ``CLINICAL_PRESETS``).

References: DP-NF paper (seeds/dp-normalizing-flows-paper.md) sections 2.2 and 3.2;
METHOD.md section 9; Dong, Roth & Su 2019; Bu et al. 2020.

Example:
    >>> import numpy as np, pandas as pd
    >>> from engine.columns.schema import infer_schema
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"age": rng.integers(40, 80, 300), "sbp": rng.integers(100, 180, 300)})
    >>> rel = dp_release_frame(df, infer_schema(df), epsilon=8.0, rng=rng, seed=0,
    ...                        config=DPConfig(flows=1, hidden=8, steps=5))
    >>> ages_ok = bool(rel.synthetic["age"].between(18, 110).all())
    >>> len(rel.synthetic), rel.guarantee["steps"], ages_ok
    (300, 5, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from engine.privacy.dp.accountant import (
    DPGuarantee,
    default_delta,
    epsilon_for_delta,
    epsilon_for_sigma,
    gdp_mu,
    rdp_epsilon,
    sigma_for_epsilon,
)
from engine.privacy.dp.bounds import CLINICAL_PRESETS, BoundedEncoder, dp_encode, resolve_bounds
from engine.privacy.dp.train import DPConfig, DPTrainedFlow, train_dp_flow
from engine.progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress, sub_progress

__all__ = [
    "CLINICAL_PRESETS",
    "BoundedEncoder",
    "DPConfig",
    "DPGuarantee",
    "DPRelease",
    "DPTrainedFlow",
    "default_delta",
    "dp_encode",
    "dp_release",
    "dp_release_frame",
    "dp_membership_audit",
    "epsilon_for_delta",
    "epsilon_for_sigma",
    "gdp_mu",
    "rdp_epsilon",
    "resolve_bounds",
    "sigma_for_epsilon",
    "train_dp_flow",
]

# The accounting parameters repeated at the top of ``release.dp`` in the run record.
ACCOUNTING_KEYS = (
    "accountant",
    "epsilon",
    "epsilon_target",
    "delta",
    "sigma",
    "sampling_rate",
    "steps",
    "clip",
)

METHOD_NOTE = (
    "Synthetic rows drawn from a flow trained by DP-SGD (Flow Sampling); they inherit the "
    "model's (epsilon, delta) guarantee by post-processing. Latent Noise Injection releases "
    "carry no such guarantee."
)


@dataclass(frozen=True)
class DPRelease:
    """A DP release: ``synthetic`` rows (shuffle-free: they are fresh samples), the guarantee
    and its parameters (``guarantee``, JSON-ready), the trained ``flow`` and its encoder."""

    synthetic: pd.DataFrame
    guarantee: dict[str, Any]
    flow: DPTrainedFlow
    encoder: BoundedEncoder
    clip_counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The ``release`` block for the run record (no data, no seeds, no weights)."""
        g = self.guarantee
        return {
            "method": "DP-SGD flow, Flow Sampling",
            **{k: g.get(k) for k in ACCOUNTING_KEYS},
            "rows": int(len(self.synthetic)),
            "clipped": dict(self.clip_counts),
            "guarantee": self.guarantee,
            "model": self.flow.to_dict(),
        }


def dp_release(
    prepared: Any,
    *,
    epsilon: float,
    delta: float | None = None,
    rng: np.random.Generator,
    seed: int | None = None,
    device: str = "cpu",
    config: DPConfig | None = None,
    levels: Mapping[str, Sequence[Any]] | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> DPRelease:
    """DP release for a :class:`engine.pipeline.Prepared` run: bounds come from
    ``prepared.config.bounds`` (user) and the clinical presets, never from the data.

    Raises :class:`engine.errors.InputError` naming the columns that lack declared bounds.
    """
    user = {name: (lo, hi) for name, lo, hi in getattr(prepared.config, "bounds", ())}
    return dp_release_frame(
        prepared.real,
        prepared.schema,
        epsilon=epsilon,
        delta=delta,
        bounds=user,
        rng=rng,
        seed=seed,
        device=device,
        config=config,
        levels=levels,
        progress=progress,
        cancel=cancel,
        rules=getattr(getattr(prepared, "encoder", None), "rules", None),
    )


def dp_release_frame(
    frame: pd.DataFrame,
    schema: Any,
    *,
    epsilon: float,
    delta: float | None = None,
    bounds: Mapping[str, tuple[float | None, float | None]] | None = None,
    rng: np.random.Generator,
    seed: int | None = None,
    device: str = "cpu",
    config: DPConfig | None = None,
    levels: Mapping[str, Sequence[Any]] | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    rules: Any = None,
) -> DPRelease:
    """:func:`dp_release` on a complete-case frame and its schema (no pipeline objects).
    ``rules`` (:class:`engine.columns.rules.RuleSet`) repair the sampled rows as they repair the
    LNI release's (post-processing of the synthetic rows)."""
    from engine.flows.generate import flow_sampling

    progress(0.0, "DP mode: encoding with declared bounds")
    X, enc = dp_encode(frame, schema, bounds, rng, levels)
    cancel.raise_if_cancelled()
    flow = train_dp_flow(
        X,
        epsilon=epsilon,
        delta=delta,
        config=config,
        device=device,
        seed=seed,
        progress=sub_progress(progress, 0.02, 0.95),
        cancel=cancel,
    )
    cancel.raise_if_cancelled()
    progress(0.96, "DP mode: sampling synthetic rows from the private flow")
    decoded = enc.inverse_transform(flow_sampling(flow, len(frame), enc.d_model_, rng))
    guarantee = _guarantee_dict(flow, enc)
    progress(1.0, "DP mode: done")
    synthetic = rules.apply(decoded.frame) if rules else decoded.frame
    return DPRelease(synthetic, guarantee, flow, enc, dict(decoded.clip_counts))


def dp_membership_audit(
    prepared: Any,
    *,
    epsilon: float,
    delta: float | None = None,
    rng: np.random.Generator,
    seed: int | None = None,
    device: str = "cpu",
    config: DPConfig | None = None,
    repeats: int | None = None,
    levels: Mapping[str, Sequence[Any]] | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> Any:
    """The pipeline's membership audit (:func:`engine.privacy.audit.run_audit`) applied to the
    DP release.

    A DP flow with the same (epsilon, delta) is trained on the audit's 80 % split and Flow
    Sampling is audited: ``w = 0`` of Latent Noise Injection *is* Flow Sampling, so the audit's
    grid is ``(0.0,)``. Distances use the ordinary encoder's standardized space
    (``prepared.encoder.distance_space``), exactly as for the LNI release, so the AUCs compare.
    Returns an :class:`engine.privacy.audit.AuditResult` (one curve point).
    """
    from engine.privacy.audit import AuditConfig, run_audit

    user = {name: (lo, hi) for name, lo, hi in getattr(prepared.config, "bounds", ())}
    X_model, enc = dp_encode(prepared.real, prepared.schema, user, rng, levels)
    rules = getattr(getattr(prepared, "encoder", None), "rules", None)

    def dist(frame: pd.DataFrame) -> np.ndarray:  # the released rows keep the rules: so do these
        return prepared.encoder.distance_space(rules.apply(frame) if rules else frame)

    delta = default_delta(len(prepared.real)) if delta is None else delta

    def fit_map(rows: np.ndarray) -> DPTrainedFlow:
        return train_dp_flow(
            rows,
            epsilon=epsilon,
            delta=delta,
            config=config,
            device=device,
            seed=seed,
            cancel=cancel,
        )

    threshold = getattr(prepared.config, "auc_max", 0.55)
    return run_audit(
        X_model,
        prepared.encoder.distance_space(prepared.real),
        fit_map,
        to_dist=lambda rows: dist(enc.inverse_transform(rows).frame),
        config=AuditConfig(threshold=threshold, grid=(0.0,), refine=False, repeats=repeats),
        rng=rng,
        progress=progress,
        cancel=cancel,
    )


def _guarantee_dict(flow: DPTrainedFlow, enc: BoundedEncoder) -> dict[str, Any]:
    g = flow.guarantee
    assert g is not None
    notes = [
        "The number of released rows equals the number of real complete rows; n is treated as "
        "public.",
        "Noise is drawn from torch's pseudo-random generator in float32 (no cryptographic or "
        "floating-point hardening).",
        "Column kinds and decimal places are read from the data unless they were declared.",
    ]
    if enc.undeclared_levels_:
        notes.append(
            "The level sets of "
            + ", ".join(f"'{c}'" for c in enc.undeclared_levels_)
            + " were read from the data, not declared: the existence of each level is disclosed."
        )
    if g.epsilon_gdp is not None and g.epsilon_gdp < g.epsilon * 0.98:
        notes.append(
            "The mu-GDP approximation used by the DP-NF paper gives epsilon "
            f"{g.epsilon_gdp:.2f} for the same training, below the stated {g.epsilon:.2f}: it is "
            "a central-limit approximation that under-states epsilon at small sampling rates, so "
            "it is not used."
        )
    return {
        **g.to_dict(),
        "statement": g.statement(),
        "method": METHOD_NOTE,
        "bounds": {
            c.spec.name: {
                "lower": c.lower,
                "upper": c.upper,
                "source": enc.bounds[c.spec.name].source,
            }
            for c in enc.columns_
            if c.lower is not None
        },
        "batch_norm": False,
        "spectral_norm": flow.dp_config.spectral_norm,
        "notes": notes,
    }
