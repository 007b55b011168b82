"""The Kaplan-Meier plot's time axis covers the real follow-up, in the time column's own units
and named after it (issue 44: a 60-row table with follow-up to 1,627 days was drawn on 0-140)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from engine.disclosure.ranges import nice_floor
from engine.stats.fidelity import km_comparison

os.environ.setdefault("MPLBACKEND", "Agg")


def _extract(seed: int = 1, n: int = 60) -> pd.DataFrame:
    """A small extract: follow-up in days up to about 1,600, about 40 % deaths."""
    rng = np.random.default_rng(seed)
    days = np.round(rng.exponential(500, n)).clip(1, 1627)
    days[np.argmax(days)] = 1627
    return pd.DataFrame({"fu_days": days, "died": (rng.random(n) < 0.4).astype(int)})


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_grid_reaches_where_ten_patients_remain_followed_up(seed: int) -> None:
    real = _extract(seed)
    synth = _extract(seed + 100)
    km = km_comparison(real, synth, "fu_days", "died")
    tenth = float(np.sort(real["fu_days"])[-10])  # 10 real patients still followed up
    assert km.grid[0] == 0.0
    assert km.grid[-1] >= 0.9 * min(tenth, synth["fu_days"].max())
    assert km.grid[-1] <= tenth  # still no single patient's time
    # every drop of the real curve still reflects no event or at least 10 events
    events = np.sort(real.loc[real["died"] == 1, "fu_days"].to_numpy())
    counts = np.diff(np.searchsorted(events, km.grid, "right"))
    assert ((counts == 0) | (counts >= 10)).all()
    assert km.time_column == "fu_days"


def test_the_wizard_axis_covers_the_follow_up_and_names_the_column() -> None:
    from matplotlib.figure import Figure

    from desktop.plots import km_curves

    real = _extract(1)
    km = km_comparison(real, _extract(101), "fu_days", "died").to_dict()
    ax = Figure().add_subplot(1, 1, 1)
    km_curves(km)(ax)
    end = nice_floor(float(np.sort(real["fu_days"])[-10]))
    assert end > 900  # the follow-up the table has, not a first interval of it
    assert ax.get_xlim()[0] == 0.0 and ax.get_xlim()[1] >= end
    assert ax.get_xlabel() == "fu_days"


def test_the_report_figure_covers_the_follow_up_too() -> None:
    from engine.report.data import km_curves

    real = _extract(1)
    km = km_curves(real, _extract(101), "fu_days", "died")
    assert km is not None
    assert km.times[-1] == nice_floor(float(np.sort(real["fu_days"])[-10]))
    assert "from 0 to " + f"{km.times[-1]:g}" in km.note
