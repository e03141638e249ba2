"""``groundeval generate-questions`` against the mock: a valid, hash-checked dataset (docs/citation.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_groundeval.cli import main as groundeval
from pytest_groundeval.core.dataset import load_dataset
from pytest_groundeval.core.kinds.citation import CitationItem
from pytest_groundeval.mock import ThreadedMockProvider

REPO = Path(__file__).resolve().parents[2]
ATTRIBUTION = REPO / "datasets" / "attribution"


@pytest.fixture(scope="module")
def mock():
    """One mock provider for the module: it answers the generation prompt deterministically."""
    with ThreadedMockProvider() as provider:
        yield provider


def run(mock, out: Path, *extra: str) -> int:
    return groundeval(["generate-questions", "--dataset", str(ATTRIBUTION), "--n", "10", "--llm-url", mock.base_url,
                       "--model", "mock-questions", "--out", str(out), *extra])  # fmt: skip


def test_generated_dataset_loads_and_keeps_origins(mock, tmp_path):
    assert run(mock, tmp_path / "gen") == 0
    dataset = load_dataset(tmp_path / "gen")
    assert dataset.version == "v1-attribution-generated"
    assert len(dataset.items) == 10 and all(isinstance(i, CitationItem) and i.question for i in dataset.items)
    assert dataset.manifest.corpus_hashes == load_dataset(ATTRIBUTION).manifest.corpus_hashes
    strategies = [i.origin["strategy"] for i in dataset.items]
    assert 0 < strategies.count("free") < strategies.count("seeded")
    records = json.loads((ATTRIBUTION / "corpus" / "entities.json").read_text(encoding="utf-8"))
    for item in dataset.items:
        if item.origin["strategy"] == "seeded":
            record = records[item.origin["record"]]
            assert record["entity"].split()[-1].casefold() not in item.question.casefold()  # the person is withheld
    assert len({i.question for i in dataset.items}) == 10


def test_same_seed_same_items_and_duplicates_dropped(mock, tmp_path):
    assert run(mock, tmp_path / "a", "--seed", "7") == 0
    assert run(mock, tmp_path / "b", "--seed", "7") == 0
    assert (tmp_path / "a" / "manifest.json").read_bytes() == (tmp_path / "b" / "manifest.json").read_bytes()
    # Only one topic, no seeded strategy: the mock varies by the avoid-list, every question distinct.
    assert run(mock, tmp_path / "c", "--seeded-ratio", "0", "--topic", "fibre") == 0
    questions = [i.question for i in load_dataset(tmp_path / "c").items]
    assert questions[:2] == ["What is known about fibre?", "What is known about fibre (aspect 2)?"]


def test_a_prose_only_llm_writes_nothing(mock, tmp_path, capsys):
    code = groundeval(["generate-questions", "--dataset", str(ATTRIBUTION), "--n", "3", "--llm-url", mock.base_url,
                       "--model", "mock-questions+fault=prose", "--out", str(tmp_path / "x"), "--seeded-ratio", "1"])  # fmt: skip
    assert code == 1
    assert "only 0 distinct question(s) of 3" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_llm_down_is_exit_1(tmp_path, capsys):
    code = groundeval(["generate-questions", "--dataset", str(ATTRIBUTION), "--n", "1", "--llm-url",
                       "http://127.0.0.1:9/v1", "--model", "m", "--out", str(tmp_path / "x")])  # fmt: skip
    assert code == 1 and "failed" in capsys.readouterr().err


def test_bad_dataset_is_exit_2(tmp_path, capsys):
    code = groundeval(["generate-questions", "--dataset", str(tmp_path), "--n", "1", "--llm-url", "http://x/v1",
                       "--model", "m", "--out", str(tmp_path / "x")])  # fmt: skip
    assert code == 2 and "manifest.json" in capsys.readouterr().err
