"""Real vs synthetic: the fidelity comparison of a release (:func:`fidelity_of`) and what
outlier protection cost (:func:`protection_effect`).

References: docs/architecture.md; Reiter (2003) for combining copies; main paper section 4.3.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from engine.pipeline.results import Fidelity, ProtectionEffect

if TYPE_CHECKING:
    from engine.flows.train import TrainedFlow
    from engine.pipeline.config import Prepared
    from engine.stats.models import FidelityResult, ModelFit, ModelSpec
    from engine.stats.plan import AnalysisPlan


def model_spec(prep: Prepared, plan: AnalysisPlan | None = None) -> ModelSpec | None:
    """The model the run compares (``analysis``, or Cox when the table has survival roles),
    with the covariates the user chose or, when none, those of the automatic analysis
    (``plan``, else :func:`analysis_plan`)."""
    from engine.stats.models import Analysis, ModelSpec

    plan = plan or analysis_plan(prep)
    if plan is None:
        return None
    cfg, schema = prep.config, prep.schema
    return ModelSpec(
        analysis=cast(Analysis, plan.analysis),  # checked in RunConfig.validate
        outcome=cfg.outcome,
        covariates=plan.covariates,
        time=schema.time,
        event=schema.event,
        per=dict(cfg.per) or None,
        exposure=plan.exposure,
    )


def analysis_plan(prep: Prepared) -> AnalysisPlan | None:
    """The analysis the run compares, each choice with its reason (:mod:`engine.stats.plan`);
    None when there is no outcome to model."""
    from engine.stats.plan import plan_analysis

    cfg, schema = prep.config, prep.schema
    if cfg.analysis is None and not (schema.time and schema.event):
        return None
    rules = getattr(prep.encoder, "rules", None)
    found = [] if rules is None else [*rules.kept, *(r for r, _ in rules.not_kept)]
    return plan_analysis(
        as_event_codes(prep, prep.real),
        [c.name for c in schema.synthesized()],
        found,
        analysis=cfg.analysis or "cox",
        time=schema.time,
        event=schema.event,
        outcome=cfg.outcome,
        covariates=cfg.covariates,
        exposure=cfg.exposure,
        kinds={c.name: c.kind for c in schema.columns},
    )


def as_event_codes(prep: Prepared, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its event column as 0/1 (1 = the event happened) for the models: a
    column coded alive/dead, True/False or 1/2 (R's coding) is read by its labels."""
    from engine.columns.events import event_codes

    event = prep.schema.event
    if event is None or event not in frame:
        return frame
    labels = prep.schema.by_name(event).labels
    if labels is None or tuple(labels) in ((0, 1), (0.0, 1.0)):
        return frame
    return frame.assign(**{event: event_codes(frame[event], labels)})


def real_fit_beside(prep: Prepared) -> Callable[[], ModelFit] | None:
    """The real table's model fitted on a thread while the release draws and measures its
    rows (it does not depend on them); the returned function waits for it and gives it, or
    raises what the fit raised (a model that does not converge is reported as before).

    Why: on a million rows the real Cox fit took about 5 s of the release's comparison, on one
    core while the other was idle. None when the run compares no model."""
    import threading

    spec = model_spec(prep)
    if spec is None:
        return None
    out: list[Any] = []

    def fit() -> None:
        from engine.stats.compare import real_table_fit

        try:
            real = as_event_codes(prep, prep.real)
            spec.check(real, "real table")
            out.append(real_table_fit(real, spec))
        except BaseException as err:  # re-raised where the fit is used
            out.append(err)

    thread = threading.Thread(target=fit, name="real-model-fit", daemon=True)
    thread.start()

    def result() -> ModelFit:
        thread.join()
        if isinstance(out[0], BaseException):
            raise out[0]
        return out[0]

    return result


def fidelity_of(
    prep: Prepared,
    released: tuple[pd.DataFrame, ...],
    real_fit: Callable[[], ModelFit] | None = None,
) -> Fidelity:
    """Real vs synthetic statistics of ``released`` (the first copy; with several copies the
    model is also combined over all of them). ``real_fit``: the real table's model fit,
    made beside the release (:func:`real_fit_beside`)."""
    from engine.stats.models import ModelNotConverged, fidelity_report
    from engine.stats.topcoded import rule_cost, schema_bounds

    plan = analysis_plan(prep)  # once: its counts read every real row
    spec = model_spec(prep, plan)
    columns = [c.name for c in prep.schema.synthesized()]
    real, released = (
        as_event_codes(prep, prep.real),
        tuple(as_event_codes(prep, r) for r in released),
    )
    report = fidelity_report(real, released[0], spec, columns, real_fit=real_fit)
    # what the range rule costs: the real table limited the same way (issue 44)
    cost = rule_cost(real, schema_bounds(prep.schema), report, spec)
    if len(released) < 2 or spec is None or report.model_error is not None:
        return Fidelity(report, rule_cost=cost, plan=plan)
    try:
        combined = _combined_copies(report, released, spec)
    except ModelNotConverged as exc:
        error = f"did not converge: {exc}"
        return Fidelity(report, combined_error=error, rule_cost=cost, plan=plan)
    return Fidelity(report, combined_copies=combined, rule_cost=cost, plan=plan)


def _combined_copies(
    report: FidelityResult, released: tuple[pd.DataFrame, ...], spec: ModelSpec
) -> ModelFit:
    from engine.stats.models import combine_synthetic_copies, fit_model

    combined = combine_synthetic_copies([fit_model(c, spec) for c in released])
    if report.comparison is not None:  # withhold what the real groups' sizes withhold
        real_withheld = report.comparison.real.withheld
        withheld = tuple(dict.fromkeys(real_withheld + combined.withheld))
        combined = replace(combined, withheld=withheld)
    return combined


def protection_effect(
    prep: Prepared,
    flow: TrainedFlow,
    X_model: np.ndarray,
    w: float,
    rng: np.random.Generator,
    protected: pd.DataFrame,
    fidelity: Fidelity,
) -> ProtectionEffect:
    """What outlier protection cost in fidelity: the same measures for a plain release at the
    same w (never exported) beside the protected one."""
    from engine.flows.generate import latent_noise_injection

    plain = prep.encoder.inverse_transform(latent_noise_injection(flow, X_model, w, rng)).frame
    plain_fidelity = fidelity_of(prep, (plain,))
    return ProtectionEffect(
        model_without=_ratios(plain_fidelity, "synthetic"),
        model_with=_ratios(fidelity, "synthetic"),
        model_real=_ratios(fidelity, "real"),
        largest_mean_shift_sd_without=_largest_mean_shift(prep.real, plain),
        largest_mean_shift_sd_with=_largest_mean_shift(prep.real, protected),
    )


def _ratios(fidelity: Fidelity, which: str) -> dict[str, float]:
    """Hazard or odds ratio (else the estimate) per term of one fit."""
    return {
        c["name"]: c.get("hr", c.get("or", c["estimate"])) for c in fidelity.coefficients(which)
    }


def _largest_mean_shift(real: pd.DataFrame, frame: pd.DataFrame) -> float:
    """The largest gap of a numeric column's mean, in real standard deviations."""
    numeric = real.select_dtypes("number").columns
    diff = (frame[numeric].mean() - real[numeric].mean()).abs() / real[numeric].std()
    return float(diff.max()) if len(numeric) else 0.0
