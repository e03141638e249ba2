"""``--eval-target-map`` end to end (docs/byo.md, "Mapped targets"): an API written here, with a JSON shape of its own.

``RagApi`` is a small HTTP service that is not ours: it answers ``POST /v2/answer`` with
``{"result": {"text", "refs", "grounding"}}``, wants its key in ``X-Api-Key``, and holds
its own copy of the corpus. A map describes it; pytest runs a citation and qa dataset
against it in process. The same API citing a source it did not return fails the gate;
its key, echoed in an answer and in an error page, appears in no output.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests._support.datasets import TEMPORAL, write_dataset

KEY = "rag-key-5be1c0ffee5ecret"
DEBATE = (
    "Anna Berg (S): Every municipality should have fibre to ninety percent of households by 2030.\n\n"
    "Lars Holm (M): Subsidies should go only where no operator will build.\n"
)
FIRST = DEBATE.split("\n\n")[0]
ARGS = ("-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:anyio")

ITEMS = [
    {"id": "cit-fibre", "kind": "citation", "question": "What did Anna Berg want?", "find": "DEBATE"},
    {"id": "cit-subsidies", "kind": "citation", "question": "What did Lars Holm say about subsidies?"},
    {
        "id": "qa-fibre",
        "kind": "qa",
        "question": "What share of households should get fibre?",
        "expectedEvidence": ["ninety percent of households by 2030"],
        "truths": ["Every municipality should have fibre to ninety percent of households by 2030."],
    },
]

MAP = {
    "request": {
        "url": "{base}/v2/answer",
        "headers": {"X-Api-Key": "${RAG_KEY}"},
        "body": {"query": {"text": "{question}"}, "scope": "{find}", "trace": "{item_id}"},
    },
    "response": {
        "answer": "result.text",
        "sources": "result.refs",
        "marker": "id",
        "text": "quote",
        "metadata": {"speaker": "who.name", "party": "who.party"},
        "evidence": "result.grounding.spans[].{marker: ref, document: doc, start: begin, end: finish}",
        "claims": "result.grounding.statements[].{text: said, start: span[0], end: span[1], markers: refs, verdict: judged}",
    },
}


def _ref(n: int, paragraph: str) -> dict[str, Any]:
    name, party = paragraph.split(" (")[0], paragraph.split("(")[1][0]
    return {"id": n, "quote": paragraph, "who": {"name": name, "party": party}}


class RagApi(ThreadingHTTPServer):
    """The API under test: canned answers by question; ``bad`` makes it cite a source it did not return."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.bad = False
        self.seen: list[tuple[dict[str, Any], str | None]] = []

    def answer(self, question: str) -> tuple[int, dict[str, Any]]:
        anna, lars = DEBATE.split("\n\n")
        grounding: dict[str, Any] = {"spans": [], "statements": []}
        if question == "What did Anna Berg want?":
            cited = "[2]" if self.bad else "[1]"
            text = f"Anna Berg (S) wants fibre to ninety percent of households by 2030 {cited}."
            return 200, {"result": {"text": text, "refs": [_ref(1, anna)], "grounding": grounding}}
        if question == "What did Lars Holm say about subsidies?":
            text = "Lars Holm (M) said subsidies should go only where no operator will build [1]."
            return 200, {"result": {"text": text, "refs": [_ref(1, lars.strip())], "grounding": grounding}}
        if question == "What share of households should get fibre?":
            text = FIRST.split(": ", 1)[1] + " [S1]"
            start = DEBATE.encode().index(FIRST.encode())
            grounding = {
                "spans": [
                    {"ref": "S1", "doc": "rag/debate.txt", "begin": start, "finish": start + len(FIRST.encode())}
                ],
                "statements": [{"said": text, "span": [0, len(text.encode())], "refs": ["S1"], "judged": "supported"}],
            }
            return 200, {"result": {"text": text, "refs": [], "grounding": grounding}}
        if question == "Echo my key":
            text = f"Your key {KEY} was accepted [1]."
            return 200, {"result": {"text": text, "refs": [_ref(1, anna)], "grounding": grounding}}
        if question == "Fail loudly":
            return 500, {"error": f"upstream refused X-Api-Key: {KEY}"}
        return 200, {"result": {"txt": "an answer under a key the map does not read"}}


class _Handler(BaseHTTPRequestHandler):
    server: RagApi

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append((body, self.headers.get("X-Groundeval-Item-Id")))
        if self.headers.get("X-Api-Key") != KEY:
            status, reply = 401, {"error": "no key"}
        else:
            status, reply = self.server.answer(body["query"]["text"])
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def rag_api() -> Iterator[RagApi]:
    """The test's own API, on loopback, for the module's runs."""
    server = RagApi()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def api(rag_api: RagApi, monkeypatch: pytest.MonkeyPatch) -> RagApi:
    """``rag_api`` reset, with its key in ``RAG_KEY`` (the map's ``${RAG_KEY}``)."""
    rag_api.bad = False
    rag_api.seen = []
    monkeypatch.setenv("RAG_KEY", KEY)
    return rag_api


def dataset(root: Path, items: list[dict[str, Any]] = ITEMS) -> Path:
    return write_dataset(
        root,
        items,
        files={"debate.txt": DEBATE.encode()},
        corpus=[{"name": "rag/debate.txt", "label": "DEBATE", "file": "debate.txt", "format": "text"}],
        extra={
            "mentionPattern": r"(?P<speaker>[A-Z][a-z]+ [A-Z][a-z]+) \((?P<party>[A-Z])\)",
            "floors": {"citationMetadataAccuracy": 1.0},
        },
    )


def map_file(root: Path, api: RagApi, data: dict[str, Any] = MAP) -> Path:
    path = root / "rag-map.json"
    path.write_text(json.dumps(data).replace("{base}", api.url), encoding="utf-8")
    return path


@pytest.mark.parametrize("workers", [None, "2"])
def test_a_mapped_api_passes_a_citation_and_qa_run(pytester, api, workers):
    ds, target_map = dataset(pytester.path / "ds"), map_file(pytester.path, api)
    xdist = ("-n", workers) if workers else ("-p", "no:xdist")
    result = pytester.runpytest(
        *ARGS, *xdist, f"--eval-dataset={ds}", f"--eval-target-map={target_map}", "--eval-report=r.json", "-v"
    )
    result.assert_outcomes(passed=3)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*gate: PASS*"])
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    metrics = report["metrics"]
    assert metrics["citationMetadataAccuracy"] == 1.0 and metrics["retrievalRecall"] == 1.0
    assert metrics["claimSupportPrecision"] == 1.0 and metrics["errors"] == 0
    sent = {body["trace"]: (body["scope"], item) for body, item in api.seen}
    assert sent == {"cit-fibre": ("DEBATE", "cit-fibre"), "cit-subsidies": (None, "cit-subsidies"),
                    "qa-fibre": (None, "qa-fibre")}  # fmt: skip
    fibre = next(o for o in report["items"] if o["id"] == "cit-fibre")
    assert fibre["extra"]["evidence"] == [
        {"marker": "1", "document": "", "start": None, "end": None, "text": FIRST}
    ]  # the mapped source, shown in the drill-down


def test_the_api_citing_a_source_it_did_not_return_fails_the_gate(pytester, api, monkeypatch):
    api.bad = True
    ds, target_map = dataset(pytester.path / "ds"), map_file(pytester.path, api)
    monkeypatch.setenv("GROUNDEVAL_TARGET_MAP", str(target_map))  # the environment spelling of the option
    result = pytester.runpytest(*ARGS, f"--eval-dataset={ds}", "-rf")
    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*citationMetadataAccuracy*0.5000 [[]*] >= 1.0000*FAIL*", "*gate: FAIL*"])
    result.stdout.fnmatch_lines(["*cit-fibre*", "*2*"])
    assert "missing" in result.stdout.str().lower()


EXPECTS_ANNA = {**ITEMS[0], "sources": [{"marker": "1", "metadata": {"speaker": "Anna Berg"}}]}


@pytest.mark.parametrize(
    ("item", "response", "finding"),
    [
        (EXPECTS_ANNA, {}, None),
        ({**EXPECTS_ANNA, "sources": [{"marker": "S1", "metadata": {"speaker": "Anna Berg"}}]}, {},
         "expectedSource: [[]S1] (speaker 'Anna Berg') matches no source the target returned (returned: [[]1])"),
        (EXPECTS_ANNA, {"metadata": {"speaker": "who.party"}},
         "expectedSource: [[]1] (speaker 'Anna Berg'): the target's source [[]1] has speaker 'S'"),
    ],
    ids=["met", "marker-the-target-never-returns", "map-reads-the-wrong-field"],
)  # fmt: skip
def test_an_expected_source_the_answer_does_not_show_fails_the_item(pytester, api, item, response, finding):
    """An item's expected source metadata is checked against what the target returned, never ignored."""
    target_map = map_file(pytester.path, api, {**MAP, "response": {**MAP["response"], **response}})
    ds = dataset(pytester.path / "ds", [item])
    result = pytester.runpytest(*ARGS, "-p", "no:xdist", f"--eval-dataset={ds}", f"--eval-target-map={target_map}")
    if finding is None:
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*citationMetadataAccuracy*1.0000*PASS*", "gate: PASS"])
        return
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{finding}*", "*citationMetadataAccuracy*0.0000 [[]*FAIL*", "gate: FAIL"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_the_key_and_broken_answers_stay_out_of_every_output(pytester, api):
    items = [
        {"id": "cit-echo", "kind": "citation", "question": "Echo my key"},
        {"id": "cit-boom", "kind": "citation", "question": "Fail loudly"},
        {"id": "cit-unreadable", "kind": "citation", "question": "Anything else"},
        {**TEMPORAL, "id": "temporal-price"},
    ]
    ds, target_map = dataset(pytester.path / "ds", items), map_file(pytester.path, api)
    result = pytester.runpytest(
        *ARGS, f"--eval-dataset={ds}", f"--eval-target-map={target_map}", "--eval-report=r.json",
        "--junitxml=j.xml", "--eval-markdown=m.md", "--eval-html=r.html", "-v", "-rA",
    )  # fmt: skip
    result.assert_outcomes(passed=1, errors=3)
    out = result.stdout.str() + result.stderr.str()
    # The unreadable answer names the expression and shows the start of the body.
    assert "the target map's response.answer 'result.text' gave null, not a string" in out
    assert 'body: \'{"result": {"txt": "an answer under a key the map does not read"}}\'' in out
    # A kind the map cannot answer is an error saying so, and no call.
    assert "temporal items write and query records" in out
    assert "returned an error status (HTTP 500)" in out and "X-Api-Key: ***" in out
    assert [body["trace"] for body, _ in api.seen if body["trace"] == "temporal-price"] == []
    written = [out] + [
        (pytester.path / name).read_text(encoding="utf-8") for name in ("r.json", "j.xml", "m.md", "r.html")
    ]
    for text in written:
        assert KEY not in text and KEY[:10] not in text and KEY[-10:] not in text
    assert "Your key *** was accepted" in written[1]  # the echoed answer, masked in the report


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"response": {**MAP["response"], "answr": "result.text"}}, "response.answr: unknown key"),
        ({"response": {**MAP["response"], "sources": "result.refs["}}, "response.sources: 'result.refs[' is not a valid JMESPath"),
        ({"request": {**MAP["request"], "headers": {"X-Api-Key": "${RAG_KEY_UNSET}"}}},
         "request.headers.X-Api-Key: ${RAG_KEY_UNSET} is not set in the environment"),
    ],
)  # fmt: skip
def test_a_map_that_cannot_be_used_is_a_usage_error_naming_file_and_key(pytester, api, change, message):
    ds, target_map = dataset(pytester.path / "ds"), map_file(pytester.path, api, {**MAP, **change})
    result = pytester.runpytest(*ARGS, f"--eval-dataset={ds}", f"--eval-target-map={target_map}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--eval-target-map: target map {target_map}: {message}*"])
    assert api.seen == []


def test_a_map_and_another_target_is_a_usage_error(pytester, api):
    ds, target_map = dataset(pytester.path / "ds"), map_file(pytester.path, api)
    result = pytester.runpytest(
        *ARGS, f"--eval-dataset={ds}", f"--eval-target-map={target_map}", f"--eval-url={api.url}", "--eval-api-key=k"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--eval-target-map and --eval-url both given*"])


@pytest.mark.parametrize(
    ("other", "named"),
    [("--eval-spawn=my-server --port {port}", "--eval-spawn"), ("--eval-setup=make data", "--eval-setup")],
)
def test_a_map_and_a_spawned_target_is_a_usage_error_too(pytester, api, other, named):
    # A Python target beside a map: tests/plugin/test_target_source.py.
    ds, target_map = dataset(pytester.path / "ds"), map_file(pytester.path, api)
    result = pytester.runpytest(*ARGS, f"--eval-dataset={ds}", f"--eval-target-map={target_map}", other)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--eval-target-map and {named} both given*"])
    assert api.seen == []


def test_the_ini_spelling_names_the_map_relative_to_the_run_directory(pytester, api):
    from pytest_groundeval.plugin.options import resolve_settings

    target_map = map_file(pytester.path, api)
    pytester.makeini("[pytest]\neval_target_map = rag-map.json\n")
    settings = resolve_settings(pytester.parseconfig())
    assert settings.target_map is not None and settings.target_map.path == target_map
    assert KEY in settings.target_map.secrets and KEY not in repr(settings)


def test_the_corpus_is_still_hash_checked(pytester, api):
    ds, target_map = dataset(pytester.path / "ds"), map_file(pytester.path, api)
    (ds / "corpus" / "debate.txt").write_text(DEBATE + "changed\n", encoding="utf-8")
    result = pytester.runpytest(*ARGS, f"--eval-dataset={ds}", f"--eval-target-map={target_map}")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*debate.txt*hash*"])
    assert api.seen == []


CITATIONS = [item for item in ITEMS if item["kind"] == "citation"]
VERDICTS = (
    "SELECT j.item, j.paragraph, j.verdict FROM judgments j JOIN judgment_sets s ON s.id = j.set_id "
    "AND s.is_current ORDER BY j.item, j.paragraph"
)


def _rows(db: Path, sql: str) -> list[tuple]:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_mapped_citation_run_in_the_history_can_be_rejudged(pytester, api):
    # The API's sources are not in the corpus: the history keeps their text, so that `groundeval rejudge`
    # judges a stored paragraph against what it cited, as the run's own judge did (docs/history.md).
    from pytest_groundeval.cli import main as groundeval
    from pytest_groundeval.mock import ThreadedMockProvider

    ds, target_map = dataset(pytester.path / "ds", CITATIONS), map_file(pytester.path, api)
    judged, later = pytester.path / "judged.db", pytester.path / "later.db"
    with ThreadedMockProvider() as mock:
        for db, judge in ((judged, ["--eval-judge=mock"]), (later, [])):
            result = pytester.runpytest(*ARGS, f"--eval-dataset={ds}", f"--eval-target-map={target_map}",
                                        f"--eval-history=sqlite:///{db}", *judge)  # fmt: skip
            assert result.ret == 0, result.stdout.str()
        during = _rows(judged, VERDICTS)
        assert [verdict for *_, verdict in during] == ["supported", "supported"]
        assert [verdict for *_, verdict in _rows(later, VERDICTS)] == [None, None]
        (sources,) = _rows(later, "SELECT sources FROM items WHERE item_id = 'cit-fibre'")
        assert json.loads(sources[0]) == {"1": {"text": FIRST, "metadata": {"speaker": "Anna Berg", "party": "S"}}}
        judge = ["--judge-url", mock.base_url, "--judge-model", "mock-judge", "--history", f"sqlite:///{later}"]
        assert groundeval(["rejudge", "latest", *judge]) == 0
    assert _rows(later, VERDICTS) == during
