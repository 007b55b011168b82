"""latent-synth's inference attack against anonymeter's own ``InferenceEvaluator`` (issue 29).

anonymeter 1.1.0 pins numpy < 1.27 and the lock holds numpy 2, so it cannot be a test
dependency of the project's environment; this script runs in a separate one::

    python -m venv /tmp/anon-venv && /tmp/anon-venv/bin/pip install anonymeter==1.1.0
    PYTHONPATH=. /tmp/anon-venv/bin/python benchmarks/anonymeter_crosscheck.py

(``tests/test_disclosure_risk.py::test_inference_risk_agrees_with_anonymeter`` runs the same
comparison where anonymeter is importable and is skipped elsewhere.)

For each case (a table, keys, a secret, and a "synthetic" file that leaks a chosen share of the
members' secrets), both tools attack every member (main) and every control record, and the
script prints both risks with anonymeter's 95 % interval and whether ours lies inside it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.disclosure.key_groups import gower_coordinates
from engine.disclosure.risk import InferenceRisk, Rate, guesses_right, nearest_guesses


def cohort(n: int, seed: int) -> pd.DataFrame:
    """A clinical-looking table: age, sex, ethnicity, BMI; an event tied to age and BMI."""
    rng = np.random.default_rng(seed)
    age = rng.integers(30, 85, n)
    bmi = rng.normal(27, 4, n).round(1)
    frame = pd.DataFrame(
        {
            "age": age,
            "sex": rng.choice(["F", "M"], n),
            "ethnicity": rng.choice(["white", "black", "asian", "other"], n, p=[.6, .2, .15, .05]),
            "bmi": bmi,
        }
    )  # fmt: skip
    risk = 1 / (1 + np.exp(-(0.05 * (age - 60) + 0.1 * (bmi - 27) - 1)))
    frame["event"] = (rng.random(n) < risk).astype(int)
    return frame


def leaky_release(members: pd.DataFrame, leak: float, seed: int) -> pd.DataFrame:
    """Members with noisy keys; a share ``leak`` keep their own event, the rest a random one."""
    rng = np.random.default_rng(seed + 1)
    out = members.copy()
    out["bmi"] = (out["bmi"] + rng.normal(0, 0.3, len(out))).round(1)
    keep = rng.random(len(out)) < leak
    out["event"] = np.where(keep, out["event"], rng.permutation(out["event"].to_numpy()))
    return out.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def ours(
    members: pd.DataFrame, control: pd.DataFrame, syn: pd.DataFrame, keys: list[str], secret: str
) -> InferenceRisk:
    real = pd.concat([members, control], ignore_index=True)
    c_mem, c_ctl, c_syn = gower_coordinates([members, control, syn], keys, real)
    s = syn[secret].to_numpy()
    main = guesses_right(nearest_guesses(c_syn, s, c_mem), members[secret].to_numpy(), False)
    ctl = guesses_right(nearest_guesses(c_syn, s, c_ctl), control[secret].to_numpy(), False)
    return InferenceRisk.of(Rate.wilson(main.sum(), len(main)), Rate.wilson(ctl.sum(), len(ctl)))


def theirs(
    members: pd.DataFrame, control: pd.DataFrame, syn: pd.DataFrame, keys: list[str], secret: str
) -> tuple[float, tuple[float, float], float, float]:
    from anonymeter.evaluators import InferenceEvaluator

    ev = InferenceEvaluator(
        ori=members, syn=syn, control=control, aux_cols=keys, secret=secret,
        n_attacks=len(members),
    )  # fmt: skip
    ev.evaluate(n_jobs=1)
    risk = ev.risk()
    res = ev.results()
    return risk.value, tuple(risk.ci), res.attack_rate.value, res.control_rate.value


def main() -> None:
    keys, secret = ["age", "sex", "ethnicity", "bmi"], "event"
    inside = 0
    cases = [(n, leak, seed) for n in (400, 1000) for leak in (0.0, 0.5, 1.0) for seed in (0, 1)]
    print(f"{'rows':>5} {'leak':>5} {'seed':>4}  ours (main, control) | anonymeter [95 % CI]")
    for n, leak, seed in cases:
        frame = cohort(2 * n, seed)
        members, control = (
            frame.iloc[:n].reset_index(drop=True),
            frame.iloc[n:].reset_index(drop=True),
        )
        syn = leaky_release(members, leak, seed)
        mine = ours(members, control, syn, keys, secret)
        value, ci, main_rate, control_rate = theirs(members, control, syn, keys, secret)
        ok = ci[0] - 1e-9 <= mine.risk <= ci[1] + 1e-9
        inside += ok
        print(
            f"{n:5d} {leak:5.1f} {seed:4d}  {mine.risk:.3f} ({mine.main.value:.3f}, "
            f"{mine.control.value:.3f}) | {value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] ({main_rate:.3f}, "
            f"{control_rate:.3f}) {'inside' if ok else 'OUTSIDE'}"
        )
    print(f"\nours inside anonymeter's 95 % interval in {inside} of {len(cases)} cases")


if __name__ == "__main__":
    main()
