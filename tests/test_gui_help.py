"""Help and setup: the offline user guide, tooltips on every number, missing Qt libraries."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("MPLBACKEND", "Agg")

import re  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("PySide6")

from desktop import launch  # noqa: E402
from tests.gui_helpers import DEMO_FIELDS, fast_settings, load

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[1]
GUIDE_HEADINGS = (
    "The seven steps",
    "Reading the privacy curve",
    "What ε means, and why it is large",
    "What to do after a refusal",
    "What to give the output checker",
    "The disclosure rules the program applies",
)


def test_launcher_names_the_missing_qt_library_and_the_apt_command(monkeypatch, capsys):
    import ctypes
    import ctypes.util

    def fake_cdll(name, *args, **kwargs):
        if name == "libxcb-icccm.so.4":
            raise OSError(f"{name}: cannot open shared object file")
        return object()

    monkeypatch.setattr(ctypes, "CDLL", fake_cdll)
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(launch.sys, "platform", "linux")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    started: list[int] = []
    from desktop import app

    monkeypatch.setattr(app, "main", lambda: started.append(1) or 0)
    monkeypatch.setitem(sys.modules, "torch", sys.modules.get("torch") or object())

    assert launch.missing_qt_libraries() == ["libxcb-icccm4"]
    assert launch.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "libxcb-icccm4" in err[0] and "sudo apt-get install libxcb-icccm4" in err[0]
    assert "libxcb-cursor0" not in err[0]  # only the missing one is named
    assert started == []  # Qt was never asked to start (it would abort the process)

    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")  # no xcb plugin needed: no check
    assert launch.missing_libraries_message() is None


@pytest.mark.disable_socket
def test_f1_opens_the_offline_user_guide_with_every_section(window, qtbot):
    import socket

    from pytest_socket import SocketBlockedError

    with pytest.raises(SocketBlockedError):  # the marker really blocks the network here
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    action = window.guide_action
    assert action.shortcut().toString() == "F1"
    assert action in window.menuBar().actions()[-1].menu().actions()  # in the Help menu
    action.trigger()
    dialog = window.help_dialog
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    text = dialog.browser.toPlainText()
    for title in GUIDE_HEADINGS:
        assert title in text, title
    for page in window.pages:  # every wizard step is described under its own name
        assert page.title.split("  ", 1)[-1] in text, page.title
    assert "0.55" in text and "SHA-256" in text and "< 10" in text
    from desktop.qt import QtCore

    dialog.follow(QtCore.QUrl("#checker"))
    assert dialog.browser.verticalScrollBar().value() > 0  # jumped inside the page


def test_the_guide_is_self_contained_plain_words_and_shipped():
    html = (ROOT / "resources" / "user_guide.html").read_text(encoding="utf-8")
    assert not re.search(r"(src|href)\s*=\s*[\"'](?!#)", html), "only in-page links"
    assert "http" not in html and "@import" not in html and "<script" not in html
    assert not re.search(r"\s--[a-z]", html), "no command-line flags for a clinician"
    assert '"*.html"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def _labels_with_digits_lacking_tooltips(page) -> list[str]:
    from desktop.qt import QtWidgets

    bare = []
    for label in page.findChildren(QtWidgets.QLabel):
        if re.search(r"\d", label.text()) and not label.toolTip().strip():
            bare.append(label.text()[:60])
    return bare


@pytest.mark.slow
def test_every_number_on_privacy_and_fidelity_has_a_tooltip(window, qtbot, small_demo):
    load(window, qtbot, small_demo, **DEMO_FIELDS)
    window.next()  # -> Columns
    window.next()  # -> Settings (prepare on a worker)
    qtbot.waitUntil(lambda: window.stack.currentIndex() == 2, timeout=30000)
    fast_settings(window)
    window.next()  # -> Train: starts at once
    qtbot.waitUntil(lambda: window.session.result is not None, timeout=110000)
    qtbot.waitUntil(lambda: window.next_button.isEnabled(), timeout=5000)
    window.next()  # -> Privacy
    privacy = window.pages[4]
    assert re.search(r"w = 0\.\d\d", privacy.summary.text())  # numbers are shown
    assert _labels_with_digits_lacking_tooltips(privacy) == []
    window.next()  # -> Fidelity
    fidelity = window.pages[5]
    assert "p = " in fidelity.notes.text()
    assert _labels_with_digits_lacking_tooltips(fidelity) == []
    for table in (fidelity.marginals, fidelity.model):
        assert table.rowCount() >= 1
        headers = [table.horizontalHeaderItem(c) for c in range(1, table.columnCount())]
        missing = [h.text() for h in headers if not h.toolTip().strip()]
        assert missing == [], missing
