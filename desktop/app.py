"""Start the desktop wizard (optionally with a table to load: ``latent-synth FILE``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(path: str | Path | None = None) -> int:
    """Open the wizard window (with ``path`` loaded on the Import page) and run the event loop."""
    os.environ.setdefault(
        "MPLBACKEND", "Agg"
    )  # plots are embedded via FigureCanvasQTAgg; no pyplot
    from desktop.qt import QApplication, Qt, QtGui

    if QApplication.instance() is None:
        QtGui.QGuiApplication.setHighDpiScaleFactorRoundingPolicy(
            Qt.HighDpiScaleFactorRoundingPolicy.PassThrough
        )
    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("latent-synth")
    app.setOrganizationName("latent-synth")
    app.setApplicationDisplayName("latent-synth")
    from desktop.wizard import MainWindow

    window = MainWindow()
    window.show()
    if path is not None:
        window.open_path(path)
    code = app.exec()
    window.shutdown()
    return code
