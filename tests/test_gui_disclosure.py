"""The wizard's side of identity and attribute disclosure (issue 29): the Columns page suggests
the key columns and hands the user's choice to the engine; the Privacy page says what knowing
them gives from the synthetic file and from a fresh sample of real patients."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("MPLBACKEND", "Agg")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("PySide6")

from tests.gui_helpers import DEMO_FIELDS, load

pytestmark = pytest.mark.gui


def test_columns_page_suggests_keys_and_hands_the_choice_to_the_engine(
    window, qtbot, messages, small_demo
):
    load(window, qtbot, small_demo)
    window.go_to(1)
    columns = window.pages[1]
    # one sub-study: sex is constant (left out), so age is the only key recognised
    assert columns.keys.text() == "age"
    assert columns.choices()["keys"] is None  # the suggestion, left to the engine
    columns.keys.setText("age, hdl")
    assert columns.choices()["keys"] == ("age", "hdl")
    window.session.prepared = None
    assert not columns.leave()  # starts the worker
    qtbot.waitUntil(lambda: window.session.prepared is not None, timeout=60000)
    assert window.session.prepared.config.keys == ("age", "hdl")
    # a name that is not a column stops at prepare, in words that name no flag
    columns.keys.setText("age, postcode")
    window.session.prepared = None
    assert not columns.leave()
    qtbot.waitUntil(lambda: not columns.is_busy(), timeout=60000)
    shown = " ".join(text for _, text in messages)
    assert "the key columns name 'postcode'" in shown and "--" not in shown


def test_privacy_page_says_what_knowing_the_keys_gives(window, qtbot, small_demo):
    from engine.pipeline import RunConfig, prepare, synthesize

    fields = dict(w_grid=(0.0, 0.3, 0.6), repeats=2, seed=1, device="cpu", auc_max=0.6)
    config = RunConfig(input=small_demo, report=False, **DEMO_FIELDS, **fields)
    result = synthesize(prepare(config))
    assert result.release.disclosure is not None
    load(window, qtbot, Path(small_demo), **DEMO_FIELDS)
    window.session.prepared, window.session.result = result.prepared, result
    window.go_to(4)
    summary = window.pages[4].summary.text()
    assert "attacker knows each patient&#x27;s age (the key columns)" in summary
    event = result.release.disclosure.targets[0]
    assert (
        f"agree) is right for {event.disco_release:.0f} % of real patients; the same guess from a "
        f"fresh sample of real patients instead (the baseline) is right for "
        f"{event.disco_fresh:.0f} % of real patients" in summary
    )
    assert "It discloses no more than a fresh sample of real patients would." in summary
