"""The audit's standard error counts the spread between its fresh splits (issue 13 item 6).

Repeats on one split share its flow and its members / holdout draw, so on a small table the
AUC differs more between splits than between repeats; an SE over the repeats alone understated
the uncertainty of the printed "mean ± SE" (on lung's 84 members by 1.0-2.3x) and the selection
rule (mean + one SE below the limit) then passed a w too easily."""

from __future__ import annotations

import numpy as np

from engine.privacy.audit import AuditConfig, run_audit, split_se


class _Identity:
    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return X

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return Z


class _Forgetful(_Identity):
    """A map whose synthetic rows carry nothing of the rows they came from."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return self.rng.standard_normal(Z.shape)


def test_split_se_is_the_se_of_the_split_means_when_they_differ() -> None:
    values = [0.70, 0.71, 0.69, 0.70, 0.50, 0.51, 0.49, 0.50]
    splits = [0, 0, 0, 0, 1, 1, 1, 1]
    naive = float(np.std(values, ddof=1) / np.sqrt(len(values)))
    assert naive < 0.04
    assert abs(split_se(values, splits) - 0.1) < 1e-9  # SD of (0.70, 0.50) / sqrt(2)
    assert split_se(values, [0] * 8) == naive  # one split: the repeats' SE
    same = [0.60, 0.62, 0.58, 0.60, 0.61, 0.59, 0.60, 0.60]  # splits agree: repeats' SE
    assert split_se(same, splits) == float(np.std(same, ddof=1) / np.sqrt(8))


def test_an_audit_whose_splits_disagree_reports_their_spread() -> None:
    X = np.random.default_rng(0).standard_normal((400, 3))
    fitted: list[str] = []

    def fit_map(rows: np.ndarray):  # split 1 leaks (identity), split 2 forgets the rows
        fitted.append("leaky" if not fitted else "forgetful")
        return _Identity() if len(fitted) == 1 else _Forgetful(len(fitted))

    config = AuditConfig(grid=(0.0, 0.97), repeats=4, splits=2, refine=False)
    res = run_audit(X, X, fit_map, config=config, rng=np.random.default_rng(1))
    assert fitted == ["leaky", "forgetful"]
    top = max(res.curve, key=lambda p: p.w)
    # the leaky split scores about 0.70 at w = 0.97, the forgetful one 0.50: their mean's SE is
    # about 0.1, while the eight repeats' SE is 0.04 (what was reported before)
    assert top.auc_se > 0.09
    assert top.auc_se > 2.0 * top.auc_sd / np.sqrt(top.repeats)
    assert "per-split means" in res.to_dict()["se_method"]  # audit.json says what the SE counts
