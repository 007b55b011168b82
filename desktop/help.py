"""Help ▸ User guide: the offline guide ``resources/user_guide.html`` in a dialog.

A :class:`QTextBrowser` shows the page (no web engine, no network): the guide is self-contained
(inline CSS, no images, fonts or scripts), links inside it only scroll to its own sections, and
any other link is ignored rather than fetched or handed to a browser.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from desktop.qt import QtCore, QtWidgets

GUIDE_NAME = "user_guide.html"


def guide_path() -> Path:
    """Where the user guide ships (inside the ``resources`` package)."""
    return Path(str(resources.files("resources").joinpath(GUIDE_NAME)))


def guide_html() -> str:
    """The text of the user guide."""
    return guide_path().read_text(encoding="utf-8")


class HelpDialog(QtWidgets.QDialog):
    """The user guide in a resizable, non-modal window."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("latent-synth user guide")
        self.setAccessibleName("User guide")
        layout = QtWidgets.QVBoxLayout(self)
        self.browser = QtWidgets.QTextBrowser()
        self.browser.setAccessibleName("User guide text")
        self.browser.setOpenLinks(False)
        self.browser.setOpenExternalLinks(False)
        self.browser.anchorClicked.connect(self.follow)
        self.browser.setHtml(guide_html())
        layout.addWidget(self.browser)
        close = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.close)
        layout.addWidget(close)
        self.resize(760, 680)

    def follow(self, url: QtCore.QUrl) -> None:
        """Scroll to a section of the guide; links leaving the guide are ignored."""
        if url.hasFragment() and not url.scheme() and not url.path():
            self.browser.scrollToAnchor(url.fragment())
