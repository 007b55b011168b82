"""Meta-analysis across sites: fixed effect, DerSimonian-Laird, Hartung-Knapp-Sidik-Jonkman.

``pool`` works on summary numbers (one estimate and SE per study); ``site_estimates`` fits one model
per site with :func:`engine.stats.models.fit_model`; the file-based job (``latent-synth meta``) is
:func:`engine.pipeline.meta.run_meta`.

Written by hand (a few lines) because statsmodels' DerSimonian-Laird branch does not truncate τ²
and I² at 0 (PITFALLS, Statistics); ``tests/test_meta.py`` cross-checks it against statsmodels
``combine_effects`` and R metafor's printed output.

References: DerSimonian & Laird (1986) Control Clin Trials 7:177; Hartung & Knapp (2001) Stat Med
20:3875; Sidik & Jonkman (2002) Stat Med 21:3153; Higgins, Thompson & Spiegelhalter (2009) J R
Stat Soc A 172:137 (prediction interval); Viechtbauer (2010) J Stat Softw 36(3) (metafor);
paper docs/method.md section 7.

Example:
    >>> res = pool([0.1, 0.3, 0.2], [0.1, 0.1, 0.1])
    >>> round(res.estimate, 4), res.tau2, res.k
    (0.2, 0.0, 3)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
from scipy import stats as sps

from engine.errors import InputError
from engine.progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress
from engine.stats.models import (
    ModelSpec,
    Rule,
    combine_synthetic_copies,
    fit_model,
    json_safe,
)

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
    """A pooled estimate with heterogeneity statistics (τ², Q, I² in percent, prediction
    interval)."""

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
        """The ``meta.json`` keys of docs/contracts.md plus extras (p, Q_df, Q_p, prediction
        interval...)."""
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
            "estimates, standard errors and study labels differ in length: give one of each per "
            "study"
        )
    if len(y) < 2:
        raise InputError(
            f"a meta-analysis needs at least 2 studies, got {len(y)}: add studies, or check the "
            "column that tells the sites apart"
        )
    for i, (e, se) in enumerate(zip(y, s, strict=True)):
        if not (math.isfinite(e) and math.isfinite(se) and se > 0):
            raise InputError(
                f"study '{names[i]}': estimate {e} with se {se} is unusable: se must be a positive "
                "number"
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


def read_frame(
    path: Path, sheet: str | None = None, missing_codes: Sequence[Any] = ()
) -> pd.DataFrame:
    """Read a table with ``engine.files.read.read_table``; a plain-pandas fallback while that
    module is absent."""
    if str(path).lower().startswith(("http:", "https:", "ftp:", "file:")):
        raise InputError(f"{path}: only local files are read: download it first")
    if not Path(path).is_file():
        raise InputError(f"{path}: file not found: check the path")
    read_table: Callable[..., Any] | None
    try:
        from engine.files.read import read_table
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
    return summary_table(read_frame(path, sheet), path.name)


def summary_table(raw: pd.DataFrame, source: str = "summary table") -> pd.DataFrame:
    """:func:`read_summary` for a table already in memory (e.g. typed into the wizard);
    ``source`` names it in messages. Rows are numbered as in a file with a header row.

    Example:
        >>> table = pd.DataFrame({"study": ["A"], "estimate": [0.1], "se": [0.2]})
        >>> summary_table(table).values.tolist()
        [['A', 0.1, 0.2]]
    """
    raw = raw.rename(columns={c: str(c).strip().lower() for c in raw.columns})
    has_ci = {"ci_low", "ci_high"} <= set(raw.columns)
    missing = [c for c in ("study", "estimate") if c not in raw.columns]
    if "se" not in raw.columns and not has_ci:
        missing.append("se (or ci_low and ci_high)")
    if missing:
        raise InputError(f"{source}: missing column(s) {', '.join(missing)}: {SUMMARY_HELP}")
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
                f"{source}: row {int(cast(int, i)) + 2} (study '{row['study']}') has no usable "
                "estimate and positive se: fix or delete that row"
            )
    if out["study"].duplicated().any():
        raise InputError(
            f"{source}: study '{out['study'][out['study'].duplicated()].iloc[0]}' appears twice: "
            "give each study one row"
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
    """Fit ``spec`` per site and return study, estimate, se, n, events of ``exposure`` per
    ``spec.per``.

    ``exposure`` is added to the covariates when absent; the estimate and se are multiplied by
    ``spec.per[exposure]`` (e.g. log HR per 10 mmHg). A site given as a list of synthetic copies is
    combined first (:func:`engine.stats.models.combine_synthetic_copies`, ``rule``).

    Example:
        >>> from lifelines.datasets import load_rossi
        >>> d = load_rossi()
        >>> spec = ModelSpec(
        ...     "cox", time="week", event="arrest", covariates=("age",), per={"age": 10}
        ... )
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
