"""Page 6, Fidelity: real vs synthetic marginals, Kaplan-Meier curves, the regression comparison.

Renders ``RunResult.fidelity`` (``engine.stats.models.FidelityResult.to_dict()``); computes nothing.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from desktop.pages.base import Page, estimate_text, heading, note, number, p_value_text
from desktop.plots import PlotWidget, km_curves
from desktop.qt import Qt, QtGui, QtWidgets

MARGINAL_COLUMNS = (
    ("column", "Column"),
    ("real_mean", "Real mean"),
    ("synth_mean", "Synthetic mean"),
    ("real_sd", "Real SD"),
    ("synth_sd", "Synthetic SD"),
    ("std_mean_difference", "Std. mean diff."),
)
WITHHELD = "not shown: fewer than 10 people"
MODEL_NAMES = {"cox": "Cox model", "logistic": "Logistic regression", "ols": "Linear regression"}
EFFECT = {"cox": "hazard ratio", "logistic": "odds ratio", "ols": "coefficient"}
# What each number column means, shown when the pointer rests on its header.
HEADER_TIPS = {
    "Real mean": "The average of the column in the real table.",
    "Synthetic mean": "The average of the column in the synthetic table.",
    "Real SD": "The standard deviation (spread) of the column in the real table.",
    "Synthetic SD": "The standard deviation (spread) of the column in the synthetic table.",
    "Std. mean diff.": "Difference of the two averages in units of the spread; under 0.1 is "
    "usually considered small.",
    "Real": "The effect estimated on the real table, with its 95% confidence interval.",
    "Synthetic": "The effect estimated on the synthetic table, with its 95% confidence interval.",
    "CI overlap": "How much the two 95% confidence intervals overlap: 1 = fully, 0 = not at all.",
    "Same direction": "Whether both tables show the effect in the same direction.",
    "Same significance": "Whether both tables agree on whether the effect is significant at 5%.",
    "Variable": "The model's term; a term of a group of fewer than 10 people is not shown.",
    "To check": "Flagged when the synthetic estimate lies more than 2 standard errors from the "
    "real one, or the two 95% confidence intervals overlap less than half.",
}


RULE_COST_TIP = (
    "The second reference is the real table with every value beyond a column's allowed range "
    "set to that range's end, and the model fitted on it. If the synthetic estimate is closer "
    "to that one than to the real one, the difference is the rule's price."
)


def rule_cost_tip() -> str:
    """The rule-cost note's tooltip: the rule in words (as in the report) and the reference."""
    from engine import rule_cost_words  # on first use: the engine's tables load pandas

    return f"{rule_cost_words()['intro']} {RULE_COST_TIP}"


VERDICT_TIP = (
    "The same verdict as on the report's first page. An effect is flagged when the synthetic "
    "estimate lies more than 2 standard errors from the real one, or when the two 95% "
    "confidence intervals overlap less than half. A column is flagged when its distribution "
    "differs from the real one by more than two random halves of the real table differ."
)


class FidelityPage(Page):
    title = "6  Fidelity"
    subtitle = (
        "How closely the synthetic copy reproduces the real data and the answer of your analysis."
    )

    def __init__(self, session: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(session, parent)
        outer = QtWidgets.QVBoxLayout(self)
        self.verdict = note("")
        self.verdict.setAccessibleName("Fidelity verdict")
        self.verdict.setToolTip(VERDICT_TIP)
        outer.addWidget(self.verdict)
        layout = QtWidgets.QGridLayout()
        outer.addLayout(layout, 1)
        layout.addWidget(heading("Each variable: real vs synthetic"), 0, 0)
        self.marginals = _table("Real and synthetic summaries of each variable")
        self.marginals.setToolTip(
            "Mean, spread and median of each numeric column in both tables. "
            "A standardised mean difference under 0.1 is usually considered small."
        )
        layout.addWidget(self.marginals, 1, 0)
        self.km = PlotWidget("Kaplan-Meier survival curves, real and synthetic", height=3.0)
        layout.addWidget(self.km, 0, 1, 2, 1)
        self.model_heading = heading("Regression: real vs synthetic")
        layout.addWidget(self.model_heading, 2, 0, 1, 2)
        self.model = _table("Regression results on the real and the synthetic table")
        self.model.setToolTip(
            "The same model fitted on both tables. CI overlap near 1 means the "
            "synthetic data give the same answer."
        )
        layout.addWidget(self.model, 3, 0, 1, 2)
        self.notes = note("")
        self.notes.setToolTip(
            "Log-rank p: the chance of curves this different if the two tables had the same "
            "survival (large = no evidence of a difference). Largest gap: the biggest vertical "
            "distance between the real and the synthetic survival curves (0 to 1)."
        )
        layout.addWidget(self.notes, 4, 0, 1, 2)
        self.rule_cost = note("")
        self.rule_cost.setAccessibleName("What the range rule costs")
        self.rule_cost.setToolTip(RULE_COST_TIP)  # the rule's words once a result is shown
        layout.addWidget(self.rule_cost, 5, 0, 1, 2)
        layout.setRowStretch(1, 3)
        layout.setRowStretch(3, 2)
        layout.setColumnStretch(0, 3)
        layout.setColumnStretch(1, 2)
        self._shown: Any = None

    def enter(self) -> None:
        result = self.session.result
        if result is not None and result is not self._shown:
            self._shown = result
            # audit.json's view (to_dict): terms of groups under 10 keep only their name there
            self.render(result.fidelity.to_dict())
            if result.synthetic is None:
                self.show_nothing_released()

    def show_nothing_released(self) -> None:
        """A refused run: nothing was released, so nothing was compared (whatever was chosen)."""
        why = "Nothing was released, so there is nothing to compare: see the Privacy page."
        self.model_heading.setText("<b>Regression: nothing released to compare</b>")
        self.notes.setText(why)
        self.verdict.setText("")
        self.rule_cost.setText("")

        def draw(ax: Any) -> None:
            ax.set_axis_off()
            ax.text(
                0.5,
                0.5,
                "nothing released to compare",
                ha="center",
                va="center",
                color="grey",
                transform=ax.transAxes,
            )

        self.km.draw(draw)

    def render(self, fidelity: dict[str, Any]) -> None:
        """Show ``audit.json["fidelity"]`` (the typed result's ``to_dict()``): the verdict line,
        the tables, the curves and the notes."""
        self.verdict.setText(verdict_html(fidelity.get("verdict")))
        rows = fidelity.get("marginal") or []
        _fill(
            self.marginals,
            [label for _, label in MARGINAL_COLUMNS],
            [[r.get(key) for key, _ in MARGINAL_COLUMNS] for r in rows],
        )
        self.km.draw(km_curves(fidelity.get("km") or {}))
        model = fidelity.get("model")
        if model:
            analysis = model.get("analysis", "")
            effect = EFFECT.get(analysis, "estimate")
            exp = analysis in ("cox", "logistic")
            model_name = MODEL_NAMES.get(analysis, "regression")
            self.model_heading.setText(f"<b>{model_name}: {effect}, real vs synthetic</b>")
            headers = [
                "Variable",
                f"Real {effect} (95% CI)",
                f"Synthetic {effect} (95% CI)",
                "CI overlap",
                "Same direction",
                "Same significance",
                "To check",
            ]
            flags = _coefficient_flags(fidelity.get("verdict"))
            table = []
            for c in model.get("coefficients", []):
                per = c.get("per") or 1.0
                name = c["name"] + (f" (per {number(per, 6)})" if per != 1.0 else "")
                if c.get("not_shown") or c.get("real_estimate") is None:
                    check = "yes (numbers not shown)" if c["name"] in flags else "not shown"
                    table.append(
                        [name, WITHHELD, WITHHELD, "not shown", "not shown", "not shown", check]
                    )
                    continue
                table.append(
                    [
                        name,
                        _ci(c["real_estimate"], c["real_ci_low"], c["real_ci_high"], exp, per),
                        _ci(c["synth_estimate"], c["synth_ci_low"], c["synth_ci_high"], exp, per),
                        c.get("ci_overlap"),
                        "yes" if c.get("sign_agrees") else "no",
                        "yes" if c.get("significance_agrees") else "no",
                        flags.get(c["name"], "no"),
                    ]
                )
            _fill(self.model, headers, table)
            check = len(headers) - 1
            for r in range(self.model.rowCount()):
                item = self.model.item(r, check)
                if item is not None and item.text().startswith("yes"):
                    # the short word in the cell, the reasons (also in the line above) on hover
                    item.setToolTip(item.text()[:1].upper() + item.text()[1:] + ".")
                    item.setText(item.text().split(":")[0])
                    item.setForeground(QtGui.QColor("#c00000"))
            self.model.resizeColumnsToContents()
        else:
            status = str(fidelity.get("model_status") or "")
            failed = status.startswith("did not converge")
            self.model_heading.setText(
                "<b>Regression: the model could not be fitted</b>"
                if failed
                else "<b>Regression: none chosen</b>"
            )
            _fill(self.model, ["Variable"], [])
        for table in (self.marginals, self.model):
            for c in range(table.columnCount()):
                header = table.horizontalHeaderItem(c)
                if header is not None:
                    text = header.text()
                    header.setToolTip(
                        HEADER_TIPS.get(text, HEADER_TIPS.get(text.split(" ")[0], ""))
                    )
        km = fidelity.get("km") or {}
        extra = list(fidelity.get("notes") or [])
        if km.get("logrank_p") is not None:
            gap = km.get("max_abs_difference")
            extra.insert(
                0,
                "Log-rank test real vs synthetic, descriptive only (the synthetic rows are drawn "
                "from the real ones, so this is no formal test): "
                f"p = {p_value_text(km['logrank_p'])}"
                + (f"; largest gap between the curves {gap:.3f}." if gap is not None else "."),
            )
        self.notes.setText("\n".join(extra))
        self.rule_cost.setText(rule_cost_text(fidelity.get("rule_cost")))
        if self.rule_cost.text():
            self.rule_cost.setToolTip(rule_cost_tip())


def rule_cost_text(cost: dict[str, Any] | None) -> str:
    """What the range rule costs (:mod:`engine.stats.topcoded`): the engine's sentence per
    limited column under its short explanation; empty when no real value lies beyond a range.

    Example:
        >>> text = rule_cost_text({"lines": ["Rule cost for nodes: fewer than 10 real values"]})
        >>> text.startswith("What the range rule costs ("), text.splitlines()[-1]
        (True, '• Rule cost for nodes: fewer than 10 real values')
    """
    lines = (cost or {}).get("lines") or []
    if not lines:
        return ""
    from engine import rule_cost_words

    words = rule_cost_words()
    return "\n".join([f"{words['title']} ({words['subtitle']}):", *(f"• {line}" for line in lines)])


def _table(name: str) -> QtWidgets.QTableWidget:
    table = QtWidgets.QTableWidget()
    table.setAccessibleName(name)
    table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    return table


def _fill(table: QtWidgets.QTableWidget, headers: list[str], rows: list[list[Any]]) -> None:
    table.clear()
    table.setColumnCount(len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            item = QtWidgets.QTableWidgetItem(_fmt(value))
            if not isinstance(value, str):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            table.setItem(r, c, item)
    table.resizeColumnsToContents()


def _fmt(value: Any) -> str:
    """A cell for people: yes/no, numbers as :func:`~desktop.pages.base.number` writes them
    (no exponents, no Python type names, – for none), text as it is.

    Example:
        >>> [_fmt(v) for v in (True, None, 0.123456, 12345, "age")]
        ['yes', '–', '0.123', '12,345', 'age']
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or isinstance(value, (int, float)) or hasattr(value, "dtype"):
        return number(value)
    return str(value)


def _ci(
    est: float | None, low: float | None, high: float | None, exp: bool, per: float = 1.0
) -> str:
    """Estimate and 95% CI per ``per`` units (exp for hazard / odds ratios).

    Example:
        >>> _ci(0.01, 0.0, 0.02, True, 10.0)
        '1.105 (1.000 to 1.221)'
    """
    if est is None or low is None or high is None:
        return "–"

    def f(x: float) -> float:
        return math.exp(x * per) if exp else x * per

    return f"{estimate_text(f(est))} ({estimate_text(f(low))} to {estimate_text(f(high))})"


def verdict_html(verdict: dict[str, Any] | None) -> str:
    """The fidelity verdict's line (:mod:`engine.stats.verdict`), its headline coloured.

    Example:
        >>> verdict_html({"same_conclusions": True, "line": "Same conclusions: all close."})
        "<b><span style='color:#1a7f37'>Same conclusions</span></b>: all close."
    """
    if not verdict or not verdict.get("line"):
        return ""
    line = str(verdict["line"])
    head = str(verdict.get("headline") or line.partition(":")[0])
    rest = str(verdict.get("after_headline") or line[len(head) :])  # the engine's split
    colour = "#1a7f37" if verdict.get("same_conclusions") else "#c00000"
    return f"<b><span style='color:{colour}'>{escape(head)}</span></b>{escape(rest)}"


def _coefficient_flags(verdict: dict[str, Any] | None) -> dict[str, str]:
    """Flagged term -> why ("yes: 2.7 standard errors apart"), from the verdict's record.

    Example:
        >>> _coefficient_flags({"coefficients": [
        ...     {"name": "age", "flagged": True, "reasons": ["2.7 standard errors apart"]},
        ...     {"name": "sbp", "flagged": False, "reasons": []}]})
        {'age': 'yes: 2.7 standard errors apart'}
    """
    out = {}
    for c in (verdict or {}).get("coefficients") or []:
        if c.get("flagged"):
            reasons = "; ".join(c.get("reasons") or [])
            out[str(c["name"])] = f"yes: {reasons}" if reasons else "yes"
    return out
