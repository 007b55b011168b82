"""Identity and attribute disclosure of the released file, and the rule that joins it to the
choice of w (issue 29): the released file may disclose no more than a fresh real sample of the
same size, plus a margin (:mod:`engine.disclosure.check`).

Called by :func:`engine.pipeline.release_step.release` on every release (the run's and the
wizard's release at a user-chosen w), after the copies are drawn and before anything is
written. Where the rule holds, the measures ride on the :class:`Release` (``audit.json``'s
``disclosure_risk`` block, the report's page, the wizard's Privacy page). Where it fails:

- at the audit's w, the release is drawn again at the next lower audited w (the same final
  model, fresh noise) and measured again, down to w = 0, so that what is measured is what is
  released; the release says the disclosure rule chose its w;
- at w = 0 (the model's own samples disclose too much) or at a w the user forced, nothing is
  exported: the refusal names the keys and the target in plain words and suggests coarsening a
  key; with the risk acknowledged (or the override for risky releases) the file is exported
  with the override verdict, as for the membership audit.

Lowering w costs one release per step (on the demo about 0.5 s each: drawing, decoding and the
fidelity comparison); the measures take 0.04 s on the demo's 1,608 rows with its 5 targets
(0.5 % of the 8.5 s run) and 0.6 s on 19,296 rows (nearest neighbours on one core: spreading
queries of a few thousand rows over threads cost more than it saved).

References: docs/architecture.md; Raab, Nowok & Dibben (2024) arXiv:2406.16826; Giomi et al.
(2023) PoPETs 2023(2).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from engine.pipeline.results import Release, RunResult, Verdict
from engine.progress import CancelToken, ProgressFn

if TYPE_CHECKING:
    import pandas as pd

    from engine.disclosure.check import DisclosureResult
    from engine.pipeline.config import Prepared

NUMERIC_KINDS = ("continuous", "time")
MANY_VALUES = 20  # a whole-number target with more values is guessed within 5 %, like a measurement


def measure(result: RunResult, rng: np.random.Generator) -> DisclosureResult | None:
    """The measures on ``result``'s released file (its first copy, in record order); None when
    no key column or no target was chosen or recognised."""
    return measure_release(result.prepared, result.record_order, rng)


def measured_beside(
    prep: Prepared, synthetic: pd.DataFrame, rng: np.random.Generator
) -> tuple[DisclosureResult | None, float]:
    """:func:`measure_release` and its seconds: the release runs it on a thread beside the
    fidelity models (:mod:`engine.pipeline.release_beside`) and hands it to the rule."""
    t0 = time.perf_counter()
    return measure_release(prep, synthetic, rng), time.perf_counter() - t0


def measure_release(
    prep: Prepared, synthetic: pd.DataFrame | None, rng: np.random.Generator
) -> DisclosureResult | None:
    """The measures on a released file in record order (the index of the real rows)."""
    from engine.columns.keys import keys_and_targets
    from engine.disclosure.check import measure_disclosure
    from engine.disclosure.words import left_out_columns

    cfg = prep.config
    if synthetic is None:
        return None
    keys, targets = keys_and_targets(prep.schema, cfg.keys, cfg.disclosure_targets)
    if not keys or not targets or len(synthetic) < 20:
        return None
    kinds = {c.name: c.kind for c in prep.schema.synthesized()}
    real = prep.real.loc[synthetic.index]
    numeric = [
        t
        for t in targets
        if kinds.get(t) in NUMERIC_KINDS
        or (kinds.get(t) == "integer" and real[t].nunique() > MANY_VALUES)
    ]
    found = measure_disclosure(
        real, synthetic, keys, targets, rng=rng, numeric=numeric, margin_cap=cfg.disclosure_margin
    )
    chosen = cfg.disclosure_targets is not None
    found = replace(found, left_out=left_out_columns(prep.schema.columns, keys, targets, chosen))
    if cfg.copies > 1:  # the rule is checked on the first copy; each copy is drawn the same way
        found = replace(
            found, notes=(*found.notes, f"measured on the first of {cfg.copies} copies")
        )
    return found


def apply_disclosure_rule(
    result: RunResult,
    rng: np.random.Generator,
    progress: ProgressFn,
    cancel: CancelToken,
    steps: tuple[Callable[..., RunResult], Callable[..., RunResult]],
    first: Callable[[], tuple[DisclosureResult | None, float]] | None = None,
) -> RunResult:
    """The module's rule on a fresh release: keep it, lower w, or refuse. ``steps`` are
    :func:`engine.pipeline.release_step.release` and its ``refused_result``, handed in (not
    imported) so that the two modules do not import each other. ``first``: the measures of
    this release already begun (:func:`measured_beside`'s getter), else they are taken here."""
    release_at, refused_result = steps
    release = result.released
    if release is None:
        return result
    t0 = time.perf_counter()
    if first is None:
        found = measure(result, rng)
        result = _timed(replace(result, record_order=None), time.perf_counter() - t0)
    else:
        found, seconds = first()
        result = _timed(replace(result, record_order=None), seconds)
    if found is None or found.holds:
        return _with(result, release, found)
    cfg, audit = result.config, result.audit
    tried, last = [(release.w, found)], result
    if cfg.forced_w is None and audit is not None:
        for w in sorted({p.w for p in audit.curve if p.w < release.w - 1e-9}, reverse=True):
            cancel.raise_if_cancelled()
            progress(0.95, f"the synthetic file disclosed more than a fresh sample: w = {w:.2f}")
            prep = replace(result.prepared, config=replace(cfg, forced_w=float(w)))
            again = release_at(
                prep,
                audit,
                rng=rng,
                flow=result.flow,
                started=result.started,
                timings=result.timings,
                disclosure_rule=False,
            )
            t0 = time.perf_counter()
            found = measure(again, rng)
            again = _timed(
                replace(again, record_order=None, config=cfg, prepared=result.prepared),
                time.perf_counter() - t0,
            )
            lower = again.released
            if lower is None or found is None:
                return again
            tried.append((lower.w, found))
            last = again
            if found.holds:
                chosen = _lowered_words(tried)
                return _with(again, replace(lower, chosen_by=chosen), _noted(found, tried))
    acknowledged = cfg.allow_risky or (cfg.forced_w is not None and cfg.risk_acknowledged)
    final = tried[-1][1]
    if acknowledged:  # exported anyway: the least disclosive file tried, its verdict says so
        kept = last.released
        assert kept is not None
        chosen = (
            kept.chosen_by
            if cfg.forced_w is not None
            else f"override: the disclosure rule was not met at any w; released at w = {kept.w:.2f}"
        )
        out = replace(last, verdict=Verdict.RELEASED_WITH_OVERRIDE)
        return _with(out, replace(kept, chosen_by=chosen), _noted(final, tried))
    return _refuse(result, _noted(final, tried), tried[-1][0], refused_result)


def _timed(result: RunResult, seconds: float) -> RunResult:
    """``result`` with ``seconds`` more of disclosure measures in its timings."""
    timings = dict(result.timings)
    timings["disclosure_seconds"] = timings.get("disclosure_seconds", 0.0) + seconds
    return replace(result, timings=timings)


def _with(result: RunResult, release: Release, found: DisclosureResult | None) -> RunResult:
    return replace(result, release=replace(release, disclosure=found))


def _noted(
    found: DisclosureResult, tried: list[tuple[float, DisclosureResult]]
) -> DisclosureResult:
    """The result with every w the rule tried (``audit.json``: ``w_tried``)."""
    steps = tuple(
        f"at w = {w:.2f} the rule {'held' if d.holds else 'failed: ' + ', '.join(d.failing)}"
        for w, d in tried
    )
    return replace(found, notes=found.notes + steps)


def _lowered_words(tried: list[tuple[float, DisclosureResult]]) -> str:
    first_w, first = tried[0]
    return (
        f"the disclosure rule: at the audit's w = {first_w:.2f} the synthetic file disclosed "
        f"more than a fresh real sample ({', '.join(first.failing)}), so w was lowered to "
        f"{tried[-1][0]:.2f}"
    )


def refusal_words(found: DisclosureResult, w: float) -> str:
    """The refusal in plain words: the keys, the target (or re-identification), the two
    figures, and what to do.

    Example:
        >>> from engine.disclosure.check import DisclosureResult, TargetDisclosure
        >>> from engine.disclosure.risk import InferenceRisk, Rate
        >>> t = TargetDisclosure("cvd", False, 40.0, 50.0, 52.0, 20.0, 3.0, 70.0, 50.0,
        ...     InferenceRisk.of(Rate(0.7, 0.05), Rate(0.5, 0.05)), 15.0)
        >>> d = DisclosureResult(("age", "sex"), {}, 10.0, 2.0, 1.0, 1.0, 0.2, (t,), 3.0, 800,
        ...     400, 5)
        >>> refusal_words(d, 0.0)[:88]
        'knowing age and sex, the synthetic file at w = 0.00 lets an attacker guess cvd right for'
    """
    keys = _and(found.keys)
    failing = [t for t in found.targets if not t.holds]
    if failing:
        t = max(failing, key=lambda t: t.disco_release - t.disco_fresh)
        what = (
            f"knowing {keys}, the synthetic file at w = {w:.2f} lets an attacker guess {t.target} "
            f"right for {t.disco_release:.0f} % of real patients by taking it from the synthetic "
            f"records that match them, against {t.disco_fresh:.0f} % with a fresh sample of real "
            f"patients in the file's place (the baseline; allowed: at most {t.margin:.0f} points "
            "more)"
        )
    else:
        what = (
            f"knowing {keys}, the synthetic file at w = {w:.2f} holds {found.repu_release:.1f} % "
            f"of real patients alone with their combination, as unique as in the real table, "
            f"against {found.repu_fresh:.1f} % for a fresh sample of real patients"
        )
    return (
        f"{what}; nothing was exported. Coarsen a key (for example age in 5- or 10-year bands, "
        f"or a region instead of a town) or leave it out of the table, then run again"
    )


def _and(names: tuple[str, ...]) -> str:
    """ "age, sex and ethnicity"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _refuse(
    result: RunResult, found: DisclosureResult, w: float, refused_result: Callable[..., RunResult]
) -> RunResult:
    """The run refused by the disclosure rule: nothing released, the measures kept."""
    cfg, audit = result.config, result.audit
    assert audit is not None  # a release always follows an audit
    hint = (
        "choose other key columns with --keys, or add --allow-risky to export anyway"
        if cfg.forced_w is None
        else "lower --w, or add --allow-risky to export anyway"
    )
    out = refused_result(
        result.prepared, audit, result.started, result.timings, refusal_words(found, w), hint
    )
    return replace(out, release=replace(out.release, disclosure=found))
