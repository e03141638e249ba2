"""Tests of pytest_groundeval.dataset: manifest v1 models, corpus loading, hashing (docs/dataset.md, docs/evidence-risk.md, docs/citation.md)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pytest_groundeval.core.dataset import (
    CHUNK_SIZE,
    ITEM_ADAPTER,
    CorpusDocument,
    DatasetError,
    Manifest,
    canonical_json,
    canonical_text,
    hash_file,
    load_dataset,
)
from pytest_groundeval.core.kinds.adversarial import AdversarialItem
from pytest_groundeval.core.kinds.citation import CitationItem
from pytest_groundeval.core.kinds.qa import ExpectedEvidence, QaItem
from pytest_groundeval.core.kinds.review import ReviewItem
from pytest_groundeval.core.kinds.temporal import (
    CompareExpect,
    CompareProbe,
    QueryExpect,
    QueryProbe,
    Reference,
    TemporalItem,
    parse_reference,
    parse_rfc3339,
)
from tests._support.datasets import ADVERSARIAL, CITATION, ITEMS, NOTES, QA, REVIEW, TEMPORAL, write_dataset

REPO = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- builders
# The dataset itself (write_dataset, dataset_dir): tests/_support/datasets.py.


def load_error(root: Path) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        load_dataset(root)
    return info.value


# --------------------------------------------------------------------------- loading a valid dataset


def test_load_valid_dataset(dataset_dir: Path) -> None:
    dataset = load_dataset(dataset_dir)
    assert dataset.root == dataset_dir
    assert dataset.manifest_path == dataset_dir / "manifest.json"
    assert dataset.version == "v1"
    assert [i.id for i in dataset.items] == [i["id"] for i in ITEMS]
    assert [type(i) for i in dataset.items] == [QaItem, AdversarialItem, TemporalItem, CitationItem, ReviewItem]
    assert dataset.by_id["review-dose"] is dataset.items[4]
    assert list(dataset.documents) == ["eval/notes.json", "eval/log.txt"]
    assert dataset.manifest.corpus_hashes["log.txt"] == dataset.documents["eval/log.txt"].content_hash


def test_load_accepts_the_manifest_path(dataset_dir: Path) -> None:
    dataset = load_dataset(str(dataset_dir / "manifest.json"))
    assert dataset.root == dataset_dir
    assert dataset.by_id["qa-project-alpha"].find == "PROJECT_NOTE"


def test_item_lines_point_at_each_item_object(dataset_dir: Path) -> None:
    dataset = load_dataset(dataset_dir)
    lines = (dataset_dir / "manifest.json").read_text(encoding="utf-8").splitlines()
    for item_id, line in dataset.item_lines.items():
        # json.dumps(indent=2) puts "{" alone on the line before the item's first key, "id".
        assert lines[line - 1].strip() == "{"
        assert lines[line].strip() == f'"id": "{item_id}",'


def test_item_lines_on_a_compact_manifest(tmp_path: Path) -> None:
    root = write_dataset(tmp_path)
    data = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    text = '{{"version": "v1", "corpus": {}, "corpusHashes": {},\n"items": [\n\n{}, {}]}}'.format(
        json.dumps(data["corpus"]),
        json.dumps(data["corpusHashes"]),
        json.dumps(QA),
        json.dumps(REVIEW),
    )
    (root / "manifest.json").write_text(text, encoding="utf-8")
    assert load_dataset(root).item_lines == {"qa-project-alpha": 4, "review-dose": 4}


def test_item_kinds_expose_their_fields(dataset_dir: Path) -> None:
    dataset = load_dataset(dataset_dir)
    qa = dataset.by_id["qa-project-alpha"]
    assert qa.expected_evidence[1] == ExpectedEvidence(document="eval/notes.json", text="Göteborg")
    assert qa.expected_texts == [(None, "火曜日"), ("eval/notes.json", "Göteborg")]
    adversarial = dataset.by_id["adv-moon"]
    assert adversarial.cited is True
    assert adversarial.falsehood == "The moon is cheese."
    temporal = dataset.by_id["temporal-price"]
    assert isinstance(temporal.probe, QueryProbe) and isinstance(temporal.expect, QueryExpect)
    assert temporal.setup[0].valid_time.end is None
    assert temporal.setup[1].properties == {"sku": "A", "price": 12}
    citation = dataset.by_id["cite-debate"]
    assert citation.sources[0].metadata["speaker"] == "Åsa Berg"
    review = dataset.by_id["review-dose"]
    assert review.evidence.sources[0].declared_tier == "official"


def test_adversarial_uncited_prefix() -> None:
    item = ITEM_ADAPTER.validate_python({"id": "a", "kind": "adversarial", "question": "ECHO:Paris is in Spain"})
    assert (item.cited, item.falsehood) == (False, "Paris is in Spain")


def test_compare_probe_and_expect() -> None:
    item = ITEM_ADAPTER.validate_python(
        {
            **TEMPORAL,
            "probe": {"call": "compare", "label": "PRICE", "fromTx": "$tx:v1", "toTx": 1717000000000},
            "expect": {"changed": 1},
        }
    )
    assert isinstance(item.probe, CompareProbe) and isinstance(item.expect, CompareExpect)
    assert (item.expect.added, item.expect.changed, item.probe.to_tx) == (None, 1, 1717000000000)


def test_citation_with_recorded_response_needs_no_question() -> None:
    item = ITEM_ADAPTER.validate_python(
        {
            "id": "c",
            "kind": "citation",
            "response": {
                "answer": "Åsa said yes [S1].",
                "sources": [{"marker": "S1", "text": "Åsa: yes", "metadata": {"speaker": "Åsa"}}],
            },
        }
    )
    assert item.question is None and item.response.sources[0].text == "Åsa: yes"


def test_mention_pattern_is_compiled(tmp_path: Path) -> None:
    root = write_dataset(tmp_path, extra={"mentionPattern": r"(?P<speaker>[A-ZÅÄÖ]\w+ [A-ZÅÄÖ]\w+) \((?P<party>\w+)\)"})
    manifest = load_dataset(root).manifest
    match = manifest.mention_regex.search("Då sa Åsa Berg (S) att …")
    assert match is not None and match.groupdict() == {"speaker": "Åsa Berg", "party": "S"}


def test_tag_equal_to_a_kind_name_is_fine() -> None:
    item = ITEM_ADAPTER.validate_python({**QA, "tags": ["qa", "adversarial", "_x1"]})
    assert item.tags == ["qa", "adversarial", "_x1"]


# --------------------------------------------------------------------------- both spellings


def snake_keys(value: Any, free_form: bool = False) -> Any:
    """Rewrite camelCase keys to snake_case, leaving user-defined mappings alone."""
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    if isinstance(value, dict):
        if free_form:
            return value
        return {
            re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): snake_keys(
                v, free_form=k in ("properties", "metadata", "corpusHashes")
            )
            for k, v in value.items()
        }
    return value


def test_both_spellings_round_trip(tmp_path: Path) -> None:
    camel = load_dataset(write_dataset(tmp_path / "camel")).manifest
    raw = json.loads((tmp_path / "camel" / "manifest.json").read_text(encoding="utf-8"))
    snake_raw = snake_keys(raw)
    assert "corpus_hashes" in snake_raw and "expected_evidence" in snake_raw["items"][0]
    assert "as_of_tx" in snake_raw["items"][2]["probe"]
    snake = Manifest.model_validate(snake_raw)
    assert snake == camel
    wire = camel.to_wire()
    assert wire["corpusHashes"] == raw["corpusHashes"]
    assert wire["items"][0]["expectedEvidence"] == QA["expectedEvidence"]
    assert wire["items"][4]["evidence"]["sources"][0]["declaredTier"] == "official"
    assert Manifest.model_validate(wire) == camel
    # A snake_case manifest.json loads too, with the same items.
    write_dataset(tmp_path / "snake")
    (tmp_path / "snake" / "manifest.json").write_text(json.dumps(snake_raw, ensure_ascii=False), encoding="utf-8")
    assert load_dataset(tmp_path / "snake").manifest == camel


# --------------------------------------------------------------------------- canonical text and slicing


def test_json_document_canonical_text_and_slices(dataset_dir: Path) -> None:
    document = load_dataset(dataset_dir).documents["eval/notes.json"]
    assert document.format == "json" and document.label == "PROJECT_NOTE" and document.file == "notes.json"
    assert document.content == NOTES
    expected = (
        '{"body":"Öppet året runt.","title":"Smörgåsbord i Göteborg"}\n'
        '{"body":"東京の会議は火曜日です。","title":"会議"}'
    )
    assert document.canonical == expected
    assert document.canonical_bytes == expected.encode("utf-8")
    raw = (dataset_dir / "corpus" / "notes.json").read_bytes()
    assert document.content_hash == xxhash.xxh3_64_hexdigest(raw)
    start = document.canonical_bytes.index("火曜日".encode())
    assert document.slice(start, start + len("火曜日".encode())) == "火曜日"
    assert document.slice(0, len(document.canonical_bytes)) == expected
    assert document.slice(5, 5) == ""


def test_single_json_object_becomes_one_record(tmp_path: Path) -> None:
    data = '{"b": "ö", "a": [1, {"z": 2, "y": "東"}]}'.encode()
    root = write_dataset(
        tmp_path,
        items=[{"id": "q", "kind": "qa", "question": "?"}],
        corpus=[{"name": "one", "label": "L", "file": "one.json"}],
        files={"one.json": data},
    )
    document = load_dataset(root).documents["one"]
    assert document.format == "json"
    assert document.content == [{"b": "ö", "a": [1, {"z": 2, "y": "東"}]}]
    assert document.canonical == '{"a":[1,{"y":"東","z":2}],"b":"ö"}'


def test_text_document_canonical_text_and_slices(dataset_dir: Path) -> None:
    document = load_dataset(dataset_dir).documents["eval/log.txt"]
    assert document.canonical == "First line\nÅsa wrote: 東京\nlast line\n"
    assert document.content == document.canonical
    start = document.canonical_bytes.index("Åsa".encode())
    assert document.slice(start, start + len("Åsa wrote".encode())) == "Åsa wrote"


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (-1, 3, "span [-1, 3) is outside document 'eval/log.txt'"),
        (0, 10_000, "span [0, 10000) is outside document 'eval/log.txt'"),
        (5, 4, "span [5, 4) is outside document 'eval/log.txt'"),
        (12, 14, "byte offset 12 is not on a character boundary"),  # inside "Å" (bytes 11-12)
        (11, 12, "byte offset 12 is not on a character boundary"),
    ],
)
def test_slice_rejects_bad_offsets(dataset_dir: Path, start: int, end: int, message: str) -> None:
    document = load_dataset(dataset_dir).documents["eval/log.txt"]
    assert document.canonical_bytes[11:13] == "Å".encode()
    with pytest.raises(ValueError, match="eval/log.txt") as info:
        document.slice(start, end)
    assert message in str(info.value)


def test_canonical_helpers() -> None:
    assert canonical_text("a\r\nb\rc\n\r\n") == "a\nb\nc\n\n"
    assert canonical_json([{"b": 1, "a": "ä"}, {}]) == '{"a":"ä","b":1}\n{}'


@settings(max_examples=60, deadline=None)
@given(text=st.text(), data=st.data())
def test_slice_agrees_with_character_slices(text: str, data: st.DataObject) -> None:
    canonical = canonical_text(text)
    document = CorpusDocument(
        name="d",
        label="L",
        file="d.txt",
        format="text",
        content=canonical,
        content_hash="0" * 16,
        canonical=canonical,
        canonical_bytes=canonical.encode("utf-8", "surrogatepass"),
    )
    if any(0xD800 <= ord(c) <= 0xDFFF for c in canonical):
        return  # lone surrogates are not UTF-8 text; a real corpus file cannot hold them
    i = data.draw(st.integers(0, len(canonical)))
    j = data.draw(st.integers(i, len(canonical)))
    start, end = len(canonical[:i].encode("utf-8")), len(canonical[:j].encode("utf-8"))
    assert document.slice(start, end) == canonical[i:j]


# --------------------------------------------------------------------------- hashing


@pytest.mark.parametrize("buffer_size", [None, 4096])
def test_hash_file_across_read_boundaries(tmp_path: Path, buffer_size: int | None) -> None:
    from pytest_groundeval.core.dataset import HASH_BUFFER_SIZE

    size = buffer_size or HASH_BUFFER_SIZE
    data = os.urandom(3 * size + 1234)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    kwargs = {"buffer_size": buffer_size} if buffer_size else {}
    assert hash_file(path, **kwargs) == xxhash.xxh3_64_hexdigest(data)
    path.write_bytes(data[: 2 * size])  # ends exactly on a read boundary
    assert hash_file(path, **kwargs) == xxhash.xxh3_64_hexdigest(data[: 2 * size])


def test_hash_file_streams_large_files(tmp_path: Path) -> None:
    data = os.urandom(3 * CHUNK_SIZE + 1234)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert len(data) > 64 * 1024
    assert hash_file(path) == xxhash.xxh3_64_hexdigest(data)
    exact = tmp_path / "exact.bin"
    exact.write_bytes(data[: 2 * CHUNK_SIZE])
    assert hash_file(str(exact)) == xxhash.xxh3_64_hexdigest(data[: 2 * CHUNK_SIZE])
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert hash_file(empty) == xxhash.xxh3_64_hexdigest(b"")


def test_large_corpus_file_loads_with_matching_hash(tmp_path: Path) -> None:
    text = ("Rad med åäö och 漢字.\n" * 8000).encode("utf-8")
    assert len(text) > CHUNK_SIZE
    root = write_dataset(
        tmp_path,
        items=[{"id": "q", "kind": "qa", "question": "?"}],
        corpus=[{"name": "big", "label": "L", "file": "big.txt", "format": "text"}],
        files={"big.txt": text},
    )
    document = load_dataset(root).documents["big"]
    assert document.content_hash == xxhash.xxh3_64_hexdigest(text)
    assert document.canonical_bytes == text


def test_hash_mismatch_names_file_digests_and_remedy(dataset_dir: Path) -> None:
    path = dataset_dir / "corpus" / "notes.json"
    recorded = xxhash.xxh3_64_hexdigest(path.read_bytes())
    path.write_bytes(path.read_bytes() + b" ")
    actual = xxhash.xxh3_64_hexdigest(path.read_bytes())
    error = load_error(dataset_dir)
    message = str(error)
    assert str(path) in message and recorded in message and actual in message
    assert "bump the dataset version" in message
    assert f"groundeval hash-corpus --dataset {dataset_dir}" in message
    assert "line endings" not in message
    assert error.path == path


def test_hash_mismatch_from_crlf_checkout_says_line_endings_were_converted(dataset_dir: Path) -> None:
    path = dataset_dir / "corpus" / "log.txt"
    lf = b"one\ntwo\n"
    manifest = json.loads((dataset_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["corpusHashes"]["log.txt"] = xxhash.xxh3_64_hexdigest(lf)
    (dataset_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    path.write_bytes(b"one\r\ntwo\r\n")  # what git with core.autocrlf=true checks out on Windows
    message = str(load_error(dataset_dir))
    assert "converted line endings" in message and "autocrlf" in message
    assert ".gitattributes" in message and "-text" in message
    assert xxhash.xxh3_64_hexdigest(lf) in message and xxhash.xxh3_64_hexdigest(b"one\r\ntwo\r\n") in message


# --------------------------------------------------------------------------- corpus and manifest errors


def test_missing_corpus_file(dataset_dir: Path) -> None:
    (dataset_dir / "corpus" / "log.txt").unlink()
    error = load_error(dataset_dir)
    assert str(dataset_dir / "corpus" / "log.txt") in str(error)
    assert "corpus[1] ('eval/log.txt') cannot be read: file not found" in str(error)


def test_corpus_file_without_hash(tmp_path: Path) -> None:
    root = write_dataset(
        tmp_path, hashes={"notes.json": xxhash.xxh3_64_hexdigest(json.dumps(NOTES, ensure_ascii=False).encode())}
    )
    error = load_error(root)
    assert "corpus file 'log.txt' has no hash in corpusHashes" in str(error)
    assert f"groundeval hash-corpus --dataset {root}" in str(error)
    assert error.json_path == "corpus[1].file"


def test_hash_for_a_file_not_in_corpus(tmp_path: Path) -> None:
    files = {"notes.json": b"[]", "log.txt": b"x"}
    hashes = {n: xxhash.xxh3_64_hexdigest(d) for n, d in files.items()} | {"old.json": "0123456789abcdef"}
    error = load_error(write_dataset(tmp_path, hashes=hashes, files=files))
    assert "corpusHashes has a hash for 'old.json', which no corpus entry uses" in str(error)
    assert error.json_path == 'corpusHashes["old.json"]'


@pytest.mark.parametrize(
    ("evidence", "json_path", "place"),
    [
        (["火曜日", "Thursday"], "items[0].expectedEvidence[1]", "any corpus document"),
        (
            [{"document": "eval/log.txt", "text": "Göteborg"}],
            "items[0].expectedEvidence[0].text",
            "document 'eval/log.txt'",
        ),
    ],
    ids=["absent-everywhere", "absent-from-its-pinned-document"],
)
def test_expected_evidence_absent_from_the_corpus_is_a_dataset_error(tmp_path, evidence, json_path, place) -> None:
    # No target could retrieve it: the dataset is wrong, not the target (issue 19).
    error = load_error(write_dataset(tmp_path, items=[dict(QA, expectedEvidence=evidence), REVIEW]))
    assert error.item_id == "qa-project-alpha" and error.json_path == json_path
    text = evidence[-1] if isinstance(evidence[-1], str) else evidence[-1]["text"]
    assert f"item 'qa-project-alpha', field {json_path}: the expected evidence string {text!r} does not occur" in str(
        error
    )
    assert f"canonical text of {place}" in str(error)


def test_expected_evidence_the_scorer_could_find_is_accepted(tmp_path: Path) -> None:
    from pytest_groundeval.core.scoring import evidence_found

    log = "First line\r\nÅsa wrote: Cafe\u0301 東京\rlast line\n"
    files = {"notes.json": json.dumps(NOTES, ensure_ascii=False).encode(), "log.txt": log.encode()}
    # Case, line breaks and runs of white space do not matter; nor does a span that ends between
    # a letter and its combining accent.
    evidence = ["FIRST   LINE åsa", "wrote: cafe", {"document": "eval/log.txt", "text": "東京 last"}]
    dataset = load_dataset(write_dataset(tmp_path, items=[dict(QA, expectedEvidence=evidence)], files=files))
    log_doc = dataset.documents["eval/log.txt"]
    raw = log_doc.canonical_bytes
    span = log_doc.slice(raw.index(b"wrote"), raw.index(b"Cafe") + 4)
    assert span == "wrote: Cafe" and evidence_found("wrote: cafe", [span])


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="aAeé\u0301 \nßs東", max_size=30), data=st.data())
def test_evidence_search_never_refuses_what_a_span_could_match(text: str, data: st.DataObject) -> None:
    from pytest_groundeval.core.scoring import EvidenceSearch, evidence_found, normalize_text

    start = data.draw(st.integers(0, len(text)))
    span = text[start : data.draw(st.integers(start, len(text)))]
    normal = normalize_text(span)
    a = data.draw(st.integers(0, len(normal)))
    needle = normal[a : data.draw(st.integers(a, len(normal)))].strip()
    if needle and evidence_found(needle, [span]):
        assert EvidenceSearch({"doc": text}).occurs(needle)
        assert EvidenceSearch({"doc": text, "other": "x"}).occurs(needle, "doc")


def test_duplicate_item_id_names_both_indexes(tmp_path: Path) -> None:
    error = load_error(write_dataset(tmp_path, items=[QA, REVIEW, dict(QA, question="again?")]))
    assert "duplicate item id 'qa-project-alpha' at items[0] and items[2]" in str(error)
    assert error.item_id == "qa-project-alpha" and error.json_path == "items[2].id"


def test_duplicate_corpus_name(tmp_path: Path) -> None:
    corpus = [
        {"name": "eval/notes.json", "label": "PROJECT_NOTE", "file": "notes.json"},
        {"name": "eval/notes.json", "label": "LOG", "file": "log.txt", "format": "text"},
    ]
    error = load_error(write_dataset(tmp_path, corpus=corpus))
    assert "duplicate corpus name 'eval/notes.json' (also corpus[0])" in str(error)
    assert error.json_path == "corpus[1].name"


def test_empty_manifest_has_no_items(tmp_path: Path) -> None:
    error = load_error(write_dataset(tmp_path, items=[]))
    assert "the manifest has no items; a dataset needs at least one" in str(error)
    assert str(tmp_path / "manifest.json") in str(error)


def test_missing_items_key(tmp_path: Path) -> None:
    root = write_dataset(tmp_path)
    raw = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    del raw["items"]
    (root / "manifest.json").write_text(json.dumps(raw), encoding="utf-8")
    assert "field items: required field is missing" in str(load_error(root))


def test_invalid_json_gives_line_and_column(dataset_dir: Path) -> None:
    (dataset_dir / "manifest.json").write_text('{\n  "version": "v1",\n  "items": [}\n', encoding="utf-8")
    message = str(load_error(dataset_dir))
    assert message.startswith(f"{dataset_dir / 'manifest.json'}: invalid JSON at line 3, column 13:")


def test_trailing_comma_is_invalid_json(dataset_dir: Path) -> None:
    (dataset_dir / "manifest.json").write_text('{"version": "v1", "items": [],}', encoding="utf-8")
    assert "invalid JSON at line 1, column 31" in str(load_error(dataset_dir))


def test_manifest_must_be_an_object(dataset_dir: Path) -> None:
    (dataset_dir / "manifest.json").write_text("[1, 2]", encoding="utf-8")
    assert "the manifest must be a JSON object" in str(load_error(dataset_dir))


def test_duplicate_json_key_is_an_error(dataset_dir: Path) -> None:
    text = (dataset_dir / "manifest.json").read_text(encoding="utf-8")
    text = text.replace('"kind": "qa",', '"kind": "qa", "question": "first?",', 1)
    (dataset_dir / "manifest.json").write_text(text, encoding="utf-8")
    assert "duplicate key 'question' in one JSON object" in str(load_error(dataset_dir))


def test_bad_utf8_in_manifest_gives_byte_offset(dataset_dir: Path) -> None:
    (dataset_dir / "manifest.json").write_bytes(b'{"version": "v1\xff"}')
    message = str(load_error(dataset_dir))
    assert message.startswith(f"{dataset_dir / 'manifest.json'}: not valid UTF-8 at byte offset 15")


@pytest.mark.parametrize("name", ["notes.json", "log.txt"])
def test_bad_utf8_in_corpus_file_gives_file_and_byte_offset(tmp_path: Path, name: str) -> None:
    files = {"notes.json": b'[{"a": "ok"}]', "log.txt": b"ok"}
    files[name] = b"caf\xc3"  # truncated two-byte sequence
    error = load_error(write_dataset(tmp_path, files=files))
    assert str(error) == f"{tmp_path / 'corpus' / name}: not valid UTF-8 at byte offset 3 (unexpected end of data)"


def test_bom_in_manifest(dataset_dir: Path) -> None:
    path = dataset_dir / "manifest.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    message = str(load_error(dataset_dir))
    assert "byte-order mark" in message and "remove it" in message and str(path) in message


def test_bom_in_corpus_file(tmp_path: Path) -> None:
    files = {"notes.json": b"\xef\xbb\xbf[]", "log.txt": b"x"}
    error = load_error(write_dataset(tmp_path, files=files))
    assert str(error).startswith(f"{tmp_path / 'corpus' / 'notes.json'}: starts with a UTF-8 byte-order mark")
    assert "remove it" in str(error)


def test_json_corpus_must_hold_objects(tmp_path: Path) -> None:
    files = {"notes.json": b"[1, 2]", "log.txt": b"x"}
    message = str(load_error(write_dataset(tmp_path, files=files)))
    assert "a json corpus file must hold an array of objects or one object" in message
    assert "'eval/notes.json'" in message


def test_invalid_json_corpus_file(tmp_path: Path) -> None:
    files = {"notes.json": b'[{"a": 1}\n{"b": 2}]', "log.txt": b"x"}
    message = str(load_error(write_dataset(tmp_path, files=files)))
    assert message.startswith(f"{tmp_path / 'corpus' / 'notes.json'}: invalid JSON at line 2, column 1")


def test_missing_manifest(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert str(load_error(tmp_path / "empty")) == f"{tmp_path / 'empty'}: no manifest.json in this dataset directory"
    assert "no such dataset directory or manifest.json" in str(load_error(tmp_path / "nowhere"))


@pytest.mark.parametrize(
    ("version", "fragment"),
    [
        (1, "expected a string"),
        (None, "expected a string"),
        ("", "expected a non-empty label"),
        ("   ", "expected a non-empty label"),
        # re.match(r"...$") let a trailing newline through: "v1\n" printed as v1 but was not v1.
        ("v1\n", "character 2 ('\\n', U+000A) is a control or format character"),
        ("v1\t2", "U+0009"),
        ("v\u200b1", "U+200B"),
        (" v1", "leading or trailing whitespace"),
    ],
)
def test_wrong_version(tmp_path: Path, version: Any, fragment: str) -> None:
    error = load_error(write_dataset(tmp_path, extra={"version": version}))
    assert str(error).startswith(f"{tmp_path / 'manifest.json'}: field version: invalid dataset version {version!r}: ")
    assert fragment in str(error)
    assert error.json_path == "version"


@pytest.mark.parametrize(
    "version", ["v1", "v2", "v1.1", "v3-rc1", "2026-11-30", "rc-3", "holdout-1", "smoke-1", "Åsa 2"]
)
def test_any_printable_label_is_a_version(tmp_path: Path, version: str) -> None:
    # docs/dataset.md: a dataset version is a label its owner chooses.
    assert load_dataset(write_dataset(tmp_path, extra={"version": version})).version == version


def test_shipped_datasets_have_distinct_versions() -> None:
    roots = sorted(path.parent for path in (REPO / "datasets").glob("*/manifest.json"))
    versions = {
        root.name: json.loads((root / "manifest.json").read_text(encoding="utf-8"))["version"] for root in roots
    }
    assert versions["v1"] == "v1.1"
    assert len(set(versions.values())) == len(versions), versions


def test_unknown_top_level_key(tmp_path: Path) -> None:
    error = load_error(write_dataset(tmp_path, extra={"corpusHash": {}}))
    assert "field corpusHash: unknown key 'corpusHash'" in str(error) and "did you mean 'corpusHashes'?" in str(error)


@pytest.mark.parametrize("file", ["../secret.json", "/etc/passwd", "a\\b.json"])
def test_corpus_file_must_stay_inside_corpus(tmp_path: Path, file: str) -> None:
    corpus = [{"name": "x", "label": "L", "file": file}]
    error = load_error(
        write_dataset(tmp_path, corpus=corpus, hashes={}, files={}, items=[{"id": "q", "kind": "qa", "question": "?"}])
    )
    assert "field corpus[0].file" in str(error) and "must be a '/'-separated path inside corpus/" in str(error)


@pytest.mark.parametrize(
    "pattern, message",
    [("(?P<speaker>", "not a valid regular expression"), (r"\w+ \w+", "needs at least one named group")],
)
def test_mention_pattern_must_compile_with_named_groups(tmp_path: Path, pattern: str, message: str) -> None:
    error = load_error(write_dataset(tmp_path, extra={"mentionPattern": pattern}))
    assert f"field mentionPattern: {message}" in str(error)


# --------------------------------------------------------------------------- malformed items

MALFORMED = [
    # (item, json path, item id, message fragment)
    (
        {**QA, "expectedEvidence": ["ok", 42]},
        "items[0].expectedEvidence[1]",
        "qa-project-alpha",
        'expected a string or a {"document": name, "text": str} object; got 42',
    ),
    (
        {**QA, "expectedEvidence": [{"document": "eval/notes.json"}]},
        "items[0].expectedEvidence[0].text",
        "qa-project-alpha",
        "required field is missing",
    ),
    (
        {**QA, "expectedEvidence": [{"document": "eval/nope.json", "text": "x"}]},
        "items[0].expectedEvidence[0].document",
        "qa-project-alpha",
        "document 'eval/nope.json' is not a corpus name; names: 'eval/log.txt', 'eval/notes.json'",
    ),
    (
        {**QA, "find": "PROJECT_NOTES"},
        "items[0].find",
        "qa-project-alpha",
        "find label 'PROJECT_NOTES' is not the label of any corpus entry; labels: 'LOG', 'PROJECT_NOTE'",
    ),
    (
        {**QA, "questoin": "typo"},
        "items[0].questoin",
        "qa-project-alpha",
        "unknown key 'questoin' (unknown keys are errors so typos cannot pass silently); did you mean 'question'?",
    ),
    (
        {k: v for k, v in QA.items() if k != "question"},
        "items[0].question",
        "qa-project-alpha",
        "required field is missing",
    ),
    ({**QA, "truths": "one truth"}, "items[0].truths", "qa-project-alpha", 'expected a JSON array, got "one truth"'),
    ({**QA, "id": "qa.alpha"}, "items[0].id", "items[0]", "an id may contain only letters, digits, '-' and '_'"),
    ({k: v for k, v in QA.items() if k != "id"}, "items[0].id", "items[0]", "required field is missing"),
    (
        {**QA, "tags": ["smoke", "needs-review"]},
        "items[0].tags[1]",
        "qa-project-alpha",
        "a tag must be a valid pytest marker name",
    ),
    (
        {**QA, "tags": ["skip"]},
        "items[0].tags[0]",
        "qa-project-alpha",
        "tag 'skip' is one of pytest's built-in markers",
    ),
    (
        {**QA, "kind": "qna"},
        "items[0]",
        "qa-project-alpha",
        "unknown kind 'qna'; valid kinds: qa, adversarial, temporal, citation, review",
    ),
    (
        {k: v for k, v in QA.items() if k != "kind"},
        "items[0]",
        "qa-project-alpha",
        "missing 'kind'; valid kinds: qa, adversarial, temporal, citation, review",
    ),
    ("just a string", "items[0]", "items[0]", 'expected an item object, got "just a string"'),
    (
        {**ADVERSARIAL, "question": "Is the moon cheese?"},
        "items[0].question",
        "adv-moon",
        "an adversarial question must start with 'ECHO:' or 'ECHO-CITED:'",
    ),
    ({**ADVERSARIAL, "question": "ECHO:   "}, "items[0].question", "adv-moon", "the planted falsehood"),
    (
        {**REVIEW, "evidence": {**REVIEW["evidence"], "minScore": 1.5}},
        "items[0].evidence.minScore",
        "review-dose",
        "minScore must be a number in [0, 1]",
    ),
    (
        {**REVIEW, "evidence": {**REVIEW["evidence"], "sources": [{"id": "s1", "declaredTier": "gold"}]}},
        "items[0].evidence.sources[0].declaredTier",
        "review-dose",
        "expected one of 'guideline', 'official'",
    ),
    (
        {
            **REVIEW,
            "evidence": {
                **REVIEW["evidence"],
                "claims": [{**REVIEW["evidence"]["claims"][0], "assertiveness": "sure"}],
            },
        },
        "items[0].evidence.claims[0].assertiveness",
        "review-dose",
        "expected one of 'definitive', 'likely' or 'tentative'",
    ),
    (
        {
            **REVIEW,
            "evidence": {**REVIEW["evidence"], "claims": [{**REVIEW["evidence"]["claims"][0], "sourceIds": ["s9"]}]},
        },
        "items[0].evidence",
        "review-dose",
        "'s9'",
    ),
    (
        {**REVIEW, "evidence": {"claims": "none yet"}},
        "items[0].evidence.claims",
        "review-dose",
        'expected a JSON array, got "none yet"',
    ),
    ({**REVIEW, "evidence": []}, "items[0].evidence", "review-dose", "expected a JSON object, got []"),
    ({**REVIEW, "response": {"text": "x"}}, "items[0].response.answer", "review-dose", "required field is missing"),
    (
        {**QA, "evidence": {"minScore": "high"}},
        "items[0].evidence.minScore",
        "qa-project-alpha",
        "input should be a valid number",
    ),
    (
        {**CITATION, "question": None},
        "items[0].question",
        "cite-debate",
        "a citation item needs a question or a recorded response",
    ),
    (
        {**CITATION, "sources": [{"marker": "[S1]"}]},
        "items[0].sources[0].marker",
        "cite-debate",
        "expected a citation marker such as 'S1' or '1'",
    ),
    (
        {**CITATION, "sources": [{"marker": "1", "metadata": {"party_name": 3}}]},
        "items[0].sources[0].metadata.party_name",
        "cite-debate",
        "input should be a valid string; got 3",
    ),
    (
        {**CITATION, "sources": [{"marker": "S1", "document": "eval/typo.txt"}]},
        "items[0].sources[0].document",
        "cite-debate",
        "document 'eval/typo.txt' is not a corpus name",
    ),
]

TEMPORAL_MALFORMED = [
    (
        {"setup": [TEMPORAL["setup"][0], {**TEMPORAL["setup"][1], "target": "$id:v3"}]},
        "items[0].setup[1].target",
        "'$id:v3' names no earlier save; saves so far: v1",
    ),
    (
        {"setup": [{**TEMPORAL["setup"][1], "save": "v0"}, TEMPORAL["setup"][0]]},
        "items[0].setup[0].target",
        "'$id:v1' names no earlier save; saves so far: none",
    ),
    (
        {"setup": [TEMPORAL["setup"][0], {**TEMPORAL["setup"][1], "target": "v1"}]},
        "items[0].setup[1].target",
        "expected '$id:<save>', got 'v1'",
    ),
    (
        {"setup": [TEMPORAL["setup"][0], {**TEMPORAL["setup"][1], "target": None}]},
        "items[0].setup[1].target",
        "an update step needs target '$id:<save>'",
    ),
    (
        {"setup": [{**TEMPORAL["setup"][0], "target": "$id:v1"}]},
        "items[0].setup[0].target",
        "a create step has no target",
    ),
    (
        {"setup": [TEMPORAL["setup"][0], {**TEMPORAL["setup"][1], "save": "v1"}]},
        "items[0].setup[1].save",
        "save name 'v1' is already used by setup[0]",
    ),
    (
        {"setup": [{**TEMPORAL["setup"][0], "save": "v-1"}]},
        "items[0].setup[0].save",
        "a save name may contain only letters, digits and '_'",
    ),
    (
        {"setup": [{k: v for k, v in TEMPORAL["setup"][0].items() if k != "save"}]},
        "items[0].setup[0].save",
        "required field is missing",
    ),
    (
        {"setup": [{**TEMPORAL["setup"][0], "op": "upsert"}]},
        "items[0].setup[0].op",
        "expected one of 'create', 'update' or 'delete'",
    ),
    (
        {"setup": [{**TEMPORAL["setup"][0], "validTime": {"start": "2024-01-01T00:00:00"}}]},
        "items[0].setup[0].validTime.start",
        "is not an RFC 3339 timestamp with an offset",
    ),
    (
        {"setup": [{**TEMPORAL["setup"][0], "validTime": {"start": "2024-02-30T00:00:00Z"}}]},
        "items[0].setup[0].validTime.start",
        "is not a valid RFC 3339 timestamp",
    ),
    (
        {
            "setup": [
                {
                    **TEMPORAL["setup"][0],
                    "validTime": {"start": "2024-02-01T00:00:00Z", "end": "2024-01-01T00:00:00+01:00"},
                }
            ]
        },
        "items[0].setup[0].validTime.end",
        "must be after start",
    ),
    ({"setup": []}, "items[0].setup", "list should have at least 1 item"),
    (
        {"probe": {**TEMPORAL["probe"], "asOfTx": "$tx:v9+5"}},
        "items[0].probe.asOfTx",
        "'$tx:v9+5' names no earlier save; saves so far: v1, v2",
    ),
    ({"probe": {**TEMPORAL["probe"], "asOfTx": "$tx:v1*5"}}, "items[0].probe.asOfTx", "is not a reference"),
    ({"probe": {**TEMPORAL["probe"], "asOfTx": "$id:v1"}}, "items[0].probe.asOfTx", "expected a $tx: reference here"),
    ({"probe": {**TEMPORAL["probe"], "asOfTx": 1.5}}, "items[0].probe.asOfTx", "expected integer milliseconds"),
    (
        {"probe": {**TEMPORAL["probe"], "asOfValid": "yesterday"}},
        "items[0].probe.asOfValid",
        "not an RFC 3339 timestamp",
    ),
    ({"probe": {**TEMPORAL["probe"], "target": "$tx:v1"}}, "items[0].probe.target", "expected a $id: reference here"),
    ({"probe": {"call": "query"}}, "items[0].probe", "a probe needs a label or a target"),
    (
        {"probe": {**TEMPORAL["probe"], "call": "diff"}},
        "items[0].probe",
        "unknown call 'diff'; valid calls: query, compare",
    ),
    (
        {"probe": {"call": "compare", "label": "PRICE", "fromTx": "$tx:v1"}},
        "items[0].probe.toTx",
        "required field is missing",
    ),
    (
        {"probe": {"call": "compare", "label": "PRICE", "fromTx": "$tx:v1", "toTx": "$tx:v2"}},
        "items[0].expect",
        "the probe is a compare: expect takes added, removed and/or changed",
    ),
    ({"expect": {"added": 1}}, "items[0].expect", "the probe is a query: expect takes count and/or records"),
    ({"expect": {}}, "items[0].expect", "expect checks nothing"),
    ({"expect": {"count": -1}}, "items[0].expect.count", "input should be greater than or equal to 0"),
    ({"expect": [1]}, "items[0].expect", 'expected an object: {"count", "records"} for a query'),
    ({"expect": {"count": 1, "records": [{"props": {}}]}}, "items[0].expect.records[0].props", "unknown key 'props'"),
]


@pytest.mark.parametrize(("item", "json_path", "item_id", "fragment"), MALFORMED)
def test_malformed_item_names_manifest_item_and_field(
    tmp_path: Path, item: Any, json_path: str, item_id: str, fragment: str
) -> None:
    error = load_error(write_dataset(tmp_path, items=[item]))
    message = str(error)
    manifest = tmp_path / "manifest.json"
    who = f"item {item_id!r}" if not item_id.startswith("items[") else f"item {item_id} (no valid id)"
    assert message.startswith(f"{manifest}: {who}, field {json_path}: "), message
    assert fragment in message
    assert (error.path, error.item_id, error.json_path) == (manifest, item_id, json_path)
    assert "pydantic" not in message and "errors.pydantic.dev" not in message and "Traceback" not in message


@pytest.mark.parametrize(("change", "json_path", "fragment"), TEMPORAL_MALFORMED)
def test_malformed_temporal_item(tmp_path: Path, change: dict[str, Any], json_path: str, fragment: str) -> None:
    error = load_error(write_dataset(tmp_path, items=[{**TEMPORAL, **change}]))
    assert str(error).startswith(f"{tmp_path / 'manifest.json'}: item 'temporal-price', field {json_path}: "), str(
        error
    )
    assert fragment in str(error)
    assert error.json_path == json_path


def test_item_index_is_counted_in_the_items_array(tmp_path: Path) -> None:
    error = load_error(
        write_dataset(tmp_path, items=[QA, REVIEW, ADVERSARIAL, {**QA, "id": "qa-2", "expectedEvidence": [None]}])
    )
    assert error.json_path == "items[3].expectedEvidence[0]" and error.item_id == "qa-2"


def test_nan_min_score_is_refused(tmp_path: Path) -> None:
    root = write_dataset(tmp_path, items=[REVIEW])
    text = (root / "manifest.json").read_text(encoding="utf-8").replace('"minScore": 0.5', '"minScore": NaN')
    (root / "manifest.json").write_text(text, encoding="utf-8")
    error = load_error(root)
    assert error.json_path == "items[0].evidence.minScore" and "NaN is not a JSON number" in str(error)


def _edited(root: Path, old: str, new: str) -> Path:
    path = root / "manifest.json"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return root


def _line_of(root: Path, needle: str, occurrence: int = 1) -> int:
    text = (root / "manifest.json").read_text(encoding="utf-8")
    at = -1
    for _ in range(occurrence):
        at = text.index(needle, at + 1)
    return text.count("\n", 0, at) + 1


# Every value a manifest may not hold, wherever it is (docs/dataset.md): the old loader let all of
# these through (the surrogates only outside ``question``), and a target then got them as JSON.
REFUSED_VALUES = [
    # (old text, new text, json path, item id or None, message fragment)
    (
        '"label": "PRICE"',
        '"label": "PR\\ud800ICE"',
        "items[2].setup[0].label",
        "temporal-price",
        "lone UTF-16 surrogate (\\ud800 at character 2)",
    ),
    ('"sku": "A"', '"sku": "\\udfff"', "items[2].setup[0].properties.sku", "temporal-price", "lone UTF-16 surrogate"),
    ('"sku": "A"', '"s\\udc00": "A"', "items[2].setup[0].properties", "temporal-price", "the key 's\\udc00'"),
    ('"price": 10', '"price": NaN', "items[2].setup[0].properties.price", "temporal-price", "NaN is not a JSON number"),
    ('"price": 10', '"price": -Infinity', "items[2].setup[0].properties.price", "temporal-price", "-Infinity is not"),
    (
        '"price": 10',
        '"price": 1e400',
        "items[2].setup[0].properties.price",
        "temporal-price",
        "the number 1e400 is too large for a 64-bit float",
    ),
    ('"asOfTx": "$tx:v2-1"', '"asOfTx": 1e400', "items[2].probe.asOfTx", "temporal-price", "1e400"),
    (
        '"price": 10',
        '"price": 9007199254740992',
        "items[2].setup[0].properties.price",
        "temporal-price",
        "outside ±9007199254740991",
    ),
    ('"price": 10', '"price": -' + "9" * 5000, "items[2].setup[0].properties.price", "temporal-price", "(5000 digits)"),
    ('"2 tablets daily"', '"2 tablets\\ud83d daily"', "items[4].evidence.claims[0].text", "review-dose", "surrogate"),
    ('"format": "text"', '"format": "te\\udc80xt"', "corpus[1].format", None, "lone UTF-16 surrogate"),
    ('"id": "qa-project-alpha"', '"id": "qa-\\ud800"', "items[0].id", "items[0]", "lone UTF-16 surrogate"),
]


@pytest.mark.parametrize(
    ("old", "new", "json_path", "item_id", "fragment"),
    REFUSED_VALUES,
    ids=[
        "label-surrogate",
        "property-surrogate",
        "key-surrogate",
        "nan",
        "infinity",
        "1e400",
        "asOfTx-1e400",
        "int-2**53",
        "int-5000-digits",
        "claim-surrogate",
        "corpus-surrogate",
        "id-surrogate",
    ],
)
def test_values_a_manifest_may_not_hold_are_refused_naming_item_field_and_line(
    dataset_dir: Path, old: str, new: str, json_path: str, item_id: str | None, fragment: str
) -> None:
    root = _edited(dataset_dir, old, new)
    error = load_error(root)
    manifest = root / "manifest.json"
    who = (
        ""
        if item_id is None
        else (f"item {item_id} (no valid id), " if item_id.startswith("items[") else f"item {item_id!r}, ")
    )
    line = _line_of(root, new.split(":")[0] if new.startswith('"s\\') else new)
    assert str(error).startswith(f"{manifest}: line {line}: {who}field {json_path}: "), str(error)
    assert fragment in str(error)
    assert (error.path, error.item_id, error.json_path) == (manifest, item_id, json_path)


def test_paired_surrogate_escapes_and_the_largest_exact_integer_load(dataset_dir: Path) -> None:
    # json.dumps writes an emoji as a pair of escapes: that is text, not a lone surrogate.
    root = _edited(dataset_dir, '"sku": "A"', '"sku": "\\ud83d\\ude00", "n": 9007199254740991, "m": -9007199254740991')
    dataset = load_dataset(root)
    step = dataset.by_id["temporal-price"].setup[0]
    assert step.properties["sku"] == "\U0001f600" and step.properties["n"] == 2**53 - 1


def test_duplicate_key_names_the_item_and_the_line(dataset_dir: Path) -> None:
    root = _edited(dataset_dir, '"sku": "A",', '"sku": "A",\n "sku": "B",')
    error = load_error(root)
    line = _line_of(root, '"sku": "B"')
    assert str(error) == (
        f"{root / 'manifest.json'}: line {line}: item 'temporal-price', field items[2].setup[0].properties: "
        "duplicate key 'sku' in one JSON object; the later value would silently win, so remove one"
    )
    assert (error.item_id, error.json_path) == ("temporal-price", "items[2].setup[0].properties")


def test_duplicate_key_in_an_item_without_a_valid_id_names_its_index(dataset_dir: Path) -> None:
    root = _edited(dataset_dir, '"id": "adv-moon",', '"id": 7, "id": 8,')
    error = load_error(root)
    line = _line_of(root, '"id": 7')
    assert str(error).startswith(
        f"{root / 'manifest.json'}: line {line}: item items[1] (no valid id), field items[1]: "
    )
    assert "duplicate key 'id'" in str(error) and error.item_id == "items[1]"


def test_duplicate_top_level_key_names_its_line(dataset_dir: Path) -> None:
    root = _edited(dataset_dir, '"version": "v1",', '"version": "v1",\n  "version": "v2",')
    error = load_error(root)
    assert str(error).startswith(f"{root / 'manifest.json'}: line 3: duplicate key 'version'"), str(error)


# --------------------------------------------------------------------------- review items without a block


@pytest.mark.parametrize("evidence", ["absent", None, {}], ids=["absent", "null", "empty"])
def test_review_item_without_an_evidence_block_loads_and_is_not_reviewed(tmp_path: Path, evidence: Any) -> None:
    # docs/evidence-risk.md: an un-annotated row scores 1.0 with reviewed: false and says why.
    from pytest_groundeval.core.runner import ItemRunner

    item = {k: v for k, v in REVIEW.items() if k != "evidence"}
    if evidence != "absent":
        item["evidence"] = evidence
    dataset = load_dataset(write_dataset(tmp_path, items=[item]))
    assert dataset.items[0].evidence is None
    outcome = ItemRunner(None).run_offline(dataset.items[0], dataset)
    assert outcome.passed and outcome.error is None
    review = outcome.evidence_review
    assert review is not None and (review.reviewed, review.score) == (False, 1.0)
    assert "no evidence block on this item" in outcome.detail and "reviewed: false" in outcome.detail


def test_an_empty_evidence_block_counts_as_none_on_every_kind(tmp_path: Path) -> None:
    items = [{**QA, "evidence": {}}, {**ADVERSARIAL, "evidence": {}}, {**CITATION, "evidence": {}}]
    dataset = load_dataset(write_dataset(tmp_path, items=items))
    assert [item.evidence for item in dataset.items] == [None, None, None]


def test_snake_case_keys_are_reported_in_camel_case(tmp_path: Path) -> None:
    item = {"id": "q", "kind": "qa", "question": "?", "expected_evidence": [7]}
    error = load_error(write_dataset(tmp_path, items=[item]))
    assert error.json_path == "items[0].expectedEvidence[0]"


def test_several_errors_are_listed(tmp_path: Path) -> None:
    items = [{**QA, "truths": 1}, {**REVIEW, "kind": "reviw"}]
    message = str(load_error(write_dataset(tmp_path, items=items)))
    first, second = message.splitlines()
    assert "field items[0].truths" in first
    assert second.strip().startswith("also: item 'review-dose', field items[1]: unknown kind 'reviw'")


# --------------------------------------------------------------------------- small parsers


@pytest.mark.parametrize(
    ("value", "reference"),
    [
        ("$tx:v1", Reference("tx", "v1", 0)),
        ("$tx:v_1+250", Reference("tx", "v_1", 250)),
        ("$tx:a-1", Reference("tx", "a", -1)),
        ("$id:rec", Reference("id", "rec", 0)),
        ("plain", None),
    ],
)
def test_parse_reference(value: str, reference: Reference | None) -> None:
    assert parse_reference(value) == reference


@pytest.mark.parametrize("value", ["$id:a+1", "$tx:", "$ts:a", "$tx:a+", "$tx:a-b"])
def test_parse_reference_rejects_malformed(value: str) -> None:
    with pytest.raises(ValueError, match="is not a reference"):
        parse_reference(value)


def test_parse_rfc3339_compares_instants() -> None:
    a = parse_rfc3339("2024-06-01T12:00:00.123456789+02:00")
    b = parse_rfc3339("2024-06-01t10:00:00.123456Z")
    assert a == b and a.utcoffset() is not None
    with pytest.raises(ValueError, match="with an offset"):
        parse_rfc3339("2024-06-01")


# --------------------------------------------------------------------------- arbitrary input never leaks


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("fuzz"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.one_of(
        st.binary(max_size=300),
        st.sampled_from([b"", b"{", b"[" * 5000, b'{"items": [' + b"[" * 3000 + b"]}", b"1" * 5000, b'"\\ud800"']),
        st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )
)
def test_arbitrary_bytes_as_manifest_raise_only_dataset_error(fuzz_dir: Path, data: bytes) -> None:
    (fuzz_dir / "manifest.json").write_bytes(data)
    try:
        load_dataset(fuzz_dir)
    except DatasetError as error:
        assert str(error)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "kind",
                    "question",
                    "find",
                    "tags",
                    "setup",
                    "probe",
                    "expect",
                    "evidence",
                    "response",
                    "sources",
                    "marker",
                    "metadata",
                    "op",
                    "save",
                    "target",
                    "call",
                    "claims",
                    "x-y",
                    "ü",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSON_VALUES, where=st.sampled_from(["item", "items", "probe", "setup", "evidence", "corpus", "hashes"]))
def test_arbitrary_json_in_the_manifest_raises_only_dataset_error(fuzz_dir: Path, value: Any, where: str) -> None:
    items: list[Any] = [dict(i) for i in ITEMS]
    extra: dict[str, Any] = {}
    if where == "item":
        items.append(value)
    elif where == "items":
        items = value
    elif where == "probe":
        items[2]["probe"] = value
    elif where == "setup":
        items[2]["setup"] = [TEMPORAL["setup"][0], value]
    elif where == "evidence":
        items[4]["evidence"] = value
    elif where == "corpus":
        extra["corpus"] = value
    else:
        extra["corpusHashes"] = value
    manifest = {"version": "v1", "corpus": [], "corpusHashes": {}, "items": items, **extra}
    (fuzz_dir / "manifest.json").write_text(json.dumps(manifest, allow_nan=True), encoding="utf-8")
    try:
        load_dataset(fuzz_dir)
    except DatasetError as error:
        assert str(error).startswith(str(fuzz_dir / "manifest.json")) or str(fuzz_dir / "corpus") in str(error)


# --------------------------------------------------------------------------- the rest (groundeval hash-corpus: tests/cli/test_dataset.py)


def test_module_imports_without_pytest() -> None:
    code = "import sys; sys.modules['pytest'] = None; import pytest_groundeval.core.dataset as d; print(d.load_dataset.__name__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "load_dataset"


def test_two_corpus_entries_may_share_one_file(tmp_path: Path) -> None:
    corpus = [
        {"name": "a", "label": "L1", "file": "log.txt", "format": "text"},
        {"name": "b", "label": "L2", "file": "log.txt", "format": "text"},
    ]
    dataset = load_dataset(
        write_dataset(
            tmp_path,
            corpus=corpus,
            files={"log.txt": b"x\r\ny"},
            items=[{"id": "q", "kind": "qa", "question": "?", "find": "L2"}],
        )
    )
    assert dataset.documents["a"].canonical == dataset.documents["b"].canonical == "x\ny"
    assert dataset.documents["b"].label == "L2"


def test_float_min_score_bounds_accept_edges() -> None:
    item = ITEM_ADAPTER.validate_python({**REVIEW, "evidence": {**REVIEW["evidence"], "minScore": 1}})
    assert math.isclose(item.evidence.min_score, 1.0)


def test_garbage_collector_state_is_restored(dataset_dir: Path, tmp_path: Path) -> None:
    import gc

    assert gc.isenabled()
    load_dataset(dataset_dir)
    assert gc.isenabled()
    load_error(write_dataset(tmp_path / "bad", items=[{"id": "x"}]))
    assert gc.isenabled()
    gc.disable()
    try:
        load_dataset(dataset_dir)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_stray_corpus_file_is_an_error(tmp_path: Path) -> None:
    root = write_dataset(tmp_path)
    (root / "corpus" / "forgotten.txt").write_text("never listed")
    (root / "corpus" / ".gitkeep").write_text("")
    error = load_error(root)
    assert str(error).startswith(f"{root / 'corpus' / 'forgotten.txt'}: not listed in manifest.json's corpus")
    assert "groundeval hash-corpus" in str(error) and error.json_path == "corpus"
    (root / "corpus" / "forgotten.txt").unlink()
    assert load_dataset(root).version == "v1"  # hidden files are not corpus files


def test_dataset_error_helpers_annotations_resolve():
    """Every annotation in core.dataset.errors names something the module defines or imports.

    ``_describe_errors`` was annotated with a ``ValidationError`` the module never
    imported: harmless until something resolves the hints (``typing.get_type_hints``,
    pydantic's ``validate_call``, a docs generator), which then raised NameError.
    """
    import inspect
    import typing

    from pydantic import ValidationError

    from pytest_groundeval.core.dataset import errors

    for _name, function in inspect.getmembers(errors, inspect.isfunction):
        if function.__module__ == errors.__name__:
            typing.get_type_hints(function)
    assert typing.get_type_hints(errors._describe_errors)["exc"] is ValidationError


def test_items_of_one_shape_share_one_frozen_set_of_given_fields_and_are_read_only(tmp_path):
    # issue 24, memory per item: pydantic's per-model set of given fields was ~40% of an item.
    untagged = {key: value for key, value in QA.items() if key != "tags"}
    items = [{**untagged, "id": "q1"}, {**untagged, "id": "q2", "question": "Another?"}, {**QA, "id": "q3"}]
    q1, q2, q3 = load_dataset(write_dataset(tmp_path, items)).items
    assert q1.model_fields_set == {"id", "kind", "question", "find", "expected_evidence", "truths"}
    assert q1.__pydantic_fields_set__ is q2.__pydantic_fields_set__
    assert q3.model_fields_set == q1.model_fields_set | {"tags"}
    assert "tags" not in q1.model_dump(exclude_unset=True) and q3.model_dump(exclude_unset=True)["tags"] == ["smoke"]
    with pytest.raises(ValidationError, match="frozen"):
        q1.question = "changed"  # would otherwise mark the field given on every item of its shape
    copied = q1.model_copy(update={"tags": ["x"]})
    assert "tags" in copied.model_fields_set and "tags" not in q2.model_fields_set
    assert q2.question == "Another?" and q1.question == QA["question"]
