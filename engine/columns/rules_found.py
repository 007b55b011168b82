"""The rules that hold in every real row, proposed on the Columns page (issue 30).

A rule is proposed only when at least :data:`engine.disclosure.THRESHOLD` (10) real rows support
each side of it, so that a rule never describes one rare person:

* ``a <= b`` / ``a < b`` (numeric or date columns): at least 10 rows with both values, and a
  relation, not an accident of the ranges: paired at random, the two columns would break it in
  at least 10 rows (so ``age < sysbp``, true only because blood pressures are larger numbers
  than ages, is left out, while ``diasbp < sysbp`` is kept);
* ``a >= 0``: a numeric column that is 0 in at least 10 rows and never negative (counts);
* ``a determines b`` (two categorical or binary columns): every level of ``a`` in at least 10
  rows, each with one level of ``b``, and ``b`` not constant (the merged level of rare codes,
  "other (fewer than 10)", is left free); when each determines the other only one direction
  is stated;
* ``b only when a = v``: ``b`` is present exactly in the rows where ``a`` takes the listed levels,
  with at least 10 rows on each side (present and missing) and every level of ``a`` in 10 rows.

Hand-written: the search is a few vectorised comparisons per pair of columns (50 columns give
1,225 pairs, each a pass over the rows).
"""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from engine.columns.rules import Rule, RuleSet, broken, parse_rule
from engine.disclosure import THRESHOLD
from engine.files.values import OTHER

ORDERED_KINDS = ("continuous", "integer", "date", "time")
LEVEL_KINDS = ("binary", "categorical", "event")
MAX_LEVELS = 50  # a "determines" rule over more levels than this is not worth showing
SEARCH_ROWS = 50_000  # larger tables: candidates from a sample, judged on every row


def _is_date(s: pd.Series) -> bool:
    return bool(pd.api.types.is_datetime64_any_dtype(s))


def _numbers(s: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(s):
        return s
    return pd.to_numeric(s, errors="coerce")


def find_rules(frame: pd.DataFrame, specs: list[Any]) -> list[Rule]:
    """Rules that every real row of ``frame`` keeps, for the synthesized columns in ``specs``
    (:class:`engine.columns.kinds.ColumnSpec`).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> fu = rng.integers(10, 400, 60)
        >>> df = pd.DataFrame({"fu": fu, "los": fu // 3, "x": rng.normal(size=60)})
        >>> from engine.columns.kinds import ColumnSpec
        >>> specs = [ColumnSpec(c, "integer", "synthesize", "") for c in ("fu", "los")]
        >>> [r.text for r in find_rules(df, specs)]
        ['los < fu']
    """
    if len(frame) <= SEARCH_ROWS:
        return _find(frame, specs)
    # A rule true in every row is true in any sample of them: search a sample, then judge each
    # candidate on every row by the same criteria (1,000,000 x 10: about 20 s -> 2 s).
    sample = frame.sample(SEARCH_ROWS, random_state=0)
    kept = []
    for rule in _find(sample, specs):
        full = _judge(rule, frame)
        if full is not None:
            kept.append(full)
    return kept


def _judge(rule: Rule, frame: pd.DataFrame) -> Rule | None:
    """``rule``'s pair of columns judged again on ``frame`` (all the rows)."""
    if rule.kind == "order":
        return _order(_numbers(frame[rule.a]), _numbers(frame[rule.b]), rule.a, rule.b)
    if rule.kind == "range":
        s = _numbers(frame[rule.a])
        ok = s.min() >= 0 and int((s == 0).sum()) >= THRESHOLD
        return replace(rule, support=int(s.notna().sum())) if ok else None
    if rule.kind == "fixed":
        return _fixed(frame, rule.a, rule.b)
    return _presence(frame, rule.a, rule.b)


def _find(frame: pd.DataFrame, specs: list[Any]) -> list[Rule]:
    used = [s for s in specs if s.name in frame.columns]
    ordered = [s.name for s in used if s.kind in ORDERED_KINDS]
    levels = [s.name for s in used if s.kind in LEVEL_KINDS]
    rules: list[Rule] = []
    nums = {c: _numbers(frame[c]) for c in ordered}
    for a, b in combinations(ordered, 2):
        if _is_date(nums[a]) != _is_date(nums[b]):  # a date and a number do not compare
            continue
        rule = _order(nums[a], nums[b], a, b)
        if rule is not None:
            rules.append(rule)
    for c in ordered:
        s = nums[c]
        if not pd.api.types.is_datetime64_any_dtype(s) and s.notna().sum() >= THRESHOLD:
            if s.min() == 0 and int((s == 0).sum()) >= THRESHOLD:
                rules.append(Rule("range", c, op=">=", value=0.0, support=int(s.notna().sum())))
    stated: set[frozenset[str]] = set()
    for a in levels:
        for b in levels:
            if a != b and frozenset((a, b)) not in stated:
                rule = _fixed(frame, a, b)
                if rule is not None:
                    rules.append(rule)
                    stated.add(frozenset((a, b)))
    for a in levels:
        for b in (s.name for s in used):
            if a != b:
                rule = _presence(frame, a, b)
                if rule is not None:
                    rules.append(rule)
    return rules


def _order(a: pd.Series, b: pd.Series, na: str, nb: str) -> Rule | None:
    both = a.notna() & b.notna()
    if int(both.sum()) < THRESHOLD:
        return None
    av, bv = a[both], b[both]
    if (av <= bv).all():
        lo, hi, ln, hn = av, bv, na, nb
    elif (bv <= av).all():
        lo, hi, ln, hn = bv, av, nb, na
    else:
        return None
    # A rule the two columns' ranges make true anyway says nothing about their relation: with
    # the columns paired at random (each lo against every hi) it must break in at least 10 rows.
    if _chance_breaks(lo.to_numpy(), hi.to_numpy()) < THRESHOLD:
        return None
    op = "<" if (lo < hi).all() else "<="
    return Rule("order", ln, hn, op=op, support=int(both.sum()))


def _chance_breaks(lo: np.ndarray, hi: np.ndarray) -> float:
    """Rows expected to have ``lo > hi`` if the two columns were paired at random: the mean
    over rows of the share of ``hi`` values below the row's ``lo`` (one sort, no pairs).

    Example:
        >>> float(_chance_breaks(np.array([1, 2, 3, 4]), np.array([2, 3, 4, 5])))
        0.75
    """
    if np.issubdtype(lo.dtype, np.datetime64):
        lo, hi = (
            lo.astype("datetime64[s]").astype(np.int64),
            hi.astype("datetime64[s]").astype(np.int64),
        )
    hi_sorted = np.sort(np.asarray(hi, dtype=float))
    below = np.searchsorted(hi_sorted, np.asarray(lo, dtype=float), side="left")
    return float(below.sum() / len(hi_sorted))


def _fixed(frame: pd.DataFrame, a: str, b: str) -> Rule | None:
    both = frame[[a, b]].dropna()
    # The merged level of rare codes stands for several levels: it goes with what it likes
    # (its rows are not repaired), the rule is about the levels shown by name.
    both = both[both[a].astype(str) != OTHER]
    if len(both) < THRESHOLD or both[b].nunique() < 2:
        return None
    sizes = both.groupby(a, observed=True).size()
    if len(sizes) > MAX_LEVELS or len(sizes) < 2 or int(sizes.min()) < THRESHOLD:
        return None
    per_level = both.groupby(a, observed=True)[b].nunique()
    if int(per_level.max()) != 1:
        return None
    first = both.groupby(a, observed=True)[b].first()
    return Rule("fixed", a, b, mapping=tuple((k, v) for k, v in first.items()), support=len(both))


def _presence(frame: pd.DataFrame, a: str, b: str) -> Rule | None:
    cond_col = frame[a]
    if cond_col.isna().any():
        return None
    present = frame[b].notna()
    n_present, n_missing = int(present.sum()), int((~present).sum())
    if n_present < THRESHOLD or n_missing < THRESHOLD:
        return None
    sizes = cond_col.value_counts()
    if len(sizes) > MAX_LEVELS or int(sizes.min()) < THRESHOLD:
        return None
    share = present.groupby(cond_col).mean()
    if not set(np.unique(share.to_numpy())) <= {0.0, 1.0}:
        return None
    levels = tuple(share.index[share.to_numpy() == 1.0])
    return Rule("presence", a, b, levels=levels, support=len(frame))


def rule_set(
    frame: pd.DataFrame,
    specs: list[Any],
    yours: tuple[str, ...] = (),
    removed: tuple[str, ...] = (),
    seed: int = 0,
) -> RuleSet:
    """The run's rules: those found in ``frame`` (less the texts in ``removed``) and the user's
    own (``yours``), each checked against the real rows: a rule the real rows break is not
    kept and says by how many rows (a count under 10 as "fewer than 10").

    Raises :class:`engine.columns.rules.RuleError` for a rule that cannot be read.
    """
    from engine.disclosure import safe_count

    anchors = tuple(s.name for s in specs if s.kind == "time")
    out = RuleSet(seed=seed, resolution=_resolution(frame, specs), anchors=anchors)
    off = {_squash(t) for t in removed}
    seen: set[str] = set()
    for rule in find_rules(frame, specs):
        if _squash(rule.text) in off:
            out.not_kept.append((rule, "removed by you"))
        else:
            out.kept.append(rule)
        seen.add(_squash(rule.text))
    for text in yours:
        rule = parse_rule(text, frame)
        if _squash(rule.text) in seen:
            continue
        seen.add(_squash(rule.text))
        n = int(broken(rule, frame).sum())
        if n:
            out.not_kept.append((rule, f"{safe_count(n)} real rows break it"))
        else:
            out.kept.append(replace(rule, support=len(frame)))
    return out


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


def _resolution(frame: pd.DataFrame, specs: list[Any]) -> dict[str, float]:
    """The step that opens a tie under a strict order: 1 for whole numbers and dates (days),
    else the column's last decimal place."""
    out = {}
    for s in specs:
        if s.kind in ORDERED_KINDS and s.name in frame.columns:
            dec = s.decimals if s.kind == "continuous" and s.decimals else 0
            out[s.name] = float(10.0**-dec) if s.kind != "date" else 1.0
    return out
