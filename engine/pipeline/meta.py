"""The file-based meta-analysis job (``latent-synth meta`` and the wizard's meta window):
input files -> per-site estimates -> pooled result(s) -> ``meta.json`` and ``forest.pdf``.

The pooling maths is :mod:`engine.stats.meta`; the forest plot is :mod:`engine.report.forest`.

References: DerSimonian & Laird (1986) Control Clin Trials 7:177; docs/method.md section 7.

Example:
    >>> MetaConfig(out=Path("meta"), summary=Path("s.csv")).method
    'dl'
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from engine.errors import InputError
from engine.progress import NEVER_CANCELLED, CancelToken, ProgressFn, no_progress, sub_progress
from engine.stats.meta import (
    METHOD_NAMES,
    MetaResult,
    Method,
    pool,
    read_frame,
    read_summary,
    site_estimates,
    summary_table,
)
from engine.stats.models import (
    Analysis,
    ModelSpec,
    json_safe,
)


@dataclass(frozen=True)
class MetaConfig:
    """Options of ``latent-synth meta``. Give exactly one kind of input:

    - ``files``: the studies to pool (one file per site, or one file split by ``by``);
    - ``summary``: one row per study with ``study, estimate, se`` (or ``ci_low, ci_high``), as a
      file or as a DataFrame already in memory (the wizard's typed-in table: no temporary file);
    - ``real_files`` and ``synthetic_files`` together: both sets pooled and drawn side by side.

    ``real_files`` (or ``synthetic_files``) given alone means the same as ``files``: it is moved
    there, so ``files`` always holds the studies of a one-set run.
    """

    out: Path
    files: tuple[Path, ...] = ()
    summary: Path | pd.DataFrame | None = None
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

    def __post_init__(self) -> None:
        alone = bool(self.real_files) != bool(self.synthetic_files)
        if alone and not self.files:
            object.__setattr__(self, "files", tuple(self.real_files or self.synthetic_files))
            object.__setattr__(self, "real_files", ())
            object.__setattr__(self, "synthetic_files", ())

    def spec(self) -> ModelSpec:
        """The per-site model: exposure first, then the adjustment covariates."""
        if not self.exposure:
            raise InputError(
                "a meta-analysis of patient-level files needs an exposure: name the column whose "
                "effect is pooled"
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
    """What ``run_meta`` computed and wrote. ``primary`` is the synthetic set when real and
    synthetic are paired."""

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
        """Pooled synthetic − pooled real (and its exp when shown as ratios); None when not
        paired."""
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
            label: read_frame(Path(path), cfg.sheet, cfg.missing_codes)
            for label, path in zip(_file_labels(paths), paths, strict=True)
        }
    frame = read_frame(Path(paths[0]), cfg.sheet, cfg.missing_codes)
    if cfg.by not in frame.columns:
        raise InputError(
            f"{Path(paths[0]).name}: column '{cfg.by}' (the column that tells the sites apart) "
            "not found: check the spelling"
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
    paired = bool(cfg.real_files and cfg.synthetic_files)
    modes = sum(
        [bool(cfg.files), cfg.summary is not None, bool(cfg.real_files or cfg.synthetic_files)]
    )
    if modes != 1:
        raise InputError(
            "give exactly one kind of input: study files, a summary table, or real and "
            "synthetic files"
        )
    if paired:
        return [("real", cfg.real_files), ("synthetic", cfg.synthetic_files)]
    return [("studies", cfg.files)]


def _summary(summary: Path | pd.DataFrame, sheet: str | None) -> pd.DataFrame:
    """The summary table (study, estimate, se) from a file or a DataFrame."""
    if isinstance(summary, pd.DataFrame):
        return summary_table(summary)
    return read_summary(summary, sheet=sheet)


def run_meta(
    config: MetaConfig, progress: ProgressFn = no_progress, cancel: CancelToken = NEVER_CANCELLED
) -> MetaRun:
    """Per-site estimates, pooled result(s), ``meta.json`` and ``forest.pdf`` in ``config.out``.

    Nothing is written until every estimate is computed; both files are written atomically.

    References: docs/method.md section 7 (Cox per sub-study, DL across sub-studies, the
    paper's Figure 15).

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
        source = (
            "the summary table"
            if isinstance(config.summary, pd.DataFrame)
            else Path(config.summary).name
        )
        progress(0.1, f"reading {source}")
        table = _summary(config.summary, config.sheet)
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
    from engine.files.write import atomic_write_bytes

    atomic_write_bytes(
        run.meta_json, json.dumps(run.to_dict(), indent=2, allow_nan=False).encode("utf-8")
    )
    atomic_write_bytes(run.forest_pdf, pdf)
    progress(1.0, "meta-analysis written")
    return run


def _notes(cfg: MetaConfig, sets: Sequence[tuple[str, MetaResult]]) -> tuple[str, ...]:
    notes = [
        f"{METHOD_NAMES[cfg.method]}; τ² and I² truncated at 0; prediction interval uses t with "
        "k-2 df (Higgins et al. 2009)"
    ]
    if cfg.excluded:
        notes.append(
            f"left out of both the real and the synthetic pooling because their release was "
            f"refused: {', '.join(cfg.excluded)}; both sets pool the same studies"
        )
    if len(sets) > 1:
        notes.append(
            "top-level keys describe the synthetic set; 'sets' holds both, 'difference' is "
            "synthetic minus real"
        )
    return tuple(notes)
