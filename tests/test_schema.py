"""engine.columns.schema: kinds with reasons on a realistic mixed table; role checks raise
InputErrors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.columns.schema import KINDS, binary_labels, infer_schema
from engine.errors import InputError
from engine.files.read import read_table
from engine.files.read_binary import ColumnMeta


def mixed_frame(n: int = 80, seed: int = 0) -> pd.DataFrame:
    """A realistic patient table with every kind of column."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "patient_id": [f"P{k:04d}" for k in range(n)],
            "name": [f"Person {chr(65 + k % 26)}{k}" for k in range(n)],
            "email": [f"p{k}@clinic.org" for k in range(n)],
            "visit_date": [f"2020-{1 + k % 12:02d}-{1 + k % 28:02d}" for k in range(n)],
            "notes": [
                f"patient reported mild symptoms on day {k} after the first visit" for k in range(n)
            ],
            "sex": rng.choice(["M", "F"], n),
            "smoker": rng.choice(["yes", "no"], n),
            "stage": rng.integers(1, 5, n).astype("float64"),
            "age": np.round(rng.normal(55, 8, n), 1),
            "chol": np.round(rng.normal(5.2, 1.0, n), 2),
            "visits": rng.integers(0, 9, n),
            "site": "A",
            "time": np.round(rng.uniform(0.1, 20, n), 2),
            "event": rng.integers(0, 2, n),
        }
    )


STAGE_META = {"stage": ColumnMeta(value_labels={1.0: "I", 2.0: "II", 3.0: "III", 4.0: "IV"})}


def test_kinds_and_reasons_on_a_mixed_frame() -> None:
    schema = infer_schema(mixed_frame(), time="time", event="event", column_meta=STAGE_META)
    kinds = {c.name: (c.kind, c.action) for c in schema.columns}
    assert kinds == {
        "patient_id": ("identifier", "drop"),
        "name": ("identifier", "drop"),
        "email": ("identifier", "drop"),
        "visit_date": ("date", "synthesize"),  # days from a secret reference (issue 13)
        "notes": ("text", "drop"),
        "sex": ("binary", "synthesize"),
        "smoker": ("binary", "synthesize"),
        "stage": ("categorical", "synthesize"),
        "age": ("continuous", "synthesize"),
        "chol": ("continuous", "synthesize"),
        "visits": ("integer", "synthesize"),
        "site": ("constant", "drop"),
        "time": ("time", "synthesize"),
        "event": ("event", "synthesize"),
    }
    assert all(c.reason for c in schema.columns)
    assert "e-mail" in schema.by_name("email").reason
    assert "days from a secret reference date" in schema.by_name("visit_date").reason
    assert "value labels" in schema.by_name("stage").reason
    assert schema.by_name("sex").labels == ("F", "M")
    assert schema.by_name("smoker").labels == ("no", "yes")
    assert schema.by_name("stage").labels == (1.0, 2.0, 3.0, 4.0)
    assert schema.by_name("event").labels == (0, 1)
    assert schema.by_name("age").decimals == 1 and schema.by_name("chol").decimals == 2
    assert set(c.kind for c in schema.columns) <= set(KINDS)
    assert [c.name for c in schema.synthesized()] == [
        "visit_date",
        "sex",
        "smoker",
        "stage",
        "age",
        "chol",
        "visits",
        "time",
        "event",
    ]
    assert len(schema.dropped()) == 5  # visit_date is synthesized now
    assert schema.to_dict()[0] == {
        "name": "patient_id",
        "kind": "identifier",
        "action": "drop",
        "reason": schema.by_name("patient_id").reason,
    }
    assert schema.to_frame().shape[0] == 14 and schema.time == "time" and schema.event == "event"


def test_bounds_default_to_tenth_extremes_and_user_bounds_override() -> None:
    df = mixed_frame()
    schema = infer_schema(df, bounds={"age": (18, None)})
    age = schema.by_name("age")
    assert age.lower == 18.0 and age.upper == df["age"].sort_values().iloc[-10]
    assert schema.by_name("visits").lower == df["visits"].dropna().sort_values().iloc[9]
    with pytest.raises(InputError, match="lower bound"):
        infer_schema(df, bounds={"age": (90, 20)})


def test_binary_label_order() -> None:
    assert binary_labels(["yes", "no"]) == ("no", "yes")
    assert binary_labels(["TRUE", "FALSE"]) == ("FALSE", "TRUE")
    assert binary_labels(["Y", "N"]) == ("N", "Y")
    assert binary_labels(["M", "F"]) == ("F", "M")
    assert binary_labels([2, 1]) == (1, 2)


def test_identifier_rules() -> None:
    n = 60
    df = pd.DataFrame(
        {
            "NHS_number": np.arange(10_000, 10_000 + 3 * n, 3),
            "row": np.arange(1, n + 1),
            "phone": [f"+44 20 7946 {k:04d}" for k in range(n)],
            "patient_age": np.linspace(30.5, 80.5, n),
            "sbp": np.arange(100, 100 + 2 * n, 2),
        }
    )
    schema = infer_schema(df)
    assert schema.by_name("NHS_number").kind == "identifier"
    assert (
        schema.by_name("row").kind == "identifier" and "row number" in schema.by_name("row").reason
    )
    assert (
        schema.by_name("phone").kind == "identifier" and "phone" in schema.by_name("phone").reason
    )
    assert schema.by_name("patient_age").kind == "continuous"  # ID-like token but measured values
    assert schema.by_name("sbp").kind == "integer"


def test_user_overrides_drop_keep_kinds() -> None:
    df = mixed_frame()
    df["clinic_code"] = [f"C{k % 5}" for k in range(len(df))]
    schema = infer_schema(df, drop=["age"], kinds={"visits": "categorical"}, keep=[])
    assert schema.by_name("age").action == "drop" and "by the user" in schema.by_name("age").reason
    visits = schema.by_name("visits")
    # levels held by fewer than 10 rows are merged openly (issue 32), never dropped or relabelled
    from engine.columns.codes import OTHER

    kept = [v for v in visits.labels if v != OTHER]
    assert visits.kind == "categorical" and kept == sorted(kept) and set(kept) <= set(range(9))
    assert len(kept) + visits.merged == 9 and (OTHER in visits.labels) == (visits.merged > 0)
    ids = pd.DataFrame({"record_id": np.arange(0, 120, 2), "x": np.linspace(0, 1, 60)})
    kept = infer_schema(ids, keep=["record_id"]).by_name("record_id")
    assert (kept.kind, kept.action) == ("integer", "synthesize")
    assert "kept by the user" in kept.reason
    with pytest.raises(InputError, match="unknown kind"):
        infer_schema(df, kinds={"age": "weird"})


def _raises(df: pd.DataFrame, **kwargs: object) -> str:
    with pytest.raises(InputError) as info:
        infer_schema(df, **kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)
    return str(info.value)


def test_event_must_be_binary_and_time_non_negative() -> None:
    df = mixed_frame()
    df.loc[5, "event"] = 2
    message = _raises(df, event="event")
    assert "column 'event' has values 0, 1, 2" in message and "the event column" in message
    assert "--" not in message  # the wizard shows it as it is: no command-line option named
    df = mixed_frame()
    df.loc[[16, 30], "time"] = [-2.5, -1.0]
    message = _raises(df, time="time")
    assert "row 17" in message and "-2.5" in message and "2 negative" in message
    assert "not numeric" in _raises(mixed_frame(), time="sex")


def test_event_with_recognised_labels() -> None:
    df = mixed_frame()
    df["status"] = np.where(df["event"] == 1, "dead", "alive")
    spec = infer_schema(df, event="status").by_name("status")
    assert spec.kind == "event" and spec.labels == ("alive", "dead")
    df["status"] = np.where(df["event"] == 1, "B", "A")
    assert "has values A, B" in _raises(df, event="status")


def test_unknown_columns_and_too_few_complete_rows(tmp_path: Path) -> None:
    df = mixed_frame()
    message = _raises(df, time="follow_up")
    assert "no column 'follow_up'" in message and "'age'" in message
    message = _raises(df, drop=["nope"])
    assert "no column 'nope' (named in the columns to drop)" in message and "--" not in message
    sparse = mixed_frame()
    sparse.loc[37:, "chol"] = np.nan
    message = _raises(sparse, complete_cases=True)
    assert (
        "only 37 rows have no missing values in the used columns; at least 50 are needed" in message
    )
    # missing values modelled (the default): all 80 rows are used, nothing to refuse
    assert infer_schema(sparse).by_name("chol").action == "synthesize"
    path = tmp_path / "small.csv"
    mixed_frame(n=20).to_csv(path, index=False)
    assert _raises(read_table(path)).startswith("small.csv: only 20 rows")


def test_schema_from_loaded_csv_uses_file_name_and_labels(tmp_path: Path) -> None:
    path = tmp_path / "cohort.csv"
    mixed_frame().to_csv(path, index=False)
    schema = infer_schema(read_table(path), time="time", event="event")
    assert schema.by_name("patient_id").kind == "identifier"
    # no value labels in a CSV, but few whole values named "stage": an ordered code (issue 32)
    assert schema.by_name("stage").kind == "categorical" and schema.by_name("stage").ordered
    assert schema.by_name("event").dtype == "int64"
    assert "cohort.csv" in _raises(read_table(path), event="sex" + "x")


def identifier_frame(n: int = 300, seed: int = 3) -> pd.DataFrame:
    """Record identifiers with a few duplicates next to genuine measurements."""
    rng = np.random.default_rng(seed)
    subject_no = np.arange(1001, 1001 + n)
    subject_no[rng.choice(n, 6, replace=False)] = subject_no[:6]  # 98 % unique
    with_dupes = lambda v: np.where(np.arange(n) % 50 == 7, v[0], v)  # noqa: E731
    return pd.DataFrame(
        {
            "subject_no": rng.permutation(subject_no),
            "mrn": with_dupes(rng.choice(9_000_000, n, replace=False) + 1_000_000),
            "nhs_number": with_dupes(rng.choice(10**9, n, replace=False) + 4 * 10**9),
            "record_id": with_dupes(rng.permutation(n) + 1),
            "patient_id": with_dupes(np.array([f"P{k:05d}" for k in rng.permutation(n)])),
            "study_id": with_dupes(np.array([f"S-{k:04d}" for k in range(n)])),
            "var7": np.sort(with_dupes(rng.choice(50_000, n, replace=False))),  # in row order
            "cholesterol": np.round(rng.uniform(3.1, 9.8, n), 2),
            "age": rng.integers(25, 85, n),
            "birth_weight_g": rng.integers(1800, 4600, n),
            "midline_shift": np.round(rng.normal(0, 3, n), 1),
            "paid": rng.integers(1, 10**6, n),
            "days_to_event": np.sort(rng.choice(5000, n, replace=False)),
            "site": rng.choice(["A", "B", "C"], n),
            "study": rng.choice([1, 2, 3], n),
        }
    )


def test_near_unique_identifiers_are_dropped_with_a_plain_reason() -> None:
    schema = infer_schema(identifier_frame())
    for name in (
        "subject_no",
        "mrn",
        "nhs_number",
        "record_id",
        "patient_id",
        "study_id",
        "var7",
    ):
        spec = schema.by_name(name)
        assert (spec.kind, spec.action) == ("identifier", "drop"), (name, spec.reason)
        assert "identifier" in spec.reason and "--" not in spec.reason
    assert "98 % different" in schema.by_name("subject_no").reason


def test_measurements_with_many_values_are_not_identifiers() -> None:
    schema = infer_schema(identifier_frame())
    expected = {
        "cholesterol": "continuous",
        "age": "integer",
        "birth_weight_g": "integer",
        "midline_shift": "continuous",
        "paid": "integer",  # 'paid' is not 'id'; random amounts, not in row order
        "days_to_event": "integer",  # a time, even sorted
        "site": "categorical",
        "study": "categorical",  # three whole values coding studies: unordered groups (issue 32)
    }
    assert {n: schema.by_name(n).kind for n in expected} == expected
    assert len(schema.synthesized()) == 8


def test_user_can_keep_a_flagged_identifier() -> None:
    kept = infer_schema(identifier_frame(), keep=["subject_no"]).by_name("subject_no")
    assert (kept.kind, kept.action) == ("integer", "synthesize")


@pytest.mark.parametrize(
    ("time", "event"),
    [
        ("time", "status"),
        ("futime", "death"),
        ("days", "died"),
        ("weeks", "arrest"),
        ("os", "event"),
        ("pfs", "relapse"),
        ("time_to_death", "dead"),
        ("survival_months", "vital_status"),
        ("followup_years", "failure"),
        ("OS_time", "OS_event"),
        ("month", "fail"),
        ("Survival Time", "Death"),
        ("years", "cvd_event"),
    ],
)
def test_survival_columns_are_recognised_by_name_and_coding(time: str, event: str) -> None:
    from engine.columns.schema import recognise_survival_roles

    rng = np.random.default_rng(0)
    n = 80
    df = pd.DataFrame(
        {
            "age": rng.integers(30, 80, n),
            time: rng.uniform(0, 100, n).round(1),
            "midline_shift": rng.normal(0, 3, n),
            event: rng.choice(["alive", "dead"], n)
            if event == "vital_status"
            else rng.integers(0, 2, n),
        }
    )
    roles = recognise_survival_roles(df)
    assert (roles.time, roles.event) == (time, event)
    schema = infer_schema(df, time=roles.time, event=roles.event)
    assert (schema.by_name(time).kind, schema.by_name(event).kind) == ("time", "event")


def test_censoring_indicators_are_asked_about_and_1_2_codings_used_with_a_note() -> None:
    """Issue 28: a censoring-looking name is never used silently (one question, "1 means
    censored" preselected for 'censored'); R's 1/2 coding is used, 2 = the event, with a note."""
    from engine.columns.schema import recognise_survival_roles

    rng = np.random.default_rng(1)
    n = 80
    base = {"futime": rng.uniform(1, 50, n), "age": rng.integers(30, 80, n)}
    censored = recognise_survival_roles(pd.DataFrame({**base, "censored": rng.integers(0, 2, n)}))
    assert censored.event is None and censored.must_ask
    assert (censored.likely_time, censored.likely_event, censored.event_value) == (
        "futime",
        "censored",
        0,
    )
    assert "censoring indicator" in str(censored.question)
    r_style = recognise_survival_roles(pd.DataFrame({**base, "status": rng.integers(1, 3, n)}))
    assert (r_style.time, r_style.event, r_style.event_value) == ("futime", "status", 2)
    assert "coded 1/2" in r_style.notes[0] and not r_style.must_ask
    negative = recognise_survival_roles(
        pd.DataFrame({"time": -base["futime"], "event": rng.integers(0, 2, n)})
    )
    assert negative.time is None  # negative values are not follow-up times
    none = recognise_survival_roles(pd.DataFrame({"sbp": base["futime"], "event": base["age"]}))
    assert (none.time, none.event, none.notes) == (None, None, ())


def test_reasons_show_values_as_a_person_writes_them() -> None:
    """numpy scalars in a reason read ``0, 1`` and ``5``, never ``np.int64(0)`` (the wizard and
    the report show these reasons word for word)."""
    n = 60
    df = pd.DataFrame(
        {
            "flag": np.array([0, 1] * (n // 2), dtype="int64"),
            "site": np.full(n, 5, dtype="int64"),
            "sex": ["M", "F"] * (n // 2),
            "x": np.arange(n) + 0.5,
        }
    )
    reasons = {c.name: c.reason for c in infer_schema(df).columns}
    assert reasons["flag"] == "two values (0, 1)"
    assert reasons["site"] == "only one value (5); nothing to model"
    assert reasons["sex"] == "two values ('F', 'M')"
    assert not any("np." in r for r in reasons.values())
