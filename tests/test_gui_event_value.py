"""Issue 33: an event column of words or booleans gets an in-app choice of which value means the
event happened (on main a True/False event was refused with "recode it as 0/1")."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.gui_helpers import load

pytestmark = pytest.mark.gui


def test_the_columns_page_asks_which_value_is_the_event(window, qtbot, small_demo, tmp_path):
    frame = pd.read_csv(small_demo, dtype={"participant_id": str})
    frame["vital"] = frame.pop("cvd").map({0: "alive", 1: "dead"})
    frame["smoker"] = frame["age"] > 50  # a True/False column, later chosen as the event
    path = tmp_path / "cohort.csv"
    frame.to_csv(path, index=False)
    load(window, qtbot, path)
    window.next()  # -> Columns
    columns = window.pages[1]
    columns.set_role("time_cvd_years", "time")
    columns.set_role("vital", "event")
    assert columns.event_value.isVisible()
    items = [columns.event_value.itemText(i) for i in range(columns.event_value.count())]
    assert items == ["dead", "alive"]  # the likely answer preselected
    assert columns.choices()["event_value"] == "dead"
    # a True/False column as the event: True preselected, and the user can pick False
    columns.set_role("vital", "covariate")
    columns.set_role("smoker", "event")
    assert [columns.event_value.itemText(i) for i in range(2)] == ["True", "False"]
    columns.event_value.setCurrentText("False")
    assert columns.choices()["event_value"] == "False"
    # a plain 0/1 event needs no question
    columns.set_role("smoker", "covariate")
    columns.set_role("age", "covariate")
    columns.set_role("vital", "event")
    window.next()  # prepare() on a worker, then Settings
    qtbot.waitUntil(lambda: window.stack.currentIndex() == 2, timeout=30000)
    spec = window.session.prepared.schema.by_name("vital")
    assert (spec.kind, spec.labels) == ("event", ("alive", "dead"))
