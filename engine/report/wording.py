"""The report's sentences: verdict, plain-words privacy numbers, ε, threat model, references.

Kept apart from the layout so the wording can be reviewed (and tested) on its own. The
sentences must not overclaim: the ε of Theorem 2 rests on assumptions that the run does not
prove, and the empirical audit is the operational control (docs/method.md sections 5, 6 and 10).

References:
    Shen & Tian (2025) Theorem 2, eqs. 22 and 26; Pierquin, Bellet, Tommasi & Boussard (2025)
    "Privacy amplification through synthetic data" (threat model: hidden model and hidden random
    inputs); van Breugel et al. (2023) DOMIAS.

Example:
    >>> verdict_words("released with override")[0]
    'Released only because the user overrode the privacy limit'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from engine.disclosure import copies_sentence
from engine.report.data import decimals, finite, percent, plain, safe_count
from engine.report.layout import text

if TYPE_CHECKING:
    from engine.pipeline.config import RunConfig
    from engine.pipeline.results import ProtectionEffect, Release
    from engine.privacy.audit import AuditResult
    from engine.privacy.release import EpsilonStatement

REFERENCES: tuple[str, ...] = (
    "Shen R, Tian L (2025). Latent Noise Injection for private and statistically aligned synthetic "
    "data generation. Stanford University (preprint, 19 June 2025).",
    "Su B, Wang Y, Schiavazzi DE, Liu F. Differentially private normalizing flows for density "
    "estimation, data synthesis, and variational inference with application to electronic health "
    "records. University of Notre Dame (preprint).",
    "Pierquin C, Bellet A, Tommasi M, Boussard M (2025). Privacy amplification through synthetic "
    "data: insights from linear regression. ICML 2025 (arXiv:2506.05101).",
    "Karr AF, Kohnen CN, Oganian A, Reiter JP, Sanil AP (2006). A framework for evaluating the "
    "utility of data altered to protect confidentiality. The American Statistician 60(3):224-232.",
    "DerSimonian R, Laird N (1986). Meta-analysis in clinical trials. Controlled Clinical Trials "
    "7(3):177-188.",
    "van Breugel B, Sun H, Qian Z, van der Schaar M (2023). Membership inference attacks against "
    "synthetic data through overfitting detection (DOMIAS). Proceedings of AISTATS 2023.",
    "Papamakarios G, Pavlakou T, Murray I (2017). Masked autoregressive flow for density "
    "estimation. NeurIPS 2017.",
)

THREAT_MODEL: tuple[str, ...] = (
    "<b>What stays inside.</b> The trained model (the flow), its weights, the hidden codes of the "
    "real records and the random noise used to make the synthetic rows never leave this computer. "
    "They are not written into any exported file. Without a seed the noise comes from the "
    "operating system's secure random number generator, so nobody can re-create it; this report "
    "only says whether a seed was set, never its value.",
    "<b>What a recipient gets.</b> A table of synthetic rows in random order, each made from one "
    "real row that was blended with fresh noise in the model's hidden space. The recipient can "
    "study distributions, correlations and regression results, which the report compares with the "
    "real data. The row order carries no link back to the real table.",
    "<b>What a recipient cannot learn (as measured).</b> The membership audit plays an attacker "
    "who holds real records and tries to tell who was used to make the synthetic data. "
    "{audit_outcome} Exact copies of real rows are counted and reported.",
    "<b>What this does not cover.</b> If an attacker learned the model or the noise, a single "
    "synthetic row could reveal as much as the model itself (the privacy-amplification paper [3]), "
    "so both must stay hidden. Records far from everyone else (outliers) are the hardest to "
    "protect; the per-record risk count shows how many there are. Attacks other than the two "
    "tested may do better; the AUC is an estimate with a margin of error.",
)


AUDIT_OUTCOME = {
    "released": (
        "At the released w both attacks stayed below the AUC limit, i.e. close to a coin toss."
    ),
    "released with override": "At the released w the attacks did better than the AUC limit allows "
    "(see page 1): a recipient has a better-than-allowed chance of telling who was in the data.",
    "refused": "No tested w kept both attacks below the AUC limit, so nothing was released.",
}


def threat_model(verdict: str | None) -> list[str]:
    """The threat-model paragraphs, with the audit's outcome for this verdict.

    Example:
        >>> "nothing was released" in threat_model("refused")[2]
        True
    """
    outcome = AUDIT_OUTCOME.get(str(verdict), "The audit's outcome was not recorded.")
    return [par.replace("{audit_outcome}", outcome) for par in THREAT_MODEL]


RECOMMEND = "The tool's recommendation"


def verdict_words(verdict: str | None) -> tuple[str, str, str]:
    """(headline, colour, one-line meaning) for ``released`` / ``refused`` / ``released with
    override``.

    The headline is the tool's recommendation, not the output checker's decision: the checker
    decides.

    Example:
        >>> verdict_words("refused")[:2]
        ("The tool's recommendation: do not release", '#c00000')
    """
    v = (verdict or "").strip().lower()
    if v == "released":
        return (
            f"{RECOMMEND}: release",
            "#1a7f37",
            "The audit met the privacy limit and the synthetic table was exported; whether it "
            "leaves is the output checker's decision.",
        )
    if v == "refused":
        return (
            f"{RECOMMEND}: do not release",
            "#c00000",
            "No perturbation weight met the privacy limit; nothing was exported.",
        )
    if v == "released with override":
        return (
            "Released only because the user overrode the privacy limit",
            "#c00000",
            f"{RECOMMEND} was: do not release. The privacy limit was NOT met at the exported w; "
            "the user chose to export anyway.",
        )
    return ((verdict or "UNKNOWN").upper(), "#c00000", "The run did not record a known verdict.")


def header_words(verdict: str | None) -> str:
    """The short form printed in every page's header.

    Example:
        >>> header_words("released with override")
        "Released by user override (the tool's recommendation: do not release)"
    """
    v = (verdict or "").strip().lower()
    if v == "released with override":
        return f"Released by user override ({RECOMMEND.lower()}: do not release)"
    return verdict_words(verdict)[0]


def override_sentence(config: RunConfig, audit: AuditResult | None, w: float | None) -> str:
    """Who overrode what: the flag or the wizard's acknowledgement, and the limit not met."""
    how = []
    if config.allow_risky:
        how.append("the user's instruction to export despite the risk")
    if config.risk_acknowledged:
        how.append("the user's explicit acknowledgement of the risk in the wizard")
    if config.forced_w is not None:
        how.append(f"a forced perturbation weight (w = {decimals(config.forced_w, 2)})")
    selected = audit.selected_w if audit is not None else None
    limit = (
        "no tested w met it"
        if selected is None
        else f"the largest w that met it was {decimals(selected, 2)}"
    )
    return (
        f"Override: exported at w = {decimals(w, 2)} by {' and '.join(how) or 'an override'}. "
        f"The AUC limit was {decimals(config.auc_max, 2)}; {limit}. The output checker should "
        "treat this table as carrying a higher membership risk than the limit allows."
    )


def closer_sentence(closer_probability: Any) -> str:
    """Eq. 22 in plain words.

    Example:
        >>> closer_sentence(0.03)[:60]
        'On average, 3.0 % of the other real people lie closer to a p'
    """
    if closer_probability is None:
        return "The closer probability was not computed."
    return (
        f"On average, {percent(closer_probability)} of the other real people lie closer to a "
        "person's real record than that person's own synthetic row does (closer probability "
        f"{decimals(closer_probability)}; 0.5 would mean the synthetic row is no closer than a "
        "random other person, 0 that it is always the nearest)."
    )


def rank_sentence(median_rank: Any, exact: Any = True) -> str:
    """Eq. 26 in plain words (a median over all rows, so not a small-group statistic).

    People are whole: a median between two ranks (205.5 over an even number of rows) is said as
    "about 206" people, rounded half up; the median itself stays exact in the brackets.

    Example:
        >>> rank_sentence(31.0).startswith("For the typical person, 31 other real people")
        True
        >>> rank_sentence(205.5).startswith("For the typical person, about 206 other real people")
        True
    """
    if median_rank is None:
        return "The median rank was not computed."
    r = float(median_rank)
    whole = int(np.floor(r + 0.5))
    stat = f"{r:.0f}" if r == int(r) else f"{r:.1f}"
    count = f"{whole}" if r == whole else f"about {whole}"
    people = "other real person lies" if whole == 1 else "other real people lie"
    tail = "" if exact in (True, None) else " (estimated from a random sample of records)"
    return (
        f"For the typical person, {count} {people} closer to their record than their "
        f"own synthetic row (median rank {stat}{tail}), so by distance alone the synthetic row "
        "points at a crowd, not at one person."
    )


def risk_sentence(release: Release) -> str:
    """Per-record risk counts (each via :func:`safe_count`), exact copies and outlier protection."""
    metrics = release.metrics
    at_risk, rows = metrics.at_risk, release.rows
    share = f" ({percent(float(at_risk) / float(rows))})" if rows and float(at_risk) >= 10 else ""
    sentence = (
        f"Records whose own synthetic row lies among their {metrics.k_risk} nearest real "
        f"neighbours: {safe_count(at_risk)} of {safe_count(rows)}{share}: such a synthetic row "
        "stays close to its source record."
    )
    protect = release.protect_outliers
    if protect is None:
        sentence += " The option to protect outliers adds noise to these records only."
    if rows and finite(metrics.share_within_1e6) is not None:
        copies = float(metrics.share_within_1e6) * float(rows)
        sentence += (
            " No synthetic row equals a real row (to within one millionth)."
            if copies == 0
            else " Synthetic rows equal to a real row (to within one millionth): "
            f"{safe_count(copies)}."
        )
    sentence += " " + copies_sentence(release.exact_copies.to_dict())
    if protect is not None:
        sentence += (
            " Outlier protection added noise (a lower w) for "
            f"{safe_count(protect.records_with_lower_w)}"
            f" records; records at risk before it: {safe_count(protect.at_risk_before)}, after: "
            f"{safe_count(protect.at_risk_after)}."
        )
        sentence += _protection_cost(protect.effect)
    return sentence


def _protection_cost(effect: ProtectionEffect) -> str:
    """One sentence on what the extra noise cost in fidelity (model estimates, mean shifts)."""
    real, without, with_ = effect.model_real, effect.model_without, effect.model_with
    parts = [
        f"{name} {real[name]:.3f} (real), {without[name]:.3f} without, {with_[name]:.3f} with "
        "protection"
        for name in real
        if name in without and name in with_ and name != "(intercept)"
    ]
    shift = (
        f" Largest shift of a column mean: {effect.largest_mean_shift_sd_without:.3f} SD "
        f"without, {effect.largest_mean_shift_sd_with:.3f} SD with protection."
    )
    return (
        " Its cost in fidelity (model estimates): " + "; ".join(parts) + "." if parts else ""
    ) + shift


def epsilon_paragraphs(
    eps: EpsilonStatement | None, w: float | None, audit_failed: bool = False
) -> list[str]:
    """Theorem 2's ε with C, δ, how C was obtained and the assumptions; honest about its size.
    ``audit_failed``: released although no w met the audit's limit (an override): the ε then
    comes with the warning that it covers the noise step only, not what the model learnt.

    Example:
        >>> from engine.privacy.release import EpsilonStatement
        >>> eps = EpsilonStatement(0.7, 1e-4, 9.8, "exact", 120.0, "an estimate", "")
        >>> "weak" in epsilon_paragraphs(eps, 0.7)[1]
        True
        >>> "says nothing about what the model" in epsilon_paragraphs(eps, 0.0, True)[0]
        True
    """
    warning = (
        [
            "<b>No w met the audit's limit; this release goes beyond it on the user's own "
            "acceptance of the risk.</b> The ε below covers only the noise added to each record's "
            "hidden code; it says nothing about what the model itself learnt from the data, which "
            "the audit found gives members away. Do not read it as protection."
        ]
        if audit_failed and eps is not None
        else []
    )
    return warning + _epsilon_statement(eps, w)


def _epsilon_statement(eps: EpsilonStatement | None, w: float | None) -> list[str]:
    """The ε statement itself (:func:`epsilon_paragraphs`)."""
    if eps is None:
        return [
            "No formal privacy statement was computed for this run (no synthetic table was made)."
        ]
    value = finite(eps.value)
    head = (
        "<b>Formal bound (Shen &amp; Tian 2025; the method section names the result).</b> At w = "
        f"{decimals(w, 2)} the noise "
        "added to each record's hidden code gives local (ε, δ)-differential privacy per record "
        "with "
        f"ε = {plain(value) if value is not None else 'infinite (no noise at w = 1)'} at δ = "
        f"{plain(eps.delta)} (δ = 1/n). It uses the latent sensitivity C = {decimals(eps.C, 2)}, "
        "the largest distance between two records' hidden codes "
        f"({text(eps.C_method or 'method not recorded')}, "
        "measured on this data)."
    )
    nature = eps.nature or "an estimate from the data, not a proven bound"
    if value == 0:
        head += (
            " At w = 0 no record's code enters the release (the rows are new draws from the "
            "model), so this ε is 0; the model was trained on the data without a formal "
            "guarantee, and the audit above is what shows whether it gives members away."
        )
    strength = (
        "This ε is large: as a formal guarantee it is weak, and it should not be read as strong "
        "protection on its own."
        if value is None or value > 10
        else "This ε is moderate; read it together with the audit."
    )
    assumptions = (
        ""
        if "spectral" in str(nature)
        else (" The theorem assumes a spectrally normalized network and a compact data domain.")
    )
    body = (
        f"This number is {text(nature)}.{assumptions} C is measured on the observed records, not "
        f"proven for every possible record. {strength} The operational control is the empirical "
        "membership audit above; both are reported so the checker can weigh them."
    )
    return [head, body]


# Added to the method's model paragraph when the flow started from the fitted Gaussian (not
# under DP-SGD, whose model sees the rows only through its noisy gradients).
WHITENED_START = (
    "The model starts from the correlations between the columns' normal scores and learns only "
    "what they do not capture."
)

METHOD_PARAGRAPHS: tuple[str, ...] = (
    "<b>Model.</b> A Masked Autoregressive Flow (a neural network that can be run in both "
    "directions) learns to map each prepared real record to a code of independent standard-normal "
    "numbers and back. Before the model, each column is mapped to normal scores through a smoothed "
    "distribution of its values (built from groups of at least 10 people and kept inside the "
    "column's released range), so each column's distribution, including common exact values and "
    "each category's share, is reproduced closely; the map is inverted after generation. For a "
    "category column whose every category is held by at least 10 people, each category's number of "
    "rows is the real one (scaled to the synthetic table's rows); which rows fall in each category "
    "is generated. A category column named by words (such as a group or a site; up to 12 "
    "categories) is given to the model as one yes/no column per category, so that no order is "
    "imposed on them.",
    "<b>Latent Noise Injection.</b> Each real record's code z is blended with fresh "
    "standard-normal noise e: z' = √w · z + √(1 − w) · e, and z' is mapped back to a synthetic "
    "record. w = 1 would return the real record, w = 0 an independent draw from the model. One "
    "synthetic row is made per real row and the rows are shuffled before export.",
    "<b>Membership audit and choice of w.</b> The records are split at random 80/20; a model "
    "trained on the 80 % makes synthetic rows at each candidate w. Two attackers then score every "
    "real record: the distance attack (distance to the nearest synthetic row, Shen &amp; Tian eq. "
    "24) and a density-ratio attack (van Breugel et al. 2023). The AUC says how well a score "
    "separates the 80 % (members) from the 20 % (non-members): 0.5 is guessing, 1.0 certainty. The "
    "audit is repeated with fresh noise. The chosen w is the largest for which it and every "
    "smaller grid value keep both attacks' AUC (mean + one standard error) below the limit. The "
    "final model is then trained on all rows.",
    "<b>Fidelity.</b> The same statistical model is fitted on the real and on the synthetic table; "
    "coefficients are compared by their standardized difference and the confidence-interval "
    "overlap of Karr et al. (2006). Pooling of several studies uses DerSimonian-Laird (1986).",
    "<b>Where the formulas come from.</b> The formal bound (ε) in section 2 is Theorem 2 of Shen "
    "&amp; Tian (2025) [1]; the distance plot of section 2 follows their Figure 11 and the box "
    "plots of section 3 their Figure 14. The rest of the report needs none of the papers.",
)
