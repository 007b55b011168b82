"""No command-line flag, Python repr or exponent notation in any text a person reads.

Walks every page of the wizard after a fast real run (released, then refused), every dialog
that can be opened (message boxes, the user guide, About), the meta-analysis window after a
pooling, and the text of the PDF report and README.txt of that run. A text fails when it
contains ``--`` followed by a letter (a flag), ``np.`` (a numpy repr) or a digit-e-sign-digit number
(``1.12e+03``).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("MPLBACKEND", "Agg")

import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("PySide6")

from tests.gui_helpers import DEMO_FIELDS, load

pytestmark = pytest.mark.gui

BAD = re.compile(r"--[A-Za-z]|np\.|\de[+-]\d")
FAST = dict(w_grid=(0.0, 0.3, 0.6), repeats=2, seed=1, budget="fast", device="cpu", auc_max=0.6)


def test_the_pattern_catches_what_it_must():
    for text in ("needs --exposure COL", "np.int64(0)", "mean 1.12e+03", "δ = 1e-05"):
        assert BAD.search(text), text
    for text in ("w = 0.30 – 0.60", "1,120", "δ = 0.00001", "I² = 35%", "ε = 480"):
        assert not BAD.search(text), text


@pytest.fixture(scope="module")
def runs(small_demo):
    """A released and a refused run of the same 800 rows (one model fit each)."""
    from engine.pipeline import RunConfig, prepare, synthesize

    config = RunConfig(input=small_demo, **DEMO_FIELDS, **FAST)
    prepared = prepare(config)
    released = synthesize(prepared)
    strict = replace(config, w_grid=(0.97, 0.98), repeats=1, auc_max=0.51)
    refused = synthesize(replace(prepared, config=strict))
    assert released.synthetic is not None and refused.synthetic is None
    return released, refused


def widget_texts(root) -> list[tuple[str, str]]:
    """(where, text) for every text a person can read or hear in ``root`` and its children."""
    from desktop.plots import PlotWidget
    from desktop.qt import QtWidgets

    found: list[tuple[str, str]] = []

    def add(where: str, text: object) -> None:
        if text:
            found.append((where, str(text)))

    widgets = [root, *root.findChildren(QtWidgets.QWidget)]
    for w in widgets:
        name = f"{type(w).__name__} '{w.accessibleName()}'"
        add(name, w.toolTip())
        add(name, w.accessibleName())
        add(name, w.windowTitle())
        if isinstance(w, (QtWidgets.QLabel, QtWidgets.QAbstractButton)):
            add(name, w.text())
        if isinstance(w, QtWidgets.QGroupBox):
            add(name, w.title())
        if isinstance(w, QtWidgets.QLineEdit):
            add(name, w.text())
            add(name, w.placeholderText())
        if isinstance(w, QtWidgets.QTextEdit):
            add(name, w.toPlainText())
        if isinstance(w, QtWidgets.QComboBox):
            for i in range(w.count()):
                add(name, w.itemText(i))
        if isinstance(w, QtWidgets.QTabWidget):
            for i in range(w.count()):
                add(name, w.tabText(i))
        if isinstance(w, QtWidgets.QListWidget):
            for i in range(w.count()):
                add(name, w.item(i).text())
        if isinstance(w, QtWidgets.QTableWidget):
            for c in range(w.columnCount()):
                header = w.horizontalHeaderItem(c)
                if header is not None:
                    add(name, header.text())
                    add(name, header.toolTip())
                for r in range(w.rowCount()):
                    item = w.item(r, c)
                    if item is not None:
                        add(name, item.text())
                        add(name, item.toolTip())
        if isinstance(w, PlotWidget) and w._figure is not None:
            from matplotlib.text import Text

            w._figure.canvas.draw()
            for artist in w._figure.findobj(Text):
                add(f"{name} plot", artist.get_text())
    return found


def menu_texts(window) -> list[tuple[str, str]]:
    from desktop.qt import QtWidgets

    out = []
    for menu in window.menuBar().findChildren(QtWidgets.QMenu):
        out.append(("menu", menu.title()))
        for action in menu.actions():
            out += [("menu", action.text()), ("menu", action.toolTip())]
    return out


def bad(found: list[tuple[str, str]]) -> list[str]:
    return [f"{where}: {text!r}" for where, text in found if BAD.search(text)]


def walk(window, qtbot, result, pages) -> list[tuple[str, str]]:
    window.session.prepared = result.prepared
    window.session.result = result
    found = []
    for index in pages:
        window.go_to(index)
        qtbot.wait(10)
        found += [("title", window.title.text()), ("subtitle", window.subtitle.text())]
        found += [(f"page {index + 1} {w}", t) for w, t in widget_texts(window.pages[index])]
    return found


def test_no_flag_repr_or_exponent_in_any_page_dialog_window_or_pdf(
    window, qtbot, messages, runs, small_demo, tmp_path
):
    released, refused = runs
    load(window, qtbot, small_demo, **DEMO_FIELDS)
    window.next()  # Columns
    window.next()  # prepare, then Settings
    qtbot.waitUntil(lambda: window.stack.currentIndex() == 2, timeout=30000)
    settings = window.pages[2]
    settings.advanced_toggle.setChecked(True)
    found = menu_texts(window)
    found += walk(window, qtbot, released, range(0, 7))
    # a dead end on Settings: its sentence and message box
    settings.analysis.setCurrentIndex(settings.analysis.findData("logistic"))
    settings.outcome.setCurrentText("age")
    found += [("settings problems", settings.problems.text())]
    window.go_to(2)
    window.next()
    # the released run exported, with its report
    window.go_to(6)
    export = window.pages[6]
    out = tmp_path / "out"
    export.folder.setText(str(out))
    export.export()
    qtbot.waitUntil(lambda: window.session.written is not None, timeout=120000)
    found += [("export", t) for _, t in widget_texts(export)]
    # the refused run
    found += walk(window, qtbot, refused, range(3, 7))
    # dialogs: the user guide, About, and every message box shown so far
    found += [("help", t) for _, t in widget_texts(window.open_help())]
    window.about()
    found += [(f"message box ({kind})", text) for kind, text in messages]
    # the meta-analysis window after pooling three typed-in studies
    meta = window.open_meta()
    meta.tabs.setCurrentIndex(2)
    for row in [("Site A", 0.10, 0.10), ("Site B", 0.30, 0.12), ("Site C", 0.22, 0.09)]:
        meta.add_summary_row(*row)
    meta.pool()
    qtbot.waitUntil(lambda: meta.run is not None and not meta.task.is_running, timeout=30000)
    found += [("meta window", t) for _, t in widget_texts(meta)]
    # an engine refusal shown by the meta window: the demo file without an exposure
    meta.use_demo()
    meta.exposure.setText("")
    before = len(messages)
    meta.pool()
    qtbot.waitUntil(lambda: len(messages) > before and not meta.task.is_running, timeout=30000)
    assert "needs an exposure" in messages[-1][1]
    found += [("meta message box", messages[-1][1])]
    assert len(found) > 500, f"only {len(found)} texts walked"
    problems = bad(found)
    # the report a person reads, and the recipient's README
    pdf = out / "report.pdf"
    assert pdf.is_file()
    if shutil.which("pdftotext"):
        text = subprocess.run(
            ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
        ).stdout
    else:
        pypdf = pytest.importorskip("pypdf")
        text = "\n".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages)
    assert "privacy" in text.lower() and len(text) > 2000
    problems += [f"report.pdf: {line.strip()!r}" for line in text.splitlines() if BAD.search(line)]
    readme = (out / "README.txt").read_text(encoding="utf-8")
    problems += [
        f"README.txt: {line.strip()!r}" for line in readme.splitlines() if BAD.search(line)
    ]
    assert not problems, "\n".join(problems)


def test_every_flag_named_in_an_engine_message_reaches_a_person_as_a_setting_name():
    """The wizard's safety net: each string in engine/ (outside the command line) that still
    names a flag is shown with the setting's name instead, and no flag survives."""
    import ast

    from desktop.pages.base import SETTING_NAMES, plain_message

    root = Path(__file__).resolve().parents[1] / "engine"
    literals = []
    for path in root.rglob("*.py"):
        if path.parent.name == "cli":  # the command line names its own flags
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if re.search(r"--[a-z]", node.value) and "\n" not in node.value.strip():
                    literals.append((path.name, node.value))
    assert literals, "the scan found no flag at all: is it still looking in the right place?"
    for name, text in literals:
        shown = plain_message(text)
        assert not re.search(r"--[a-z]", shown), f"{name}: {text!r} -> {shown!r}"
    flags = {m for _, text in literals for m in re.findall(r"--[a-z][a-z-]*", text)}
    assert flags <= set(SETTING_NAMES), sorted(flags - set(SETTING_NAMES))
