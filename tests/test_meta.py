"""Meta-analysis: pooled numbers against R metafor and statsmodels, inputs, outputs, errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.meta_analysis import combine_effects

from engine.errors import Cancelled, InputError
from engine.pipeline.meta import MetaConfig, run_meta
from engine.progress import CancelToken
from engine.stats.meta import pool, read_summary, site_estimates
from engine.stats.models import ModelSpec

# BCG vaccine trials, metafor `dat.bcg` (Colditz et al. 1994, JAMA 271:698): tpos, tneg, cpos, cneg
# of the 13 trials as listed in metafor's documentation (?dat.bcg).
BCG = np.array(
    [
        [4, 119, 11, 128],
        [6, 300, 29, 274],
        [3, 228, 11, 209],
        [62, 13536, 248, 12619],
        [33, 5036, 47, 5761],
        [180, 1361, 372, 1079],
        [8, 2537, 10, 619],
        [505, 87886, 499, 87892],
        [29, 7470, 45, 7232],
        [17, 1699, 65, 1600],
        [186, 50448, 141, 27197],
        [5, 2493, 3, 2338],
        [27, 16886, 29, 17825],
    ],
    dtype=float,
)

# Teacher expectancy data, metafor `dat.raudenbush1985` (Raudenbush 1984; Cooper, Hedges &
# Valentine 2009, ch. 16): yi and vi as stored in metadat (vi to 4 decimals).
RAUD_YI = [
    0.03,
    0.12,
    -0.14,
    1.18,
    0.26,
    -0.06,
    -0.02,
    -0.32,
    0.27,
    0.80,
    0.54,
    0.18,
    -0.02,
    0.23,
    -0.18,
    -0.06,
    0.30,
    0.07,
    -0.07,
]
RAUD_VI = [
    0.0156,
    0.0216,
    0.0279,
    0.1391,
    0.1362,
    0.0106,
    0.0106,
    0.0484,
    0.0269,
    0.0630,
    0.0912,
    0.0497,
    0.0835,
    0.0841,
    0.0253,
    0.0279,
    0.0193,
    0.0088,
    0.0303,
]


def bcg_log_rr() -> tuple[np.ndarray, np.ndarray]:
    """metafor escalc(measure="RR"): yi = log((a/(a+b))/(c/(c+d))),
    vi = 1/a - 1/(a+b) + 1/c - 1/(c+d)."""
    a, b, c, d = BCG.T
    return np.log((a / (a + b)) / (c / (c + d))), 1 / a - 1 / (a + b) + 1 / c - 1 / (c + d)


def r4(x: float) -> float:
    return round(float(x), 4)


def test_dl_matches_metafor_on_bcg() -> None:
    # R metafor: res <- rma(yi, vi, method="DL",
    #   data=escalc("RR", ai=tpos, bi=tneg, ci=cpos, di=cneg, data=dat.bcg))
    # printed: estimate -0.7141, se 0.1787, ci -1.0644 .. -0.3638, zval -3.9952, tau^2 0.3088,
    # Q(df = 12) = 152.2330, I^2 = 92.12% (92.1173). Source: metafor's own test
    # tests/testthat/test_misc_rma_vs_metan_with_dat.bcg.r (checked against Stata metan) and the
    # rma.uni output for dat.bcg with method="DL".
    yi, vi = bcg_log_rr()
    res = pool(yi, np.sqrt(vi), "dl")
    assert (r4(res.estimate), r4(res.se), r4(res.tau2), r4(res.Q)) == (
        -0.7141,
        0.1787,
        0.3088,
        152.2330,
    )
    assert (r4(res.ci_low), r4(res.ci_high), r4(res.estimate / res.se)) == (
        -1.0644,
        -0.3638,
        -3.9952,
    )
    assert r4(res.I2) == 92.1173 and res.Q_df == 12 and res.k == 13
    assert res.Q_p < 1e-4
    # same pooled numbers from statsmodels' DL branch (tau^2 > 0 here, so truncation does not
    # matter)
    sm = combine_effects(yi, vi, method_re="dl")
    assert res.estimate == pytest.approx(sm.mean_effect_re, abs=1e-12)
    assert res.se == pytest.approx(math.sqrt(sm.var_eff_w_re), abs=1e-12)
    assert res.tau2 == pytest.approx(sm.tau2, abs=1e-12)


def test_fe_matches_metafor_on_bcg() -> None:
    # same metafor test file, rma(yi, vi, method="FE"): -0.4303 (-0.5097 .. -0.3509), z -10.6247
    yi, vi = bcg_log_rr()
    res = pool(yi, np.sqrt(vi), "fe")
    assert (r4(res.estimate), r4(res.ci_low), r4(res.ci_high), r4(res.estimate / res.se)) == (
        -0.4303,
        -0.5097,
        -0.3509,
        -10.6247,
    )
    assert r4(res.Q) == 152.2330
    assert res.pi_low == res.ci_low and res.pi_high == res.ci_high


def test_dl_and_knha_match_metafor_on_raudenbush() -> None:
    # metafor tests/testthat/test_analysis_example_raudenbush2009.r (Cooper, Hedges & Valentine
    # 2009, Table 16.3, p. 309): FE mu 0.0604, QE 35.8295, z 1.6553; DL tau2 0.0259, mu 0.0893,
    # se 0.0558, z 1.6009, ci -0.0200 .. 0.1987; rma(method="DL", test="knha"): se 0.0636,
    # t 1.4050, ci -0.0442 .. 0.2229.
    se = np.sqrt(RAUD_VI)
    fe = pool(RAUD_YI, se, "fe")
    assert (r4(fe.estimate), r4(fe.Q), r4(fe.estimate / fe.se)) == (0.0604, 35.8295, 1.6553)
    dl = pool(RAUD_YI, se, "dl")
    assert (r4(dl.tau2), r4(dl.estimate), r4(dl.se), r4(dl.estimate / dl.se)) == (
        0.0259,
        0.0893,
        0.0558,
        1.6009,
    )
    assert (r4(dl.ci_low), r4(dl.ci_high)) == (-0.0200, 0.1987)
    hk = pool(RAUD_YI, se, "hksj")
    assert (r4(hk.tau2), r4(hk.estimate), r4(hk.se), r4(hk.estimate / hk.se)) == (
        0.0259,
        0.0893,
        0.0636,
        1.4050,
    )
    assert (r4(hk.ci_low), r4(hk.ci_high)) == (-0.0442, 0.2229) and hk.t_df == 18


def test_hksj_matches_statsmodels_on_bcg() -> None:
    # metafor's printed knha numbers for dat.bcg with DL are not in its docs; statsmodels'
    # combine_effects(method_re="dl") "random effect wls" row is the same Hartung-Knapp estimator
    # (untruncated scale, t_{k-1}), so it is the reference here: se 0.1807, ci -1.1078 .. -0.3204.
    yi, vi = bcg_log_rr()
    res = pool(yi, np.sqrt(vi), "hksj")
    sm = combine_effects(yi, vi, method_re="dl", use_t=True)
    _, _, _, ci_wls = sm.conf_int(use_t=True)
    assert res.se == pytest.approx(math.sqrt(sm.var_hksj_re), abs=1e-12)
    assert res.ci_low == pytest.approx(ci_wls[0], abs=1e-10) and res.ci_high == pytest.approx(
        ci_wls[1], abs=1e-10
    )
    assert (r4(res.se), r4(res.ci_low), r4(res.ci_high)) == (0.1807, -1.1078, -0.3204)


def test_prediction_interval_uses_t_k_minus_2() -> None:
    yi, vi = bcg_log_rr()
    res = pool(yi, np.sqrt(vi), "dl")
    from scipy.stats import t

    half = t.ppf(0.975, 11) * math.sqrt(res.tau2 + res.se**2)
    assert res.pi_low == pytest.approx(res.estimate - half) and res.pi_high == pytest.approx(
        res.estimate + half
    )
    two = pool([0.1, 0.2], [0.1, 0.1])
    assert math.isnan(two.pi_low) and two.to_dict()["pi_low"] is None


def test_tau2_and_i2_are_zero_not_negative_on_homogeneous_studies() -> None:
    est, se = [0.50, 0.51, 0.49, 0.50, 0.505], [0.1, 0.12, 0.09, 0.11, 0.1]
    res = pool(est, se, "dl")
    assert res.Q < res.Q_df  # method of moments would give a negative tau^2 here
    assert res.tau2 == 0.0 and res.I2 == 0.0
    fe = pool(est, se, "fe")
    assert res.estimate == pytest.approx(fe.estimate) and res.se == pytest.approx(fe.se)


def test_weights_are_percent_and_sum_to_100() -> None:
    yi, vi = bcg_log_rr()
    for method in ("fe", "dl", "hksj"):
        w = [s.weight for s in pool(yi, np.sqrt(vi), method).studies]
        assert sum(w) == pytest.approx(100.0)


@pytest.mark.parametrize(
    "est,se,msg",
    [
        ([0.1], [0.1], "at least 2"),
        ([0.1, 0.2], [0.1, 0.0], "se must be"),
        ([0.1, np.nan], [0.1, 0.1], "unusable"),
    ],
)
def test_pool_rejects_bad_input(est: list, se: list, msg: str) -> None:
    with pytest.raises(InputError, match=msg):
        pool(est, se)


def test_read_summary_from_ci_and_errors(tmp_path: Path) -> None:
    p = tmp_path / "sites.csv"
    p.write_text(
        "Study , Estimate,ci_low,ci_high\nA,0.1,-0.0960,0.2960\nB,0.2,0.0040,0.3960\n",
        encoding="utf-8",
    )
    table = read_summary(p)
    assert table["se"].round(4).tolist() == [0.1, 0.1]
    bad = tmp_path / "bad.csv"
    bad.write_text("study,estimate\nA,0.1\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"bad.csv: missing column\(s\) se \(or ci_low and ci_high\)"
    ):
        read_summary(bad)
    blank = tmp_path / "blank.csv"
    blank.write_text("study,estimate,se\nA,0.1,0.1\nB,,0.1\n", encoding="utf-8")
    with pytest.raises(InputError, match="row 3"):
        read_summary(blank)
    with pytest.raises(InputError, match="file not found"):
        read_summary(tmp_path / "nope.csv")


def test_run_meta_summary_writes_contract_keys(tmp_path: Path) -> None:
    yi, vi = bcg_log_rr()
    pd.DataFrame(
        {"study": [f"trial {i + 1}" for i in range(13)], "estimate": yi, "se": np.sqrt(vi)}
    ).to_csv(tmp_path / "bcg.csv", index=False)
    run = run_meta(
        MetaConfig(out=tmp_path / "out", summary=tmp_path / "bcg.csv", exponentiate=True)
    )
    doc = json.loads((tmp_path / "out" / "meta.json").read_text())
    for key in ("method", "estimate", "se", "ci_low", "ci_high", "tau2", "Q", "I2", "k", "studies"):
        assert key in doc
    assert doc["method"] == "dl" and doc["k"] == 13 and r4(doc["estimate"]) == -0.7141
    assert set(doc["studies"][0]) >= {"study", "estimate", "se", "weight"}
    assert doc["exp"]["estimate"] == pytest.approx(math.exp(run.primary.estimate))
    assert (tmp_path / "out" / "forest.pdf").read_bytes()[:5] == b"%PDF-"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "forest.pdf",
        "meta.json",
    ]  # no temp files


def _cohort(rng: np.random.Generator, n: int, beta: float, site: str) -> pd.DataFrame:
    sbp = rng.normal(125, 18, n)
    age = rng.normal(55, 8, n)
    hazard = 0.02 * np.exp(beta * (sbp - 125) / 10 + 0.03 * (age - 55))
    t_event = rng.exponential(1 / hazard)
    t_cens = rng.uniform(5, 25, n)
    return pd.DataFrame(
        {
            "site": site,
            "sbp": sbp.round(1),
            "age": age.round(1),
            "time": np.minimum(t_event, t_cens).round(3),
            "cvd": (t_event <= t_cens).astype(int),
        }
    )


def test_site_estimates_scale_by_per() -> None:
    rng = np.random.default_rng(3)
    frames = {s: _cohort(rng, 300, 0.15, s) for s in ("a", "b")}
    base = ModelSpec("cox", time="time", event="cvd", covariates=("age",))
    one = site_estimates(frames, base, "sbp")
    ten = site_estimates(
        frames,
        ModelSpec("cox", time="time", event="cvd", covariates=("age",), per={"sbp": 10}),
        "sbp",
    )
    assert np.allclose(ten["estimate"], 10 * one["estimate"]) and np.allclose(
        ten["se"], 10 * one["se"]
    )
    assert ten["study"].tolist() == ["a", "b"] and (ten["n"] == 300).all()


def test_run_meta_paired_by_column(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    real = pd.concat([_cohort(rng, 250, 0.16, s) for s in ("ARIC F", "ARIC M", "CHS F", "CHS M")])
    synth = real.copy()
    synth["sbp"] = (synth["sbp"] + rng.normal(0, 3, len(synth))).round(1)
    real.to_csv(tmp_path / "real.csv", index=False)
    synth.to_csv(tmp_path / "synthetic.csv", index=False)
    seen: list[float] = []
    cfg = MetaConfig(
        out=tmp_path / "meta",
        real_files=(tmp_path / "real.csv",),
        synthetic_files=(tmp_path / "synthetic.csv",),
        by="site",
        analysis="cox",
        time="time",
        event="cvd",
        exposure="sbp",
        adjust=("age",),
        per=10,
    )
    run = run_meta(cfg, progress=lambda f, _t: seen.append(f))
    doc = json.loads(run.meta_json.read_text())
    assert set(doc["sets"]) == {"real", "synthetic"} and doc["k"] == 4
    assert [s["study"] for s in doc["studies"]] == ["ARIC F", "ARIC M", "CHS F", "CHS M"]
    diff = doc["sets"]["synthetic"]["estimate"] - doc["sets"]["real"]["estimate"]
    assert doc["difference"]["estimate"] == pytest.approx(diff)
    assert doc["estimate"] == doc["sets"]["synthetic"]["estimate"]
    assert doc["label"] == "Hazard ratio per 10 units of sbp" and doc["scale"] == "log"
    assert seen == sorted(seen) and seen[-1] == 1.0
    assert run.forest_pdf.read_bytes()[:5] == b"%PDF-"


def test_run_meta_errors_and_cancel(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    for s in ("x", "y"):
        _cohort(rng, 120, 0.1, s).to_csv(tmp_path / f"{s}.csv", index=False)
    files = (tmp_path / "x.csv", tmp_path / "y.csv")
    base = dict(out=tmp_path / "out", files=files, time="time", event="cvd")
    with pytest.raises(InputError, match="needs an exposure") as refused:
        run_meta(MetaConfig(**base))
    assert "--" not in str(refused.value)  # shown as it is in the wizard's meta window
    with pytest.raises(InputError, match="column 'bp' not found"):
        run_meta(MetaConfig(**base, exposure="bp"))
    with pytest.raises(InputError, match="exactly one"):
        run_meta(MetaConfig(**base, exposure="sbp", summary=tmp_path / "x.csv"))
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        run_meta(MetaConfig(**base, exposure="sbp"), cancel=token)
    assert not (tmp_path / "out").exists()
    run = run_meta(MetaConfig(**base, exposure="sbp", method="hksj"))
    assert [s.study for s in run.primary.studies] == ["x", "y"] and run.primary.t_df == 1


def test_run_meta_pairs_one_real_file_with_per_site_synthetic_folders(tmp_path: Path) -> None:
    # the layout of `latent-synth demo --all`: DIR/<study>/synthetic.csv next to one real file
    # split --by
    rng = np.random.default_rng(4)
    studies = ["CHS M", "ARIC F", "ARIC M"]  # not sorted: pairing must follow labels, not position
    real = pd.concat([_cohort(rng, 200, 0.15, s) for s in studies])
    real.to_csv(tmp_path / "cohort.csv", index=False)
    synth_files = []
    for s in studies:
        folder = tmp_path / s.replace(" ", "_")
        folder.mkdir()
        part = real[real["site"] == s].drop(columns=["site"])
        part.assign(sbp=part["sbp"] + 1.0).to_csv(folder / "synthetic.csv", index=False)
        synth_files.append(folder / "synthetic.csv")
    cfg = MetaConfig(
        out=tmp_path / "meta",
        real_files=(tmp_path / "cohort.csv",),
        synthetic_files=tuple(synth_files),
        by="site",
        time="time",
        event="cvd",
        exposure="sbp",
        per=10.0,
    )
    run = run_meta(cfg)
    real_res, syn_res = dict(run.sets)["real"], dict(run.sets)["synthetic"]
    assert [s.study for s in real_res.studies] == ["ARIC F", "ARIC M", "CHS M"]
    assert [s.study for s in syn_res.studies] == ["CHS M", "ARIC F", "ARIC M"]
    # shifting sbp leaves each site's Cox slope unchanged: the synthetic study matches its real
    # study
    for s in syn_res.studies:
        twin = next(r for r in real_res.studies if r.study == s.study)
        assert s.estimate == pytest.approx(twin.estimate, abs=1e-6)
    assert run.difference()["synthetic_inside_real_ci"] is True
    assert run.summary_line().startswith("real: HR ")


def test_run_meta_real_files_alone_is_one_set(tmp_path: Path) -> None:
    # the CLI passes plain `meta FILE FILE` as real_files with no synthetic files
    rng = np.random.default_rng(2)
    paths = []
    for s in ("a", "b", "c"):
        _cohort(rng, 150, 0.1, s).to_csv(tmp_path / f"{s}.csv", index=False)
        paths.append(tmp_path / f"{s}.csv")
    run = run_meta(
        MetaConfig(
            out=tmp_path / "o",
            real_files=tuple(paths),
            time="time",
            event="cvd",
            exposure="sbp",
            per=1.0,
        )
    )
    doc = json.loads(run.meta_json.read_text())
    assert "sets" not in doc and doc["k"] == 3 and doc["label"] == "Hazard ratio per unit of sbp"
    assert run.summary_line().startswith("HR ") and "k = 3" in run.summary_line()


def test_summary_as_a_dataframe_pools_like_the_same_file(tmp_path: Path) -> None:
    """The wizard hands its typed-in table over in memory: same pooled numbers as from a file,
    no summary file written anywhere, and a bad row is named by its row number."""
    frame = pd.DataFrame(
        {"study": ["A", "B", "C"], "estimate": [0.10, 0.30, 0.22], "se": [0.10, 0.12, 0.09]}
    )
    frame.to_csv(tmp_path / "s.csv", index=False)
    from_file = run_meta(MetaConfig(out=tmp_path / "f", summary=tmp_path / "s.csv"))
    in_memory = run_meta(MetaConfig(out=tmp_path / "m", summary=frame))
    assert in_memory.primary.estimate == pytest.approx(from_file.primary.estimate, abs=1e-12)
    assert in_memory.primary.tau2 == pytest.approx(from_file.primary.tau2, abs=1e-12)
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["forest.pdf", "meta.json"]
    bad = frame.assign(se=[0.1, -0.2, 0.09])
    with pytest.raises(InputError, match="summary table: row 3 .study 'B'."):
        run_meta(MetaConfig(out=tmp_path / "b", summary=bad))


def test_real_files_alone_are_the_studies_and_a_lone_side_with_files_is_refused(
    tmp_path: Path,
) -> None:
    files = (tmp_path / "x.csv", tmp_path / "y.csv")
    alone = MetaConfig(out=tmp_path, real_files=files)
    assert alone.files == files and alone.real_files == () and alone.synthetic_files == ()
    paired = MetaConfig(out=tmp_path, real_files=files[:1], synthetic_files=files[1:])
    assert paired.files == () and paired.real_files == files[:1]
    with pytest.raises(InputError, match="exactly one kind of input"):
        run_meta(MetaConfig(out=tmp_path, files=files, real_files=files[:1], exposure="sbp"))


# --- DerSimonian-Laird pooling, by hand (docs/mutation.md) ----------------------------------------


def test_pool_dl_fe_and_hksj_by_hand() -> None:
    """y = (0, 1, 3), s = (0.5, 1, 1): w = (4, 1, 1), theta_F = 2/3, Q = 22/3, c = 6 - 18/6 = 3,
    tau2 = (22/3 - 2)/3 = 16/9, I2 = 100 (16/3)/(22/3) = 800/11 %; DL weights 1/(s^2 + 16/9)."""
    import math

    from scipy import stats

    from engine.stats.meta import pool

    y, s = [0.0, 1.0, 3.0], [0.5, 1.0, 1.0]
    fe = pool(y, s, method="fe", labels=["A", "B", "C"])
    assert fe.estimate == pytest.approx(2 / 3, abs=1e-12)
    assert fe.se == pytest.approx(1 / math.sqrt(6), abs=1e-12)
    assert (fe.Q, fe.Q_df, fe.Q_p) == pytest.approx((22 / 3, 2, math.exp(-11 / 3)), abs=1e-12)
    assert (fe.tau2, fe.I2, fe.k) == pytest.approx((16 / 9, 800 / 11, 3), abs=1e-12)
    assert (fe.pi_low, fe.pi_high) == pytest.approx((fe.ci_low, fe.ci_high), abs=1e-12)
    assert [x.weight for x in fe.studies] == pytest.approx([400 / 6, 100 / 6, 100 / 6], abs=1e-9)
    assert [x.study for x in fe.studies] == ["A", "B", "C"]

    dl = pool(y, s)
    wr = np.array([1 / (0.25 + 16 / 9), 1 / (1 + 16 / 9), 1 / (1 + 16 / 9)])
    est, se = float(wr @ y / wr.sum()), float(wr.sum() ** -0.5)
    z = float(stats.norm.ppf(0.975))
    assert (dl.method, dl.estimate, dl.se) == (
        "dl",
        pytest.approx(est, abs=1e-12),
        pytest.approx(se, abs=1e-12),
    )
    assert (dl.ci_low, dl.ci_high) == pytest.approx((est - z * se, est + z * se), abs=1e-12)
    assert dl.p == pytest.approx(2 * stats.norm.sf(est / se), abs=1e-12)
    half = float(stats.t.ppf(0.975, 1)) * math.sqrt(16 / 9 + se**2)
    assert (dl.pi_low, dl.pi_high) == pytest.approx((est - half, est + half), abs=1e-9)
    assert [x.weight for x in dl.studies] == pytest.approx(list(100 * wr / wr.sum()), abs=1e-9)
    assert dl.studies[0].study == "study 1" and dl.t_df is None

    hk = pool(y, s, method="hksj")
    q = float(wr @ (np.array(y) - est) ** 2 / 2)
    t2 = float(stats.t.ppf(0.975, 2))
    assert (hk.estimate, hk.se, hk.t_df) == pytest.approx((est, se * math.sqrt(q), 2), abs=1e-12)
    assert hk.ci_low == pytest.approx(est - t2 * se * math.sqrt(q), abs=1e-12)
    assert hk.p == pytest.approx(2 * stats.t.sf(est / (se * math.sqrt(q)), 2), abs=1e-12)


def test_pool_two_homogeneous_studies_by_hand() -> None:
    """y = (1, 1.1), s = (1, 1): Q = 0.005 < k - 1, so tau2 = 0 and I2 = 0, DL equals FE; with
    two studies there is no prediction interval; a negative pooled estimate gives the same p."""
    import math

    from engine.errors import InputError
    from engine.stats.meta import pool

    dl = pool([1.0, 1.1], [1.0, 1.0])
    assert (dl.tau2, dl.I2, dl.Q) == pytest.approx((0.0, 0.0, 0.005), abs=1e-12)
    assert dl.estimate == pytest.approx(1.05) and dl.se == pytest.approx(1 / math.sqrt(2))
    assert math.isnan(dl.pi_low) and math.isnan(dl.pi_high)
    assert pool([-1.0, -1.1], [1.0, 1.0]).p == pytest.approx(dl.p, abs=1e-12)
    same = pool([2.0, 2.0], [1.0, 1.0])
    assert (same.Q, same.I2, same.tau2) == (0.0, 0.0, 0.0)
    with pytest.raises(InputError, match="method 'x' is unknown: use dl, fe or hksj"):
        pool([1.0, 2.0], [1.0, 1.0], method="x")  # type: ignore[arg-type]


def test_pool_with_large_standard_errors_and_identical_estimates() -> None:
    """s = (10, 10): c = 0.01 (below 1), y = (0, 100): Q = 50, tau2 = 49 / 0.01 = 4900. HKSJ on
    identical estimates: q = 0, so se = 0 and the p-value is 0, not a division error."""
    from engine.stats.meta import pool

    assert pool([0.0, 100.0], [10.0, 10.0]).tau2 == pytest.approx(4900.0, rel=1e-12)
    flat = pool([2.0, 2.0], [1.0, 1.0], method="hksj")
    assert (flat.se, flat.p) == (0.0, 0.0)
