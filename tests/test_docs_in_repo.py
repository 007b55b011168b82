"""The repository stands alone: every document the code, tests or docs name is in ``docs/``
(issue 46 item 3).

* Every ``docs/<name>.md`` named in ``engine/``, ``desktop/``, ``tests/``, ``benchmarks/``,
  ``scripts/``, ``docs/`` or ``README.md`` exists.
* The design notes the code was first written from are cited by their old names
  (``METHOD.md section 5``); each maps to its copy in ``docs/`` (:data:`DESIGN_NAMES`), which
  must exist and hold what the citation points at: a heading numbered N for "section N", the
  quoted words for a citation such as ``PITFALLS.md "Data import"``, and the small-count rule
  in the last paragraph for "last paragraph".
* ``docs/architecture.md`` names every module under ``engine/`` and ``desktop/`` (by path or
  dotted name): a new module without its line there fails here, on purpose.

Example of what is checked: ``engine/privacy/decision.py`` cites ``METHOD.md section 5``, so
``docs/method.md`` must have a heading ``## 5. ...``.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("engine", "desktop", "tests", "benchmarks", "scripts", "docs")
SUFFIXES = (".py", ".md", ".txt", ".toml", ".cfg", ".html")
DESIGN_NAMES = {
    "METHOD": "docs/method.md",
    "CONTRACTS": "docs/contracts.md",
    "ARCHITECTURE": "docs/architecture.md",
    "STYLE": "docs/style.md",
    "PITFALLS": "docs/pitfalls.md",
}
# a document named by path, and the design notes named by their old file names
DOC_PATH = re.compile(r"\bdocs/([A-Za-z0-9_\-]+\.md)")
DESIGN = re.compile(r"\b(METHOD|CONTRACTS|ARCHITECTURE|STYLE|PITFALLS)\.md\b")
DOC_OR_DESIGN = re.compile(
    r"\b(?:docs/(?P<doc>[a-z_]+)\.md|(?P<design>METHOD|CONTRACTS|ARCHITECTURE|STYLE|PITFALLS)\.md)"
)
# what may follow a citation: "section 5", "sections 5, 6 and 10", "sections 7-8"
SECTIONS = re.compile(r"\s*,?\s*sections?\s+(\d+(?:\s*(?:,|-|–|and|to)\s*\d+)*)")
QUOTED = re.compile(r"""[\s,(]*"([^"\n]{3,60})\"""")
LAST_PARAGRAPH = re.compile(r"[^.;)\n]{0,40}last paragraph")


def _sources() -> list[Path]:
    files = [ROOT / "README.md"]
    for room in SCANNED:
        files += [p for p in sorted((ROOT / room).rglob("*")) if p.suffix in SUFFIXES]
    return [p for p in files if p.is_file() and p.resolve() != Path(__file__).resolve()]


@cache
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _citations() -> list[tuple[str, str, str]]:
    """(citing file, target document, the text after the citation) for every citation."""
    found = []
    for path in _sources():
        text = _text(path)
        for m in DOC_OR_DESIGN.finditer(text):
            target = f"docs/{m['doc']}.md" if m["doc"] else DESIGN_NAMES[m["design"]]
            found.append((str(path.relative_to(ROOT)), target, text[m.end() : m.end() + 120]))
    return found


def _numbers(spec: str) -> list[int]:
    """'5, 6 and 10' -> [5, 6, 10]; '7-8' -> [7, 8].

    Example:
        >>> _numbers("4-6"), _numbers("5, 6 and 10")
        ([4, 5, 6], [5, 6, 10])
    """
    out: list[int] = []
    for part in re.split(r"\s*(?:,|and)\s*", spec.strip()):
        ends = [int(x) for x in re.split(r"\s*(?:-|–|to)\s*", part) if x]
        out += list(range(ends[0], ends[-1] + 1)) if ends else []
    return out


def _numbered_headings(doc: str) -> set[int]:
    return {int(n) for n in re.findall(r"^#{1,6}\s+(\d+)\.", _text(ROOT / doc), re.M)}


def _last_paragraph(doc: str) -> str:
    blocks = [b for b in re.split(r"\n\s*\n", _text(ROOT / doc).strip()) if b.strip()]
    return blocks[-1]


def test_every_named_document_exists() -> None:
    """``docs/<name>.md`` references and the five design names all lead to a file in docs/."""
    missing = set()
    for path in _sources():
        text = _text(path)
        for name in DOC_PATH.findall(text):
            if not (ROOT / "docs" / name).is_file():
                missing.add(f"docs/{name} (named in {path.relative_to(ROOT)})")
        for design in DESIGN.findall(text):
            if not (ROOT / DESIGN_NAMES[design]).is_file():
                missing.add(f"{DESIGN_NAMES[design]} for {design}.md")
    assert not missing, "documents named but not in the repository: " + "; ".join(sorted(missing))


def test_the_five_design_documents_are_in_docs() -> None:
    for target in DESIGN_NAMES.values():
        assert (ROOT / target).is_file(), target


def test_cited_sections_exist_in_the_document_cited() -> None:
    """A citation "METHOD.md section 5" (or "docs/method.md sections 5 and 6") needs a heading
    numbered 5 in the document cited."""
    bad = []
    count = 0
    for source, target, after in _citations():
        m = SECTIONS.match(after)
        if not m or not (ROOT / target).is_file():
            continue
        count += 1
        have = _numbered_headings(target)
        lacking = [n for n in _numbers(m[1]) if n not in have]
        if lacking:
            bad.append(f"{source}: {target} has no section {lacking}")
    assert count >= 40, f"only {count} section citations found: is the scan still working?"
    assert not bad, "\n".join(bad)


def test_quoted_parts_of_a_cited_document_are_there() -> None:
    """PITFALLS.md "Data import", CONTRACTS.md ("Files are written atomically"): the quoted
    words appear in the document (as a heading or in its text)."""
    bad = []
    for source, target, after in _citations():
        m = QUOTED.match(after)
        if m and (ROOT / target).is_file() and m[1].lower() not in _text(ROOT / target).lower():
            bad.append(f'{source}: "{m[1]}" not found in {target}')
    assert not bad, "\n".join(bad)


def test_last_paragraph_citations_point_at_the_small_count_rules() -> None:
    """A citation "CONTRACTS.md, last paragraph" means the disclosure rules every output obeys:
    the document's last paragraph must still be those rules."""
    cited = {t for _, t, after in _citations() if LAST_PARAGRAPH.match(after)}
    assert "docs/contracts.md" in cited
    for target in sorted(cited):
        if not (ROOT / target).is_file():
            continue  # reported by test_every_named_document_exists
        last = _last_paragraph(target)
        assert "< 10" in last and "disclosure" in last.lower(), (target, last[:200])


def _modules() -> list[Path]:
    return sorted(
        p.relative_to(ROOT)
        for room in ("engine", "desktop")
        for p in (ROOT / room).rglob("*.py")
        if "__pycache__" not in p.parts
    )


def _named(module: Path, doc: str) -> bool:
    path = module.as_posix()
    dotted = ".".join(module.with_suffix("").parts)
    if module.name == "__init__.py":
        dotted = ".".join(module.parent.parts)
    return path in doc or re.search(rf"(?<![\w.]){re.escape(dotted)}(?![\w.])", doc) is not None


def test_architecture_names_every_module() -> None:
    """Give a new module its one line in docs/architecture.md (path or dotted name)."""
    doc = _text(ROOT / "docs" / "architecture.md")
    missing = [m.as_posix() for m in _modules() if not _named(m, doc)]
    assert len(_modules()) > 100
    assert not missing, "docs/architecture.md does not name: " + ", ".join(missing)
