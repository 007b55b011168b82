"""The audit of a nested family of candidate models, on shared splits (issue 27 items 1-2).

The candidates (:class:`Family`) run from the Gaussian copula of the normal scores (the floor:
the flow's whitened start with no MADE layer) to the flows, and come ranked by a fidelity
criterion measured on rows they did not train on (:func:`engine.flows.select.rank_family`:
the flows by the one-SE rule on validation NLL, the copula last unless it is best). The audit
takes them in that order: each is audited at the smallest w of the grid on the SAME splits (same
members, same holdout, same density references); the first whose point passes the limit is
chosen, and only it is audited over the rest of the grid. A candidate that fails at the smallest
w is dropped, not refused. Only when the floor fails is nothing released; the refusal then names
the columns that drive the leak (:func:`column_drivers`).

Why in ranking order and stop at the first pass: it is the rule "drop the candidates that fail,
take the best-ranked of those left" (the ranking does not depend on the audit), and in the
common case (the first-ranked passes) it costs no more than auditing one model. The floor's
own refusal ends the search: the flows above it fit the rows more closely and leak more.

References: METHOD.md section 5; Breiman et al. (1984) one-standard-error rule.

Example:
    >>> import numpy as np
    >>> from engine.privacy.audit_result import AuditConfig
    >>> class Id:
    ...     def to_latent(self, X): return X
    ...     def from_latent(self, Z): return Z
    >>> X = np.random.default_rng(0).standard_normal((300, 2))
    >>> res = run_family_audit(X, X, SingleMap(lambda rows: Id()), config=AuditConfig(
    ...     grid=(0.0, 0.5), repeats=2, refine=False), rng=np.random.default_rng(1))
    >>> res.chosen, [c.status for c in res.candidates]
    ('model', ['chosen'])
"""

from __future__ import annotations

from engine.privacy.candidates import (  # noqa: F401  (re-exported)
    Candidate,
    CandidateRecord,
    Family,
    FitMap,
    SingleMap,
    because,
    candidate_record,
    not_audited,
)
from engine.privacy.crossfit import run_crossfit_audit
from engine.privacy.drivers import DRIVER_SPLITS, column_drivers  # noqa: F401  (re-exported)

# The family's audit is the audit's one driver (engine.privacy.crossfit): the candidates in
# ranking order at the smallest w, the chosen one over the whole grid, and the choice of w;
# ``groups`` (distance-space columns of each table column) name the columns behind a refusal.
run_family_audit = run_crossfit_audit
