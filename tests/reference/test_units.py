"""Unit tests of the reference target's pure parts: SSE reader, verifier, chunking, time, decomposition."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TypeVar

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groundeval.mock import MockProvider, embed_text
from pytest_groundeval.reference.bitemporal import Version, is_visible, parse_instant
from pytest_groundeval.reference.decompose import parse_decomposition
from pytest_groundeval.reference.provider import (
    ProviderClient,
    ProviderError,
    ProviderSettings,
    SSEDecoder,
    SSEEvent,
    parse_retry_after,
    read_chat_stream,
)
from pytest_groundeval.reference.retrieval import bm25_scores, canonical_document, paragraph_spans, render_chunk
from pytest_groundeval.reference.verify import novel_content_words, same_word, verify_claim

T = TypeVar("T")

# ----------------------------------------------------------------------- SSE


def _chunk(content: str) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": {"content": content}}]}, ensure_ascii=False)


STREAM = (
    ": keep-alive comment\n\n"
    f"data: {_chunk('Hej ')}\n\n"
    f"data: {_chunk('Göteborg 東京.')}\n\n"
    'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}\n\n'
    "data: [DONE]\n\n"
).encode()


def _feed_all(decoder: SSEDecoder, pieces: Iterable[bytes]) -> list[SSEEvent]:
    return [event for piece in pieces for event in decoder.feed(piece)] + decoder.close()


def test_sse_events_are_the_same_however_the_bytes_are_split() -> None:
    whole = _feed_all(SSEDecoder(), [STREAM])
    byte_by_byte = _feed_all(SSEDecoder(), [STREAM[i : i + 1] for i in range(len(STREAM))])
    assert byte_by_byte == whole
    assert [e.data for e in whole][-1] == "[DONE]"
    assert len(whole) == 4  # the comment dispatches nothing


@pytest.mark.parametrize("newline", [b"\r\n", b"\r", b"\n"])
def test_sse_accepts_crlf_cr_and_lf_line_endings(newline: bytes) -> None:
    raw = STREAM.replace(b"\n", newline)
    events = _feed_all(SSEDecoder(), [raw[i : i + 3] for i in range(0, len(raw), 3)])
    assert events == _feed_all(SSEDecoder(), [STREAM])


def test_sse_joins_multi_line_data_and_reads_the_event_name() -> None:
    events = SSEDecoder().feed(b'event: error\ndata: {"a":\ndata: 1}\nid: 7\n\n')
    assert events == [SSEEvent("error", '{"a":\n1}')]


def test_sse_holds_a_trailing_cr_until_it_knows_whether_lf_follows() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\n\r") == []
    assert decoder.feed(b"\n") == [SSEEvent("message", "x")]


def _run(pieces: Iterable[bytes]) -> tuple[str, object]:
    async def chunks() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    return asyncio.run(read_chat_stream(chunks()))


def test_chat_stream_text_and_usage_survive_split_utf8() -> None:
    text, usage = _run([STREAM[i : i + 5] for i in range(0, len(STREAM), 5)])
    assert text == "Hej Göteborg 東京."
    assert (usage.prompt_tokens, usage.completion_tokens) == (7, 3)


def test_chat_stream_without_done_is_an_error() -> None:
    cut = STREAM[: STREAM.index(b"data: [DONE]")]
    with pytest.raises(ProviderError, match=r"stream ended before \[DONE\]"):
        _run([cut])
    with pytest.raises(ProviderError, match=r"stream ended before \[DONE\]"):
        _run([STREAM[:40]])  # cut inside an event


def test_chat_stream_done_without_final_blank_line_is_accepted() -> None:
    text, _ = _run([STREAM.rstrip(b"\n")])
    assert text == "Hej Göteborg 東京."


def test_chat_stream_error_object_in_a_200_stream_is_an_error() -> None:
    raw = (
        f"data: {_chunk('Hej')}\n\n".encode()
        + b'data: {"error":{"message":"model overloaded","code":"overloaded"}}\n\n'
    )
    with pytest.raises(ProviderError, match="error inside the stream: model overloaded"):
        _run([raw])
    with pytest.raises(ProviderError, match="error inside the stream"):
        _run([b'event: error\ndata: {"message":"boom"}\n\n'])


def test_chat_stream_malformed_json_is_an_error() -> None:
    with pytest.raises(ProviderError, match="malformed JSON in the stream"):
        _run([b'data: {"choices":[{"delta":\n\n'])


@pytest.mark.parametrize(("header", "seconds"), [("2", 2.0), ("0.5", 0.5), (None, None), ("soon", None), ("-3", 0.0)])
def test_retry_after_seconds(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds


def test_retry_after_http_date() -> None:
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:03 GMT", now=1445412480.0) == pytest.approx(3.0)


# ------------------------------------------------------------------ verifier

SPAN = "Revenue rose 12% in the third quarter after the Stockholm launch."


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("Revenue rose 12% in the third quarter after the Stockholm launch. [S1]", "supported"),
        ("After the Stockholm launch, revenue rose 12% in the third quarter. [S1]", "supported"),
        ("Revenues rose 12% in the third quarter. [S1]", "supported"),  # inflection drift
        ("Revenue fell 12% in the third quarter after the Stockholm launch. [S1]", "unsupported"),
        ("Revenue rose 12% in the third quarter after the Oslo launch. [S1]", "unsupported"),
        ("Revenue rose 21% in the third quarter after the Stockholm launch. [S1]", "contradicted"),
        ("The Stockholm launch was not in the third quarter. [S1]", "contradicted"),
        ("Revenue rose 12% in the third quarter after the Stockholm launch.", "unsupported"),  # uncited
    ],
)
def test_verify_claim(claim: str, verdict: str) -> None:
    markers = ["S1"] if "[S1]" in claim else []
    check = verify_claim(claim, markers, {"S1": SPAN})
    assert check.verdict == verdict, check.reason


def test_a_contraction_matches_the_spelled_out_negation() -> None:
    evidence = {"S1": "The migration does not change the public API."}
    assert verify_claim("The migration doesn't change the public API. [S1]", ["S1"], evidence).verdict == "supported"
    assert verify_claim("The migration changes the public API. [S1]", ["S1"], evidence).verdict == "contradicted"


def test_leaving_out_another_negated_sentence_of_the_span_is_fine() -> None:
    evidence = {"S1": "Project Beta migrates the billing database. It does not change the public API."}
    assert verify_claim("Project Beta migrates the billing database. [S1]", ["S1"], evidence).verdict == "supported"


def test_a_claim_citing_an_unknown_marker_is_unsupported() -> None:
    check = verify_claim("Revenue rose 12%. [S9]", ["S9"], {"S1": SPAN})
    assert check.verdict == "unsupported"
    assert "S9" in check.reason


def test_a_claim_joining_two_cited_spans_is_supported() -> None:
    evidence = {"S1": "Project Alpha is led by Ingrid.", "S2": "Project Alpha has a budget of 3.5 MSEK."}
    claim = "Project Alpha is led by Ingrid and has a budget of 3.5 MSEK. [S1][S2]"
    assert verify_claim(claim, ["S1", "S2"], evidence).verdict == "supported"
    assert verify_claim(claim, ["S1"], evidence).verdict != "supported"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("shipped", "ships", True),
        ("öppnade", "öppnar", True),
        ("rose", "fell", False),
        ("stockholm", "oslo", False),
        ("12%", "12", False),
        ("isn't", "not", True),
        ("not", "never", False),
        ("may", "mars", False),
        # A one-letter token (the "d" of "D.C.") accounts for nothing but itself.
        ("designed", "d", False),
        ("d", "designed", False),
        ("d", "d", True),
        # Short words drift only by an inflection ending.
        ("runs", "run", True),
        ("running", "run", True),
        ("åren", "år", True),
        ("cart", "car", False),
        ("artist", "art", False),
        ("honors", "honor", True),
        # Spanish moves the written stress when a word inflects; å/ä/ö/ñ stay letters.
        ("prohíbe", "prohibidos", True),
        ("está", "estaban", True),
        ("año", "ano", False),
        ("år", "ar", False),
    ],
)
def test_same_word(a: str, b: str, same: bool) -> None:
    assert same_word(a, b) is same


# From datasets/v1 (halueval-adv-11): the passage is about Washington, D.C.; nothing in it says who designed what.
LINCOLN_SPAN = (
    "Henry Bacon (November 28, 1866 – February 16, 1924) was an American Beaux-Arts architect who is best "
    "remembered for the Lincoln Memorial in Washington, D.C. (built 1915–22), which was his final project. "
    "The Lincoln Memorial is an American national monument built to honor the 16th President of the United "
    "States, Abraham Lincoln. Dedicated in 1922, it is one of several monuments built to honor an American president."
)


def test_a_one_letter_token_of_the_span_does_not_support_a_planted_falsehood() -> None:
    check = verify_claim(
        "The architect who designed the Lincoln Memorial was Abraham Lincoln. [S1]", ["S1"], {"S1": LINCOLN_SPAN}
    )
    assert check.verdict == "unsupported"
    assert "designed" in check.reason


@pytest.mark.parametrize(
    "claim",
    [
        "Henry Bacon was the architect of the Lincoln Memorial in Washington, D.C. [S1]",
        "The Lincoln Memorial honors Abraham Lincoln, the 16th President of the United States. [S1]",
        "The Lincoln Memorial was dedicated in 1922. [S1]",
    ],
)
def test_faithful_restatements_of_the_span_stay_supported(claim: str) -> None:
    check = verify_claim(claim, ["S1"], {"S1": LINCOLN_SPAN})
    assert check.verdict == "supported", check.reason


def test_numbered_markers_are_stripped_like_evidence_markers() -> None:
    # contract.MARKER_IN_TEXT_PATTERN: "[1]" is citation syntax, not the number 1.
    claim = "Revenue rose 12% in the third quarter after the Stockholm launch. [1][S1]"
    assert verify_claim(claim, ["1", "S1"], {"S1": SPAN}).verdict == "supported"
    (parsed,) = parse_decomposition('{"claims": [{"text": "A fact. [1]"}]}', "A fact. [1]")
    assert parsed.markers == ["1"]


def test_function_words_are_not_novel() -> None:
    assert novel_content_words("It was the launch of the service", ["Launch service"]) == []
    assert novel_content_words("Oslo launch", ["Stockholm launch"]) == ["oslo"]


# ------------------------------------------------------------------ chunking


def test_json_canonical_text_and_record_offsets() -> None:
    records = [{"b": "Åre", "a": [1, 2]}, {"z": "東京"}]
    text, spans = canonical_document("json", records)
    assert text == '{"a":[1,2],"b":"Åre"}\n{"z":"東京"}'
    data = text.encode()
    assert [data[s.start : s.end].decode() for s in spans] == text.split("\n")
    single_text, single = canonical_document("json", {"k": 1})
    assert single_text == '{"k":1}' and (single[0].start, single[0].end) == (0, 7)


def test_text_paragraphs_with_crlf_and_blank_lines() -> None:
    text, spans = canonical_document("text", "  Första stycket.\r\nfortsätter\r\n\r\n\r\n東京。\r\r   \nSista.  ")
    assert text == "  Första stycket.\nfortsätter\n\n\n東京。\n\n   \nSista.  "
    assert [s.text for s in spans] == ["Första stycket.\nfortsätter", "東京。", "Sista."]
    data = text.encode()
    assert all(data[s.start : s.end].decode() == s.text for s in spans)
    assert render_chunk(spans[0].text) == "Första stycket. fortsätter"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(list("ab é東\n\t") + ["\n\n", " \n \n"]), max_size=40).map("".join))
def test_paragraph_spans_slice_exactly_and_cover_every_non_space_character(text: str) -> None:
    spans = paragraph_spans(text)
    data = text.encode()
    for span in spans:
        assert data[span.start : span.end].decode() == span.text
        assert span.text == span.text.strip() and span.text
    assert all(a.end < b.start for a, b in zip(spans, spans[1:]))
    assert "".join("".join(s.text.split()) for s in spans) == "".join(text.split())


def test_bm25_prefers_the_chunk_with_the_question_terms() -> None:
    scores = bm25_scores(
        "When did the Göteborg office open?", ["The Malmö office.", "Göteborg office opened in 2021.", "x"]
    )
    assert scores[1] > scores[0] > scores[2] == 0.0


# ---------------------------------------------------------------------- time


def test_instants_with_different_offsets_are_equal() -> None:
    assert parse_instant("2024-03-01T12:00:00+02:00") == parse_instant("2024-03-01T10:00:00Z")
    assert parse_instant("1970-01-01T00:00:00.250Z") == 250
    with pytest.raises(ValueError, match="no UTC offset"):
        parse_instant("2024-03-01T12:00:00")
    with pytest.raises(ValueError, match="not an RFC 3339"):
        parse_instant("March 1st")


def _version(tx_start: int, tx_end: int | None, valid: tuple[int | None, int | None]) -> Version:
    return Version("r", "L", {}, None, None, valid[0], valid[1], tx_start, tx_end)


@pytest.mark.parametrize(
    ("tx", "valid", "visible"),
    [
        (10, 100, True),
        (9, 100, False),
        (20, 100, False),
        (19, 100, True),
        (10, 50, True),
        (10, 49, False),
        (10, 200, False),
    ],
)
def test_visibility_is_half_open_in_both_times(tx: int, valid: int, visible: bool) -> None:
    assert is_visible(_version(10, 20, (50, 200)), tx, valid) is visible


def test_open_ends_are_unbounded() -> None:
    assert is_visible(_version(10, None, (None, None)), 10**15, -(10**15))


# ------------------------------------------------------------- decomposition


def test_decomposition_offsets_are_repaired_when_wrong() -> None:
    draft = "Åre är kallt. [S1] Oslo är stort. [S2]"
    content = json.dumps({"claims": [{"text": "Åre är kallt. [S1]", "start": 0, "end": 3, "markers": []},
                                     {"text": "Oslo är stort. [S2]", "start": 22, "end": 43, "markers": ["S2"]}]})  # fmt: skip
    claims = parse_decomposition(content, draft)
    data = draft.encode()
    assert [data[c.start : c.end].decode() for c in claims] == ["Åre är kallt. [S1]", "Oslo är stort. [S2]"]
    assert [c.markers for c in claims] == [["S1"], ["S2"]]


def test_decomposition_inside_a_code_fence_is_read() -> None:
    content = '```json\n{"claims": [{"text": "A.", "start": 0, "end": 2, "markers": []}]}\n```'
    assert parse_decomposition(content, "A.")[0].end == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not JSON"),
        ('{"items": []}', "without a 'claims' list"),
        ('{"claims": [{"start": 0}]}', "item 0 has no 'text'"),
        ('{"claims": [{"text": "Paraphrased."}]}', "does not occur in the draft"),
    ],
)
def test_bad_decompositions_are_provider_errors(content: str, message: str) -> None:
    with pytest.raises(ProviderError, match=message):
        parse_decomposition(content, "The draft. [S1]")


# ------------------------------------------------------- provider client, in-process


def _with_client(settings_kwargs: dict, body: Callable[[ProviderClient, MockProvider], Awaitable[T]]) -> T:
    async def run() -> T:
        async with MockProvider() as mock, aiohttp.ClientSession() as session:
            settings = ProviderSettings(llm_url=mock.base_url, embed_url=mock.base_url, **settings_kwargs)
            return await body(ProviderClient(session, settings), mock)

    return asyncio.run(run())


def test_retry_after_is_capped_and_the_retry_succeeds() -> None:
    async def body(client: ProviderClient, mock: MockProvider) -> tuple[str, list[int]]:
        text, _ = await client.chat_stream(
            [{"role": "user", "content": "[S1] Åre är kallt.\nQuestion: q"}], "m+fault=429:30x1"
        )
        return text, [r.status for r in mock.log]

    # Retry-After says 30 s; the cap (0.05 s) wins, so this returns at once.
    text, statuses = _with_client({"retry_after_cap_s": 0.05}, body)
    assert text == "Åre är kallt. [S1]"
    assert statuses == [429, 200]


def test_a_wait_past_the_deadline_gives_up_at_once() -> None:
    async def body(client: ProviderClient, mock: MockProvider) -> int:
        with pytest.raises(ProviderError, match=r"HTTP 429 for /embeddings \(gave up after 1 attempt\)"):
            await client.embed(["x"], "m+fault=429:4")
        return len(mock.log)

    assert _with_client({"timeout_s": 1.0}, body) == 1


def test_embeddings_go_in_batches_and_keep_input_order() -> None:
    texts = [f"word{n} text" for n in range(70)]

    async def body(client: ProviderClient, mock: MockProvider) -> tuple[list[list[float]], int]:
        vectors, usage = await client.embed(texts, "mock-embed")
        assert usage.prompt_tokens > 0
        return vectors, len(mock.log)

    vectors, calls = _with_client({"embed_batch_size": 64}, body)
    assert calls == 2
    assert vectors == [pytest.approx(embed_text(t)) for t in texts]


def test_now_sees_writes_stamped_ahead_of_the_wall_clock(tmp_path):
    """Writes faster than one per ms push the tenant clock past the wall clock; "now" must still see them."""
    from pytest_groundeval.reference import bitemporal, store

    conn = store.open_database(tmp_path)
    store.migrate(conn)
    store.add_key(conn, "t1", "key")
    record_id, _ = bitemporal.write_record(
        conn, "t1", op="create", target=None, label="L", properties={"v": "wrong"}, valid=None
    )
    # As if thousands of writes had just landed within the same wall-clock millisecond.
    conn.execute("UPDATE tenants SET last_tx = last_tx + 60000 WHERE id = 't1'")
    _, fixed_tx = bitemporal.write_record(
        conn, "t1", op="update", target=record_id, label="L", properties={"v": "right"}, valid=None
    )
    assert fixed_tx > store.now_ms() + 50000
    now = store.now_ms()
    records = bitemporal.query_records(conn, "t1", label="L", target=None, as_of_tx=None, as_of_valid_ms=now)
    assert [r["properties"] for r in records] == [{"v": "right"}]
    changes = bitemporal.compare_records(conn, "t1", label="L", target=None, from_tx=fixed_tx - 1, to_tx=None)
    assert len(changes["changed"]) == 1


# ------------------------------------------------------------------- serving


def test_serve_freezes_what_it_has_imported_once_listening(tmp_path, monkeypatch) -> None:
    """The interpreter's collections at exit no longer walk the modules (benchmarks/README.md, "Start-up, fourth pass")."""
    from pytest_groundeval.reference import app

    frozen_when: list[bool] = []
    # Recorded, not done: whether the port was announced yet when the server froze.
    monkeypatch.setattr(app.gc, "freeze", lambda: frozen_when.append((tmp_path / app.PORT_FILE_NAME).exists()))
    config = app.ReferenceConfig(data_dir=tmp_path, llm_url="http://127.0.0.1:9/v1", embed_url="http://127.0.0.1:9/v1")

    async def serve_until_listening() -> None:
        serving = asyncio.create_task(app.serve(config))
        while not (tmp_path / app.PORT_FILE_NAME).exists():
            assert not serving.done(), serving.exception()
            await asyncio.sleep(0.01)
        serving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await serving

    asyncio.run(serve_until_listening())
    assert frozen_when == [False]
