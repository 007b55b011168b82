"""The analysis is checked before any training, in plain words (engine.pipeline.config)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.columns.schema import infer_schema
from engine.errors import InputError
from engine.pipeline import RunConfig, prepare
from engine.pipeline.config import MIN_EVENTS, check_analysis


def _table(n: int = 120, events: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    event = np.zeros(n, dtype=int)
    event[:events] = 1
    return pd.DataFrame(
        {
            "futime": rng.uniform(0.5, 10.0, n).round(2),
            "event": rng.permutation(event),
            "sex": rng.choice(["F", "M"], n),
            "stage": rng.choice(["I", "II", "III"], n),
            "age": rng.normal(60, 8, n).round(1),
            "sbp": rng.normal(130, 15, n).round(0),
        }
    )


def _check(frame: pd.DataFrame, **fields) -> list[str]:
    config = RunConfig(input="t.csv", **fields)
    schema = infer_schema(frame, time=fields.get("time"), event=fields.get("event"))
    real = frame.dropna()
    return check_analysis(config, schema, real)


def test_cox_without_survival_roles_is_refused_in_words():
    frame = _table().rename(columns={"futime": "x1", "event": "x2"})  # nothing recognised
    problems = _check(frame, analysis="cox", covariates=("sbp", "age"))
    assert len(problems) == 1
    assert "follow-up time column and an event column" in problems[0]
    assert "--" not in problems[0]


def test_cox_with_too_few_events_names_the_column_and_the_minimum():
    frame = _table(events=MIN_EVENTS - 1)
    problems = _check(frame, analysis="cox", time="futime", event="event", covariates=("sbp",))
    assert problems == [
        f"A Cox model needs at least {MIN_EVENTS} events (1) in 'event', and the complete rows "
        "have fewer: choose another analysis, or a larger table."
    ]
    ok = _check(_table(events=MIN_EVENTS), analysis="cox", time="futime", event="event")
    assert ok == []


def test_logistic_needs_a_0_1_outcome_and_ols_a_numeric_one():
    frame = _table()
    logistic = _check(frame, analysis="logistic", outcome="sex", covariates=("age",))
    assert len(logistic) == 1 and "'sex' coded 0/1" in logistic[0] and "F, M" in logistic[0]
    ols = _check(frame, analysis="ols", outcome="stage", covariates=("age",))
    assert len(ols) == 1 and "numeric outcome; 'stage' is categorical" in ols[0]
    assert _check(frame, analysis="ols", outcome="sbp", covariates=("age",)) == []
    assert _check(frame, analysis="logistic", outcome="event", covariates=("age",)) == []


def test_settings_alone_outcome_missing_or_also_the_exposure():
    assert check_analysis(RunConfig(input="t.csv", analysis="ols")) == [
        "A linear regression needs an outcome column: choose the column the model explains."
    ]
    both = check_analysis(
        RunConfig(input="t.csv", analysis="ols", outcome="sbp", covariates=("sbp", "age"))
    )
    assert both == ["'sbp' is both the outcome and the exposure: choose different columns."]
    with pytest.raises(InputError, match="needs an outcome column"):
        RunConfig(input="t.csv", analysis="logistic").validate()


def test_exposure_that_is_dropped_is_named():
    frame = _table()
    config = RunConfig(input="t.csv", analysis="ols", outcome="sbp", covariates=("age",))
    schema = infer_schema(frame, drop=("age",))
    problems = check_analysis(config, schema, frame)
    assert problems and problems[0].startswith("the exposure 'age' is not among the synthesized")


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"auc_max": 0.4}, "AUC limit 0.4"),
        ({"forced_w": 1.5}, "w = 1.5"),
        ({"w_grid": (0.2, 1.0)}, "candidate w values (0.2, 1)"),
        ({"file_format": "pdf"}, "file format 'pdf'"),
        ({"budget": "huge"}, "model search effort 'huge'"),
        ({"device": "tpu"}, "compute device 'tpu'"),
        ({"audit_max_rows": 10}, "largest audited sample 10 rows"),
        ({"copies": 0}, "0 synthetic copies"),
        ({"dp_epsilon": -1.0}, "privacy budget ε = -1"),
        ({"dp_delta": 2.0}, "privacy δ = 2"),
        ({"analysis": "probit"}, "analysis 'probit' is unknown"),
    ],
)
def test_validate_names_the_setting_in_words_not_a_flag(fields, words):
    with pytest.raises(InputError) as refused:
        RunConfig(input="t.csv", **fields).validate()
    assert words in str(refused.value)
    assert "--" not in str(refused.value)


def test_prepare_refuses_a_cox_without_roles_before_training(tmp_path: Path):
    src = tmp_path / "cohort.csv"
    _table().rename(columns={"futime": "x1", "event": "x2"}).to_csv(src, index=False)
    with pytest.raises(InputError, match=r"^cohort.csv: A Cox model needs a follow-up time"):
        prepare(RunConfig(input=src, analysis="cox", covariates=("sbp",)))
