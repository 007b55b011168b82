"""More guards for issue 18 (item 4): small, hand-computed cases that kill the one-line mutants
``make mutate`` left alive in the disclosure rules, the accountant, the neighbour counts and the
release metrics. Each test names what it pins down; ``docs/mutation.md`` lists the rest."""

from __future__ import annotations

import numpy as np

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
