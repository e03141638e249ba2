"""Sharding a dataset across CI runners: which items a shard runs, and what its report records (docs/ci.md, "Sharding").

A shard is the set of dataset items whose id hashes to it (``shard_of``): the
split depends only on each item's id and the shard count, so every runner
computes the same split with no coordination, an item never changes shard when
others are added or removed, and the shards are balanced in expectation (xxh3 is
uniform; 691 v1 items over 3 shards give 257/206/228).

Collection (``--eval-shard K/N``, ``parse_shard``) keeps the items of shard K; the
report records the ``shard`` block (``shard_info``); ``core.shard_merge.merge_reports``
checks the shards' reports against the same functions. No pytest import here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import xxhash


def shard_of(item_id: str, count: int) -> int:
    """The shard (1-based) a dataset item belongs to when the dataset is split ``count`` ways.

    ``xxh3_64`` of the id's UTF-8 bytes, modulo ``count``, plus one. Stable across
    machines, Python versions and processes (unlike ``hash()``), and independent of
    the other items, so adding an item moves no other.

    Args:
        item_id: The dataset item id.
        count: Number of shards N (>= 1).

    Returns:
        K in ``1..count``.

    Raises:
        ValueError: ``count`` is not a positive integer.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"shard count must be an integer >= 1, got {count!r}")
    return xxhash.xxh3_64_intdigest(item_id.encode("utf-8")) % count + 1


def parse_shard(text: str) -> tuple[int, int]:
    """Parse ``"K/N"`` (as given to ``--eval-shard``) into ``(K, N)``.

    Raises:
        ValueError: Not two integers separated by ``/``, or not ``1 <= K <= N``;
            the message says what a valid value looks like.
    """
    head, sep, tail = text.strip().partition("/")
    try:
        if not sep:
            raise ValueError
        index, count = int(head), int(tail)
    except ValueError:
        raise ValueError(f"'{text}' is not a valid shard: expected K/N with 1 <= K <= N, e.g. 2/4") from None
    if not 1 <= index <= count:
        raise ValueError(f"'{text}' is not a valid shard: expected K/N with 1 <= K <= N, e.g. 2/4")
    return index, count


def ids_digest(item_ids: Iterable[str]) -> str:
    """A digest of a set of item ids: xxh3_64 hex of the sorted ids joined by ``"\\n"``.

    Order-independent, so shards and the merge compute the same digest for the
    same dataset whatever order they saw the items in.
    """
    hasher = xxhash.xxh3_64()
    for i, item_id in enumerate(sorted(item_ids)):
        hasher.update((("\n" if i else "") + item_id).encode("utf-8"))
    return hasher.hexdigest()


def shard_info(dataset_ids: Sequence[str], index: int, count: int) -> dict[str, Any]:
    """The ``shard`` block a report of shard ``index/count`` of this dataset records (wire keys).

    Args:
        dataset_ids: Every item id of the dataset (not only the selected ones).
        index: K, 1-based.
        count: N.

    Raises:
        ValueError: Not ``1 <= index <= count``.
    """
    if not 1 <= index <= count:
        raise ValueError(f"shard {index}/{count}: expected 1 <= K <= N")
    return {
        "index": index,
        "count": count,
        "assigned": sum(1 for item_id in dataset_ids if shard_of(item_id, count) == index),
        "datasetItems": len(dataset_ids),
        "datasetItemsDigest": ids_digest(dataset_ids),
    }
