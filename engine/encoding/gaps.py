"""An order rule kept by construction (issue 30): ``b`` modelled as the gap ``b - a``.

For a rule ``a <= b`` (or ``a < b``) between two columns with no missing value, the flow sees
``b - a`` in place of ``b``; the decoder adds ``a`` back. The gap's normal-score marginal runs
between its own 10th smallest and 10th largest real values (:func:`engine.disclosure.safe_bounds`),
so a decoded gap is never negative (never 0 under ``<``): the rule holds by construction, and
the real rows' ties (a hospital stay that ends with the follow-up: gap 0) come back at their
real rate, tied to the rows' other values as the flow learnt them, instead of being made by
a repair after the fact. ``b`` is then clipped to its own bounds, which keeps the order
(``a``'s 10th largest is at most ``b``'s when every real row has ``a <= b``); the rule set's
repair (:meth:`engine.columns.rules.RuleSet.apply`) stays as the safety net.

Chains (``a <= b <= c``) are left to the repair: a column takes part in one gap at most.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

NUMERIC = ("continuous", "integer", "time")


@dataclass
class GapLayer:
    """``pairs``: (a, b) with b modelled as b - a; ``specs``: b's modelled spec (its own
    bounds, for the clip after decoding) and ``gap_specs``: the spec the model sees for b."""

    pairs: list[tuple[str, str, str]] = field(default_factory=list)  # (a, b, op)
    specs: dict[str, Any] = field(default_factory=dict)
    gap_specs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def fit(cls, days: pd.DataFrame, rules: Any, spec_of: Callable[[str], Any]) -> GapLayer | None:
        """The order rules of ``rules`` that can be built in, on the table as days."""
        from engine.disclosure import safe_bounds

        layer, taken = cls(), set[str]()
        for rule in getattr(rules, "kept", ()):
            a, b = rule.a, rule.b
            if rule.kind != "order" or a not in days or b not in days or {a, b} & taken:
                continue
            spec_a, spec_b = spec_of(a), spec_of(b)
            if spec_a is None or spec_b is None or spec_b.kind not in NUMERIC:
                continue
            if spec_a.kind not in NUMERIC or days[a].isna().any() or days[b].isna().any():
                continue
            gap = days[b].to_numpy(dtype="float64") - days[a].to_numpy(dtype="float64")
            lower, upper = safe_bounds(gap)
            if lower is None or upper is None or lower < 0 or (rule.op == "<" and lower <= 0):
                continue
            layer.pairs.append((a, b, rule.op))
            layer.specs[b] = spec_b
            # Whole-number gaps are modelled as counts (a tie is a level of its own, not a
            # point smeared over the interval to the next gap).
            whole = bool(np.all(gap == np.round(gap)))
            kind = "integer" if whole else spec_b.kind
            layer.gap_specs[b] = replace(spec_b, kind=kind, lower=lower, upper=upper)
            taken |= {a, b}
        return layer if layer.pairs else None

    def to_gaps(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``b`` replaced by ``b - a`` (rows as days)."""
        out = frame.copy()
        for a, b, _ in self.pairs:
            if a in out and b in out:
                out[b] = out[b] - out[a]
        return out

    def from_gaps(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``b`` back as ``a + gap``, inside ``b``'s own bounds and to its precision."""
        out = frame.copy()
        for a, b, _ in self.pairs:
            if a not in out or b not in out:
                continue
            spec = self.specs[b]
            v = out[a].to_numpy(dtype="float64") + out[b].to_numpy(dtype="float64")
            lo = -np.inf if spec.lower is None else spec.lower
            hi = np.inf if spec.upper is None else spec.upper
            v = np.clip(v, lo, hi)
            if spec.kind == "integer" or spec.decimals == 0:
                v = np.round(v)
            elif spec.decimals is not None:
                v = np.round(v, spec.decimals)
            out[b] = pd.Series(v, index=out.index).astype(out[b].dtype, errors="ignore")
        return out
