"""Reading the same file twice (recognising the survival columns, then the run) parses it once;
changed bytes are parsed again."""

from __future__ import annotations

import pandas as pd

import engine.files.read_text as read_text
from engine.files.read import read_table


def test_second_read_of_the_same_bytes_is_not_parsed_again(tmp_path, monkeypatch):
    path = tmp_path / "t.csv"
    pd.DataFrame({"age": [61, 70, 55], "time": [3.5, 2.0, 8.1]}).to_csv(path, index=False)
    calls = []
    original = read_text.read_text_table
    monkeypatch.setattr(
        "engine.files.read.read_text_table", lambda *a: calls.append(1) or original(*a)
    )
    first = read_table(path)
    first.frame.loc[0, "age"] = -1  # a caller changing its copy does not change the next read
    second = read_table(path)
    assert len(calls) == 1 and second.frame["age"].tolist() == [61, 70, 55]
    assert second.sha256 == first.sha256 and second.rows == 3
    third = read_table(path)  # handed over once: parsed again
    assert len(calls) == 2 and third.frame["age"].tolist() == [61, 70, 55]
    path.write_text("age,time\n1,2\n")
    read_table(path)
    assert read_table(path).frame["age"].tolist() == [1]
    assert len(calls) == 3
