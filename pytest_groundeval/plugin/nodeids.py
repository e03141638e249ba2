"""What a dataset item's node id looks like: ``<path>/manifest.json::<kind>::<item id>`` (docs/plugin.md).

``plugin.collect`` builds these ids; the controller and the xdist hooks read them
back here, without importing the collection (which loads pydantic).
"""

from __future__ import annotations

from ..core.kinds import KIND_NAMES


def eval_node_kind(nodeid: str) -> tuple[str, str] | None:
    """``(kind, item_id)`` when ``nodeid`` names a dataset item (``…manifest.json::kind::id``)."""
    node = eval_node(nodeid)
    return None if node is None else (node[1], node[2])


def eval_node(nodeid: str) -> tuple[str, str, str] | None:
    """``(dataset key, kind, item_id)`` when ``nodeid`` names a dataset item, in one split (else None).

    The test ``eval_node_kind`` makes, with the dataset key (``dataset_key``) from the same split.
    """
    parts = nodeid.split("::")
    if len(parts) == 3 and parts[0].endswith("manifest.json") and parts[1] in KIND_NAMES:
        return parts[0], parts[1], parts[2]
    return None


def dataset_key(nodeid: str) -> str:
    """The dataset part of a node id (the manifest's path as pytest names it), e.g. ``datasets/v1/manifest.json``."""
    return nodeid.split("::")[0]
