"""What a run records, built in one place: ``audit.json`` (:func:`build_audit_json`, from the
typed results' ``to_dict()``) and the recipient README's fields.

References: docs/architecture.md; main paper Algorithm 1 and section 4.3.
"""

from typing import Any

from engine import __version__
from engine.pipeline.config import RunConfig
from engine.pipeline.results import RunResult
from engine.stats.fits import json_safe


def build_audit_json(result: RunResult) -> dict[str, Any]:
    """The machine-readable record (docs/contracts.md keys plus extras)."""
    from engine.provenance import library_versions

    prep, cfg = result.prepared, result.config
    table = prep.table
    from engine.disclosure import safe_record

    return safe_record(
        json_safe(
            {
                "tool": {"name": "latent-synth", "version": __version__},
                "verdict": result.verdict.value,
                "started": result.started,
                "input": {
                    "name": cfg.input_label or table.path.name,
                    "sha256": table.sha256,
                    "format": table.format,
                    "rows": int(table.rows),
                    "rows_selected": int(len(table.frame)),
                    "rows_used": int(len(prep.real)),
                    "rows_dropped": prep.rows_dropped,
                    "columns": [str(c) for c in table.frame.columns],
                    "notes": list(table.notes),
                },
                "columns": prep.schema.to_dict(),
                "roles": _roles(cfg),
                "model": {}
                if result.model is None
                else {**result.model.to_dict(), **_choice(result)},
                "audit": None
                if result.audit is None
                else {
                    **result.audit.to_dict(),
                    "rows_audited": min(len(prep.real), cfg.audit_max_rows),
                    "subsampled": len(prep.real) > cfg.audit_max_rows,
                },
                "release": result.release.to_dict(),
                "fidelity": result.fidelity.to_dict(),
                "disclosure_risk": _disclosure(result),
                "rules": _rules(result),
                "settings": _settings(cfg),
                "timings": result.timings,
                "software": library_versions(),
                "outputs": result.outputs,
            }
        )
    )


def _roles(cfg: RunConfig) -> dict[str, Any] | None:
    """The ``roles`` block (issue 44): the survival columns used and how they were chosen:
    "given" (--time/--event, or the wizard's columns), "recognised" by name and coding, or
    "likely, used: <why it was not certain>" (the command line without --time/--event); None
    when the run has no survival pair."""
    if cfg.time is None and cfg.event is None:
        return None
    return {
        "time": cfg.time,
        "event": cfg.event,
        "event_value": cfg.event_value,
        "how": cfg.roles_how or "given",
    }


def _disclosure(result: RunResult) -> dict[str, Any] | None:
    """The ``disclosure_risk`` block (issue 29): measured on the released file, or on the file
    the disclosure rule refused; None when no key column was chosen."""
    found = getattr(result.release, "disclosure", None)
    return None if found is None else found.to_dict()


def _rules(result: RunResult) -> list[dict[str, Any]]:
    """The ``rules`` block (issue 30): each rule, where it came from, kept or why not, and the
    synthetic rows breaking it over every released copy (0 by construction)."""
    from engine.columns.rules import rules_record

    frames = list(result.copies) or ([] if result.synthetic is None else [result.synthetic])
    if result.dp_synthetic is not None:
        frames.append(result.dp_synthetic)
    return rules_record(getattr(result.prepared.encoder, "rules", None), frames)


def _choice(result: RunResult) -> dict[str, Any]:
    """The model block's account of the candidate family (issue 27): the released model's
    label, every candidate's record and why this one."""
    audit = result.audit
    if audit is None or not getattr(audit, "candidates", ()):
        return {}
    return {
        "label": audit.chosen,
        "candidates": [c.to_dict() for c in audit.candidates],
        "chosen_because": audit.chosen_because,
    }


def _settings(cfg: RunConfig) -> dict[str, Any]:
    """Settings for the record. The seed itself is never written: only whether one was set."""
    return {
        "auc_max": cfg.auc_max,
        "w_forced": cfg.forced_w,
        "w_grid": list(cfg.w_grid),
        "seeded": cfg.seed is not None,
        "device": cfg.device,
        "format": cfg.file_format,
        "budget": cfg.budget,
        "analysis": cfg.analysis,
        "outcome": cfg.outcome,
        "covariates": list(cfg.covariates),
        "allow_risky": cfg.allow_risky,
        "risk_acknowledged": cfg.risk_acknowledged,
        "protect_outliers": cfg.protect_outliers,
        "audit_max_rows": cfg.audit_max_rows,
        "copies": cfg.copies,
        "dp_epsilon": cfg.dp_epsilon,
        "dp_delta": cfg.dp_delta,
        "time": cfg.time,
        "event": cfg.event,
        "drop": list(cfg.drop),
        "missing_codes": list(cfg.missing_codes),
        "keys": None if cfg.keys is None else list(cfg.keys),
        "disclosure_targets": None
        if cfg.disclosure_targets is None
        else list(cfg.disclosure_targets),
        "disclosure_margin": cfg.disclosure_margin,
        "rules": list(cfg.rules),
        "rules_off": list(cfg.rules_off),
    }


def readme_info(result: RunResult) -> dict[str, Any]:
    """The fields of the recipient's README.txt (a released run only)."""
    from engine.columns.codes import written_codes

    schema = result.prepared.schema
    audit, release = result.audit, result.release
    binding = audit.binding(release.w) if audit is not None else None
    codes = written_codes(schema, result.prepared.real)
    return {
        "merged_codes": {name: code for name, code in codes.items() if code is not None},
        "version": __version__,
        # the day only, as the report prints it: two runs with one seed on one day write the
        # same README, so the report that lists its SHA-256 stays byte-identical too
        "date": (result.started or "")[:10],
        "w": release.w,
        "rows": release.rows,
        "auc": None if binding is None else binding.auc,
        "auc_se": None if binding is None else binding.se,
        "auc_attack": None if binding is None else binding.words,
        "copies": result.config.copies,
        "auc_max": result.config.auc_max,
        "verdict": result.verdict.value,
        "dropped": [c.name for c in schema.dropped()],
        "columns": [c.name for c in schema.synthesized()],
        "format": result.config.file_format,
        "exact_copies": None if result.released is None else result.released.exact_copies.to_dict(),
        "rules": [
            r.text for r in getattr(getattr(result.prepared.encoder, "rules", None), "kept", [])
        ],
        "missing_modelled": bool(
            (result.prepared.rows_dropped or {}).get("missing_modelled")
            and result.prepared.rows_dropped.get("missing_by_column")
        ),
    }


def file_summary(name: str, result: RunResult) -> str:
    """One line on what the output file ``name`` holds, for results.json."""
    release = result.release
    if name.startswith("synthetic_dp") and release.dp is not None:
        g = release.dp.guarantee
        return (
            "synthetic table from a DP-SGD flow (Flow Sampling), "
            f"({g['epsilon']:.3g}, {g['delta']:.2g})-DP"
        )
    if name.startswith("synthetic") and release.w is not None:
        return (
            f"synthetic table, {release.rows} rows, Latent Noise Injection at "
            f"w = {release.w:.2f}; verdict: {result.verdict.value}"
        )
    if name == "report.pdf":
        return "privacy and fidelity report for the output checker"
    if name == "audit.json":
        return (
            "machine-readable audit record (no real records, no seeds, no model weights; "
            "counts under 10 shown as '< 10', as in the report)"
        )
    return "explanation for the recipient"


def file_properties(name: str, result: RunResult) -> dict[str, Any]:
    """Structured facts for results.json: the fidelity verdict beside the synthetic table."""
    verdict = result.fidelity.verdict
    if not name.startswith("synthetic") or name.startswith("synthetic_dp") or verdict is None:
        return {}
    out: dict[str, Any] = {
        "fidelity_same_conclusions": verdict.same_conclusions,
        "fidelity_verdict": verdict.line,
        "fidelity_compared": verdict.compared,
        "fidelity_s_pmse": None if verdict.utility is None else round(verdict.utility.s_pmse, 3),
    }
    found = getattr(result.release, "disclosure", None)
    if found is not None:  # issue 29: the disclosure rule's outcome beside the table
        out["disclosure_no_more_than_fresh_sample"] = found.holds
        out["disclosure_keys"] = list(found.keys)
    return out
