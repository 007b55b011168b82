"""Issue 28: survival columns as researchers name them in real public tables.

Each case is the (time, event) header pair of a real public table, with its event coding, the
source, and the other columns' names (a few of them), on small generated rows of the right
coding. Recognised outright, or asked about with the right answer preselected, in at least 29 of
the cases (the issue's bar); the cases where the answer would be wrong are listed in
``KNOWN_MISSES`` with why.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.columns.roles import recognise_survival_roles

# (source, time, event, coding of the event, value meaning the event, other columns)
# coding: "01" 0/1, "12" R's 1/2 (2 = event), "bool", "10" a censoring indicator (1 = censored),
# or a pair of words (absent, present).
PAIRS = [
    ("R survival: lung", "time", "status", "12", 2, ["inst", "age", "sex", "ph.ecog"]),
    ("R survival: veteran", "time", "status", "01", 1, ["trt", "celltype", "karno", "age"]),
    ("R survival: ovarian", "futime", "fustat", "01", 1, ["age", "resid.ds", "rx", "ecog.ps"]),
    ("R survival: flchain", "futime", "death", "01", 1, ["age", "sex", "kappa", "lambda"]),
    ("R survival: mgus2 (progression)", "ptime", "pstat", "01", 1, ["age", "sex", "hgb", "mspike"]),
    (
        "R survival: rotterdam (relapse)",
        "rtime",
        "recur",
        "01",
        1,
        ["year", "age", "size", "nodes"],
    ),
    ("R survival: gbsg", "rfstime", "status", "01", 1, ["age", "meno", "size", "grade"]),
    ("R survival: nwtco", "edrel", "rel", "01", 1, ["instit", "histol", "stage", "age"]),
    ("R survival: myeloid", "futime", "death", "01", 1, ["trt", "sex", "flt3"]),
    ("R survival: retinopathy", "futime", "status", "01", 1, ["laser", "eye", "age", "risk"]),
    ("R survival: diabetic", "time", "status", "01", 1, ["laser", "age", "eye", "trt", "risk"]),
    ("R survival: colon", "time", "status", "01", 1, ["rx", "sex", "age", "obstruct", "nodes"]),
    ("R survival: jasa (Stanford heart)", "futime", "fustat", "01", 1, ["age", "surgery"]),
    (
        "lifelines / carData: rossi",
        "week",
        "arrest",
        "01",
        1,
        ["fin", "age", "race", "wexp", "prio"],
    ),
    ("lifelines: waltons", "T", "E", "01", 1, ["group"]),
    ("lifelines: larynx", "time", "death", "01", 1, ["age", "Stage_II", "Stage_III"]),
    ("lifelines: kidney_transplant", "time", "death", "01", 1, ["age", "black_male"]),
    ("lifelines: dd (democracy)", "duration", "observed", "01", 1, ["democracy", "regime"]),
    ("lifelines: canadian_senators", "diff_days", "observed", "01", 1, ["party", "province"]),
    ("lifelines: leukemia", "t", "status", "01", 1, ["sex", "logWBC", "Rx"]),
    ("lifelines: multicenter_aids_cohort", "T", "D", "01", 1, ["AIDSY", "W", "Z"]),
    ("lifelines: g3", "time", "event", "01", 1, ["age", "sex", "histology", "group"]),
    (
        "lifelines / TH.data: gbsg2 (cens 1 = event)",
        "time",
        "cens",
        "01",
        1,
        ["horTh", "age", "menostat", "tsize", "pnodes"],
    ),
    (
        "speff2trial: ACTG175 (cens 1 = event)",
        "days",
        "cens",
        "01",
        1,
        ["arms", "age", "wtkg", "cd40"],
    ),
    (
        "scikit-survival / Hosmer-Lemeshow: whas500",
        "lenfol",
        "fstat",
        "01",
        1,
        ["age", "gender", "hr", "sysbp", "bmi"],
    ),
    (
        "scikit-survival: veterans_lung_cancer",
        "Survival_in_days",
        "Status",
        "bool",
        True,
        ["Age_in_years", "Celltype", "Karnofsky_score"],
    ),
    (
        "scikit-survival / Hosmer-Lemeshow: aids (actg320; censor 1 = event)",
        "time",
        "censor",
        "01",
        1,
        ["tx", "sex", "raceth", "cd4", "age"],
    ),
    (
        "Hosmer-Lemeshow: uis (censor 1 = returned to drug use)",
        "time",
        "censor",
        "01",
        1,
        ["age", "beck", "ndrugtx", "race", "treat"],
    ),
    (
        "UCI: heart failure clinical records",
        "time",
        "DEATH_EVENT",
        "01",
        1,
        ["age", "anaemia", "ejection_fraction", "serum_creatinine"],
    ),
    (
        "cBioPortal / TCGA clinical (overall survival)",
        "OS_MONTHS",
        "OS_STATUS",
        "01",
        1,
        ["AGE", "SEX", "AJCC_PATHOLOGIC_TUMOR_STAGE"],
    ),
    (
        "cBioPortal / TCGA clinical (progression-free)",
        "PFS_MONTHS",
        "PFS_STATUS",
        "01",
        1,
        ["AGE", "SEX", "OS_MONTHS", "OS_STATUS"],
    ),
    ("Hmisc: support2", "d.time", "death", "01", 1, ["age", "sex", "num.co", "scoma"]),
    (
        "riskCommunicator: framingham",
        "TIMEDTH",
        "DEATH",
        "01",
        1,
        ["AGE", "SEX", "TOTCHOL", "SYSBP"],
    ),
    (
        "Stata: cancer.dta (stset studytime, failure(died))",
        "studytime",
        "died",
        "01",
        1,
        ["drug", "age"],
    ),
    (
        "SAS/STAT PROC PHREG: Myeloma (Time*VStatus(0))",
        "Time",
        "VStatus",
        "01",
        1,
        ["LogBUN", "HGB", "Platelet", "Age"],
    ),
    (
        "SAS/STAT PROC LIFETEST: VALung (SurvTime*Censor(1): 1 = censored)",
        "SurvTime",
        "Censor",
        "10",
        0,
        ["Cell", "Therapy", "Prior", "Age"],
    ),
    ("asaur: pharmacoSmoking", "ttr", "relapse", "01", 1, ["grp", "age", "gender", "race"]),
    (
        "asaur: hepatoCellular (recurrence-free)",
        "RFS",
        "Recurrence",
        "01",
        1,
        ["Age", "Gender", "HBsAg"],
    ),
    ("KMsurv: tongue", "time", "delta", "01", 1, ["type"]),
    (
        "METABRIC (Curtis et al. 2012, cBioPortal)",
        "Overall Survival (Months)",
        "Overall Survival Status",
        ("Living", "Deceased"),
        "Deceased",
        ["Age at Diagnosis", "Tumor Size"],
    ),
]
# Cases recognised but with another answer preselected, and why (the issue allows one in 30).
KNOWN_MISSES = {
    # SAS names the censoring value in the model statement, not in the data: 'Censor' means
    # 1 = censored there, while gbsg2, ACTG175, aids and uis name 1 = event 'cens'/'censor'.
    # The question is asked with the reverse reading offered second.
    "SAS/STAT PROC LIFETEST: VALung (SurvTime*Censor(1): 1 = censored)",
}


def _frame(time: str, event: str, coding, others: list[str], n: int = 120) -> pd.DataFrame:
    rng = np.random.default_rng(len(time) * 31 + len(event))
    data: dict[str, object] = {}
    for i, name in enumerate(others):
        # other columns: small integers (codes, counts) or measurements with decimals
        data[name] = rng.integers(0, 4, n) if i % 2 else rng.normal(60, 10, n).round(1)
    data[time] = rng.exponential(500, n).round(1)
    e = rng.integers(0, 2, n)
    if coding == "12":
        data[event] = e + 1
    elif coding == "bool":
        data[event] = e.astype(bool)
    elif isinstance(coding, tuple):
        data[event] = np.where(e == 1, coding[1], coding[0])
    else:  # "01" and "10" are both stored as 0/1
        data[event] = e
    return pd.DataFrame(data)


def _outcome(case) -> str:
    """'recognised', 'asked' (the right answer preselected) or 'wrong'."""
    source, time, event, coding, value, others = case
    r = recognise_survival_roles(_frame(time, event, coding, others))
    default = {"01": 1, "bool": True, "12": 2}.get(coding if isinstance(coding, str) else "", None)
    chosen = r.event_value if r.event_value is not None else default
    right_value = chosen == value or (isinstance(coding, tuple) and r.event_value is None)
    if (r.time, r.event) == (time, event) and right_value:
        return "recognised"
    if r.must_ask and (r.likely_time, r.likely_event) == (time, event) and right_value:
        return "asked"
    return "wrong"


def test_at_least_29_of_the_real_header_pairs_are_recognised_or_asked_rightly() -> None:
    assert len(PAIRS) >= 30
    outcomes = {case[0]: _outcome(case) for case in PAIRS}
    wrong = {s for s, o in outcomes.items() if o == "wrong"}
    assert wrong == KNOWN_MISSES, wrong
    right = len(PAIRS) - len(wrong)
    assert right >= 29 and right / len(PAIRS) >= 29 / 30
    # most are recognised outright; the censoring-looking names are asked, never assumed
    assert sum(o == "recognised" for o in outcomes.values()) >= 30
    for source, _, event, *_ in PAIRS:
        if "cens" in event.lower():
            assert outcomes[source] != "recognised", source


@pytest.mark.parametrize("case", [c for c in PAIRS if c[0] not in KNOWN_MISSES], ids=lambda c: c[0])
def test_each_real_header_pair(case) -> None:
    assert _outcome(case) in ("recognised", "asked")


def test_an_unrecognised_time_column_is_asked_about_with_the_likely_pair_preselected() -> None:
    """Only the event is named like one: the one numeric, many-valued column that is not a
    measurement such as age is the likely follow-up time."""
    frame = _frame("obs_len", "death", "01", ["age", "grade", "bmi"])
    r = recognise_survival_roles(frame)
    assert (r.time, r.event) == (None, None) and r.must_ask
    assert (r.likely_time, r.likely_event) == ("obs_len", "death")
    assert "not named like a follow-up time" in str(r.question)
