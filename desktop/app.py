"""Start the desktop wizard."""

from __future__ import annotations

import sys


def main() -> int:
    """Open the wizard window and run the Qt event loop."""
    from desktop.qt import QtWidgets

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv)
    app.setApplicationName("latent-synth")
    from desktop.wizard import MainWindow

    window = MainWindow()
    window.show()
    return app.exec()
