"""Meta-analysis across sites: fixed effect, DerSimonian-Laird, Hartung-Knapp-Sidik-Jonkman.

``pool`` works on summary numbers (one estimate and SE per study); ``site_estimates`` fits one model
per site with :func:`engine.stats.models.fit_model`; ``run_meta`` is the ``latent-synth meta`` command:
inputs -> per-site estimates -> pooled result(s) -> ``meta.json`` and ``forest.pdf``.

Written by hand (a few lines) because statsmodels' DerSimonian-Laird branch does not truncate τ²
and I² at 0 (PITFALLS, Statistics); ``tests/test_meta.py`` cross-checks it against statsmodels
``combine_effects`` and R metafor's printed output.

References: DerSimonian & Laird (1986) Control Clin Trials 7:177; Hartung & Knapp (2001) Stat Med
20:3875; Sidik & Jonkman (2002) Stat Med 21:3153; Higgins, Thompson & Spiegelhalter (2009) J R
Stat Soc A 172:137 (prediction interval); Viechtbauer (2010) J Stat Softw 36(3) (metafor);
paper METHOD.md section 7.

Example:
    >>> res = pool([0.1, 0.3, 0.2], [0.1, 0.1, 0.1])
    >>> round(res.estimate, 4), res.tau2, res.k
    (0.2, 0.0, 3)
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
from scipy import stats as sps

from engine.errors import InputError
from engine.progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress, sub_progress
from engine.stats.models import Analysis, ModelSpec, Rule, combine_synthetic_copies, fit_model, json_safe

Method = Literal["dl", "fe", "hksj"]
METHOD_NAMES = {
    "dl": "DerSimonian-Laird random effects",
    "fe": "fixed effect (inverse variance)",
    "hksj": "Hartung-Knapp-Sidik-Jonkman random effects",
}
Z95 = float(sps.norm.ppf(0.975))


@dataclass(frozen=True)
class StudyWeight:
    """One study in a pooled result; ``weight`` is its percent share of the pooled estimate."""

    study: str
    estimate: float
    se: float
    weight: float

    @property
    def ci_low(self) -> float:
        """Lower end of the study's 95 % normal CI."""
        return self.estimate - Z95 * self.se

    @property
    def ci_high(self) -> float:
        """Upper end of the study's 95 % normal CI."""
        return self.estimate + Z95 * self.se


@dataclass(frozen=True)
class MetaResult:
    """A pooled estimate with heterogeneity statistics (τ², Q, I² in percent, prediction interval)."""

    method: Method
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    p: float
    tau2: float
    Q: float
    Q_df: int
    Q_p: float
    I2: float
    k: int
    pi_low: float
    pi_high: float
    studies: tuple[StudyWeight, ...]
    t_df: int | None = None

    def to_frame(self) -> pd.DataFrame:
        """One row per study (estimate, se, ci_low, ci_high, weight %)."""
        return pd.DataFrame(
            [
                {
                    "study": s.study,
                    "estimate": s.estimate,
                    "se": s.se,
                    "ci_low": s.ci_low,
                    "ci_high": s.ci_high,
                    "weight": s.weight,
                }
                for s in self.studies
            ]
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``meta.json`` keys of CONTRACTS.md plus extras (p, Q_df, Q_p, prediction interval...)."""
        return json_safe(
            {
                "method": self.method,
                "method_name": METHOD_NAMES[self.method],
                "estimate": self.estimate,
                "se": self.se,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "p": self.p,
                "tau2": self.tau2,
                "Q": self.Q,
                "Q_df": self.Q_df,
                "Q_p": self.Q_p,
                "I2": self.I2,
                "k": self.k,
                "pi_low": self.pi_low,
                "pi_high": self.pi_high,
                "t_df": self.t_df,
                "studies": self.to_frame().to_dict(orient="records"),
            }
        )


def _check_inputs(
    estimates: Sequence[float] | pd.Series,
    ses: Sequence[float] | pd.Series,
    labels: Sequence[str] | pd.Series | None,
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    y, s = np.asarray(estimates, dtype=float), np.asarray(ses, dtype=float)
    names = (
        [str(x) for x in labels]
        if labels is not None
        else [f"study {i + 1}" for i in range(len(y))]
    )
    if y.shape != s.shape or y.ndim != 1 or len(names) != len(y):
        raise InputError(
            "estimates, standard errors and study labels differ in length: give one of each per study"
        )
    if len(y) < 2:
        raise InputError(
            f"a meta-analysis needs at least 2 studies, got {len(y)}: add files or check --by"
        )
    for i, (e, se) in enumerate(zip(y, s, strict=True)):
        if not (math.isfinite(e) and math.isfinite(se) and se > 0):
            raise InputError(
                f"study '{names[i]}': estimate {e} with se {se} is unusable: se must be a positive number"
            )
    return y, s, names


def pool(
    estimates: Sequence[float] | pd.Series,
    ses: Sequence[float] | pd.Series,
    method: Method = "dl",
    labels: Sequence[str] | pd.Series | None = None,
) -> MetaResult:
    """Pool study estimates (e.g. log hazard ratios) by fixed effect, DL or HKSJ.

    * Q = Σ w_k (θ_k − θ_F)², w_k = 1/s_k²; τ²_DL = max(0, (Q − (k−1)) / (Σw − Σw²/Σw));
      I² = max(0, (Q − (k−1))/Q) in percent (equal to metafor's τ²/(τ² + s̃²) for DL).
    * ``"dl"``: weights 1/(s_k² + τ²), normal 95 % CI.
    * ``"hksj"``: the DL estimate with variance q·se_DL², q = Σ w*_k (θ_k − θ_R)²/(k−1), and a
      t_{k−1} CI, as metafor ``rma(method="DL", test="knha")``: q is not truncated at 1 (metafor's
      default); this equals statsmodels' ``var_hksj_re``.
    * Prediction interval (Higgins et al. 2009): θ ± t_{k−2} √(τ² + se²) for k ≥ 3 (NaN below).
      metafor's ``predict`` uses a normal quantile (t_{k−1} with knha) instead; for ``"fe"`` the
      interval is the CI, as in metafor.

    References: DerSimonian & Laird (1986); Hartung & Knapp (2001); Sidik & Jonkman (2002);
    Higgins, Thompson & Spiegelhalter (2009); Viechtbauer (2010).

    Example:
        >>> res = pool([0.0, 1.0], [0.1, 0.1], method="fe", labels=["A", "B"])
        >>> round(res.estimate, 3), [s.weight for s in res.studies]
        (0.5, [50.0, 50.0])
    """
    if method not in METHOD_NAMES:
        raise InputError(f"meta-analysis method '{method}' is unknown: use dl, fe or hksj")
    y, s, names = _check_inputs(estimates, ses, labels)
    k, v = len(y), s**2
    w = 1.0 / v
    theta_f = float(np.sum(w * y) / np.sum(w))
    q_stat = float(np.sum(w * (y - theta_f) ** 2))
    c = float(np.sum(w) - np.sum(w**2) / np.sum(w))
    tau2 = max(0.0, (q_stat - (k - 1)) / c) if c > 0 else 0.0
    i2 = 100.0 * max(0.0, (q_stat - (k - 1)) / q_stat) if q_stat > 0 else 0.0
    weights = w if method == "fe" else 1.0 / (v + tau2)
    est = float(np.sum(weights * y) / np.sum(weights))
    se = float(np.sum(weights) ** -0.5)
    t_df = None
    crit = Z95
    if method == "hksj":
        scale = float(np.sum(weights * (y - est) ** 2) / (k - 1))
        se, t_df = se * math.sqrt(scale), k - 1
        crit = float(sps.t.ppf(0.975, t_df))
    stat = abs(est) / se if se > 0 else math.inf
    p = float(2 * (sps.t.sf(stat, t_df) if t_df else sps.norm.sf(stat)))
    if method == "fe":
        pi = (est - crit * se, est + crit * se)
    elif k >= 3:
        half = float(sps.t.ppf(0.975, k - 2)) * math.sqrt(tau2 + se**2)
        pi = (est - half, est + half)
    else:
        pi = (math.nan, math.nan)
    share = 100.0 * weights / np.sum(weights)
    studies = tuple(
        StudyWeight(n, float(e), float(sd), float(wt))
        for n, e, sd, wt in zip(names, y, s, share, strict=True)
    )
    return MetaResult(
        method,
        est,
        se,
        est - crit * se,
        est + crit * se,
        p,
        tau2,
        q_stat,
        k - 1,
        float(sps.chi2.sf(q_stat, k - 1)),
        i2,
        k,
        pi[0],
        pi[1],
        studies,
        t_df,
    )


def _read_frame(
    path: Path, sheet: str | None = None, missing_codes: Sequence[Any] = ()
) -> pd.DataFrame:
    """Read a table with ``engine.tables.read.read_table``; a plain-pandas fallback while that module is absent."""
    if str(path).lower().startswith(("http:", "https:", "ftp:", "file:")):
        raise InputError(f"{path}: only local files are read: download it first")
    if not Path(path).is_file():
        raise InputError(f"{path}: file not found: check the path")
    read_table: Callable[..., Any] | None
    try:
        from engine.tables.read import read_table
    except ModuleNotFoundError:
        read_table = None
    if read_table is not None:
        return read_table(path, sheet=sheet, missing_codes=tuple(missing_codes)).frame
    if Path(path).suffix.lower() in (".xlsx", ".xls"):
        return pd.read_excel(path, sheet_name=sheet or 0)
    return pd.read_csv(
        path,
        sep=None,
        engine="python",
        encoding="utf-8-sig",
        keep_default_na=False,
        na_values=["", "NA", "NaN", "nan", "."],
    )


SUMMARY_HELP = "give columns study, estimate and se (or ci_low and ci_high)"


def read_summary(path: str | Path, *, sheet: str | None = None) -> pd.DataFrame:
    """Read a summary-level file into columns study, estimate, se (se from a 95 % CI when needed).

    Column names are matched ignoring case and surrounding spaces; se = (ci_high − ci_low)/(2·1.96)
    when no ``se`` column is present (the CI must be on the estimate's scale, e.g. log HR).

    Example:
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "s.csv")
        >>> _ = open(p, "w").write("Study,estimate,ci_low,ci_high\\nA,0.1,-0.292,0.492\\n")
        >>> read_summary(p).round(3).values.tolist()
        [['A', 0.1, 0.2]]
    """
    path = Path(path)
    raw = _read_frame(path, sheet)
    raw = raw.rename(columns={c: str(c).strip().lower() for c in raw.columns})
    has_ci = {"ci_low", "ci_high"} <= set(raw.columns)
    missing = [c for c in ("study", "estimate") if c not in raw.columns]
    if "se" not in raw.columns and not has_ci:
        missing.append("se (or ci_low and ci_high)")
    if missing:
        raise InputError(f"{path.name}: missing column(s) {', '.join(missing)}: {SUMMARY_HELP}")
    out = pd.DataFrame({"study": raw["study"].astype(str).str.strip()})
    out["estimate"] = pd.to_numeric(raw["estimate"], errors="coerce")
    if "se" in raw.columns:
        out["se"] = pd.to_numeric(raw["se"], errors="coerce")
    else:
        lo, hi = (pd.to_numeric(raw[c], errors="coerce") for c in ("ci_low", "ci_high"))
        out["se"] = (hi - lo) / (2 * Z95)
    for i, row in out.iterrows():
        if not (np.isfinite(row["estimate"]) and np.isfinite(row["se"]) and row["se"] > 0):
            raise InputError(
                f"{path.name}: row {int(cast(int, i)) + 2} (study '{row['study']}') has no usable estimate and positive se: fix or delete that row"
            )
    if out["study"].duplicated().any():
        raise InputError(
            f"{path.name}: study '{out['study'][out['study'].duplicated()].iloc[0]}' appears twice: give each study one row"
        )
    return out.reset_index(drop=True)


def site_estimates(
    frames: Mapping[str, pd.DataFrame | Sequence[pd.DataFrame]],
    spec: ModelSpec,
    exposure: str,
    *,
    rule: Rule = "partial",
    progress: ProgressFn = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> pd.DataFrame:
    """Fit ``spec`` per site and return study, estimate, se, n, events of ``exposure`` per ``spec.per``.

    ``exposure`` is added to the covariates when absent; the estimate and se are multiplied by
    ``spec.per[exposure]`` (e.g. log HR per 10 mmHg). A site given as a list of synthetic copies is
    combined first (:func:`engine.stats.models.combine_synthetic_copies`, ``rule``).

    Example:
        >>> from lifelines.datasets import load_rossi
        >>> d = load_rossi()
        >>> spec = ModelSpec("cox", time="week", event="arrest", covariates=("age",), per={"age": 10})
        >>> t = site_estimates({"a": d[d.race == 0], "b": d[d.race == 1]}, spec, "age")
        >>> t.columns.tolist()
        ['study', 'estimate', 'se', 'n', 'events']
    """
    if exposure not in spec.covariates:
        spec = ModelSpec(
            spec.analysis,
            spec.outcome,
            (exposure, *spec.covariates),
            spec.time,
            spec.event,
            spec.per,
        )
    per = (spec.per or {}).get(exposure, 1.0)
    rows = []
    for i, (label, data) in enumerate(frames.items()):
        cancel.raise_if_cancelled()
        progress(i / max(len(frames), 1), f"fitting the {spec.analysis} model for {label}")
        if isinstance(data, pd.DataFrame):
            fit = fit_model(data, spec, source=f"study '{label}'")
        else:
            fit = combine_synthetic_copies(
                [fit_model(d, spec, source=f"study '{label}'") for d in data], rule
            )
        coef = fit.coefficient(exposure)
        rows.append(
            {
                "study": label,
                "estimate": coef.estimate * per,
                "se": coef.se * per,
                "n": fit.n,
                "events": fit.n_events,
            }
        )
    progress(1.0, "site models fitted")
    return pd.DataFrame(rows, columns=["study", "estimate", "se", "n", "events"])


@dataclass(frozen=True)
class MetaConfig:
    """Options of ``latent-synth meta``. Give exactly one of ``files``, ``summary`` or the pair
    ``real_files`` + ``synthetic_files`` (both pooled and drawn side by side)."""

    out: Path
    files: tuple[Path, ...] = ()
    summary: Path | None = None
    real_files: tuple[Path, ...] = ()
    synthetic_files: tuple[Path, ...] = ()
    by: str | None = None
    analysis: Analysis = "cox"
    time: str | None = None
    event: str | None = None
    outcome: str | None = None
    exposure: str | None = None
    adjust: tuple[str, ...] = ()
    per: float | None = None
    method: Method = "dl"
    exponentiate: bool | None = None
    sheet: str | None = None
    missing_codes: tuple[Any, ...] = ()
    include: tuple[str, ...] = ()  # with ``by``: only these groups (empty: all)
    excluded: tuple[str, ...] = ()  # groups left out of every set (e.g. refused releases)

    def spec(self) -> ModelSpec:
        """The per-site model: exposure first, then the adjustment covariates."""
        if not self.exposure:
            raise InputError(
                "individual-level meta-analysis needs --exposure COL: name the exposure column"
            )
        covs = (self.exposure, *[c for c in self.adjust if c != self.exposure])
        return ModelSpec(
            self.analysis,
            self.outcome,
            covs,
            self.time,
            self.event,
            {self.exposure: float(self.per)} if self.per else None,
        )

    def shows_ratio(self) -> bool:
        """Whether estimates are log ratios shown on the exp scale (Cox/logistic, or when asked)."""
        if self.exponentiate is not None:
            return self.exponentiate
        return self.summary is None and self.analysis in ("cox", "logistic")


@dataclass(frozen=True, eq=False)
class MetaRun:
    """What ``run_meta`` computed and wrote. ``primary`` is the synthetic set when real and synthetic are paired."""

    config: MetaConfig
    sets: tuple[tuple[str, MetaResult], ...]
    site_tables: tuple[tuple[str, pd.DataFrame], ...]
    meta_json: Path
    forest_pdf: Path
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def primary(self) -> MetaResult:
        """The result whose keys sit at the top of ``meta.json``."""
        return dict(self.sets).get("synthetic", self.sets[0][1])

    def difference(self) -> dict[str, Any] | None:
        """Pooled synthetic − pooled real (and its exp when shown as ratios); None when not paired."""
        results = dict(self.sets)
        if not {"real", "synthetic"} <= results.keys():
            return None
        d = results["synthetic"].estimate - results["real"].estimate
        out = {
            "estimate": d,
            "in_real_se_units": d / results["real"].se,
            "synthetic_inside_real_ci": results["real"].ci_low
            <= results["synthetic"].estimate
            <= results["real"].ci_high,
        }
        if self.config.shows_ratio():
            out["ratio"] = math.exp(d)
        return out

    def summary_line(self) -> str:
        """One line for the terminal, e.g. 'HR 1.171 (95% CI 1.134 to 1.207), k = 12, I² = 35%'."""
        ratio = self.config.shows_ratio()
        name = (
            {"cox": "HR", "logistic": "OR"}.get(self.config.analysis, "ratio")
            if ratio
            else "estimate"
        )
        if self.config.summary is not None and ratio:
            name = "ratio"

        def one(res: MetaResult) -> str:
            f = (lambda v: f"{math.exp(v):.3f}") if ratio else (lambda v: f"{v:.4g}")
            return (
                f"{name} {f(res.estimate)} (95% CI {f(res.ci_low)} to {f(res.ci_high)}), "
                f"k = {res.k}, I² = {res.I2:.0f}%"
            )

        if len(self.sets) == 1:
            return one(self.sets[0][1])
        return "; ".join(f"{set_name}: {one(res)}" for set_name, res in self.sets)

    def to_dict(self) -> dict[str, Any]:
        """The ``meta.json`` content."""
        cfg = self.config
        doc = self.primary.to_dict()
        doc.update(
            {
                "analysis": cfg.analysis if cfg.summary is None else None,
                "exposure": cfg.exposure,
                "per": cfg.per,
                "adjust": list(cfg.adjust),
                "scale": "log" if cfg.shows_ratio() else "identity",
                "label": effect_label(cfg),
                "notes": list(self.notes),
            }
        )
        if cfg.shows_ratio():
            doc["exp"] = {
                k: math.exp(getattr(self.primary, k))
                if math.isfinite(getattr(self.primary, k))
                else None
                for k in ("estimate", "ci_low", "ci_high", "pi_low", "pi_high")
            }
        if len(self.sets) > 1:
            doc["sets"] = {name: res.to_dict() for name, res in self.sets}
            doc["difference"] = self.difference()
        return json_safe(doc)


def effect_label(cfg: MetaConfig) -> str:
    """The x-axis label in plain words, e.g. 'Hazard ratio per 10 units of sbp'."""
    if cfg.summary is not None:
        return "Ratio (exp of the estimate)" if cfg.shows_ratio() else "Estimate"
    unit = (
        f"per {cfg.per:g} units of {cfg.exposure}"
        if cfg.per and cfg.per != 1
        else f"per unit of {cfg.exposure}"
    )
    name = {"cox": "Hazard ratio", "logistic": "Odds ratio"}.get(
        cfg.analysis, f"Difference in {cfg.outcome}"
    )
    return f"{name} {unit}"


def _file_labels(paths: Sequence[Path]) -> list[str]:
    for make in (lambda p: p.stem, lambda p: f"{p.parent.name}", lambda p: str(p)):
        labels = [make(Path(p)) for p in paths]
        if len(set(labels)) == len(labels) and all(labels):
            return labels
    return [f"file {i + 1}" for i in range(len(paths))]


def _load_sites(paths: Sequence[Path], cfg: MetaConfig) -> dict[str, pd.DataFrame]:
    """One frame per study: one per file; a set of one file with ``cfg.by`` is split by that column.

    With several files each file is one study and ``by`` is not applied (CONTRACTS: ``--by``
    splits *one* file), so per-site synthetic files can be paired with one real file split by site.
    """
    if cfg.by is None or len(paths) > 1:
        return {
            label: _read_frame(Path(path), cfg.sheet, cfg.missing_codes)
            for label, path in zip(_file_labels(paths), paths, strict=True)
        }
    frame = _read_frame(Path(paths[0]), cfg.sheet, cfg.missing_codes)
    if cfg.by not in frame.columns:
        raise InputError(
            f"{Path(paths[0]).name}: column '{cfg.by}' (--by) not found: check the spelling"
        )
    wanted = {_norm_label(x) for x in cfg.include}
    left_out = {_norm_label(x) for x in cfg.excluded}
    return {
        str(value): group.drop(columns=[cfg.by])
        for value, group in frame.groupby(cfg.by, sort=True, dropna=True)
        if (not wanted or _norm_label(str(value)) in wanted)
        and _norm_label(str(value)) not in left_out
    }


def _norm_label(label: str) -> str:
    return re.sub(r"[\s_\-]+", " ", label).strip().casefold()


def _match_labels(real: Sequence[str], synthetic: Sequence[str]) -> list[str]:
    """Synthetic study labels renamed to the real ones they match ('ARIC_F' -> 'ARIC F').

    Matched by label ignoring case, spaces, '_' and '-'; when no label matches and both sets have
    as many studies, by position; otherwise left as they are.
    """
    by_norm = {_norm_label(r): r for r in real}
    matched = [by_norm.get(_norm_label(s)) for s in synthetic]
    if all(m is not None for m in matched) and len(set(matched)) == len(matched):
        return [str(m) for m in matched]
    if not any(matched) and len(real) == len(synthetic):
        return list(real)
    return list(synthetic)


def _check_mode(cfg: MetaConfig) -> list[tuple[str, Sequence[Path]]]:
    """The sets of files to pool: ``studies``, or ``real`` + ``synthetic`` when both are given."""
    modes = sum(
        [bool(cfg.files), cfg.summary is not None, bool(cfg.real_files or cfg.synthetic_files)]
    )
    if modes != 1:
        raise InputError(
            "give either input files, --summary FILE, or real and synthetic files (exactly one of these)"
        )
    if cfg.real_files and cfg.synthetic_files:
        return [("real", cfg.real_files), ("synthetic", cfg.synthetic_files)]
    return [("studies", cfg.files or cfg.real_files or cfg.synthetic_files)]


def run_meta(
    config: MetaConfig, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED
) -> MetaRun:
    """Per-site estimates, pooled result(s), ``meta.json`` and ``forest.pdf`` in ``config.out``.

    Nothing is written until every estimate is computed; both files are written atomically.

    References: paper METHOD.md section 7 (Cox per sub-study, DL across sub-studies, Figure 15).

    Example:
        >>> import tempfile, os
        >>> d = tempfile.mkdtemp(); p = os.path.join(d, "s.csv")
        >>> _ = open(p, "w").write("study,estimate,se\\nA,0.1,0.1\\nB,0.3,0.1\\nC,0.2,0.1\\n")
        >>> run = run_meta(MetaConfig(out=Path(d) / "out", summary=Path(p)))
        >>> round(run.primary.estimate, 3), sorted(os.listdir(Path(d) / "out"))
        (0.2, ['forest.pdf', 'meta.json'])
    """
    from engine.report.forest import forest_pdf_bytes

    if config.method not in METHOD_NAMES:
        raise InputError(f"meta-analysis method '{config.method}' is unknown: use dl, fe or hksj")
    sets, tables = [], []
    if config.summary is not None:
        _check_mode(config)
        progress(0.1, f"reading {Path(config.summary).name}")
        table = read_summary(config.summary, sheet=config.sheet)
        sets.append(
            ("studies", pool(table["estimate"], table["se"], config.method, table["study"]))
        )
        tables.append(("studies", table))
    else:
        groups = _check_mode(config)
        spec = config.spec()
        for j, (name, paths) in enumerate(groups):
            part = sub_progress(progress, 0.85 * j / len(groups), 0.85 * (j + 1) / len(groups))
            part(0.0, f"reading the {name} files")
            sites = _load_sites(paths, config)
            cancel.raise_if_cancelled()
            if name == "synthetic":
                labels = _match_labels([str(x) for x in tables[0][1]["study"]], list(sites))
                sites = dict(zip(labels, sites.values(), strict=True))
            table = site_estimates(
                sites,
                spec,
                spec.covariates[0],
                progress=sub_progress(part, 0.2, 1.0),
                cancel=cancel,
            )
            sets.append((name, pool(table["estimate"], table["se"], config.method, table["study"])))
            tables.append((name, table))
    cancel.raise_if_cancelled()
    progress(0.9, "drawing the forest plot")
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    run = MetaRun(
        config,
        tuple(sets),
        tuple(tables),
        out / "meta.json",
        out / "forest.pdf",
        _notes(config, sets),
    )
    pdf = forest_pdf_bytes(run.sets, exponentiate=config.shows_ratio(), xlabel=effect_label(config))
    cancel.raise_if_cancelled()
    from engine.tables.write import atomic_write_bytes

    atomic_write_bytes(
        run.meta_json, json.dumps(run.to_dict(), indent=2, allow_nan=False).encode("utf-8")
    )
    atomic_write_bytes(run.forest_pdf, pdf)
    progress(1.0, "meta-analysis written")
    return run


def _notes(cfg: MetaConfig, sets: Sequence[tuple[str, MetaResult]]) -> tuple[str, ...]:
    notes = [
        f"{METHOD_NAMES[cfg.method]}; τ² and I² truncated at 0; prediction interval uses t with k-2 df (Higgins et al. 2009)"
    ]
    if cfg.excluded:
        notes.append(
            f"left out of both the real and the synthetic pooling because their release was "
            f"refused: {', '.join(cfg.excluded)}; both sets pool the same studies"
        )
    if len(sets) > 1:
        notes.append(
            "top-level keys describe the synthetic set; 'sets' holds both, 'difference' is synthetic minus real"
        )
    return tuple(notes)
