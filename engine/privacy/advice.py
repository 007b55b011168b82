"""What would help a refused table, measured on that table (issue 43, item 3): more rows, or
fewer columns.

A refusal says the floor (the Gaussian copula) gives members away at the smallest w. Two
remedies are plausible and both can be measured on the table itself:

* **More rows.** The floor is audited again on a random half of the rows (the same design,
  cross-fitted folds). If the attack reads higher on half the rows, more rows lower it; the
  trend AUC - 0.5 ~ n^-a (a from the two sizes) says about how many rows would bring the
  estimate under the limit with room for its uncertainty. If half the rows read no higher,
  more rows alone would not help, and the advice says so.
* **Fewer columns.** The distance attack at the smallest w with each column left out
  (:func:`engine.privacy.drivers.column_drivers`): a column whose absence lowers it by at
  least 0.01 is named, with the figures.

Once the user follows the advice (drops a column, adds rows) the run measures again, so the
advice changes with the table.

References: METHOD.md section 5.

Example:
    >>> a = RowsAdvice(rows=120, half_rows=60, fit=0.58, half_fit=0.62, limit=0.55)
    >>> a.helps, a.rows_needed
    (True, 400)
    >>> RowsAdvice(120, 60, 0.58, 0.62, limit=0.505).rows_needed is None  # 0.495: unreachable
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TARGET_MARGIN = 0.01  # the extrapolated estimate must be this far under the limit
MAX_FACTOR = 20  # rows needed beyond this many times the table are not promised


@dataclass(frozen=True)
class RowsAdvice:
    """The floor's fitted AUC at the smallest w on all ``rows`` (``fit``) and on a random half
    (``half_fit``); ``half_rows`` 0 when the table was too small to halve (under 100 rows)."""

    rows: int
    half_rows: int
    fit: float
    half_fit: float
    limit: float

    @property
    def helps(self) -> bool:
        """Whether more rows lowered the attack (half the rows read higher by 0.005 or more)."""
        return self.half_rows > 0 and self.half_fit - self.fit >= 0.005

    @property
    def rows_needed(self) -> int | None:
        """Rows at which the trend AUC - 0.5 ~ n^-a brings the estimate to the limit minus
        0.01 (None: no trend, or more than ``MAX_FACTOR`` times the table)."""
        if not self.helps or self.fit <= 0.5:
            return None
        target = self.limit - TARGET_MARGIN - 0.5
        if target <= 0:  # a limit within 0.01 of chance: no number of rows is promised
            return None
        if self.fit - 0.5 <= target:
            return self.rows
        gain = (self.half_fit - 0.5) / (self.fit - 0.5)
        a = math.log(gain) / math.log(self.rows / self.half_rows)
        factor = ((self.fit - 0.5) / target) ** (1.0 / a)
        return None if factor > MAX_FACTOR else int(math.ceil(self.rows * factor / 10.0) * 10)

    def words(self) -> str:
        """The advice on rows in plain words.

        Example:
            >>> RowsAdvice(120, 60, 0.58, 0.58, 0.55).words()[:57]
            'On half the rows the attack read about the same (0.580 ag'
        """
        if self.half_rows == 0:
            return (
                f"With {self.rows} rows the table is too small to measure whether more rows "
                "would help."
            )
        measured = (
            f"(measured on this table: {self.half_fit:.3f} on a random half of the rows, "
            f"{self.fit:.3f} on all {self.rows:,})"
        )
        if not self.helps:
            return (
                f"On half the rows the attack read about the same ({self.half_fit:.3f} against "
                f"{self.fit:.3f} on all {self.rows:,}): more rows alone would not help; "
                "leaving out or coarsening the columns that single people out is what can."
            )
        needed = self.rows_needed
        if needed is None:
            return (
                f"More rows lower the attack {measured}, but not quickly enough to promise a "
                "release with a realistic number of rows."
            )
        return (
            f"More rows lower the attack {measured}; if the trend holds, about {needed:,} rows "
            "would bring it under the limit."
        )

    def to_dict(self) -> dict:
        return {
            "rows": self.rows,
            "half_rows": self.half_rows,
            "fit": self.fit,
            "half_fit": self.half_fit,
            "helps": self.helps,
            "rows_needed": self.rows_needed,
        }
