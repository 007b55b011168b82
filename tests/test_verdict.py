"""The fidelity verdict (issue 13 item 7): flags per coefficient and per column, one line shown
the same on the report's first page, the wizard's Fidelity page and the one-click summary."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from engine.stats.compare import CoefComparison
from engine.stats.shifts import ColumnFlag, column_shifts
from engine.stats.verdict import coefficient_flag, fidelity_verdict


def _coef(name: str, z_gap: float, overlap: float) -> CoefComparison:
    """A hand-built comparison row: real estimate 0 with SE 1, synthetic at ``z_gap``."""
    return CoefComparison(
        name,
        0.0,
        1.0,
        -1.96,
        1.96,
        0.9,
        z_gap,
        1.0,
        z_gap - 1.96,
        z_gap + 1.96,
        0.5,
        z_gap,
        overlap,
        True,
        True,
    )


def test_z_gap_above_two_or_overlap_below_half_is_flagged_and_named() -> None:
    verdict = fidelity_verdict(
        [_coef("age", 2.5, 0.6), _coef("sbp", 1.5, 0.7), _coef("hdl", 0.3, 0.4)],
        [ColumnFlag("chol", "KS", 0.12, 0.05, True), ColumnFlag("bmi", "KS", 0.03, 0.05, False)],
    )
    flags = {c.name: c.flagged for c in verdict.coefficients}
    assert flags == {"age": True, "sbp": False, "hdl": True}
    assert not verdict.same_conclusions and verdict.headline == "Differences to check"
    assert verdict.line == (
        "Differences to check: the effect of age (2.5 standard errors apart); the effect of hdl "
        "(confidence intervals overlap 40 %); the distribution of chol (differs more than two "
        "halves of the real table do)."
    )
    record = verdict.to_dict()
    assert record["flagged_coefficients"] == ["age", "hdl"]
    assert record["flagged_columns"] == ["chol"]
    assert record["rules"]["z_gap_above"] == 2.0 and record["rules"]["ci_overlap_below"] == 0.5


def test_boundaries_and_nothing_flagged_reads_same_conclusions() -> None:
    assert not coefficient_flag("x", 2.0, 0.5).flagged  # strictly above 2, strictly below 0.5
    assert coefficient_flag("x", -2.01, 0.9).flagged  # a gap either way
    assert not coefficient_flag("x", None, None).flagged  # nothing to judge, nothing flagged
    verdict = fidelity_verdict([_coef("age", 1.5, 0.8)], [ColumnFlag("c", "TV", 0.01, 0.02, False)])
    assert verdict.same_conclusions and verdict.line.startswith("Same conclusions: every effect")


def test_withheld_term_is_named_without_its_numbers() -> None:
    verdict = fidelity_verdict([_coef("site=C", 3.0, 0.2)], (), withheld=("site=C",))
    # the reason is said without the numbers (issue 44: "the effect of av3;" gave none)
    assert verdict.line == (
        "Differences to check: the effect of site=C (a group of fewer than 10 people, its "
        "numbers withheld: it differs between the tables)."
    )
    assert verdict.to_dict()["coefficients"][0] == {
        "name": "site=C",
        "z_gap": None,
        "ci_overlap": None,
        "flagged": True,
        "reasons": [],
    }


def test_column_above_the_real_halves_level_is_flagged() -> None:
    rng = np.random.default_rng(7)
    n = 2000
    real = pd.DataFrame(
        {"x": rng.normal(size=n), "y": rng.normal(size=n), "g": rng.choice(["a", "b", "c"], n)}
    )
    synth = pd.DataFrame(
        {
            "x": rng.normal(size=n),  # same distribution
            "y": rng.normal(0.3, 1.0, size=n),  # shifted by 0.3 SD: KS about 0.12
            "g": rng.choice(["a", "b", "c"], n, p=[0.6, 0.2, 0.2]),  # TV about 0.27
        }
    )
    flags = {c.column: c for c in column_shifts(real, synth)}
    assert flags["x"].measure == "KS" and flags["g"].measure == "TV"
    assert not flags["x"].flagged and flags["y"].flagged and flags["g"].flagged
    # the reference is the sampling level for n = 2000 vs 2000: 1.36 * sqrt(2 / n) ~ 0.043
    assert 0.025 < flags["x"].reference < 0.07
    assert flags["y"].distance > 0.08 and flags["g"].distance > 0.2
    verdict = fidelity_verdict((), list(flags.values()), model_compared=False)
    assert verdict.line == (
        "Differences to check: the distributions of y and g (each differs more than two halves "
        "of the real table do); no outcome model was compared."
    )
    assert coefficient_flag("z", 0.0, 0.497).reasons == ("confidence intervals overlap 49 %",)


def test_fidelity_report_carries_the_verdict_into_audit_json() -> None:
    from engine.stats.models import ModelSpec, fidelity_report

    rng = np.random.default_rng(0)
    n = 800
    real = pd.DataFrame({"x": rng.normal(size=n)})
    real["y"] = 2.0 * real["x"] + rng.normal(size=n)
    far = real.assign(y=0.5 * real["x"] + rng.normal(size=n))  # slope 0.5 instead of 2
    spec = ModelSpec("ols", outcome="y", covariates=("x",))
    same = fidelity_report(real, real.sample(frac=1, random_state=1), spec)
    differ = fidelity_report(real, far, spec)
    assert same.verdict is not None and same.verdict.same_conclusions
    assert differ.verdict is not None and "the effect of x" in differ.verdict.line
    block = differ.to_dict()["verdict"]
    assert block["flagged_coefficients"] == ["x"] and block["same_conclusions"] is False
    assert abs(block["coefficients"][0]["z_gap"]) > 20


def test_one_click_summary_shows_the_verdict_line() -> None:
    pytest.importorskip("PySide6")
    from desktop.oneclick import fidelity_text

    verdict = fidelity_verdict([_coef("age", 3.28, 0.14)], ())
    result = SimpleNamespace(
        fidelity=SimpleNamespace(verdict=verdict), config=SimpleNamespace(analysis=None)
    )
    assert fidelity_text(result) == (
        "Differences to check: the effect of age (3.3 standard errors apart; confidence "
        "intervals overlap 14 %). Compared: the survival model and each column's distribution."
    )
    no_model = fidelity_verdict(
        (), [ColumnFlag("c", "KS", 0.01, 0.05, False)], model_compared=False
    )
    result = SimpleNamespace(fidelity=SimpleNamespace(verdict=no_model), config=None)
    text = fidelity_text(result)
    assert text.startswith("Distributions match") and "same conclusions" not in text.lower()
    assert text.endswith("Compared: each column's distribution and the correlations.")
    assert "Not measured" in fidelity_text(SimpleNamespace(fidelity=None))


def test_wizard_fidelity_page_shows_the_reports_numbers(qtbot, tmp_path) -> None:
    """Issue 14.7: one computation rendered twice. The largest Kaplan-Meier gap and the verdict
    line read off the Fidelity page equal those printed in the PDF."""
    import re

    from pypdf import PdfReader

    from desktop.pages.fidelity_page import FidelityPage
    from engine.report.build import build_report
    from tests.test_report import fake_result

    result = fake_result()
    pdf = build_report(result, tmp_path / "r.pdf")
    text = " ".join(" ".join(p.extract_text() or "" for p in PdfReader(str(pdf)).pages).split())
    page = FidelityPage(SimpleNamespace(result=result))
    qtbot.addWidget(page)
    page.enter()
    wizard_gap = re.search(r"largest gap between the curves (\d\.\d{3})", page.notes.text())
    report_gap = re.search(
        r"Largest gap between the curves at the plotted times: (\d\.\d{3})", text
    )
    assert wizard_gap and report_gap
    assert result.fidelity.result is not None and result.fidelity.result.km is not None
    expected = f"{result.fidelity.result.km.max_abs_difference:.3f}"
    assert wizard_gap.group(1) == report_gap.group(1) == expected
    verdict = result.fidelity.verdict
    assert verdict is not None
    shown = " ".join(page.verdict.text().replace("<b>", "").split())
    assert verdict.headline in shown and verdict.line.split(":", 1)[1].split()[0] in shown
    assert " ".join(verdict.line.split()[:5]) in text
    # the regression table's "To check" column marks exactly the verdict's flagged terms
    check = page.model.columnCount() - 1
    assert page.model.horizontalHeaderItem(check).text() == "To check"
    marked = {
        page.model.item(r, 0).text().split(" (per")[0]
        for r in range(page.model.rowCount())
        if page.model.item(r, check).text().startswith("yes")
    }
    assert marked == {c.name for c in verdict.flagged_coefficients}


def test_pmse_and_s_pmse_match_a_computation_by_hand() -> None:
    """Issue 28: synthpop's pMSE and S_pMSE (logistic, main effects) against a by-hand
    computation on a small table: the propensity model is fitted by Newton's method here, the
    scores averaged as (p - c)^2, and the null expectation (k - 1)(1 - c)^2 c / N."""
    import numpy as np
    import pandas as pd

    from engine.stats.utility import propensity_utility

    real = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "g": list("aabbab")})
    synth = pd.DataFrame({"x": [2.0, 3.0, 5.0, 6.0, 7.0, 8.0], "g": list("ababbb")})
    got = propensity_utility(real, synth)
    # by hand: x standardized over the 12 stacked rows, g as one 0/1 column (b = 1), intercept
    x = np.r_[real.x, synth.x]
    X = np.column_stack([np.ones(12), (x - x.mean()) / x.std(), (np.r_[real.g, synth.g] == "b")])
    t = np.r_[np.zeros(6), np.ones(6)]
    beta = np.zeros(3)
    for _ in range(50):  # Newton-Raphson for the logistic likelihood
        p = 1 / (1 + np.exp(-X @ beta))
        beta += np.linalg.solve(X.T @ (X * (p * (1 - p))[:, None]), X.T @ (t - p))
    p = 1 / (1 + np.exp(-X @ beta))
    c = 0.5
    pmse = np.mean((p - c) ** 2)
    expected = (3 - 1) * (1 - c) ** 2 * c / 12
    assert got.parameters == 3 and abs(got.expected - expected) < 1e-12
    assert abs(got.pmse - pmse) < 1e-5 and abs(got.s_pmse - pmse / expected) < 1e-3


def test_a_table_with_no_outcome_model_gets_a_plain_words_verdict_naming_what_was_compared():
    """Issue 28: without an outcome model the verdict never says "same conclusions"; it names
    what was compared, gives S_pMSE in words, and says how to check a regression."""
    import numpy as np
    import pandas as pd

    from engine.stats.fidelity import fidelity_report

    rng = np.random.default_rng(3)
    real = pd.DataFrame({"age": rng.normal(60, 9, 600), "sex": rng.choice(["F", "M"], 600)})
    good = pd.DataFrame({"age": rng.normal(60, 9, 600), "sex": rng.choice(["F", "M"], 600)})
    res = fidelity_report(real, good, None)
    v = res.verdict
    assert v.headline == "Distributions match" and "same conclusions" not in v.line.lower()
    assert "no outcome model was compared" in v.line and "Settings page" in v.line
    assert "S_pMSE" in v.line and 0.2 < res.utility.s_pmse < 3
    d = res.to_dict()
    assert d["utility"]["method"] == "logistic" and d["verdict"]["model_compared"] is False
    bad = good.assign(age=good["age"] + 9)  # one SD off: told apart, and flagged
    worse = fidelity_report(real, bad, None)
    assert worse.utility.s_pmse > 20 and worse.verdict.headline == "Differences to check"


def test_a_log_gets_one_line_per_stage_with_its_time(capsys) -> None:
    """Issue 28 item 3: when the output is not a terminal, the progress bar writes one line
    per stage when it ends (the epochs of one model are one stage), each with its time."""
    import re

    from engine.pipeline.console import TerminalProgress

    bar = TerminalProgress(enabled=True)
    bar.tty = False
    bar(0.0, "reading the file")
    for epoch in range(1, 301):
        bar(
            0.1 + epoch / 1000,
            f"training flow: epoch {epoch}/300, training loss {8 - epoch / 100:.2f}",
        )
    for w in (0.0, 0.05, 0.1):
        bar(0.5 + w, f"audit: w = {w:g} (split 1), AUC 0.51, density AUC 0.52")
    bar(0.9, "writing files")
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 5, lines  # four stages and the total
    assert all(re.match(r"\d+:\d\d  ", line) for line in lines)
    assert lines[1].endswith(" s)") and "epoch 1/300" in lines[1]
    assert lines[-1].split()[-3:-1] == ["done", "in"] or "done in" in lines[-1]


def test_a_lost_treatment_effect_leads_the_verdict() -> None:
    """Issue 33 item 1: the trial table whose treatment HR 0.513 (0.336-0.783) became 0.742
    (0.494-1.115) in the copy: the verdict leads with that, in words, and never says "same
    conclusions" while a coefficient changes significance (on main it flagged only a covariate).
    The pair of fits is made by hand (log HRs and CIs), within 2 SEs of each other."""
    from engine.stats.compare import CoefComparison

    def row(name, real, synth, real_p, synth_p, z):
        (r, rl, rh), (s, sl, sh) = (np.log(real), np.log(synth))
        return CoefComparison(
            name,
            r,
            0.216,
            rl,
            rh,
            real_p,
            s,
            0.207,
            sl,
            sh,
            synth_p,
            z,
            0.6,
            sign_agrees=True,
            significance_agrees=(real_p < 0.05) == (synth_p < 0.05),
        )

    treat = row("treat", (0.513, 0.336, 0.783), (0.742, 0.494, 1.116), 0.002, 0.15, 1.7)
    age = row("age", (1.02, 1.01, 1.03), (1.02, 1.01, 1.03), 0.001, 0.001, 0.1)
    v = fidelity_verdict([treat, age], (), exposure="treat", analysis="cox")
    assert v.line.startswith(
        "In the real data treat lowers the hazard (HR 0.51, 95 % CI 0.34-0.78); in the "
        "synthetic copy the effect is weaker and not significant (HR 0.74, 95 % CI 0.49-1.12)."
    )
    assert v.headline == "Differences to check" and not v.same_conclusions
    assert [c.name for c in v.flagged_coefficients] == ["treat"]
    assert "significance changes" in v.flagged_coefficients[0].reasons
    assert v.to_dict()["lead"].startswith("In the real data treat")
    # the same fits with the significance kept: same conclusions, no lead
    kept = row("treat", (0.513, 0.336, 0.783), (0.60, 0.40, 0.90), 0.002, 0.01, 1.0)
    v2 = fidelity_verdict([kept, age], (), exposure="treat", analysis="cox")
    assert v2.same_conclusions and v2.lead is None and v2.headline == "Same conclusions"
