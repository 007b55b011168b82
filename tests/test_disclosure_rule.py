"""The disclosure rule joined to the choice of w (issue 29): a planted leak is refused in plain
words, a leak above some w lowers w until the released file discloses no more than a fresh real
sample, and an ordinary run records the measures in ``audit.json`` and ``results.json``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.pipeline import RunConfig, prepare, synthesize, write_outputs
from engine.pipeline.results import Verdict
from tests.test_disclosure_risk import _fine_cohort


def _cohort(tmp_path: Path, n: int = 600, seed: int = 0) -> Path:
    frame = _fine_cohort(n, seed)
    path = tmp_path / "cohort.csv"
    frame.to_csv(path, index=False)
    return path


def _config(path: Path, **extra: object) -> RunConfig:
    settings: dict = {"w_grid": (0.0, 0.25, 0.5), "repeats": 2, "seed": 3, **extra}
    return RunConfig(input=path, **settings)


def _copying(monkeypatch: pytest.MonkeyPatch, above: float) -> None:
    """Plant a leak: above w = ``above`` every released row is its member's own row, and the
    exact-copy guard (which would redraw copies of unique rows at w = 0) is switched off, so
    that the disclosure rule alone stands between the leak and the file."""
    from engine.disclosure import CopyCheck
    from engine.flows import generate

    def no_guard(synth_model, redraw, decode, real):  # type: ignore[no-untyped-def]
        return synth_model, CopyCheck(0, 0, 0, 0, 0, 0)

    monkeypatch.setattr("engine.pipeline.release_step.redraw_unique_copies", no_guard)
    honest = generate.latent_noise_injection

    def leaky(flow, X, w, rng):  # type: ignore[no-untyped-def]
        if float(np.max(w)) > above:
            return np.array(X, dtype=float, copy=True)
        return honest(flow, X, w, rng)

    monkeypatch.setattr("engine.pipeline.release_step.latent_noise_injection", leaky)


def test_a_planted_leak_is_refused_in_plain_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _copying(monkeypatch, above=-1.0)  # every w, w = 0 included, copies the members
    result = synthesize(prepare(_config(_cohort(tmp_path))))
    assert result.verdict == Verdict.REFUSED and result.synthetic is None
    reason = result.refusal.reason
    assert reason.startswith("knowing age, sex and ethnicity, the synthetic file at w = 0.00")
    assert "Coarsen a key" in reason and "--" not in reason  # plain words, no flag
    assert "--keys" in result.refusal.hint  # the command line's hint names the option
    block = result.audit_json["disclosure_risk"]
    assert result.audit_json["release"]["refused_by"] == "the disclosure rule"
    assert block["holds"] is False and "event" in block["failing"]
    assert any("at w = 0.00 the rule failed" in note for note in block["notes"])
    # every audited w was tried, from the audit's choice down to 0
    assert sum("the rule failed" in note for note in block["notes"]) >= 2
    # the report says so on its disclosure page and where the deciding attack is named
    from pypdf import PdfReader

    from engine.report.build import build_report

    pdf = build_report(result, tmp_path / "report.pdf")
    flat = " ".join(" ".join(p.extract_text() for p in PdfReader(pdf).pages).split())
    assert "It was not met even at w = 0: nothing was exported." in flat
    assert "Nothing was released because of the disclosure rule (section 2b)" in flat
    assert "--" not in flat


def test_a_leak_above_some_w_lowers_w_until_the_rule_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _copying(monkeypatch, above=0.2)  # above 0.2 the members are copied; below, honest LNI
    result = synthesize(prepare(_config(_cohort(tmp_path))))
    chosen = result.audit.selected_w
    assert chosen is not None and chosen > 0.2, "the membership audit allowed a w above 0.2"
    honest = max(p.w for p in result.audit.curve if p.w <= 0.2)  # the largest audited w <= 0.2
    assert result.verdict == Verdict.RELEASED and result.release.w == pytest.approx(honest)
    assert result.release.chosen_by.startswith(
        f"the disclosure rule: at the audit's w = {chosen:.2f}"
    )
    block = result.audit_json["disclosure_risk"]
    assert block["holds"] is True  # what is recorded is the file released at the lower w
    assert block["notes"][0].startswith(f"at w = {chosen:.2f} the rule failed: re-identification")
    assert block["notes"][-1] == f"at w = {honest:.2f} the rule held"
    # the report says which rule decided: on page 1 and where the deciding attack is named
    from pypdf import PdfReader

    from engine.report.build import build_report

    pages = PdfReader(build_report(result, tmp_path / "report.pdf")).pages
    first = " ".join(pages[0].extract_text().split())
    assert "lowered by the disclosure rule, section 2b" in first
    assert "Knowing age, sex, ethnicity, the synthetic file discloses no more than a fresh" in first
    flat = " ".join(" ".join(p.extract_text() for p in pages).split())
    assert (
        f"The released w was decided by the disclosure rule: at the audit's w = {chosen:.2f}"
        in flat
    )
    assert result.config.forced_w is None  # the user forced nothing


def test_an_ordinary_run_records_the_measures(tmp_path: Path) -> None:
    path = _cohort(tmp_path)
    config = _config(path, out=tmp_path / "out")
    result = write_outputs(synthesize(prepare(config)), tmp_path / "out")
    record = json.loads((tmp_path / "out" / "audit.json").read_text())
    block = record["disclosure_risk"]
    assert block["keys"] == ["age", "sex", "ethnicity"] and block["holds"] is True
    assert [t["target"] for t in block["targets"]] == ["bmi", "event"]  # no survival roles here
    # bmi is grouped at its quintiles; the real minimum and maximum are never shown
    bmi = pd.read_csv(path)["bmi"]
    groups = block["key_groups"]["bmi"]
    assert groups.startswith("5 groups: below ") and groups.endswith(" and above")
    assert f"{bmi.min():g}" not in groups and f"{bmi.max():g}" not in groups
    event = block["targets"][1]
    # the released file discloses about what a fresh sample does (measured: 16 % vs 16 %)
    assert (
        abs(event["disco_release_pct"] - event["disco_fresh_sample_pct"])
        < event["margin_pct_points"]
    )
    assert result.release.disclosure is not None and result.record_order is None
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    text = json.dumps(results)
    assert '"disclosure_no_more_than_fresh_sample": true' in text
    # the report's page, in words a checker reads, with no command-line flag
    from pypdf import PdfReader

    pages = [p.extract_text() for p in PdfReader(tmp_path / "out" / "report.pdf").pages]
    page = next(p for p in pages if "2b. Identity and attribute disclosure" in p)
    flat = " ".join(page.split())
    shown = event["disco_release_pct"]
    assert (
        "event: guessing a patient's hidden value from the synthetic records that match their "
        f"age, sex and ethnicity (where all of them agree) is right for {shown:.0f} % of real "
        "patients; the same guess from a fresh sample of real patients instead (the baseline)"
    ) in flat.replace("&#x27;", "'")
    assert "It holds for the released file" in flat and "--" not in page


def test_keys_that_are_not_columns_stop_before_training(tmp_path: Path) -> None:
    from engine.cli import main

    path = _cohort(tmp_path)
    code = main(
        ["run", str(path), "--out", str(tmp_path / "o"), "--keys", "age,postcode", "--quiet"]
    )
    assert code == 2


def test_the_override_exports_the_least_disclosive_file_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _copying(monkeypatch, above=-1.0)
    result = synthesize(prepare(_config(_cohort(tmp_path), allow_risky=True)))
    assert result.verdict == Verdict.RELEASED_WITH_OVERRIDE and result.release.w == 0.0
    assert result.release.chosen_by == (
        "override: the disclosure rule was not met at any w; released at w = 0.00"
    )
    assert result.audit_json["disclosure_risk"]["holds"] is False
