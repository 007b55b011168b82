"""Issue 44: ``synthetic.csv`` carries a byte-order mark only when some text is not ASCII.

R's ``read.csv`` and Python's csv module read a mark as part of the first header
(``\\ufeffage``); Excel needs it to show non-ASCII text. So: no mark for an ASCII table, a mark
(and a clean round trip in pandas) for one with non-ASCII text.
"""

from __future__ import annotations

import csv

import pandas as pd

from engine.files.readme import recipient_readme_bytes
from engine.files.write import write_table


def _ascii_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [61, 47, 70],
            "sex": pd.Categorical(["F", "M", "F"]),
            "site": ["Leeds", "York", "Hull"],
            "sbp": [120.5, 131.0, None],
        }
    )


def test_ascii_table_header_reads_as_age_in_the_csv_module(tmp_path):
    path = write_table(_ascii_table(), tmp_path / "synthetic.csv", "csv")
    assert not path.read_bytes().startswith(b"\xef\xbb\xbf")
    with open(path, newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert header == ["age", "sex", "site", "sbp"]
    assert header[0] == "age"


def test_non_ascii_table_keeps_the_mark_and_round_trips_in_pandas(tmp_path):
    frame = pd.DataFrame(
        {"Größe": [1.5, 2.0], "Ort": pd.Categorical(["München", "Zürich"]), "n": [1, 2]}
    )
    path = write_table(frame, tmp_path / "synthetic.csv", "csv")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    back = pd.read_csv(path)  # pandas drops the mark without being told
    assert list(back.columns) == ["Größe", "Ort", "n"]
    assert back["Ort"].tolist() == ["München", "Zürich"] and back["Größe"].tolist() == [1.5, 2.0]


def test_a_non_ascii_value_alone_is_enough_for_the_mark(tmp_path):
    frame = pd.DataFrame({"city": ["Leeds", "Malmö"]})
    path = write_table(frame, tmp_path / "synthetic.csv", "csv")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert pd.read_csv(path)["city"].tolist() == ["Leeds", "Malmö"]


def test_readme_tells_r_users_how_to_read_a_marked_file():
    text = recipient_readme_bytes({"w": 0.5, "format": "csv"}).decode("utf-8")
    assert "UTF-8" in text and 'fileEncoding = "UTF-8-BOM"' in text
    sav = recipient_readme_bytes({"w": 0.5, "format": "sav"}).decode("utf-8")
    assert "UTF-8-BOM" not in sav
