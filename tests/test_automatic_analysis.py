"""The automatic analysis one click rests on (issue 44): the event chosen by name and data, the
exposure by name and levels (never the first column), columns known only after the outcome and
columns that determine another left out with their reasons, the rows the model leaves out said,
and a verdict that says when the model failed or the table is too small to judge.

The tables are generated with the shapes of the public ones the issue names: an HIV trial of
1,151 rows with an arm and a group code that determines it (ACTG 320: time/censor and
time_d/censor_d), a cohort with ``fu_days``, ``died`` and a 0/1 history of cardiovascular
disease, a cohort whose cause of death is present only for those who died and whose creatinine
is missing for 17 % (flchain), and a 60-row extract.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine import RunConfig, recognise_survival_roles
from engine.pipeline.compare_step import analysis_plan
from engine.pipeline.prepare_step import prepare


def trial(n: int = 1151, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    txgrp = rng.choice([1, 2, 3, 4], n, p=[0.3, 0.3, 0.2, 0.2])
    tx = (txgrp % 2 == 0).astype(int)
    age, cd4 = rng.normal(38, 9, n).round(), rng.gamma(2, 40, n).round()
    lam = 0.0006 * np.exp(-0.67 * tx - 0.01 * (cd4 - 80) + 0.02 * (age - 38))
    t_e, c = rng.exponential(1 / lam), rng.uniform(200, 365, n)
    time, censor = np.minimum(t_e, c).round(), (t_e < c).astype(int)
    t_d = t_e + rng.exponential(400, n)
    time_d = np.maximum(time, np.minimum(t_d, c)).round()
    censor_d = ((t_d < c) & (censor == 1)).astype(int)
    return pd.DataFrame(
        {
            "time": time,
            "censor": censor,
            "time_d": time_d,
            "censor_d": censor_d,
            "tx": tx,
            "txgrp": txgrp,
            "strat2": rng.integers(0, 2, n),
            "sex": rng.integers(1, 3, n),
            "karnof": rng.choice([70, 80, 90, 100], n),
            "cd4": cd4,
            "age": age,
        }
    )


def heart_cohort(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cvd, age = rng.integers(0, 2, n), rng.normal(65, 10, n).round()
    t = rng.exponential(1 / (0.0004 * np.exp(0.5 * cvd + 0.05 * (age - 65))))
    c = rng.uniform(300, 2000, n)
    return pd.DataFrame(
        {
            "afb": rng.integers(0, 2, n),
            "age": age,
            "sex": rng.integers(0, 2, n),
            "cvd": cvd,
            "sbp": rng.normal(135, 20, n).round(),
            "fu_days": np.minimum(t, c).round(),
            "died": (t < c).astype(int),
        }
    )


def light_chain(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age, flc = rng.normal(64, 10, n).round(), rng.integers(1, 11, n)
    creat = np.where(rng.random(n) < 0.17, np.nan, rng.lognormal(0, 0.3, n).round(1))
    t = rng.exponential(1 / (0.0001 * np.exp(0.08 * (age - 64) + 0.1 * flc)))
    c = rng.uniform(1000, 5000, n)
    death = (t < c).astype(int)
    chapter = np.where(death == 1, rng.choice(["Circulatory", "Neoplasms", "Respiratory"], n), None)
    return pd.DataFrame(
        {
            "age": age,
            "sex": rng.choice(["F", "M"], n),
            "flc.grp": flc,
            "creatinine": creat,
            "futime": np.minimum(t, c).round(),
            "death": death,
            "chapter": chapter,
        }
    )


def _plan(frame: pd.DataFrame, path, **roles):
    path = path / "table.csv"
    frame.to_csv(path, index=False)
    found = recognise_survival_roles(frame)
    time = roles.get("time") or found.time or found.likely_time
    event = roles.get("event") or found.event or found.likely_event
    prep = prepare(RunConfig(input=path, seed=1, time=time, event=event))
    return found, analysis_plan(prep)


def test_the_trial_compares_the_arm_without_the_group_code_or_the_second_outcome(tmp_path):
    found, plan = _plan(trial(), tmp_path)
    # the primary pair is the likely answer (time_d / censor_d share only a one-letter stem)
    assert (found.likely_time, found.likely_event) == ("time", "censor")
    assert plan.exposure == "tx" and plan.covariates[0] == "tx"
    left = dict(plan.left_out)
    assert "determines tx (the exposure)" in left["txgrp"]
    assert "another follow-up time" in left["time_d"] and "another outcome" in left["censor_d"]
    assert set(plan.covariates) == {"tx", "strat2", "sex", "karnof", "cd4", "age"}
    assert plan.rows_used == 1151 and plan.lines()[1].startswith("Exposure: tx (it looks like")


def test_died_is_the_event_and_the_history_flag_a_covariate(tmp_path):
    found, plan = _plan(heart_cohort(), tmp_path)
    assert (found.time, found.event, found.question) == ("fu_days", "died", None)
    assert "cvd" in plan.covariates and plan.event == "died"
    # no column looks like a treatment: no exposure, never the alphabetically first (afb)
    assert plan.exposure is None and plan.covariates[0] == "afb"
    assert plan.lines()[1].startswith("Exposure: none")


def test_the_cause_of_death_is_left_out_and_the_rows_left_out_are_said(tmp_path):
    frame = light_chain()
    found, plan = _plan(frame, tmp_path)
    assert (found.time, found.event) == ("futime", "death")
    assert "chapter" not in plan.covariates
    assert "known only after the outcome" in dict(plan.left_out)["chapter"]
    missing = int(frame["creatinine"].isna().sum())
    assert plan.rows_left_out == missing and plan.rows_used == len(frame) - missing
    assert f"{missing:,} have no value in a model column (creatinine {missing:,})" in (
        plan.rows_line()
    )
    assert plan.to_dict()["rows_left_out"] == missing


def test_a_60_row_extract_is_not_called_a_match() -> None:
    from engine.stats.models import fidelity_report

    real = heart_cohort(60, 3)
    rng = np.random.default_rng(4)
    synth = real.copy()
    synth["sbp"] = synth["sbp"] + rng.normal(3, 5, 60)  # off by a fraction of an SD: unflagged
    verdict = fidelity_report(real, synth, None).verdict
    assert not verdict.flagged_columns  # on main this was a green "Distributions match"
    assert verdict.headline == "Too few rows to judge" and not verdict.same_conclusions
    assert "with 60 rows" in verdict.line and verdict.largest_smd > 0.1


def test_a_model_that_fails_is_said_with_what_to_change() -> None:
    from engine.stats.models import ModelSpec, fidelity_report

    frame = trial(400, 1)
    frame["tx_copy"] = frame["tx"]  # perfectly collinear: the Cox fit fails
    spec = ModelSpec("cox", covariates=("tx", "tx_copy"), time="time", event="censor")
    result = fidelity_report(frame, frame.sample(frac=1.0, random_state=2), spec)
    verdict = result.verdict
    if result.model_error is None:
        pytest.skip("lifelines fitted the collinear model on this version")
    assert verdict.headline == "The model could not be fitted" and not verdict.same_conclusions
    assert "no outcome model was compared" not in verdict.line
    assert "What to change" in verdict.line and "Settings page" in verdict.line


def test_the_one_question_offers_the_arm(qtbot) -> None:
    from desktop.oneclick import OutcomeQuestion, plan_outcome

    plan = plan_outcome(trial())
    assert plan.must_ask and plan.exposures == ("tx",)
    dialog = OutcomeQuestion(plan.choices, None, plan.exposures)
    qtbot.addWidget(dialog)
    assert dialog.chosen().exposure == "tx"
    dialog.exposure_combo.setCurrentIndex(1)  # "None: every column is an adjustment"
    assert dialog.chosen().exposure == ""
    # no treatment-like column and a certain pair: no question at all
    assert not plan_outcome(heart_cohort()).must_ask


def test_one_run_on_the_trial_compares_the_arm_and_leads_with_it(tmp_path) -> None:
    """End to end (about 15 s): the run's record names the model and its reasons, the Cox model
    is fitted (it did not converge with the group code in it), and the arm leads the verdict
    whenever its significance or direction changes."""
    import json

    from engine import run_pipeline

    path = tmp_path / "trial.csv"
    trial().to_csv(path, index=False)
    cfg = RunConfig(input=path, out=tmp_path / "out", time="time", event="censor", seed=1)
    run_pipeline(cfg)
    record = json.loads((tmp_path / "out" / "audit.json").read_text(encoding="utf-8"))
    fidelity = record["fidelity"]
    assert fidelity["model_status"] == "fitted"
    plan = fidelity["analysis_plan"]
    assert plan["exposure"] == "tx" and "txgrp" not in plan["covariates"]
    assert [c["column"] for c in plan["left_out"]] == ["time_d", "censor_d", "txgrp"]
    rows = {c["name"]: c for c in fidelity["verdict"]["coefficients"]}
    assert "tx" in rows
    changed = any(r in rows["tx"]["reasons"] for r in ("significance changes", "direction changes"))
    lead = fidelity["verdict"]["lead"]
    assert (lead is not None and lead.startswith("In the real data tx")) == changed
