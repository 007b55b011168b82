"""The fidelity verdict: would an analyst reach the same conclusions from the synthetic table?

One computation (:func:`fidelity_verdict`), made once by the pipeline and rendered by the PDF's
first page, the wizard's Fidelity page and the one-click summary, so all three say the same.

Flags:

* **a coefficient** when its synthetic estimate lies more than :data:`Z_GAP_LIMIT` (2) real
  standard errors from the real one (``|β_S − β_R| / se_R``), or when the two 95 % confidence
  intervals overlap less than :data:`OVERLAP_LIMIT` (0.5; Karr et al. 2006);
* **a column** (:mod:`engine.stats.shifts`) when its distribution differs from the real one by
  more than two samples of the real table differ by chance: the Kolmogorov-Smirnov distance
  (numeric columns) or the total variation distance (categorical and two-valued columns) against
  a *real-holdout reference level* (:func:`column_shifts`).

The reference level is computed honestly from the real table itself: the table (at most
:data:`engine.stats.shifts.REFERENCE_ROWS` rows of it) is split at random into two halves 50
times, the same distance is measured between the halves,
and the 95th percentile of those distances is rescaled from two halves (n/2 and n/2 rows) to the
sizes compared (n real and m synthetic rows) by the usual ``sqrt(1/n + 1/m)`` scaling of a
two-sample distance. It is the level that two real samples of these sizes exceed only one time
in twenty. The split uses a fixed seed, so the same table gives the same level; no real value is
shown, only distances between distributions.

References: Karr, Kohnen, Oganian, Reiter & Sanil (2006) Am Stat 60:224 (CI overlap);
Kolmogorov-Smirnov two-sample statistic (``scipy.stats.ks_2samp``); issue 13 item 7.

Example:
    >>> age = coefficient_flag("age", z_gap=2.5, ci_overlap=0.6)
    >>> flags = [age, coefficient_flag("sex", 1.5, 0.7)]
    >>> v = fidelity_verdict(flags, ())
    >>> [c.name for c in v.flagged_coefficients], v.same_conclusions
    (['age'], False)
    >>> v.line
    'Differences to check: the effect of age (2.5 standard errors apart).'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.disclosure.counts import finite as _finite
from engine.stats.lead import changes, exposure_sentence
from engine.stats.shifts import REFERENCE_METHOD, ColumnFlag
from engine.stats.utility import PropensityUtility

Z_GAP_LIMIT = 2.0
OVERLAP_LIMIT = 0.5
INTERCEPTS = ("(intercept)", "intercept", "const")
MIN_JUDGED_ROWS = 100  # fewer real rows: two halves differ by chance as much as a poor copy


@dataclass(frozen=True)
class CoefficientFlag:
    """One coefficient's gap real vs synthetic and whether it is flagged (and why)."""

    name: str
    z_gap: float | None
    ci_overlap: float | None
    flagged: bool
    reasons: tuple[str, ...] = ()
    shown: bool = True  # False: a term of a group under 10 (numbers withheld, name only)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe; a withheld term keeps only its name and flag."""
        return {
            "name": self.name,
            "z_gap": _finite(self.z_gap) if self.shown else None,
            "ci_overlap": _finite(self.ci_overlap) if self.shown else None,
            "flagged": self.flagged,
            "reasons": list(self.reasons) if self.shown else [],
        }


@dataclass(frozen=True)
class FidelityVerdict:
    """Per-coefficient and per-column flags and the one overall line people read."""

    coefficients: tuple[CoefficientFlag, ...]
    columns: tuple[ColumnFlag, ...]
    model_compared: bool
    utility: PropensityUtility | None = None  # general utility (pMSE), issue 28
    correlation: float | None = None  # the largest |correlation difference| over column pairs
    lead: str | None = None  # the exposure's changed effect in words (engine.stats.lead)
    model_error: str | None = None  # why the outcome model could not be fitted
    rows: int | None = None  # real rows compared (a table under MIN_JUDGED_ROWS is not judged)
    largest_smd: float | None = None  # largest standardised mean difference of a numeric column
    model_name: str = "outcome model"

    @property
    def flagged_coefficients(self) -> tuple[CoefficientFlag, ...]:
        """The coefficients to check."""
        return tuple(c for c in self.coefficients if c.flagged)

    @property
    def flagged_columns(self) -> tuple[ColumnFlag, ...]:
        """The columns to check."""
        return tuple(c for c in self.columns if c.flagged)

    @property
    def same_conclusions(self) -> bool:
        """True when nothing is flagged, the model (when one was asked for) was fitted and the
        table has enough rows to judge."""
        return (
            not self.flagged_coefficients
            and not self.flagged_columns
            and self.model_error is None
            and not self._too_few_rows
        )

    @property
    def _too_few_rows(self) -> bool:
        return self.rows is not None and self.rows < MIN_JUDGED_ROWS

    @property
    def headline(self) -> str:
        """``"Same conclusions"`` (an outcome model was compared), ``"Distributions match"``
        (none was), ``"Differences to check"``, ``"The model could not be fitted"`` or ``"Too
        few rows to judge"``."""
        if self.model_error is not None:
            return "The model could not be fitted"
        if not self.flagged_coefficients and not self.flagged_columns and self._too_few_rows:
            return "Too few rows to judge"
        if not self.same_conclusions:
            return "Differences to check"
        return "Same conclusions" if self._model_judged else "Distributions match"

    @property
    def _model_judged(self) -> bool:
        return self.model_compared and bool(self.coefficients)

    @property
    def compared(self) -> str:
        """What was compared, in words (the verdict claims nothing beyond it)."""
        what = "column distributions, correlations"
        if self.utility is not None:
            what += " and a propensity score"
        return what + (" and the outcome model" if self._model_judged else "")

    @property
    def line(self) -> str:
        """The overall line in plain words, naming what is flagged.

        Example:
            >>> shift = ColumnFlag("chol", "KS", 0.2, 0.05, True)
            >>> fidelity_verdict((), [shift]).line  # doctest: +NORMALIZE_WHITESPACE
            'Differences to check: the distribution of chol (differs more than two halves of the
            real table do); no outcome model was compared.'
        """
        if self.model_error is not None:
            return self._failed_line()
        if self.headline == "Too few rows to judge":
            return self._small_line()
        if self.same_conclusions and not self._model_judged:
            return (
                "Distributions match: column distributions and their correlations match (every "
                f"column as close as two halves of the real table are{self._general()}); no "
                "outcome model was compared: choose one on the Settings page to check regression "
                "results."
            )
        if self.same_conclusions:
            return (
                "Same conclusions: every effect within 2 standard errors of the real one, with "
                "confidence intervals overlapping at least half; every column's distribution as "
                "close as two halves of the real table are to each other."
            )
        parts = [f"the effect of {c.name}{_coef_why(c)}" for c in self.flagged_coefficients]
        lead = f"{self.lead} " if self.lead else ""
        columns = [c.column for c in self.flagged_columns]
        if columns:
            what = "distribution" if len(columns) == 1 else "distributions"
            each = "" if len(columns) == 1 else "each "
            parts.append(
                f"the {what} of {_join(columns)} ({each}differs more than two halves of the "
                "real table do)"
            )
        if not self._model_judged:
            parts.append("no outcome model was compared")
        return f"{lead}Differences to check: " + "; ".join(parts) + "."

    @property
    def after_headline(self) -> str:
        """The line as shown after its coloured headline (the PDF's first page, the Fidelity
        page): the rest of the line, or the whole line after ": " when it leads with the
        exposure's changed effect (issue 44: slicing that line cut off its subject).

        Example:
            >>> fidelity_verdict([coefficient_flag("age", 2.5, 0.6)], ()).after_headline
            ': the effect of age (2.5 standard errors apart).'
        """
        line, head = self.line, self.headline
        return line[len(head) :] if line.startswith(head) else f": {line}"

    def _failed_line(self) -> str:
        """The line when the outcome model could not be fitted: said, with what to change."""
        columns = [c.column for c in self.flagged_columns]
        shape = (
            f"the distribution of {_join(columns)} differs more than two halves of the real "
            "table do"
            if columns
            else "column distributions and their correlations match"
        )
        reason = str(self.model_error).removeprefix("did not converge: ")
        return (
            f"The model could not be fitted: the {self.model_name} failed on these columns "
            f"({reason}), so no effect was compared and this copy's regression results are "
            f"unchecked; {shape}. What to change: choose the model's columns on the Settings "
            "page (Analysis to compare), leaving out a column that repeats another or that is "
            "known only after the outcome, and run again."
        )

    def _small_line(self) -> str:
        """The line for a table too small to show that the copy matches."""
        smd = (
            f" (standardised mean differences up to {self.largest_smd:.2f})"
            if self.largest_smd is not None and math.isfinite(self.largest_smd)
            else ""
        )
        return (
            f"Too few rows to judge: with {self.rows:,} rows, two halves of the real table differ "
            f"by chance as much as this copy differs from it{smd}, so this check cannot show "
            "that the copy matches; treat every result from it as a rough guide and confirm it "
            "on the real data."
        )

    def _general(self) -> str:
        """The correlation and propensity figures in words, for the no-model line."""
        out = ""
        if self.correlation is not None and np.isfinite(self.correlation):
            out += f"; correlations within {self.correlation:.2f}"
        if self.utility is not None and np.isfinite(self.utility.s_pmse):
            out += f"; {self.utility.words} (S_pMSE {self.utility.s_pmse:.1f}, 1 = chance)"
        return out

    def to_dict(self) -> dict[str, Any]:
        """The ``fidelity.verdict`` block of ``audit.json`` (new keys; nothing renamed)."""
        return {
            "same_conclusions": self.same_conclusions,
            "headline": self.headline,
            "after_headline": self.after_headline,
            "lead": self.lead,
            "model_compared": self._model_judged,
            "compared": self.compared,
            "line": self.line,
            "flagged_coefficients": [c.name for c in self.flagged_coefficients],
            "flagged_columns": [c.column for c in self.flagged_columns],
            "coefficients": [c.to_dict() for c in self.coefficients],
            "columns": [c.to_dict() for c in self.columns],
            "rules": {
                "z_gap_above": Z_GAP_LIMIT,
                "ci_overlap_below": OVERLAP_LIMIT,
                "column_reference": REFERENCE_METHOD,
            },
        }


def coefficient_flag(
    name: str,
    z_gap: float | None,
    ci_overlap: float | None,
    *,
    shown: bool = True,
    changed: tuple[str, ...] = (),
) -> CoefficientFlag:
    """Flag one coefficient: |z-gap| > 2 or CI overlap < 0.5 (a missing number flags nothing).

    Example:
        >>> coefficient_flag("x", 2.5, 0.9).flagged, coefficient_flag("x", 1.5, 0.4).reasons
        (True, ('confidence intervals overlap 40 %',))
        >>> coefficient_flag("x", -2.03, 0.9).reasons
        ('2.03 standard errors apart',)
    """
    reasons = []
    z, o = _finite(z_gap), _finite(ci_overlap)
    if z is not None and abs(z) > Z_GAP_LIMIT:
        gap = f"{abs(z):.1f}"
        if float(gap) <= Z_GAP_LIMIT:  # 2.03 reads "2.03", never "2.0" beside a flag at > 2
            gap = f"{abs(z):.2f}"
        reasons.append(f"{gap} standard errors apart")
    if o is not None and o < OVERLAP_LIMIT:
        # rounded down, so a flagged overlap never reads as 50 %
        reasons.append(f"confidence intervals overlap {math.floor(100 * o)} %")
    reasons += list(changed)  # direction or significance changes (issue 33 item 1)
    return CoefficientFlag(name, z, o, bool(reasons), tuple(reasons), shown)


def fidelity_verdict(
    coefficients: Iterable[CoefficientFlag | Any],
    columns: Sequence[ColumnFlag],
    *,
    model_compared: bool | None = None,
    withheld: Sequence[str] = (),
    utility: PropensityUtility | None = None,
    correlation: float | None = None,
    exposure: str | None = None,
    analysis: str = "cox",
    model_error: str | None = None,
    rows: int | None = None,
    largest_smd: float | None = None,
) -> FidelityVerdict:
    """The verdict from coefficient comparisons and column flags (:func:`column_shifts`).

    ``coefficients`` are :class:`CoefficientFlag` or :class:`engine.stats.compare.CoefComparison`
    rows (flagged here); ``withheld`` names terms of groups under 10 (flagged, numbers withheld).
    The intercept is not judged: no conclusion rests on it.

    Example:
        >>> fidelity_verdict([coefficient_flag("x", 0.3, 0.9)], ()).line[:16]
        'Same conclusions'
    """
    flags, lead = [], None
    for c in coefficients:
        if str(c.name).lower() in INTERCEPTS:
            continue  # no conclusion rests on it; a shifted outcome shows in its column's flag
        if isinstance(c, CoefficientFlag):
            flags.append(c)
        else:
            shown = c.name not in set(withheld)
            flags.append(
                coefficient_flag(
                    c.name, c.std_difference, c.ci_overlap, shown=shown, changed=changes(c)
                )
            )
            is_exposure = exposure is not None and str(c.name).split("=")[0] == exposure
            if lead is None and shown and is_exposure:
                lead = exposure_sentence(c, analysis)
    compared = bool(flags) if model_compared is None else model_compared
    name = {"cox": "survival (Cox) model", "ols": "linear regression"}.get(
        analysis, "logistic regression"
    )
    return FidelityVerdict(
        tuple(flags),
        tuple(columns),
        compared,
        utility,
        correlation,
        lead,
        model_error,
        rows,
        largest_smd,
        name,
    )


def _coef_why(c: CoefficientFlag) -> str:
    if not c.shown:  # a group under 10 people: the reason would show its numbers
        return (
            " (a group of fewer than 10 people, its numbers withheld: it differs between the "
            "tables)"
        )
    return f" ({'; '.join(c.reasons)})" if c.reasons else ""


def _join(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
