"""Fit once, audit, sample at any w, compare and write (:class:`Synthesizer`): glue around the
pipeline's own steps, with the command line's privacy defaults.

``fit`` is :func:`engine.pipeline.prepare` then :func:`engine.pipeline.synthesize` (the audit
over the w grid, the final model on every row and the release at the audited w); ``sample`` at
another w is :func:`engine.pipeline.release` again with the trained model and the audit kept in
memory; ``write`` is :func:`engine.pipeline.write_outputs`. Nothing here re-implements a step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from engine.api.metadata import Metadata, Table, table_path
from engine.errors import InputError, PrivacyRefused
from engine.pipeline import RunConfig, make_rng, prepare, release, synthesize, write_outputs
from engine.progress import (
    NEVER_CANCELLED,
    CancelToken,
    ProgressFn,
    no_progress,
    sub_progress,
)

if TYPE_CHECKING:
    from engine.pipeline import Fidelity, Prepared, Refusal, RunResult
    from engine.privacy.audit import AuditResult

# RunConfig fields the metadata owns, or that this face sets itself (the table, the output
# folder, the w asked for and its override); formal DP mode has its own release (run_pipeline).
_OWN = frozenset(
    {"input", "out", "forced_w", "allow_risky", "risk_acknowledged", "dp_epsilon", "dp_delta"}
)
# The command line's options named in a refusal's hint, in this face's words.
_HINT_WORDS = (
    (r"--allow-risky\b", "allow_risky=True"),
    (r"--w(?![\w-])", "w"),
    (r"--keys\b", "the keys setting"),
)


def refusal_words(refusal: Refusal) -> str:
    """The app's refusal (its reason, word for word) with the hint in this face's words.

    Example:
        >>> from engine.pipeline import Refusal
        >>> refusal_words(Refusal("at the requested w = 0.9 the ...", "lower --w or add "
        ...                       "--allow-risky to override"))
        'at the requested w = 0.9 the ...; lower w or add allow_risky=True to override'
    """
    hint = refusal.hint
    for pattern, words in _HINT_WORDS:
        hint = re.sub(pattern, words, hint)
    return f"{refusal.reason}; {hint}" if hint else refusal.reason


@dataclass(frozen=True)
class AuditSummary:
    """The membership audit of a fit: ``w`` the default release's w (None: nothing may be
    released), ``audited_w`` the largest audited w that met the limit, ``curve`` one row per
    audited w (each attack's AUC, the highest upper 95 % bound, whether it met the limit),
    ``decision`` in the words the report uses, and the full record (``result``)."""

    w: float | None
    audited_w: float | None
    auc_max: float
    curve: pd.DataFrame
    decision: str
    result: AuditResult = field(repr=False)


class Synthesizer:
    """A synthetic copy of one table, fitted once and sampled at any w.

    ``Synthesizer(metadata, auc_max=0.55, budget="fast", seed=None, device="auto", **settings)``:
    ``auc_max`` is the membership attacks' AUC limit, ``budget`` the model search effort
    (fast, default, thorough), ``seed`` makes every draw repeatable (none: fresh randomness),
    ``device`` auto, cpu or cuda; ``settings`` are other :class:`~engine.pipeline.RunConfig`
    fields (``w_grid``, ``repeats``, ``copies``, ``analysis``, ``outcome``, ``covariates``,
    ``file_format``, ``keys``, ...).

    ``sample(w)`` refuses a w above the audited one, in the app's words, unless
    ``allow_risky=True`` is given; so do ``sample()`` and ``write()`` when no w met the limit
    (``write`` still writes audit.json and report.pdf, as the command line does).
    """

    def __init__(
        self,
        metadata: Metadata,
        *,
        auc_max: float = 0.55,
        budget: str = "fast",
        seed: int | None = None,
        device: str = "auto",
        **settings: Any,
    ) -> None:
        known = {f.name for f in fields(RunConfig)} - _OWN - set(metadata.to_config_fields())
        unknown = sorted(set(settings) - known)
        if unknown:
            raise TypeError(
                f"Synthesizer: unknown setting {', '.join(unknown)}; the settings are "
                f"{', '.join(sorted(known))}"
            )
        self.metadata = metadata
        self.settings = dict(auc_max=auc_max, budget=budget, seed=seed, device=device, **settings)
        RunConfig(input="table", **self.settings).validate()  # before any work, in words
        self._fitted: RunResult | None = None
        self._flow: Any = None  # the trained model: in memory only, never written

    def fit(
        self,
        table: Table,
        *,
        progress: ProgressFn = no_progress,
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> Synthesizer:
        """Read ``table`` (a DataFrame or a file path), audit the membership attacks over the
        w grid, train the final model on every row and release at the audited w; the model
        and the audit stay in memory for :meth:`sample`. Returns this synthesizer.

        A DataFrame is read through a temporary file in a private folder, removed once read.
        """
        label = "a pandas DataFrame" if isinstance(table, pd.DataFrame) else None
        with table_path(table) as path:
            config = RunConfig(
                input=path,
                **{"input_label": label, **self.metadata.to_config_fields(), **self.settings},
            )
            prep = prepare(config, sub_progress(progress, 0.0, 0.03))
        self._fitted = synthesize(prep, sub_progress(progress, 0.03, 1.0), cancel)
        self._flow = self._fitted.flow
        return self

    @property
    def result(self) -> RunResult:
        """The fit's whole result (the release at the audited w), for what this face does not
        show."""
        if self._fitted is None:
            raise InputError("nothing fitted yet: call fit(table) first")
        return self._fitted

    @property
    def prepared(self) -> Prepared:
        """The table as read, its schema and its encoder."""
        return self.result.prepared

    def audit(self) -> AuditSummary:
        """The membership audit: the chosen w, the curve and the decision in words."""
        result = self.result
        audit = result.audit
        assert audit is not None  # a fit always audits
        curve = pd.DataFrame(
            [
                {
                    "w": p.w,
                    "distance_auc": p.auc,
                    "density_auc": p.density_auc,
                    "released_auc": p.released_auc,
                    "upper_bound": p.upper(audit.select_on),
                    "meets_limit": p.passes(audit.threshold, audit.select_on),
                }
                for p in audit.curve
            ]
        )
        released = result.released
        return AuditSummary(
            w=None if released is None else released.w,
            audited_w=audit.selected_w,
            auc_max=result.config.auc_max,
            curve=curve,
            decision=_decision(result),
            result=audit,
        )

    def sample(
        self, w: float | None = None, rows: int | None = None, *, allow_risky: bool = False
    ) -> pd.DataFrame:
        """Synthetic rows (shuffled, identifiers dropped) at the audited w, or at ``w``.

        A ``w`` above the audited one raises :class:`~engine.errors.PrivacyRefused` with the
        app's words unless ``allow_risky=True`` (the release is then marked as an override);
        so does any w when no w met the limit. The disclosure rule may lower w, as in the app.
        Latent Noise Injection makes one row per real row (and copy): ``rows`` takes that many
        of them (a random subset: the rows are shuffled). With a seed, one w gives one frame.
        """
        result = self._release(w, allow_risky)
        frame = result.copies[0] if len(result.copies) == 1 else pd.concat(result.copies)
        frame = frame.reset_index(drop=True)
        if rows is None:
            return frame
        if not 0 < rows <= len(frame):
            copies = result.config.copies
            raise InputError(
                f"{rows:,} synthetic rows asked for; a release holds {len(frame):,} (one row per "
                f"real row and copy, {copies} copies): ask for 1 to {len(frame):,}, or for more "
                "copies (Synthesizer(..., copies=k): the audit then covers k copies)"
            )
        return frame.iloc[:rows].reset_index(drop=True)

    def compare(self, synthetic: pd.DataFrame) -> Fidelity:
        """The real and synthetic rows compared as the report compares them: the model fitted
        on both, the marginals; ``.verdict.line`` is the one-line fidelity verdict."""
        from engine.pipeline.compare_step import fidelity_of

        return fidelity_of(self.prepared, (synthetic,))

    def write(
        self, folder: str | Path, w: float | None = None, *, allow_risky: bool = False
    ) -> dict[str, str]:
        """Write the command line's outputs for the release at the audited w (or ``w``) to
        ``folder``: the synthetic file(s), README.txt, report.pdf, audit.json and results.json,
        atomically; returns each file's SHA-256. With nothing releasable, audit.json and the
        report are written and :class:`~engine.errors.PrivacyRefused` is raised."""
        result = self._release(w, allow_risky, refuse=False)
        written = write_outputs(result, Path(folder))
        if written.refusal is not None:
            raise PrivacyRefused(refusal_words(written.refusal))
        return dict(written.outputs)

    def _release(self, w: float | None, allow_risky: bool, refuse: bool = True) -> RunResult:
        """The fit's release, or the pipeline's release again at ``w`` with the trained model
        (a fresh generator from the seed: one seed and w, one release)."""
        fitted = self.result
        if w is None and not allow_risky:
            result = fitted
        else:
            config = replace(fitted.config, forced_w=w, allow_risky=allow_risky)
            config.validate()
            assert fitted.audit is not None
            prep = replace(fitted.prepared, config=config)
            rng = make_rng(config.seed)
            result = release(prep, fitted.audit, flow=self._flow, rng=rng)
            self._flow = result.flow if result.flow is not None else self._flow
        if refuse and result.refusal is not None:
            raise PrivacyRefused(refusal_words(result.refusal))
        return result


def _decision(result: RunResult) -> str:
    """What was decided, in the words of the command line's summary and the report."""
    refusal, released = result.refusal, result.released
    if refusal is not None or released is None or result.audit is None:
        return "refused: " + (refusal.reason if refusal is not None else "nothing was released")
    binding = result.audit.binding(released.w)
    attack = "" if binding is None else f" ({binding.quote(result.config.auc_max)})"
    return f"{result.verdict} at w = {released.w:.2f}, chosen by {released.chosen_by}{attack}"
