"""Contract tests of the reference target (docs/target-contract.md): a real subprocess over real HTTP.

The server runs as ``python -m pytest_groundeval.reference --port 0``; the test
learns the port from ``<data-dir>/reference.port`` and waits for ``/readyz``.
The provider is the package's mock on a thread; faults are chosen through the
``+fault=`` model-name suffix, one server per fault mode.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from pytest_groundeval.cli import main as groundeval
from pytest_groundeval.mock import NoiseSettings, ThreadedMockProvider
from pytest_groundeval.mock.noise import NO_NOISE
from pytest_groundeval.reference import PORT_FILE_NAME

BOOTSTRAP_KEY = "bootstrap-test-key"

NOTES_TEXT = (
    "Kontoret i Göteborg öppnade i mars 2021. Det har fyrtio anställda.\r\n"
    "\r\n"
    "The Göteborg office runs the nightly index build. The build takes 45 minutes on average.\n"
    "\n\n"
    "東京のチームは翻訳を担当する。\r"
    "\r"
    "Revenue rose 12% in the third quarter after the Stockholm launch."
)
NOTES_PARAGRAPHS = [
    "Kontoret i Göteborg öppnade i mars 2021. Det har fyrtio anställda.",
    "The Göteborg office runs the nightly index build. The build takes 45 minutes on average.",
    "東京のチームは翻訳を担当する。",
    "Revenue rose 12% in the third quarter after the Stockholm launch.",
]
PROJECTS = [
    {
        "name": "Project Alpha",
        "owner": "Ingrid Sjöberg",
        "summary": "Project Alpha ships the search service in May 2025.",
    },
    {
        "name": "Project Beta",
        "owner": "Lars Åkesson",
        "summary": "Project Beta migrates the billing database to PostgreSQL.",
    },
]


@dataclass(frozen=True)
class Reference:
    """A running reference server."""

    url: str
    key: str
    data_dir: Path
    log_path: Path

    def client(self, key: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {key or self.key}"}, timeout=httpx.Timeout(30.0)
        )


def _server_env(mock_url: str, key: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GROUNDEVAL_", "OPENAI_"))}
    env.update(GROUNDEVAL_API_KEY=key, GROUNDEVAL_LLM_URL=mock_url, GROUNDEVAL_EMBED_URL=mock_url)
    return env


def _wait_ready(proc: subprocess.Popen[bytes], data_dir: Path, log_path: Path) -> str:
    deadline = time.monotonic() + 30.0
    port_file = data_dir / PORT_FILE_NAME
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"reference server exited with {proc.returncode}:\n{log_path.read_text()[-2000:]}")
        if port_file.exists():
            url = f"http://127.0.0.1:{int(port_file.read_text())}"
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(url + "/readyz", timeout=2.0).status_code == 200:
                    return url
        time.sleep(0.05)
    raise AssertionError(f"reference server not ready after 30 s:\n{log_path.read_text()[-2000:]}")


@contextlib.contextmanager
def reference_server(base: Path, mock_url: str, *args: str, key: str = BOOTSTRAP_KEY) -> Iterator[Reference]:
    """Start the server as a subprocess on port 0 and stop it (terminate, then kill) afterwards."""
    data_dir, log_path = base / "data", base / "reference.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_groundeval.reference", "--port", "0", "--data-dir", str(data_dir), *args],
            env=_server_env(mock_url, key),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        yield Reference(_wait_ready(proc, data_dir, log_path), key, data_dir, log_path)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def mock() -> Iterator[ThreadedMockProvider]:
    """The deterministic provider every reference server in this module talks to."""
    with ThreadedMockProvider() as provider:
        yield provider


@pytest.fixture(scope="module")
def ref(mock: ThreadedMockProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reference]:
    """One fault-free reference server shared by the contract tests (each test uses its own labels)."""
    with reference_server(tmp_path_factory.mktemp("reference"), mock.base_url) as server:
        yield server


def _label(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _ingest_notes(client: httpx.Client, label: str, name: str | None = None) -> dict:
    body = {
        "name": name or f"{label}/notes.txt",
        "label": label,
        "format": "text",
        "contentHash": "h-notes",
        "content": NOTES_TEXT,
    }
    response = client.post("/v1/documents", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _ingest_projects(client: httpx.Client, label: str) -> dict:
    body = {
        "name": f"{label}/projects.json",
        "label": label,
        "format": "json",
        "contentHash": "h-projects",
        "content": PROJECTS,
    }
    response = client.post("/v1/documents", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _generate(client: httpx.Client, question: str, find: str | None) -> dict:
    response = client.post("/v1/generate", json={"question": question, "find": find})
    assert response.status_code == 200, response.text
    return response.json()


def _error(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"code", "message", "field"}
    return error


# ---------------------------------------------------------------- basics


def test_readyz_and_info_report_the_configured_models(ref: Reference) -> None:
    assert httpx.get(ref.url + "/readyz").status_code == 200  # the one open route
    with ref.client() as client:
        info = client.get("/v1/info")
    assert info.status_code == 200
    assert info.json() == {"models": {"generate": "mock-generate", "embed": "mock-embed"}}


def test_server_announces_where_it_listens(ref: Reference) -> None:
    port = (ref.data_dir / PORT_FILE_NAME).read_text().strip()
    assert f"listening on http://127.0.0.1:{port}" in ref.log_path.read_text()


def test_the_log_names_the_run_and_item_of_each_call(ref: Reference) -> None:
    run_id = uuid.uuid4().hex
    with ref.client() as client:
        response = client.post(
            "/v1/generate",
            json={"question": "Who?", "find": None},
            headers={"X-Groundeval-Run-Id": run_id, "X-Groundeval-Item-Id": "qa-logged"},
        )
        assert response.status_code == 200
        client.get("/v1/info")
    deadline = time.monotonic() + 5
    while f"run={run_id}" not in ref.log_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.02)
    log = ref.log_path.read_text()
    assert f"POST /v1/generate run={run_id} item=qa-logged status=200" in log
    assert "GET /v1/info run=- item=- status=200" in log


def test_generate_forwards_the_attempt_to_the_provider(ref: Reference, mock: ThreadedMockProvider) -> None:
    """The mock's seeded noise draws from the attempt (docs/mock.md), so it must reach the provider."""
    label = _label("ATTEMPT")

    def answer(client: httpx.Client, attempt: str | None) -> str:
        headers = {} if attempt is None else {"X-Groundeval-Attempt": attempt}
        response = client.post(
            "/v1/generate", json={"question": "When did the Malmö depot open?", "find": label}, headers=headers
        )
        assert response.status_code == 200, response.text
        return response.json()["answer"]

    with ref.client() as client:
        # Words no other test asks about: the server is shared, and a question with no `find` searches every label.
        body = {"name": f"{label}/depots.txt", "label": label, "format": "text", "contentHash": "h-depots"}
        text = "The Malmö depot opened in 2019. It runs 12 trucks.\n\nThe Uppsala depot opened in 2004."
        assert client.post("/v1/documents", json={**body, "content": text}).status_code == 200
        plain = answer(client, "1")
        mock.noise = NoiseSettings(1.0, 0)
        try:
            mock.clear_log()
            answers = [answer(client, str(attempt)) for attempt in range(6)]
            assert answer(client, None) == answers[0]
            assert [answer(client, str(attempt)) for attempt in range(6)] == answers
            noised = [r.noise for r in mock.log if r.kind == "chat_stream"]
        finally:
            mock.noise = NO_NOISE
    assert len(noised) == 13 and None not in noised
    assert len(set(answers)) > 1 and plain not in answers


ROUTES = ["/v1/documents", "/v1/generate", "/v1/records", "/v1/query", "/v1/compare"]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("header", [None, "Bearer wrong-key", "Basic abc", "Bearer"])
def test_missing_or_invalid_key_is_401(ref: Reference, route: str, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    error = _error(httpx.post(ref.url + route, json={}, headers=headers), 401)
    assert error["code"] == "unauthorized"


@pytest.mark.parametrize("header", [None, "Bearer wrong-key", "Basic abc", "Bearer"])
def test_info_needs_a_valid_key_too(ref: Reference, header: str | None) -> None:
    # docs/target-contract.md: every call of the REST contract takes the bearer key; only /readyz is open.
    headers = {} if header is None else {"Authorization": header}
    error = _error(httpx.get(ref.url + "/v1/info", headers=headers), 401)
    assert error["code"] == "unauthorized"
    assert "models" not in error["message"]


def test_unknown_route_is_a_json_404(ref: Reference) -> None:
    with ref.client() as client:
        assert _error(client.get("/v1/nothing"), 404)["code"] == "not_found"
        assert _error(client.get("/v1/generate"), 405)["code"] == "method_not_allowed"


# ----------------------------------------------------------------- ingest


def test_ingest_is_idempotent_on_name_and_hash(ref: Reference) -> None:
    label = _label("IDEM")
    with ref.client() as client:
        first = _ingest_notes(client, label)
        again = _ingest_notes(client, label)
        assert again == first
        assert isinstance(first["txStart"], int) and first["documentId"]
        changed = client.post(
            "/v1/documents",
            json={
                "name": f"{label}/notes.txt",
                "label": label,
                "format": "text",
                "contentHash": "h-2",
                "content": "Other text.",
            },
        ).json()
        assert changed["documentId"] != first["documentId"]
        assert changed["txStart"] > first["txStart"]
        # Only the newest version of a name is searched.
        answer = _generate(client, "What does the Göteborg office run?", label)
        assert {(e["start"], e["end"]) for e in answer["evidence"]} == {(0, len(b"Other text."))}
        # Re-sending the first version returns its original id and makes it current again.
        assert _ingest_notes(client, label) == first
        assert len(_generate(client, "What does the Göteborg office run?", label)["evidence"]) == 4


def test_evidence_offsets_slice_the_canonical_text_of_a_non_ascii_text_document(ref: Reference) -> None:
    label = _label("NOTES")
    canonical = NOTES_TEXT.replace("\r\n", "\n").replace("\r", "\n").encode("utf-8")
    with ref.client() as client:
        _ingest_notes(client, label)
        answer = _generate(client, "När öppnade kontoret i Göteborg?", label)
    spans = [canonical[e["start"] : e["end"]].decode("utf-8") for e in answer["evidence"]]
    assert sorted(spans) == sorted(NOTES_PARAGRAPHS)
    assert spans[0] == NOTES_PARAGRAPHS[0]
    assert [e["marker"] for e in answer["evidence"]] == ["S1", "S2", "S3", "S4"]
    assert {e["document"] for e in answer["evidence"]} == {f"{label}/notes.txt"}


def test_evidence_offsets_slice_the_canonical_json_records(ref: Reference) -> None:
    label = _label("PROJ")
    records = [json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for r in PROJECTS]
    canonical = "\n".join(records).encode("utf-8")
    with ref.client() as client:
        _ingest_projects(client, label)
        answer = _generate(client, "Who owns Project Beta?", label)
    spans = [canonical[e["start"] : e["end"]].decode("utf-8") for e in answer["evidence"]]
    assert spans == [records[1], records[0]]


def test_find_restricts_evidence_to_the_label(ref: Reference) -> None:
    notes, projects = _label("FINDN"), _label("FINDP")
    with ref.client() as client:
        _ingest_notes(client, notes)
        _ingest_projects(client, projects)
        only_projects = _generate(client, "Göteborg office index build", projects)
        everything = _generate(client, "Göteborg office index build", None)
    assert {e["document"] for e in only_projects["evidence"]} == {f"{projects}/projects.json"}
    assert f"{notes}/notes.txt" in {e["document"] for e in everything["evidence"]}
    assert everything["evidence"][0]["document"] == f"{notes}/notes.txt"


def test_claim_offsets_slice_the_answer_and_usage_sums_the_provider_calls(
    ref: Reference, mock: ThreadedMockProvider
) -> None:
    label = _label("CLAIMS")
    with ref.client() as client:
        _ingest_notes(client, label)
        mock.clear_log()
        answer = _generate(client, "How long does the nightly index build in Göteborg take?", label)
        calls = [c for c in mock.log if c.fault is None]  # a fault test's late request is not ours
    data = answer["answer"].encode("utf-8")
    assert answer["claims"], answer
    for claim in answer["claims"]:
        assert data[claim["start"] : claim["end"]].decode("utf-8") == claim["text"]
        assert claim["verdict"] == "supported", claim
        assert claim["markers"] and all(m in claim["text"] for m in claim["markers"])
    assert answer["traceId"]
    assert [c.kind for c in calls] == ["embeddings", "chat_stream", "decompose"]
    assert answer["usage"] == {
        "promptTokens": sum(c.prompt_tokens for c in calls),
        "completionTokens": sum(c.completion_tokens for c in calls),
    }
    assert answer["usage"]["completionTokens"] > 0


# ----------------------------------------------------------- verification


@pytest.mark.parametrize(
    ("question", "verdict"),
    [
        ("ECHO-CITED: Kontoret i Göteborg öppnades i mars 2021.", "supported"),  # inflection drift
        ("ECHO-CITED: The nightly index build is run by the Göteborg office.", "supported"),  # restatement
        ("ECHO-CITED: Revenue fell 12% in the third quarter after the Stockholm launch.", "unsupported"),
        ("ECHO-CITED: Revenue rose 12% in the third quarter after the Oslo launch.", "unsupported"),
        ("ECHO-CITED: Revenue rose 15% in the third quarter after the Stockholm launch.", "contradicted"),
        ("ECHO-CITED: The build does not take 45 minutes on average.", "contradicted"),
        ("ECHO: Revenue rose 12% in the third quarter after the Stockholm launch.", "unsupported"),
    ],
)
def test_cited_claims_are_verified_against_the_cited_span(ref: Reference, question: str, verdict: str) -> None:
    label = _label("VERIFY")
    with ref.client() as client:
        _ingest_notes(client, label)
        answer = _generate(client, question, label)
    assert len(answer["claims"]) == 1, answer
    assert answer["claims"][0]["verdict"] == verdict, answer


def test_no_evidence_still_answers_and_nothing_is_supported(ref: Reference) -> None:
    with ref.client() as client:
        answer = _generate(client, "What is on the moon?", _label("EMPTY"))
    assert answer["evidence"] == []
    assert answer["answer"]
    assert all(c["verdict"] != "supported" for c in answer["claims"])


# ------------------------------------------------------------------ tenants


def _create_key(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``groundeval reference create-key`` run in this process, beside the server's process using the database."""
    capsys.readouterr()
    assert groundeval(["reference", "create-key", "--data-dir", str(data_dir)]) == 0
    key = capsys.readouterr().out.strip()
    assert key.startswith("ge_") and "\n" not in key
    return key


def test_tenants_never_see_each_others_documents_or_records(ref: Reference, capsys: pytest.CaptureFixture[str]) -> None:
    other_key = _create_key(ref.data_dir, capsys)
    label = _label("TENANT")
    with ref.client() as mine, ref.client(other_key) as theirs:
        _ingest_notes(mine, label)
        record = mine.post("/v1/records", json={"op": "create", "label": label, "properties": {"v": 1}}).json()
        assert _generate(theirs, "Göteborg office", label)["evidence"] == []
        assert theirs.post("/v1/query", json={"label": label}).json() == {"records": []}
        assert (
            _error(theirs.post("/v1/records", json={"op": "delete", "target": record["id"]}), 404)["field"] == "target"
        )
        # Same name and hash in another tenant is another document.
        assert _ingest_notes(theirs, label)["documentId"] != _ingest_notes(mine, label)["documentId"]
        assert len(mine.post("/v1/query", json={"label": label}).json()["records"]) == 1


def test_keys_are_stored_only_as_hashes(ref: Reference, capsys: pytest.CaptureFixture[str]) -> None:
    key = _create_key(ref.data_dir, capsys)
    raw = b"".join(p.read_bytes() for p in ref.data_dir.glob("reference.sqlite3*"))
    assert key.encode() not in raw
    assert BOOTSTRAP_KEY.encode() not in raw


# --------------------------------------------------------------- malformed


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("/v1/generate", {"find": None}, "question"),
        ("/v1/generate", {"question": "q", "filter": "x"}, "filter"),
        ("/v1/generate", {"question": 3}, "question"),
        ("/v1/documents", {"name": "n", "format": "text", "contentHash": "h", "content": ["a"]}, "content"),
        ("/v1/documents", {"name": "n", "format": "json", "contentHash": "h", "content": [{"a": 1}, 2]}, "content"),
        ("/v1/documents", {"name": "n", "format": "xml", "contentHash": "h", "content": "x"}, "format"),
        ("/v1/documents", {"name": "n", "format": "text", "content": "x"}, "contentHash"),
        ("/v1/records", {"op": "upsert", "label": "L"}, "op"),
        ("/v1/records", {"op": "update", "properties": {}}, "target"),
        ("/v1/records", {"op": "create", "target": "rec_1", "label": "L"}, "target"),
        ("/v1/records", {"op": "create"}, "label"),
        (
            "/v1/records",
            {"op": "create", "label": "L", "validTime": {"start": "2024-01-01T00:00:00"}},
            "validTime.start",
        ),
        ("/v1/records", {"op": "create", "label": "L", "validTime": {"start": "yesterday"}}, "validTime.start"),
        (
            "/v1/records",
            {
                "op": "create",
                "label": "L",
                "validTime": {"start": "2024-02-01T00:00:00Z", "end": "2024-01-01T00:00:00Z"},
            },
            "validTime.end",
        ),
        ("/v1/query", {"asOfTx": "soon"}, "asOfTx"),
        ("/v1/compare", {"toTx": 5}, "fromTx"),
    ],
)
def test_invalid_bodies_are_422_naming_the_field(ref: Reference, route: str, body: dict, field: str) -> None:
    with ref.client() as client:
        error = _error(client.post(route, json=body), 422)
    assert error["code"] == "validation_error"
    assert error["field"] == field
    assert field in error["message"]


@pytest.mark.parametrize("route", ROUTES)
def test_invalid_json_is_400(ref: Reference, route: str) -> None:
    with ref.client() as client:
        response = client.post(route, content=b'{"question": ', headers={"Content-Type": "application/json"})
    assert _error(response, 400)["code"] == "invalid_json"


# What a client can send that Python's json reads but no JSON tool agrees on, or that cannot be
# stored: each was a 500 (or a non-standard NaN in an answer) and is a 422 naming the field.
UNSENDABLE = [
    ("/v1/records", b'{"op": "create", "label": "L", "properties": {"price": NaN}}', "properties.price", "NaN"),
    (
        "/v1/records",
        b'{"op": "create", "label": "L", "properties": {"p": [1, -Infinity]}}',
        "properties.p.1",
        "Infinity",
    ),
    ("/v1/records", b'{"op": "create", "label": "L", "properties": {"p": 1e400}}', "properties.p", "64-bit float"),
    ("/v1/records", b'{"op": "create", "label": "PR\\ud800", "properties": {}}', "label", "lone UTF-16 surrogate"),
    ("/v1/records", b'{"op": "create", "label": "L", "properties": {"k\\udc00": 1}}', "properties", "lone UTF-16"),
    ("/v1/generate", b'{"question": "Who? \\ud800"}', "question", "lone UTF-16 surrogate"),
    (
        "/v1/documents",
        b'{"name": "n", "contentHash": "h", "format": "text", "content": "x\\udfff"}',
        "content",
        "surrogate",
    ),
    ("/v1/query", b'{"asOfTx": 1000000000000000000000000000000}', "asOfTx", "outside"),
    ("/v1/query", b'{"asOfTx": 1e400}', "asOfTx", "64-bit float"),
    ("/v1/compare", b'{"fromTx": 99999999999999999999}', "fromTx", "outside"),
    ("/v1/query", b'{"asOfValid": 9007199254740991000}', "asOfValid", "outside"),
    ("/v1/generate", b'{"question": ["a list"]}', "question", "string"),
    ("/v1/records", b'{"op": "create", "label": "L", "properties": "not an object"}', "properties", "dictionary"),
    ("/v1/query", b'{"asOfTx": true}', "asOfTx", "integer"),
    ("/v1/compare", b'"just a string"', None, "JSON object"),
    ("/v1/query", b"[" * 50000 + b"]" * 50000, None, "nests too deeply"),
]


@pytest.mark.parametrize(
    ("route", "body", "field", "fragment"),
    UNSENDABLE,
    ids=[
        "nan",
        "infinity",
        "1e400",
        "label-surrogate",
        "key-surrogate",
        "question-surrogate",
        "content-surrogate",
        "huge-asOfTx",
        "asOfTx-1e400",
        "huge-fromTx",
        "huge-asOfValid",
        "question-list",
        "properties-string",
        "asOfTx-true",
        "not-an-object",
        "deep-nesting",
    ],
)
def test_whatever_a_client_sends_is_a_422_naming_the_field_never_a_500(
    ref: Reference, route: str, body: bytes, field: str | None, fragment: str
) -> None:
    with ref.client() as client:
        response = client.post(route, content=body, headers={"Content-Type": "application/json"})
    error = _error(response, 422)
    assert error["code"] == "validation_error" and error["field"] == field
    assert fragment in error["message"]
    assert "internal error" not in ref.log_path.read_text(encoding="utf-8")


def test_a_body_that_is_not_utf8_is_400(ref: Reference) -> None:
    with ref.client() as client:
        response = client.post(
            "/v1/generate", content=b'{"question": "caf\xe9"}', headers={"Content-Type": "application/json"}
        )
    error = _error(response, 400)
    assert error["code"] == "invalid_json" and "not valid UTF-8 at byte 17" in error["message"]


# --------------------------------------------------------------- bitemporal


def _write(client: httpx.Client, **body: object) -> dict:
    response = client.post("/v1/records", json=body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert set(result) == {"id", "txStart"} and isinstance(result["txStart"], int)
    return result


def _query(client: httpx.Client, **body: object) -> list[dict]:
    response = client.post("/v1/query", json=body)
    assert response.status_code == 200, response.text
    return response.json()["records"]


def test_update_closes_the_old_version_and_queries_see_each_as_of_its_tx(ref: Reference) -> None:
    label = _label("PRICE")
    with ref.client() as client:
        created = _write(client, op="create", label=label, properties={"price": 25})
        updated = _write(client, op="update", target=created["id"], label=label, properties={"price": 30})
        assert updated["id"] == created["id"]
        assert updated["txStart"] > created["txStart"]
        now = _query(client, label=label)
        assert [r["properties"] for r in now] == [{"price": 30}]
        assert now[0]["txStart"] == updated["txStart"] and now[0]["txEnd"] is None
        before = _query(client, label=label, asOfTx=created["txStart"])
        assert [r["properties"] for r in before] == [{"price": 25}]
        assert before[0]["txEnd"] == updated["txStart"]
        assert set(before[0]) == {"id", "label", "properties", "validTime", "txStart", "txEnd"}
        assert _query(client, label=label, asOfTx=created["txStart"] - 1) == []


def test_delete_ends_the_record_and_recreate_starts_a_fresh_history(ref: Reference) -> None:
    label = _label("DEL")
    with ref.client() as client:
        created = _write(client, op="create", label=label, properties={"k": "a"})
        deleted = _write(client, op="delete", target=created["id"])
        assert deleted["id"] == created["id"]
        assert _query(client, label=label) == []
        assert [r["id"] for r in _query(client, label=label, asOfTx=deleted["txStart"] - 1)] == [created["id"]]
        again = _write(client, op="create", label=label, properties={"k": "a"})
        assert again["id"] != created["id"]
        current = _query(client, label=label)
        assert [r["id"] for r in current] == [again["id"]]
        assert "deleted" not in json.dumps(current)
        assert (
            _error(client.post("/v1/records", json={"op": "update", "target": created["id"]}), 404)["field"] == "target"
        )
        assert (
            _error(client.post("/v1/records", json={"op": "delete", "target": created["id"]}), 404)["code"]
            == "not_found"
        )


def test_writes_in_the_same_millisecond_are_ordered_and_all_kept(ref: Reference) -> None:
    label = _label("BURST")
    with ref.client() as client:
        writes = [_write(client, op="create", label=label, properties={"n": n}) for n in range(8)]
        target = writes[0]["id"]
        updates = [_write(client, op="update", target=target, properties={"n": 100 + n}) for n in range(4)]
    times = [w["txStart"] for w in writes + updates]
    assert times == sorted(times) and len(set(times)) == len(times)
    with ref.client() as client:
        for n, update in enumerate(updates):
            seen = _query(client, label=label, target=target, asOfTx=update["txStart"])
            assert [r["properties"] for r in seen] == [{"n": 100 + n}]
        assert len(_query(client, label=label)) == 8


def test_valid_times_with_different_offsets_compare_as_instants(ref: Reference) -> None:
    label = _label("VALID")
    with ref.client() as client:
        _write(
            client,
            op="create",
            label=label,
            properties={"season": "winter"},
            validTime={"start": "2024-01-01T02:00:00+02:00", "end": "2024-06-30T20:00:00-04:00"},
        )
        assert len(_query(client, label=label, asOfValid="2024-01-01T00:00:00Z")) == 1
        assert _query(client, label=label, asOfValid="2023-12-31T23:59:59.999Z") == []
        assert len(_query(client, label=label, asOfValid="2024-07-01T05:59:59+06:00")) == 1
        assert _query(client, label=label, asOfValid="2024-07-01T00:00:00Z") == []  # end is exclusive
        # Default asOfValid is now: a 2024 interval is over.
        assert _query(client, label=label) == []
        record = _query(client, label=label, asOfValid="2024-03-01T00:00:00Z")[0]
        assert record["validTime"] == {"start": "2024-01-01T02:00:00+02:00", "end": "2024-06-30T20:00:00-04:00"}


def test_compare_reports_added_removed_and_changed_between_two_tx_times(ref: Reference) -> None:
    label = _label("CMP")
    with ref.client() as client:
        a = _write(client, op="create", label=label, properties={"v": 1})
        b = _write(client, op="create", label=label, properties={"v": 2})
        kept = _write(client, op="create", label=label, properties={"v": 3})
        _write(client, op="update", target=a["id"], properties={"v": 10})
        _write(client, op="delete", target=b["id"])
        c = _write(client, op="create", label=label, properties={"v": 4})
        response = client.post("/v1/compare", json={"label": label, "fromTx": kept["txStart"], "toTx": c["txStart"]})
        assert response.status_code == 200, response.text
        diff = response.json()
        assert [r["id"] for r in diff["added"]] == [c["id"]]
        assert [r["id"] for r in diff["removed"]] == [b["id"]]
        assert [(ch["id"], ch["before"]["properties"], ch["after"]["properties"]) for ch in diff["changed"]] == [
            (a["id"], {"v": 1}, {"v": 10})
        ]
        only_a = client.post(
            "/v1/compare", json={"target": a["id"], "fromTx": a["txStart"], "toTx": c["txStart"]}
        ).json()
        assert (len(only_a["added"]), len(only_a["removed"]), len(only_a["changed"])) == (0, 0, 1)
        nothing = client.post(
            "/v1/compare", json={"label": label, "fromTx": a["txStart"] - 1, "toTx": a["txStart"] - 1}
        ).json()
        assert nothing == {"added": [], "removed": [], "changed": []}


# ------------------------------------------------------------ provider faults

INLINE = ("--verify-executor", "inline")
"""A fault server verifies on its event loop: what these tests check is the provider call, not where
claims are verified (a process pool, a forkserver and a worker per core, costs about 0.7 s of CPU
when a server starts it)."""


@pytest.mark.parametrize(
    ("fault", "extra", "message"),
    [
        ("cut", (), "stream ended before [DONE]"),
        ("malformed", (), "malformed JSON in the stream"),
        ("500", (), "provider returned HTTP 500 for /chat/completions (gave up after 3 attempts)"),
        ("429:0.05", (), "provider returned HTTP 429 for /chat/completions (gave up after 3 attempts)"),
        ("delay:1500", ("--provider-timeout", "0.5"), "provider timed out after 0.5 s for /chat/completions"),
    ],
)
def test_generation_faults_are_502_naming_the_cause(
    mock: ThreadedMockProvider, tmp_path: Path, fault: str, extra: tuple[str, ...], message: str
) -> None:
    with reference_server(
        tmp_path, mock.base_url, "--model-generate", f"mock-generate+fault={fault}", *extra, *INLINE
    ) as server:
        with server.client() as client:
            _ingest_notes(client, "FAULT")
            response = client.post("/v1/generate", json={"question": "Göteborg office", "find": "FAULT"})
    error = _error(response, 502)
    assert error["code"] == "provider_error"
    assert message in error["message"]


def test_a_429_with_retry_after_is_retried_and_then_succeeds(mock: ThreadedMockProvider, tmp_path: Path) -> None:
    model = "mock-generate+fault=429x1"
    mock.reset_faults()
    with reference_server(tmp_path, mock.base_url, "--model-generate", model, *INLINE) as server:
        with server.client() as client:
            _ingest_notes(client, "RETRY")
            mock.clear_log()
            answer = _generate(client, "How long does the nightly index build in Göteborg take?", "RETRY")
            calls = mock.log
    # Only this server's calls: an earlier test's delayed request may still land in the shared log.
    chat = [c for c in calls if c.fault == "429x1"]
    assert [c.status for c in chat] == [429, 200, 200]
    assert [c.kind for c in chat[1:]] == ["chat_stream", "decompose"]
    assert answer["claims"] and all(c["verdict"] == "supported" for c in answer["claims"])


def test_an_embedding_fault_fails_ingest_with_502_and_stores_nothing(
    mock: ThreadedMockProvider, tmp_path: Path
) -> None:
    with reference_server(
        tmp_path, mock.base_url, "--model-embed", "mock-embed+fault=500", "--provider-timeout", "5", *INLINE
    ) as server:
        with server.client() as client:
            body = {"name": "n.txt", "label": "EMB", "format": "text", "contentHash": "h", "content": "Some text."}
            error = _error(client.post("/v1/documents", json=body), 502)
    assert "provider returned HTTP 500 for /embeddings" in error["message"]
