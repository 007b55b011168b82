"""The report's privacy, utility and method sections (layout helpers live in :mod:`engine.report.layout`).

Each builder takes the run result, the paragraph styles and the frame width and returns
flowables; :func:`engine.report.layout.guarded` turns a failure into a sentence. Figures come from
:mod:`engine.report.figures` (raster, aggregated), suppression rules from :mod:`engine.report.data`.

References:
    Shen & Tian (2025) sections 2.3.3, 3.1.1 and 4.3 (audit), Figures 11 and 14; Karr et al. (2006)
    (CI overlap); van Breugel et al. (2023) (density attack); METHOD.md sections 5, 6 and 10.

Example:
    >>> from types import SimpleNamespace
    >>> from engine.report.layout import styles
    >>> flow = utility_section(SimpleNamespace(synthetic=None, verdict="refused"), styles(), 480.0)
    >>> "No synthetic table" in flow[1].text
    True
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from engine.disclosure import NOT_SHOWN_GROUP
from engine.report import figures as figs
from engine.report.data import (
    NOT_AVAILABLE,
    THRESHOLD,
    box_stats,
    finite,
    fmt,
    km_curves,
    level_shares,
    low_fpr_tpr,
    pick,
    roc_on_grid,
    safe_count,
)
from engine.report.layout import image, table, text
from engine.report.wording import METHOD_PARAGRAPHS, REFERENCES, epsilon_paragraphs, threat_model

NUMERIC_KINDS = ("continuous", "integer", "time")
LEVEL_KINDS = ("binary", "categorical", "event")


def _p(body: str, st: dict[str, Any], style: str = "body") -> Any:
    from reportlab.platypus import Paragraph

    return Paragraph(body, st[style])


def _side_by_side(left: Any, right: list[Any], width: float, split: float = 0.52) -> Any:
    """A figure on the left, explanatory paragraphs on the right."""
    from reportlab.platypus import Table, TableStyle

    t = Table([[left, right]], colWidths=[split * width, (1 - split) * width], hAlign="LEFT")
    t.setStyle(
        TableStyle(
            [
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ("LEFTPADDING", (0, 0), (0, 0), 0),
                ("RIGHTPADDING", (0, 0), (0, 0), 10),
                ("LEFTPADDING", (1, 0), (1, 0), 4),
            ]
        )
    )
    return t


def _figure(make: Any, width: float, st: dict[str, Any]) -> Any:
    """A figure flowable, or a sentence saying why it is missing."""
    try:
        return image(make(), width)
    except Exception as err:  # noqa: BLE001 - one missing figure must not sink the report
        return _p(f"(figure not available: {text(type(err).__name__)})", st, "small")


# ------------------------------------------------------------------------------ privacy


def non_members(result: Any) -> int | None:
    """Size of the audit's holdout (non-member) part: stored, or 20 % of the rows used."""
    audit = pick(result, "audit")
    n = pick(audit, "n_holdout") or pick(audit, "holdout_rows")
    if n is not None:
        return int(n)
    used = audited_rows(result)
    if used is None:
        return None
    return int(round(float(pick(audit, "holdout_fraction", default=0.2)) * used))


def audited_rows(result: Any) -> int | None:
    """Rows the audit ran on: all rows used, or the random subsample for a large table."""
    try:
        used = len(pick(result, "prepared", "real"))
    except TypeError:
        return None
    cap = pick(result, "config", "audit_max_rows")
    return min(used, int(cap)) if isinstance(cap, int) else used


def curve_rows(audit: Any) -> list[tuple[float, float, float, float, float]]:
    """(w, distance AUC, SE, density AUC, SE) per curve point, NaN where missing."""
    nan = float("nan")
    out = []
    for p in pick(audit, "curve", default=()) or ():
        vals = [finite(pick(p, k)) for k in ("w", "auc", "auc_se", "density_auc", "density_auc_se")]
        out.append(
            cast(
                "tuple[float, float, float, float, float]",
                tuple(nan if v is None else v for v in vals),
            )
        )
    return sorted(out, key=lambda r: r[0])


def audit_precision_sentences(audit: Any, w: Any) -> list[str]:
    """Which attack decided (mean ± SE), whether the audit covered every copy, and whether the
    AUCs' standard error reached the 0.01 target at every w.

    Example:
        >>> audit_precision_sentences(None, 0.5)
        []
    """
    if audit is None or not hasattr(audit, "binding"):
        return []
    out = []
    binding = audit.binding(None if w is None else float(w))
    if binding is not None:
        where = "At the released w" if w is not None else "At the smallest w that failed the limit"
        out.append(
            f"{where} (w = {binding.w:.2f}) the deciding attack was the {text(binding.quote(audit.threshold))}; "
            "the other attack scored lower."
        )
    copies = int(getattr(audit, "copies", 1) or 1)
    if copies > 1:
        out.append(
            f"Each record is released {copies} times. The audit attacked the union of all {copies} "
            "copies (the distance attack took the closest of all of them, the density attack saw all "
            f"of them), so the chosen w is the one that is safe for {copies} copies."
        )
    short = [p for p in audit.curve if not p.se_target_met]
    if short:
        worst = max(max(p.auc_se, p.density_auc_se) for p in short)
        out.append(
            f"Precision: the target standard error of 0.01 was not reached at {len(short)} of "
            f"{len(audit.curve)} tested w within the repeat limit (largest standard error "
            f"{worst:.3f}); the selection rule adds one standard error, so a wider margin only "
            "makes it stricter."
        )
    else:
        out.append(
            "Precision: at every tested w both attacks' AUC has a standard error below 0.01."
        )
    return out


def privacy_section(result: Any, st: dict[str, Any], width: float) -> list[Any]:
    """AUC vs w, TPR at low FPR, ROC, distances, per-record risk, ε and the threat model."""
    from engine.report.wording import risk_sentence

    audit, release = pick(result, "audit"), pick(result, "release", default={}) or {}
    w = pick(release, "w")
    limit = (
        pick(audit, "threshold")
        if pick(audit, "threshold") is not None
        else pick(result, "config", "auc_max")
    )
    out: list[Any] = [_p("2. Privacy audit", st, "h1")]
    if audit is None:
        return out + [
            _p("The membership audit did not run; no privacy claim can be made.", st, "warn")
        ]
    holdout = non_members(result)
    out.append(
        _p(
            f"The audit split the rows used at random into members (about 80 %, used to train a model) and "
            f"non-members (about 20 %: {safe_count(holdout)} records), made synthetic rows from the members at "
            f"each candidate w, and let two attackers try to tell members from non-members. It was repeated "
            f"{safe_count(pick(audit, 'repeats')) if (pick(audit, 'repeats') or 0) >= THRESHOLD else text(pick(audit, 'repeats', default='several'))} "
            f"times with fresh noise. Selection rule: {text(pick(audit, 'rule', default='the largest w for which it and every smaller w keep both attacks below the limit (mean + one standard error)'))}.",
            st,
        )
    )
    out += [_p(t, st) for t in audit_precision_sentences(audit, w)]
    audited, used = audited_rows(result), pick(result, "release", "rows")
    if audited is not None and isinstance(used, int) and audited < used:
        out.append(
            _p(
                f"This table is large, so the audit ran on a random subsample of {audited:,} of its "
                f"{used:,} rows. That errs on the safe side: on fewer rows each person's synthetic row "
                "stands out more, so the attacks score higher and the chosen w is lower than a full "
                "audit would allow.",
                st,
            )
        )
    rows = curve_rows(audit)
    chosen = finite(w) if w is not None else None
    out.append(_figure(lambda: figs.auc_curve_png(rows, float(limit or 0.55), chosen), width, st))
    out.append(
        _p(
            "Membership AUC against w (mean ± one SE over the repeats). Red dashed: the limit. Green: "
            "the released w. Higher w keeps more of each real record and so leaks more.",
            st,
            "caption",
        )
    )
    from reportlab.platypus import CondPageBreak

    # a long table may split across pages (header repeated); start it on a new page only when
    # fewer than about eight rows would fit here
    out += [
        CondPageBreak(150),
        _p("Attack success at every tested w", st, "h2split"),
        _curve_table(audit, holdout, w, width),
    ]
    out.append(
        _p(
            f"TPR at a false-positive rate: the share of members caught when the attacker wrongly accuses "
            f"only 1 % (0.1 %) of non-members. Shown as “n &lt; {THRESHOLD}” where fewer than {THRESHOLD} "
            "non-members make up that rate (not a reliable statistic).",
            st,
            "caption",
        )
    )
    members = pick(audit, "n_members")
    if members is None and audited is not None and holdout is not None:
        members = audited - holdout
    out.append(_roc_block(audit, holdout, w, st, width, members))
    out += [_p("Distances between real and synthetic rows", st, "h2")]
    own, near = pick(release, "own_distance_histogram"), pick(release, "nearest_real_histogram")
    if own and near:
        out.append(_figure(lambda: figs.distance_hist_png(own, near), width, st))
        out.append(
            _p(
                "Shen &amp; Tian Figure 11, from binned counts (every bin holds at least 10 records). If the "
                "orange curve sits well to the right of the blue one, a synthetic row is usually farther "
                "from its own real record than that record's nearest real neighbour is.",
                st,
                "caption",
            )
        )
    else:
        out.append(_p("Not available (no synthetic table was released).", st))
    out += [
        _p("Per-record risk", st, "h2"),
        _p(
            text(risk_sentence(release))
            if w is not None
            else "Not applicable: nothing was released.",
            st,
        ),
    ]
    out += [_p("Formal privacy statement (ε)", st, "h2")]
    out += [
        _p(par, st)
        for par in epsilon_paragraphs(pick(release, "epsilon"), w, pick(release, "rows"))
    ]
    out += [_p("Threat model in plain words", st, "h2")] + [
        _p(par, st) for par in threat_model(pick(result, "verdict"))
    ]
    return out


def _curve_table(audit: Any, holdout: int | None, w: Any, width: float) -> Any:
    header = [
        "w",
        "distance AUC (mean ± SD)",
        "density AUC (mean ± SD)",
        "TPR at 1 % FPR",
        "TPR at 0.1 % FPR",
    ]
    rows: list[list[Any]] = [header]
    highlight = None
    points = sorted(
        pick(audit, "curve", default=()) or (), key=lambda p: float(pick(p, "w", default=0.0))
    )
    for p in points:
        pw = finite(pick(p, "w"))
        if w is not None and pw is not None and abs(pw - float(w)) < 1e-9:
            highlight = len(rows)
        rows.append(
            [
                fmt(pw, 2),
                _pm(pick(p, "auc"), pick(p, "auc_sd")),
                _pm(pick(p, "density_auc"), pick(p, "density_auc_sd")),
                low_fpr_tpr(pick(p, "tpr_at_1pct_fpr"), 0.01, holdout),
                low_fpr_tpr(pick(p, "tpr_at_01pct_fpr"), 0.001, holdout),
            ]
        )
    return table(
        rows,
        [0.1 * width, 0.25 * width, 0.25 * width, 0.2 * width, 0.2 * width],
        highlight=highlight,
    )


def _pm(mean: Any, sd: Any) -> str:
    if finite(mean) is None:
        return NOT_AVAILABLE
    return fmt(mean) + (f" ± {fmt(sd)}" if finite(sd) is not None else "")


def _roc_block(
    audit: Any,
    holdout: int | None,
    w: Any,
    st: dict[str, Any],
    width: float,
    members: int | None = None,
) -> Any:
    """ROC curves of the distance attack at the lowest, the released and the highest w."""
    points = sorted(
        pick(audit, "curve", default=()) or (), key=lambda p: float(pick(p, "w", default=0.0))
    )
    chosen = [points[0], points[-1]] if points else []
    if w is not None and points:
        chosen.insert(
            1, min(points, key=lambda p: abs(float(pick(p, "w", default=0.0)) - float(w)))
        )
    curves, seen = [], set()
    for p in chosen:
        roc = pick(p, "roc")
        roc = pick(roc, "distance", default=roc)
        if pick(p, "roc_fpr") is not None:
            roc = {"fpr": pick(p, "roc_fpr"), "tpr": pick(p, "roc_tpr")}
        grid = roc_on_grid(roc, holdout, members=members)
        pw = float(pick(p, "w", default=0.0))
        if grid is not None and pw not in seen:
            seen.add(pw)
            label = f"w = {pw:.2f}" + (
                " (released)" if w is not None and abs(pw - float(w)) < 1e-9 else ""
            )
            curves.append((label, grid[0], grid[1]))
    explain = [
        _p("ROC curves", st, "h2"),
        _p(
            "Each curve shows, for the distance attack, how many members are caught (up) for how many "
            "non-members wrongly accused (right). The dashed diagonal is guessing; a curve close to it "
            "means the attack does not work. Curves are read on a coarse grid so that every step "
            f"reflects at least {THRESHOLD} non-members, and every rise no member or at least "
            f"{THRESHOLD}.",
            st,
        ),
    ]
    if not curves:
        return _side_by_side(_p("ROC curves were not stored by the audit.", st), explain, width)
    return _side_by_side(
        _figure(lambda: figs.roc_png(curves), 0.52 * width - 10, st), explain, width
    )


# ------------------------------------------------------------------------------ utility


def _kinds(result: Any) -> dict[str, str]:
    schema = pick(result, "prepared", "schema")
    cols = pick(schema, "columns", default=()) or ()
    return {
        str(pick(c, "name")): str(pick(c, "kind"))
        for c in cols
        if pick(c, "action") == "synthesize"
    }


def utility_section(result: Any, st: dict[str, Any], width: float) -> list[Any]:
    """Box plots, level shares, marginals, Kaplan-Meier, correlations, regression + forest plot."""
    out: list[Any] = [_p("3. Does the synthetic table give the same answers?", st, "h1")]
    real, synth = pick(result, "prepared", "real"), pick(result, "synthetic")
    if synth is None:
        return out + [
            _p(
                "No synthetic table was made"
                + (" (the release was refused)" if pick(result, "verdict") == "refused" else "")
                + ", so there is nothing to compare.",
                st,
            )
        ]
    fidelity = pick(result, "fidelity", default={}) or {}
    kinds = _kinds(result)
    if not kinds and real is not None:
        kinds = {str(c): "continuous" for c in real.columns}
    numeric = [
        c for c, k in kinds.items() if k in NUMERIC_KINDS and real is not None and c in real.columns
    ]
    if numeric:
        boxes = [
            (
                c,
                box_stats(real[c], "real"),
                box_stats(synth[c] if c in synth.columns else [], "synth"),
            )
            for c in numeric
        ]
        out += [
            _p("Distributions, real vs synthetic", st, "h2"),
            _figure(lambda: figs.boxplots_png(boxes), width, st),
            _p(
                "After Shen &amp; Tian Figure 14. Blue: real; orange: synthetic. Boxes span the 25th to 75th "
                "percentile with the median; whiskers reach the 5th and 95th percentiles (or the 10th "
                "smallest and largest value, where fewer than 10 rows lie beyond a percentile). Drawn "
                "from these percentiles only: no individual value is plotted.",
                st,
                "caption",
            ),
        ]
    levels = [
        c for c, k in kinds.items() if k in LEVEL_KINDS and real is not None and c in real.columns
    ]
    if levels:
        rows = [["column", "level", "real", "synthetic"]]
        for c in levels:
            for level, r_share, s_share in level_shares(
                real[c], synth[c] if c in synth.columns else None
            ):
                rows.append([text(c), text(level), r_share, s_share])
        out += [
            _p("Categories: share of rows per level", st, "h2"),
            table(rows, [0.3 * width, 0.3 * width, 0.2 * width, 0.2 * width]),
        ]
    out += _marginal_block(fidelity, st, width)
    out += _km_block(result, real, synth, fidelity, st, width)
    out += _correlation_block(fidelity, st, width)
    out += _regression_block(fidelity, real, st, width)
    return out


def _marginal_block(fidelity: dict[str, Any], st: dict[str, Any], width: float) -> list[Any]:
    marginal = pick(fidelity, "marginal", default=()) or ()
    if not marginal:
        return []
    rows = [["column", "real mean (SD)", "synthetic mean (SD)", "difference in real SDs"]]
    for m in marginal:
        rows.append(
            [
                text(pick(m, "column")),
                f"{_num(pick(m, 'real_mean'))} ({_num(pick(m, 'real_sd'))})",
                f"{_num(pick(m, 'synth_mean'))} ({_num(pick(m, 'synth_sd'))})",
                fmt(pick(m, "std_mean_difference"), 3),
            ]
        )
    return [
        _p("Means and spreads", st, "h2"),
        table(rows, [0.28 * width, 0.26 * width, 0.26 * width, 0.2 * width]),
    ]


def _num(v: Any) -> str:
    x = finite(v)
    if x is None:
        return NOT_AVAILABLE
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def _km_block(
    result: Any, real: Any, synth: Any, fidelity: dict[str, Any], st: dict[str, Any], width: float
) -> list[Any]:
    schema = pick(result, "prepared", "schema")
    time_col, event_col = pick(schema, "time"), pick(schema, "event")
    if not time_col or not event_col or real is None:
        return []
    km = km_curves(real, synth, time_col, event_col)
    if km is None:
        return [
            _p("Survival (Kaplan-Meier)", st, "h2"),
            _p(f"Not shown: too few records or events to draw steps of at least {THRESHOLD}.", st),
        ]
    text_parts = [
        _p("Survival (Kaplan-Meier)", st, "h2"),
        _p(
            f"Share of people still without the event ({text(event_col)}) over follow-up time "
            f"({text(time_col)}), real (solid) and synthetic (dashed).",
            st,
        ),
        _p(text(km.note), st, "small"),
    ]
    gaps = np.abs(np.asarray(km.real, dtype=float) - np.asarray(km.synthetic, dtype=float))
    gap = f"Largest gap between the curves at the plotted times: {fmt(np.nanmax(gaps), 3)}."
    logrank = pick(fidelity, "km", "logrank_p")
    if logrank is not None:
        gap += (
            f" Log-rank p-value real vs synthetic (whole follow-up), descriptive only: "
            f"{fmt(logrank, 3)}. The synthetic rows are derived from the real ones, not an "
            "independent sample, so this is a measure of the gap, not a test."
        )
    text_parts.append(_p(gap, st))
    return [
        _side_by_side(
            _figure(lambda: figs.km_png(km, str(time_col)), 0.52 * width - 10, st),
            text_parts,
            width,
        )
    ]


def _correlation_block(fidelity: dict[str, Any], st: dict[str, Any], width: float) -> list[Any]:
    corr = pick(fidelity, "correlation")
    cols, diff = pick(corr, "columns"), pick(corr, "difference")
    if not cols or diff is None or len(cols) < 2:
        return []
    explain = [
        _p("Correlations", st, "h2"),
        _p(
            "Each cell is the synthetic table's Pearson correlation minus the real table's for that pair of "
            "columns. White means the same; the stronger the colour, the larger the difference.",
            st,
        ),
        _p(f"Largest absolute difference: {fmt(pick(corr, 'max_abs_difference'), 3)}.", st),
    ]
    return [
        _side_by_side(
            _figure(lambda: figs.corr_diff_png(cols, diff), 0.52 * width - 10, st), explain, width
        )
    ]


def _regression_block(
    fidelity: dict[str, Any], real: Any, st: dict[str, Any], width: float
) -> list[Any]:
    from reportlab.platypus import Spacer

    model = pick(fidelity, "model")
    coefs = list(pick(model, "coefficients", default=()) or ())
    status = str(pick(fidelity, "model_status", default="") or "")
    if not coefs and status.startswith("did not converge"):
        return [
            _p("Regression", st, "h2"),
            _p(
                f"The regression model {text(status)}. The synthetic table was still exported; "
                "compare a simpler model (fewer covariates) on both tables yourself.",
                st,
            ),
        ]
    if not coefs:
        return [
            _p("Regression", st, "h2"),
            _p(
                "No regression model was compared in this run (choose an analysis with its outcome, "
                "or the time and event columns, to compare one).",
                st,
            ),
        ]
    analysis = str(pick(model, "analysis", default=""))
    ratio = {"cox": "hazard ratio", "logistic": "odds ratio"}.get(analysis)
    n_real, events = pick(model, "real", "n"), pick(model, "real", "n_events")
    out = [
        _p(
            f"Regression: {text({'cox': 'Cox proportional hazards', 'ols': 'linear (OLS)', 'logistic': 'logistic'}.get(analysis, analysis))}",
            st,
            "h2",
        ),
        _p(
            f"Fitted on the real table (n = {safe_count(n_real)}"
            + (f", events = {safe_count(events)}" if events is not None else "")
            + f") and on the synthetic table (n = {safe_count(pick(model, 'synthetic', 'n'))}). "
            + (
                "Estimates are " + ratio + "s (exp of the coefficient, per the stated units)."
                if ratio
                else "Estimates are coefficients on the outcome's scale."
            )
            + " Overlap: the confidence-interval overlap of Karr et al. (2006), 1 = identical intervals.",
            st,
        ),
    ]
    if events is not None and finite(events) is not None and float(events) < THRESHOLD:
        return out + [
            _p(
                f"Coefficients not shown: fewer than {THRESHOLD} events in the real table.",
                st,
                "warn",
            )
        ]
    rows = [
        [
            "term",
            "real (95 % CI)",
            "synthetic (95 % CI)",
            "diff. (real SEs)",
            "overlap",
            "same sign / signif.",
        ]
    ]
    forest = []
    for c in coefs:
        name = str(pick(c, "name"))
        if pick(c, "not_shown") or _small_level(name, real):
            rows.append([text(name), text(NOT_SHOWN_GROUP), "", "", "", ""])
            continue
        per = finite(pick(c, "per")) or 1.0
        r = [
            _scale(pick(c, k), per, ratio) for k in ("real_estimate", "real_ci_low", "real_ci_high")
        ]
        s = [
            _scale(pick(c, k), per, ratio)
            for k in ("synth_estimate", "synth_ci_low", "synth_ci_high")
        ]
        label = name + (f" (per {per:g})" if per != 1.0 else "")
        rows.append(
            [
                text(label),
                _ci(r),
                _ci(s),
                fmt(pick(c, "std_difference"), 2),
                fmt(pick(c, "ci_overlap"), 2),
                f"{_yes(pick(c, 'sign_agrees'))} / {_yes(pick(c, 'significance_agrees'))}",
            ]
        )
        if all(v is not None for v in r):
            forest.append(
                cast(
                    "tuple[str, float, float, float, float, float, float]",
                    (label, *r, *(np.nan if v is None else v for v in s)),
                )
            )
    out.append(
        table(
            rows,
            [0.22 * width, 0.19 * width, 0.19 * width, 0.13 * width, 0.1 * width, 0.17 * width],
        )
    )
    if forest:
        xlabel = f"{ratio} (log scale)" if ratio else "coefficient"
        out += [
            Spacer(1, 8),
            _figure(lambda: figs.forest_png(forest, xlabel, bool(ratio)), width, st),
            _p(
                "Forest plot: real (blue circles) and synthetic (orange squares) estimates with 95 % "
                "confidence intervals.",
                st,
                "caption",
            ),
        ]
    return out


def _small_level(name: str, real: Any) -> bool:
    """A dummy term ``col=level`` whose level has fewer than 10 real rows."""
    if "=" not in name or real is None:
        return False
    col, level = name.split("=", 1)
    if col not in real.columns:
        return False
    return int((real[col].astype(str) == level).sum()) < THRESHOLD


def _scale(v: Any, per: float, ratio: str | None) -> float | None:
    x = finite(v)
    if x is None:
        return None
    return math.exp(x * per) if ratio else x * per


def _ci(v: list[float | None]) -> str:
    if v[0] is None:
        return NOT_AVAILABLE
    return f"{v[0]:.3f} ({fmt(v[1])} to {fmt(v[2])})"


def _yes(v: Any) -> str:
    return NOT_AVAILABLE if v is None else ("yes" if bool(v) else "<b>no</b>")


# ------------------------------------------------------------------------------ method


def method_section(result: Any, st: dict[str, Any], width: float) -> list[Any]:
    """Method in words, model, settings (seeded yes/no only), software versions, references."""
    from engine.provenance import library_versions

    out: list[Any] = [_p("4. Method, settings and software", st, "h1")]
    out += [_p(par, st) for par in METHOD_PARAGRAPHS]
    model = pick(result, "model", default={}) or {}
    if model:
        history = pick(result, "history", default=()) or ()
        rows = [
            ["Flows (MADE layers)", text(pick(model, "flows", default=NOT_AVAILABLE))],
            ["Hidden units per layer", text(pick(model, "hidden", default=NOT_AVAILABLE))],
            ["Hidden layers per MADE", text(pick(model, "layers", default=NOT_AVAILABLE))],
            ["Validation loss (negative log-likelihood per row)", fmt(pick(model, "val_nll"), 3)],
            ["Training epochs", str(len(history)) if history else NOT_AVAILABLE],
            ["Device", text(pick(model, "device", default=NOT_AVAILABLE))],
        ]
        out += [
            _p("Model of the release", st, "h2"),
            table(rows, [0.55 * width, 0.45 * width], header=False),
        ]
    out += [
        _p("Settings", st, "h2"),
        table(settings_rows(pick(result, "config")), [0.4 * width, 0.6 * width], header=False),
    ]
    versions = library_versions()
    rows = [["software", "version"]] + [
        [text(k), text(v or "not installed")] for k, v in versions.items()
    ]
    out += [_p("Software", st, "h2"), table(rows, [0.4 * width, 0.3 * width])]
    out.append(
        _p(
            "Timings and the machine-readable record of every number in this report are in audit.json "
            "(checksums of every output file in results.json).",
            st,
            "small",
        )
    )
    out += [_p("References", st, "h2")]
    out += [_p(f"[{i}] {text(ref)}", st, "small") for i, ref in enumerate(REFERENCES, 1)]
    return out


def settings_rows(cfg: Any) -> list[list[str]]:
    """The run's settings for a person; the seed appears only as yes/no."""

    def show(v: Any) -> str:
        if v is None or v == () or v == []:
            return "—"
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, (list, tuple)):
            return text(", ".join(_short_num(x) for x in v))
        return text(_short_num(v))

    fields = [
        ("AUC limit", "auc_max"),
        ("Forced w", "w"),
        ("Candidate w values", "w_grid"),
        (
            "Audit repeats (empty: automatic, until the AUC's standard error is below 0.01)",
            "repeats",
        ),
        ("Time column", "time"),
        ("Event column", "event"),
        ("Dropped by the user", "drop"),
        ("Missing-value codes", "missing_codes"),
        ("Analysis", "analysis"),
        ("Outcome", "outcome"),
        ("Covariates", "covariates"),
        ("Allow risky (override)", "allow_risky"),
        ("Risk acknowledged in the wizard", "risk_acknowledged"),
        ("Protect outliers", "protect_outliers"),
        ("Synthetic copies", "copies"),
        ("Training budget", "budget"),
        ("Device requested", "device"),
        ("Output format", "fmt"),
    ]
    rows = [[label, show(pick(cfg, key))] for label, key in fields]
    rows.insert(3, ["Seeded (reproducible run)", "yes" if pick(cfg, "seed") is not None else "no"])
    return rows


def _short_num(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)
