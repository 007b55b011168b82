"""The one module that imports PySide6; every other desktop module imports Qt from here.

Keeping the binding behind one module makes the import contract easy to check (the engine
never imports this package) and a future binding switch a one-file change.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QObject, QSettings, Qt, QThread, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import QApplication, QMessageBox

__all__ = [
    "QAction",
    "QApplication",
    "QDesktopServices",
    "QKeySequence",
    "QMessageBox",
    "QObject",
    "QSettings",
    "QThread",
    "QTimer",
    "Qt",
    "QtCore",
    "QtGui",
    "QtWidgets",
    "Signal",
    "Slot",
    "qt_version",
]


def qt_version() -> str:
    """PySide6 and Qt versions, for the About box."""
    import PySide6

    return f"PySide6 {PySide6.__version__}, Qt {QtCore.qVersion()}"
