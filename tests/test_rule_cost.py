"""Issue 44: what the range rule costs, with the real table top-coded the same way as a second
reference: the numbers (checked against lifelines on a hand-clipped table), audit.json's
fidelity block, the Fidelity page's words and the report's."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from engine.disclosure import safe_bounds
from engine.stats.models import ModelSpec, fidelity_report
from engine.stats.topcoded import rule_cost

N = 1491
SPEC = ModelSpec("cox", time="time", event="event", covariates=("age", "nodes"))


def nodes_table(n: int = N, seed: int = 4) -> pd.DataFrame:
    """Positive nodes with a long tail (real maximum far above the 10th largest) and a Cox
    outcome whose log hazard rises with them."""
    rng = np.random.default_rng(seed)
    age = rng.normal(56.0, 11.0, n).round(0)
    nodes = np.floor(rng.lognormal(0.4, 1.2, n)).astype(int)
    t = rng.exponential(1.0 / (0.02 * np.exp(0.06 * nodes + 0.01 * (age - 56.0))))
    censor = rng.uniform(10.0, 120.0, n)
    return pd.DataFrame(
        {
            "age": age,
            "nodes": nodes,
            "time": np.minimum(t, censor).round(1) + 0.1,
            "event": (t <= censor).astype(int),
        }
    )


def _bounds(real: pd.DataFrame) -> dict[str, tuple[float | None, float | None]]:
    return {c: safe_bounds(real[c]) for c in ("age", "nodes", "time")}


def _cost(real: pd.DataFrame):
    bounds = _bounds(real)
    synth = real.assign(nodes=real["nodes"].clip(*bounds["nodes"]))  # a stand-in release
    report = fidelity_report(real, synth, SPEC, list(real.columns))
    return rule_cost(real, bounds, report, SPEC), bounds, report


def test_top_coded_reference_matches_a_hand_clipped_cox_fit() -> None:
    from lifelines import CoxPHFitter

    real = nodes_table()
    cost, bounds, report = _cost(real)
    lo, hi = bounds["nodes"]
    v = np.sort(real["nodes"].to_numpy())
    assert v[-1] >= 30 and hi == v[-10] and hi < v[-1]  # the tail reaches far past the bound
    nodes = next(c for c in cost.columns if c.column == "nodes")
    assert nodes.above == int((real["nodes"] > hi).sum()) and 1 <= nodes.above <= 9
    assert nodes.below == 0  # 0 nodes is the 10th smallest and the minimum: nothing below
    # the limited real fit, done here by hand with lifelines on the clipped table
    clipped = real.copy()
    for c, (a, b) in bounds.items():
        clipped[c] = clipped[c].clip(a, b)
    hand = CoxPHFitter().fit(clipped, "time", "event").params_
    terms = {t.name: t for t in cost.terms}
    assert terms["nodes"].limited == pytest.approx(hand["nodes"], abs=1e-6)
    assert terms["age"].limited == pytest.approx(hand["age"], abs=1e-6)
    real_fit = report.comparison.real.coefficient("nodes")
    assert terms["nodes"].real == pytest.approx(real_fit.estimate)
    # the rule has a price on this table: the limited slope is steeper (0.4 real SEs)
    assert (terms["nodes"].limited - terms["nodes"].real) / real_fit.se > 0.2


def test_rule_cost_words_and_audit_record() -> None:
    from engine.pipeline.results import Fidelity

    real = nodes_table()
    cost, bounds, report = _cost(real)
    terms = {t.name: t for t in cost.terms}
    line = next(x for x in cost.lines() if x.startswith("Rule cost for nodes"))
    hr_real, hr_limited = (math.exp(terms["nodes"].real), math.exp(terms["nodes"].limited))
    assert f"fewer than 10 real values lie above {bounds['nodes'][1]:g}" in line
    assert f"hazard ratio of nodes is {hr_limited:.3f} instead of {hr_real:.3f}" in line
    assert "the largest value any synthetic row may show" in line
    doc = Fidelity(report, rule_cost=cost).to_dict()
    assert set(Fidelity(report).to_dict()) | {"rule_cost"} == set(doc)  # extended, not renamed
    record = doc["rule_cost"]
    limited = {c["column"]: c for c in record["columns"]}
    assert (
        limited["nodes"]["real_above"] == "< 10" and limited["nodes"]["upper"] == bounds["nodes"][1]
    )
    coef = {c["name"]: c for c in record["model"]["coefficients"]}
    assert coef["nodes"]["topcoded_estimate"] == pytest.approx(terms["nodes"].limited)
    assert record["lines"] == cost.lines()


def test_no_limited_column_in_the_model_means_no_extra_fit() -> None:
    real = nodes_table()
    report = fidelity_report(real, real, SPEC, list(real.columns))
    cost = rule_cost(real, {"age": (None, 1000.0)}, report, SPEC)  # nobody beyond
    assert cost.columns == () and cost.terms == () and cost.lines() == []


def test_pipeline_fidelity_block_holds_the_rule_cost(tmp_path: Path) -> None:
    from engine.pipeline.compare_step import fidelity_of
    from engine.pipeline.config import RunConfig
    from engine.pipeline.prepare_step import prepare

    src = tmp_path / "nodes.csv"
    nodes_table().to_csv(src, index=False)
    prep = prepare(
        RunConfig(
            input=src, time="time", event="event", analysis="cox", covariates=("age", "nodes")
        )
    )
    fidelity = fidelity_of(prep, (prep.real,))
    record = fidelity.to_dict()["rule_cost"]
    assert {"nodes", "age", "time"} <= {c["column"] for c in record["columns"]}
    assert any(x.startswith("Rule cost for nodes") and "hazard ratio" in x for x in record["lines"])


def test_fidelity_page_shows_what_the_rule_costs(qtbot) -> None:
    pytest.importorskip("PySide6")
    from desktop.pages.fidelity_page import FidelityPage
    from engine.pipeline.results import Fidelity

    real = nodes_table()
    cost, bounds, report = _cost(real)
    page = FidelityPage(SimpleNamespace(result=None))
    qtbot.addWidget(page)
    page.render(Fidelity(report, rule_cost=cost).to_dict())
    shown = page.rule_cost.text()
    terms = {t.name: t for t in cost.terms}
    assert shown.startswith("What the range rule costs (the real table limited to the same")
    assert "10th largest real value" in page.rule_cost.toolTip()
    assert f"fewer than 10 real values lie above {bounds['nodes'][1]:g}" in shown
    assert f"instead of {math.exp(terms['nodes'].real):.3f}" in shown
    assert "--" not in shown and "RuleCost" not in shown and "{" not in shown
    page.show_nothing_released()
    assert page.rule_cost.text() == ""


def test_report_prints_what_the_rule_costs(tmp_path: Path) -> None:
    from pypdf import PdfReader

    from engine.report.build import build_report
    from tests.test_report import fake_result

    real = nodes_table()
    cost, bounds, _ = _cost(real)
    result = fake_result()
    result = dataclasses.replace(
        result, fidelity=dataclasses.replace(result.fidelity, rule_cost=cost)
    )
    pdf = build_report(result, tmp_path / "r.pdf")
    text = " ".join(" ".join(p.extract_text() or "" for p in PdfReader(str(pdf)).pages).split())
    terms = {t.name: t for t in cost.terms}
    assert "What the range rule costs" in text
    assert f"fewer than 10 real values lie above {bounds['nodes'][1]:g}" in text
    assert f"{math.exp(terms['nodes'].limited):.3f}" in text  # the limited table's column
