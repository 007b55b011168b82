"""The Columns page's table: one row per column with its inferred kind, role (time / event /
covariate / drop), bounds, missing count and the reason, and what the rows say as RunConfig
fields (``drop / keep / kinds / bounds``)."""

from __future__ import annotations

import math
from typing import Any

from desktop.qt import Qt, QtWidgets, Signal

ROLES = ("covariate", "time", "event", "drop")
COVARIATE_KINDS = (
    "continuous",
    "integer",
    "binary",
    "categorical",
    "identifier",
    "date",
    "text",
    "constant",
)
COL_NAME, COL_KIND, COL_ROLE, COL_LOW, COL_HIGH, COL_MISSING, COL_REASON = range(7)
ROLE_TIPS = {
    "covariate": "Synthesized as an ordinary variable.",
    "time": "Follow-up time of a survival analysis (a number, 0 or more).",
    "event": "Whether the event happened (two values, e.g. 0/1 or no/yes).",
    "drop": "Left out: never modelled and never exported.",
}


class ColumnTable(QtWidgets.QTableWidget):
    """The columns of the inspected table, one row each."""

    role_changed = Signal(str)  # a row's role was changed

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(0, 7, parent)
        self.setHorizontalHeaderLabels(
            ["Column", "Kind", "Role", "Lower bound", "Upper bound", "Missing", "Why"]
        )
        self.setAccessibleName("Columns and their roles")
        self.setToolTip(
            "One row per column of your table. Change the kind, role or bounds "
            "where the program guessed wrong."
        )
        # "Why" takes the width left and wraps, each row as tall as its reason, so no reason is
        # cut at 1280-1600 px (issue 33); the full text is also its tooltip
        header = self.horizontalHeader()
        header.setSectionResizeMode(COL_REASON, QtWidgets.QHeaderView.ResizeMode.Stretch)
        header.sectionResized.connect(self.fit_rows)
        self.setWordWrap(True)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setMinimumSectionSize(
            QtWidgets.QComboBox().sizeHint().height() + 2  # a row never squeezes its combos
        )

    def fill(self, schema: Any) -> None:
        """One row per column of ``schema``, as the engine inferred it."""
        self.setRowCount(0)
        self.setRowCount(len(schema.columns))
        for row, spec in enumerate(schema.columns):
            name = QtWidgets.QTableWidgetItem(spec.name)
            name.setFlags(name.flags() & ~Qt.ItemFlag.ItemIsEditable)
            name.setData(Qt.ItemDataRole.UserRole, spec)
            self.setItem(row, COL_NAME, name)

            kind = QtWidgets.QComboBox()
            kinds = list(COVARIATE_KINDS)
            shown = spec.kind if spec.kind in kinds else _base_kind(spec)
            kind.addItems(kinds)
            kind.setCurrentText(shown)
            kind.setAccessibleName(f"Kind of {spec.name}")
            kind.setToolTip("What sort of values the column holds.")
            kind.setProperty("inferred", shown)
            self.setCellWidget(row, COL_KIND, kind)

            role = QtWidgets.QComboBox()
            role.addItems(ROLES)
            for i, r in enumerate(ROLES):
                role.setItemData(i, ROLE_TIPS[r], Qt.ItemDataRole.ToolTipRole)
            role.setCurrentText(_role(spec, schema))
            role.setAccessibleName(f"Role of {spec.name}")
            role.setToolTip("How the column is used: covariate, survival time, event, or dropped.")
            role.currentTextChanged.connect(self.role_changed)
            self.setCellWidget(row, COL_ROLE, role)

            for col, value in ((COL_LOW, spec.lower), (COL_HIGH, spec.upper)):
                text = "" if value is None else bound_text(value)
                item = QtWidgets.QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, text)
                item.setToolTip(
                    "Synthetic values are clipped to this limit. Empty: the observed range."
                )
                self.setItem(row, col, item)
            missing = QtWidgets.QTableWidgetItem(str(spec.n_missing))
            missing.setFlags(missing.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.setItem(row, COL_MISSING, missing)
            reason = QtWidgets.QTableWidgetItem(spec.reason)
            reason.setFlags(reason.flags() & ~Qt.ItemFlag.ItemIsEditable)
            reason.setToolTip(spec.reason)
            self.setItem(row, COL_REASON, reason)
        for col in range(COL_REASON):  # "Why" stretches into the width left
            self.resizeColumnToContents(col)
        self.fit_rows()

    def fit_rows(self, *_: Any) -> None:
        """Each row as tall as its wrapped reason (the Why column's width changed)."""
        self.resizeRowsToContents()

    def roles(self) -> dict[str, str]:
        out = {}
        for row in range(self.rowCount()):
            out[self.item(row, COL_NAME).text()] = self.cellWidget(row, COL_ROLE).currentText()
        return out

    def set_role(self, name: str, role: str) -> None:
        """Set a column's role (used by tests and keyboard users alike)."""
        for row in range(self.rowCount()):
            if self.item(row, COL_NAME).text() == name:
                self.cellWidget(row, COL_ROLE).setCurrentText(role)
                return
        raise KeyError(name)

    def set_bounds(self, name: str, lower: str, upper: str) -> None:
        for row in range(self.rowCount()):
            if self.item(row, COL_NAME).text() == name:
                self.item(row, COL_LOW).setText(lower)
                self.item(row, COL_HIGH).setText(upper)
                return
        raise KeyError(name)

    def column_choices(self) -> dict[str, tuple[Any, ...]]:
        """The RunConfig fields ``drop / keep / kinds / bounds`` implied by the rows; raises
        ValueError with a readable message for a bound that is not a finite number."""
        roles = self.roles()
        drop, keep, kinds, bounds = [], [], [], []
        for row in range(self.rowCount()):
            name = self.item(row, COL_NAME).text()
            spec = self.item(row, COL_NAME).data(Qt.ItemDataRole.UserRole)
            role = roles[name]
            kind_box = self.cellWidget(row, COL_KIND)
            if role == "drop":
                if spec.action != "drop":
                    drop.append(name)
                continue
            if role == "covariate":
                if spec.action == "drop":
                    keep.append(name)
                if kind_box.currentText() != kind_box.property("inferred"):
                    kinds.append((name, kind_box.currentText()))
            low, high = (self.bound(row, col, name) for col in (COL_LOW, COL_HIGH))
            edited = any(
                self.item(row, c).text().strip() != self.item(row, c).data(Qt.ItemDataRole.UserRole)
                for c in (COL_LOW, COL_HIGH)
            )
            if edited:
                bounds.append((name, low, high))
        return {
            "drop": tuple(drop),
            "keep": tuple(keep),
            "kinds": tuple(kinds),
            "bounds": tuple(bounds),
        }

    def bound(self, row: int, col: int, name: str) -> float | None:
        text = self.item(row, col).text().strip()
        if not text:
            return None
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"Column '{name}': the bound '{text}' is not a number.") from None
        if not math.isfinite(value):
            raise ValueError(f"Column '{name}': the bound must be a finite number.")
        return value


def bound_text(value: float) -> str:
    """A bound as typed by a person: every digit, no exponent (``1500000``, not ``1.5e+06``).

    Example:
        >>> bound_text(1.5e6), bound_text(0.25), bound_text(-3.0), bound_text(1e-7)
        ('1500000', '0.25', '-3', '0.0000001')
    """
    import numpy as np

    return str(np.format_float_positional(float(value), trim="-"))


def _role(spec: Any, schema: Any) -> str:
    if spec.action == "drop":
        return "drop"
    if spec.kind == "time" or spec.name == schema.time:
        return "time"
    if spec.kind == "event" or spec.name == schema.event:
        return "event"
    return "covariate"


def _base_kind(spec: Any) -> str:
    if spec.kind == "event":
        return "binary"
    return "continuous"
