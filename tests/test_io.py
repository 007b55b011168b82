"""engine.files.read: every format reads the same table; text quirks; user errors are one-line
InputErrors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from engine.errors import InputError
from engine.files.read import read_table, sniff_delimiter


def reference_table() -> pd.DataFrame:
    """A small mixed table with short names (XPORT v5 needs <= 8 characters)."""
    return pd.DataFrame(
        {
            "pid": ["007", "008", "010", "011", "012", "013"],
            "sex": ["F", "M", "F", "F", "M", "M"],
            "age": [54.5, 61.25, 47.0, 70.75, 58.5, 66.0],
            "events": [0, 2, 1, 3, 0, 1],
        }
    )


def _write(df: pd.DataFrame, path: Path) -> None:
    """Write ``df`` with the library that owns the format."""
    suffix = path.suffix
    if suffix == ".csv":
        df.to_csv(path, index=False)
    elif suffix == ".tsv":
        df.to_csv(path, index=False, sep="\t")
    elif suffix == ".xlsx":
        df.to_excel(path, index=False)
    elif suffix == ".parquet":
        df.to_parquet(path, index=False)
    elif suffix == ".sav":
        pyreadstat.write_sav(df, str(path))
    elif suffix == ".dta":
        pyreadstat.write_dta(df, str(path))
    elif suffix == ".xpt":
        pyreadstat.write_xport(df, str(path))


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".xlsx", ".parquet", ".sav", ".dta", ".xpt"])
def test_every_format_round_trips_the_same_table(tmp_path: Path, suffix: str) -> None:
    df = reference_table()
    path = tmp_path / f"t{suffix}"
    _write(df, path)
    before = path.read_bytes()
    table = read_table(path)
    pd.testing.assert_frame_equal(table.frame, df)
    assert table.rows == 6
    assert table.sha256 == hashlib.sha256(before).hexdigest()
    assert path.read_bytes() == before  # never modified
    assert table.format == {".tsv": "tsv", ".xlsx": "xlsx"}.get(suffix, suffix[1:])


def test_sas7bdat_round_trips_the_same_table(tmp_path: Path) -> None:
    """pyreadstat cannot write .sas7bdat; ReadStat's own command-line tool (Debian package
    ``readstat``, the C library under pyreadstat) can: write the table as .dta, convert it."""
    import shutil
    import subprocess

    if shutil.which("readstat") is None:
        pytest.skip("the 'readstat' tool (apt-get install readstat) is needed to write a .sas7bdat")
    df = reference_table()
    dta, sas = tmp_path / "t.dta", tmp_path / "t.sas7bdat"
    _write(df, dta)
    subprocess.run(["readstat", str(dta), str(sas)], check=True, capture_output=True)
    table = read_table(sas)
    assert table.format == "sas7bdat" and table.rows == 6
    pd.testing.assert_frame_equal(table.frame, read_table(dta).frame)


def test_semicolon_with_decimal_comma(tmp_path: Path) -> None:
    path = tmp_path / "eu.csv"
    path.write_text("id;sbp;chol\n1;120,5;5,25\n2;131,0;6,5\n3;99,75;4\n", encoding="utf-8")
    table = read_table(path)
    assert table.frame["sbp"].tolist() == [120.5, 131.0, 99.75]
    assert table.frame["chol"].tolist() == [5.25, 6.5, 4.0]
    assert any("semicolon" in n for n in table.notes)


def test_tab_and_pipe_delimiters_are_sniffed(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("a\tb\tc\n1\t2\t3\n4\t5\t6\n")
    assert read_table(path).frame.shape == (2, 3)
    assert sniff_delimiter("a|b\n1|2\n") == "|"
    assert sniff_delimiter("a,b;c\n1,2;3\n1,2,3;4\n") == ";"  # only ';' keeps the header's width


def test_cp1252_file_gets_a_note_and_bom_is_stripped(tmp_path: Path) -> None:
    path = tmp_path / "win.csv"
    path.write_bytes("name,city\nRené,Café\n".encode("cp1252"))
    table = read_table(path)
    assert table.frame.loc[0, "city"] == "Café"
    assert any("cp1252" in n for n in table.notes)
    bom = tmp_path / "bom.csv"
    bom.write_bytes("\ufeffage;sex\n1;F\n".encode())
    assert list(read_table(bom).frame.columns) == ["age", "sex"]


def test_category_called_na_survives_but_numeric_na_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "na.csv"
    path.write_text("grade,sbp,note\nA,120,x\nNA,NA,\nB,131,.\nA,NA,y\n")
    table = read_table(path)
    assert table.frame["grade"].tolist() == ["A", "NA", "B", "A"]
    assert table.frame["sbp"].isna().tolist() == [False, True, False, True]
    assert table.frame["sbp"].dtype == np.float64
    assert table.frame["note"].isna().sum() == 2  # empty and '.' are always missing
    assert any("'grade': kept 'NA'" in n for n in table.notes)
    forced = read_table(path, missing_codes=["NA"])
    assert forced.frame["grade"].isna().sum() == 1


def test_user_missing_code_applies_to_numbers_and_text(tmp_path: Path) -> None:
    path = tmp_path / "codes.csv"
    path.write_text("x,y,z\n1.5,-999,a\n-999.0,3,-999\n2.5,4,b\n")
    frame = read_table(path, missing_codes=[-999]).frame
    assert frame["x"].isna().tolist() == [False, True, False]
    assert frame["y"].isna().tolist() == [True, False, False]
    assert frame["z"].isna().tolist() == [False, True, False]
    parquet = tmp_path / "codes.parquet"
    pd.DataFrame({"x": [1.0, -999.0, 3.0], "s": ["a", "-999", "b"]}).to_parquet(parquet)
    typed = read_table(parquet, missing_codes=[-999]).frame
    assert typed["x"].isna().sum() == 1 and typed["s"].isna().sum() == 1


def test_leading_zeros_and_id_names_stay_text(tmp_path: Path) -> None:
    path = tmp_path / "ids.csv"
    path.write_text("mrn,PatientID,zip5,count\n00123,1,02139,5\n00456,2,10001,7\n")
    frame = read_table(path).frame
    assert frame["mrn"].tolist() == ["00123", "00456"]
    assert frame["PatientID"].tolist() == ["1", "2"]
    assert frame["zip5"].tolist() == ["02139", "10001"]
    assert frame["count"].dtype == np.int64


def test_inf_and_all_empty_columns(tmp_path: Path) -> None:
    path = tmp_path / "inf.csv"
    path.write_text("x,empty\n1.5,\ninf,\n-inf,\n2,\n")
    table = read_table(path)
    assert table.frame["x"].isna().sum() == 2
    assert "empty" in table.frame.columns and table.frame["empty"].isna().all()
    assert any("2 infinite values" in n for n in table.notes)
    assert any("'empty': every value is missing" in n for n in table.notes)


def _error(path: object, **kwargs: object) -> str:
    with pytest.raises(InputError) as info:
        read_table(path, **kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert "\n" not in message
    return message


def test_user_errors_are_one_line_and_name_the_file(tmp_path: Path) -> None:
    assert "is a URL" in _error("https://example.org/data.csv")
    assert "data.csv" in _error("https://example.org/data.csv")
    assert "missing.csv" in _error(tmp_path / "missing.csv") and "not found" in _error(
        tmp_path / "missing.csv"
    )
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    assert "folder.csv: is a folder" in _error(folder)
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    assert "empty.csv" in _error(empty) and "0 bytes" in _error(empty)
    header = tmp_path / "header.csv"
    header.write_text("a,b,c\n")
    assert "header.csv" in _error(header) and "no data rows" in _error(header)
    noise = tmp_path / "noise.csv"
    noise.write_bytes(np.random.default_rng(1).bytes(4000))
    assert "noise.csv" in _error(noise)
    dup = tmp_path / "dup.csv"
    dup.write_text("age,sex,age\n1,F,2\n")
    assert "dup.csv" in _error(dup) and "'age'" in _error(dup)
    unknown = tmp_path / "data.json"
    unknown.write_text("{}")
    assert "data.json" in _error(unknown) and "unknown file type" in _error(unknown)


def test_damaged_binary_files_raise_input_error(tmp_path: Path) -> None:
    for suffix in (".xlsx", ".parquet", ".sav", ".dta", ".xpt"):
        path = tmp_path / f"bad{suffix}"
        path.write_bytes(np.random.default_rng(2).bytes(3000))
        assert f"bad{suffix}" in _error(path)


def test_excel_sheet_choice_and_formula_note(tmp_path: Path) -> None:
    import openpyxl

    path = tmp_path / "book.xlsx"
    book = openpyxl.Workbook()
    first = book.active
    first.title = "Info"
    first.append(["note"])
    first.append(["hello"])
    data = book.create_sheet("Data")
    data.append(["x", "double"])
    for k in range(1, 4):
        data.append([k, f"=A{k + 1}*2"])
    book.save(path)
    table = read_table(path, sheet="Data")
    assert table.sheet == "Data" and table.frame["x"].tolist() == [1, 2, 3]
    assert table.frame["double"].isna().all()
    assert any("3 formula cells have no saved value" in n for n in table.notes)
    assert read_table(path).sheet == "Info" and read_table(path, sheet=1).sheet == "Data"
    message = _error(path, sheet="Nope")
    assert "book.xlsx" in message and "'Info', 'Data'" in message


def test_excel_na_text_and_duplicate_header(tmp_path: Path) -> None:
    path = tmp_path / "na.xlsx"
    pd.DataFrame({"grade": ["A", "NA", "B"], "sbp": ["120", "NA", "131"]}).to_excel(
        path, index=False
    )
    frame = read_table(path).frame
    assert frame["grade"].tolist() == ["A", "NA", "B"]
    assert frame["sbp"].isna().tolist() == [False, True, False]
    dup = tmp_path / "dup.xlsx"
    pd.DataFrame([[1, 2]], columns=["a", "b"]).rename(columns={"b": "a"}).to_excel(dup, index=False)
    assert "'a'" in _error(dup)


def test_spss_labels_and_user_missing_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "study.sav"
    df = pd.DataFrame(
        {"stage": [1.0, 2.0, 3.0, 4.0, 9.0], "sbp": [120.0, -99.0, 131.0, 140.0, 118.0]}
    )
    pyreadstat.write_sav(
        df,
        str(path),
        column_labels={"sbp": "Systolic blood pressure (mmHg)"},
        variable_value_labels={"stage": {1: "I", 2: "II", 3: "III", 4: "IV", 9: "Refused"}},
        missing_ranges={"stage": [9], "sbp": [-99]},
        variable_measure={"stage": "ordinal"},
    )
    table = read_table(path)
    meta = table.column_meta
    assert meta["sbp"].variable_label == "Systolic blood pressure (mmHg)"
    assert meta["stage"].value_labels == {
        1.0: "I",
        2.0: "II",
        3.0: "III",
        4.0: "IV",
        9.0: "Refused",
    }
    assert meta["stage"].user_missing == (9.0,) and meta["sbp"].user_missing == (-99.0,)
    assert meta["stage"].measure == "ordinal"
    assert table.frame["stage"].isna().tolist() == [False, False, False, False, True]
    assert table.frame["sbp"].isna().sum() == 1
    assert meta["sbp"].to_dict()["user_missing"] == [-99.0]


def test_stata_value_labels(tmp_path: Path) -> None:
    path = tmp_path / "s.dta"
    df = pd.DataFrame({"smoke": [0, 1, 1, 0], "bmi": [21.5, 30.25, 27.0, 24.5]})
    pyreadstat.write_dta(
        df,
        str(path),
        column_labels={"bmi": "Body mass index"},
        variable_value_labels={"smoke": {0: "no", 1: "yes"}},
    )
    table = read_table(path)
    assert table.column_meta["smoke"].value_labels == {0: "no", 1: "yes"}
    assert table.column_meta["bmi"].variable_label == "Body mass index"
    assert table.frame["smoke"].dtype == np.int64


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".xlsx", ".dta"])
def test_dates_arrive_as_dates_in_every_format_and_are_synthesized(
    tmp_path: Path, suffix: str
) -> None:
    """CSV ISO text, Parquet date32, Excel date cells and Stata dates all become a date column
    that is modelled (as days) and parse to the same days."""
    import datetime as dt

    from engine.columns.dates import parse_dates
    from engine.columns.schema import infer_schema

    days = [dt.date(2020, 1, 1) + dt.timedelta(days=int(k)) for k in np.arange(60) * 3]
    df = pd.DataFrame({"seen": days, "x": np.arange(60) % 7})
    path = tmp_path / f"d{suffix}"
    if suffix == ".csv":
        df.assign(seen=[d.isoformat() for d in days]).to_csv(path, index=False)
    elif suffix == ".parquet":
        df.to_parquet(path)  # pyarrow stores date objects as date32
    elif suffix == ".xlsx":
        df.assign(seen=pd.to_datetime(df["seen"])).to_excel(path, index=False)
    else:
        pyreadstat.write_dta(df.assign(seen=pd.to_datetime(df["seen"])), str(path))
    frame = read_table(path).frame
    spec = infer_schema(frame).by_name("seen")
    assert (spec.kind, spec.action) == ("date", "synthesize"), (suffix, frame["seen"].dtype)
    got = parse_dates(frame["seen"])
    assert got.dt.date.tolist() == days


def test_a_large_column_is_typed_by_its_distinct_cells_as_cell_by_cell():
    """Issue 31: a column of 20,000 rows and few distinct cells is typed once per distinct
    cell; the values, dtype and the notes' row counts are those of the cell-by-cell path, and
    the schema's text tests (all text, dates, e-mails) read the same."""
    from engine.columns.identifiers import _DATE, _looks, all_text
    from engine.files.read_text import _type_text, type_text_column

    rng = np.random.default_rng(0)
    n = 20_000
    columns = {
        "age": rng.integers(20, 90, n).astype(str),
        "sex": rng.choice(["F", "M", " F", "NA", ""], n),
        "dose": rng.choice(["-999", "1", "2.5", "3"], n),
        "zip": rng.choice(["007", "12", "13"], n),
        "patient_id": rng.choice([str(i) for i in range(100)], n),
        "grade": rng.choice(["a", "b", "NA"], n),
        "comma": rng.choice(["1,5", "2,25", "NA", "3"], n),
    }
    for codes in [(), ("-999",), (-999,), ("NA",)]:
        for decimal_comma in (False, True):
            for name, cells in columns.items():
                values = pd.Series(cells, dtype=object)
                fast_notes: list[str] = []
                slow_notes: list[str] = []
                fast = type_text_column(name, values, decimal_comma, codes, fast_notes)
                slow = _type_text(name, values, decimal_comma, codes, slow_notes, None)
                pd.testing.assert_series_equal(fast, slow)
                assert fast_notes == slow_notes
    dates = pd.Series(rng.choice(["2020-01-02", "x", "2021-3-4"], n), dtype=object)
    assert _looks(dates, _DATE) == (dates.str.match(_DATE).mean() >= 0.8)
    assert (
        all_text(dates)
        and not all_text(pd.Series([1.5, 2.0]))
        and not all_text(dates.where(dates != "x", 3))
    )
