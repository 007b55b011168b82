"""A count of people is whole (issue 44: "205.5 other real people" in the PDF)."""

from __future__ import annotations

import re

import pytest

from engine.report.wording import rank_sentence


@pytest.mark.parametrize(
    ("median", "said"),
    [(205.5, "about 206"), (204.5, "about 205"), (31.0, "31"), (12.25, "about 12")],
)
def test_median_rank_said_as_whole_people(median: float, said: str) -> None:
    sentence = rank_sentence(median)
    people = re.search(r"For the typical person, (.+?) other real (?:people|person)", sentence)
    assert people is not None and people.group(1) == said
    # no fraction of a person anywhere before the statistic in brackets
    assert not re.search(r"\d\.\d+ other real", sentence)


def test_exact_median_still_given_as_the_statistic() -> None:
    assert "(median rank 205.5)" in rank_sentence(205.5)


def test_one_person_is_singular() -> None:
    assert "1 other real person lies closer" in rank_sentence(1.0)
