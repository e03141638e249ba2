"""Datasets (docs/dataset.md): the manifest, corpus documents and the loader.

A dataset is a directory holding ``manifest.json`` and ``corpus/``:

- ``manifest``: the ``Manifest`` model; items are the registered kinds' models
  (``core.kinds``), discriminated on ``kind``;
- ``corpus``: reading, hashing (xxh3_64) and canonical text of corpus files;
- ``loader``: ``load_dataset``, which reads and validates everything once;
- ``errors``: ``DatasetError`` and the plain messages for validation errors.

This package does not import pytest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import manifest as _manifest
from .corpus import CHUNK_SIZE, HASH_BUFFER_SIZE, CorpusDocument, canonical_json, canonical_text, hash_file
from .errors import DatasetError
from .loader import Dataset, gc_paused, load_dataset
from .manifest import CorpusEntry, Manifest, item_adapter, version_problem

if TYPE_CHECKING:
    from .manifest import ITEM_ADAPTER, AnyItem, Item


def __getattr__(name: str) -> Any:
    # AnyItem, Item and ITEM_ADAPTER follow the registry of kinds (core.dataset.manifest).
    if name in ("AnyItem", "Item", "ITEM_ADAPTER"):
        return getattr(_manifest, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AnyItem",
    "CHUNK_SIZE",
    "CorpusDocument",
    "CorpusEntry",
    "Dataset",
    "DatasetError",
    "HASH_BUFFER_SIZE",
    "ITEM_ADAPTER",
    "Item",
    "Manifest",
    "canonical_json",
    "canonical_text",
    "gc_paused",
    "hash_file",
    "item_adapter",
    "load_dataset",
    "version_problem",
]
