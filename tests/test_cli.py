"""The command line end to end: bad inputs are refused cleanly, a run writes what CONTRACTS.md
promises, and the privacy defaults hold in the files a recipient gets."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _cohort(n: int = 600, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.normal(55, 8, n).round()
    sbp = (120 + 0.5 * (age - 55) + rng.normal(0, 15, n)).round()
    hazard = 0.02 * np.exp(0.02 * (sbp - 120) + 0.04 * (age - 55))
    t_event = rng.exponential(1 / hazard)
    follow = rng.uniform(5, 15, n)
    return pd.DataFrame(
        {
            "patient_id": [f"{i:05d}" for i in range(n)],
            "time": np.round(np.minimum(t_event, follow), 2),
            "event": (t_event < follow).astype(int),
            "age": age.astype(int),
            "sbp": sbp.astype(int),
            "smoker": rng.choice(["yes", "no"], n),
        }
    )


def _run_cli(args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, "-m", "engine", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


FAST = ["--w-grid", "0,0.5,0.8", "--repeats", "2", "--budget", "fast", "--quiet", "--no-report"]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pd.DataFrame]:
    folder = tmp_path_factory.mktemp("run")
    data = _cohort()
    src = folder / "cohort.csv"
    data.to_csv(src, index=False)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    out = folder / "out"
    code = main(
        [
            "run",
            str(src),
            "--out",
            str(out),
            "--time",
            "time",
            "--event",
            "event",
            "--seed",
            "987654321",
            # 600 rows and two repeats: the AUC's SE is about 0.025, so the default 0.55 can
            # refuse at w = 0 by chance; these tests are about the files, not the audit
            "--auc-max",
            "0.6",
            *FAST,
        ]
    )
    assert code == 0
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before, "the input file was modified"
    return src, out, data


def test_run_writes_contract_files_and_keys(small_run: tuple[Path, Path, pd.DataFrame]) -> None:
    src, out, data = small_run
    audit = json.loads((out / "audit.json").read_text())
    for key in ("tool", "input", "columns", "model", "audit", "release", "fidelity"):
        assert key in audit
    assert audit["input"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert audit["input"]["rows"] == 600 and audit["input"]["rows_used"] == 600
    assert {"flows", "hidden", "layers", "val_nll", "device", "train_seconds"} <= set(
        audit["model"]
    )
    assert {0.0, 0.5, 0.8} <= {p["w"] for p in audit["audit"]["curve"]}  # grid (+ refinement)
    curve = {p["w"]: p["auc"] for p in audit["audit"]["curve"]}
    assert abs(curve[0.0] - 0.5) < 0.1  # plain flow sampling: no membership leak
    selected = audit["audit"]["selected_w"]
    assert curve[selected] < audit["audit"]["threshold"] == 0.6  # the limit given
    assert all(w > selected for w, auc in curve.items() if auc >= 0.6)
    release = audit["release"]
    assert release["rows"] == 600
    # about 0.5 at w = 0; the paper's selected w gave 1-13 %: the released rows stay near their own
    assert 0.0 < release["closer_probability"] < 0.25
    assert release["median_rank"] < 600 / 4
    assert release["epsilon"]["value"] > 0
    kinds = {c["name"]: (c["kind"], c["action"]) for c in audit["columns"]}
    assert kinds["patient_id"] == ("identifier", "drop")
    assert kinds["time"][0] == "time" and kinds["event"][0] == "event"


def test_released_table_is_safe_and_faithful(small_run: tuple[Path, Path, pd.DataFrame]) -> None:
    _, out, data = small_run
    synth = pd.read_csv(out / "synthetic.csv")
    assert "patient_id" not in synth.columns, "a dropped identifier reached the export"
    assert list(synth.columns) == ["time", "event", "age", "sbp", "smoker"]
    assert set(synth["event"].unique()) <= {0, 1}
    assert set(synth["smoker"].unique()) <= {"yes", "no"}
    assert synth["time"].between(data["time"].min(), data["time"].max()).all()
    # the marginal means stay close (within 0.25 real SD)
    for col in ("age", "sbp", "time"):
        assert abs(synth[col].mean() - data[col].mean()) < 0.25 * data[col].std()
    # no secret leaks into any written file
    for path in out.iterdir():
        text = path.read_bytes()
        assert b"987654321" not in text, f"the seed appears in {path.name}"


def test_rows_are_shuffled_at_w1(tmp_path: Path) -> None:
    """At w = 1 the synthetic rows are the real rows, but never in input order."""
    data = _cohort(300, seed=3).drop(columns=["patient_id"])
    src = tmp_path / "c.csv"
    data.to_csv(src, index=False)
    code = main(
        [
            "run",
            str(src),
            "--out",
            str(tmp_path / "o"),
            "--w",
            "1",
            "--allow-risky",
            "--seed",
            "5",
            *FAST,
        ]
    )
    assert code == 0
    synth = pd.read_csv(tmp_path / "o" / "synthetic.csv")
    key = lambda f: sorted(map(tuple, f.astype(str).to_numpy()))  # noqa: E731
    # issue 11: copies of unique real rows are redrawn and extremes clipped, so w = 1 no longer
    # returns the input rows; the shuffle is still checked below
    assert len(synth) == len(data) and key(synth) != key(data)
    same_position = (synth.astype(str).to_numpy() == data.astype(str).to_numpy()).all(axis=1).mean()
    assert same_position < 0.05, "released rows keep the input order"


BAD_INPUTS = {
    "empty": (lambda p: p.write_bytes(b""), "empty"),
    "header_only": (lambda p: p.write_text("a,b,c\n"), "no data rows"),
    "too_few_rows": (lambda p: _cohort(30).to_csv(p, index=False), "50"),
    "random_bytes": (lambda p: p.write_bytes(os.urandom(4000)), ""),
    "duplicate_names": (lambda p: p.write_text("a,a,b\n" + "1,2,3\n" * 80), "'a'"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_files_exit_2_with_one_line(case: str, tmp_path: Path) -> None:
    make, expected = BAD_INPUTS[case]
    src = tmp_path / "bad.csv"
    make(src)
    result = _run_cli(["run", str(src), "--out", str(tmp_path / "o"), "--quiet"])
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "bad.csv" in lines[0] and expected in lines[0]
    assert not (tmp_path / "o" / "synthetic.csv").exists()


@pytest.mark.parametrize(
    "args, expected",
    [
        (["run", "/no/such/file.csv"], "file.csv"),
        (["run", "https://example.org/data.csv"], "URL"),
        (["run", "{tmp}"], "folder"),
        (["run", "{good}", "--event", "age"], "'age'"),
        (["run", "{negtime}", "--time", "time"], "time"),
        (["run", "{good}", "--auc-max", "0.3"], "auc"),
    ],
)
def test_bad_arguments_exit_2(args: list[str], expected: str, tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    _cohort(100).to_csv(good, index=False)
    neg = _cohort(100)
    neg.loc[7, "time"] = -1.0
    neg.to_csv(tmp_path / "neg.csv", index=False)
    args = [a.format(tmp=tmp_path, good=good, negtime=tmp_path / "neg.csv") for a in args]
    result = _run_cli([*args, "--out", str(tmp_path / "o"), "--quiet"])
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert expected.lower() in lines[0].lower()
    assert not (tmp_path / "o" / "synthetic.csv").exists()


def test_cli_errors_add_the_option_to_the_plain_engine_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The engine names the setting in words (the wizard shows them as they are); the command
    line adds the option that sets it, once, at the end of its one line."""
    good = tmp_path / "good.csv"
    _cohort(100).to_csv(good, index=False)
    assert main(["run", str(good), "--event", "age", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "'age'" in line and "the event column must be binary" in line
    assert line.endswith("(command line: --event COL)") and line.count("--") == 1
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["run", str(good), "--out", str(afile), "--quiet"]) == 2
    line = capsys.readouterr().err.strip()
    assert "not a folder" in line and line.endswith("(command line: --out DIR)")
    assert not (tmp_path / "o").exists()


def test_inf_and_empty_column_are_handled(tmp_path: Path) -> None:
    data = _cohort(300, seed=4)
    data["sbp"] = data["sbp"].astype(float)
    data.loc[3, "sbp"] = np.inf
    data["unused"] = np.nan
    src = tmp_path / "c.csv"
    data.to_csv(src, index=False)
    # --allow-risky: this test is about the inf value and the empty column, not the audit
    code = main(
        ["run", str(src), "--out", str(tmp_path / "o"), "--seed", "2", "--allow-risky", *FAST]
    )
    assert code == 0
    audit = json.loads((tmp_path / "o" / "audit.json").read_text())
    assert audit["input"]["rows_used"] == 299
    assert any("inf" in note.lower() for note in audit["input"]["notes"])
    assert "unused" not in pd.read_csv(tmp_path / "o" / "synthetic.csv").columns


def test_dp_mode_needs_declared_bounds(tmp_path: Path) -> None:
    src = tmp_path / "c.csv"
    _cohort(200).to_csv(src, index=False)
    result = _run_cli(
        ["run", str(src), "--out", str(tmp_path / "o"), "--dp-epsilon", "8", "--quiet"]
    )
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "time" in line and "--bounds" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_dp_mode_releases_a_second_table_with_its_guarantee(tmp_path: Path) -> None:
    src = tmp_path / "c.csv"
    _cohort(600, seed=8).drop(columns=["patient_id"]).to_csv(src, index=False)
    args = ["--time", "time", "--event", "event", "--bounds", "time=0:20", "--dp-epsilon", "8"]
    code = main(
        [
            "run",
            str(src),
            "--out",
            str(tmp_path / "o"),
            "--seed",
            "4",
            "--allow-risky",
            *args,
            *FAST,
        ]
    )
    assert code == 0
    audit = json.loads((tmp_path / "o" / "audit.json").read_text())
    dp = audit["release"]["dp"]
    assert abs(dp["guarantee"]["epsilon"] - 8.0) < 0.05
    assert dp["guarantee"]["delta"] == pytest.approx(600**-1.1, rel=1e-6)
    assert 0.4 < dp["audit"]["auc"] < 0.6, "flow sampling from a DP flow must not reveal members"
    synth_dp = pd.read_csv(tmp_path / "o" / "synthetic_dp.csv")
    assert len(synth_dp) == 600 and list(synth_dp.columns) == [
        "time",
        "event",
        "age",
        "sbp",
        "smoker",
    ]
    assert synth_dp["time"].between(0, 20).all()
    assert "synthetic_dp.csv" in audit["outputs"]


def test_refusal_exits_3_and_override_is_recorded(tmp_path: Path) -> None:
    """When no candidate w meets the limit the export is refused (exit 3, no synthetic file, the
    record says why); --allow-risky releases and records the override."""
    src = tmp_path / "c.csv"
    _cohort(400, seed=6).to_csv(src, index=False)
    # only w values close to 1 are offered: at w = 0.97 an attacker spots members easily
    strict = ["--seed", "3", *FAST, "--w-grid", "0.97,0.98"]
    refused = _run_cli(["run", str(src), "--out", str(tmp_path / "no"), *strict])
    assert refused.returncode == 3, refused.stderr
    assert "--allow-risky" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "no" / "synthetic.csv").exists()
    record = json.loads((tmp_path / "no" / "audit.json").read_text())
    assert record["verdict"] == "refused" and record["audit"]["selected_w"] is None
    code = main(["run", str(src), "--out", str(tmp_path / "yes"), "--allow-risky", *strict])
    assert code == 0
    record = json.loads((tmp_path / "yes" / "audit.json").read_text())
    assert record["verdict"] == "released with override"
    assert record["settings"]["allow_risky"] is True and record["release"]["w"] == 0.0
    assert min(p["auc"] for p in record["audit"]["curve"]) > 0.55


def test_copies_are_independent_and_combined_by_reiters_rule(tmp_path: Path) -> None:
    src = tmp_path / "c.csv"
    _cohort(500, seed=9).to_csv(src, index=False)
    args = ["--time", "time", "--event", "event", "--copies", "3", "--seed", "6", "--allow-risky"]
    assert main(["run", str(src), "--out", str(tmp_path / "o"), *args, *FAST]) == 0
    tables = [
        pd.read_csv(tmp_path / "o" / name)
        for name in ("synthetic.csv", "synthetic_2.csv", "synthetic_3.csv")
    ]
    assert all(len(t) == 500 for t in tables)
    assert not tables[0].equals(tables[1]), "copies must be independent noise draws"
    combined = json.loads((tmp_path / "o" / "audit.json").read_text())["fidelity"][
        "combined_copies"
    ]
    assert combined["combined"]["rule"] == "partial" and combined["combined"]["copies"] == 3
    for parts in combined["combined"]["coefficients"].values():
        # Reiter (2003): T = u_bar + b / M
        assert parts["total_variance"] == pytest.approx(
            parts["within_variance"] + parts["between_variance"] / 3
        )


@pytest.mark.slow
def test_two_runs_with_the_same_seed_give_identical_report_and_table(tmp_path: Path) -> None:
    src = tmp_path / "c.csv"
    _cohort(400, seed=12).to_csv(src, index=False)
    opts = ["--time", "time", "--event", "event", "--seed", "21", "--allow-risky", "--quiet"]
    opts += ["--w-grid", "0,0.5,0.8", "--repeats", "2"]
    for run in ("a", "b"):
        assert main(["run", str(src), "--out", str(tmp_path / run), *opts]) == 0
    for name in ("report.pdf", "synthetic.csv"):
        first, second = (tmp_path / r / name for r in ("a", "b"))
        assert (
            hashlib.sha256(first.read_bytes()).digest()
            == hashlib.sha256(second.read_bytes()).digest()
        ), name


def test_ctrl_c_cancels_cleanly_with_exit_130(tmp_path: Path) -> None:
    """Ctrl-C during training stops at the next step: exit 130, one message, no files."""
    import signal
    import time

    out = tmp_path / "o"
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "demo", "--out", str(out), "--seed", "1"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # progress lines arrive as the stages start
        if "training flow" in line:
            break
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert time.monotonic() - sent < 10, "cancel took too long"
    assert "cancelled" in err and "Traceback" not in err
    assert not out.exists() or not any(out.iterdir()), "a cancelled run left files behind"


@pytest.mark.slow
def test_protect_outliers_removes_at_risk_records_and_reports_the_cost(tmp_path: Path) -> None:
    src = tmp_path / "c.csv"
    _cohort(500, seed=13).to_csv(src, index=False)
    args = [
        "--time",
        "time",
        "--event",
        "event",
        "--w",
        "0.9",
        "--allow-risky",
        "--protect-outliers",
    ]
    assert main(["run", str(src), "--out", str(tmp_path / "o"), "--seed", "8", *args, *FAST]) == 0
    release = json.loads((tmp_path / "o" / "audit.json").read_text())["release"]
    protect = release["protect_outliers"]
    # counts below 10 are written as "< 10" (issue 11)
    assert (
        protect["at_risk_before"] > 50 and protect["at_risk_after"] == "< 10" == release["at_risk"]
    )
    effect = protect["effect"]
    assert set(effect["model_with"]) == set(effect["model_real"]) == {"age", "sbp", "smoker=yes"}
    assert effect["largest_mean_shift_sd_with"] < 0.3


def test_demo_all_pools_the_same_studies_when_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refused sub-study is left out of both the real and the synthetic pooling."""
    import engine.cli as cli
    import engine.pipeline as pipeline
    import engine.pipeline.console as console
    import engine.pipeline.demo as demo
    from engine.errors import PrivacyRefused

    real = pd.read_csv(cli.demo_input())
    kept = ["ARIC F", "CHS F", "MESA M", "Framingham M"]

    def fake_run(config: pipeline.RunConfig, *args: object, **kwargs: object) -> object:
        study = config.subset[1]  # type: ignore[index]
        if study == "CHS F":
            raise PrivacyRefused("no w met the limit")
        Path(config.out).mkdir(parents=True)  # type: ignore[arg-type]
        real[real["study"] == study].drop(columns=["study"]).to_csv(
            Path(config.out) / "synthetic.csv",  # type: ignore[arg-type]
            index=False,
        )
        return None

    monkeypatch.setattr(cli, "DEMO_STUDIES", tuple(kept))
    monkeypatch.setattr(demo, "run_pipeline", fake_run)
    monkeypatch.setattr(console, "print_summary", lambda result, out: None)
    assert main(["demo", "--all", "--out", str(tmp_path / "out"), "--quiet"]) == 0
    meta = json.loads((tmp_path / "out" / "meta" / "meta.json").read_text())
    real_studies = [s["study"] for s in meta["sets"]["real"]["studies"]]
    synth_studies = [s["study"] for s in meta["sets"]["synthetic"]["studies"]]
    assert meta["sets"]["real"]["k"] == meta["sets"]["synthetic"]["k"] == 3
    assert sorted(real_studies) == sorted(synth_studies) and "CHS F" not in real_studies
    assert any("CHS F" in note for note in meta["notes"])
    assert "CHS F left out" in capsys.readouterr().out


def test_a_fidelity_model_that_does_not_converge_still_exports(tmp_path: Path) -> None:
    """Perfect separation in the real table: the run exports (exit 0) and says so everywhere."""
    from pypdf import PdfReader

    data = _cohort(300, seed=4)
    data["high_bp"] = (data["sbp"] > 120).astype(int)  # sbp separates high_bp perfectly
    src = tmp_path / "sep.csv"
    data.to_csv(src, index=False)
    out = tmp_path / "out"
    args = ["run", str(src), "--out", str(out), "--seed", "3", "--allow-risky"]
    args += ["--analysis", "logistic"]
    args += ["--outcome", "high_bp", "--covariates", "sbp,age"]
    assert main(args + [a for a in FAST if a != "--no-report"]) == 0
    fidelity = json.loads((out / "audit.json").read_text())["fidelity"]
    assert fidelity["model"] is None
    assert fidelity["model_status"].startswith("did not converge")
    assert len(pd.read_csv(out / "synthetic.csv")) == 300
    pdf = " ".join(p.extract_text() for p in PdfReader(out / "report.pdf").pages)
    assert "did not converge" in " ".join(pdf.split())


def test_a_table_with_very_large_values_is_released(tmp_path: Path) -> None:
    """Values from 1e15 to 1e200 once ended in 'cannot convert float NaN to integer' (exit 1)."""
    rng = np.random.default_rng(0)
    n = 200
    src = tmp_path / "big.csv"
    pd.DataFrame(
        {
            "age": rng.integers(30, 80, n),
            "big": 10 ** rng.uniform(15, 200, n),
            "bigint": rng.integers(10**15, 10**18, n),
        }
    ).to_csv(src, index=False)
    out = tmp_path / "out"
    args = ["run", str(src), "--out", str(out), "--seed", "1", "--allow-risky", *FAST]
    assert main(args) == 0
    synth = pd.read_csv(out / "synthetic.csv")
    assert len(synth) == n and synth["bigint"].dtype == np.int64
    marginal = json.loads((out / "audit.json").read_text())["fidelity"]["marginal"]
    big = next(m for m in marginal if m["column"] == "big")
    assert 1e197 < big["real_sd"] < 1e200  # not an overflowed SD (null)


def test_run_without_roles_uses_recognised_survival_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "trial.csv"
    _cohort(300, seed=5).rename(columns={"time": "futime", "event": "death"}).to_csv(
        src, index=False
    )
    out = tmp_path / "out"
    assert main(["run", str(src), "--out", str(out), "--seed", "2", "--allow-risky", *FAST]) == 0
    assert "recognised survival columns: time 'futime', event 'death'" in capsys.readouterr().out
    audit = json.loads((out / "audit.json").read_text())
    kinds = {c["name"]: c["kind"] for c in audit["columns"]}
    assert (kinds["futime"], kinds["death"]) == ("time", "event")
    assert audit["fidelity"]["km"]["logrank_p_descriptive"] is not None


def test_audit_json_values_are_made_json_safe_by_the_one_helper() -> None:
    """audit.json goes through ``engine.stats.fits.json_safe`` (no second copy in the pipeline):
    numpy booleans stay booleans (not 1/0, not a crash), paths become text, NaN/inf null."""
    from pathlib import PurePosixPath

    from engine.pipeline import record
    from engine.stats.fits import json_safe

    assert record.json_safe is json_safe and not hasattr(record, "_jsonable")
    raw = {
        "exact": np.bool_(True),
        "flags": (np.bool_(False), True),
        "out": Path("/tmp/run") / "audit.json",
        "name": PurePosixPath("data/cohort.csv"),
        "rows": np.int64(600),
        "auc": np.float32(0.5),
        "bad": [float("nan"), np.inf, -np.inf],
        "grid": np.array([[0.0, 0.5], [1.0, np.nan]]),
        3: "key made text",
    }
    safe = json_safe(raw)
    assert json.loads(json.dumps(safe, allow_nan=False)) == {
        "exact": True,
        "flags": [False, True],
        "out": str(Path("/tmp/run") / "audit.json"),
        "name": "data/cohort.csv",
        "rows": 600,
        "auc": 0.5,
        "bad": [None, None, None],
        "grid": [[0.0, 0.5], [1.0, None]],
        "3": "key made text",
    }
    assert safe["exact"] is True and type(safe["rows"]) is int


def test_force_w_and_format_flags_fill_the_renamed_config_fields(tmp_path: Path) -> None:
    """``--w`` sets ``RunConfig.forced_w`` and ``--format`` ``RunConfig.file_format`` (the flags
    and the audit.json ``settings`` keys are unchanged; the former names are gone)."""
    import dataclasses

    from engine.cli import _config_from_args, build_parser

    src = tmp_path / "t.csv"
    ns = build_parser().parse_args(["run", str(src), "--w", "0.35", "--format", "xlsx"])
    config = _config_from_args(ns, src)
    assert (config.forced_w, config.file_format) == (0.35, "xlsx")
    fields = {f.name for f in dataclasses.fields(config)}
    assert {"forced_w", "file_format"} <= fields and not {"w", "fmt"} & fields
    assert not hasattr(config, "w") and not hasattr(config, "fmt")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.forced_w = 0.5  # type: ignore[misc]
    default = _config_from_args(build_parser().parse_args(["run", str(src)]), src)
    assert (default.forced_w, default.file_format) == (None, "csv")
