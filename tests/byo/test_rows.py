"""``byo.rows.read_rows``: any rows written as a tool writes them read back exactly, each with its start line."""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groundeval.byo.rows import Row, read_rows

# Text a cell may hold: any printable text, line breaks and quotes included (CSV must quote them).
TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\n\r\",[]|'\u2028\x85"), min_size=1, max_size=30
).filter(str.strip)
ROW = st.fixed_dictionaries(
    {
        "question": TEXT,
        "answer": st.none() | TEXT,
        "contexts": st.lists(TEXT, max_size=3),
        "reference": st.none() | TEXT,
    }
)


def read(name: str, content: str, fmt: str) -> list[Row]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / name
        path.write_text(content, encoding="utf-8", newline="")
        return read_rows(path, fmt).rows


def expected(rows: list[dict]) -> list[tuple]:
    return [(r["question"], r["answer"], tuple(r["contexts"]), r["reference"]) for r in rows]


def got(rows: list[Row]) -> list[tuple]:
    return [(r.question, r.answer, r.contexts, r.reference) for r in rows]


@settings(max_examples=60, deadline=None)
@given(st.lists(ROW, min_size=1, max_size=4))
def test_csv_rows_round_trip_and_name_the_line_each_row_starts_on(rows):
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(["question", "answer", "contexts", "reference"])
    starts = []
    for row in rows:
        # The line a row starts on, counting "\r\n", "\r" and "\n" as one line break each (as an editor does).
        starts.append(len(re.findall(r"\r\n|\r|\n", buffer.getvalue())) + 1)
        writer.writerow(
            [
                row["question"],
                row["answer"] or "",
                json.dumps(row["contexts"]) if row["contexts"] else "",
                row["reference"] or "",
            ]
        )
    read_back = read("rows.csv", buffer.getvalue(), "csv")
    assert got(read_back) == expected(rows)
    assert [r.line for r in read_back] == starts


@settings(max_examples=60, deadline=None)
@given(st.lists(ROW, min_size=1, max_size=4))
def test_ragas_jsonl_and_deepeval_json_round_trip(rows):
    ragas = [
        {
            "user_input": r["question"],
            "response": r["answer"],
            "retrieved_contexts": r["contexts"],
            "reference": r["reference"],
        }
        for r in rows
    ]
    read_back = read("rows.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ragas), "ragas")
    assert got(read_back) == expected(rows) and [r.line for r in read_back] == list(range(1, len(rows) + 1))
    deepeval = [
        {
            "input": r["question"],
            "actual_output": r["answer"],
            "retrieval_context": r["contexts"],
            "expected_output": r["reference"],
        }
        for r in rows
    ]
    text = json.dumps(deepeval, indent=1, ensure_ascii=False)
    read_back = read("rows.json", text, "deepeval")
    assert got(read_back) == expected(rows)
    assert [r.line for r in read_back] == [n for n, line in enumerate(text.split("\n"), 1) if line == " {"]
