"""Provenance for output checkers: checksums, software versions and an ACRO-style results.json.

``audit.json`` records the SHA-256 of the input and of every output and the versions of the
libraries that produced them; ``results.json`` lists each output for review in SACRO-Viewer.

References:
    ACRO (AI-SDC/ACRO, ``acro/record.py``: ``Records.finalise_json``) and SACRO-Viewer
    (opensafely-core/sacro), which reads ``version`` and ``results{uid: record}``;
    FIPS 180-4 (SHA-256); OWASP ASVS V1.2.10 (safe outputs).

Example:
    >>> versions = library_versions()
    >>> versions["latent-synth"] == __import__("engine").__version__
    True
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

# The ACRO results.json layout mirrored here; SACRO-Viewer checks this ``version``.
ACRO_RESULTS_VERSION = "0.4.5"
LIBRARIES: tuple[str, ...] = (
    "numpy",
    "pandas",
    "scipy",
    "torch",
    "lifelines",
    "statsmodels",
    "matplotlib",
    "reportlab",
    "pyreadstat",
    "openpyxl",
    "pyarrow",
)
_CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks (constant memory for large tables).

    References:
        FIPS 180-4; ACRO ``Records.write_checksums``.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "x"
        >>> _ = p.write_bytes(b"abc")
        >>> sha256_file(p)[:16]
        'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def library_versions() -> dict[str, str | None]:
    """Versions of Python and of the libraries that shape the outputs; None when missing.

    References:
        Python ``importlib.metadata`` (reads installed distributions without importing them).

    Example:
        >>> versions = library_versions()
        >>> versions["python"] == platform.python_version(), "pyreadstat" in versions
        (True, True)
    """
    from engine import __version__

    versions: dict[str, str | None] = {
        "python": platform.python_version(),
        "latent-synth": __version__,
    }
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _file_record(entry: Any) -> dict[str, Any]:
    """``{"name", "sha256", "sdc"}`` for a path, or for a dict that already has a name."""
    if isinstance(entry, Mapping):
        record = dict(entry)
        if "sha256" not in record and "path" in record:
            record["sha256"] = sha256_file(record["path"])
        if "name" not in record and "path" in record:
            record["name"] = Path(record["path"]).name
        record.pop("path", None)
        record.setdefault("sdc", {})
        return record
    path = Path(entry)
    return {"name": path.name, "sha256": sha256_file(path), "sdc": {}}


def _output_type(files: list[dict[str, Any]]) -> str:
    """``report`` for a PDF, ``metadata`` for json/txt, ``table`` otherwise (by first file)."""
    if not files:
        return "custom"
    suffix = Path(str(files[0].get("name", ""))).suffix.lower()
    if suffix == ".pdf":
        return "report"
    return "metadata" if suffix in {".json", ".txt"} else "table"


def _output_record(index: int, output: Mapping[str, Any], timestamp: str) -> dict[str, Any]:
    """One ACRO record, filling in the fields the caller left out."""
    files = output.get("files")
    if files is None and "path" in output:
        files = [output["path"]]
    elif files is None and "name" in output:
        files = [{k: output[k] for k in ("name", "sha256", "path") if k in output}]
    records = [_file_record(f) for f in files or []]
    return {
        "uid": str(output.get("uid", f"output_{index}")),
        "status": str(output.get("status", "review")),
        "type": str(output.get("type") or _output_type(records)),
        "properties": dict(output.get("properties") or {}),
        "files": records,
        "outcome": dict(output.get("outcome") or {}),
        "command": str(output.get("command", "latent-synth")),
        "summary": str(output.get("summary", "")),
        "timestamp": str(output.get("timestamp", timestamp)),
        "comments": [str(c) for c in output.get("comments") or []],
        "exception": output.get("exception"),
    }


def results_json(
    outputs: list[dict[str, Any]],
    *,
    timestamp: str | None = None,
    version: str = ACRO_RESULTS_VERSION,
) -> dict[str, Any]:
    """ACRO-style ``results.json`` content: one review record per output file.

    Layout (ACRO ``Records.finalise_json``; SACRO-Viewer reads ``version``, ``results`` and
    each record's ``files[].name`` and ``status``)::

        {"version": "0.4.5",
         "tool": {"name": "latent-synth", "version": ...},
         "results": {uid: {
             "uid":        "output_0" unless given (key and field agree, as in ACRO),
             "status":     "review" by default: our tool never approves its own output; the
                           pipeline may say "fail" (refused) - a human checker decides,
             "type":       "table" (synthetic table), "report" (PDF) or "metadata" (json/README);
                           ACRO's types ("table", "regression", "custom", ...) are also accepted,
             "properties": structured facts for the checker (e.g. {"method": "latent noise
                           injection", "w": 0.5, "membership_auc": 0.52, "rows": 1000}),
             "files":      [{"name": file name relative to the folder, "sha256": hex digest,
                           "sdc": {}}]; "sha256" is our addition so the checker can match the
                           file it reviews to audit.json; "sdc" is kept empty for ACRO readers,
             "outcome":    {} (ACRO's per-cell check table; none for a synthetic table),
             "command":    how it was produced (default "latent-synth"),
             "summary":    one line in plain words for the checker,
             "timestamp":  ISO time (one per call unless a record gives its own),
             "comments":   list of strings from the researcher,
             "exception":  None, or the researcher's reason to release despite a failed check
                           (``--allow-risky``; ACRO stores "" for none, we use None)}}}

    Each entry of ``outputs`` is a dict with those keys (all optional) plus one of ``path``
    (one file, hashed here), ``name`` + ``sha256`` (one file already hashed) or ``files``
    (paths, or dicts with ``name`` and ``sha256`` or ``path``). Without ``type`` it is taken
    from the first file: ``.pdf`` report, ``.json``/``.txt`` metadata, anything else table.

    References:
        AI-SDC/ACRO ``acro/record.py``; opensafely-core/sacro ``sacro/views.py``.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "synthetic.csv"
        >>> _ = p.write_bytes(b"abc")
        >>> doc = results_json([{"path": p, "type": "table", "summary": "synthetic table"}])
        >>> rec = doc["results"]["output_0"]
        >>> rec["status"], rec["files"][0]["name"], rec["files"][0]["sha256"][:8]
        ('review', 'synthetic.csv', 'ba7816bf')
    """
    from engine import __version__

    now = timestamp or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    results: dict[str, Any] = {}
    for index, output in enumerate(outputs):
        record = _output_record(index, output, now)
        if record["uid"] in results:
            raise ValueError(f"duplicate output uid {record['uid']!r}")
        results[record["uid"]] = record
    return {
        "version": version,
        "tool": {"name": "latent-synth", "version": __version__},
        "results": results,
    }
