"""The PDF for an output checker who has not read the papers (issue 33, item 6).

Each test renders the real report from the fake run of :mod:`tests.test_report` (or a variant of
it) and reads the PDF's text back, so what is asserted is what the checker reads:

* no theorem, figure or equation number of a paper outside the method section;
* no scientific notation ("1.01e+03", "6.22 × 10⁻⁶"): a large ε reads "1,010";
* a TPR column that would be "n < 10" on every row is replaced by one sentence;
* the number of candidate w is the number the audit tested (grid plus refinement);
* "±" is one standard error everywhere (page 1, the attack table, the figure);
* a group withheld because it has fewer than 10 events says "events", not "people".
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from pypdf import PdfReader

from engine.report.build import build_report
from tests.test_report import fake_result

METHOD_HEADING = "4. Method, settings and software"


def _pages(path: Path) -> list[str]:
    return [page.extract_text() or "" for page in PdfReader(str(path)).pages]


def _text(path: Path) -> str:
    return "\n".join(_pages(path))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_report(fake_result(), tmp_path_factory.mktemp("words") / "report.pdf")


def test_no_theorem_figure_or_equation_number_outside_the_method_section(report: Path) -> None:
    text = _text(report)
    before, method = text.split(METHOD_HEADING, 1)
    cited = re.findall(r"\b(?:Theorem|Figure|Fig\.|eq\.|eqs\.|Lemma)\s*\d+", before)
    assert cited == [], cited
    # the method section still names where the formal bound comes from
    assert "Theorem 2" in method


def test_a_large_epsilon_and_a_tiny_delta_print_without_scientific_notation(
    tmp_path: Path,
) -> None:
    r = fake_result()
    eps = replace(r.release.epsilon, value=1010.4, delta=6.22e-6)
    path = build_report(replace(r, release=replace(r.release, epsilon=eps)), tmp_path / "r.pdf")
    text = _text(path)
    assert re.findall(r"\d[eE][+-]\d", text) == []  # "1.01e+03" (a SHA-256 has no sign)
    assert "× 10" not in text and "10⁻" not in text
    page1 = _pages(path)[0]
    assert "ε = 1,010" in page1
    assert "6.22 in a million" in page1


def test_tpr_columns_that_would_be_all_n_under_10_become_one_sentence(report: Path) -> None:
    # 300 rows audited: 60 non-members, so 1 % and 0.1 % of them are under one person
    text = _text(report)
    assert "n < 10" not in text
    assert "TPR at 1 % FPR" not in text
    flat = " ".join(text.split())
    assert (
        "wrongly accuses only 1 % or 0.1 % of non-members is not shown: the audit held 60 "
        "non-members" in flat
    )


def test_a_tpr_column_with_numbers_is_kept() -> None:
    from engine.report.layout import styles
    from engine.report.sections.privacy import _curve_table

    r = fake_result()
    table, *captions = _curve_table(r, 2000, 500.0, styles())  # 1 % of 2000 = 20 non-members
    header = [str(getattr(c, "text", c)) for c in table._cellvalues[0]]
    assert any("TPR at 1 % FPR" in h for h in header)
    assert not any("0.1 %" in h for h in header)  # 2 non-members: left out, said in words
    said = " ".join(str(getattr(c, "text", "")) for c in captions)
    assert "0.1 % of non-members is not shown" in said


def test_the_candidate_w_count_is_the_number_tested(tmp_path: Path) -> None:
    r = fake_result()
    assert r.audit is not None
    extra = [replace(r.audit.curve[14], w=w, refined=True) for w in (0.7125, 0.725, 0.7375, 0.7625)]
    audit = replace(r.audit, curve=tuple(r.audit.curve) + tuple(extra))
    path = build_report(replace(r, audit=audit), tmp_path / "r.pdf")
    flat = " ".join(_text(path).split())
    assert "at each of 24 candidate w" in flat
    assert "24 tested: 0, 0.05," in flat
    assert "(20 on the grid, 4 added near the limit)" in flat
    rows = re.findall(r"^0\.\d\d$", _text(path).split("Attack success at every tested w")[1], re.M)
    assert len(rows) >= 24


def test_plus_minus_is_one_standard_error_on_page_1_and_in_the_table(report: Path) -> None:
    text = _text(report)
    flat = " ".join(text.split())
    assert "± SD" not in flat and "mean ± SD" not in flat
    assert "distance AUC (fitted ± SE)" in flat
    assert "(fitted ± SE, upper bound)" in " ".join(_pages(report)[0].split())
    # the released w's row of the attack table prints the very numbers of page 1
    page1 = " ".join(_pages(report)[0].split())
    assert "0.521 ± 0.003" in page1
    table = flat.split("Attack success at every tested w")[1]
    assert "0.70 0.521 ± 0.003 0.517 ± 0.004" in table


def test_a_group_withheld_for_its_events_says_events(tmp_path: Path) -> None:
    """35 people in arm b with 3 events: withheld by the events rule, and worded so."""
    from engine.pipeline.results import Fidelity
    from engine.stats.models import ModelSpec, fidelity_report

    r = fake_result()
    real = r.prepared.real.copy()
    arm = np.array(["a"] * len(real), dtype=object)
    events = np.flatnonzero(real["cvd"].to_numpy() == 1)[:3]
    quiet = np.flatnonzero(real["cvd"].to_numpy() == 0)[:32]
    arm[np.concatenate([events, quiet])] = "b"
    real["arm"] = arm
    assert (real["arm"] == "b").sum() == 35 and real.loc[real["arm"] == "b", "cvd"].sum() == 3
    synth = real.sample(frac=1.0, random_state=1).reset_index(drop=True)
    spec = ModelSpec("cox", time="time_cvd_years", event="cvd", covariates=("age", "arm"))
    fidelity = Fidelity(fidelity_report(real, synth, spec, list(real.columns)))
    assert fidelity.result is not None and fidelity.result.comparison is not None
    assert "arm=b" in fidelity.result.comparison.real.withheld
    prepared = type(r.prepared)(**{**vars(r.prepared), "real": real})
    path = build_report(replace(r, prepared=prepared, fidelity=fidelity), tmp_path / "r.pdf")
    flat = " ".join(_text(path).split())
    assert "arm=b not shown: fewer than 10 events in this group" in flat
    assert "fewer than 10 people in this group" not in flat


def test_a_refusal_confirmed_on_more_splits_says_so(tmp_path: Path) -> None:
    """When the copula's w = 0 point was measured again on more rounds, the method paragraph
    says over how many models; when it was not, nothing is added."""
    r = fake_result()
    more = replace(r, audit=replace(r.audit, splits=5, smallest_w_splits=15))
    flat = " ".join(_text(build_report(more, tmp_path / "more.pdf")).split())
    assert "measured again over 15 models (a copula fitted for each)" in flat
    assert "on the first round" in flat
    plain = " ".join(_text(build_report(r, tmp_path / "plain.pdf")).split())
    assert "measured again" not in plain
