"""Issue 44, item 3: from the command line (no --time/--event) the survival pair is used when it
is recognised, and also when it is only likely (the wizard would ask), said in one line and
recorded in audit.json's ``roles``; the relapse, progression and TCGA forms are in the
vocabulary. Each case is a header pair from a real source on a generated table of 200 rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from engine.columns.roles import recognise_survival_roles
from engine.pipeline.console import command_line_roles

N = 200
RNG = np.random.default_rng(3)


def _days() -> np.ndarray:
    return RNG.integers(5, 3000, N)


def _flag() -> np.ndarray:
    return RNG.integers(0, 2, N)


def _tcga_cdr() -> pd.DataFrame:
    """TCGA Pan-Cancer Clinical Data Resource (UCSC Xena): OS, OS.time, DSS, ..., PFI.time."""
    data: dict[str, Any] = {
        "bcr_patient_barcode": [f"TCGA-{k:04d}" for k in range(N)],
        "age_at_initial_pathologic_diagnosis": RNG.integers(30, 85, N),
        "gender": RNG.choice(["FEMALE", "MALE"], N),
    }
    for end_point in ("OS", "DSS", "DFI", "PFI"):
        data[end_point], data[f"{end_point}.time"] = _flag(), _days()
    return pd.DataFrame(data)


# (source, table, time, event, the event value the command line names, or None for the usual)
CASES: list[tuple[str, Any, str, str, Any]] = [
    (
        "issue 44: pfs / progressed",
        lambda: pd.DataFrame(
            {"age": RNG.integers(30, 80, N), "pfs": _days(), "progressed": _flag()}
        ),
        "pfs",
        "progressed",
        None,
    ),
    (
        "issue 44: time_to_relapse / relapsed",
        lambda: pd.DataFrame(
            {"arm": RNG.choice(["A", "B"], N), "time_to_relapse": _days(), "relapsed": _flag()}
        ),
        "time_to_relapse",
        "relapsed",
        None,
    ),
    ("TCGA-CDR / UCSC Xena: OS.time / OS", _tcga_cdr, "OS.time", "OS", None),
    (
        "Genentech phase1b TTEdata: PFStime / PFSevent",
        lambda: pd.DataFrame(
            {
                "treatment": RNG.choice(["Control", "Experimental"], N),
                "PFStime": _days(),
                "PFSevent": _flag(),
                "SEX": RNG.choice(["F", "M"], N),
                "AGE": RNG.integers(30, 80, N),
            }
        ),
        "PFStime",
        "PFSevent",
        None,
    ),
    (
        "bonsaiforest simul_pfs: tt_pfs / ev_pfs",
        lambda: pd.DataFrame({"tt_pfs": RNG.exponential(1.5, N).round(4), "ev_pfs": _flag()}),
        "tt_pfs",
        "ev_pfs",
        None,
    ),
    (
        "Bioconductor breastCancerVDX: t.rfs / e.rfs",
        lambda: pd.DataFrame(
            {"age": RNG.integers(26, 83, N), "er": _flag(), "t.rfs": _days(), "e.rfs": _flag()}
        ),
        "t.rfs",
        "e.rfs",
        None,
    ),
    (
        "CDISC ADaM ADTTE: AVAL / CNSR (1 = censored)",
        lambda: pd.DataFrame(
            {
                "USUBJID": [f"S-{k:04d}" for k in range(N)],
                "PARAMCD": ["OS"] * N,
                "AVAL": _days(),
                "CNSR": _flag(),
                "TRT01P": RNG.choice(["A", "B"], N),
            }
        ),
        "AVAL",
        "CNSR",
        "0",
    ),
    (
        "mstate EBMT: srv / srvstat (rel / relstat beside it)",
        lambda: pd.DataFrame(
            {
                "patid": np.arange(N),
                "srv": _days(),
                "srvstat": _flag(),
                "rel": _days(),
                "relstat": _flag(),
                "age": RNG.integers(20, 60, N),
            }
        ),
        "srv",
        "srvstat",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_command_line_uses_the_pair(case: tuple[str, Any, str, str, Any]) -> None:
    _, make, time, event, value = case
    found = command_line_roles(make())
    assert (found.time, found.event, found.event_value) == (time, event, value)
    assert found.how in ("recognised",) or str(found.how).startswith("likely, used: ")
    assert any(f"'{time}'" in line and f"'{event}'" in line for line in found.lines)


def test_the_three_pairs_of_the_issue_are_recognised_outright_now() -> None:
    for make, pair in (
        (CASES[0][1], ("pfs", "progressed")),
        (CASES[1][1], ("time_to_relapse", "relapsed")),
        (_tcga_cdr, ("OS.time", "OS")),
    ):
        r = recognise_survival_roles(make())
        assert (r.time, r.event) == pair and not r.must_ask


def test_a_likely_pair_is_used_with_its_coding_and_said_why_in_one_line() -> None:
    """SAS's vagcan: ``censored`` (1 = censored): the likely coding (0 = the event) is used and
    the line says what was taken and why it is not certain; the wizard still asks."""
    frame = pd.DataFrame({"days": RNG.integers(140, 345, N), "censored": _flag()})
    found = command_line_roles(frame)
    assert (found.time, found.event, found.event_value) == ("days", "censored", "0")
    assert found.how is not None and found.how.startswith("likely, used: ")
    assert "censoring indicator" in found.how
    (line,) = found.lines
    assert line.startswith("likely survival columns, used: time 'days', event 'censored'")
    assert "0 taken as the event" in line and "--event COL=VALUE" in line
    assert recognise_survival_roles(frame).must_ask  # the desktop's one question is unchanged


def test_a_boolean_event_value_is_written_as_the_file_writes_it() -> None:
    frame = pd.DataFrame({"days": _days(), "is_censored": _flag().astype(bool)})
    found = command_line_roles(frame)
    assert found.event_value == "false" and "False" not in found.lines[-1]


def test_an_event_that_is_a_blind_guess_among_unnamed_flags_is_not_used() -> None:
    """ECOG e1684 as smcure writes it: TRT, FAILCENS and SEX are all 0/1 and none is named like
    an event; a model of the time to 'TRT' is not compared as if it were the user's."""
    frame = pd.DataFrame(
        {
            "TRT": _flag(),
            "FAILTIME": RNG.uniform(0.1, 9, N).round(3),
            "FAILCENS": _flag(),
            "SEX": _flag(),
        }
    )
    found = command_line_roles(frame)
    assert (found.time, found.event, found.how) == (None, None, None)
    assert "no survival model is compared" in found.lines[-1]
    assert "--time FAILTIME --event COL" in found.lines[-1]


def test_recognise_roles_sets_the_options_and_returns_how_for_the_record(tmp_path: Path) -> None:
    from engine.cli import build_parser
    from engine.pipeline.console import recognise_roles

    path = tmp_path / "vagcan.csv"
    pd.DataFrame({"days": RNG.integers(140, 345, N), "censored": _flag()}).to_csv(path, index=False)
    ns = build_parser().parse_args(["run", str(path)])
    found = recognise_roles(ns)
    assert (ns.time, ns.event) == ("days", "censored=0")
    assert found["roles_how"].startswith("likely, used: ")


def test_audit_json_roles_block_says_how_the_pair_was_chosen() -> None:
    from engine.pipeline.config import RunConfig
    from engine.pipeline.record import _roles

    likely = RunConfig(
        input="t.csv",
        time="days",
        event="censored",
        event_value="0",
        roles_how="likely, used: 'censored' looks like a censoring indicator",
    )
    assert _roles(likely) == {
        "time": "days",
        "event": "censored",
        "event_value": "0",
        "how": "likely, used: 'censored' looks like a censoring indicator",
    }
    assert _roles(RunConfig(input="t.csv", time="t", event="e"))["how"] == "given"
    assert _roles(RunConfig(input="t.csv")) is None


def test_a_run_with_a_likely_pair_compares_its_model_and_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end: TCGA's days_to_last_follow_up is not named like a time; the run uses it with
    vital_status, says so on the console and in audit.json, and the survival model is fitted."""
    from engine.cli import main

    rng = np.random.default_rng(7)
    n = 300
    age = rng.integers(30, 85, n)
    t_event = rng.exponential(2000 * np.exp(-0.02 * (age - 60)))
    follow = rng.uniform(300, 4000, n)
    src = tmp_path / "gdc.csv"
    pd.DataFrame(
        {
            "days_to_last_follow_up": np.minimum(t_event, follow).round(),
            "age_at_index": age,
            "gender": rng.choice(["female", "male"], n),
            "vital_status": np.where(t_event < follow, "Dead", "Alive"),
        }
    ).to_csv(src, index=False)
    out = tmp_path / "out"
    fast = ["--w-grid", "0,0.5", "--repeats", "2", "--budget", "fast", "--quiet", "--no-report"]
    assert main(["run", str(src), "--out", str(out), "--seed", "3", "--allow-risky", *fast]) == 0
    printed = capsys.readouterr().out
    assert "likely survival columns, used: time 'days_to_last_follow_up'" in printed
    audit = json.loads((out / "audit.json").read_text())
    roles = audit["roles"]
    assert (roles["time"], roles["event"]) == ("days_to_last_follow_up", "vital_status")
    assert roles["how"].startswith("likely, used: ")
    assert audit["settings"]["time"] == "days_to_last_follow_up"  # the old keys are unchanged
    assert audit["fidelity"]["km"]["logrank_p_descriptive"] is not None
