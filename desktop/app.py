"""Start the desktop wizard."""

from __future__ import annotations

import os
import sys


def main() -> int:
    """Open the wizard window and run the Qt event loop."""
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
    code = app.exec()
    window.shutdown()
    return code
