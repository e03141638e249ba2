"""datasets/expertqa-citations and datasets/attribution: rebuilt byte for byte, loadable, labelled (docs/citation.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pytest_groundeval.core.dataset import DatasetError, load_dataset
from pytest_groundeval.core.kinds.citation import judge_citation, paragraphs, source_map

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"  # beside the checkout, as CI lays it
DATASETS = {
    "build_expertqa_citations": (
        REPO / "datasets" / "expertqa-citations",
        SHARED_DATA / "expertqa" / "rand_test.first180.jsonl",
    ),
    "build_attribution": (REPO / "datasets" / "attribution", SHARED_DATA / "timeqa" / "human_annotated_test.json"),
}
GENERATED = {"manifest.json", "corpus"}


@pytest.mark.parametrize("script", sorted(DATASETS))
def test_rebuild_is_byte_identical(load_script, script, tmp_path):
    root, src = DATASETS[script]
    if not src.is_file():
        pytest.skip(f"{src} (the shared source data) is not on this machine")
    load_script(script).build(src, tmp_path)
    built = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] in GENERATED
    }
    assert set(built) == committed
    assert [name for name, data in built.items() if (root / name).read_bytes() != data] == []


@pytest.mark.parametrize("script", sorted(DATASETS))
def test_loads_with_its_own_version_licence_and_labels(script):
    root, _ = DATASETS[script]
    dataset = load_dataset(root)
    assert dataset.version.startswith("v1-") and (root / "LICENSE").is_file() and (root / "README.md").is_file()
    for item in dataset.items:
        judged = paragraphs(item.response.answer)
        assert item.paragraph_labels and all(label.index < len(judged) for label in item.paragraph_labels)


def test_attribution_catches_are_where_the_builder_put_them():
    dataset = load_dataset(DATASETS["build_attribution"][0])
    failing = Counter()
    for item in dataset.items:
        outcome = judge_citation(item, answer=item.response.answer, sources=source_map(item),
                                 mention_regex=dataset.manifest.mention_regex)  # fmt: skip
        failing[item.tags[1]] += outcome.extra["citationParagraphsMismatched"]
    # Only the full-name swap is visible to the deterministic metadata check.
    assert failing == Counter({"swap": 12})


def test_labels_need_a_recorded_response(tmp_path):
    (tmp_path / "manifest.json").write_text(
        '{"version": "v1", "items": [{"id": "c", "kind": "citation", "question": "q?",'
        ' "paragraphLabels": [{"index": 0, "expectedVerdict": "supported"}]}]}'
    )
    with pytest.raises(DatasetError, match=r"paragraphLabels\[0\].*recorded response"):
        load_dataset(tmp_path)
    (tmp_path / "manifest.json").write_text(
        '{"version": "v1", "items": [{"id": "c", "kind": "citation", "response": {"answer": "a [1]"},'
        ' "paragraphLabels": [{"index": 0, "expectedVerdict": "mostly"}]}]}'
    )
    with pytest.raises(DatasetError, match="expectedVerdict"):
        load_dataset(tmp_path)


def test_duplicate_labels_and_origin_keys_are_named_as_written(tmp_path):
    (tmp_path / "manifest.json").write_text(
        '{"version": "v1", "items": [{"id": "c", "kind": "citation", "response": {"answer": "a [1]"},'
        ' "paragraphLabels": [{"index": 0, "expectedVerdict": "supported"}, {"index": 0, "expectedVerdict": "partial"}]}]}'
    )
    with pytest.raises(
        DatasetError,
        match=r"item 'c', field items\[0\]\.paragraphLabels\[1\]\.index: .*already labelled by paragraphLabels\[0\]",
    ):
        load_dataset(tmp_path)
    # origin is free-form: a key that happens to be a model field's snake name is not shown camelCased.
    (tmp_path / "manifest.json").write_text(
        '{"version": "v1", "items": [{"id": "c", "kind": "citation", "question": "q?",'
        ' "origin": {"expected_verdict": [1]}}]}'
    )
    with pytest.raises(DatasetError, match=r"field items\[0\]\.origin\.expected_verdict: input should be"):
        load_dataset(tmp_path)
