"""The step-by-step Columns page preselects the survival pair that the headers suggest but the
kinds alone did not set (issue 28's recognition, which the one-click path already used), and
says so in words; a file with no such pair gets nothing preselected."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pytestqt")

from tests.gui_helpers import load

pytestmark = pytest.mark.gui


def _cohort(n: int = 240, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(40, 80, n),
            "fu_len": np.round(rng.exponential(5.0, n), 2),  # not named like a follow-up time
            "death": rng.integers(0, 2, n),
            "sbp": np.round(rng.normal(130, 15, n), 1),
        }
    )


def test_a_likely_pair_is_preselected_and_said(window, qtbot, tmp_path):
    path = tmp_path / "cohort.csv"
    _cohort().to_csv(path, index=False)
    load(window, qtbot, path)
    window.next()
    columns = window.pages[1]
    roles = columns.roles()
    assert roles["fu_len"] == "time" and roles["death"] == "event"
    assert roles["age"] == "covariate" and roles["sbp"] == "covariate"
    assert columns.outcome_note.isVisibleTo(window)
    text = columns.outcome_note.text()
    assert "fu_len" in text and "death" in text and "follow-up time" in text
    assert "--" not in text and "None" not in text
    chosen = columns.choices()  # what Next hands to the engine
    assert chosen["time"] == "fu_len" and chosen["event"] == "death"


def test_no_pair_no_preselection(window, qtbot, tmp_path):
    path = tmp_path / "plain.csv"
    _cohort().drop(columns=["death"]).rename(columns={"fu_len": "weight"}).to_csv(path, index=False)
    load(window, qtbot, path)
    window.next()
    columns = window.pages[1]
    assert set(columns.roles().values()) == {"covariate"}
    assert not columns.outcome_note.isVisibleTo(window)


def test_the_note_follows_the_roles_once_changed(window, qtbot, tmp_path):
    """Issue 44: the note kept naming the preselected pair after the user changed the roles."""
    path = tmp_path / "cohort.csv"
    frame = _cohort()
    frame["fu_days"] = frame.pop("fu_len")
    frame["cvd"] = np.random.default_rng(2).integers(0, 2, len(frame))
    frame.to_csv(path, index=False)
    load(window, qtbot, path)
    window.next()
    columns = window.pages[1]
    assert columns.roles()["death"] == "event"  # the death word, not the history flag
    columns.set_role("death", "covariate")
    columns.set_role("cvd", "event")
    text = columns.outcome_note.text()
    assert "<i>cvd</i> (set by you)" in text and "death" not in text
