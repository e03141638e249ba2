"""Rows of another tool's file, read into one shape (docs/byo.md, "Import").

A row is a question, an optional recorded answer, its contexts (the passages the
answer was made from) and an optional reference answer. Each format names them as
its tool documents them:

| format | question | answer | contexts | reference |
|---|---|---|---|---|
| ``csv``, ``jsonl`` | ``question`` | ``answer`` | ``contexts`` | ``reference`` |
| ``ragas`` | ``question`` / ``user_input`` | ``answer`` / ``response`` | ``contexts`` / ``retrieved_contexts`` | ``ground_truth`` / ``reference`` / ``ground_truths`` |
| ``deepeval`` | ``input`` | ``actual_output`` | ``retrieval_context`` / ``context`` | ``expected_output`` |
| ``promptfoo`` | ``vars.query`` / ``vars.question`` | — | ``vars.context`` | the ``value`` of a ``factuality``, ``context-recall``, ``similar`` or ``equals`` assertion |

Where a format has two names for one field, the first present (and not null) wins.
A column ``id`` gives the item's id in every format. ``--map OLD=NEW`` renames a
column (for promptfoo: a var) before these names are looked up.

Containers: ``csv`` is a CSV file with a header row, ``jsonl`` one JSON object per
line; ``ragas`` and ``deepeval`` read ``.csv``, ``.json`` (an array of objects) or
``.jsonl``; ``promptfoo`` reads its test cases as ``.json`` (an array of test cases,
or a config object with a ``tests`` array), ``.jsonl`` or ``.yaml``/``.yml`` (the
last needs PyYAML, the ``yaml`` extra). A list in a CSV cell is a JSON array, a
Python list as pandas writes one (``['a', 'b']``), or, for deepeval, the cell split
on ``|`` as ``EvaluationDataset.save_as`` joins it; any other cell is one context.

Every problem is collected with the row's line (the line its record starts on) and
the column or field, and ``RowsError`` reports them all: a bad row is never skipped.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.kinds.base import ID_PATTERN

__all__ = ["FORMATS", "Problem", "Row", "Rows", "RowsError", "read_rows"]

FORMATS = ("csv", "jsonl", "ragas", "deepeval", "promptfoo")
"""The formats ``groundeval import --format`` reads."""

FIELDS = ("id", "question", "answer", "contexts", "reference")
"""The one shape every format is read into."""

_PLAIN: dict[str, tuple[str, ...]] = {
    "id": ("id",),
    "question": ("question",),
    "answer": ("answer",),
    "contexts": ("contexts",),
    "reference": ("reference",),
}

NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "csv": _PLAIN,
    "jsonl": _PLAIN,
    # ragas v0.1 (question/answer/contexts/ground_truth(s)) and v0.2's SingleTurnSample
    # (user_input/response/retrieved_contexts/reference).
    "ragas": {
        "id": ("id",),
        "question": ("question", "user_input"),
        "answer": ("answer", "response"),
        "contexts": ("contexts", "retrieved_contexts"),
        "reference": ("ground_truth", "reference", "ground_truths"),
    },
    # deepeval's LLMTestCase / Golden fields, as EvaluationDataset.save_as writes them;
    # retrieval_context is what the system retrieved, context the ideal one (used when
    # there is no retrieval_context).
    "deepeval": {
        "id": ("id",),
        "question": ("input",),
        "answer": ("actual_output",),
        "contexts": ("retrieval_context", "context"),
        "reference": ("expected_output",),
    },
    # promptfoo test cases: https://www.promptfoo.dev/docs/configuration/test-cases (vars and
    # assert), and the RAG assertions' `query` and `context` vars,
    # https://promptfoo.dev/docs/configuration/expected-outputs/model-graded/context-faithfulness
    "promptfoo": {
        "id": ("id",),
        "question": ("query", "question"),
        "answer": (),  # a test case holds no output: every promptfoo row is a live question
        "contexts": ("context",),
        "reference": (),
    },
}
"""Per format, per field: the column names, in order of preference (module docstring)."""

REFERENCE_ASSERTIONS = ("factuality", "context-recall", "similar", "equals")
"""promptfoo assertion types whose string ``value`` is a reference answer."""

LIST_SEPARATORS = {"deepeval": "|"}
"""How a format joins a list into one CSV cell when it does not write JSON (deepeval's ``save_as``)."""

CONTAINERS: dict[str, dict[str, str]] = {
    "csv": {"": "csv"},
    "jsonl": {"": "jsonl"},
    "ragas": {".csv": "csv", ".json": "json", ".jsonl": "jsonl"},
    "deepeval": {".csv": "csv", ".json": "json", ".jsonl": "jsonl"},
    "promptfoo": {".json": "json", ".jsonl": "jsonl", ".yaml": "yaml", ".yml": "yaml"},
}
"""How each format's file is read, by file extension (``""``: whatever the extension)."""

MAX_SHOWN = 5
"""Problems quoted in a ``RowsError`` message; the rest are counted."""

_ID = re.compile(ID_PATTERN)
_WS = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True)
class Row:
    """One row of the source file in the one shape a dataset is built from."""

    line: int
    """1-based line of the file where the row's record starts."""
    id: str | None
    """The row's own id (column ``id``), or None."""
    question: str
    """The question (non-empty)."""
    answer: str | None
    """The recorded answer, or None (empty counts as none)."""
    contexts: tuple[str, ...]
    """The contexts the answer was made from, in order (each non-empty)."""
    reference: str | None
    """The reference answer, or None."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the file: where (line, column or field) and what."""

    line: int | None
    """1-based line, or None for the file as a whole (or a command-line option)."""
    where: str
    """``column 'x'`` (CSV), ``field 'x'`` (JSON, YAML), or ``""``."""
    message: str
    """What is wrong, in plain words."""

    def text(self, name: str) -> str:
        """The problem as one line: ``FILE:LINE: WHERE: MESSAGE``."""
        place = f"{name}:{self.line}" if self.line is not None else name
        return f"{place}: {self.where}: {self.message}" if self.where else f"{place}: {self.message}"


class RowsError(Exception):
    """The file cannot be imported. ``problems`` lists every problem found, in line order."""

    def __init__(self, path: Path, problems: list[Problem]) -> None:
        self.path = path
        self.problems = problems
        lines = [problems[0].text(path.name)] + [f"also: {p.text(path.name)}" for p in problems[1:MAX_SHOWN]]
        if len(problems) > MAX_SHOWN:
            lines.append(f"and {len(problems) - MAX_SHOWN} more problem(s)")
        super().__init__("\n".join(lines))


@dataclass
class Rows:
    """What ``read_rows`` read."""

    rows: list[Row]
    """The rows, in file order."""
    container: str
    """How the file was read: ``csv``, ``json``, ``jsonl`` or ``yaml``."""
    ignored: list[str] = field(default_factory=list)
    """Source columns (promptfoo: vars) that no field of the format names, sorted."""


def container_of(path: Path, fmt: str) -> str | None:
    """How ``fmt`` reads ``path`` (``CONTAINERS``), or None when the extension is not one it reads."""
    by_suffix = CONTAINERS[fmt]
    return by_suffix.get("") or by_suffix.get(path.suffix.lower())


def read_rows(
    path: Path, fmt: str, *, renames: dict[str, str] | None = None, list_separator: str | None = None
) -> Rows:
    """Read every row of ``path`` as ``fmt`` (module docstring).

    Args:
        path: The file.
        fmt: One of ``FORMATS``.
        renames: ``--map`` renames, old column name → new; each old name must be a column of the file.
        list_separator: Split CSV list cells on this string (default: the format's, ``LIST_SEPARATORS``).

    Returns:
        The rows and the ignored columns.

    Raises:
        RowsError: Anything wrong with the file or any row (all problems, each with its line),
            an extension ``fmt`` does not read, or a ``renames`` name not in the file.
        OSError: The file cannot be read.
    """
    container = container_of(path, fmt)
    if container is None:
        accepted = ", ".join(sorted(CONTAINERS[fmt]))
        raise RowsError(path, [Problem(None, "", f"--format {fmt} reads files ending in {accepted}")])
    text = _decode(path, path.read_bytes())
    problems: list[Problem] = []
    records = list(_records(text, container, fmt, problems))
    renames = renames or {}
    seen: set[str] = set()
    for _, record, _ in records:
        seen.update(record)
    for old in renames:
        if old not in seen:
            kind = "var" if fmt == "promptfoo" else "column"
            listing = ", ".join(sorted(seen)) or "none"
            problems.append(Problem(None, "", f"--map {old}=…: no {kind} {old!r} in the file ({kind}s: {listing})"))
    names = NAMES[fmt]
    known = {name for aliases in names.values() for name in aliases}
    separator = list_separator if list_separator is not None else LIST_SEPARATORS.get(fmt)
    rows: list[Row] = []
    ignored: set[str] = set()
    ids: dict[str, int] = {}
    for line, record, reference in records:
        renamed = {renames.get(key, key): value for key, value in record.items()}
        ignored.update(key for key in renamed if key not in known)
        row = _row(line, renamed, names, reference, container, fmt, separator, problems)
        if row is None:
            continue
        if row.id is not None:
            if row.id in ids:
                problems.append(Problem(line, _where("id", container, fmt), f"id {row.id!r} is already the id of the row on line {ids[row.id]}"))  # fmt: skip
            ids.setdefault(row.id, line)
        rows.append(row)
    if not records and not problems:
        problems.append(Problem(None, "", "no rows"))
    if problems:
        problems.sort(key=lambda p: (p.line is not None, p.line or 0))
        raise RowsError(path, problems)
    return Rows(rows=rows, container=container, ignored=sorted(ignored))


# --------------------------------------------------------------------------- reading


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise RowsError(
            path, [Problem(line, "", f"not valid UTF-8 at byte offset {exc.start} ({exc.reason})")]
        ) from None


Record = tuple[int, dict[str, Any], "tuple[str, Any] | None"]
"""A row's start line, its columns (promptfoo: its vars) and, for promptfoo, ``(where, value)`` of its reference."""


def _records(text: str, container: str, fmt: str, problems: list[Problem]) -> Iterator[Record]:
    if container == "csv":
        yield from _csv_records(text, problems)
        return
    if container == "jsonl":
        objects = _jsonl_objects(text, problems)
    elif container == "json":
        objects = _json_array_objects(text, problems, fmt)
    else:
        objects = _yaml_objects(text, problems)
    for line, value in objects:
        if fmt == "promptfoo":
            record = _promptfoo_record(line, value, problems)
            if record is not None:
                yield record
        elif isinstance(value, dict):
            yield line, value, None
        else:
            problems.append(Problem(line, "", f"expected an object (one row), got {_json_type(value)}"))


def _csv_records(text: str, problems: list[Problem]) -> Iterator[Record]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    while True:
        start = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.append(Problem(start, "", f"unreadable CSV: {exc}"))
            return
        if not cells:
            continue  # a blank line
        if header is None:
            header = cells
            first: dict[str, int] = {}
            for index, name in enumerate(cells, 1):
                if not name.strip():
                    problems.append(Problem(start, "", f"header cell {index} is empty: every column needs a name"))
                elif name in first:
                    problems.append(Problem(start, f"column {name!r}", f"named twice (cells {first[name]} and {index})"))  # fmt: skip
                first.setdefault(name, index)
            continue
        if len(cells) != len(header):
            problems.append(Problem(start, "", f"{len(cells)} cell(s) where the header has {len(header)}"))
            continue
        yield start, {name: (cell if cell != "" else None) for name, cell in zip(header, cells)}, None


def _duplicates_hook(found: list[str]) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                found.append(key)
            result[key] = value
        return result

    return hook


def _jsonl_objects(text: str, problems: list[Problem]) -> Iterator[tuple[int, Any]]:
    # Split on "\n" only (JSON Lines' separator; a "\r" before it is JSON whitespace): str.splitlines would
    # also split inside a string holding U+2028 or U+0085, which JSON writes unescaped with ensure_ascii=False.
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        duplicates: list[str] = []
        try:
            value = json.loads(line, object_pairs_hook=_duplicates_hook(duplicates))
        except json.JSONDecodeError as exc:
            problems.append(Problem(number, "", f"invalid JSON at column {exc.colno}: {exc.msg}"))
            continue
        except (ValueError, RecursionError) as exc:
            problems.append(Problem(number, "", f"unreadable JSON: {exc}"))
            continue
        if duplicates:
            problems.append(Problem(number, f"field {duplicates[0]!r}", "given twice in one object"))
            continue
        yield number, value


def _json_array_objects(text: str, problems: list[Problem], fmt: str) -> Iterator[tuple[int, Any]]:
    """The elements of a JSON array (for promptfoo, also a config object's ``tests`` array), with their lines."""
    duplicates: list[str] = []
    decoder = json.JSONDecoder(object_pairs_hook=_duplicates_hook(duplicates))
    start = _WS.match(text, 0).end()  # type: ignore[union-attr]  # matches the empty string at worst
    if fmt == "promptfoo" and text.startswith("{", start):
        # A promptfoo config written as JSON: its `tests` array holds the test cases.
        try:
            config, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError) as exc:
            problems.append(_json_problem(exc))
            return
        tests = config.get("tests")
        if not isinstance(tests, list):
            described = (
                f"refers to {tests!r}; import that file" if isinstance(tests, str) else "is missing or not an array"
            )
            problems.append(Problem(None, "field 'tests'", f"the config's test cases: {described}"))
            return
        start = _locate_tests_array(text, start)
        if start is None:
            problems.append(Problem(None, "field 'tests'", "could not be located in the file"))
            return
        duplicates.clear()
    if not text.startswith("[", start):
        problems.append(Problem(None, "", "expected a JSON array of objects, one per row (or use a .jsonl file)"))
        return
    line = 1 + text.count("\n", 0, start)
    position, counted = start + 1, start
    while True:
        position = _WS.match(text, position).end()  # type: ignore[union-attr]
        if text.startswith("]", position):
            return
        line += text.count("\n", counted, position)
        counted = position
        duplicates.clear()
        try:
            value, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError) as exc:
            problems.append(_json_problem(exc, line))
            return
        if duplicates:
            problems.append(Problem(line, f"field {duplicates[0]!r}", "given twice in one object"))
        else:
            yield line, value
        position = _WS.match(text, end).end()  # type: ignore[union-attr]
        if text.startswith(",", position):
            position += 1
        elif not text.startswith("]", position):
            line += text.count("\n", counted, position)
            problems.append(Problem(line, "", "invalid JSON: expected ',' or ']' after an element"))
            return


def _locate_tests_array(text: str, start: int) -> int | None:
    """Offset of the ``[`` of the top-level ``"tests"`` array of the object at ``start``, or None."""
    decoder = json.JSONDecoder()
    position = start + 1
    while True:
        position = _WS.match(text, position).end()  # type: ignore[union-attr]
        key, position = decoder.raw_decode(text, position)
        position = _WS.match(text, position).end() + 1  # type: ignore[union-attr]  # past ':'
        position = _WS.match(text, position).end()  # type: ignore[union-attr]
        if key == "tests":
            return position
        _, position = decoder.raw_decode(text, position)
        position = _WS.match(text, position).end()  # type: ignore[union-attr]
        if not text.startswith(",", position):
            return None
        position += 1


def _json_problem(exc: Exception, line: int | None = None) -> Problem:
    if isinstance(exc, json.JSONDecodeError):
        return Problem(exc.lineno, "", f"invalid JSON at column {exc.colno}: {exc.msg}")
    return Problem(line, "", f"unreadable JSON: {exc}")


def _yaml_objects(text: str, problems: list[Problem]) -> Iterator[tuple[int, Any]]:
    """The test cases of a promptfoo YAML file (a list, or a config with ``tests``), with their lines."""
    try:
        import yaml
    except ImportError:
        problems.append(Problem(None, "", "reading YAML needs PyYAML: pip install 'pytest-groundeval[yaml]', "
                                          "or give promptfoo's test cases as JSON (.json or .jsonl)"))  # fmt: skip
        return
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            problems.append(Problem(mark.line + 1 if mark else None, "", f"invalid YAML: {getattr(exc, 'problem', exc)}"))  # fmt: skip
            return
        if isinstance(node, yaml.MappingNode):
            tests = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == "tests"), None)
            if not isinstance(tests, yaml.SequenceNode):
                described = f"refers to {tests.value!r}; import that file" if isinstance(tests, yaml.ScalarNode) else "is missing or not a list"  # fmt: skip
                problems.append(Problem(None, "field 'tests'", f"the config's test cases: {described}"))
                return
            node = tests
        if not isinstance(node, yaml.SequenceNode):
            problems.append(Problem(None, "", "expected a list of test cases, or a config with a `tests` list"))
            return
        for item in node.value:
            try:
                value = loader.construct_document(item)
            except yaml.YAMLError as exc:
                problems.append(Problem(item.start_mark.line + 1, "", f"invalid YAML: {exc}"))
                continue
            yield item.start_mark.line + 1, value
    finally:
        loader.dispose()


def _promptfoo_record(line: int, case: Any, problems: list[Problem]) -> Record | None:
    """A promptfoo test case as a record: its vars, and the reference from its assertions."""
    if not isinstance(case, dict):
        problems.append(Problem(line, "", f"expected a test case (an object with `vars`), got {_json_type(case)}"))
        return None
    variables = case.get("vars", {})
    if not isinstance(variables, dict):
        problems.append(Problem(line, "field 'vars'", f"expected an object of variables, got {_json_type(variables)}"))
        return None
    reference: tuple[str, Any] | None = None
    assertions = case.get("assert") or []
    if isinstance(assertions, list):
        for index, assertion in enumerate(assertions):
            if isinstance(assertion, dict) and assertion.get("type") in REFERENCE_ASSERTIONS:
                if isinstance(assertion.get("value"), str):
                    reference = (f"field 'assert[{index}].value'", assertion["value"])
                    break
    return line, dict(variables), reference


# --------------------------------------------------------------------------- one row


def _where(name: str, container: str, fmt: str) -> str:
    if container == "csv":
        return f"column {name!r}"
    return f"field '{'vars.' if fmt == 'promptfoo' else ''}{name}'"


def _pick(record: dict[str, Any], aliases: tuple[str, ...]) -> tuple[str, Any] | None:
    for name in aliases:
        if record.get(name) is not None:
            return name, record[name]
    return None


def _row(
    line: int,
    record: dict[str, Any],
    names: dict[str, tuple[str, ...]],
    reference_found: tuple[str, Any] | None,
    container: str,
    fmt: str,
    separator: str | None,
    problems: list[Problem],
) -> Row | None:
    before = len(problems)

    def bad(name: str, message: str) -> None:
        problems.append(Problem(line, _where(name, container, fmt), message))

    question: str = ""
    picked = _pick(record, names["question"])
    if picked is None:
        bad(names["question"][0], "missing or empty: every row needs a question"
            + (f" (also looked for {', '.join(repr(n) for n in names['question'][1:])})" if len(names["question"]) > 1 else ""))  # fmt: skip
    elif not isinstance(picked[1], str) or not picked[1].strip():
        bad(picked[0], f"expected a non-empty string, got {_json_type(picked[1])}")
    else:
        question = picked[1]

    answer: str | None = None
    picked = _pick(record, names["answer"])
    if picked is not None:
        if isinstance(picked[1], str):
            answer = picked[1] if picked[1].strip() else None
        else:
            bad(picked[0], f"expected a string (the recorded answer), got {_json_type(picked[1])}")

    contexts: list[str] = []
    picked = _pick(record, names["contexts"])
    if picked is not None:
        try:
            contexts = _contexts(picked[1], container == "csv", separator)
        except ValueError as exc:
            bad(picked[0], str(exc))

    reference: str | None = None
    picked = _pick(record, names["reference"])
    if picked is not None:
        value = picked[1]
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            value = "\n\n".join(value)  # ragas v0.1's ground_truths: a list of reference answers
        if isinstance(value, str):
            reference = value if value.strip() else None
        else:
            bad(picked[0], f"expected a string (the reference answer), got {_json_type(value)}")
    elif reference_found is not None:
        reference = reference_found[1]

    row_id: str | None = None
    picked = _pick(record, names["id"])
    if picked is not None:
        value = str(picked[1]) if isinstance(picked[1], int) and not isinstance(picked[1], bool) else picked[1]
        if isinstance(value, str) and _ID.match(value):
            row_id = value
        else:
            bad(picked[0], f"{value!r} is not an item id: letters, digits, '-' and '_' only (docs/dataset.md)")

    if len(problems) > before:
        return None
    return Row(line=line, id=row_id, question=question, answer=answer, contexts=tuple(contexts), reference=reference)


def _contexts(value: Any, from_csv: bool, separator: str | None) -> list[str]:
    """The contexts of one value (module docstring). Raises ValueError with a plain message."""
    if from_csv and isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                value = json.loads(stripped)
            except ValueError:
                try:
                    value = ast.literal_eval(stripped)  # pandas writes lists as Python reprs: ['a', 'b']
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    raise ValueError(
                        "starts with '[' but is neither a JSON array nor a Python list of strings"
                    ) from None
        elif separator:
            value = value.split(separator)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"expected a list of strings (the contexts), got {_json_type(value)}")
    for index, context in enumerate(value):
        if not isinstance(context, str):
            raise ValueError(f"context {index + 1} is {_json_type(context)}, not a string")
        if not context.strip():
            raise ValueError(f"context {index + 1} is empty")
    return list(value)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "an empty string" if not value.strip() else "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
