"""Logical rules between columns (issue 30): found in the real rows only with 10 rows of
support, written by the user in the same language, and kept in every synthetic row, because the
repair runs inside the decoder that the audit and the release share."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.columns.kinds import ColumnSpec
from engine.columns.rules import Rule, RuleError, RuleSet, broken, parse_rule
from engine.columns.rules_found import find_rules, rule_set
from engine.pipeline import RunConfig
from engine.pipeline.prepare_step import prepare

EXPECTED = {
    "los <= futime",
    "diasbp < sysbp",
    "nodes >= 0",
    "arm determines trt",
    "cause only when status = 1",
}


def rules_table(n: int = 600, seed: int = 1) -> pd.DataFrame:
    """One rule of each kind, true in every row, plus an identifier and a free covariate."""
    rng = np.random.default_rng(seed)
    fu = np.where(rng.random(n) < 0.25, rng.uniform(1, 30, n), rng.gamma(2.0, 300, n)).round() + 1
    los = np.minimum(fu, rng.gamma(1.5, 6, n).round() + 1)
    sys_ = rng.normal(135, 18, n).round()
    dia = np.minimum((sys_ - rng.gamma(4, 10, n)).round(), sys_ - 1)
    status = (rng.random(n) < 0.4).astype(int)
    cause = np.where(status == 1, rng.choice(["cardiac", "cancer", "other"], n), None)
    arm = rng.choice(["control", "drug"], n)
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "futime": fu,
            "los": los,
            "sysbp": sys_,
            "diasbp": dia,
            "status": status,
            "cause": cause,
            "arm": arm,
            "trt": np.where(arm == "drug", 1, 0),
            "nodes": np.maximum(0, rng.poisson(1.2, n) - 1),
            "age": rng.normal(62, 10, n).round(),
        }
    )


@pytest.fixture(scope="module")
def rules_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rules") / "rules.csv"
    rules_table().to_csv(path, index=False)
    return path


def test_each_kind_of_rule_is_found_and_no_accidental_one(rules_csv: Path) -> None:
    prep = prepare(RunConfig(input=rules_csv, time="futime", event="status", seed=1))
    found = {r.text for r in prep.encoder.rules.kept}
    # age < sysbp also holds in every row, but only because pressures are larger numbers
    assert found == EXPECTED
    assert all(r.source == "found" and r.support >= 10 for r in prep.encoder.rules.kept)


def _specs(df: pd.DataFrame, kinds: dict[str, str]) -> list[ColumnSpec]:
    return [ColumnSpec(c, kinds[c], "synthesize", "") for c in df.columns]


def test_a_rule_with_fewer_than_10_supporting_rows_is_never_proposed() -> None:
    rng = np.random.default_rng(0)
    n = 200
    a = rng.normal(0, 1, n)
    b = a + rng.gamma(1, 1, n)
    # the order holds in every row but both values are present in 9 rows only
    a_sparse = np.where(np.arange(n) < 9, a, np.nan)
    df = pd.DataFrame({"a": a_sparse, "b": b})
    assert find_rules(df, _specs(df, {"a": "continuous", "b": "continuous"})) == []
    df = pd.DataFrame({"a": a, "b": b})  # with 200 rows it is proposed
    found = find_rules(df, _specs(df, {"a": "continuous", "b": "continuous"}))
    assert [r.text for r in found] == ["a < b"]
    # a level with 9 rows: "grp determines code" would describe those 9 people
    grp = np.array(["x"] * 100 + ["y"] * 91 + ["z"] * 9)
    code = np.array([1] * 100 + [2] * 91 + [3] * 9)
    df = pd.DataFrame({"grp": grp, "code": code})
    kinds = {"grp": "categorical", "code": "categorical"}
    assert find_rules(df, _specs(df, kinds)) == []
    df = pd.DataFrame({"grp": grp[:191], "code": code[:191]})
    assert [r.text for r in find_rules(df, _specs(df, kinds))] == ["grp determines code"]
    # a value present in 9 rows only: "cause only when dead = 1" would single them out
    dead = np.array([1] * 9 + [0] * 191)
    cause = np.where(dead == 1, "mi", None)
    df = pd.DataFrame({"dead": dead, "cause": cause})
    assert find_rules(df, _specs(df, {"dead": "binary", "cause": "categorical"})) == []
    # 0 in 9 rows only: "count >= 0" is not proposed
    count = np.concatenate([np.zeros(9), rng.integers(1, 5, 191)])
    df = pd.DataFrame({"count": count})
    assert find_rules(df, _specs(df, {"count": "integer"})) == []


def test_the_language_reads_what_a_user_writes() -> None:
    df = rules_table(50)
    assert parse_rule("sysbp > diasbp", df).text == "diasbp < sysbp"
    assert parse_rule("LOS ≤ futime", df).text == "los <= futime"
    assert parse_rule("0 <= nodes", df).text == "nodes >= 0"
    assert parse_rule("arm determines trt", df).mapping == (("control", 0), ("drug", 1))
    rule = parse_rule("cause only when status = 1", df)
    assert rule.kind == "presence" and rule.levels == (1,)
    with pytest.raises(RuleError, match="no column 'weight'"):
        parse_rule("weight > 0", df)
    with pytest.raises(RuleError, match="not understood"):
        parse_rule("sysbp is big", df)


def test_a_user_rule_the_real_rows_break_is_reported_not_used() -> None:
    df = rules_table(300)
    specs = _specs(
        df.drop(columns="id"),
        {
            "futime": "time",
            "los": "integer",
            "sysbp": "integer",
            "diasbp": "integer",
            "status": "event",
            "cause": "categorical",
            "arm": "binary",
            "trt": "binary",
            "nodes": "integer",
            "age": "integer",
        },
    )
    rules = rule_set(df, specs, yours=("age < 70", "age >= 18"), removed=("nodes >= 0",))
    kept = {r.text: r.source for r in rules.kept}
    assert kept["age >= 18"] == "yours" and "age < 70" not in kept
    why = {r.text: reason for r, reason in rules.not_kept}
    n_old = int((df["age"] >= 70).sum())
    assert n_old >= 10 and why["age < 70"] == f"{n_old} real rows break it"
    assert why["nodes >= 0"] == "removed by you"
    few = rule_set(df, specs, yours=(f"age < {df['age'].max() - 0.5:g}",))
    assert [reason for _, reason in few.not_kept] == ["< 10 real rows break it"]


def test_repairs_leave_no_row_breaking_and_stay_in_range() -> None:
    df = rules_table(400)
    rules = RuleSet(
        kept=[parse_rule(t, df) for t in sorted(EXPECTED)], resolution={"diasbp": 1.0}, seed=0
    )
    rng = np.random.default_rng(3)
    noisy = df.copy()
    noisy["los"] = df["los"].to_numpy()[rng.permutation(400)]  # pairs broken at random
    noisy["diasbp"] = df["diasbp"].to_numpy()[rng.permutation(400)]
    noisy["trt"] = rng.integers(0, 2, 400)
    noisy["cause"] = df["cause"].to_numpy()[rng.permutation(400)]
    noisy["nodes"] = noisy["nodes"] - 1
    before = {r.text: int(broken(r, noisy).sum()) for r in rules.kept}
    assert min(before.values()) >= 10, before
    fixed = rules.apply(noisy)
    assert rules.counts(fixed) == dict.fromkeys(before, 0)
    # a swap keeps both columns inside the real ranges
    for col in ("los", "futime", "diasbp", "sysbp"):
        assert fixed[col].between(df[col].min() - 1, df[col].max()).all(), col
    # deaths keep their causes' mix: causes come from synthetic donors, never invented
    assert set(fixed["cause"].dropna()) <= set(df["cause"].dropna())


def test_any_decoded_row_keeps_the_rules(rules_csv: Path) -> None:
    """The decoder repairs every row it returns, whatever the model produced: random model
    rows at the scale of w = 0 to far beyond a trained flow's outputs."""
    prep = prepare(RunConfig(input=rules_csv, time="futime", event="status", seed=2))
    enc, rules = prep.encoder, prep.encoder.rules
    rng = np.random.default_rng(0)
    width = enc.transform(prep.real.head(5), rng).shape[1]
    for scale in (0.5, 1.0, 3.0):
        frame = enc.inverse_transform(rng.normal(0, scale, (2000, width))).frame
        assert rules.counts(frame) == dict.fromkeys(EXPECTED, 0), scale
    enc.rules = None  # without the repair the same draws break the rules not built in
    frame = enc.inverse_transform(rng.normal(0, 1.0, (2000, width))).frame
    counts = rules.counts(frame)
    assert counts["arm determines trt"] > 100 and counts["cause only when status = 1"] > 100
    # the order rules are built in (the later column modelled as its gap): they hold anyway
    assert [(a, b) for a, b, _ in enc.gaps.pairs] == [("los", "futime"), ("diasbp", "sysbp")]
    assert counts["los <= futime"] == counts["diasbp < sysbp"] == 0


def test_built_in_order_brings_back_the_real_ties(rules_csv: Path) -> None:
    """A stay that ends with the follow-up (los = futime) is a tie in 6 % of the real rows;
    modelled as a gap (0 for a tie), the model's own rows decode to ties at that rate, where
    the rows made by a repair would not."""
    prep = prepare(RunConfig(input=rules_csv, time="futime", event="status", seed=2))
    enc, real = prep.encoder, prep.real
    rng = np.random.default_rng(1)
    frame = enc.inverse_transform(enc.transform(real, rng)).frame  # w = 1: each row's own code
    share_real = float((real["los"] == real["futime"]).mean())
    share_synth = float((frame["los"] == frame["futime"]).mean())
    # (a few ties below futime's 10th smallest value are opened by the bound's clip)
    assert share_real > 0.05 and abs(share_synth - share_real) < 0.02


FAST = {"budget": "fast", "repeats": 2, "allow_risky": True, "report": False}


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra",
    [
        {"w_grid": (0.0, 0.5, 0.9), "copies": 2},
        {"forced_w": 0.95, "w_grid": (0.0, 0.5)},
    ],
    ids=["audited-w-two-copies", "forced-high-w"],
)
def test_released_files_keep_every_rule(rules_csv: Path, tmp_path: Path, extra: dict) -> None:
    from engine.pipeline.run import run_pipeline

    cfg = RunConfig(
        input=rules_csv,
        out=tmp_path / "o",
        time="futime",
        event="status",
        seed=5,
        rules=("sysbp >= 60",),
        **FAST,
        **extra,
    )
    result = run_pipeline(cfg)
    assert result.copies, "a file must be released for this test"
    for copy in result.copies:
        assert result.prepared.encoder.rules.counts(copy) == dict.fromkeys(
            EXPECTED | {"sysbp >= 60"}, 0
        )
    record = json.loads((tmp_path / "o" / "audit.json").read_text())["rules"]
    assert {r["rule"] for r in record} == EXPECTED | {"sysbp >= 60"}
    assert all(r["kept"] and r["synthetic_rows_breaking"] == 0 for r in record)
    assert {r["source"] for r in record if r["rule"] == "sysbp >= 60"} == {"yours"}
    written = pd.read_csv(tmp_path / "o" / "synthetic.csv")
    assert (written["los"] <= written["futime"]).all()
    assert (written["diasbp"] < written["sysbp"]).all()
    assert (written["cause"].notna() == (written["status"] == 1)).all()


@pytest.mark.slow
def test_formal_dp_release_keeps_every_rule(tmp_path: Path) -> None:
    """The DP-SGD flow's sampled rows pass through the same repair (complete cases: the
    presence rule goes with the rows whose cause is missing)."""
    from engine.pipeline.run import run_pipeline

    src = tmp_path / "r.csv"
    rules_table(300, seed=4).drop(columns=["cause"]).to_csv(src, index=False)
    bounds = (
        ("futime", 0.0, 3000.0),
        ("los", 0.0, 3000.0),
        ("sysbp", 60.0, 220.0),
        ("diasbp", 30.0, 200.0),
        ("nodes", 0.0, 20.0),
        ("age", 18.0, 100.0),
    )
    cfg = RunConfig(
        input=src,
        out=tmp_path / "o",
        time="futime",
        event="status",
        seed=3,
        dp_epsilon=8.0,
        bounds=bounds,
        w_grid=(0.0, 0.5),
        **FAST,
    )
    result = run_pipeline(cfg)
    assert result.dp_synthetic is not None and len(result.dp_synthetic) == 300
    rules = result.prepared.encoder.rules
    assert {r.text for r in rules.kept} == EXPECTED - {"cause only when status = 1"}
    assert rules.counts(result.dp_synthetic) == dict.fromkeys(
        EXPECTED - {"cause only when status = 1"}, 0
    )
    record = json.loads((tmp_path / "o" / "audit.json").read_text())["rules"]
    assert all(r["synthetic_rows_breaking"] == 0 for r in record)


def test_command_line_rule_that_cannot_be_read_stops_with_one_line(
    rules_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.cli import main

    out = tmp_path / "o"
    code = main(
        [
            "run",
            str(rules_csv),
            "--out",
            str(out),
            "--time",
            "futime",
            "--event",
            "status",
            "--rule",
            "sysbp is higher than diasbp",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert "rules.csv" in err and "sysbp is higher than diasbp" in err and "a <= b" in err
    assert not out.exists()


def test_large_tables_search_a_sample_and_judge_on_every_row(monkeypatch) -> None:
    """Above SEARCH_ROWS the candidates come from a sample; each is judged on all rows, so a
    rule one unsampled row breaks is not proposed."""
    import engine.columns.rules_found as found

    df = rules_table(600).drop(columns="id")
    specs = _specs(
        df,
        {
            "futime": "time",
            "los": "integer",
            "sysbp": "integer",
            "diasbp": "integer",
            "status": "binary",
            "cause": "categorical",
            "arm": "binary",
            "trt": "binary",
            "nodes": "integer",
            "age": "integer",
        },
    )
    whole = [r.text for r in found.find_rules(df, specs)]
    monkeypatch.setattr(found, "SEARCH_ROWS", 200)
    assert [r.text for r in found.find_rules(df, specs)] == whole
    spoilt = df.copy()
    sampled = set(spoilt.sample(200, random_state=0).index)
    row = next(i for i in spoilt.index if i not in sampled)
    spoilt.loc[row, "diasbp"] = spoilt.loc[row, "sysbp"] + 5
    assert "diasbp < sysbp" not in [r.text for r in found.find_rules(spoilt, specs)]


def test_two_dates_keep_their_order(tmp_path: Path) -> None:
    """Admission before discharge: found between two date columns (never between a date and
    a number) and kept in decoded rows, although each date column counts its days from its
    own secret day."""
    rng = np.random.default_rng(0)
    n = 400
    adm = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D")
    dis = adm + pd.to_timedelta(rng.integers(0, 30, n), unit="D")
    src = tmp_path / "stays.csv"
    pd.DataFrame(
        {
            "admitted": adm.strftime("%Y-%m-%d"),
            "discharged": dis.strftime("%Y-%m-%d"),
            "age": rng.normal(60, 10, n).round(),
            "sex": rng.choice(["f", "m"], n),
        }
    ).to_csv(src, index=False)
    prep = prepare(RunConfig(input=src, seed=1))
    assert [r.text for r in prep.encoder.rules.kept] == ["admitted <= discharged"]
    width = prep.encoder.transform(prep.real.head(5), rng).shape[1]
    frame = prep.encoder.inverse_transform(rng.normal(0, 1, (1000, width))).frame
    assert pd.api.types.is_datetime64_any_dtype(frame["admitted"])
    assert int((frame["admitted"] > frame["discharged"]).sum()) == 0


def test_the_dp_section_says_found_rules_are_outside_epsilon() -> None:
    """Formal DP mode keeps the rules found in the real rows; the report says that finding
    them is not covered by epsilon, and says nothing when the user wrote every rule."""
    from types import SimpleNamespace

    from engine.report.layout import register_fonts, styles
    from engine.report.sections.dp import dp_section

    register_fonts()
    df = rules_table(100)
    found = parse_rule("diasbp < sysbp", df)
    found = Rule("order", found.a, found.b, op=found.op, source="found")
    dp = SimpleNamespace(
        guarantee={"statement": "(8, 1e-6)-DP", "notes": []}, file="synthetic_dp.csv"
    )

    def words(rules: RuleSet) -> str:
        result = SimpleNamespace(
            release=SimpleNamespace(dp=dp),
            released=None,
            prepared=SimpleNamespace(encoder=SimpleNamespace(rules=rules)),
        )
        return " ".join(getattr(f, "text", "") for f in dp_section(result, styles(), 400.0))

    said = words(RuleSet(kept=[found])).replace("&lt;", "<")  # (the PDF's markup escapes "<")
    assert "diasbp < sysbp" in said and "not covered by epsilon" in said
    yours = Rule("range", "age", op=">=", value=18.0, source="yours")
    assert "not covered by epsilon" not in words(RuleSet(kept=[yours]))


def test_the_pdf_rules_table_shows_the_record_of_audit_json() -> None:
    """The data page's rules table is the audit.json record: each rule, its origin, the
    synthetic rows breaking it, and why a rule was not kept."""
    from types import SimpleNamespace

    from engine.report.layout import register_fonts, styles
    from engine.report.sections.data import rules_paragraphs

    register_fonts()
    record = [
        {
            "rule": "los <= futime",
            "kind": "order",
            "source": "found",
            "kept": True,
            "why_not": None,
            "synthetic_rows_breaking": 0,
        },
        {
            "rule": "age < 70",
            "kind": "range",
            "source": "yours",
            "kept": False,
            "why_not": "128 real rows break it",
            "synthetic_rows_breaking": None,
        },
    ]
    parts = rules_paragraphs(SimpleNamespace(audit_json={"rules": record}), styles(), 400.0)
    rows = parts[-1]._cellvalues

    def cell(c: object) -> str:
        return str(getattr(c, "text", c))

    assert [[cell(c) for c in r] for r in rows[1:]] == [
        ["los &lt;= futime", "found in the real data", "0"],
        ["age &lt; 70", "written by the user", "not kept: 128 real rows break it"],
    ]
    assert rules_paragraphs(SimpleNamespace(audit_json={"rules": []}), styles(), 400.0) == []
