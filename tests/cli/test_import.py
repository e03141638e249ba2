"""``groundeval import``: each format's rows become a dataset that loads, runs and gates (docs/byo.md, "Import")."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

# In-process pytest runs load the plugin and the history package; imported once here first, as
# tests/plugin/conftest.py explains, so SQLAlchemy's modules are never imported twice.
import pytest_groundeval.history.migrations  # noqa: F401
from pytest_groundeval.cli import main as groundeval
from pytest_groundeval.core.dataset import load_dataset
from pytest_groundeval.core.kinds.citation import CitationItem
from tests._support.pytest_args import NO_THIRD_PARTY_PLUGINS

# Two answered rows citing their contexts rightly, one question without an answer (a live question).
GOOD = [
    {
        "question": "Who founded the fibre cooperative?",
        "answer": "Åsa Lindqvist founded it in 2019 [1].",
        "contexts": ["Åsa Lindqvist founded the village fibre cooperative in 2019.", "It has 40 members."],
        "reference": "Åsa Lindqvist",
    },
    {
        "question": "How many members does it have?",
        "answer": "It has 40 members [2], founded in 2019 [1].",
        "contexts": ["Åsa Lindqvist founded the village fibre cooperative in 2019.", "It has 40 members."],
        "reference": None,
    },
]


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def source_file(fmt: str, directory: Path) -> Path:
    """GOOD written as each tool writes it (its documented column names and file form)."""
    if fmt == "csv":
        return write_csv(
            directory / "rows.csv",
            ["question", "answer", "contexts", "reference"],
            [[r["question"], r["answer"], json.dumps(r["contexts"]), r["reference"] or ""] for r in GOOD],
        )
    if fmt == "jsonl":
        return write_jsonl(directory / "rows.jsonl", GOOD)
    if fmt == "ragas":  # ragas v0.2 EvaluationDataset.to_jsonl: SingleTurnSample fields, and a metric column
        rows = [
            {
                "user_input": r["question"],
                "response": r["answer"],
                "retrieved_contexts": r["contexts"],
                "reference": r["reference"],
                "faithfulness": 1.0,
            }
            for r in GOOD
        ]
        return write_jsonl(directory / "ragas.jsonl", rows)
    if fmt == "ragas-csv":  # ragas v0.1 columns through pandas' to_csv: lists as Python reprs
        return write_csv(
            directory / "ragas.csv",
            ["question", "answer", "contexts", "ground_truth"],
            [[r["question"], r["answer"], repr(r["contexts"]), r["reference"] or ""] for r in GOOD],
        )
    if fmt == "deepeval":  # EvaluationDataset JSON: a list of test cases
        rows = [
            {
                "input": r["question"],
                "actual_output": r["answer"],
                "retrieval_context": r["contexts"],
                "expected_output": r["reference"],
                "context": None,
            }
            for r in GOOD
        ]
        path = directory / "deepeval.json"
        path.write_text(json.dumps(rows, indent=2, ensure_ascii=False), encoding="utf-8")
        return path
    if fmt == "deepeval-csv":  # EvaluationDataset.save_as("csv"): contexts joined with "|"
        return write_csv(
            directory / "deepeval.csv",
            ["input", "actual_output", "expected_output", "context", "source_file"],
            [[r["question"], r["answer"], r["reference"] or "", "|".join(r["contexts"]), "notes.txt"] for r in GOOD],
        )
    raise AssertionError(fmt)


def run_import(*args: str) -> int:
    return groundeval(["import", *map(str, args)])


FORMS = ["csv", "jsonl", "ragas", "ragas-csv", "deepeval", "deepeval-csv"]
"""Each format in each of its tools' file forms."""


def check_round_trip(fmt: str, source: Path, out: Path, printed: pytest.CaptureResult[str]) -> None:
    """The dataset imported from ``source`` holds GOOD's rows exactly, and says where each came from."""
    assert "imported 2 row(s)" in printed.out and "2 recorded answer(s), 0 live question(s)" in printed.out
    dataset = load_dataset(out)  # hashes checked, every item validated
    assert [type(item) for item in dataset.items] == [CitationItem, CitationItem]
    for item, row in zip(dataset.items, GOOD):
        assert item.question == row["question"] and item.response is not None
        assert item.response.answer == row["answer"]
        assert [(s.marker, s.text) for s in item.response.sources] == [
            ("1", row["contexts"][0]),
            ("2", row["contexts"][1]),
        ]
        assert item.origin is not None and item.origin.get("reference") == row["reference"]
        assert item.tags == ["imported", "recorded"]
    lines = [item.origin["line"] for item in dataset.items]
    text = source.read_text(encoding="utf-8").splitlines()
    # Each origin names the line its row starts on: the header is line 1 of a CSV file, a JSON array's "[" of a .json.
    objects = [number for number, line in enumerate(text, 1) if line == "  {"]  # json.dumps(indent=2)'s elements
    assert lines == {".csv": [2, 3], ".jsonl": [1, 2], ".json": objects}[source.suffix]
    corpus = json.loads((out / "corpus" / "contexts.json").read_text(encoding="utf-8"))
    assert [record["text"] for record in corpus] == GOOD[0]["contexts"]  # distinct contexts, once each
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert f"`{source.name}`" in readme and "| rows | 2 (2 with a recorded answer, 0 live question(s)) |" in readme
    if fmt == "ragas":
        assert "faithfulness" in printed.err  # an unknown column is ignored, never silently


def test_each_format_round_trips_and_its_dataset_runs_and_gates(pytester, capsys):
    outs = []
    for form in FORMS:
        source = source_file(form, pytester.path)
        out = pytester.path / f"imported-{form}"
        assert run_import(source, "--format", form.split("-")[0], "--out", out) == 0, form
        check_round_trip(form, source, out, capsys.readouterr())
        outs.append(out)
    # One session over the six datasets (each gated on its own) rather than six sessions.
    result = pytester.runpytest(*NO_THIRD_PARTY_PLUGINS, "-p", "no:cacheprovider", *map(str, outs))
    result.assert_outcomes(passed=2 * len(FORMS))
    text = result.stdout.str()
    assert text.count("gate imported-1: PASS") == len(FORMS) and "FAIL" not in text
    assert text.count("citationMetadataAccuracy         1.0000 [0.3424, 1.0000] >= 0.9000       PASS") == len(
        FORMS
    )  # Wilson 2/2
    result.stdout.fnmatch_lines(["gate: PASS"])
    assert result.ret == pytest.ExitCode.OK


def test_an_answer_citing_a_context_it_was_not_given_fails_the_gate(pytester, capsys):
    rows = [*GOOD, {"question": "When was it founded?", "answer": "In 2019 [3].", "contexts": GOOD[0]["contexts"]}]
    out = pytester.path / "imported"
    assert run_import(write_jsonl(pytester.path / "rows.jsonl", rows), "--format", "jsonl", "--out", out) == 0
    # With the mock's judge too (docs/citation.md): it judges each cited paragraph against the contexts it
    # cites, and the deterministic checks still decide the items.
    result = pytester.runpytest(
        *NO_THIRD_PARTY_PLUGINS, "-p", "no:cacheprovider", f"--eval-dataset={out}", "--eval-judge=mock"
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*missingSource: [[]3] names no source (known: [[]1], [[]2])*",
            "citationMetadataAccuracy*0.6667 [[]*] >= 0.9000*FAIL*",
            "citation judge mock-judge: 3 paragraph(s): supported 2, *wrong_attribution 1, unparseable 0, unjudged 0",
            "gate: FAIL",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_answers_without_markers_are_reported_and_live_asks_the_questions(pytester, capsys):
    rows = [{"question": "Who founded it?", "answer": "Åsa Lindqvist did.", "contexts": GOOD[0]["contexts"]}]
    source = write_jsonl(pytester.path / "rows.jsonl", rows)
    assert run_import(source, "--format", "jsonl", "--out", pytester.path / "kept") == 0
    assert "1 recorded answer(s) cite no [N] marker; those items will fail" in capsys.readouterr().out
    assert run_import(source, "--format", "jsonl", "--out", pytester.path / "live", "--live") == 0
    (item,) = load_dataset(pytester.path / "live").items
    assert isinstance(item, CitationItem) and item.response is None and item.tags == ["imported", "live"]


PROMPTFOO_YAML = """\
description: the support bot
prompts: [file://prompt.txt]
providers: [openai:gpt-4.1-mini]
tests:
  - description: founder
    vars:
      query: Who founded the village fibre cooperative?
      context:
        - Åsa Lindqvist founded the village fibre cooperative in 2019.
        - The cooperative has 40 members.
    assert:
      - type: contains
        value: Lindqvist
      - type: factuality
        value: Åsa Lindqvist founded it.
  - vars:
      query: How many members does the cooperative have?
      context: The cooperative has 40 members.
    assert:
      - type: context-recall
        value: It has 40 members.
"""


def test_promptfoo_test_cases_become_live_questions_that_run_against_the_mock(pytester, capsys):
    # promptfoo's test cases carry vars and assertions, never an answer: every row is a live question,
    # answered here by the default target (the reference server on the mock provider).
    source = pytester.path / "promptfooconfig.yaml"
    source.write_text(PROMPTFOO_YAML, encoding="utf-8")
    out = pytester.path / "imported"
    assert run_import(source, "--format", "promptfoo", "--out", out) == 0
    printed = capsys.readouterr().out
    assert "0 recorded answer(s), 2 live question(s), 2 distinct context(s)" in printed
    # A live answer is checked for its citations only; the command says what measures the rest.
    assert "note: 2 live question(s): their answers are checked for citations" in printed and "judge" in printed
    items = load_dataset(out).items
    assert [(i.question, i.origin["line"], i.origin.get("reference")) for i in items] == [
        ("Who founded the village fibre cooperative?", 5, "Åsa Lindqvist founded it."),
        ("How many members does the cooperative have?", 16, "It has 40 members."),
    ]
    # The same test cases as promptfoo's JSON form read the same.
    as_json = pytester.path / "tests.json"
    import yaml

    as_json.write_text(json.dumps(yaml.safe_load(PROMPTFOO_YAML)["tests"]), encoding="utf-8")
    assert run_import(as_json, "--format", "promptfoo", "--out", pytester.path / "from-json") == 0
    assert [i.question for i in load_dataset(pytester.path / "from-json").items] == [i.question for i in items]

    result = pytester.runpytest(*NO_THIRD_PARTY_PLUGINS, "-p", "no:cacheprovider", f"--eval-dataset={out}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*lineage generate=mock-generate*", "citationMetadataAccuracy*1.0000*PASS*", "gate: PASS"]
    )


def test_map_renames_a_plain_csv_s_columns(tmp_path, capsys):
    source = write_csv(
        tmp_path / "export.csv",
        ["ask", "said", "passages"],
        [["Who founded it?", "Åsa did [1].", '["Åsa founded it."]']],
    )
    out = tmp_path / "out"
    assert (
        run_import(
            source,
            "--format",
            "csv",
            "--out",
            out,
            "--map",
            "ask=question",
            "--map",
            "said=answer",
            "--map",
            "passages=contexts",
        )
        == 0
    )
    (item,) = load_dataset(out).items
    assert item.question == "Who founded it?" and item.response.sources[0].text == "Åsa founded it."
    assert run_import(source, "--format", "csv", "--out", tmp_path / "x", "--map", "asked=question") == 2
    assert "--map asked=…: no column 'asked' in the file (columns: ask, passages, said)" in capsys.readouterr().err


def test_bad_rows_are_each_named_by_line_and_column_and_nothing_is_written(tmp_path, capsys):
    source = write_csv(
        tmp_path / "rows.csv",
        ["id", "question", "answer", "contexts"],
        [
            ["ok-1", "Fine?", "Yes [1].", '["a"]'],
            ["ok-2", "", "No question", '["a"]'],
            ["bad id", "Bad id?", "", ""],
            ["ok-3", "Contexts?", "x", '["a", 3]'],
            ["ok-1", "Again?", "", ""],
        ],
    )
    out = tmp_path / "out"
    assert run_import(source, "--format", "csv", "--out", out) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[:5] == [
        "groundeval import: rows.csv:3: column 'question': missing or empty: every row needs a question",
        "also: rows.csv:4: column 'id': 'bad id' is not an item id: letters, digits, '-' and '_' only (docs/dataset.md)",
        "also: rows.csv:5: column 'contexts': context 2 is a number, not a string",
        "also: rows.csv:6: column 'id': id 'ok-1' is already the id of the row on line 2",
        "nothing written",
    ]
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]


@pytest.mark.parametrize(
    ("name", "content", "fmt", "expected"),
    [
        (
            "rows.jsonl",
            '{"question": "a?"}\n{"question": "b?", }\n',
            "jsonl",
            "rows.jsonl:2: invalid JSON at column 20: Expecting property name enclosed in double quotes",
        ),
        (
            "rows.jsonl",
            '{"question": "a?", "question": "b?"}\n',
            "jsonl",
            "rows.jsonl:1: field 'question': given twice in one object",
        ),
        (
            "rows.json",
            '[\n {"input": "a?"},\n {"input": 3}\n]',
            "deepeval",
            "rows.json:3: field 'input': expected a non-empty string, got a number",
        ),
        (
            "rows.json",
            '[\n {"input": "a?",\n  "retrieval_context": "one"},\n 7\n]',
            "deepeval",
            "rows.json:4: expected an object (one row), got a number",
        ),
        (
            "tests.yaml",
            "tests:\n  - vars:\n      question: a?\n  - vars:\n      context: [x]\n",
            "promptfoo",
            "tests.yaml:4: field 'vars.query': missing or empty: every row needs a question (also looked for 'question')",
        ),
        (
            "config.json",
            '{"tests": "file://tests.csv"}',
            "promptfoo",
            "config.json: field 'tests': the config's test cases: refers to 'file://tests.csv'; import that file",
        ),
        ("rows.txt", "question\n", "ragas", "rows.txt: --format ragas reads files ending in .csv, .json, .jsonl"),
        ("rows.csv", "question,answer\na?\n", "csv", "rows.csv:2: 1 cell(s) where the header has 2"),
        (
            "rows.csv",
            "question,contexts\na?,[not json\n",
            "csv",
            "rows.csv:2: column 'contexts': starts with '[' but is neither a JSON array nor a Python list of strings",
        ),
    ],
)
def test_unreadable_rows_are_usage_errors_naming_line_and_field(tmp_path, capsys, name, content, fmt, expected):
    (tmp_path / name).write_text(content, encoding="utf-8")
    assert run_import(tmp_path / name, "--format", fmt, "--out", tmp_path / "out") == 2
    assert capsys.readouterr().err.splitlines()[0] == f"groundeval import: {expected}"
    assert not (tmp_path / "out").exists()


def test_a_non_empty_out_is_refused(tmp_path, capsys):
    source = write_jsonl(tmp_path / "rows.jsonl", GOOD)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    assert run_import(source, "--format", "jsonl", "--out", tmp_path / "out") == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]
    (tmp_path / "empty").mkdir()
    assert run_import(source, "--format", "jsonl", "--out", tmp_path / "empty") == 0  # an empty directory is fine
    assert len(load_dataset(tmp_path / "empty").items) == 2


def test_numbered_ids_step_around_a_row_s_own_id(tmp_path):
    source = write_csv(
        tmp_path / "rows.csv", ["id", "question"], [["", "First?"], ["csv-0001", "Second?"], ["", "Third?"]]
    )
    assert run_import(source, "--format", "csv", "--out", tmp_path / "out") == 0
    assert [item.id for item in load_dataset(tmp_path / "out").items] == ["csv-0001x", "csv-0001", "csv-0003"]
