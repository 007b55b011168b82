"""Year ranges and number ranges are categories, not phone numbers (issue 44); real phone
numbers are still dropped as direct identifiers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.columns.kinds import infer_column


def _column(name: str, values: list[str], n: int = 300) -> pd.Series:
    rng = np.random.default_rng(0)
    return pd.Series(rng.choice(values, size=n), name=name, dtype=object)


@pytest.mark.parametrize(
    "values",
    [
        ["1988-1993", "1994-1998", "1999-2003", "2004-2010"],  # diagnosis period
        ["10-19", "20-29", "30-39", "40-49"],  # age bands
        ["1000-1999", "2000-2999", "3000-3999"],  # income bands
        ["1988 - 1993", "1994 - 1998", "1999 - 2003"],
    ],
)
def test_ranges_are_kept_as_categories(values: list[str]) -> None:
    spec = infer_column(_column("period", values), None)
    assert spec.kind != "identifier"
    assert "phone" not in spec.reason
    assert spec.kind == "categorical"


@pytest.mark.parametrize(
    "make",
    [
        lambda k: f"+44 20 7946 {k:04d}",
        lambda k: f"(020) 7946 {k:04d}",
        lambda k: f"555-{k:04d}",
        lambda k: f"{1000 + (k * 7919) % 9000}-{1000 + (k * 104729) % 9000}",  # 4-4 local numbers
        lambda k: f"07700 9{k:05d}",
    ],
)
def test_phone_numbers_still_dropped(make) -> None:  # type: ignore[no-untyped-def]
    s = pd.Series([make(k) for k in range(300)], name="contact", dtype=object)
    spec = infer_column(s, None)
    assert spec.kind == "identifier"
    assert "phone" in spec.reason
