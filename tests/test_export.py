"""Tests for engine.files.write and engine.provenance: injection, atomicity, round trips, labels."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from openpyxl import load_workbook

from engine.errors import InputError
from engine.files import atomic
from engine.files import write as export
from engine.files.write import (
    FORMATS,
    atomic_path,
    atomic_write_bytes,
    escape_formula,
    escape_frame,
    synthetic_file_name,
    write_recipient_readme,
    write_table,
)
from engine.provenance import library_versions, results_json, sha256_file

TRIGGERS = ["=", "+", "-", "@", "\t", "\r", "\n", "\0"]


def _expected(value: str) -> str:
    """What a spreadsheet cell holds after export: escaped, NUL shown as U+FFFD."""
    return escape_formula(value).replace("\0", "\ufffd")


def _read_csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")


def _read_xlsx(path: Path) -> list[list[object]]:
    sheet = load_workbook(path).active
    return [[c.value for c in row] for row in sheet.iter_rows()]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# ---------------------------------------------------------------- formula injection


@pytest.mark.parametrize("lead", TRIGGERS)
def test_escape_formula_each_leading_character(lead: str) -> None:
    assert escape_formula(lead + "cmd|' /C calc'!A0") == "'" + lead + "cmd|' /C calc'!A0"


def test_escape_formula_leaves_safe_text() -> None:
    assert [escape_formula(v) for v in ["a=b", "", "'=x", "1-2"]] == ["a=b", "", "'=x", "1-2"]


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
@pytest.mark.parametrize("lead", TRIGGERS)
def test_injection_escaped_in_file(tmp_path: Path, fmt: str, lead: str) -> None:
    value = lead + 'HYPERLINK("http://x")'
    frame = pd.DataFrame({"text": [value, "plain"], "n": [-1.5, 2.0]})
    path = write_table(frame, tmp_path / f"synthetic.{fmt}", fmt)
    if fmt == "csv":
        back = _read_csv(path)
        assert back["text"].tolist() == [_expected(value), "plain"]
        assert back["n"].tolist() == ["-1.5", "2.0"]
    else:
        rows = _read_xlsx(path)  # XML carries no CR: Excel cells hold LF instead
        assert rows[1] == [_expected(value).replace("\r", "\n"), -1.5]
        assert rows[1][0].startswith("'")
        assert rows[2] == ["plain", 2]


def test_negative_numbers_stay_numeric(tmp_path: Path) -> None:
    frame = pd.DataFrame({"i": [-1, -20, 3], "f": [-0.5, -1e-3, 2.25], "s": ["-1", "a", "b"]})
    out = escape_frame(frame)
    assert out["i"].dtype == np.int64 and out["i"].tolist() == [-1, -20, 3]
    assert out["f"].dtype == np.float64 and out["f"].tolist() == [-0.5, -1e-3, 2.25]
    assert out["s"].tolist() == ["'-1", "a", "b"]
    back = pd.read_csv(write_table(frame, tmp_path / "a.csv", "csv"))
    assert back["i"].dtype == np.int64 and back["i"].tolist() == [-1, -20, 3]
    assert back["f"].tolist() == [-0.5, -1e-3, 2.25]
    xl = pd.read_excel(write_table(frame, tmp_path / "a.xlsx", "xlsx"))
    assert xl["i"].dtype == np.int64 and xl["i"].tolist() == [-1, -20, 3]
    assert xl["f"].tolist() == [-0.5, -1e-3, 2.25]


def test_category_and_string_columns_escaped() -> None:
    frame = pd.DataFrame(
        {
            "c": pd.Categorical(["=a", "b", "=a"]),
            "s": pd.array(["+x", None, "y"], dtype="string"),
            "o": ["@z", np.nan, 5],
        }
    )
    out = escape_frame(frame)
    assert isinstance(out["c"].dtype, pd.CategoricalDtype)
    assert out["c"].tolist() == ["'=a", "b", "'=a"]
    assert out["s"].dtype == frame["s"].dtype and out["s"].tolist()[0] == "'+x"
    assert pd.isna(out["s"].iloc[1])
    assert out["o"].iloc[0] == "'@z" and pd.isna(out["o"].iloc[1]) and out["o"].iloc[2] == 5


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_column_names_escaped(tmp_path: Path, fmt: str) -> None:
    frame = pd.DataFrame({"=SUM(A1)": [1], "-x": ["a"], "ok": [2]})
    path = write_table(frame, tmp_path / f"s.{fmt}", fmt)
    header = list(_read_csv(path).columns) if fmt == "csv" else _read_xlsx(path)[0]
    assert header == ["'=SUM(A1)", "'-x", "ok"]


def test_excel_cells_are_strings_never_formulas(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": ["=1+1", "x", "@A1"], "b": [1, 2, 3]})
    path = write_table(frame, tmp_path / "s.xlsx", "xlsx")
    sheet = load_workbook(path).active
    for row in sheet.iter_rows():
        for cell in row:
            assert cell.data_type != "f"
            if isinstance(cell.value, str):
                assert cell.data_type == "s"
    assert sheet["A2"].value == "'=1+1" and sheet["A2"].data_type == "s"
    assert sheet["B2"].value == 1 and sheet["B2"].data_type == "n"


# ---------------------------------------------------------------- atomic writing


def test_interrupted_export_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "synthetic.csv"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"partial")
            raise RuntimeError("boom")
    assert not target.exists() and _leftovers(tmp_path) == []
    assert list(tmp_path.iterdir()) == []


def test_keyboard_interrupt_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    def interrupted(frame, tmp, meta) -> None:
        Path(tmp).write_bytes(b"half a file")
        raise KeyboardInterrupt

    monkeypatch.setitem(export._WRITERS, "csv", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "synthetic.csv", "csv")
    assert list(tmp_path.iterdir()) == []


def test_failed_overwrite_keeps_previous_file(tmp_path: Path) -> None:
    target = atomic_write_bytes(tmp_path / "synthetic.csv", b"old,good\n")
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"new,partial")
            raise KeyboardInterrupt
    assert target.read_bytes() == b"old,good\n"
    assert _leftovers(tmp_path) == []
    atomic_write_bytes(target, b"new\n")
    assert target.read_bytes() == b"new\n" and _leftovers(tmp_path) == []


def test_permission_error_on_replace_names_excel(tmp_path: Path, monkeypatch) -> None:
    target = atomic_write_bytes(tmp_path / "synthetic.xlsx", b"old")

    def locked(src, dst) -> None:
        raise PermissionError(13, "The process cannot access the file")

    monkeypatch.setattr(atomic.os, "replace", locked)
    with pytest.raises(InputError) as info:
        write_table(pd.DataFrame({"a": [1]}), target, "xlsx")
    message = str(info.value)
    assert "synthetic.xlsx" in message and "open in another program (e.g. Excel)" in message
    assert "close it and export again" in message and "\n" not in message
    assert target.read_bytes() == b"old" and _leftovers(tmp_path) == []


def test_refuses_to_write_onto_input(tmp_path: Path) -> None:
    source = tmp_path / "cohort.csv"
    source.write_bytes(b"a\n1\n")
    other = tmp_path / "sub" / ".." / "cohort.csv"
    (tmp_path / "sub").mkdir()
    for target in (source, other):
        with pytest.raises(InputError, match="input file"):
            write_table(pd.DataFrame({"a": [2]}), target, "csv", forbid=source)
        with pytest.raises(InputError, match="input file"):
            atomic_write_bytes(target, b"x", forbid=source)
    assert source.read_bytes() == b"a\n1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cohort.csv", "sub"]


def test_refuses_input_through_symlink(tmp_path: Path) -> None:
    source = tmp_path / "cohort.csv"
    source.write_bytes(b"a\n1\n")
    link = tmp_path / "link.csv"
    try:
        link.symlink_to(source)
    except OSError:
        pytest.skip("symlinks not available")
    with pytest.raises(InputError):
        atomic_write_bytes(link, b"x", forbid=source)
    assert source.read_bytes() == b"a\n1\n"


def test_unknown_format_and_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "x.json", "json")
    assert all(name in str(info.value) for name in FORMATS)
    with pytest.raises(InputError, match="does not exist"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "nope" / "x.csv", "csv")


# ---------------------------------------------------------------- round trips


@dataclass(frozen=True)
class ColumnMeta:
    variable_label: str | None
    value_labels: dict | None


def _cohort() -> tuple[pd.DataFrame, dict]:
    frame = pd.DataFrame(
        {
            "age": [34, 58, 71, 45, 62],
            "sbp": [118.5, 142.25, -1.0, 130.0, np.nan],
            "sex": pd.Categorical(["female", "male", "male", "female", "male"]),
            "smoker": [1, 0, 2, 1, 0],
            "region": ["north", "south", "east", "north", "west"],
            "event": [0, 1, 1, 0, 1],
        }
    )
    meta = {
        "age": ColumnMeta("Age at baseline (years)", None),
        "sbp": {"variable_label": "Systolic blood pressure (mmHg)", "value_labels": None},
        "sex": ColumnMeta("Sex", {1: "female", 2: "male"}),
        "smoker": {
            "variable_label": "Smoking status",
            "value_labels": {"0": "never", "1": "former", "2": "current"},
        },
        "event": ColumnMeta(None, {0: "censored", 1: "died"}),
    }
    return frame, meta


def _read_back(path: Path, fmt: str) -> pd.DataFrame:
    if fmt == "csv":
        return pd.read_csv(path, encoding="utf-8")
    if fmt == "xlsx":
        return pd.read_excel(path)
    if fmt == "parquet":
        return pd.read_parquet(path)
    reader = pyreadstat.read_sav if fmt == "sav" else pyreadstat.read_dta
    return reader(str(path), apply_value_formats=True)[0]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_round_trip_values_and_types(tmp_path: Path, fmt: str) -> None:
    frame, meta = _cohort()
    path = write_table(frame, tmp_path / synthetic_file_name("synthetic", fmt), fmt, meta)
    assert path.name == f"synthetic.{fmt}"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    back = _read_back(path, fmt)
    assert list(back.columns) == list(frame.columns)
    expected = frame.copy()
    if fmt in {"sav", "dta"}:  # labelled codes come back as their labels
        expected["smoker"] = expected["smoker"].map({0: "never", 1: "former", 2: "current"})
        expected["event"] = expected["event"].map({0: "censored", 1: "died"})
    for name in expected.columns:
        got, want = back[name], expected[name]
        if isinstance(want.dtype, pd.CategoricalDtype) or want.dtype == object:
            assert got.astype(str).tolist() == want.astype(str).tolist(), name
        else:
            np.testing.assert_allclose(got.to_numpy(float), want.to_numpy(float), err_msg=name)
    if fmt in {"csv", "xlsx", "parquet"}:
        for name in ("age", "smoker", "event"):
            assert pd.api.types.is_integer_dtype(back[name].dtype), (fmt, name)
        assert back["sbp"].dtype == np.float64
    if fmt == "parquet":
        assert isinstance(back["sex"].dtype, pd.CategoricalDtype)


@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_labels_survive_spss_and_stata(tmp_path: Path, fmt: str) -> None:
    frame, meta = _cohort()
    path = write_table(frame, tmp_path / f"synthetic.{fmt}", fmt, meta)
    reader = pyreadstat.read_sav if fmt == "sav" else pyreadstat.read_dta
    raw, info = reader(str(path))
    assert info.column_names_to_labels["age"] == "Age at baseline (years)"
    assert info.column_names_to_labels["sbp"] == "Systolic blood pressure (mmHg)"
    assert info.column_names_to_labels["sex"] == "Sex"
    labels = {k: {int(c): v for c, v in d.items()} for k, d in info.variable_value_labels.items()}
    assert labels["sex"] == {1: "female", 2: "male"}
    assert labels["smoker"] == {0: "never", 1: "former", 2: "current"}
    assert labels["event"] == {0: "censored", 1: "died"}
    assert raw["sex"].tolist() == [1, 2, 2, 1, 2]  # labelled codes, not text
    assert raw["age"].tolist() == [34, 58, 71, 45, 62]
    assert raw["region"].tolist() == frame["region"].tolist()
    if fmt == "dta":  # Stata keeps integer storage
        assert info.readstat_variable_types["age"] in {"int8", "int16", "int32"}
        assert pd.api.types.is_integer_dtype(raw["age"].dtype)
    else:  # SPSS has one numeric type; integers get a 0-decimal display format
        assert info.original_variable_types["age"].endswith(".0")
    _, only_meta = reader(str(path), metadataonly=True)
    assert only_meta.column_names == list(frame.columns)


def test_parquet_keeps_labels_in_metadata(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    frame, meta = _cohort()
    path = write_table(frame, tmp_path / "s.parquet", "parquet", meta)
    stored = json.loads(pq.read_schema(path).metadata[b"latent_synth.column_meta"])
    assert stored["sex"] == {"variable_label": "Sex", "value_labels": {"1": "female", "2": "male"}}


def test_nullable_bool_and_dates(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "n": pd.array([1, None, 3], dtype="Int64"),
            "b": [True, False, True],
            "d": pd.to_datetime(["2020-01-01", "2021-06-30", None]),
        }
    )
    for fmt in FORMATS:
        path = write_table(frame, tmp_path / f"s.{fmt}", fmt)
        back = _read_back(path, fmt)
        assert back["n"].isna().tolist() == [False, True, False], fmt
        assert pd.to_datetime(back["d"]).iloc[1] == pd.Timestamp("2021-06-30"), fmt


def test_invalid_stata_name_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="Stata"):
        write_table(pd.DataFrame({"blood pressure": [1]}), tmp_path / "s.dta", "dta")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- labelling and provenance


def test_synthetic_file_name() -> None:
    assert synthetic_file_name("synthetic", "csv") == "synthetic.csv"
    assert synthetic_file_name("cohort", "xlsx") == "cohort_synthetic.xlsx"
    assert synthetic_file_name(fmt=".PARQUET") == "synthetic.parquet"
    with pytest.raises(InputError):
        synthetic_file_name("a/b", "csv")


def test_recipient_readme(tmp_path: Path) -> None:
    info = {
        "file_name": "synthetic.csv",
        "perturbation_weight": 0.5,
        "membership_auc": 0.523,
        "auc_limit": 0.55,
        "rows": 1000,
        "dropped_columns": ["patient_id", "nhs_number"],
        "tool_version": "9.9.9",
        "date": "2025-01-02",
    }
    text = write_recipient_readme(tmp_path, info).read_text(encoding="utf-8")
    for needle in (
        "SYNTHETIC",
        "not real patients",
        "w = 0.5",
        "random order",
        "patient_id",
        "nhs_number",
        "not de-identified",
        "linking",
        "Rare categories",
        "0.523",
        "0.55",
        "9.9.9",
        "2025-01-02",
    ):
        assert needle in text, needle
    risky = write_recipient_readme(tmp_path, {**info, "override": True}).read_text("utf-8")
    assert "NOT met" in risky


def test_sha256_and_versions(tmp_path: Path) -> None:
    path = tmp_path / "big.bin"
    path.write_bytes(os.urandom(3 << 20))
    import hashlib

    assert sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    versions = library_versions()
    for name in (
        "python",
        "numpy",
        "pandas",
        "scipy",
        "torch",
        "lifelines",
        "statsmodels",
        "matplotlib",
        "reportlab",
        "pyreadstat",
    ):
        assert name in versions
    assert versions["pandas"] == pd.__version__


def test_library_versions_tolerates_missing(monkeypatch) -> None:
    from importlib import metadata

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    versions = library_versions()
    assert versions["torch"] is None and versions["python"]


def test_results_json_acro_layout(tmp_path: Path) -> None:
    table = write_table(pd.DataFrame({"a": [1]}), tmp_path / "synthetic.csv", "csv")
    report = atomic_write_bytes(tmp_path / "report.pdf", b"%PDF-1.4")
    doc = results_json(
        [
            {
                "path": table,
                "type": "table",
                "summary": "synthetic table, AUC 0.52 <= 0.55",
                "properties": {"w": 0.5},
            },
            {"uid": "report", "files": [report], "type": "report", "comments": ["page 1"]},
        ],
        timestamp="2025-01-02T00:00:00+00:00",
    )
    assert set(doc) >= {"version", "results"}
    assert list(doc["results"]) == ["output_0", "report"]
    rec = doc["results"]["output_0"]
    assert set(rec) >= {
        "uid",
        "status",
        "type",
        "properties",
        "files",
        "summary",
        "comments",
        "exception",
    }
    assert rec["uid"] == "output_0" and rec["status"] == "review" and rec["exception"] is None
    assert rec["files"] == [{"name": "synthetic.csv", "sha256": sha256_file(table), "sdc": {}}]
    assert doc["results"]["report"]["comments"] == ["page 1"]
    json.dumps(doc)  # serialisable as is


def test_readme_accepts_short_keys(tmp_path: Path) -> None:
    info = {
        "version": "1.2.3",
        "w": 0.75,
        "auc": 0.6,
        "auc_max": 0.55,
        "dropped": ["mrn"],
        "format": "dta",
        "verdict": "released with override",
        "date": "2025-02-03",
    }
    text = write_recipient_readme(tmp_path, info).read_text(encoding="utf-8")
    for needle in ("synthetic.dta", "w = 0.75", "0.600", "0.55", "mrn", "NOT met", "1.2.3"):
        assert needle in text, needle


def test_results_json_from_name_and_digest() -> None:
    doc = results_json(
        [
            {"name": "synthetic.csv", "sha256": "ab" * 32, "summary": "table"},
            {"name": "report.pdf", "sha256": "cd" * 32, "summary": "report"},
            {"name": "audit.json", "sha256": "ef" * 32, "summary": "record"},
        ]
    )
    types = [r["type"] for r in doc["results"].values()]
    assert types == ["table", "report", "metadata"]
    assert doc["results"]["output_1"]["files"] == [
        {"name": "report.pdf", "sha256": "cd" * 32, "sdc": {}}
    ]


# ---------------------------------------------------------------- issue 17: Windows export


def _folder_state(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _locked(name: str):
    """An ``os.replace`` that fails like Windows when ``name`` is open in another program."""
    real = os.replace

    def replace(src, dst) -> None:
        if Path(dst).name == name:
            raise PermissionError(13, "The process cannot access the file", str(dst))
        real(src, dst)

    return replace


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two small pipeline results (different seeds) of the same table: old and new export."""
    from engine.pipeline import RunConfig, prepare, synthesize

    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame({"age": rng.normal(60, 8, n).round(1), "group": rng.integers(0, 3, n)})
    frame["sbp"] = (120 + 0.5 * frame["age"] + rng.normal(0, 9, n)).round(1)
    src = tmp_path_factory.mktemp("input") / "cohort.csv"
    frame.to_csv(src, index=False)
    results = []
    for seed in (1, 2):
        config = RunConfig(input=src, w_grid=(0.5, 0.8), repeats=2, seed=seed, allow_risky=True)
        results.append(synthesize(prepare(config)))
    return results


def test_locked_report_leaves_the_output_folder_unchanged(tmp_path, monkeypatch, two_runs):
    """Issue 17.3: report.pdf open in a viewer -> the new table, README and JSON files are not
    written either; the folder keeps the old, consistent set (hashes in results.json match)."""
    from engine.pipeline import write_outputs

    old, new = two_runs
    write_outputs(old, tmp_path)
    before = _folder_state(tmp_path)
    assert {"synthetic.csv", "README.txt", "report.pdf", "audit.json", "results.json"} <= set(
        before
    )
    monkeypatch.setattr(atomic, "_RETRY_DELAYS", (0.0, 0.0))
    monkeypatch.setattr(atomic.os, "replace", _locked("report.pdf"))
    with pytest.raises(InputError) as info:
        write_outputs(new, tmp_path)
    message = str(info.value)
    assert "report.pdf" in message and "close it and export again" in message
    assert "\n" not in message
    after = _folder_state(tmp_path)
    assert sorted(after) == sorted(before), "no temporary or backup file is left behind"
    changed = [name for name in before if after[name] != before[name]]
    assert changed == []
    records = json.loads(after["results.json"])["results"].values()
    digests = {f["name"]: f["sha256"] for record in records for f in record["files"]}
    assert {"synthetic.csv", "report.pdf", "audit.json"} <= set(digests)
    for name, digest in digests.items():
        assert sha256_file(tmp_path / name) == digest, name

    # a fresh folder stays empty when the report cannot be placed
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with pytest.raises(InputError):
        write_outputs(new, fresh)
    assert list(fresh.iterdir()) == []


def test_all_or_nothing_retries_a_short_antivirus_lock(tmp_path, monkeypatch):
    """A lock that is gone after two tries (a virus scanner) does not fail the export."""
    monkeypatch.setattr(atomic, "_RETRY_DELAYS", (0.0, 0.0, 0.0))
    real, calls = os.replace, {"n": 0}

    def flaky(src, dst) -> None:
        if Path(dst).name == "b.txt" and calls["n"] < 2:
            calls["n"] += 1
            raise PermissionError(13, "locked for a moment")
        real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", flaky)
    written = export.write_all_or_nothing({tmp_path / "a.txt": b"A", tmp_path / "b.txt": b"B"})
    assert [p.name for p in written] == ["a.txt", "b.txt"] and calls["n"] == 2
    assert _folder_state(tmp_path) == {"a.txt": b"A", "b.txt": b"B"}


def test_all_or_nothing_rolls_back_on_a_failing_writer(tmp_path):
    atomic_write_bytes(tmp_path / "a.txt", b"old A")

    def broken(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise InputError("column 'x': cannot be stored")

    with pytest.raises(InputError, match="column 'x'"):
        export.write_all_or_nothing({tmp_path / "a.txt": b"new A", tmp_path / "b.csv": broken})
    assert _folder_state(tmp_path) == {"a.txt": b"old A"}


def test_csv_has_a_byte_order_mark_for_excel(tmp_path):
    """Issue 17.4: Excel reads a CSV without a BOM in cp1252 ("MÃ¼nchen"); with one, as UTF-8."""
    frame = pd.DataFrame({"Größe": [1.5, 2.0], "Ort": ["München", "Zürich"]})
    path = write_table(frame, tmp_path / "synthetic.csv", "csv")
    raw = path.read_bytes()
    assert raw[:3] == b"\xef\xbb\xbf" and raw.count(b"\xef\xbb\xbf") == 1
    assert raw[3:].decode("utf-8").splitlines()[0] == "Größe,Ort"
    back = pd.read_csv(path, encoding="utf-8-sig")
    assert list(back.columns) == ["Größe", "Ort"] and back["Ort"].tolist() == ["München", "Zürich"]


def test_too_long_temporary_path_is_a_one_line_input_error(tmp_path, monkeypatch):
    """Issue 17.8: the temporary name (19 characters longer than the target) can push a path
    over the system's limit; that is the user's folder choice, not an internal error."""
    # POSIX: a file name over 255 bytes is refused (ENAMETOOLONG); the target itself fits.
    name = "s" * 240 + ".csv"
    with pytest.raises(InputError) as info:
        write_table(pd.DataFrame({"a": [1]}), tmp_path / name, "csv")
    message = str(info.value)
    assert str(tmp_path) in message and "shorter path" in message and "\n" not in message
    assert list(tmp_path.iterdir()) == []

    # Windows: a path over 259 characters is answered with FileNotFoundError.
    def not_found(path, *args, **kwargs):
        raise FileNotFoundError(2, "The system cannot find the path specified", str(path))

    deep = tmp_path / ("d" * 200) / "out"
    deep.mkdir(parents=True)
    monkeypatch.setattr(atomic, "_ON_WINDOWS", True)
    monkeypatch.setattr(atomic.os, "open", not_found)
    with pytest.raises(InputError, match="shorter path"):
        atomic_write_bytes(deep / "synthetic.csv", b"x")


def test_command_line_answers_a_too_long_output_path_with_exit_2(tmp_path, capsys):
    """Issue 17.8 end to end: an output folder whose path fits but whose temporary file names do
    not (POSIX PATH_MAX, 4096 bytes) gives exit 2 and one line, not an internal error."""
    from engine.cli import main

    summary = tmp_path / "studies.csv"
    summary.write_text("study,estimate,se\nA,0.1,0.05\nB,0.2,0.07\nC,0.15,0.06\n")
    limit = os.pathconf(tmp_path, "PC_PATH_MAX")
    out = tmp_path
    while len(str(out)) < limit - 20:  # out/meta.json fits; out/.meta.json.<hex>.tmp does not
        out = out / ("d" * min(200, limit - 20 - len(str(out)) - 1))
    out.mkdir(parents=True)
    assert len(str(out / "forest.pdf")) < limit <= len(str(out / ".meta.json.0123456789ab.tmp"))
    code = main(["meta", "--summary", str(summary), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "shorter path" in err and "internal error" not in err
    assert list(out.iterdir()) == []


# --- every formula trigger, by hand (docs/mutation.md) --------------------------------------------


@pytest.mark.parametrize("first", ["=", "+", "-", "@", "\t", "\r", "\n", "\0"])
def test_every_formula_trigger_is_escaped_and_nothing_else(first: str) -> None:
    from engine.files.write import escape_formula

    assert escape_formula(first + "A1") == "'" + first + "A1"
    assert escape_formula("A1" + first) == "A1" + first
    assert escape_formula("") == ""
    assert escape_formula("'=x") == "'=x"
