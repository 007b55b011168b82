"""Theorem 2's epsilon for one and for several synthetic copies of a record: the value, the
sentence and the refusals, by hand (the cases kill the one-line mutants of
``epsilon_statement`` and ``epsilon_for_copies``; ``docs/mutation.md``)."""

from __future__ import annotations

import numpy as np
import pytest

import engine.privacy.release as release


def _statement(w: float, C: float = 2.0, delta: float = 0.01):
    from engine.privacy.release import epsilon_statement

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

    from engine.privacy.audit import epsilon_for_copies

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


def test_epsilon_statement_sentence_and_refusal_word_for_word() -> None:
    """C = 2 (two codes 2 apart), w = 0.5, delta = 0.01: eps = 2 + 2 sqrt(2 ln 100) = 8.07."""
    s = release.epsilon_statement(np.array([[0.0], [2.0]]), 0.5, 0.01)
    assert s.sentence == (
        "At w = 0.5 the injected noise gives local (8.07, 0.01)-differential privacy per record "
        "if the flow's latent codes of any two records lie at most C = 2 apart (exact, from the "
        f"data); this is {release.NATURE}."
    )
    for w, delta in [(-0.1, 0.01), (1.1, 0.01), (0.5, 0.0), (0.5, 1.0)]:
        with pytest.raises(ValueError, match=r"^w must lie in \[0, 1\] and delta in \(0, 1\)$"):
            release.epsilon_statement(np.array([[0.0], [2.0]]), w, delta)
