"""Section 4, method, settings and software: the method in words, the released model, the
run's settings (the seed only as yes/no), library versions and references.

References: Shen & Tian (2025); Papamakarios et al. (2017) (MAF); docs/method.md section 10.

Example:
    >>> short_number(0.05), short_number(3)
    ('0.05', '3')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.report.data import NOT_AVAILABLE, decimals
from engine.report.layout import paragraph, table, text
from engine.report.wording import METHOD_PARAGRAPHS, REFERENCES, WHITENED_START

if TYPE_CHECKING:
    from engine.pipeline.config import RunConfig
    from engine.pipeline.results import RunResult
    from engine.privacy.audit import AuditResult

SETTINGS = (
    ("AUC limit", "auc_max"),
    ("Forced w", "forced_w"),
    ("Candidate w values", "w_grid"),
    ("Audit repeats (empty: automatic, until the AUC's standard error is below 0.01)", "repeats"),
    ("Time column", "time"),
    ("Event column", "event"),
    ("Dropped by the user", "drop"),
    ("Missing-value codes", "missing_codes"),
    ("Analysis", "analysis"),
    ("Outcome", "outcome"),
    ("Covariates", "covariates"),
    ("Protect outliers", "protect_outliers"),
    ("Synthetic copies", "copies"),
    ("Training budget", "budget"),
    ("Device requested", "device"),
    ("Output format", "file_format"),
)


def method_section(result: RunResult, sheet: dict[str, Any], width: float) -> list[Any]:
    """Method in words, model, settings (seeded yes/no only), software versions, references."""
    from engine.provenance import library_versions

    out: list[Any] = [paragraph("4. Method, settings and software", sheet, "h1")]
    pars = list(METHOD_PARAGRAPHS)
    if result.model is not None and result.model.whitened:
        pars[0] = f"{pars[0]} {WHITENED_START}"
    out += [paragraph(par, sheet) for par in pars]
    out += _model_rows(result, width, sheet)
    out += [
        paragraph("Settings", sheet, "h2"),
        table(
            settings_rows(result.config, result.verdict, result.audit),
            [0.4 * width, 0.6 * width],
            header=False,
        ),
    ]
    rows = [["software", "version"]] + [
        [text(k), text(v or "not installed")] for k, v in library_versions().items()
    ]
    out += [paragraph("Software", sheet, "h2"), table(rows, [0.4 * width, 0.3 * width])]
    out.append(
        paragraph(
            "Timings and the machine-readable record of every number in this report are in "
            "audit.json (checksums of every output file in results.json).",
            sheet,
            "small",
        )
    )
    out.append(paragraph("References", sheet, "h2"))
    return out + [
        paragraph(f"[{i}] {text(ref)}", sheet, "small") for i, ref in enumerate(REFERENCES, 1)
    ]


def _model_rows(result: RunResult, width: float, sheet: dict[str, Any]) -> list[Any]:
    """The released flow's architecture, validation loss, epochs and device."""
    model = result.model
    if model is None:
        return candidate_rows(result, width, sheet)
    none = "none (a Gaussian copula)"
    rows = [
        ["Flows (MADE layers)", text(model.flows) if model.flows else none],
        ["Hidden units per layer", text(model.hidden) if model.flows else none],
        ["Hidden layers per MADE", text(model.layers) if model.flows else none],
        ["Validation loss (negative log-likelihood per row)", decimals(model.val_nll, 3)],
        ["Training epochs", str(len(result.history)) if result.history else NOT_AVAILABLE],
        ["Device", text(model.device)],
    ]
    if result.audit is not None and getattr(result.audit, "chosen", None):
        rows.insert(0, ["Model", text(result.audit.chosen)])
    return [
        paragraph("Model of the release", sheet, "h2"),
        table(rows, [0.55 * width, 0.45 * width], header=False),
        *candidate_rows(result, width, sheet),
    ]


MODEL_CHOICE = (
    "How the model was chosen: the simplest candidate is a Gaussian copula of the columns (each "
    "column's own distribution and the correlations between them); the flows above it start "
    "from that copula and also learn shapes it misses. The flows are ranked by how well they "
    "predict rows they were not trained on (validation likelihood; a larger flow must beat a "
    "smaller one by more than one standard error), the copula after them unless it predicts "
    "those rows best. On the same audit splits for all, the first in that order whose "
    "synthetic rows do not give members away even with no perturbation (w = 0) is used; a "
    "candidate that does is dropped. Only when the copula itself gives members away is "
    "nothing released."
)


def candidate_rows(result: RunResult, width: float, sheet: dict[str, Any]) -> list[Any]:
    """The candidate models, their validation loss, their highest AUC at w = 0 and what
    became of each, with the reason for the choice in plain words (released or refused)."""
    audit = result.audit
    cands = getattr(audit, "candidates", ()) if audit is not None else ()
    if not cands:
        return []
    rows = [["Candidate", "Validation loss", "Highest AUC at w = 0", "Outcome"]]
    for c in cands:
        aucs = [
            a for a in (c.auc_w0, c.density_auc_w0, c.released_auc_w0) if a is not None and a == a
        ]
        rows.append(
            [
                text(c.label),
                NOT_AVAILABLE if c.val_nll is None else decimals(c.val_nll, 3),
                decimals(max(aucs), 3) if aucs else "not audited",
                text(c.status),
            ]
        )
    return [
        paragraph("Choice of model", sheet, "h2"),
        paragraph(text(MODEL_CHOICE), sheet, "small"),
        paragraph(text(f"Chosen: {getattr(audit, 'chosen_because', '')}."), sheet, "small"),
        table(rows, [0.4 * width, 0.2 * width, 0.22 * width, 0.18 * width]),
    ]


def settings_rows(
    config: RunConfig, verdict: str | None = None, audit: AuditResult | None = None
) -> list[list[str]]:
    """The run's settings for a person; the seed appears only as yes/no. The override line is
    read from the verdict, so it can never say "no" beside a release made by override. The
    candidate w are the ones the audit tested (grid and refinement), counted (issue 33)."""
    rows = [[label, setting_text(getattr(config, key, None))] for label, key in SETTINGS]
    if audit is not None and audit.curve:
        rows[[r[0] for r in rows].index("Candidate w values")][1] = tested_w_text(audit)
    rows.insert(3, ["Seeded (reproducible run)", "yes" if config.seed is not None else "no"])
    rows.insert(
        rows.index([r for r in rows if r[0] == "Covariates"][0]) + 1,
        ["Privacy limit overridden by the user", override_text(config, verdict)],
    )
    return rows


def tested_w_text(audit: AuditResult) -> str:
    """ "24 tested: 0, 0.05, … (20 on the grid, 4 added near the limit)": every w the audit
    tested, counted, so the count and the list agree with the attack table.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> pts = [NS(w=0.0, refined=False), NS(w=0.5, refined=False), NS(w=0.25, refined=True)]
        >>> tested_w_text(NS(curve=pts))
        '3 tested: 0, 0.25, 0.5 (2 on the grid, 1 added near the limit)'
    """
    ws = sorted({round(float(p.w), 9) for p in audit.curve})
    added = len({round(float(p.w), 9) for p in audit.curve if getattr(p, "refined", False)})
    how = f" ({len(ws) - added} on the grid, {added} added near the limit)" if added else ""
    return text(f"{len(ws)} tested: " + ", ".join(short_number(w) for w in ws) + how)


def override_text(config: RunConfig, verdict: str | None) -> str:
    """Whether the release overrode the privacy limit, from the verdict, and how.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> cfg = NS(allow_risky=False, risk_acknowledged=True, forced_w=0.9)
        >>> override_text(cfg, "released with override")
        'yes: the risk was acknowledged in the wizard; w was set by the user'
        >>> override_text(cfg, "released")
        'no (an override was allowed but not needed)'
    """
    if str(verdict or "") != "released with override":
        allowed = getattr(config, "allow_risky", False) or getattr(
            config, "risk_acknowledged", False
        )
        return "no (an override was allowed but not needed)" if allowed else "no"
    how = []
    if getattr(config, "allow_risky", False):
        how.append("the user asked to export despite the risk")
    if getattr(config, "risk_acknowledged", False):
        how.append("the risk was acknowledged in the wizard")
    if getattr(config, "forced_w", None) is not None:
        how.append("w was set by the user")
    return "yes: " + "; ".join(how) if how else "yes"


def setting_text(value: Any) -> str:
    """A setting for a person: — for none, yes/no, lists joined, numbers short.

    Example:
        >>> setting_text(None), setting_text(True), setting_text((0.0, 0.05))
        ('—', 'yes', '0, 0.05')
    """
    if value is None or value == () or value == []:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return text(", ".join(short_number(x) for x in value))
    return text(short_number(value))


def short_number(value: Any) -> str:
    """A float in its shortest form (``0.05``), anything else as text."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
