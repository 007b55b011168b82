"""More guards for issue 18 (item 4): small, hand-computed cases that kill the one-line mutants
``make mutate`` left alive in the disclosure rules, the accountant, the neighbour counts and the
release metrics. Each test names what it pins down; ``docs/mutation.md`` lists the rest."""

from __future__ import annotations

import numpy as np
import pytest

from engine import disclosure


def test_safe_count_threshold_is_strict_and_rounds_to_an_integer() -> None:
    """9.6 is below 10 (hidden); 10 is shown; 10.4 shows as 10; a custom threshold of 5."""
    assert disclosure.safe_count(9.6) == "< 10"
    assert disclosure.safe_count(10) == "10"
    assert disclosure.safe_count(10.4) == "10"
    assert disclosure.safe_count(1234567.6) == "1,234,568"
    assert disclosure.safe_count(4, 5) == "< 5"
    assert disclosure.safe_count(5, 5) == "5"
    assert disclosure.safe_count(np.nan) == disclosure.NOT_AVAILABLE


# --- Theorem 2's epsilon for one and for several copies ---------------------------------------


def _statement(w: float, C: float = 2.0, delta: float = 0.01):
    from engine.audit_release import epsilon_statement

    return epsilon_statement(np.array([[0.0], [C]]), w, delta)


def test_epsilon_statement_by_hand() -> None:
    """C = 2 (two codes 2 apart), w = 0.5, delta = 0.01: eps = 0.5*4/(2*0.5) + 2*sqrt(2*0.5*ln
    100)/sqrt(0.5) = 2 + 2*sqrt(2 ln 100) = 8.0703; w = 0.2: 0.25 + 2*sqrt(0.4 ln 100)/sqrt(0.8)."""
    import math

    s = _statement(0.5)
    assert (s.w, s.delta, s.C, s.C_method) == (0.5, 0.01, 2.0, "exact")
    assert s.value == pytest.approx(2.0 + 2.0 * math.sqrt(2.0 * math.log(100.0)), rel=1e-12)
    s2 = _statement(0.2, C=3.0, delta=1e-5)
    by_hand = 0.2 * 9 / (2 * 0.8) + 3.0 * math.sqrt(2 * 0.2 * math.log(1e5)) / math.sqrt(0.8)
    assert s2.value == pytest.approx(by_hand, rel=1e-12)
    assert _statement(0.0).value == 0.0
    assert _statement(1.0).value == math.inf
    assert s.sentence.startswith("At w = 0.5 the injected noise gives local (8.07, 0.01)-")
    assert "C = 2 apart (exact, from the data)" in s.sentence
    assert s.sentence.endswith(f"this is {s.nature}.")
    for w, delta in [(-0.1, 0.01), (1.1, 0.01), (0.5, 0.0), (0.5, 1.0)]:
        with pytest.raises(ValueError, match=r"w must lie in \[0, 1\] and delta in \(0, 1\)"):
            _statement(w, delta=delta)


def test_epsilon_for_copies_composes_renyi_dp_by_hand() -> None:
    """rho = M w C^2 / (2 (1 - w)); eps = rho + 2 sqrt(rho ln(1/delta)). C = 2, w = 0.5, M = 4:
    rho = 8, eps = 8 + 4 sqrt(2 ln 100) = 20.14; one copy returns the statement itself."""
    import math

    from engine.audit import epsilon_for_copies

    s = _statement(0.5)
    assert epsilon_for_copies(s, 1) is s
    four = epsilon_for_copies(s, 4)
    assert four.value == pytest.approx(8.0 + 4.0 * math.sqrt(2.0 * math.log(100.0)), rel=1e-12)
    assert (four.w, four.C, four.delta, four.C_method) == (s.w, s.C, s.delta, s.C_method)
    two = epsilon_for_copies(_statement(0.2, C=3.0, delta=1e-5), 2)
    rho = 2 * 0.2 * 9.0 / (2 * 0.8)
    assert two.value == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e5)), rel=1e-12)
    assert two.sentence.startswith("At w = 0.2 with 2 synthetic copies of every record")
    assert f"local ({two.value:.3g}, 1e-05)" in two.sentence
    assert "the 2 copies" in two.sentence and two.sentence.endswith(f"this is {s.nature}.")
    assert epsilon_for_copies(_statement(1.0), 3).value == math.inf
    with pytest.raises(ValueError, match="^copies must be at least 1$"):
        epsilon_for_copies(s, 0)


# --- the "< 10" rules ---------------------------------------------------------------------------


def test_small_count_and_safe_total_by_hand() -> None:
    """JSON counts: 9.6 hidden, 10.4 -> 10; a total 1-9 above the shown figure is hidden, 0 or
    10 above is kept; None and NaN stay unavailable."""
    assert disclosure.small_count(9.6) == "< 10"
    assert disclosure.small_count(10.4) == 10 and isinstance(disclosure.small_count(10.4), int)
    assert disclosure.small_count(float("nan")) is None
    assert disclosure.safe_total(409, 400) == "< 10 more than the rows used"
    assert disclosure.safe_total(401, 400) == "< 10 more than the rows used"
    assert disclosure.safe_total(410, 400) == 410
    assert disclosure.safe_total(400, 400) == 400
    assert disclosure.safe_total(399.6, None) == 400 and isinstance(
        disclosure.safe_total(399.6, None), int
    )
    assert disclosure.safe_total(None, 400) is None
    assert disclosure.safe_total(395, 400) == 395  # fewer than shown reveals nothing new


def test_safe_bounds_keep_ten_rows_beyond_each_bound() -> None:
    """0..29: the 10th smallest is 9, the 10th largest 20; 3 values shrink to the middle one;
    4 values to the two middle ones; text and missing entries are ignored."""
    assert disclosure.safe_bounds(list(range(30))) == (9.0, 20.0)
    assert disclosure.safe_bounds(list(range(30))[::-1]) == (9.0, 20.0)
    assert disclosure.safe_bounds(list(range(20))) == (9.0, 10.0)
    assert disclosure.safe_bounds([4.0, 1.0, 3.0, 2.0]) == (2.0, 3.0)
    assert disclosure.safe_bounds([5.0]) == (5.0, 5.0)
    assert disclosure.safe_bounds(list(range(30)), k=2) == (1.0, 28.0)
    assert disclosure.safe_bounds(["x", None, 7, "8"] + [float("nan")]) == (7.0, 8.0)


def test_copy_masks_by_hand() -> None:
    """Synthetic rows: a copy of a duplicated real row, a copy of a unique one, a new row, and a
    row that differs in the second column only."""
    import pandas as pd

    real = pd.DataFrame({"a": [1, 1, 2, 3], "b": ["x", "x", "y", "z"]})
    synth = pd.DataFrame({"a": [1, 2, 4, 3], "b": ["x", "y", "y", "y"]})
    any_copy, unique_copy = disclosure.copy_masks(real, synth)
    assert any_copy.tolist() == [True, True, False, False]
    assert unique_copy.tolist() == [False, True, False, False]
    # extra synthetic columns are ignored: only the real table's columns are compared
    any2, _ = disclosure.copy_masks(real, synth.assign(c=[9, 9, 9, 9]))
    assert any2.tolist() == [True, True, False, False]


def test_coarse_km_grid_by_hand() -> None:
    """Times 1..40, events at every time: the 10th largest time is 31 -> end 31; 12 steps of
    31/12 hold 2-3 events each, so intervals merge until each holds >= 10 events."""
    t = np.arange(1.0, 41.0)
    grid = disclosure.coarse_km_grid(t, np.ones(40, dtype=bool))
    assert grid[0] == 0.0 and grid[-1] <= 31.0
    counts = np.histogram(t, bins=grid)[0]
    assert ((counts == 0) | (counts >= 10)).all()
    assert len(grid) == 4  # 0, then three intervals of >= 10 events
    # no event at all: no merging, 12 equal steps up to 31
    free = disclosure.coarse_km_grid(t, np.zeros(40, dtype=bool))
    np.testing.assert_allclose(free, np.linspace(0.0, 31.0, 13))
    np.testing.assert_allclose(
        disclosure.coarse_km_grid(t, np.zeros(40, dtype=bool), intervals=4), [0, 7.75, 15.5, 23.25, 31]
    )
    # fewer than 10 records, or a 10th-largest time of 0: only the origin
    assert disclosure.coarse_km_grid(np.arange(9.0), np.ones(9)).tolist() == [0.0]
    assert disclosure.coarse_km_grid(np.arange(10.0), np.ones(10)).tolist() == [0.0]
    assert disclosure.coarse_km_grid(np.arange(11.0), np.zeros(11)).tolist()[-1] == 1.0


def test_coarse_km_grid_counts_events_on_the_edge_once() -> None:
    """Events exactly on a grid time belong to the interval that ends there (right-closed)."""
    t = np.array([5.0] * 10 + [10.0] * 10 + [12.0] * 10)
    e = np.ones(30, dtype=bool)
    grid = disclosure.coarse_km_grid(t, e, intervals=2)
    # end = 10th largest = 12 -> 12; edges 0, 6, 12: 10 events in (0, 6], 20 in (6, 12]
    assert grid.tolist() == [0.0, 6.0, 12.0]


# --- formula escaping and gradient clipping ---------------------------------------------------


@pytest.mark.parametrize("first", ["=", "+", "-", "@", "\t", "\r", "\n", "\0"])
def test_every_formula_trigger_is_escaped_and_nothing_else(first: str) -> None:
    from engine.export import escape_formula

    assert escape_formula(first + "A1") == "'" + first + "A1"
    assert escape_formula("A1" + first) == "A1" + first
    assert escape_formula("") == ""
    assert escape_formula("'=x") == "'=x"


def test_clip_gradients_scales_the_whole_record_by_hand() -> None:
    """Two parameters; record 0 has norm sqrt(9 + 16 + 144) = 13 -> scaled by 2/13 (clip 2);
    record 1 has norm 1 (under the clip) and is left alone, not scaled up."""
    import torch

    from engine.dp_train import clip_gradients

    grads = {"a": torch.tensor([[3.0, 4.0], [0.6, 0.0]]), "b": torch.tensor([[[12.0]], [[0.8]]])}
    out = clip_gradients(grads, 2.0)
    assert out["a"].tolist()[0] == pytest.approx([6 / 13, 8 / 13], abs=1e-6)
    assert out["b"].tolist()[0][0][0] == pytest.approx(24 / 13, abs=1e-6)
    assert out["a"].tolist()[1] == pytest.approx([0.6, 0.0], abs=1e-7)
    assert out["b"].tolist()[1][0][0] == pytest.approx(0.8, abs=1e-7)
    assert set(out) == {"a", "b"} and out["b"].shape == (2, 1, 1)
