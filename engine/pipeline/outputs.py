"""Writing a finished run's files (synthetic table, report, audit.json, README.txt), atomically.

References: docs/architecture.md; main paper Algorithm 1 and section 4.3.
"""

import json
from dataclasses import replace
from pathlib import Path

from engine.errors import InputError
from engine.pipeline.record import build_audit_json, file_properties, file_summary, readme_info
from engine.pipeline.results import RunResult
from engine.progress import ProgressFn, no_progress


def folder_error(out: Path, err: OSError) -> str:
    """Why the output folder could not be made, in its true cause (issue 33: a read-only
    folder was told to use "a shorter path").

    Example:
        >>> denied = PermissionError(13, "Permission denied")
        >>> folder_error(Path("/ro/x"), denied)  # doctest: +NORMALIZE_WHITESPACE
        '/ro/x: no permission to create this folder here (the folder above it is read-only for
        you); choose a folder you can write to, such as one in your Documents'
    """
    import errno

    if isinstance(err, PermissionError) or err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (
            f"{out}: no permission to create this folder here (the folder above it is "
            "read-only for you); choose a folder you can write to, such as one in your Documents"
        )
    if err.errno == errno.ENAMETOOLONG or (
        isinstance(err, FileNotFoundError) and len(str(out)) > 259
    ):
        return (
            f"{out}: this path is too long for the system ({len(str(out))} characters); "
            "choose an output folder with a shorter path"
        )
    if err.errno == errno.ENOSPC:
        return f"{out}: the disk is full; free some space or choose a folder on another disk"
    return f"{out}: cannot create this output folder ({err.strerror or err}); choose another folder"


def write_outputs(result: RunResult, out: Path, progress: ProgressFn = no_progress) -> RunResult:
    """Write synthetic file(s), README.txt, report.pdf, audit.json and results.json: all or none.

    Every file is staged as a temporary file in ``out`` first (the hashes in audit.json and
    results.json are of those bytes); only then are the targets replaced, and when one cannot
    be (a report open in a PDF viewer), the files already replaced get their old content back,
    so the folder never holds a new table beside an old report.
    """
    from engine.files.write import AtomicBatch, recipient_readme_bytes, table_writer
    from engine.provenance import results_json, sha256_file

    cfg = result.config
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(
            f"{out}: this is a file, not a folder; choose a folder as the output folder"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(folder_error(out, err)) from err
    from engine.columns.codes import written_codes
    from engine.files.values import numeric_codes, with_other_labels

    # coded columns back as numbers, a merged rare level as a code above the real ones (issue 44)
    codes = written_codes(result.prepared.schema, result.prepared.real)
    meta = with_other_labels(result.prepared.table.column_meta, codes)
    outputs: dict[str, str] = {}
    progress(0.0, "writing files")
    with AtomicBatch(forbid=Path(cfg.input).resolve()) as batch:
        ext = cfg.file_format
        tables = [
            (f"synthetic.{ext}" if i == 0 else f"synthetic_{i + 1}.{ext}", frame)
            for i, frame in enumerate(result.copies)
        ]
        if result.dp_synthetic is not None and result.synthetic is not None:
            tables.append((f"synthetic_dp.{ext}", result.dp_synthetic))
        for name, frame in tables:
            frame = numeric_codes(frame, codes, nullable=ext not in ("sav", "dta"))
            outputs[name] = sha256_file(
                batch.stage(out / name, table_writer(frame, ext, column_meta=meta))
            )
        if result.synthetic is not None:
            readme = recipient_readme_bytes(readme_info(result))
            outputs["README.txt"] = sha256_file(batch.stage(out / "README.txt", readme))
        if cfg.report:
            progress(0.3, "writing the PDF report")
            from engine.report.build import render_report

            # the report lists every file staged so far with its SHA-256 (tables, README.txt)
            pdf = render_report(replace(result, outputs=dict(outputs)))
            outputs["report.pdf"] = sha256_file(batch.stage(out / "report.pdf", pdf))
        result = replace(result, outputs=outputs)
        audit_json = build_audit_json(result)
        data = json.dumps(audit_json, indent=2, ensure_ascii=False).encode("utf-8")
        outputs["audit.json"] = sha256_file(batch.stage(out / "audit.json", data))
        records = [
            {
                "name": name,
                "sha256": digest,
                "summary": file_summary(name, result),
                "properties": file_properties(name, result),
            }
            for name, digest in outputs.items()
        ]
        batch.stage(out / "results.json", json.dumps(results_json(records), indent=2).encode())
    progress(1.0, "files written")
    return replace(result, outputs=outputs, audit_json=audit_json)
