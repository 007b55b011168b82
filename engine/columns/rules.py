"""Logical rules between columns that every synthetic row keeps (issue 30).

Four kinds, written in one small language that the Columns page, the command line, the PDF and
``audit.json`` all share (a rule found in the real table is shown in the words a user would type):

* **order**: ``los <= futime``, ``diasbp < sysbp`` (two numeric or date columns, both present);
* **range**: ``nodes >= 0`` (a column against a number);
* **fixed**: ``group determines arm`` (each level of the first column goes with one level of the
  second);
* **presence**: ``cause only when status = 1`` (the second column's value is present exactly
  for the listed levels of the first: structural missingness; ``= a, b`` lists several).

Kept by construction, not by rejection: :meth:`RuleSet.apply` is a deterministic repair of the
decoded table that :class:`engine.encoding.layered.LayeredEncoder` runs on every decode, so the
audit's synthetic rows, the released file, every copy and the formal-DP release pass through
the same map (what is audited is what is released; a function of the synthetic rows alone, so
the formal guarantee is untouched by post-processing). The repairs:

* order: under ``a <= b`` a row with ``a > b`` becomes a tie (``a`` lowered to ``b``: real rows
  have ties, such as a hospital stay that ends with the follow-up); under ``a < b`` the two
  values are swapped (a reflection across ``a = b``, inside both real ranges because every real
  row has ``a < b``); the survival time is an anchor that neither repair moves (the other
  column moves to it, or one step past it);
* range: the value is set to the bound;
* fixed: the second column is set to the level that goes with the first;
* presence: the value is removed where the condition is false, and where it is true but the
  value is missing, taken from another synthetic row with the condition true (a synthetic
  donor, never a real one).

Hand-written because neither SDV's constraints nor synthpop's ``rules`` run inside our decoder;
the grammar is ours so that a found rule reads exactly as a user would write it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

OPS = ("<=", ">=", "<", ">")
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}
_ORDER = re.compile(r"^\s*(?P<a>.+?)\s*(?P<op><=|>=|<|>|≤|≥)\s*(?P<b>.+?)\s*$")
_FIXED = re.compile(r"^\s*(?P<a>.+?)\s+determines\s+(?P<b>.+?)\s*$", re.IGNORECASE)
_PRESENCE = re.compile(
    r"^\s*(?P<b>.+?)\s+only\s+when\s+(?P<a>.+?)\s*=\s*(?P<v>.+?)\s*$", re.IGNORECASE
)


class RuleError(ValueError):
    """A rule that cannot be read or names a column the table does not have."""


@dataclass(frozen=True)
class Rule:
    """One rule. ``a`` and ``b`` are column names; ``op`` the order (``<``, ``<=``) for order
    rules (normalised so that ``a`` is the smaller), a comparison with ``value`` for range rules;
    ``mapping`` the level pairs of a fixed rule; ``levels`` the condition of a presence rule."""

    kind: str  # "order" | "range" | "fixed" | "presence"
    a: str
    b: str = ""
    op: str = ""
    value: float | None = None
    levels: tuple[Any, ...] = ()
    mapping: tuple[tuple[Any, Any], ...] = ()
    source: str = "found"  # "found" in the real rows, or "yours" (written by the user)
    support: int = 0  # real rows the rule was checked on

    @property
    def text(self) -> str:
        """The rule in the shared language."""
        if self.kind == "order":
            return f"{self.a} {self.op} {self.b}"
        if self.kind == "range":
            return f"{self.a} {self.op} {_number(self.value)}"
        if self.kind == "fixed":
            return f"{self.a} determines {self.b}"
        return f"{self.b} only when {self.a} = {', '.join(_label(v) for v in self.levels)}"

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.a,) if self.kind == "range" else (self.a, self.b)


def _number(v: float | None) -> str:
    return "" if v is None else (str(int(v)) if float(v).is_integer() else f"{v:g}")


def _label(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _column(name: str, columns: list[str], text: str) -> str:
    """The table's column named ``name`` (exact, then ignoring case)."""
    if name in columns:
        return name
    folded = {c.lower(): c for c in columns}
    if name.lower() in folded:
        return folded[name.lower()]
    raise RuleError(f"rule '{text}': the table has no column '{name}'")


def _as_number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def parse_rule(text: str, frame: pd.DataFrame) -> Rule:
    """A rule the user wrote, checked against the table's columns.

    Example:
        >>> df = pd.DataFrame({"dia": [70], "sys": [120], "status": [1], "cause": ["mi"]})
        >>> parse_rule("sys > dia", df).text, parse_rule("dia >= 0", df).text
        ('dia < sys', 'dia >= 0')
        >>> parse_rule("cause only when status = 1", df).text
        'cause only when status = 1'
    """
    columns = [str(c) for c in frame.columns]
    m = _PRESENCE.match(text)
    if m:
        a, b = _column(m["a"], columns, text), _column(m["b"], columns, text)
        levels = tuple(_level(v.strip(), frame[a]) for v in m["v"].split(","))
        return Rule("presence", a, b, levels=levels, source="yours")
    m = _FIXED.match(text)
    if m:
        a, b = _column(m["a"], columns, text), _column(m["b"], columns, text)
        return Rule("fixed", a, b, mapping=_mapping(frame, a, b), source="yours")
    m = _ORDER.match(text)
    if not m:
        raise RuleError(
            f"rule '{text}' is not understood: write 'a < b', 'a <= b', 'a >= 0', "
            "'a determines b' or 'b only when a = value'"
        )
    op = {"≤": "<=", "≥": ">="}.get(m["op"], m["op"])
    left, right = m["a"], m["b"]
    lnum, rnum = _as_number(left), _as_number(right)
    if lnum is not None and rnum is not None:
        raise RuleError(f"rule '{text}' compares two numbers: name at least one column")
    if rnum is not None or lnum is not None:
        col = _column(right if lnum is not None else left, columns, text)
        op = _FLIP[op] if lnum is not None else op
        return Rule("range", col, op=op, value=rnum if rnum is not None else lnum, source="yours")
    a, b = _column(left, columns, text), _column(right, columns, text)
    if op in (">", ">="):
        a, b, op = b, a, _FLIP[op]
    return Rule("order", a, b, op=op, source="yours")


def _level(token: str, column: pd.Series) -> Any:
    """The column's own value that ``token`` names (``1`` matches 1, 1.0 and "1")."""
    for v in pd.unique(column.dropna()):
        if str(v) == token or _label(v) == token or str(v).lower() == token.lower():
            return v
    number = _as_number(token)
    return number if number is not None else token


def _mapping(frame: pd.DataFrame, a: str, b: str) -> tuple[tuple[Any, Any], ...]:
    """Each level of ``a`` with the most common level of ``b`` among its rows."""
    both = frame[[a, b]].dropna()
    if both.empty:
        return ()
    top = both.groupby(a, observed=True)[b].agg(lambda s: s.value_counts().index[0])
    return tuple((k, v) for k, v in top.items())


def _present(s: pd.Series) -> np.ndarray:
    return s.notna().to_numpy()


def _same(values: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Elementwise equality that also takes "1" for 1 (a level read as text on one side):
    the text comparison runs only on the cells that differ as values."""
    same = np.asarray(values == expected, dtype=bool)
    odd = np.flatnonzero(~same)
    if len(odd):
        same[odd] = [
            _label(v) == _label(e) for v, e in zip(values[odd], expected[odd], strict=True)
        ]
    return same


def _cond(rule: Rule, frame: pd.DataFrame) -> np.ndarray:
    col = frame[rule.a]
    hit = col.isin(rule.levels).to_numpy()
    if col.dtype == object or any(isinstance(v, str) for v in rule.levels):
        labels = {_label(v) for v in rule.levels}
        miss = np.flatnonzero(~hit & _present(col))
        if len(miss):
            hit[miss] = [_label(v) in labels for v in col.to_numpy()[miss]]
    return hit & _present(col)


def broken(rule: Rule, frame: pd.DataFrame) -> np.ndarray:
    """Rows of ``frame`` that break ``rule`` (a row with a missing value in an order or range
    rule's column does not break it)."""
    if rule.kind == "order":
        a, b = frame[rule.a], frame[rule.b]
        both = _present(a) & _present(b)
        bad = np.zeros(len(frame), dtype=bool)
        av, bv = a[both].to_numpy(), b[both].to_numpy()
        bad[both] = ~(av < bv) if rule.op == "<" else ~(av <= bv)
        return bad
    if rule.kind == "range":
        s = pd.to_numeric(frame[rule.a], errors="coerce")
        here = s.notna().to_numpy()
        v = s.to_numpy(dtype=float)
        ok = {
            "<": v < rule.value,
            "<=": v <= rule.value,
            ">": v > rule.value,
            ">=": v >= rule.value,
        }[rule.op]
        return here & ~ok
    if rule.kind == "fixed":
        expected = frame[rule.a].map(dict(rule.mapping))
        known = expected.notna().to_numpy() & _present(frame[rule.b])
        bad = np.zeros(len(frame), dtype=bool)
        rows = np.flatnonzero(known)
        b_vals = frame[rule.b].to_numpy(dtype=object)[rows]
        bad[rows] = ~_same(b_vals, expected.to_numpy(dtype=object)[rows])
        return bad
    cond = _cond(rule, frame)
    present = _present(frame[rule.b])
    return (cond & ~present) | (~cond & present)


@dataclass
class RuleSet:
    """The rules a run keeps, and those it does not (broken by the real rows, or removed by the
    user), with the reasons; :meth:`apply` repairs a decoded table."""

    kept: list[Rule] = field(default_factory=list)
    not_kept: list[tuple[Rule, str]] = field(default_factory=list)
    resolution: dict[str, float] = field(default_factory=dict)
    seed: int = 0
    anchors: tuple[str, ...] = ()  # columns an order repair never moves (the survival time)

    def __bool__(self) -> bool:
        return bool(self.kept)

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The table with every kept rule holding in every row (see the module's repairs).
        Rules are applied in order: fixed and presence first (they set values), then ranges,
        then orders."""
        if not self.kept:
            return frame
        out = frame.copy()
        rng = np.random.default_rng(self.seed + len(out))
        rank = {"fixed": 0, "presence": 1, "range": 2, "order": 3}
        for rule in sorted(self.kept, key=lambda r: rank[r.kind]):
            if not set(rule.columns) <= set(map(str, out.columns)):
                continue
            bad = broken(rule, out)
            if bad.any():
                _repair(rule, out, bad, self.resolution, rng, set(self.anchors))
        return out

    def counts(self, frame: pd.DataFrame) -> dict[str, int]:
        """Rows of ``frame`` breaking each kept rule, by the rule's text."""
        return {r.text: int(broken(r, frame).sum()) for r in self.kept}


def _step(out: pd.DataFrame, col: str, resolution: dict[str, float]) -> Any:
    step = resolution.get(col, 1.0)
    return pd.Timedelta(days=step) if pd.api.types.is_datetime64_any_dtype(out[col]) else step


def _repair_order(
    rule: Rule, out: pd.DataFrame, idx: pd.Index, resolution: dict[str, float], anchors: set[str]
) -> None:
    """``a <= b``: the rows become ties (the real rows have them: a stay that ends with the
    follow-up), ``a`` lowered to ``b``, or ``b`` raised to ``a`` when ``a`` is an anchor (the
    survival time, never moved). ``a < b``: the two values swapped (a reflection across
    ``a = b``; the real rows have no ties), or the free column moved one step past an anchor."""
    a, b = out.loc[idx, rule.a].copy(), out.loc[idx, rule.b].copy()
    if rule.op == "<=":
        if rule.a in anchors and rule.b not in anchors:
            out.loc[idx, rule.b] = a.to_numpy()
        else:
            out.loc[idx, rule.a] = b.to_numpy()
        return
    if rule.b in anchors and rule.a not in anchors:
        out.loc[idx, rule.a] = (b - _step(out, rule.a, resolution)).to_numpy()
        return
    if rule.a in anchors and rule.b not in anchors:
        out.loc[idx, rule.b] = (a + _step(out, rule.b, resolution)).to_numpy()
        return
    out.loc[idx, rule.a], out.loc[idx, rule.b] = b.to_numpy(), a.to_numpy()
    tied = idx[(out.loc[idx, rule.a] == out.loc[idx, rule.b]).to_numpy()]
    if len(tied):
        out.loc[tied, rule.a] = out.loc[tied, rule.a] - _step(out, rule.a, resolution)


def _repair(
    rule: Rule,
    out: pd.DataFrame,
    bad: np.ndarray,
    resolution: dict[str, float],
    rng: np.random.Generator,
    anchors: set[str],
) -> None:
    idx = out.index[bad]
    if rule.kind == "order":
        _repair_order(rule, out, idx, resolution, anchors)
    elif rule.kind == "range":
        out.loc[idx, rule.a] = rule.value
    elif rule.kind == "fixed":
        out.loc[idx, rule.b] = out.loc[idx, rule.a].map(dict(rule.mapping)).to_numpy()
    else:
        cond = _cond(rule, out)
        remove = idx[~cond[bad]]
        out.loc[remove, rule.b] = None
        fill = idx[cond[bad]]
        donors = out.index[cond & _present(out[rule.b])]
        if len(fill) and len(donors):
            out.loc[fill, rule.b] = out.loc[rng.choice(donors, size=len(fill)), rule.b].to_numpy()


def rules_record(rules: RuleSet | None, frames: list[pd.DataFrame]) -> list[dict[str, Any]]:
    """The ``rules`` block of ``audit.json``: every rule, where it came from, whether it was
    kept (and why not), and the synthetic rows that break it, over every released copy."""
    if rules is None:
        return []
    out: list[dict[str, Any]] = []
    for rule in rules.kept:
        out.append(
            {
                "rule": rule.text,
                "kind": rule.kind,
                "source": rule.source,
                "kept": True,
                "why_not": None,
                "synthetic_rows_breaking": (
                    sum(int(broken(rule, f).sum()) for f in frames) if frames else None
                ),
            }
        )
    for rule, why in rules.not_kept:
        out.append(
            {
                "rule": rule.text,
                "kind": rule.kind,
                "source": rule.source,
                "kept": False,
                "why_not": why,
                "synthetic_rows_breaking": None,
            }
        )
    return out
