"""The Columns page's rules between columns (issue 30): the rules found in the real rows, each
kept or removed with a tick, and the user's own, typed in the same words and checked against
the real rows by ``engine.check_rule`` before they are added. The engine keeps every ticked
rule in every synthetic row; this box only collects the choice."""

from __future__ import annotations

from typing import Any

from desktop.pages.base import note
from desktop.qt import Qt, QtWidgets

RULES_HINT = (
    "Rules between columns that every synthetic row will keep. Those listed hold in every row "
    "of your data and at least 10 rows support each; untick one to let the synthetic rows "
    "break it. Add your own in the same words, for example: diasbp < sysbp, nodes >= 0, "
    "arm determines group, cause only when status = 1."
)
YOURS = "yours"


class RulesBox(QtWidgets.QGroupBox):
    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__("Rules every synthetic row keeps", parent)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(note(RULES_HINT))
        self.list = QtWidgets.QListWidget()
        self.list.setAccessibleName("Rules every synthetic row keeps")
        self.list.setMaximumHeight(110)
        layout.addWidget(self.list)
        row = QtWidgets.QHBoxLayout()
        self.entry = QtWidgets.QLineEdit()
        self.entry.setAccessibleName("A rule of your own")
        self.entry.setPlaceholderText("a rule of your own, e.g. diasbp < sysbp")
        self.entry.returnPressed.connect(self.add_typed)
        self.add = QtWidgets.QPushButton("Add &rule")
        self.add.setAccessibleName("Add this rule")
        self.add.clicked.connect(self.add_typed)
        row.addWidget(self.entry, 1)
        row.addWidget(self.add)
        layout.addLayout(row)
        self.problem = note("")
        self.problem.setAccessibleName("Why the rule was not added")
        self.problem.setVisible(False)
        layout.addWidget(self.problem)
        self._inspected: Any = None

    def fill(self, inspected: Any) -> None:
        """The rules found in ``inspected`` (``desktop.session.Inspected``), all ticked."""
        self._inspected = inspected
        self.list.clear()
        for text in getattr(inspected, "rules", ()):
            self._item(text, found=True)
        self.problem.setVisible(False)
        if not self.list.count():
            empty = QtWidgets.QListWidgetItem("No rule between columns was found in your data.")
            empty.setFlags(Qt.ItemFlag.NoItemFlags)
            empty.setData(Qt.ItemDataRole.UserRole, None)
            self.list.addItem(empty)

    def _item(self, text: str, found: bool) -> None:
        if self.list.count() == 1 and self.list.item(0).data(Qt.ItemDataRole.UserRole) is None:
            self.list.clear()  # the "no rule found" line
        label = text if found else f"{text}   (yours)"
        item = QtWidgets.QListWidgetItem(label)
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Checked)
        item.setData(Qt.ItemDataRole.UserRole, text)
        item.setData(Qt.ItemDataRole.UserRole + 1, "found" if found else YOURS)
        item.setToolTip(
            "Found in your data: it holds in every real row."
            if found
            else "Your rule: it holds in every real row."
        )
        self.list.addItem(item)

    def add_typed(self) -> None:
        """Check the typed rule against the real rows; add it, or say why not (once, here)."""
        text = self.entry.text().strip()
        if not text or self._inspected is None:
            return
        from engine import InputError, check_rule

        try:
            rule = check_rule(text, self._inspected.schema, self._inspected.frame)
        except InputError as err:
            self.problem.setText(str(err).capitalize())
            self.problem.setVisible(True)
            return
        self.problem.setVisible(False)
        if rule not in self.texts():
            self._item(rule, found=False)
        self.entry.clear()

    def texts(self) -> list[str]:
        return [
            self.list.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.list.count())
            if self.list.item(i).data(Qt.ItemDataRole.UserRole) is not None
        ]

    def choices(self) -> dict[str, tuple[str, ...]]:
        """RunConfig fields: ``rules`` (the user's ticked rules) and ``rules_off`` (found
        rules unticked)."""
        yours, off = [], []
        for i in range(self.list.count()):
            item = self.list.item(i)
            text = item.data(Qt.ItemDataRole.UserRole)
            if text is None:
                continue
            ticked = item.checkState() == Qt.CheckState.Checked
            if item.data(Qt.ItemDataRole.UserRole + 1) == YOURS:
                if ticked:
                    yours.append(text)
            elif not ticked:
                off.append(text)
        return {"rules": tuple(yours), "rules_off": tuple(off)}
