"""The released file's identity and attribute disclosure beside what a fresh real sample of the
same size would disclose, and the rule that joins them to the choice of w.

**The reference.** DiSCO and repU depend on the sizes of both files (a larger synthetic file has
more key combinations, each less often of one target value), so a figure means little alone;
the one baseline that needs no chosen threshold is a *fresh real sample*: real people who are
not in the table, scored as if they were the synthetic file. Such people are not at hand, so the
real table is split at random into halves A and B of m = n/2 rows: the released file's rows made
from A's records (Latent Noise Injection makes one row per record, so these are m rows and
exactly A's share of the release) are scored against A, and B, a fresh real sample of the same
m rows from the same population, is scored against A in the same way. Both files then have m
rows and face the same m real records, so the comparison is like for like; it is repeated with A
and B swapped and over :data:`HALVINGS` = 5 random halvings, and the ten pairs averaged (the
demo's 1,608 rows: ten comparisons of 804 rows, 0.04 s in all for 5 targets; 0.6 s on 19,296
rows). For the inference attack B is also anonymeter's control set: real records whose rows are
not in A's share of the release (the model saw them, so the risk measures what the per-record
noise leaves of each record, not what the model learnt of everyone). synthpop's figures for the
whole file against the whole table (n rows each) are reported beside, as synthpop would print
them.

**The rule.** The released file may disclose no more than the fresh sample plus a margin: for
every target, mean DiSCO(release) <= mean DiSCO(fresh) + margin, and mean repU(release) <= mean
repU(fresh) + margin (percentage points of the real records). The margin is what two fresh real
samples differ by: DiSCO swings widely where a few large key groups are, or are not, all of one
target value (a binary target held by 12 % of rossi's 432 rows, keys age and race: the excess of
one fresh sample over another had SD 10 points). ``benchmarks/disclosure_margin.py`` passes a
"release" made of real people who are not in the table (disclosing nothing of it by
construction) through the same comparison, 10 public tables (83 to 3,262 rows after halving)
x 20 seeds: a fixed margin of 3 points bound on 52 % of these runs and 5 points on 29 %; 3, 4
or 5 times the fresh sample's SD over the halvings (at least 3 points) on 10, 4 and 1 %. The
rule takes :data:`MARGIN_FLOOR` = 3 points or :data:`MARGIN_SDS` = 5 SDs, whichever is larger
(bound on 2 of 200 runs, both rossi at 216 rows; none on the other nine tables). The
margin is each measure's own; a user may cap it lower (``margin_cap``, never higher). Where
the rule fails at the audit's w, the pipeline steps down the audited grid and releases again
(:mod:`engine.pipeline.disclosure_step`).

References: Raab, Nowok & Dibben (2024) arXiv:2406.16826 (DiSCO, repU; section 5 compares them
with the original data's own disclosure); Giomi et al. (2023) PoPETs 2023(2) (the control set);
synthpop 1.9 ``disclosure()``.

Example:
    >>> rng = np.random.default_rng(0)
    >>> real = pd.DataFrame({"age": rng.integers(40, 80, 400), "sex": rng.choice(["F", "M"], 400),
    ...                      "cvd": rng.integers(0, 2, 400)})
    >>> leak = measure_disclosure(real, real.copy(), ("age", "sex"), ("cvd",), rng=rng)
    >>> leak.holds, leak.targets[0].disco_release > leak.targets[0].disco_fresh + 5
    (False, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from engine.disclosure.counts import SMALL, THRESHOLD
from engine.disclosure.key_groups import Banding, cell_codes, fit_banding, gower_coordinates
from engine.disclosure.risk import (
    InferenceRisk,
    Rate,
    guesses_right,
    synthpop_figures,
)
from engine.disclosure.words import MARGIN_FLOOR, MARGIN_SDS
from engine.search.parallel import workers_for

HALVINGS = 5
# MARGIN_FLOOR (3 percentage points) and MARGIN_SDS (5 SDs of the fresh sample over the
# halvings): engine.disclosure.words, which says them in words
MAX_ROWS = 20_000  # larger tables are measured on a random subsample of this many records
NUMERIC_KINDS = ("continuous", "time")  # numbers whose inference guess may be 5 % off


@dataclass(frozen=True)
class TargetDisclosure:
    """One target's attribute disclosure (percent of real records; means over the halvings)."""

    target: str
    numeric: bool
    dio: float  # the real table's own: key groups of one target value
    disco_whole: float  # the whole released file against the whole table
    disco_release: float  # the release's share made from A, against A
    disco_fresh: float  # a fresh real sample (B) against A
    disco_fresh_sd: float  # its spread over the halvings
    inference_release: float  # % of A's secrets guessed right from the release's share
    inference_fresh: float  # ... from the fresh sample
    inference: InferenceRisk  # anonymeter's risk, main (A) vs control (B)
    margin: float  # percentage points allowed above the fresh sample
    half_rows: int = 0
    rows: int = 0

    @property
    def holds(self) -> bool:
        """DiSCO no higher than the fresh sample's plus the margin."""
        return self.disco_release <= self.disco_fresh + self.margin + 1e-9

    def to_dict(self) -> dict[str, Any]:
        """As in ``audit.json``'s ``disclosure_risk.targets``."""
        inf, m, n = self.inference, self.half_rows, self.rows
        return {
            "target": self.target,
            "numeric": self.numeric,
            "dio_pct": shown_pct(self.dio, n),
            "disco_whole_file_pct": shown_pct(self.disco_whole, n),
            "disco_release_pct": shown_pct(self.disco_release, m),
            "disco_fresh_sample_pct": shown_pct(self.disco_fresh, m),
            "disco_fresh_sample_sd": self.disco_fresh_sd,
            "margin_pct_points": self.margin,
            "inference_release_pct": shown_pct(self.inference_release, m),
            "inference_fresh_sample_pct": shown_pct(self.inference_fresh, m),
            "inference_risk": inf.risk,
            "inference_risk_ci": [inf.ci_low, inf.ci_high],
            "inference_main_rate": _rate(inf.main.value, n),
            "inference_control_rate": _rate(inf.control.value, n),
            "holds": self.holds,
        }


@dataclass(frozen=True)
class DisclosureResult:
    """Identity (UiO, repU) and per-target attribute disclosure of a released file, the fresh
    sample's, and whether the rule holds."""

    keys: tuple[str, ...]
    bands: dict[str, str]
    uio: float
    repu_whole: float
    repu_release: float
    repu_fresh: float
    repu_fresh_sd: float
    targets: tuple[TargetDisclosure, ...]
    repu_margin: float
    rows: int
    half_rows: int
    halvings: int
    notes: tuple[str, ...] = field(default=())
    left_out: tuple[tuple[str, str], ...] = field(default=())  # (column, why), not measured

    def coverage_words(self) -> str:
        """Which columns the check covers and why the others were left out, in one sentence."""
        from engine.disclosure.words import coverage_words

        return coverage_words(self.keys, [t.target for t in self.targets], self.left_out)

    def guess_words(self, t: TargetDisclosure) -> str:
        """What one target's figures mean (the attack's success beside the baseline's)."""
        from engine.disclosure.words import guess_words

        return guess_words(self.keys, t.target, t.disco_release, t.disco_fresh, self.half_rows)

    def margin_words(self) -> str:
        """What the allowed margin is and why it is that number."""
        from engine.disclosure.words import margin_words

        margins = [t.margin for t in self.targets]
        capped = any(t.margin < margin_for(t.disco_fresh_sd) - 1e-9 for t in self.targets)
        return margin_words(margins, capped)

    @property
    def identity_holds(self) -> bool:
        """repU no higher than the fresh sample's plus the margin."""
        return self.repu_release <= self.repu_fresh + self.repu_margin + 1e-9

    @property
    def holds(self) -> bool:
        """The rule: identity and every target."""
        return self.identity_holds and all(t.holds for t in self.targets)

    @property
    def failing(self) -> tuple[str, ...]:
        """What breaks the rule: "re-identification" and/or target names."""
        out = () if self.identity_holds else ("re-identification",)
        return out + tuple(t.target for t in self.targets if not t.holds)

    def to_dict(self) -> dict[str, Any]:
        """The ``disclosure_risk`` block of ``audit.json``."""
        return {
            "keys": list(self.keys),
            "key_groups": dict(self.bands),
            "uio_pct": shown_pct(self.uio, self.rows),
            "repu_whole_file_pct": shown_pct(self.repu_whole, self.rows),
            "repu_release_pct": shown_pct(self.repu_release, self.half_rows),
            "repu_fresh_sample_pct": shown_pct(self.repu_fresh, self.half_rows),
            "repu_fresh_sample_sd": self.repu_fresh_sd,
            "targets": [t.to_dict() for t in self.targets],
            "repu_margin_pct_points": self.repu_margin,
            "rule": "every DiSCO and repU of the release at most the fresh real sample's plus a "
            f"margin: {MARGIN_FLOOR:g} points or {MARGIN_SDS:g} times the fresh sample's SD, "
            "whichever is larger",
            "holds": self.holds,
            "failing": list(self.failing),
            "rows_measured": self.rows,
            "half_rows": self.half_rows,
            "halvings": self.halvings,
            "reference": "a random half of the real table scored as if it were the synthetic file, "
            "against the other half (both directions, several halvings)",
            "notes": list(self.notes),
            "columns_left_out": [{"name": c, "why": why} for c, why in self.left_out],
        }


def measure_disclosure(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    keys: Sequence[str],
    targets: Sequence[str],
    *,
    rng: np.random.Generator,
    numeric: Sequence[str] = (),
    margin_cap: float | None = None,
    halvings: int = HALVINGS,
    max_rows: int = MAX_ROWS,
) -> DisclosureResult:
    """The module's comparison. ``synthetic`` row i is the released row made from ``real`` row
    i (record order, before the shuffle); ``numeric`` names the targets guessed within 5 %."""
    if len(real) != len(synthetic):
        raise ValueError("measure_disclosure: the synthetic rows must be aligned to the real rows")
    notes: list[str] = []
    n_all = len(real)
    if n_all > max_rows:
        keep = np.sort(rng.choice(n_all, max_rows, replace=False))
        real, synthetic = real.iloc[keep], synthetic.iloc[keep]
        notes.append(f"measured on a random {max_rows:,} of the {n_all:,} records")
    real = real.reset_index(drop=True)
    synthetic = synthetic.reset_index(drop=True)
    n = len(real)
    m = n // 2
    bands = {c: fit_banding(real, c) for c in list(keys) + list(targets)}
    key_real, key_syn = cell_codes([real, synthetic], keys, bands)
    coord_real, coord_syn = gower_coordinates([real, synthetic], keys, real)
    splits = [rng.permutation(n) for _ in range(halvings)]
    pairs = [(p[:m], p[m : 2 * m]) for p in splits] + [(p[m : 2 * m], p[:m]) for p in splits]
    # the attacker's nearest records depend on the keys only: found once per pair, for every target
    neighbours = [_neighbours(coord_real, coord_syn, a, b) for a, b in pairs]
    ident = np.array(
        [
            [
                synthpop_figures(key_real[a], np.zeros(m, int), key_syn[a], np.zeros(m, int)).repu,
                synthpop_figures(key_real[a], np.zeros(m, int), key_real[b], np.zeros(m, int)).repu,
            ]
            for a, b in pairs
        ]
    )
    whole = synthpop_figures(key_real, np.zeros(n, int), key_syn, np.zeros(n, int))
    results = tuple(
        _target(
            real,
            synthetic,
            t,
            bands[t],
            key_real,
            key_syn,
            neighbours,
            pairs,
            numeric=t in numeric,
            margin_cap=margin_cap,
        )
        for t in targets
    )
    return DisclosureResult(
        keys=tuple(keys),
        bands={c: bands[c].describe(n) for c in bands},
        uio=whole.uio,
        repu_whole=whole.repu,
        repu_release=float(ident[:, 0].mean()),
        repu_fresh=float(ident[:, 1].mean()),
        repu_fresh_sd=float(ident[:, 1].std()),
        targets=results,
        repu_margin=margin_for(float(ident[:, 1].std()), margin_cap),
        rows=n,
        half_rows=m,
        halvings=halvings,
        notes=tuple(notes),
    )


def shown_pct(pct: float, rows: int) -> float | str:
    """A percentage of real records as it may be shown: "< 10 records" where it stands for
    fewer than 10 of ``rows`` (zero included, as every count of the record), else rounded.

    Example:
        >>> shown_pct(31.24, 800), shown_pct(0.5, 800), shown_pct(0.0, 800)
        (31.24, '< 10 records', '< 10 records')
    """
    if pct / 100.0 * rows < THRESHOLD - 1e-9:
        return f"{SMALL} records"
    return round(float(pct), 2)


def _rate(rate: float, attacks: int) -> float | str:
    """A success rate over ``attacks`` real records, under the same rule as a percentage."""
    shown = shown_pct(100.0 * rate, attacks)
    return shown if isinstance(shown, str) else round(rate, 4)


def margin_for(fresh_sd: float, cap: float | None = None) -> float:
    """The margin of the rule in points: the floor or 5 SDs of the fresh sample, whichever is
    larger, at most ``cap`` when the user gave one.

    Example:
        >>> margin_for(0.2), margin_for(1.0), margin_for(1.0, cap=2.0)
        (3.0, 5.0, 2.0)
    """
    margin = max(MARGIN_FLOOR, MARGIN_SDS * fresh_sd)
    return float(margin if cap is None else min(margin, cap))


def _target(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    target: str,
    band: Banding,
    key_real: np.ndarray,
    key_syn: np.ndarray,
    neighbours: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    pairs: list[tuple[np.ndarray, np.ndarray]],
    *,
    numeric: bool,
    margin_cap: float | None,
) -> TargetDisclosure:
    """One target over every halving: synthpop's figures and the inference attack."""
    t_real, t_syn = cell_codes([real, synthetic], [target], {target: band})
    secret_real = _secret(real[target], numeric)
    secret_syn = _secret(synthetic[target], numeric)
    whole = synthpop_figures(key_real, t_real, key_syn, t_syn)
    disco = []
    main = control = fresh = 0.0
    for (a, b), (to_main, to_control, to_fresh) in zip(pairs, neighbours, strict=True):
        disco.append(
            [
                synthpop_figures(key_real[a], t_real[a], key_syn[a], t_syn[a]).disco,
                synthpop_figures(key_real[a], t_real[a], key_real[b], t_real[b]).disco,
            ]
        )
        main += guesses_right(secret_syn[a][to_main], secret_real[a], numeric).mean()
        control += guesses_right(secret_syn[a][to_control], secret_real[b], numeric).mean()
        fresh += guesses_right(secret_real[b][to_fresh], secret_real[a], numeric).mean()
    k = len(pairs)
    attacks = len(pairs[0][0]) * 2  # each record is attacked once per halving (both directions)
    risk = InferenceRisk.of(
        Rate.wilson(main / k * attacks, attacks), Rate.wilson(control / k * attacks, attacks)
    )
    return TargetDisclosure(
        target=target,
        numeric=numeric,
        dio=whole.dio,
        disco_whole=whole.disco,
        disco_release=float(np.mean(disco, axis=0)[0]),
        disco_fresh=float(np.mean(disco, axis=0)[1]),
        disco_fresh_sd=float(np.std(disco, axis=0)[1]),
        inference_release=100.0 * main / k,
        inference_fresh=100.0 * fresh / k,
        inference=risk,
        margin=margin_for(float(np.std(disco, axis=0)[1]), margin_cap),
        half_rows=len(pairs[0][0]),
        rows=len(real),
    )


def _neighbours(
    coord_real: np.ndarray, coord_syn: np.ndarray, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For one pair: each of A's records' nearest row in the release's A share (main attack),
    each of B's there (control), and each of A's nearest record in B (the fresh sample).
    A's and B's records are one query of the release's tree; the searches use every core from
    4,096 records (the same answers; 10 pairs of 10,000 records on 6 keys: 1.9-2.1 -> 1.2 s)."""
    both = np.concatenate([coord_real[a], coord_real[b]])
    found = cKDTree(coord_syn[a]).query(both, k=1, p=1, workers=workers_for(both))[1]
    to_main, to_control = np.split(np.asarray(found), [len(a)])
    fresh = cKDTree(coord_real[b]).query(coord_real[a], k=1, p=1, workers=workers_for(a))[1]
    return to_main, to_control, np.asarray(fresh)


def _secret(s: pd.Series, numeric: bool) -> np.ndarray:
    """The target's values as the attack compares them: floats (numbers) or strings."""
    if numeric:
        if pd.api.types.is_datetime64_any_dtype(s):
            return (s.astype("datetime64[ns]").astype("int64") / 86_400e9).to_numpy(dtype=float)
        return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
    return Banding(str(s.name), None).levels(s).astype(str).to_numpy()
