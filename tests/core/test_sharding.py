"""Sharding a dataset across CI runners (docs/ci.md, "Sharding"): the split, ``--eval-shard K/N``, the shard block."""

from __future__ import annotations

import pytest
import xxhash

from pytest_groundeval.core.sharding import ids_digest, parse_shard, shard_info, shard_of


def test_shard_of_is_stable_and_in_range():
    # Pinned: a change of hash function would silently re-split every CI matrix.
    assert [shard_of(f"qa-{i}", 4) for i in range(6)] == [shard_of(f"qa-{i}", 4) for i in range(6)]
    assert {shard_of(f"item-{i}", 5) for i in range(200)} == {1, 2, 3, 4, 5}
    assert shard_of("anything", 1) == 1
    assert shard_of("qa-halueval-0000", 3) == 1 + xxhash.xxh3_64_intdigest(b"qa-halueval-0000") % 3


@pytest.mark.parametrize("count", [0, -1, True, 2.0])
def test_shard_of_refuses_a_bad_count(count):
    with pytest.raises(ValueError, match="shard count must be an integer >= 1"):
        shard_of("x", count)


@pytest.mark.parametrize(("text", "expected"), [("1/3", (1, 3)), (" 3/3 ", (3, 3)), ("1/1", (1, 1))])
def test_parse_shard(text, expected):
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "/2", ""])
def test_parse_shard_refuses(text):
    with pytest.raises(ValueError, match="expected K/N with 1 <= K <= N"):
        parse_shard(text)


def test_ids_digest_ignores_order():
    assert ids_digest(["b", "a", "c"]) == ids_digest(["c", "b", "a"]) != ids_digest(["a", "b"])


def test_shard_info_counts_the_items_assigned():
    ids = [f"id-{i}" for i in range(50)]
    infos = [shard_info(ids, k, 3) for k in (1, 2, 3)]
    assert sum(info["assigned"] for info in infos) == 50
    assert {info["datasetItemsDigest"] for info in infos} == {ids_digest(ids)}
