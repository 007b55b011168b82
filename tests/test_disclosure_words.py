"""The disclosure check in words (issue 44): which columns it covers and why the others were
left out, what the allowed margin is, and that its figure is an attack's success beside a
baseline, not a prediction accuracy; in the report's section 2b, on the Privacy page and in a
refusal."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from engine.columns.keys import keys_and_targets
from engine.columns.schema import infer_schema
from engine.disclosure.check import DisclosureResult, measure_disclosure
from engine.disclosure.words import left_out_columns

N = 400


def _table() -> pd.DataFrame:
    """14 columns: an identifier, free text, two keys, follow-up, died and 8 clinical columns."""
    rng = np.random.default_rng(3)
    out = {
        "patient_id": [f"P{k:05d}" for k in range(N)],
        "notes": [f"seen on visit {k}" for k in range(N)],
        "age": rng.integers(40, 80, N),
        "sex": rng.choice(["F", "M"], N),
        "fu_days": rng.integers(10, 1600, N),
        "died": rng.integers(0, 2, N),
    }
    for j in range(8):
        out[f"lab{j}"] = np.round(rng.normal(50, 10, N), 1)
    return pd.DataFrame(out)


@pytest.fixture(scope="module")
def found() -> DisclosureResult:
    real = _table()
    schema = infer_schema(real, time="fu_days", event="died")
    keys, targets = keys_and_targets(schema, None, None)
    leak = measure_disclosure(
        real, real.copy(), keys, targets, rng=np.random.default_rng(0), numeric=targets[1:]
    )
    return replace(leak, left_out=left_out_columns(schema.columns, keys, targets))


def test_every_column_is_either_covered_or_left_out_with_a_reason(found: DisclosureResult) -> None:
    said = found.coverage_words()
    assert said.startswith("The check assumes an attacker knows each patient's age and sex")
    covered = set(found.keys) | {t.target for t in found.targets}
    assert len(covered) == 10  # 2 keys and at most 8 targets
    named = {c for c, _ in found.left_out}
    assert covered | named == set(_table().columns) and not covered & named
    assert "patient_id (identifiers, not released)" in said
    assert "notes (free text or too many categories, not released)" in said
    assert "lab6 and lab7 (the check measures at most 8 targets: the event first" in said
    assert said.count(".") == 1  # one sentence


def test_the_figure_is_a_guess_from_matching_records_beside_a_baseline(
    found: DisclosureResult,
) -> None:
    died = found.targets[0]
    assert died.target == "died"
    said = found.guess_words(died)
    assert "gives the right" not in said
    assert said == (
        "died: guessing a patient's hidden value from the synthetic records that match their age "
        f"and sex (where all of them agree) is right for {died.disco_release:.0f} % of real "
        "patients; the same guess from a fresh sample of real patients instead (the baseline) is "
        f"right for {died.disco_fresh:.0f} % of real patients"
    )


def test_the_margin_is_explained_with_its_number(found: DisclosureResult) -> None:
    said = found.margin_words()
    margins = sorted(round(t.margin) for t in found.targets)
    assert margins[0] < margins[-1]
    assert said.startswith(
        f"Allowed margin: {margins[0]} to {margins[-1]} percentage points by column: the guess "
        "from the synthetic file may be right for at most that much larger a share of the real "
        "patients than the same guess from the fresh sample."
    )
    assert "5 times the spread seen between fresh samples" in said and "at least 3 points" in said
    assert "--" not in said and "margin_cap" not in said


def test_a_margin_the_user_lowered_is_said_to_be_theirs() -> None:
    real = _table()
    rng = np.random.default_rng(0)
    capped = measure_disclosure(real, real.copy(), ("age", "sex"), ("died",), rng=rng, margin_cap=1)
    assert capped.margin_words().startswith("Allowed margin: 1 percentage point: ")
    assert "You set this limit yourself" in capped.margin_words()


def test_the_report_section_says_the_columns_the_margin_and_the_guess(
    found: DisclosureResult,
) -> None:
    from engine.report.layout import register_fonts, styles
    from engine.report.sections.disclosure_risk import disclosure_section

    register_fonts()
    release = SimpleNamespace(disclosure=found, chosen_by="the audit", w=0.3, reason="")
    result: object = SimpleNamespace(release=release, released=release)
    flat = " ".join(
        " ".join(str(getattr(p, "text", "")).split())
        for p in disclosure_section(result, styles(), 400.0)  # type: ignore[arg-type]
    )
    assert "left out: patient_id (identifiers, not released)" in flat
    assert "Allowed margin: " in flat and "percentage points by column" in flat
    assert re.search(r"guessing a patient(&#x27;|')s hidden value from the synthetic", flat)
    assert "gives the right" not in flat
    assert not re.search(r"--[a-z]", flat)


def test_privacy_page_says_the_same(found: DisclosureResult) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    pytest.importorskip("PySide6")
    from desktop.pages.privacy_page import disclosure_lines

    release = SimpleNamespace(disclosure=found, chosen_by="the audit", w=0.3)
    page = " ".join(disclosure_lines(SimpleNamespace(release=release, released=release)))
    assert "left out: patient_id (identifiers, not released)" in page
    assert "(the baseline) is right for" in page and "Allowed margin" in page
    assert "gives the right" not in page and "5 more in the report" in page


def test_a_refusal_says_guess_and_baseline() -> None:
    from engine.pipeline.disclosure_step import refusal_words

    real = _table()
    leak = measure_disclosure(
        real, real.copy(), ("age", "sex", "lab0"), ("died",), rng=np.random.default_rng(0)
    )
    assert not leak.holds
    words = refusal_words(leak, 0.0)
    assert "lets an attacker guess died right for" in words
    assert "fresh sample of real patients in the file's place (the baseline" in words
    assert "gives the right" not in words
