"""Hostile and broken target responses over real loopback HTTP (issue 12, points 7, 8, 14).

Every test runs on both paths: ``HttpTarget.generate`` (httpx) and ``agenerate``
(aiohttp), against the scripted server of conftest.py. Each failure must be a
``TargetError`` naming the call and the URL and saying what was wrong.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import shlex
import sys
import time
import zlib
from pathlib import Path

import pytest

from pytest_groundeval.targets import (
    HttpTarget,
    SpawnConfig,
    SpawnedTarget,
    TargetError,
    TargetUnavailable,
    connect_url,
)
from pytest_groundeval.targets.protocol import DEFAULT_MAX_RESPONSE_BYTES

Reply = sys.modules["groundeval_scripted_server"].Reply  # loaded by conftest.py from servers/scripted.py

GOOD = {
    "answer": "Alpha ships in May [S1].",
    "traceId": "t-1",
    "evidence": [{"marker": "S1", "document": "eval/a.json", "start": 0, "end": 10}],
    "claims": [{"text": "Alpha ships in May", "start": 0, "end": 18, "markers": ["S1"], "verdict": "supported"}],
}
GOOD_BYTES = json.dumps(GOOD).encode()
MIB = 1 << 20
MODES = ("sync", "async")


def zeros_gzip(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(MIB)
    return b"".join(compressor.compress(block) for _ in range(size // MIB)) + compressor.flush()


def fails(target: HttpTarget, mode: str, call_target, scripted) -> TargetError:
    with pytest.raises(TargetError) as info:
        call_target(target, mode)
    message = str(info.value)
    assert "POST /v1/generate" in message
    assert f"{scripted.url}/v1/generate" in message
    assert info.value.call == "POST /v1/generate"
    return info.value


# ----------------------------------------------------------------------------- point 7: size


@pytest.mark.parametrize("mode", MODES)
def test_a_gzip_bomb_stops_at_the_limit(scripted, call_target, mode: str) -> None:
    bomb = zeros_gzip(64 * MIB)  # 64 KiB on the wire
    scripted.reply = Reply(headers=[("Content-Type", "application/json"), ("Content-Encoding", "gzip")], body=bomb)
    with HttpTarget(scripted.url, "k", timeout_s=10, max_response_bytes=MIB) as target:
        error = fails(target, mode, call_target, scripted)
    message = str(error)
    assert "over the limit of 1 MiB (1,048,576 bytes) (--eval-max-response-bytes)" in message
    assert "of gzip received inflated to" in message
    assert error.status == 200


@pytest.mark.parametrize("mode", MODES)
def test_an_endless_body_stops_at_the_limit(scripted, call_target, mode: str) -> None:
    def endless():
        while True:
            yield b" " * 65536

    scripted.reply = Reply(chunks=endless)
    started = time.monotonic()
    with HttpTarget(scripted.url, "k", timeout_s=30, max_response_bytes=MIB) as target:
        error = fails(target, mode, call_target, scripted)
    assert "over the limit of 1 MiB" in str(error)
    assert "received before the harness stopped reading" in str(error)
    assert time.monotonic() - started < 30  # the limit ended it, not the deadline


@pytest.mark.parametrize("mode", MODES)
def test_a_declared_length_over_the_limit_is_refused_before_reading(scripted, call_target, mode: str) -> None:
    scripted.reply = Reply(body=GOOD_BYTES, length=str(2 * MIB))
    with HttpTarget(scripted.url, "k", timeout_s=10, max_response_bytes=MIB) as target:
        error = fails(target, mode, call_target, scripted)
    assert "declares a body of 2 MiB (2,097,152 bytes) (Content-Length), over the limit of 1 MiB" in str(error)


@pytest.mark.parametrize("mode", MODES)
def test_the_limit_is_inclusive(scripted, call_target, mode: str) -> None:
    scripted.reply = Reply(body=GOOD_BYTES)
    with HttpTarget(scripted.url, "k", max_response_bytes=len(GOOD_BYTES)) as target:
        assert call_target(target, mode) == GOOD
    with HttpTarget(scripted.url, "k", max_response_bytes=len(GOOD_BYTES) - 1) as target:
        assert "over the limit" in str(fails(target, mode, call_target, scripted))


def deflate_raw(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", deflate_raw),
        ("gzip, gzip", lambda b: gzip.compress(gzip.compress(b))),
        ("deflate, gzip", lambda b: gzip.compress(zlib.compress(b))),
        ("identity", lambda b: b),
        ("gzip", lambda b: gzip.compress(b[:20]) + gzip.compress(b[20:])),  # two members
    ],
)
def test_compressed_answers_within_the_limit_are_read(scripted, call_target, mode, coding, encode) -> None:
    scripted.reply = Reply(
        headers=[("Content-Type", "application/json"), ("Content-Encoding", coding)], body=encode(GOOD_BYTES)
    )
    with HttpTarget(scripted.url, "k") as target:
        assert call_target(target, mode) == GOOD
    assert scripted.requests[-1][2]["Accept-Encoding"] == "gzip, deflate"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("coding", "body", "expected"),
    [
        ("br", b"\x0b\x02\x80{}\x03", "Content-Encoding 'br', which the harness did not ask for"),
        ("gzip", b"\x1f\x8bnot really gzip at all", "not valid gzip"),
        ("gzip", gzip.compress(GOOD_BYTES, mtime=0)[:-12], "ends before its compressed stream does (truncated)"),
        ("deflate", b"plain text, not deflate", "not valid deflate"),
    ],
)
def test_bad_content_codings_name_the_problem(scripted, call_target, mode, coding, body, expected) -> None:
    scripted.reply = Reply(headers=[("Content-Type", "application/json"), ("Content-Encoding", coding)], body=body)
    with HttpTarget(scripted.url, "k") as target:
        assert expected in str(fails(target, mode, call_target, scripted))


# ----------------------------------------------------------------------------- point 7: deadline


@pytest.mark.parametrize("mode", MODES)
def test_a_slow_loris_body_ends_at_the_deadline(scripted, call_target, mode: str) -> None:
    # One byte every 0.1 s: never a read timeout, but the call must end by its 0.5 s deadline.
    scripted.reply = Reply(chunks=lambda: iter(lambda: b" ", None), pause_s=0.1)
    started = time.monotonic()
    with HttpTarget(scripted.url, "k", timeout_s=0.5) as target:
        error = fails(target, mode, call_target, scripted)
    elapsed = time.monotonic() - started
    assert "the response did not complete within 0.5 s, the per-call timeout (--eval-timeout)" in str(error)
    assert "HTTP 200 and" in str(error) and "of body received" in str(error)
    assert not isinstance(error, TargetUnavailable)
    assert elapsed < 5, elapsed  # unbounded before: each byte reset the read timeout


@pytest.mark.parametrize("mode", MODES)
def test_slow_loris_headers_end_at_the_deadline(scripted, call_target, mode: str) -> None:
    scripted.reply = Reply(body=GOOD_BYTES, header_pause_s=0.05)  # about 5 s of headers
    started = time.monotonic()
    with HttpTarget(scripted.url, "k", timeout_s=0.5) as target:
        error = fails(target, mode, call_target, scripted)
    assert "no response within 0.5 s" in str(error)
    assert time.monotonic() - started < 4


# ----------------------------------------------------------------------------- point 8: bad text


@pytest.mark.parametrize("mode", MODES)
def test_a_body_that_is_not_utf8_names_the_byte_offset(scripted, call_target, mode: str) -> None:
    scripted.reply = Reply(body=b'{"answer": "caf\xe9"}')
    with HttpTarget(scripted.url, "k") as target:
        error = fails(target, mode, call_target, scripted)
    assert "not valid utf-8 text: byte offset 15" in str(error)
    assert error.status == 200


@pytest.mark.parametrize("mode", MODES)
def test_a_declared_charset_is_honoured_and_an_unknown_one_named(scripted, call_target, mode: str) -> None:
    body = dict(GOOD, traceId="café")
    scripted.reply = Reply(
        headers=[("Content-Type", "application/json; charset=latin-1")],
        body=json.dumps(body, ensure_ascii=False).encode("latin-1"),
    )
    with HttpTarget(scripted.url, "k") as target:
        assert call_target(target, mode)["traceId"] == "café"
    scripted.reply = Reply(headers=[("Content-Type", "application/json; charset=klingon")], body=GOOD_BYTES)
    with HttpTarget(scripted.url, "k") as target:
        assert "charset 'klingon', which is not a known text encoding" in str(
            fails(target, mode, call_target, scripted)
        )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"[" * 100_000, "nested too deep to parse"),
        (json.dumps(dict(GOOD, extra=json.loads("[" * 200 + "]" * 200))).encode(), "'extra[0][0][0]"),
        (json.dumps(dict(GOOD, extra=json.loads("[" * 200 + "]" * 200))).encode(), "nested deeper than 128 levels"),
        (b'{"answer": "\\ud800", "evidence": [], "claims": []}', "field 'answer' holds a lone surrogate (U+D800)"),
    ],
)
def test_deep_or_invalid_json_is_a_target_error(scripted, call_target, mode, body, expected) -> None:
    scripted.reply = Reply(body=body)
    with HttpTarget(scripted.url, "k") as target:
        assert expected in str(fails(target, mode, call_target, scripted))


# ----------------------------------------------------------------------------- point 14: redirects


# ----------------------------------------------------------------------------- issue 19: bounded validation

# A million-element list of the wrong shape (issue 19 measured 15 MiB of it: 7.6 GB, 34 s, one item).
MANY_BAD = {
    "evidence-lists": (
        b'{"answer": "x", "claims": [], "evidence": [' + b"[], " * 250_000 + b"[]]}",
        "field 'evidence[0]' must be an object, got []",
    ),
    "evidence-empty-objects": (
        b'{"answer": "x", "claims": [], "evidence": [' + b"{}, " * 250_000 + b"{}]}",
        "missing required field 'evidence[0].marker'",
    ),
    "answer-a-list": (
        b'{"answer": [' + b"[], " * 250_000 + b'[]], "claims": [], "evidence": []}',
        "field 'answer' must be a string, got a list of more than 256 characters",
    ),
    "markers-lists": (
        b'{"answer": "x", "evidence": [], "claims": [{"text": "x", "start": 0, "end": 1, '
        b'"verdict": "supported", "markers": [' + b"[], " * 250_000 + b"[]]}]}",
        "field 'claims[0].markers' must be a list of strings, got []",
    ),
    "top-level-list": (b"[" + b"[], " * 250_000 + b"[]]", "returned JSON that is not an object (a list)"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", MANY_BAD, ids=list(MANY_BAD))
def test_a_body_of_many_bad_elements_stops_at_the_first(scripted, call_target, mode, case) -> None:
    body, expected = MANY_BAD[case]
    scripted.reply = Reply(body=body)
    message = str(fails(HttpTarget(scripted.url, "k"), mode, call_target, scripted))
    assert expected in message and message.count("must be") + message.count("missing") <= 1


@pytest.mark.parametrize("case", MANY_BAD, ids=list(MANY_BAD))
def test_a_bad_body_is_refused_within_four_times_its_size(scripted, case) -> None:
    # json.loads alone would build about 20 times the text before any check; the guided decoder
    # stops at the first bad element, having built nothing past it (docs/target-contract.md,
    # "Limits"). Traced: the whole call, from reading the body to the error.
    import tracemalloc

    body = MANY_BAD[case][0]
    scripted.reply = Reply(body=body)
    target = HttpTarget(scripted.url, "k")
    tracemalloc.start()
    try:
        with pytest.raises(TargetError):
            target.generate("q", None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        target.close()
    assert peak < 4 * len(body)


def test_an_in_process_list_of_bad_elements_gives_one_error() -> None:
    from pydantic import ValidationError

    from pytest_groundeval.targets import check_response
    from pytest_groundeval.targets.responses import GenerateResponse

    body = {"answer": "x", "claims": [{}] * 1000, "evidence": [[]] * 100_000}
    with pytest.raises(ValidationError) as info:
        GenerateResponse.model_validate(body)
    assert info.value.error_count() <= 6  # the first bad element of each list, not 100,000 errors
    with pytest.raises(TargetError, match=r"field 'evidence\[0\]' must be an object, got \[\]$"):
        check_response("generate", body)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirects_are_not_followed(scripted, other_origin, call_target, mode: str, status: int) -> None:
    elsewhere = f"{other_origin.url}/v1/generate"
    scripted.reply = Reply(status=status, headers=[("Location", elsewhere)], body=b"")
    other_origin.reply = Reply(body=GOOD_BYTES)
    with HttpTarget(scripted.url, "secret-key") as target:
        error = fails(target, mode, call_target, scripted)
    assert f"returned a redirect to {elsewhere!r}, which the harness does not follow" in str(error)
    assert error.status == status
    assert other_origin.requests == []  # neither the question nor the key went anywhere else


# ----------------------------------------------------------------------------- options reach the target


def test_the_limit_reaches_connect_url_and_spawned_targets(scripted, tmp_path: Path) -> None:
    scripted.routes["/readyz"] = Reply(body=b'{"status": "ready"}')
    target = connect_url(scripted.url, "k", timeout_s=3, max_response_bytes=1234)
    try:
        assert (target.max_response_bytes, target.timeout_s) == (1234, 3)
    finally:
        target.close()
    assert HttpTarget(scripted.url, "k").max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES == 16 * MIB
    server = Path(__file__).parent / "servers" / "fake_target.py"
    config = SpawnConfig(
        command=f"{shlex.quote(sys.executable)} {shlex.quote(str(server))} --port {{port}}",
        base_dir=tmp_path,
        max_response_bytes=4321,
        terminate_grace_s=0.5,
    )
    with SpawnedTarget(config) as spawned:
        assert spawned.target.max_response_bytes == 4321


# ----------------------------------------------------------------------------- per-item errors in the runner

REPO = Path(__file__).resolve().parents[2]


def citation_question():
    from pytest_groundeval.core.kinds.citation import CitationItem

    return CitationItem.model_validate(
        {
            "id": "cit-q",
            "kind": "citation",
            "question": "What did Lars Holm say?",
            "find": "DEBATE",
            "sources": [
                {"marker": "S1", "document": "citation-smoke/debate.txt", "metadata": {"speaker": "Lars Holm"}}
            ],
        }
    )


@pytest.mark.parametrize(
    "body", [b'{"documentId": "d", "txStart": 1, "note": "\xff"}', b"[" * 50_000], ids=["bad-utf8", "deep-json"]
)
def test_broken_bodies_are_item_errors_that_count_toward_the_stop(scripted, body: bytes) -> None:
    from pytest_groundeval.core.dataset import load_dataset
    from pytest_groundeval.core.runner import ERROR_STREAK, ItemError, ItemRunner

    dataset = load_dataset(REPO / "datasets" / "citation-smoke")
    scripted.reply = Reply(body=body)
    target = HttpTarget(scripted.url, "k")
    runner = ItemRunner(target)
    errors = []

    async def run_items() -> None:
        try:
            for _ in range(ERROR_STREAK):
                with pytest.raises(ItemError) as info:
                    await runner.run_async(citation_question(), dataset)
                errors.append(info.value)
                runner.note(info.value)
        finally:
            await target.aclose()
            target.close()

    asyncio.run(run_items())
    assert all(isinstance(e.cause, TargetError) for e in errors)
    assert errors[0].outcome.error.startswith("POST /v1/documents")
    assert runner.stop_reason is not None
    assert runner.stop_reason.startswith(
        f"{ERROR_STREAK} items in a row could not be run; the last: POST /v1/documents"
    )


def test_an_in_process_target_returning_unusable_values_gives_item_errors() -> None:
    from pytest_groundeval.core.dataset import load_dataset
    from pytest_groundeval.core.runner import ItemError, ItemRunner

    deep: list = []
    for _ in range(10_000):
        deep = [deep]

    class Pipeline:
        def __init__(self, answer):
            self.answer = answer

        def info(self):
            return None

        def ingest(self, document):
            return {"documentId": "d", "txStart": 1}

        def generate(self, question, find):
            return {"answer": self.answer, "evidence": [], "claims": []}

        def records(self, step):
            return {"id": 1, "txStart": 1}

        def query(self, body):
            return {"records": []}

        def compare(self, body):
            return {"added": [], "removed": [], "changed": []}

        def close(self): return None  # fmt: skip

    dataset = load_dataset(REPO / "datasets" / "citation-smoke")
    for answer, expected in [(deep, "nested deeper than 128 levels"), ("caf\udce9", "lone surrogate (U+DCE9)")]:
        with pytest.raises(ItemError) as info:
            ItemRunner(Pipeline(answer)).run(citation_question(), dataset)
        assert isinstance(info.value.cause, TargetError)
        assert "generate returned a malformed response" in info.value.outcome.error
        assert expected in info.value.outcome.error


# ----------------------------------------------------------------------------- point 14: spawn placeholders


def test_fill_placeholders_substitutes_escapes_and_leaves_other_braces() -> None:
    from pytest_groundeval.targets.placeholders import fill_placeholders

    values = {"port": "8123", "data_dir": "/d", "llm_url": None, "embed_url": "http://e/v1", "api_key": "ge_k"}
    command = (
        'serve --port {port} --key {api_key} --home ${HOME} --json \'{"a": {"b": 1}}\' '
        "| awk '{print $1}' {} {a,b} {{port}} {{name}} ${port}"
    )
    assert fill_placeholders(command, values) == (
        'serve --port 8123 --key ge_k --home ${HOME} --json \'{"a": {"b": 1}}\' '
        "| awk '{print $1}' {} {a,b} {port} {name} $8123"
    )


def test_an_unknown_placeholder_names_itself_and_the_valid_ones(tmp_path: Path) -> None:
    config = SpawnConfig(command="serve --port {prot} --dir {data-dir}", base_dir=tmp_path)
    with pytest.raises(ValueError) as info:
        SpawnedTarget(config).start()
    message = str(info.value)
    assert "uses {prot}, {data-dir}, which are not placeholders" in message
    assert "the placeholders are {port}, {data_dir}, {llm_url}, {embed_url}, {api_key}" in message
    assert "write {{prot}} for a literal {prot}" in message
