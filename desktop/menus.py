"""The main window's menu bar (File, Analysis, Help) and the about box it opens: versions and
licences read from package metadata, so that opening it imports nothing heavy."""

from __future__ import annotations

import platform
from typing import Any

from desktop.qt import QAction, QKeySequence, QtWidgets, qt_version

LICENCES = (
    ("torch", "BSD-3-Clause"),
    ("numpy", "BSD-3-Clause"),
    ("pandas", "BSD-3-Clause"),
    ("scipy", "BSD-3-Clause"),
    ("lifelines", "MIT"),
    ("statsmodels", "BSD-3-Clause"),
    ("matplotlib", "PSF-based (matplotlib licence)"),
    ("reportlab", "BSD"),
    ("pyreadstat", "Apache-2.0"),
    ("openpyxl", "MIT"),
    ("pyarrow", "Apache-2.0"),
    ("PySide6", "LGPL-3.0 (Qt for Python)"),
)


def build_menus(window: Any) -> None:
    """File (open, demo, quit), Analysis (meta-analysis) and Help (guide, about) on ``window``
    (a :class:`desktop.wizard.MainWindow`); the guide's action is kept as
    ``window.guide_action``."""
    file_menu = window.menuBar().addMenu("&File")
    open_action = QAction("&Open a table…", window)
    open_action.setShortcut(QKeySequence.StandardKey.Open)
    open_action.triggered.connect(window.open_file)
    demo_action = QAction("Load the &demo cohort", window)
    demo_action.triggered.connect(window.load_demo)
    quit_action = QAction("&Quit", window)
    quit_action.setShortcut(QKeySequence.StandardKey.Quit)
    quit_action.triggered.connect(window.close)
    file_menu.addActions([open_action, demo_action])
    file_menu.addSeparator()
    file_menu.addAction(quit_action)
    analysis = window.menuBar().addMenu("&Analysis")
    meta_action = QAction("&Meta-analysis across sites…", window)
    meta_action.setShortcut(QKeySequence("Ctrl+M"))
    meta_action.setToolTip("Combine results from several sites into one estimate.")
    meta_action.triggered.connect(window.open_meta)
    analysis.addAction(meta_action)
    help_menu = window.menuBar().addMenu("&Help")
    guide = QAction("&User guide", window)
    guide.setShortcut(QKeySequence("F1"))
    guide.setToolTip("How to use each step, read the privacy curve and export for checking.")
    guide.triggered.connect(window.open_help)
    help_menu.addAction(guide)
    window.guide_action = guide
    about = QAction("&About latent-synth", window)
    about.triggered.connect(window.about)
    help_menu.addAction(about)
    about_qt = QAction("About &Qt", window)
    about_qt.triggered.connect(QtWidgets.QApplication.aboutQt)
    help_menu.addAction(about_qt)


def about_html() -> str:
    """Versions and licences, read from package metadata (nothing heavy is imported)."""
    from importlib import metadata

    from engine import __version__

    rows = []
    for name, licence in LICENCES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "not installed"
        rows.append(f"<tr><td>{name}</td><td>{version}</td><td>{licence}</td></tr>")
    return (
        f"<h3>latent-synth {__version__}</h3>"
        "<p>Privacy-protected synthetic copies of patient tables by Latent Noise Injection, with a "
        "membership-inference audit and a PDF report. Licence: MIT.</p>"
        "<p>Everything runs on this computer; the program makes no network connection.</p>"
        f"<p>Python {platform.python_version()}; {qt_version()}</p>"
        "<table cellspacing='6'><tr><th align='left'>Library</th><th align='left'>Version</th>"
        "<th align='left'>Licence</th></tr>" + "".join(rows) + "</table>"
    )
