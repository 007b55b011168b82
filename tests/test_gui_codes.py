"""Issue 32 item 1 on the Columns page: a numeric code is shown as a category with the reason
(the codes, ordered or not, and the merged rare level), and the user can switch it back to a
number, which the engine then models as one."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("MPLBACKEND", "Agg")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("PySide6")

from tests.gui_helpers import load

pytestmark = pytest.mark.gui


def test_a_code_is_shown_as_a_category_with_its_reason_and_can_be_switched(
    window, qtbot, tmp_path: Path
) -> None:
    rng = np.random.default_rng(0)
    n = 300
    race = np.r_[np.repeat(1, 160), np.repeat(2, 90), np.repeat(3, 44), np.repeat(4, 6)]
    frame = pd.DataFrame(
        {
            "race": rng.permutation(race),
            "age": rng.normal(60, 9, n).round(1),
            "children": rng.poisson(1.5, n).clip(0, 5),
        }
    )
    path = tmp_path / "coded.csv"
    frame.to_csv(path, index=False)
    load(window, qtbot, path)
    window.go_to(1)
    page = window.pages[1]
    rows = {page.table.item(r, 0).text(): r for r in range(page.table.rowCount())}
    why = page.table.item(rows["race"], 6).text()
    assert page.table.cellWidget(rows["race"], 1).currentText() == "categorical"
    assert "numbers coding 4 unordered groups (race)" in why
    assert "1 level held by fewer than 10 people merged into 'other (fewer than 10)'" in why
    assert page.table.cellWidget(rows["children"], 1).currentText() == "integer"  # a count
    page.table.cellWidget(rows["race"], 1).setCurrentText("integer")
    assert ("race", "integer") in page.choices()["kinds"]
    from engine.columns.schema import infer_schema

    spec = infer_schema(frame, kinds=dict(page.choices()["kinds"])).by_name("race")
    assert spec.kind == "integer" and spec.merged == 0
