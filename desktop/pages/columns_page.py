"""Page 2, Columns: inferred kind, role (time / event / covariate / drop), bounds and reason.

Identifiers, dates, free text and constants come pre-set to *drop*. On Next the page checks
only what its table allows but a config cannot hold (one time and one event column at most,
both or neither, bounds that are numbers), then ``engine.prepare`` runs on a worker with the
choices as RunConfig fields ``time / event / drop / keep / kinds / bounds``: the engine's
schema check applies every rule on the columns (a binary event, times of 0 or more, a lower
bound not above the upper) and its message is shown as it is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from desktop.pages.base import Page, note
from desktop.pages.column_table import COL_REASON, ColumnTable  # noqa: F401 - tests: COL_REASON
from desktop.pages.rules_box import RulesBox
from desktop.qt import QMessageBox, QtWidgets

KEYS_HINT = (
    "Columns someone may know about a patient (age, sex, ethnicity, where they live, dates): "
    "the report measures what the synthetic file tells them about the other columns. Separate "
    "names with commas."
)

BOUNDS_HINT = (
    "Bounds start at each number column's 10th smallest and 10th largest value, so no synthetic "
    "value repeats a real extreme that fewer than 10 people hold; type clinical limits to change "
    "them."
)


class ColumnsPage(Page):
    title = "2  Columns"
    subtitle = (
        "Check how each column will be treated. Identifiers are dropped so they never leave "
        "the secure environment."
    )

    def __init__(self, session: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(session, parent)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(
            note(
                "Role: <i>time</i> and <i>event</i> mark a survival outcome; <i>drop</i> leaves "
                "a column out entirely. Bounds: the synthetic values are kept inside these limits "
                "(leave empty to use the observed range)."
            )
        )
        self.table = ColumnTable()
        self.table.role_changed.connect(self._update_summary)
        layout.addWidget(self.table, 1)
        layout.addWidget(note(BOUNDS_HINT))
        self.model_missing = QtWidgets.QCheckBox(
            "&Keep rows with empty cells: the synthetic copy gets empty cells at the same rates "
            "(recommended)"
        )
        self.model_missing.setChecked(True)
        self.model_missing.setAccessibleName("Keep rows with empty cells")
        self.model_missing.setToolTip(
            "On: empty cells are modelled with the values, so no row is left out and the copy "
            "shows how often each column is empty. Off: rows with an empty cell are left out."
        )
        layout.addWidget(self.model_missing)
        # Issue 29: the columns an attacker may know, for the identity and attribute disclosure
        # measures (the engine suggests them; an unchanged suggestion is left to the engine).
        layout.addWidget(note(KEYS_HINT))
        self.keys = QtWidgets.QLineEdit()
        self.keys.setAccessibleName("Columns someone may know about a patient")
        self.keys.setToolTip(KEYS_HINT)
        self.keys.setPlaceholderText("none recognised: type column names, separated by commas")
        layout.addWidget(self.keys)
        self._suggested_keys = ""
        # Issue 33: an event column of two words or booleans (dead/alive, True/False, 1/2): which
        # value means the event happened, chosen here, the likely one preselected.
        event_row = QtWidgets.QHBoxLayout()
        self.event_value_label = QtWidgets.QLabel("The event happened when the value is:")
        self.event_value = QtWidgets.QComboBox()
        self.event_value.setAccessibleName("The value that means the event happened")
        self.event_value_label.setBuddy(self.event_value)
        event_row.addWidget(self.event_value_label)
        event_row.addWidget(self.event_value)
        event_row.addStretch(1)
        layout.addLayout(event_row)
        self._event_column: str | None = None
        self._show_event_value(None)
        # Issue 30: the rules between columns that every synthetic row keeps.
        self.rules = RulesBox()
        layout.addWidget(self.rules)
        # The likely survival pair that the file's headers suggest but the kinds alone did not
        # set (issue 28's recognition, as the one-click path uses it): preselected, said here.
        self.outcome_note = note("")
        self.outcome_note.setVisible(False)
        layout.addWidget(self.outcome_note)
        self.summary = note("")
        layout.addWidget(self.summary)
        self.status = QtWidgets.QProgressBar()
        self.status.setRange(0, 0)
        self.status.setVisible(False)
        self.status.setAccessibleName("Preparing the data")
        layout.addWidget(self.status)
        self._schema_key: Any = None

    # -- filling ------------------------------------------------------------------------
    def enter(self) -> None:
        inspected = self.session.inspected
        if inspected is None or inspected is self._schema_key:
            return
        self._schema_key = inspected
        self.fill(inspected.schema)
        self._preselect_outcome(inspected)
        self.rules.fill(inspected)

    def _preselect_outcome(self, inspected: Any) -> None:
        """When the kinds set no survival pair but the headers suggest a likely one (for
        example ``fu_len`` and ``death``), set those two roles and say so, with why."""
        from engine import recognise_survival_roles

        self.outcome_note.setVisible(False)
        schema = inspected.schema
        if schema.time or schema.event or inspected.frame is None:
            return
        found = recognise_survival_roles(inspected.frame)
        time, event = found.time or found.likely_time, found.event or found.likely_event
        fields = self.session.fields  # an answer already given (one click) is kept
        if fields.get("time") and fields.get("event"):
            time, event = fields["time"], fields["event"]
            found = replace(found, question=None, event_value=fields.get("event_value"))
        if not (time and event) or time == event:
            return
        self.set_role(time, "time")
        self.set_role(event, "event")
        if found.event_value is not None:  # 2 of R's 1/2, or 0 of a "censored" 0/1 indicator
            if self.event_value.findText(str(found.event_value)) < 0:  # the page cannot say it
                self.set_role(time, "covariate")
                self.set_role(event, "covariate")
                return
            self.event_value.setCurrentText(str(found.event_value))
        why = f" ({found.question})" if found.question else ""
        self.outcome_note.setText(
            f"<b>Survival outcome:</b> the program takes <i>{time}</i> as the follow-up time and "
            f"<i>{event}</i> as the event{why}. Change their roles in the table above if that "
            "is wrong, or set both to covariate for no survival outcome."
        )
        self.outcome_note.setVisible(True)
        self._noted = (time, event)

    def fill(self, schema: Any) -> None:
        self.table.fill(schema)
        from engine import suggest_keys

        self._suggested_keys = ", ".join(suggest_keys(schema.columns))
        self.keys.setText(self._suggested_keys)
        self._update_summary()

    def _show_event_value(self, column: str | None) -> None:
        """Offer the event column's two values when they are not a plain 0/1 code."""
        values = event_values(self.session.inspected, column) if column else None
        if column != self._event_column:
            self._event_column = column
            self.event_value.clear()
            if values:
                absent, present = values
                self.event_value.addItems([str(present), str(absent)])  # the likely one first
        for widget in (self.event_value_label, self.event_value):
            widget.setVisible(bool(values))

    def _update_summary(self) -> None:
        roles = self.roles()
        events = [n for n, r in roles.items() if r == "event"]
        times = [n for n, r in roles.items() if r == "time"]
        noted = getattr(self, "_noted", None)
        if (
            noted is not None
            and self.outcome_note.isVisible()
            and noted
            != (
                times[0] if times else None,
                events[0] if events else None,
            )
        ):  # the note follows the roles once they are changed (issue 44)
            self.outcome_note.setText(
                f"<b>Survival outcome:</b> follow-up time <i>{times[0]}</i>, event "
                f"<i>{events[0]}</i> (set by you)."
                if len(times) == 1 and len(events) == 1
                else "<b>Survival outcome:</b> none set; mark one column as the follow-up time "
                "and one as the event, or leave both unset for no survival outcome."
            )
        self._show_event_value(events[0] if len(events) == 1 else None)
        dropped = [n for n, r in roles.items() if r == "drop"]
        kept = len(roles) - len(dropped)
        self.summary.setText(
            f"{kept} columns will be synthesized; {len(dropped)} dropped"
            + (f" ({', '.join(dropped)})." if dropped else ".")
        )

    # -- reading the choices ------------------------------------------------------------
    def roles(self) -> dict[str, str]:
        return self.table.roles()

    def set_role(self, name: str, role: str) -> None:
        """Set a column's role (used by tests and keyboard users alike)."""
        self.table.set_role(name, role)

    def set_bounds(self, name: str, lower: str, upper: str) -> None:
        self.table.set_bounds(name, lower, upper)

    def choices(self) -> dict[str, Any]:
        """The RunConfig fields implied by the table; raises ValueError with a readable message.

        Only what the table's controls allow but a config cannot hold is checked here (two time
        columns, a time without an event); the rules on the columns' values (an event has two
        values, times are numbers of 0 or more, a lower bound not above the upper) are the engine's
        (``engine.infer_schema``), which ``prepare`` applies when Next is pressed.
        """
        roles = self.roles()
        times = [n for n, r in roles.items() if r == "time"]
        events = [n for n, r in roles.items() if r == "event"]
        if len(times) > 1 or len(events) > 1:
            raise ValueError("Choose at most one time column and one event column.")
        if bool(times) != bool(events):
            raise ValueError(
                "A survival outcome needs both a time column and an event column (or set neither)."
            )
        time = times[0] if times else None
        event = events[0] if events else None
        return {
            "time": time,
            "event": event,
            **self.table.column_choices(),
            "complete_cases": not self.model_missing.isChecked(),
            "event_value": self.event_value.currentText() if self.event_value.isVisible() else None,
            "keys": self.chosen_keys(),
            **self.rules.choices(),
        }

    def chosen_keys(self) -> tuple[str, ...] | None:
        """The key columns typed by the user; None while the suggestion is unchanged."""
        typed = self.keys.text()
        if typed.strip() == self._suggested_keys:
            return None
        return tuple(k.strip() for k in typed.split(",") if k.strip())

    # -- Next ---------------------------------------------------------------------------
    def is_complete(self) -> bool:
        return self.session.inspected is not None and not self.is_busy()

    def leave(self) -> bool:
        try:
            fields = self.choices()
        except ValueError as err:
            QMessageBox.warning(self, "latent-synth: columns", str(err))
            return False
        self.session.update(**fields)
        from dataclasses import replace

        # The analysis is chosen (and checked against these roles) on the Settings page next.
        config = replace(self.session.config(), analysis=None, outcome=None, covariates=(), per=())
        if self.session.prepared is not None and self.session.prepared.config == config:
            return True
        from engine import prepare

        self.status.setVisible(True)
        self.run_task(
            lambda progress, cancel: prepare(config, progress), self._prepared, self._failed
        )
        return False

    def _prepared(self, prepared: Any) -> None:
        self.status.setVisible(False)
        self.session.prepared = prepared
        self.session.result = None
        self.advance()

    def _failed(self, err: BaseException) -> None:
        self.status.setVisible(False)
        self.session.prepared = None
        self.show_error(err)


def event_values(inspected: Any, column: str) -> tuple[Any, Any] | None:
    """(the "not yet" value, the event value) of a two-valued event column that is not coded
    0/1, ordered as the engine reads it (dead after alive, True after False, 2 after 1); None
    for a 0/1 column or one without two values."""
    import pandas as pd

    from engine import event_labels

    frame = getattr(inspected, "frame", None)
    if frame is None or column not in frame:
        return None
    s = frame[column]
    values = list(s.dropna().unique())
    if len(values) != 2:
        return None
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        if {float(v) for v in values} <= {0.0, 1.0}:
            return None
    labels = event_labels(s)
    return (labels[0], labels[1])
