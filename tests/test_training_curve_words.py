"""Issue 44: a held-back ("validation") error that rises from the first round looked like a
failure on the Train page. The curve marks the round whose model is kept, and the note says in
plain words that early stopping kept the round where that error was lowest."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

from matplotlib.figure import Figure  # noqa: E402

from desktop.pages.train_page import rising_validation_note  # noqa: E402
from desktop.plots import loss_curve  # noqa: E402
from engine import EpochDone  # noqa: E402

# held-back error lowest at round 1, then rising for the 20 rounds early stopping waits
FROM_ONE = [
    EpochDone(e, 300, 8.0 - 0.02 * e, 8.10 + 0.01 * (e - 1), 0.1, 1, 21, "final model")
    for e in range(1, 22)
]


def test_a_line_rising_from_round_one_is_explained_as_the_kept_round():
    text = rising_validation_note({"final model": FROM_ONE})
    assert "error on rows held back from training rose after round 1" in text
    assert "kept its version from round 1, where that error was lowest" in text
    assert "not a failure" in text and "(the dot on the curve)" in text
    assert text.count(".") == 1  # one sentence


def test_the_curve_marks_the_kept_round_and_says_so():
    later = [
        EpochDone(e, 300, 8.0 - 0.02 * e, v, 0.1, 3, 23, "audit split 1")
        for e, v in enumerate([8.3, 8.2, 8.1, 8.15, 8.2], 1)
    ]
    ax = Figure().add_subplot()
    loss_curve({"audit split 1": later, "final model": FROM_ONE})(ax)
    dots = [
        (list(line.get_xdata()), list(line.get_ydata()))
        for line in ax.get_lines()
        if line.get_marker() == "o" and len(line.get_xdata())
    ]
    assert dots == [([3], [8.1]), ([1], [8.1])]  # each model's kept round
    words = [t.get_text() for t in ax.texts]
    assert words == ["kept: round 1"]  # the latest model's, in words
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "(dot: the round kept, lowest error on held-back rows)" in legend


def test_a_model_still_improving_gets_no_note():
    falling = [EpochDone(e, 300, 8.0, 8.5 - 0.1 * e, 0.1, e, e + 20, "final") for e in (1, 2)]
    assert rising_validation_note({"final": falling}) == ""
