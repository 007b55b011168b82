"""Issue 44, item 3, "Done when": header pairs as written in R packages, SAS examples and TCGA
files that no other test uses and that the vocabulary's table does not list, recognised from the
command line (no --time/--event given) in at least 7 cases of 8.

Chosen, with their sources, before the vocabulary of :mod:`engine.columns.survival_names` was
extended for the issue, and not used to tune it. Each table is generated (200 rows) with the
source's column names, in its order, and values of the documented coding:

- flexsurv ``bc`` (German Breast Cancer Study Group): ``censrec`` (1 = dead, 0 = censored),
  ``rectime`` (days), ``group``, ``recyrs`` (the same time in years, easysurv's ``easy_bc``).
- randomForestSRC ``peakVO2`` (Hsich et al. 2011): ``rfsrc(Surv(ttodead, died) ~ ., peakVO2)``.
- scikit-survival ``load_breast_cancer`` (GEO GSE7390, TRANSBIG): ``t.tdm`` (days to distant
  metastasis), ``e.tdm`` (boolean).
- JM ``pbc2.id`` (Mayo PBC): ``years``, ``status`` (alive / transplanted / dead), ...,
  ``status2`` (1 = dead, 0 = alive or transplanted).
- asaur ``gastricXelox``: ``timeWeeks``, ``delta`` (1 = death, 0 = censored).
- SAS/STAT sample library LIFTMISC, ``vagcan`` (Kalbfleisch & Prentice): ``days``,
  ``censored = (days < 0)`` and ``time days*censored(1)``: 1 = censored.
- TCGA via TCGAbiolinks ``GDCquery_clinic``: ``vital_status`` (Alive / Dead),
  ``days_to_last_follow_up`` among the GDC clinical fields.
- smcure ``e1684`` (ECOG melanoma trial): ``TRT``, ``FAILTIME`` (relapse-free time),
  ``FAILCENS`` (1 = the event, 0 = censored), ``AGE`` (centred), ``SEX``.

Measured: 1 of 8 before issue 44's change (gastricXelox only; the others were recognised as the
likely pair and not used), 1 of 8 after the vocabulary alone, 5 of 8 once the command line uses
a likely pair. The three misses are in ``KNOWN_MISSES``; the issue's bar (7 of 8) is not met
and is kept below as a strict expected failure, to pass when the misses are fixed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

N = 200


def _bc(rng: np.random.Generator) -> pd.DataFrame:
    days = rng.uniform(8, 2660, N).round()
    return pd.DataFrame(
        {
            "censrec": rng.integers(0, 2, N),
            "rectime": days,
            "group": rng.choice(["Good", "Medium", "Poor"], N),
            "recyrs": (days / 365.25).round(3),
        }
    )


def _peak_vo2(rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "ttodead": rng.uniform(0.02, 11.5, N).round(3),
            "died": rng.integers(0, 2, N),
            "age": rng.normal(54, 11, N).round(),
            "bmi": rng.normal(28, 5, N).round(1),
            "male": rng.integers(0, 2, N),
            "peak.vo2": rng.normal(16, 5, N).clip(5, 45).round(1),
            "betablocker": rng.integers(0, 2, N),
        }
    )


def _breast_cancer(rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "X200726_at": rng.normal(9.5, 0.8, N).round(4),
            "X200965_s_at": rng.normal(10.2, 0.9, N).round(4),
            "age": rng.integers(24, 71, N),
            "er": rng.choice(["negative", "positive"], N),
            "grade": rng.choice(["poorly differentiated", "intermediate", "well"], N),
            "size": rng.uniform(0.5, 5.0, N).round(1),
            "t.tdm": rng.uniform(125, 7000, N).round(),
            "e.tdm": rng.random(N) < 0.26,
        }
    )


def _pbc2_id(rng: np.random.Generator) -> pd.DataFrame:
    status = rng.choice(["alive", "transplanted", "dead"], N, p=[0.55, 0.08, 0.37])
    return pd.DataFrame(
        {
            "id": np.arange(1, N + 1),
            "years": rng.uniform(0.1, 14.3, N).round(4),
            "status": status,
            "drug": rng.choice(["placebo", "D-penicil"], N),
            "age": rng.normal(49, 10, N).round(2),
            "sex": rng.choice(["male", "female"], N, p=[0.12, 0.88]),
            "year": np.zeros(N),
            "ascites": rng.choice(["No", "Yes"], N, p=[0.92, 0.08]),
            "hepatomegaly": rng.choice(["No", "Yes"], N),
            "spiders": rng.choice(["No", "Yes"], N, p=[0.7, 0.3]),
            "serBilir": rng.lognormal(0.5, 1.0, N).round(1),
            "albumin": rng.normal(3.5, 0.4, N).round(2),
            "platelets": rng.normal(260, 90, N).clip(60).round(),
            "histologic": rng.integers(1, 5, N),
            "status2": (status == "dead").astype(int),
        }
    )


def _gastric_xelox(rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame({"timeWeeks": rng.integers(4, 160, N), "delta": rng.integers(0, 2, N)})


def _vagcan(rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "days": rng.integers(140, 345, N),
            "group": rng.choice(["pretrt1", "pretrt2"], N),
            "censored": (rng.random(N) < 0.1).astype(int),
        }
    )


def _gdc_clinical(rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "submitter_id": [f"TCGA-{k:02d}-{1000 + k:04d}" for k in range(N)],
            "ajcc_pathologic_stage": rng.choice(["Stage I", "Stage II", "Stage III"], N),
            "days_to_last_follow_up": rng.integers(0, 4000, N),
            "age_at_diagnosis": rng.integers(10000, 30000, N),
            "race": rng.choice(["white", "asian", "black or african american"], N),
            "gender": rng.choice(["female", "male"], N),
            "age_at_index": rng.integers(28, 85, N),
            "vital_status": rng.choice(["Alive", "Dead"], N, p=[0.7, 0.3]),
        }
    )


def _e1684(rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "TRT": rng.integers(0, 2, N),
            "FAILTIME": rng.uniform(0.01, 9.6, N).round(4),
            "FAILCENS": rng.integers(0, 2, N),
            "AGE": rng.normal(0, 13, N).round(3),
            "SEX": rng.integers(0, 2, N),
        }
    )


# (source, table, the time columns that are right, the event, the value meaning the event)
HELD_OUT: list[tuple[str, Any, tuple[str, ...], str, Any]] = [
    ("flexsurv: bc", _bc, ("rectime", "recyrs"), "censrec", 1),
    ("randomForestSRC: peakVO2", _peak_vo2, ("ttodead",), "died", 1),
    ("scikit-survival: breast_cancer", _breast_cancer, ("t.tdm",), "e.tdm", True),
    ("JM: pbc2.id", _pbc2_id, ("years",), "status2", 1),
    ("asaur: gastricXelox", _gastric_xelox, ("timeWeeks",), "delta", 1),
    ("SAS/STAT LIFTMISC: vagcan (days*censored(1))", _vagcan, ("days",), "censored", 0),
    (
        "TCGA / GDC clinical (TCGAbiolinks)",
        _gdc_clinical,
        ("days_to_last_follow_up",),
        "vital_status",
        "Dead",
    ),
    ("smcure: e1684", _e1684, ("FAILTIME",), "FAILCENS", 1),
]


def command_line_roles(path: Path) -> tuple[str | None, str | None, str | None]:
    """(time, event, value) the command line uses for a file given without --time/--event."""
    from engine.cli import build_parser
    from engine.pipeline.console import recognise_roles

    ns = build_parser().parse_args(["run", str(path)])
    recognise_roles(ns)
    event, _, value = (ns.event or "").partition("=")
    return ns.time, event or None, value or None


def _right(case: tuple[str, Any, tuple[str, ...], str, Any], tmp: Path) -> bool:
    source, make, times, event, value = case
    path = tmp / f"{make.__name__.strip('_')}.csv"
    make(np.random.default_rng(44)).to_csv(path, index=False)
    got_time, got_event, got_value = command_line_roles(path)
    usual = value is True or value == 1 or value == "Dead"  # what the engine reads by default
    right_value = (got_value is None and usual) or str(got_value).lower() == str(value).lower()
    return got_time in times and got_event == event and right_value


# Missed, and why (nothing in the vocabulary was added for them after they were seen to fail):
KNOWN_MISSES = {
    # neither header holds a vocabulary word ("tdm" is no end point the table lists)
    "scikit-survival: breast_cancer",
    # "status2" is no vocabulary name, and the 0/1 ascites, hepatomegaly and spiders are as
    # likely: the event would be a blind guess, so no pair is used
    "JM: pbc2.id",
    # "FAILCENS" is not read as a censoring name ("cens" inside a word is not matched), and TRT
    # and SEX are 0/1 too: a blind guess again, so no pair is used
    "smcure: e1684",
}


def test_the_held_out_pairs_outside_the_known_misses_are_used(tmp_path: Path) -> None:
    assert len(HELD_OUT) == 8
    right = held_out_outcomes(tmp_path)
    assert {source for source, ok in right.items() if not ok} == KNOWN_MISSES
    assert sum(right.values()) == 5


@pytest.mark.xfail(strict=True, reason="issue 44's bar: 5 of 8 are used today (KNOWN_MISSES)")
def test_at_least_7_of_8_held_out_header_pairs_are_used_from_the_command_line(
    tmp_path: Path,
) -> None:
    right = held_out_outcomes(tmp_path)
    missed = [source for source, ok in right.items() if not ok]
    assert len(HELD_OUT) - len(missed) >= 7, missed


def held_out_outcomes(tmp: Path) -> dict[str, bool]:
    """Each held-out source and whether the command line uses its pair (for the report)."""
    return {case[0]: _right(case, tmp) for case in HELD_OUT}
