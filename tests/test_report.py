"""Tests for the PDF report (engine.report.build*): content, output rules, determinism, rendering.

No flow is trained: a fake run result (a real ``RunResult`` whose config, input table and schema
are namespaces) carries a small real table, a noisy shuffled copy as the synthetic table, and
audit/release numbers of a realistic size. The audit curve, release metrics, ε and fidelity are
the engine's own typed results.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from pypdf import PdfReader

from engine.disclosure import CopyCheck
from engine.pipeline.results import (
    Fidelity,
    ModelSummary,
    Refusal,
    Release,
    RunResult,
    Verdict,
)
from engine.privacy.audit import AuditResult, CurvePoint
from engine.report.build import build_report, render_report
from engine.report.data import coarse_km_grid, level_shares, safe_count

SEED = 48213957
SHA = "9f2c4e7a1b3d5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e"


def _real(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.normal(55, 6, n).round()
    sbp = (120 + 0.5 * (age - 55) + rng.normal(0, 18, n)).round()
    hazard = np.exp(0.02 * (sbp - 120) + 0.04 * (age - 55)) / 15
    event_time = rng.exponential(1 / hazard)
    censor = rng.uniform(5, 30, n)
    return pd.DataFrame(
        {
            "time_cvd_years": np.minimum(event_time, censor).round(2),
            "cvd": (event_time <= censor).astype(int),
            "sex": rng.choice(["F", "M"], n),
            "smoker": rng.choice(["no", "yes", "former"], n, p=[0.6, 0.37, 0.03]),
            "age": age,
            "totchol": rng.normal(215, 40, n).round(),
            "hdl": rng.normal(55, 15, n).round(),
            "sbp": sbp,
        }
    )


def _synthetic(real: pd.DataFrame, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    out = real.copy()
    for c in ("age", "totchol", "hdl", "sbp"):
        out[c] = (out[c] + rng.normal(0, 0.4 * real[c].std(), len(out))).round()
    out["time_cvd_years"] = (
        (out["time_cvd_years"] * rng.uniform(0.8, 1.2, len(out))).clip(0.01, 30).round(2)
    )
    return out.iloc[rng.permutation(len(out))].reset_index(drop=True)


def _column(name: str, kind: str, action: str, reason: str) -> SimpleNamespace:
    return SimpleNamespace(name=name, kind=kind, action=action, reason=reason)


def _schema() -> SimpleNamespace:
    cols = (
        _column("participant_id", "identifier", "drop", "unique per row with an ID-like name"),
        _column(
            "time_cvd_years", "time", "synthesize", "follow-up time (chosen as the time column)"
        ),
        _column("cvd", "event", "synthesize", "event indicator ('1' means the event happened)"),
        _column("sex", "binary", "synthesize", "two distinct values"),
        _column("smoker", "categorical", "synthesize", "text with 3 levels"),
        _column("age", "integer", "synthesize", "whole numbers"),
        _column("totchol", "integer", "synthesize", "whole numbers"),
        _column("hdl", "integer", "synthesize", "whole numbers"),
        _column("sbp", "integer", "synthesize", "whole numbers"),
        _column("visit_date", "date", "drop", "text that reads as dates"),
    )
    return SimpleNamespace(columns=cols, time="time_cvd_years", event="cvd")


def _curve() -> list[CurvePoint]:
    fpr = np.round(np.linspace(0, 1, 41), 4)
    points = []
    for w in [round(0.05 * i, 2) for i in range(20)]:
        lift = 0.5 + 0.45 / (1 + np.exp(-(w - 0.82) * 25))
        auc = round(float(lift), 4)
        tpr = np.clip(fpr ** (1 / (1 + 4 * (auc - 0.5))), 0, 1)
        points.append(
            CurvePoint(
                w=w,
                auc=auc,
                auc_sd=0.006,
                auc_se=0.003,
                tpr_at_1pct_fpr=0.011 + (auc - 0.5) / 4,
                tpr_at_01pct_fpr=0.001 + (auc - 0.5) / 8,
                density_auc=round(0.5 + (auc - 0.5) * 0.8, 4),
                density_auc_sd=0.008,
                density_auc_se=0.004,
                repeats=4,
                refined=False,
                roc_fpr=tuple(fpr.tolist()),
                roc_tpr=tuple(tpr.tolist()),
                auc_fit=auc,
                auc_fit_se=0.003,
                density_fit=round(0.5 + (auc - 0.5) * 0.8, 4),
                density_fit_se=0.004,
                upper_distance=auc + 1.6449 * 0.003,
                upper_density=round(0.5 + (auc - 0.5) * 0.8, 4) + 1.6449 * 0.004,
                units=5,
            )
        )
    return points


def fake_result(verdict: str = "released", *, seed: int | None = SEED, n: int = 300) -> RunResult:
    """A RunResult with realistic numbers (built in well under a second)."""
    from engine.privacy.release import epsilon_statement, release_metrics
    from engine.stats.models import ModelSpec, fidelity_report

    real = _real(n)
    synth = _synthetic(real)
    audit = AuditResult(
        threshold=0.55,
        holdout_fraction=0.2,
        repeats=4,
        splits=1,
        curve=tuple(_curve()),
        selected_w=0.7,
        rule="the largest w such that, for it and every smaller candidate w, "
        "the mean membership AUC plus one standard error stays below 0.55 for both attacks",
        seconds=1.0,
        budget_exhausted=False,
    )
    config = SimpleNamespace(
        input=Path("/nonexistent/cohort.csv"),
        input_label=None,
        auc_max=0.55,
        forced_w=None,
        w_grid=tuple(round(0.05 * i, 2) for i in range(20)),
        repeats=None,
        audit_max_rows=50_000,
        seed=seed,
        device="auto",
        file_format="csv",
        budget="fast",
        analysis="cox",
        outcome=None,
        covariates=("age", "sbp", "sex"),
        allow_risky=False,
        risk_acknowledged=False,
        protect_outliers=False,
        copies=1,
        time="time_cvd_years",
        event="cvd",
        drop=(),
        missing_codes=("-99",),
    )
    table = SimpleNamespace(
        path=Path("/nonexistent/cohort.csv"),
        sha256=SHA,
        rows=n + 7,
        frame=pd.DataFrame(index=range(n + 7)),
    )
    prepared = SimpleNamespace(
        config=config,
        table=table,
        schema=_schema(),
        real=real,
        rows_dropped={
            "rows_in": n + 7,
            "rows_used": n,
            "rows_dropped": 7,
            "missing_by_column": {"hdl": 4, "sbp": 3},
            "reason": "rows with a missing value in a used column are left out",
        },
    )
    num = ["age", "totchol", "hdl", "sbp", "time_cvd_years"]
    z_real = ((real[num] - real[num].mean()) / real[num].std()).to_numpy()
    rng = np.random.default_rng(3)
    paired = z_real * np.sqrt(0.7) + rng.standard_normal(z_real.shape) * np.sqrt(0.3)
    metrics = replace(release_metrics(z_real, paired, rng=rng), rows=n, at_risk=3)
    release = Release(
        w=0.7,
        chosen_by="the audit: the largest w meeting the AUC limit",
        copies=1,
        clipped={"hdl": 0, "sbp": 4, "age": 12},
        non_finite={},
        metrics=metrics,
        epsilon=epsilon_statement(rng.standard_normal((n, 5)), 0.7, delta=1.0 / n),
        binding=audit.binding(0.7),
        copies_audited=1,
        exact_copies=CopyCheck(0, 0, 0, 0, 0, 1),
    )
    spec = ModelSpec(
        "cox", time="time_cvd_years", event="cvd", covariates=("age", "sbp", "sex"), per={"sbp": 10}
    )
    fidelity = Fidelity(fidelity_report(real, synth, spec, [c for c in real.columns]))
    model = ModelSummary(
        flows=4,
        hidden=64,
        layers=1,
        val_nll=6.1234,
        device="cpu",
        device_note=None,
        train_seconds=3.2,
    )
    return RunResult(
        config=config,  # type: ignore[arg-type]
        prepared=prepared,  # type: ignore[arg-type]
        audit=audit,
        model=model,
        release=release,
        synthetic=synth,
        copies=(synth,),
        fidelity=fidelity,
        verdict=Verdict(verdict),
        timings={"audit_seconds": 1.0},
        started="2025-06-19T10:11:12+00:00",
        history=tuple((i, 7.0, 7.1) for i in range(40)),
    )


def refused_result() -> RunResult:
    r = fake_result("refused")
    assert r.audit is not None
    audit = replace(
        r.audit,
        selected_w=None,
        curve=tuple(replace(p, auc=p.auc + 0.08) for p in r.audit.curve),
    )
    return replace(
        r,
        audit=audit,
        synthetic=None,
        copies=(),
        fidelity=Fidelity(),
        model=None,
        release=Refusal(
            reason="no perturbation weight kept the membership AUC "
            "below 0.55; nothing was exported",
            hint="add --allow-risky to export at w = 0 anyway",
            binding=audit.binding(None),
        ),
    )


def replace_ns(ns: object, **changes: object) -> SimpleNamespace:
    """A copy of the fake config with ``changes``; a name the config lacks (a renamed field) is
    a test error, not a silently ignored setting."""
    unknown = set(changes) - set(vars(ns))
    assert not unknown, f"the fake config has no {sorted(unknown)}"
    return SimpleNamespace(**{**vars(ns), **changes})


def _text(path: Path) -> str:
    return "\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_report(fake_result(), tmp_path_factory.mktemp("rep") / "report.pdf")


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_report(refused_result(), tmp_path_factory.mktemp("ref") / "report.pdf")


# ------------------------------------------------------------------------------ helpers


def test_safe_count_suppresses_below_ten_including_zero() -> None:
    assert [safe_count(v) for v in (0, 1, 9, 9.6, 10, 1234)] == [
        "< 10",
        "< 10",
        "< 10",
        "< 10",
        "10",
        "1,234",
    ]


def test_level_shares_hide_small_levels() -> None:
    rows = level_shares(pd.Series(["a"] * 50 + ["b"] * 3), pd.Series(["a"] * 53))
    assert rows[1] == ("b", "< 10 rows", "< 10 rows")


def test_km_grid_steps_hold_zero_or_ten_events() -> None:
    real = _real(300)
    grid = coarse_km_grid(real["time_cvd_years"].to_numpy(), real["cvd"].to_numpy())
    events = real.loc[real["cvd"] == 1, "time_cvd_years"].to_numpy()
    counts = np.histogram(events, bins=grid)[0]
    assert grid[0] == 0 and ((counts == 0) | (counts >= 10)).all()
    assert (real["time_cvd_years"] >= grid[-1]).sum() >= 10


# ------------------------------------------------------------------------------ the PDF


def test_first_page_has_verdict_w_auc_and_hash(released: Path) -> None:
    first = PdfReader(str(released)).pages[0].extract_text()
    flat = " ".join(first.split())
    assert "The tool's recommendation: release" in flat and "override" not in flat.lower()
    assert "0.70" in first  # chosen w
    auc_at_w = next(p.auc for p in _curve() if p.w == 0.7)
    assert f"{auc_at_w:.3f}" in first and "limit 0.55" in first
    assert SHA in first.replace("\n", "")
    assert "2025-06-19" in first and "closer" in first


def test_all_sections_present(released: Path) -> None:
    text = _text(released)
    for heading in (
        "1. The data",
        "2. Privacy audit",
        "3. Does the synthetic table",
        "4. Method",
        "References",
        "Threat model",
        "Formal privacy statement",
        "Kaplan-Meier",
        "Correlations",
        "hazard ratio",
    ):
        assert heading in text, heading
    assert "DerSimonian" in text and "Karr" in text and "van Breugel" in text
    assert "participant_id" in text  # dropped column named with its reason


def test_unicode_renders_from_embedded_font(released: Path) -> None:
    reader = PdfReader(str(released))
    fonts = set()
    for page in reader.pages:
        for f in page["/Resources"]["/Font"].values():
            font = f.get_object()
            fonts.add(str(font["/BaseFont"]))
            if "DejaVu" in str(font["/BaseFont"]):
                assert (
                    "/FontFile2" in font["/FontDescriptor"].get_object()
                )  # embedded TrueType subset
    assert any("DejaVuSans" in f for f in fonts)
    text = _text(released)
    assert "±" in text and "ε" in text and "✓" in text


def test_small_counts_are_suppressed(released: Path) -> None:
    text = _text(released)
    assert "< 10" in text
    # rows dropped (7), missing per column (4, 3), clipped (0, 4) and records at risk (3) never
    # print raw
    assert not re.search(r"Rows dropped \(a missing value in a used column\)\s*7\b", text)
    assert not re.search(r"Missing values in hdl\s*4\b", text)
    assert "3 of 300" not in text and "< 10 of 300" in text
    assert re.search(r"age\s*12", text)  # a count of 10 or more is shown


def test_seed_never_printed(released: Path) -> None:
    text = _text(released)
    assert str(SEED) not in text
    assert "Seeded" in text and "the seed is not shown" in text
    assert str(SEED).encode() not in released.read_bytes()


def test_byte_identical_for_the_same_result(released: Path) -> None:
    a = released.read_bytes()
    b = render_report(fake_result())  # a second, independently built result with the same numbers
    assert a == b
    assert b"D:20250619000000" in a  # creation date fixed to the run's day


def test_real_data_figures_are_raster_images(released: Path) -> None:
    reader = PdfReader(str(released))
    images = 0
    for number, page in enumerate(reader.pages, 1):
        xobjects = page["/Resources"].get("/XObject", {})
        images += sum(1 for x in xobjects.values() if x.get_object()["/Subtype"] == "/Image")
        content = page.get_contents().get_data().decode("latin-1")
        paths = len(re.findall(r"\s(?:l|c|re)\n", content))
        assert paths < 250, (
            f"page {number} draws {paths} vector path segments (a vector plot of data?)"
        )
    # AUC curve, ROC, distances, box plots, Kaplan-Meier, correlations, forest plot
    assert images >= 7


def test_every_page_renders_and_is_not_blank(released: Path, refused: Path, tmp_path: Path) -> None:
    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm (poppler-utils) is not installed")
    from matplotlib.image import imread

    for pdf in (released, refused):
        prefix = tmp_path / pdf.parent.name
        subprocess.run(
            ["pdftoppm", "-r", "40", "-png", str(pdf), str(prefix)], check=True, timeout=60
        )
        pngs = sorted(tmp_path.glob(f"{pdf.parent.name}*.png"))
        assert len(pngs) == len(PdfReader(str(pdf)).pages) >= 4
        for png in pngs:
            pixels = imread(str(png))[..., :3]
            assert (pixels < 0.9).mean() > 0.005, f"{png.name} looks blank"


def test_refused_report_states_the_reason(refused: Path) -> None:
    first = PdfReader(str(refused)).pages[0].extract_text()
    assert "The tool's recommendation: do not release" in " ".join(first.split())
    assert "no perturbation weight kept the membership AUC" in first
    text = _text(refused)
    assert "No synthetic table was made" in text and "could not be drawn" not in text


def test_override_is_stated_with_the_acknowledgement(tmp_path: Path) -> None:
    r = fake_result("released with override")
    assert r.released is not None
    r = replace(
        r,
        config=replace_ns(r.config, forced_w=0.9, risk_acknowledged=True),  # type: ignore[arg-type]
        release=replace(r.released, w=0.9),
    )
    first = PdfReader(str(build_report(r, tmp_path / "o.pdf"))).pages[0].extract_text()
    assert "Released only because the user overrode the privacy limit" in " ".join(first.split())
    assert "acknowledgement" in first and "0.90" in first and "not below the limit" in first


def test_missing_pieces_degrade_to_sentences(tmp_path: Path) -> None:
    """No audit, no model, no fidelity: each part says so in a sentence; nothing crashes."""
    r = replace(fake_result(), audit=None, model=None, fidelity=Fidelity())
    text = " ".join(_text(build_report(r, tmp_path / "m.pdf")).split())
    assert "The tool's recommendation: release" in text and "not available" in text
    assert "The membership audit did not run; no privacy claim can be made." in text
    assert "No regression model was compared in this run" in text
    assert "could not be drawn" not in text and "Model of the release" not in text


def test_never_overwrites_the_input(tmp_path: Path) -> None:
    from engine.errors import InputError

    source = tmp_path / "cohort.csv"
    source.write_text("x\n1\n")
    r = refused_result()
    r = replace(r, config=replace_ns(r.config, input=source))  # type: ignore[arg-type]
    with pytest.raises(InputError):
        build_report(r, source)
    assert source.read_text() == "x\n1\n"


def test_works_with_the_pipeline_dataclasses() -> None:
    """The real RunConfig/Prepared dataclasses carry the fake pieces as well."""
    from engine.pipeline import Prepared, RunConfig

    f = fake_result()
    cfg = RunConfig(input=Path("cohort.csv"), seed=SEED, time="time_cvd_years", event="cvd")
    prep = Prepared(
        cfg,
        f.prepared.table,
        f.prepared.schema,
        f.prepared.real,
        f.prepared.rows_dropped,
        None,  # type: ignore[arg-type]
    )
    pdf = render_report(replace(f, config=cfg, prepared=prep))
    assert pdf[:5] == b"%PDF-"
    assert b"could not be drawn" not in pdf


def wide_result(d: int = 200, n: int = 300) -> RunResult:
    """``fake_result`` widened to ``d`` columns with extra lab values (a 200-column table)."""
    from engine.stats.models import ModelSpec, fidelity_report

    r = fake_result(n=n)
    rng = np.random.default_rng(0)
    extra = [f"lab_marker_{k:03d}" for k in range(d - r.prepared.real.shape[1])]
    lab = lambda: pd.DataFrame(  # noqa: E731
        np.round(rng.normal(5, 1, (n, len(extra))), 2), columns=extra
    )
    real = pd.concat([r.prepared.real, lab()], axis=1)
    synth = pd.concat([r.synthetic, lab()], axis=1)
    added = [_column(c, "continuous", "synthesize", "numbers with decimals") for c in extra]
    schema = SimpleNamespace(
        columns=tuple(r.prepared.schema.columns) + tuple(added),
        time=r.prepared.schema.time,
        event=r.prepared.schema.event,
    )
    spec = ModelSpec(
        "cox", time="time_cvd_years", event="cvd", covariates=("age", "sbp", "sex"), per={"sbp": 10}
    )
    return replace(
        r,
        prepared=replace_ns(r.prepared, real=real, schema=schema),  # type: ignore[arg-type]
        synthetic=synth,
        copies=(synth,),
        fidelity=Fidelity(fidelity_report(real, synth, spec, list(real.columns))),
    )


@pytest.mark.slow
def test_a_200_column_table_gets_a_report_that_fits(tmp_path: Path) -> None:
    """Once a reportlab LayoutError (a box-plot grid taller than the page); now top-k figures."""
    result = wide_result()
    assert result.prepared.real.shape[1] == 200
    reader = PdfReader(str(build_report(result, tmp_path / "wide.pdf")))
    assert 5 <= len(reader.pages) <= 40
    page_height = float(reader.pages[0].mediabox.height)
    tallest = 0.0
    for page in reader.pages:
        for img in page.images:
            w, h = img.image.size
            tallest = max(tallest, h)
    assert tallest <= 1800  # at most 30 boxes: 6 rows of 5 (1.9 in each) at 150 dpi
    text = " ".join(" ".join(p.extract_text() for p in reader.pages).split())
    assert "lab_marker_189" in text  # every column is still listed in the column table
    assert page_height > 0


def test_logrank_p_value_is_labelled_descriptive(released: Path) -> None:
    text = " ".join(_text(released).split())
    assert "Log-rank p-value real vs synthetic (whole follow-up), descriptive only" in text
    assert "not an independent sample" in text and "Log-rank test" not in text


def test_redrawn_and_dropped_rows_are_reported(tmp_path: Path) -> None:
    r = fake_result()
    assert r.released is not None
    r = replace(r, release=replace(r.released, non_finite={"rows_redrawn": 14, "rows_dropped": 2}))
    text = " ".join(_text(build_report(r, tmp_path / "nf.pdf")).split())
    assert "14 synthetic rows decoded to an infinite or undefined value" in text
    assert "2 still failed after five draws and were left out" in text


def test_dp_and_copies_sections_read_the_typed_results(tmp_path: Path) -> None:
    """Formal DP mode and two copies: the DP section sets the DP release's guarantee, audit and
    hazard ratios beside the LNI release's; the copies section prints the combined estimates."""
    from engine.pipeline.results import DPAudit, DPResult
    from engine.privacy.dp.release import DPRelease
    from engine.stats.models import ModelSpec, combine_synthetic_copies, fidelity_report, fit_model

    r = fake_result()
    assert r.released is not None and r.synthetic is not None
    spec = ModelSpec(
        "cox", time="time_cvd_years", event="cvd", covariates=("age", "sbp", "sex"), per={"sbp": 10}
    )
    second = _synthetic(r.prepared.real, seed=2)
    guarantee = {
        "accountant": "PLD (dp-accounting)",
        "epsilon": 3.996,
        "epsilon_target": 4.0,
        "delta": 0.001,
        "sigma": 0.62,
        "sampling_rate": 0.05,
        "steps": 400,
        "clip": 1.0,
        "statement": "(4.00, 0.001)-differential privacy for every record",
        "notes": ["the bounds of every column were declared, not read from the data"],
    }
    dp = DPResult(
        release=DPRelease(second, guarantee, SimpleNamespace(to_dict=dict), None),  # type: ignore[arg-type]
        audit=DPAudit(auc=0.5123, auc_sd=0.01, density_auc=0.5071, repeats=4),
        fidelity=Fidelity(fidelity_report(r.prepared.real, second, spec)),
        file="synthetic_dp.csv",
    )
    fits = [fit_model(c, spec) for c in (r.synthetic, second)]
    r = replace(
        r,
        release=replace(r.released, dp=dp, copies=2),
        fidelity=replace(r.fidelity, combined_copies=combine_synthetic_copies(fits)),
    )
    text = " ".join(_text(build_report(r, tmp_path / "dp.pdf")).split())
    assert "could not be drawn" not in text
    assert "5. Formal differential-privacy release (DP-SGD)" in text
    assert "(4.00, 0.001)-differential privacy for every record" in text
    lni = next(p for p in _curve() if p.w == 0.7)
    assert f"distance attack AUC {lni.auc:.3f} 0.512" in text
    assert f"density attack AUC {lni.density_auc:.3f} 0.507" in text
    assert re.search(r"HR sbp per 10 \(95 % CI\) \d\.\d{3} \(", text)  # real, LNI and DP columns
    assert "Several synthetic copies (2)" in text and "Reiter's (2003) rule" in text
    assert "bounds of every column were declared" in text
    block = r.release.to_dict()["dp"]
    assert block["file"] == "synthetic_dp.csv" and block["audit"]["auc"] == 0.5123
    assert block["epsilon"] == 3.996 and block["rows"] == len(second)


REPO = Path(__file__).resolve().parents[1]


def test_report_and_pipeline_modules_stay_under_400_lines() -> None:
    """Issue 12: one module per report section; none of these rooms' modules over 400 lines."""
    paths = sorted((REPO / "engine" / "report").rglob("*.py"))
    paths += sorted((REPO / "engine" / "pipeline").glob("*.py"))
    sizes = {
        str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines()) for p in paths
    }
    assert len(sizes) >= 25 and "engine/report/sections/privacy.py" in sizes
    assert {path: n for path, n in sizes.items() if n > 400} == {}


def test_the_report_reads_typed_results_not_dicts() -> None:
    """No ``pick()`` helper walking result dicts is left in the report (issue 12)."""
    sources = {
        str(p.relative_to(REPO)): p.read_text(encoding="utf-8")
        for p in (REPO / "engine" / "report").rglob("*.py")
    }
    assert [path for path, text in sources.items() if re.search(r"\bpick\(", text)] == []
    assert [path for path, text in sources.items() if 'release["' in text] == []


# ---------------------------------------------------------- the checker's page (issue 14.8)


def _shown_counts(cells: list[str]) -> list[int]:
    """Every exact count printed in ``cells`` (a "< 10" or a coarsened total is no count)."""
    out = []
    for cell in cells:
        for m in re.finditer(r"(?<![<\d.,])(\d{1,3}(?:,\d{3})+|\d+)(?![\d.])", cell):
            if not re.search(r"<\s*$", cell[: m.start()]):
                out.append(int(m.group(1).replace(",", "")))
    return out


@pytest.mark.parametrize("in_file, used", [(307, 300), (300, 300), (325, 300), (309, 299)])
def test_no_two_shown_row_counts_reveal_a_suppressed_one(in_file: int, used: int) -> None:
    """Rows dropped "< 10" must not stand beside exact in-file and used counts whose difference
    gives it away; the data page and the first page are read together."""
    from engine.report.sections.data import row_rows
    from engine.report.sections.summary import key_rows

    r = fake_result()
    table = replace_ns(r.prepared.table, rows=in_file, frame=pd.DataFrame(index=range(in_file)))
    dropped = {**r.prepared.rows_dropped, "rows_dropped": in_file - used}
    dropped["missing_by_column"] = {}
    prepared = replace_ns(
        r.prepared, table=table, real=r.prepared.real.iloc[:used], rows_dropped=dropped
    )
    assert r.released is not None
    release = replace(r.released, metrics=replace(r.released.metrics, rows=used))
    r = replace(r, prepared=prepared, release=release)  # type: ignore[arg-type]
    cells = [str(v) for row in row_rows(r) for v in row[1:]]
    cells += [str(row[1]) for row in key_rows(r) if row[0] == "Rows"]
    counts = sorted(set(_shown_counts(cells)))
    assert used in counts  # the used count is always exact
    revealed = [(a, b) for a in counts for b in counts if 0 < a - b < 10]
    assert revealed == []
    shown_dropped = dict((row[0], row[1]) for row in row_rows(r))[
        "Rows dropped (a missing value in a used column)"
    ]
    hidden = in_file - used
    assert shown_dropped == ("none" if hidden == 0 else "< 10" if hidden < 10 else f"{hidden}")


def test_first_page_lists_the_files_written_with_their_sha256(tmp_path: Path) -> None:
    outputs = {
        "synthetic.csv": "a1" * 32,
        "README.txt": "b2" * 32,
        "audit.json": "c3" * 32,  # written after the report: never listed in it
    }
    r = replace(fake_result(), outputs=outputs)
    pages = PdfReader(str(build_report(r, tmp_path / "h.pdf"))).pages
    first = " ".join((pages[0].extract_text() + pages[1].extract_text()).split())
    assert "Files written with this report" in first
    assert "synthetic.csv " + "a1" * 32 in first and "README.txt " + "b2" * 32 in first
    assert "c3" * 32 not in first
    assert "The report itself is not listed" in first


def test_override_setting_follows_the_verdict(tmp_path: Path) -> None:
    """Never "overridden: no" beside a release made by override (the wizard's acknowledgement
    sets no allow_risky flag)."""
    from engine.report.sections.method import settings_rows

    r = fake_result("released with override")
    config = replace_ns(r.config, forced_w=0.9, allow_risky=False, risk_acknowledged=True)
    rows = dict(settings_rows(config, r.verdict))  # type: ignore[arg-type]
    assert rows["Privacy limit overridden by the user"] == (
        "yes: the risk was acknowledged in the wizard; w was set by the user"
    )
    assert "Allow risky (override)" not in rows
    assert dict(settings_rows(r.config, "released"))["Privacy limit overridden by the user"] == "no"  # type: ignore[arg-type]
    pdf = build_report(replace(r, config=config), tmp_path / "o.pdf")  # type: ignore[arg-type]
    text = " ".join(_text(pdf).split())
    assert "Privacy limit overridden by the user yes" in text
    assert "overridden by the user no" not in text


def test_first_page_shows_the_fidelity_verdict(released: Path) -> None:
    r = fake_result()
    verdict = r.fidelity.verdict
    assert verdict is not None
    first = " ".join(PdfReader(str(released)).pages[0].extract_text().split())
    assert "Same answers as the real table?" in first
    assert " ".join(verdict.line.split()[:6]) in first


def test_km_text_and_figure_use_the_fidelity_grid() -> None:
    """Issue 14.7: the Kaplan-Meier figure, its note and its gap are read off the run's one
    comparison (the coarse disclosure-safe grid), so the text cites no time the figure lacks."""
    from engine.report.sections.utility import km_from_fidelity, km_gap

    fidelity = fake_result().fidelity.result
    assert fidelity is not None and fidelity.km is not None
    km = km_from_fidelity(fidelity)
    assert km is not None
    assert km.times == fidelity.km.grid and km.synthetic == fidelity.km.synth_survival
    assert f"to {fidelity.km.grid[-1]:g} " in km.note
    gaps = np.abs(np.subtract(km.real, km.synthetic))
    assert km_gap(km, fidelity) == pytest.approx(gaps.max()) == fidelity.km.max_abs_difference


def test_a_missing_count_under_ten_is_not_revealed_by_the_total_minus_the_others() -> None:
    """Rows dropped 25 = hdl 20 + sbp 5: with 25 and 20 shown, "sbp < 10" would be 5."""
    from engine.report.sections.data import row_rows

    r = fake_result()
    dropped = {**r.prepared.rows_dropped, "rows_dropped": 25}
    dropped["missing_by_column"] = {"hdl": 20, "sbp": 5, "age": 40}
    table = replace_ns(r.prepared.table, rows=325, frame=pd.DataFrame(index=range(325)))
    r = replace(r, prepared=replace_ns(r.prepared, rows_dropped=dropped, table=table))  # type: ignore[arg-type]
    shown = {row[0]: row[1] for row in row_rows(r)}
    assert shown["Missing values in sbp"] == "< 10"
    assert shown["Missing values in hdl"].startswith("not shown")  # the smallest shown one
    assert shown["Missing values in age"] == "40"
    assert shown["Rows dropped (a missing value in a used column)"] == "25"


def test_method_says_the_model_starts_from_the_correlations_only_when_it_did(
    released: Path, tmp_path: Path
) -> None:
    """The sentence on the whitened start follows the model record: a flow trained from the
    plain start (as under DP-SGD, whose model may not see a covariance of the rows) must not
    be described as starting from the correlations."""
    phrase = "starts from the correlations between the columns' normal scores"
    r = fake_result()
    assert r.model is not None and not r.model.whitened
    assert phrase not in " ".join(_text(released).split())
    whitened = replace(r, model=replace(r.model, whitened=True))
    assert phrase in " ".join(_text(build_report(whitened, tmp_path / "w.pdf")).split())
    assert whitened.model is not None and whitened.model.to_dict()["whitened"] is True
