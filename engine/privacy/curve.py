"""Two questions every reader of an audit asks, answered once: which audited point of the AUC
curve describes a given w (:func:`nearest_point`), and whether a w lies above the audit's
choice, i.e. releasing there needs an override (:func:`above_choice`). Also :func:`same_w`, the
tolerance used when two w values are compared.

References: main paper Algorithm 1 (the w grid and the selection rule); METHOD.md section 5.

Example:
    >>> from types import SimpleNamespace as NS
    >>> audit = NS(curve=[NS(w=0.0), NS(w=0.25), NS(w=0.5)], selected_w=0.25)
    >>> nearest_point(audit, 0.3).w, nearest_point(audit, None).w
    (0.25, 0.0)
    >>> above_choice(audit, 0.25), above_choice(audit, 0.3)
    (False, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.privacy.audit import AuditResult, CurvePoint

W_TOLERANCE = 1e-9  # two w values closer than this are the same w


def same_w(a: float | None, b: float | None) -> bool:
    """True when both are given and equal up to :data:`W_TOLERANCE`.

    Example:
        >>> same_w(0.3, 0.3 + 1e-12), same_w(0.3, None)
        (True, False)
    """
    return a is not None and b is not None and abs(float(a) - float(b)) < W_TOLERANCE


def nearest_point(audit: AuditResult | None, w: float | None) -> CurvePoint | None:
    """The audited curve point nearest ``w`` (the smallest w when ``w`` is None); None when
    there is no audit or its curve is empty."""
    curve = list(audit.curve) if audit is not None else []
    if not curve:
        return None
    if w is None:
        return min(curve, key=lambda p: float(p.w))
    return min(curve, key=lambda p: abs(float(p.w) - float(w)))


def above_choice(audit: AuditResult | None, w: float) -> bool:
    """True when releasing at ``w`` goes beyond what the audit chose: no w met the limit, or
    ``w`` lies above the selected one. Such a release needs an explicit override."""
    selected = None if audit is None else audit.selected_w
    return selected is None or float(w) > float(selected) + W_TOLERANCE
