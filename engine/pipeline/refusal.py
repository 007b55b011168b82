"""Why nothing was released, in plain words (:func:`refusal_reason`), and the columns that
drive a refusal at w = 0 (:func:`driver_words`, from the audit's leave-one-column-out AUCs).

References: docs/architecture.md; issue 27 item 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.pipeline.config import RunConfig
    from engine.privacy.audit import AuditResult

DRIVERS_SHOWN = 3  # columns named in a refusal
DRIVER_DROP = 0.01  # an AUC that falls by less without the column does not name it


def _floor(audit: AuditResult) -> bool:
    """Whether the audited model was the family's floor (the Gaussian copula)."""
    return any(c.floor and c.status == "chosen" for c in getattr(audit, "candidates", ()))


def _named_drivers(audit: AuditResult) -> list[tuple[str, float]]:
    """The columns whose absence lowers the distance attack at w = 0 by at least
    :data:`DRIVER_DROP` (at most :data:`DRIVERS_SHOWN`), when that attack itself reads near the
    limit (within 0.02 of it): lowering an attack that was never near it helps nothing."""
    drivers = getattr(audit, "drivers", ())
    if not drivers:
        return []
    everything = drivers[0][1]
    limit = float(getattr(audit, "threshold", 0.55) or 0.55)
    if not everything >= limit - 0.02:
        return []
    return [(c, a) for c, a in drivers[1:] if everything - a >= DRIVER_DROP][:DRIVERS_SHOWN]


def driver_words(audit: AuditResult) -> str:
    """``"; the distance attack's AUC falls from 0.62 to 0.50 without 'record number'..."``:
    the columns whose absence lowers the distance attack at w = 0 most (at most
    :data:`DRIVERS_SHOWN`, each by at least :data:`DRIVER_DROP`); empty when none does.

    Example:
        >>> from types import SimpleNamespace
        >>> a = SimpleNamespace(drivers=(("", 0.62), ("id", 0.50), ("age", 0.615)), threshold=0.55)
        >>> head, tail = driver_words(a).split(" (")
        >>> head
        "; the columns that single people out most: 'id'"
        >>> tail
        "the distance attack's AUC falls from 0.620 to 0.500 without it)"
    """
    named = _named_drivers(audit)
    if not named:
        return ""
    everything = audit.drivers[0][1]
    parts = [
        f"'{named[0][0]}' (the distance attack's AUC falls from {everything:.3f} to "
        f"{named[0][1]:.3f} without it)"
    ]
    parts += [f"'{c}' (to {a:.3f})" for c, a in named[1:]]
    return "; the columns that single people out most: " + ", ".join(parts)


def refusal_findings(audit: AuditResult | None) -> list[str]:
    """What was measured on the refused table to help it, as sentences a person reads (the
    wizard's advice, before the general suggestions): whether more rows would help (measured
    on half the rows) and which columns single people out. Empty when nothing was measured.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> refusal_findings(NS(rows_advice=None, drivers=(("", 0.6), ("id", 0.5)),
        ...                     threshold=0.55))[0][:40]
        "Leaving out 'id' lowers the distance att"
    """
    if audit is None:
        return []
    out = []
    drivers = getattr(audit, "drivers", ())
    limit = float(getattr(audit, "threshold", 0.55) or 0.55)
    if drivers and drivers[0][1] >= limit - 0.02:  # the distance attack near the limit itself
        everything = drivers[0][1]
        named = _named_drivers(audit)
        if named:
            out.append(
                "Leaving out "
                + ", ".join(
                    f"'{c}' lowers the distance attack from {everything:.3f} to {a:.3f}"
                    for c, a in named[:1]
                )
                + "".join(f"; leaving out '{c}', to {a:.3f}" for c, a in named[1:])
                + " (measured on this table at w = 0)."
            )
        else:
            out.append(
                "No single column drives it: leaving out any one lowered the distance attack by "
                f"less than {DRIVER_DROP:g} (measured on this table at w = 0)."
            )
    rows = getattr(audit, "rows_advice", None)
    if rows is not None:
        out.append(rows.words())
    return out


def column_advice(audit: AuditResult) -> str:
    """What the leave-one-column-out measurement says to do with columns, in words (nothing
    when the distance attack it measures was not near the limit)."""
    drivers = getattr(audit, "drivers", ())
    limit = float(getattr(audit, "threshold", 0.55) or 0.55)
    if not drivers or drivers[0][1] < limit - 0.02:
        return ""
    if driver_words(audit):
        return "leaving out or coarsening the columns named above lowers the attack (measured)"
    return (
        "no single column drives it (leaving out any one lowered the distance attack by less "
        f"than {DRIVER_DROP:g})"
    )


def refusal_reason(cfg: RunConfig, audit: AuditResult) -> tuple[str, str]:
    """(plain reason, command-line hint) when nothing may be released, naming the attack that
    decided: at a forced w, the attack that binds there; otherwise the attack that failed at
    the smallest w, with its fitted AUC, SE and upper bound. A refusal comes from the bound,
    not the point: when the estimate itself is under the limit, the reason says so. The hint
    gives what was measured to help on this table (more rows, fewer columns)."""
    selected = audit.selected_w
    copies = f" with {cfg.copies} copies of every record" if cfg.copies > 1 else ""
    if cfg.forced_w is not None:
        binding = audit.binding(cfg.forced_w)
        meets = "no tested w meets it" if selected is None else f"w = {selected:.2f} meets it"
        attack = "membership attack" if binding is None else binding.quote(cfg.auc_max)
        return (
            f"at the requested w = {cfg.forced_w:g}{copies} the {attack} is not safely below it "
            f"({meets})",
            "lower --w or add --allow-risky to override",
        )
    failed = audit.binding(None)
    quote = "" if failed is None else failed.quote(cfg.auc_max)
    where = (
        "" if failed is None else f": already at w = {failed.w:.2f} the {quote} failed the limit"
    )
    hint = "add --allow-risky to export at w = 0 anyway"
    if failed is not None and failed.auc < cfg.auc_max:  # failed by its margin only
        where += (
            " (its estimate is below the limit, but the audit adds a margin for its own "
            "uncertainty, the upper 95 % bound, and that is over it: on so few rows the audit "
            "cannot show that it stays below)"
        )
    if failed is not None and failed.w <= 0.0:  # the columns that lean on it most, in the
        where += driver_words(audit)  # reason (the wizard and the report show it; no flags)
        rows = getattr(audit, "rows_advice", None)
        measured = [
            t.rstrip(".") for t in (rows.words() if rows else "", column_advice(audit)) if t
        ]
        if failed.auc < cfg.auc_max and (rows is None or rows.helps):
            hint = "; ".join(["more rows would settle it", *measured]) + "; or " + hint
        else:
            hint = (  # the model itself gives members away: what was measured to help
                "the model itself gives members away at w = 0"
                + (
                    ", even the simplest one (a Gaussian copula of the columns)"
                    if _floor(audit)
                    else ""
                )
                + ": "
                + "; ".join(
                    measured
                    + ["coarsen columns that single people out (exact dates, rare categories)"]
                )
                + "; or "
                + hint
            )
    return (
        f"no perturbation weight kept the membership attacks safely below the AUC limit "
        f"{cfg.auc_max:g}{copies}{where}; nothing was exported",
        hint,
    )
