"""The disclosure check in words a checker reads (issue 44): which columns it covers and why the
others were left out, what the allowed margin is, and what the attack's figure means.

One place for the words, so that the report's section 2b, the wizard's Privacy page and the
refusal say the same thing. The report and the wizard read them through
:class:`engine.disclosure.check.DisclosureResult`'s methods (neither imports this room).

What the figures are (:mod:`engine.disclosure.check`): the attacker knows a patient's key
columns, finds the synthetic records with the same combination, and where all of them hold one
value of the target takes it as the patient's hidden value (synthpop's DiSCO): the figure is how
often that guess is right, as a share of real patients. It is not how well the file predicts the
column: the same attack with a fresh sample of real patients in the synthetic file's place is the
baseline, and the file may beat it by at most the margin.

Example:
    >>> said = coverage_words(("age", "sex"), ("died",), (("id", "identifiers, not released"),))
    >>> said.endswith("learn died (the targets); left out: id (identifiers, not released).")
    True
    >>> margin_words([5.0, 12.0])[:60]
    'Allowed margin: 5 to 12 percentage points by column: the gue'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from engine.disclosure.counts import THRESHOLD

TARGET_KINDS = frozenset({"continuous", "integer", "binary", "categorical", "event", "time"})
MAX_TARGETS = 8  # the event first, then the clinical columns in input order
MARGIN_FLOOR = 3.0  # percentage points (the measured spread of fresh samples)
MARGIN_SDS = 5.0  # times the fresh sample's SD over the halvings

BENCH_PASSED, BENCH_RUNS = 198, 200  # benchmarks/disclosure_margin.py: a release of outsiders

DROPPED = {
    "identifier": "identifiers, not released",
    "text": "free text or too many categories, not released",
    "date": "dates, not released",
    "constant": "one value only, not released",
}


def names(columns: Iterable[str]) -> str:
    """Column names joined in words: "age, sex and ethnicity"."""
    cols = [str(c) for c in columns]
    if not cols:
        return ""
    return cols[0] if len(cols) == 1 else ", ".join(cols[:-1]) + " and " + cols[-1]


def share(value: float, rows: int) -> str:
    """A percentage of real patients as it may be shown: "fewer than 10 patients" where it stands
    for so few.

    Example:
        >>> share(24.4, 400), share(1.0, 400)
        ('24 %', 'fewer than 10 patients')
    """
    if value / 100.0 * rows < THRESHOLD - 1e-9:
        return f"fewer than {THRESHOLD} patients"
    return f"{value:.0f} %"


def left_out_columns(
    columns: Iterable[Any], keys: Sequence[str], targets: Sequence[str], chosen: bool = False
) -> tuple[tuple[str, str], ...]:
    """Each input column that is neither a key nor a target, with why (``columns`` are
    :class:`engine.columns.kinds.ColumnSpec`; ``chosen``: the user named the targets)."""
    out = []
    for c in columns:
        if c.name in keys or c.name in targets:
            continue
        if c.action != "synthesize":
            why = DROPPED.get(c.kind, "not released")
            if str(c.reason).startswith("dropped by the user"):
                why = "left out of the release by you"
        elif c.kind not in TARGET_KINDS:
            why = "dates that are not key columns"
        elif chosen:
            why = "not chosen as targets"
        else:
            why = (
                f"the check measures at most {MAX_TARGETS} targets: the event first, then in order"
            )
        out.append((str(c.name), why))
    return tuple(out)


def coverage_words(
    keys: Sequence[str], targets: Sequence[str], left_out: Sequence[tuple[str, str]]
) -> str:
    """Which columns the check covers, and why the others were left out, in one sentence."""
    said = (
        f"The check assumes an attacker knows each patient's {names(keys)} (the key columns) and "
        f"tries to learn {names(targets)} (the targets)"
    )
    if not left_out:
        return said + "; every other column is covered."
    groups: dict[str, list[str]] = {}
    for name, why in left_out:
        groups.setdefault(why, []).append(name)
    parts = [f"{names(cols)} ({why})" for why, cols in groups.items()]
    return f"{said}; left out: {'; '.join(parts)}."


def guess_words(keys: Sequence[str], target: str, release: float, fresh: float, rows: int) -> str:
    """What one target's figure means: the attack's success at guessing a hidden value from
    matching synthetic records, beside the same attack on a fresh sample of real patients.

    Example:
        >>> guess_words(("age",), "died", 24.0, 20.0, 400).endswith("for 20 % of real patients")
        True
    """
    return (
        f"{target}: guessing a patient's hidden value from the synthetic records that match their "
        f"{names(keys)} (where all of them agree) is right for {_of_patients(release, rows)}; the "
        f"same guess from a fresh sample of real patients instead (the baseline) is right for "
        f"{_of_patients(fresh, rows)}"
    )


def margin_words(margins: Sequence[float], capped: bool = False) -> str:
    """What the allowed margin is and why it is that number (the margins of every target)."""
    low, high = min(margins, default=MARGIN_FLOOR), max(margins, default=MARGIN_FLOOR)
    if round(low) == round(high):
        amount = f"{low:.0f} percentage point{'' if round(low) == 1 else 's'}"
    else:
        amount = f"{low:.0f} to {high:.0f} percentage points by column"
    said = (
        f"Allowed margin: {amount}: the "
        "guess from the synthetic file may be right for at most that much larger a share of the "
        "real patients than the same guess from the fresh sample. "
    )
    if capped:
        return said + "You set this limit yourself, below the usual one."
    return said + (
        "Two fresh samples of real patients differ by chance, the more so in a small table, so "
        f"the margin is {MARGIN_SDS:.0f} times the spread seen between fresh samples over the "
        f"random splits, and at least {MARGIN_FLOOR:.0f} points; a file made only of real people "
        f"who are not in the table passed this rule in {BENCH_PASSED} of {BENCH_RUNS} test runs."
    )


def _of_patients(value: float, rows: int) -> str:
    shown = share(value, rows)
    return (
        f"fewer than {THRESHOLD} real patients"
        if "patients" in shown
        else f"{shown} of real patients"
    )
