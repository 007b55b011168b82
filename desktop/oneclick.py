"""One click from a loaded table to an export the output checker can sign (issue 16).

::

    Import page ── "Make a safe synthetic copy" ──► plan_outcome(frame)  (ask once if unclear)
        └─► oneclick_config(fields) ──► run_oneclick on a worker (desktop.worker.Task):
              prepare ─► synthesize (audit, choice of w, release) ─► privacy decision
                 released: write_outputs(result, default_output_folder(...))
                 refused:  nothing is written at all
        └─► Summary page: recommendation, fidelity in one line, folder, Open folder / Open report

:func:`run_oneclick` is :func:`engine.pipeline.run_pipeline` with the writing moved after the
privacy decision: a refusal leaves no folder, no report and no audit record that a checker could
mistake for a release. The recognised roles and the engine's defaults are used; the only
question ever asked is which columns hold the survival outcome, and only when the engine's
schema did not recognise exactly one pair (:func:`plan_outcome`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from desktop.qt import QtCore, QtWidgets

MAX_CHOICES = 4  # per role: more makes the one question long


# -- where it writes --------------------------------------------------------------------------
def documents_folder() -> Path:
    """The user's documents folder (Qt's idea of it), else the home folder."""
    location = QtCore.QStandardPaths.writableLocation(
        QtCore.QStandardPaths.StandardLocation.DocumentsLocation
    )
    return Path(location) if location else Path.home()


def default_output_folder(
    input_path: str | Path, today: date | None = None, base: Path | None = None
) -> Path:
    """``<Documents>/latent-synth/<input name> <YYYY-MM-DD>``, never an existing folder.

    Never beside the input (a TRE's input area is often read-only and shared); `` (2)``,
    `` (3)`` ... are added when the folder exists, so an earlier export is never overwritten.
    The wizard's Export page offers the same folder.

    Example:
        >>> import tempfile
        >>> home = Path(tempfile.mkdtemp())
        >>> default_output_folder("/data/cohort.csv", date(2025, 3, 1), home).name
        'cohort 2025-03-01'
        >>> (home / "latent-synth" / "cohort 2025-03-01").mkdir(parents=True)
        >>> default_output_folder("cohort.csv", date(2025, 3, 1), home).name
        'cohort 2025-03-01 (2)'
    """
    root = (base if base is not None else documents_folder()) / "latent-synth"
    stem = Path(input_path).stem or "table"
    first = root / f"{stem} {(today or date.today()).isoformat()}"
    candidate, number = first, 1
    while candidate.exists():
        number += 1
        candidate = first.with_name(f"{first.name} ({number})")
    return candidate


# -- the one question ---------------------------------------------------------------------
@dataclass(frozen=True)
class OutcomeChoice:
    """A survival outcome (follow-up time and event) or none (distributions only)."""

    time: str | None
    event: str | None
    event_value: Any = None  # the value meaning "the event happened" when not the usual one
    exposure: str | None = None  # the treatment or arm asked about; "" = none (NO_EXPOSURE)

    @property
    def label(self) -> str:
        if self.time is None or self.event is None:
            return "No survival outcome: compare distributions and correlations only"
        means = (
            "" if self.event_value is None else f" (“{self.event_value}” means the event happened)"
        )
        return f"Follow-up time “{self.time}” with event “{self.event}”{means}"


NO_OUTCOME = OutcomeChoice(None, None)


@dataclass(frozen=True)
class OutcomePlan:
    """What the one-click path does about the survival outcome."""

    recognised: OutcomeChoice | None  # exactly one pair: used without asking
    choices: tuple[OutcomeChoice, ...]  # else these are offered (NO_OUTCOME last)
    exposures: tuple[str, ...] = ()  # columns that look like a treatment or arm: asked too

    @property
    def must_ask(self) -> bool:
        return (self.recognised is None and len(self.choices) > 1) or bool(self.exposures)


def plan_outcome(frame: Any) -> OutcomePlan:
    """The survival pair the engine's schema recognises, else the candidates to ask about.

    Candidates use the engine's own rules (``recognise_survival_roles``): a time column is one
    the schema would accept as the follow-up time beside an unambiguous event; an event is one it
    would accept by name, or any column coded 0/1 (e.g. ``cvd``), which names alone would miss.
    """
    from engine import exposure_candidates, recognise_survival_roles

    found = recognise_survival_roles(frame)
    roles = {found.time, found.event, found.likely_time, found.likely_event} - {None}
    exposures = exposure_candidates(frame, exclude=roles)[:MAX_CHOICES]
    if found.time and found.event:
        recognised = OutcomeChoice(found.time, found.event, found.event_value)
        if exposures:  # asked with the exposure, the recognised pair preselected
            return OutcomePlan(None, (recognised, NO_OUTCOME), exposures)
        return OutcomePlan(recognised, ())
    times = list(found.time_candidates[:MAX_CHOICES])
    events = list(found.event_candidates[:MAX_CHOICES])
    pairs = [OutcomeChoice(t, e) for t in times for e in events]
    if found.likely_time and found.likely_event:  # the likely answer first: preselected
        likely = OutcomeChoice(found.likely_time, found.likely_event, found.event_value)
        pairs = [likely, *(p for p in pairs if (p.time, p.event) != (likely.time, likely.event))]
        if "censoring" in str(found.question):  # a censoring-looking name: the other reading too
            other = 0 if found.event_value is None else 1
            pairs.insert(1, OutcomeChoice(likely.time, likely.event, other))
    return OutcomePlan(None, (*pairs, NO_OUTCOME) if pairs or exposures else (), exposures)


class OutcomeQuestion(QtWidgets.QDialog):
    """The one short question: which columns are the survival outcome, or none."""

    def __init__(
        self,
        choices: tuple[OutcomeChoice, ...],
        parent: QtWidgets.QWidget | None,
        exposures: tuple[str, ...] = (),
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("latent-synth: one question")
        self.setAccessibleName("Which columns hold the survival outcome")
        layout = QtWidgets.QVBoxLayout(self)
        text = QtWidgets.QLabel(
            "Which columns hold the survival outcome? The synthetic copy is checked against your "
            "table with a survival model on these columns; without one, only distributions and "
            "correlations are compared."
        )
        text.setWordWrap(True)
        layout.addWidget(text)
        self.choices = choices
        self.combo = QtWidgets.QComboBox()
        self.combo.setAccessibleName("Survival outcome")
        self.combo.addItems([c.label for c in choices])
        layout.addWidget(self.combo)
        self.exposures = exposures
        self.exposure_combo = QtWidgets.QComboBox()
        self.exposure_combo.setAccessibleName("Treatment or exposure")
        if exposures:
            ask = QtWidgets.QLabel(
                "Which column is the treatment or exposure whose effect you want checked? Its "
                "effect leads the comparison of your table and the copy; the other columns are "
                "adjustments."
            )
            ask.setWordWrap(True)
            layout.addWidget(ask)
            self.exposure_combo.addItems(
                [f"“{name}” is the treatment or exposure" for name in exposures]
                + ["None: every column is an adjustment"]
            )
            layout.addWidget(self.exposure_combo)
        buttons = QtWidgets.QDialogButtonBox(
            QtWidgets.QDialogButtonBox.StandardButton.Ok
            | QtWidgets.QDialogButtonBox.StandardButton.Cancel
        )
        ok = buttons.button(QtWidgets.QDialogButtonBox.StandardButton.Ok)
        ok.setText("Continue")
        self.continue_button = ok
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def chosen(self) -> OutcomeChoice:
        """The outcome chosen, with the exposure when one was asked about."""
        choice = self.choices[self.combo.currentIndex()]
        if not self.exposures:
            return choice
        index = self.exposure_combo.currentIndex()
        exposure = self.exposures[index] if index < len(self.exposures) else ""
        return replace(choice, exposure=exposure)


def ask_outcome(
    choices: tuple[OutcomeChoice, ...],
    parent: QtWidgets.QWidget | None,
    exposures: tuple[str, ...] = (),
) -> OutcomeChoice | None:
    """Ask the question in a modal dialog; None when the user cancels."""
    dialog = OutcomeQuestion(choices, parent, exposures)
    try:
        accepted = dialog.exec() == QtWidgets.QDialog.DialogCode.Accepted
        return dialog.chosen() if accepted else None
    finally:
        dialog.deleteLater()


# -- the job ------------------------------------------------------------------------------
def oneclick_config(fields: dict[str, Any], choice: OutcomeChoice | None) -> Any:
    """A validated RunConfig: the wizard's fields so far (the file, a demo's subset) with the
    engine's defaults, the survival outcome ``choice`` when given, and no output folder."""
    from engine import RunConfig

    values = dict(fields)
    if choice is not None:
        values.update(time=choice.time, event=choice.event)
        if choice.event_value is not None:
            values.update(event_value=str(choice.event_value))
        if choice.time is None:
            values.update(analysis=None, covariates=(), per=())
        if choice.exposure is not None:
            values.update(exposure=choice.exposure)
    if values.get("time") and values.get("event"):
        values.setdefault("analysis", "cox")
    values["out"] = None
    config = RunConfig(**values)
    config.validate()
    return config


@dataclass(frozen=True)
class OneClickOutcome:
    """The finished job: the engine's result and, when released, the folder written."""

    result: Any  # engine.pipeline.RunResult
    folder: Path | None  # None: refused, nothing written

    @property
    def released(self) -> bool:
        return self.folder is not None


def run_oneclick(config: Any, folder: Path, progress: Any, cancel: Any) -> OneClickOutcome:
    """Prepare, audit and release; write to ``folder`` only when the audit allows a release.

    Runs on a worker thread. This is :func:`engine.pipeline.run_pipeline` with the writing moved
    after the privacy decision, so that a refusal writes nothing at all.
    """
    from engine import prepare, sub_progress, synthesize, write_outputs

    prepared = prepare(config, sub_progress(progress, 0.0, 0.03))
    cancel.raise_if_cancelled()
    result = synthesize(prepared, sub_progress(progress, 0.03, 0.95), cancel)
    cancel.raise_if_cancelled()
    if result.verdict == "refused":
        progress(1.0, "the privacy check refused a release; nothing was written")
        return OneClickOutcome(result, None)
    written = write_outputs(result, folder, sub_progress(progress, 0.95, 1.0))
    return OneClickOutcome(written, folder)


# -- what the summary says ----------------------------------------------------------------
def recommendation_text(result: Any) -> str:
    """The tool's recommendation in a sentence a clinician understands."""
    limit = _plain(float(result.config.auc_max))
    if result.verdict == "refused":
        # the most noise is the SMALLEST w (w = 0: new rows drawn from the model alone)
        least = min(result.audit.curve, key=lambda p: p.w)
        binding = result.audit.binding(least.w)
        margin = (
            f" The estimate itself ({binding.auc:.3f}) is under the limit, but the audit adds a "
            f"margin for its own uncertainty (upper bound {binding.upper:.3f}), and with so few "
            "rows that margin goes over it: the audit cannot show the copy is safe."
            if binding.auc < float(result.config.auc_max)
            else ""
        )
        return (
            f"Do not release. Even with the most noise tried (w = {least.w:.2f}, rows drawn "
            "from the model alone), an attacker holding the copy could tell whether a given "
            f"patient was in your file too well: the attack's expected score is "
            f"{binding.auc:.3f} (upper bound {binding.upper:.3f}) where the privacy limit is "
            f"{limit} (0.5 is a coin toss).{margin} Nothing was written."
        )
    w = float(result.release.w)
    binding = result.audit.binding(w)
    decision = getattr(result.audit, "decision", None)
    uncertain = (
        " The table is small: the estimate is under the limit but too uncertain to show it "
        "stays there, so the copy was made with the most noise (w = 0, rows drawn from the "
        "model alone)."
        if decision is not None and decision.uncertain
        else ""
    )
    return (
        "Meets the privacy limit the checker set. An attacker holding the copy cannot tell "
        "whether a given patient was in your file much better than a coin toss: the attack's "
        f"expected score is {binding.auc:.3f} (upper bound {binding.upper:.3f}), under the "
        f"limit of {limit}. The privacy audit chose the noise level w = {w:.2f}"
        f"{w_spread(result.audit, w)}.{uncertain}{at_risk_text(result)}"
    )


def w_spread(audit: Any, chosen: float) -> str:
    """How far another run's w may land, from the audit's own standard errors: the grid w up
    to which every point passes even at mean + 2 SE, and the one up to which every point's mean
    alone passes. Empty when both equal the chosen w.

    Example:
        >>> from types import SimpleNamespace as P
        >>> curve = [P(w=w, auc=a, se=0.01) for w, a in [(0.0, 0.5), (0.3, 0.52), (0.6, 0.535), (0.9, 0.6)]]
        >>> audit = P(curve=curve, threshold=0.55, binding=lambda w: [p for p in curve if p.w == w][0])
        >>> w_spread(audit, 0.3)
        '; another run may choose a w between 0.30 and 0.60 (the audit is a random test)'
    """
    low = high = None
    sure = likely = True
    for point in sorted(audit.curve, key=lambda p: p.w):
        b = audit.binding(point.w)
        if b is None:
            break
        sure = sure and b.auc + 2 * b.se < audit.threshold
        likely = likely and b.auc < audit.threshold
        low = point.w if sure else low
        high = point.w if likely else high
    low = chosen if low is None else min(low, chosen)
    high = chosen if high is None else max(high, chosen)
    if abs(high - low) < 1e-9:
        return ""
    return f"; another run may choose a w between {low:.2f} and {high:.2f} (the audit is a random test)"


def at_risk_text(result: Any) -> str:
    """The share of records at risk (own synthetic row among their k nearest), as a
    percentage with a plain judgement (a count under 10 withheld)."""
    release = getattr(result, "released", None)
    metrics = getattr(release, "metrics", None)
    at_risk, rows = getattr(metrics, "at_risk", None), getattr(release, "rows", None)
    if at_risk is None or not rows:
        return ""
    k = getattr(metrics, "k_risk", 5)
    if at_risk < 10:
        return f" Fewer than 10 patients have their synthetic row among their {k} closest records."
    share = 100.0 * at_risk / rows
    judgement = (
        "very few" if share < 1 else "few" if share < 5 else "a notable share: the report says more"
    )
    return (
        f" {share:.1f} % of patients ({at_risk} of {rows}) have their synthetic row among their "
        f"{k} closest records: {judgement}."
    )


def _plain(value: float) -> str:
    """A limit as a person writes it.

    Example:
        >>> _plain(0.55), _plain(0.501), _plain(0.6)
        ('0.55', '0.501', '0.6')
    """
    return f"{value:.3f}".rstrip("0").rstrip(".")


# The one piece of advice after a refusal, said by the summary, the Privacy page and (in the
# same words) the user guide's "What to do after a refusal" (issue 33: they contradicted).
RAISING_THE_LIMIT = (
    "Raising the limit is not the answer: it is the level of risk agreed with your output "
    "checker, and the report would show the change."
)
REFUSAL_ADVICE = (
    "What to try: use more patients if you have them; drop or coarsen columns that single "
    "people out (exact dates, rare categories, free text); or switch on Protect outliers "
    "(Settings step, Advanced settings). " + RAISING_THE_LIMIT
)


def refusal_advice(result: Any) -> str:
    """The advice after a refusal: first what was measured on this table (whether more rows
    would help, which columns single people out; it changes once followed, since the next run
    measures again), then the general suggestions (:data:`REFUSAL_ADVICE`)."""
    from engine import refusal_findings

    found = refusal_findings(getattr(result, "audit", None))
    if not found:
        return REFUSAL_ADVICE
    return (
        "What to try, as measured on your table: "
        + " ".join(found)
        + " "
        + (REFUSAL_ADVICE.replace("What to try:", "Also possible:", 1))
    )


def fidelity_text(result: Any) -> str:
    """How close the copy is to the real table, in one line: the run's fidelity verdict
    (:mod:`engine.stats.verdict`), the same line the report's first page and the Fidelity page
    show."""
    fidelity = getattr(result, "fidelity", None)
    verdict = getattr(fidelity, "verdict", None)
    if verdict is None:
        return "Not measured: no synthetic copy was compared with the real table."
    if not verdict.model_compared or not verdict.coefficients:
        scope = "each column's distribution and the correlations"
        if getattr(verdict, "utility", None) is not None:
            scope = "each column's distribution, the correlations and a propensity score"
    else:
        config = getattr(result, "config", None)
        cox = getattr(config, "analysis", None) in (None, "cox")
        scope = f"the {'survival model' if cox else 'regression'} and each column's distribution"
    return f"{verdict.line} Compared: {scope}."


def analysis_text(result: Any) -> str:
    """The model the comparison rests on, one choice a line (the exposure, the adjustments,
    what was left out and why, the rows), as the PDF's section 1 and ``audit.json`` say it."""
    plan = getattr(getattr(result, "fidelity", None), "plan", None)
    if plan is None:
        return ""
    return "\n".join(plan.lines())
