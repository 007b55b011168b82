"""Issue 30 on the Columns page: the rules found in the real rows are listed and ticked, the
user unticks one or adds their own (checked against the real rows, one message when broken),
and the engine keeps exactly the ticked ones."""

from __future__ import annotations

import pytest

from tests.gui_helpers import load
from tests.test_rules import EXPECTED, rules_table

pytestmark = pytest.mark.gui


def test_columns_page_lists_keeps_and_adds_rules(window, qtbot, tmp_path):
    from desktop.qt import Qt

    path = tmp_path / "rules.csv"
    rules_table(400).to_csv(path, index=False)
    load(window, qtbot, path)
    window.next()  # -> Columns
    columns = window.pages[1]
    box = columns.rules
    assert set(box.texts()) == EXPECTED
    # untick one found rule
    for i in range(box.list.count()):
        if box.list.item(i).data(Qt.ItemDataRole.UserRole) == "nodes >= 0":
            box.list.item(i).setCheckState(Qt.CheckState.Unchecked)
    # a rule the real rows break is not added, and says so once, on the page
    box.entry.setText("age < 70")
    box.add_typed()
    assert box.problem.isVisible() and "real rows break it" in box.problem.text()
    assert "age < 70" not in box.texts()
    # a rule the user writes the other way round is read and shown in the shared words
    box.entry.setText("age >= 18")
    box.add_typed()
    assert not box.problem.isVisible() and "age >= 18" in box.texts()
    assert box.choices() == {"rules": ("age >= 18",), "rules_off": ("nodes >= 0",)}
    columns.set_role("futime", "time")
    columns.set_role("status", "event")
    window.next()  # prepare() on a worker, then Settings
    qtbot.waitUntil(lambda: window.stack.currentIndex() == 2, timeout=30000)
    rules = window.session.prepared.encoder.rules
    kept = {r.text for r in rules.kept}
    assert kept == (EXPECTED - {"nodes >= 0"}) | {"age >= 18"}
    assert [(r.text, why) for r, why in rules.not_kept] == [("nodes >= 0", "removed by you")]
