"""A small valid dataset on disk, one item of every kind (docs/dataset.md): builders and the ``dataset_dir`` fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import xxhash

NOTES = [
    {"title": "Smörgåsbord i Göteborg", "body": "Öppet året runt."},
    {"body": "東京の会議は火曜日です。", "title": "会議"},
]


LOG_TEXT = "First line\r\nÅsa wrote: 東京\rlast line\n"


QA = {
    "id": "qa-project-alpha",
    "kind": "qa",
    "question": "When is the Tokyo meeting?",
    "find": "PROJECT_NOTE",
    "expectedEvidence": ["火曜日", {"document": "eval/notes.json", "text": "Göteborg"}],
    "truths": ["The meeting is on Tuesday."],
    "tags": ["smoke"],
}


ADVERSARIAL = {"id": "adv-moon", "kind": "adversarial", "question": "ECHO-CITED:  The moon is cheese. ", "find": None}


TEMPORAL = {
    "id": "temporal-price",
    "kind": "temporal",
    "setup": [
        {
            "op": "create",
            "save": "v1",
            "label": "PRICE",
            "properties": {"sku": "A", "price": 10},
            "validTime": {"start": "2024-01-01T00:00:00Z", "end": None},
        },
        {"op": "update", "save": "v2", "target": "$id:v1", "label": "PRICE", "properties": {"sku": "A", "price": 12}},
    ],
    "probe": {
        "call": "query",
        "label": "PRICE",
        "asOfTx": "$tx:v2-1",
        "asOfValid": "2024-06-01T12:00:00.123456789+02:00",
    },
    "expect": {"count": 1, "records": [{"properties": {"price": 10}}]},
    "tags": ["temporal"],
}


CITATION = {
    "id": "cite-debate",
    "kind": "citation",
    "question": "What did the speakers say?",
    "find": "LOG",
    "sources": [{"marker": "S1", "document": "eval/log.txt", "metadata": {"speaker": "Åsa Berg", "party": "S"}}],
}


REVIEW = {
    "id": "review-dose",
    "kind": "review",
    "response": {"answer": "Take 2 tablets daily."},
    "evidence": {
        "profile": "clinical",
        "minScore": 0.5,
        "claims": [{"id": "c1", "text": "2 tablets daily", "assertiveness": "definitive", "sourceIds": ["s1"]}],
        "sources": [{"id": "s1", "url": "https://example.org", "declaredTier": "official"}],
    },
}


ITEMS = [QA, ADVERSARIAL, TEMPORAL, CITATION, REVIEW]


def write_dataset(
    root: Path,
    items: list[Any] | None = None,
    *,
    hashes: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
    corpus: list[dict[str, Any]] | None = None,
    files: dict[str, bytes] | None = None,
) -> Path:
    """Write a dataset under ``root``; hashes are computed from ``files`` unless given."""
    files = (
        files
        if files is not None
        else {
            "notes.json": json.dumps(NOTES, ensure_ascii=False).encode("utf-8"),
            "log.txt": LOG_TEXT.encode("utf-8"),
        }
    )
    (root / "corpus").mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (root / "corpus" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "corpus" / name).write_bytes(data)
    manifest = {
        "version": "v1",
        "corpus": corpus
        if corpus is not None
        else [
            {"name": "eval/notes.json", "label": "PROJECT_NOTE", "file": "notes.json", "format": "json"},
            {"name": "eval/log.txt", "label": "LOG", "file": "log.txt", "format": "text"},
        ],
        "corpusHashes": hashes if hashes is not None else {n: xxhash.xxh3_64_hexdigest(d) for n, d in files.items()},
        "items": ITEMS if items is None else items,
    }
    manifest.update(extra or {})
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    return root


@pytest.fixture
def dataset_dir(tmp_path: Path) -> Path:
    """A valid dataset holding one item of every kind."""
    return write_dataset(tmp_path / "ds")
