"""What an output checker's own attack on the released file may read, beside what the same
attack reads on a fresh sample of real people (issue 43, item 2): a statement, not a reason
to change w.

A checker holds the released file and, say, as many real people who are not in it as members;
their attack (the distance to the closest released row) gives one AUC with the spread of their
own finite sample. The audit estimates the *expected* AUC; one measurement scatters around it.
So the report says both: the released file's expected AUC with the spread of one such check,
and the same check on a fresh sample of real patients (who cannot give anyone away), with its
spread, measured here on the real rows: the rows are split into three parts at random, one
part standing in for the released file, and the other two scored as members and non-members.
That spread (ties of coded columns included) is rescaled to a checker with as many unseen rows
as members (an AUC's variance goes as 1/n1 + 1/n0).

Why by hand: the statement joins the audit's fit with a reference measured on the real rows;
scipy's ``cKDTree`` does the neighbour searches (:mod:`engine.search.neighbours`).

References: Hanley & McNeil (1982) on the variance of an AUC; METHOD.md section 5.

Example:
    >>> rows = np.random.default_rng(0).standard_normal((600, 3))
    >>> s = checker_statement(rows, 0.5, 0.52, 0.004, np.random.default_rng(1))
    >>> s.fresh_mean, 0.01 < s.fresh_sd < 0.05, s.release_over > s.fresh_over
    (0.5, True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from engine.privacy.measure import membership_auc
from engine.search.neighbours import nearest_distances

PARTITIONS = 12  # random three-way splits of the real rows behind the fresh-sample spread
MAX_ROWS = 30_000  # rows drawn for those splits on a larger table


@dataclass(frozen=True)
class CheckerStatement:
    """One checker's measurement with as many unseen real rows as members (``members``): on the
    released file at ``w`` (expected AUC ``release_mean``, the spread ``release_sd`` of one such
    check, the chance ``release_over`` that it reads above the limit) and on a fresh sample of
    real people (``fresh_mean``, ``fresh_sd``, ``fresh_over``)."""

    w: float
    members: int
    limit: float
    release_mean: float
    release_sd: float
    release_over: float
    fresh_mean: float
    fresh_sd: float
    fresh_over: float

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def words(self) -> str:
        """The statement in plain words (the report and the wizard)."""
        return (
            f"An output checker who attacks the released file with as many real people who are "
            f"not in it ({self.members:,} of each) would read an AUC of about "
            f"{self.release_mean:.3f} ± {self.release_sd:.3f}, above {self.limit:g} in "
            f"{_percent(self.release_over)} of such checks. The same check on a fresh sample "
            f"of real people, who cannot give anyone away, reads {self.fresh_mean:.3f} ± "
            f"{self.fresh_sd:.3f}, above {self.limit:g} in {_percent(self.fresh_over)}: "
            "one check's spread comes from the checker's own sample, not from the release."
        )


def _percent(p: float) -> str:
    """``"about 12 %"``; ``"under 1 %"`` below one in a hundred."""
    return "under 1 %" if p < 0.01 else f"about {100 * p:.0f} %"


def fresh_sample_spread(
    rows: np.ndarray, rng: np.random.Generator, partitions: int = PARTITIONS
) -> tuple[float, float, int]:
    """(mean, SD, part size) of the distance attack's AUC when the "released file" is a fresh
    sample of real rows: ``partitions`` random splits of ``rows`` (at most ``MAX_ROWS`` of them)
    into three equal parts (members, non-members, the file). The statement takes the mean as
    0.5 (members and non-members are exchangeable there) and this SD."""
    X = np.asarray(rows, dtype=np.float64)
    if len(X) > MAX_ROWS:
        X = X[rng.choice(len(X), MAX_ROWS, replace=False)]
    third = len(X) // 3
    aucs = []
    for _ in range(partitions):
        order = rng.permutation(len(X))
        a, b, c = order[:third], order[third : 2 * third], order[2 * third : 3 * third]
        score = -nearest_distances(X[np.r_[a, b]], X[c])
        aucs.append(membership_auc(score[:third], score[third:]))
    return float(np.mean(aucs)), float(np.std(aucs, ddof=1)), third


def checker_statement(
    released_rows: np.ndarray,
    w: float,
    expected_auc: float,
    se: float,
    rng: np.random.Generator,
    *,
    limit: float = 0.55,
) -> CheckerStatement:
    """The statement for a release at ``w`` whose released-columns attack the audit expects at
    ``expected_auc`` (its fit, with the release gap) with standard error ``se``; the real rows
    in the released columns (``released_rows``) give the fresh-sample reference. A checker's
    sample: as many unseen rows as rows in the table."""
    n = len(released_rows)
    _, sd, part = fresh_sample_spread(released_rows, rng)
    mean = 0.5  # by symmetry: the measured mean only adds its own noise
    sd_checker = sd * math.sqrt((2.0 / n) / (2.0 / part))  # n members and n unseen rows
    spread = math.sqrt(se * se + sd_checker * sd_checker)
    return CheckerStatement(
        w=float(w),
        members=n,
        limit=limit,
        release_mean=float(expected_auc),
        release_sd=spread,
        release_over=float(norm.sf((limit - expected_auc) / spread)),
        fresh_mean=mean,
        fresh_sd=sd_checker,
        fresh_over=float(norm.sf((limit - mean) / sd_checker)),
    )
