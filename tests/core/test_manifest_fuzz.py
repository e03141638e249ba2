"""Fuzzing the loader (issue 12): a mutated manifest loads, or raises ``DatasetError`` naming its file.

Valid manifests (the shipped smoke and citation-smoke datasets) are mutated the ways a
hand-edited or hostile manifest goes wrong: keys dropped or renamed, values retyped,
odd Unicode (lone surrogates, control and format characters), huge and non-finite
numbers, deep nesting, and bytes cut or inserted. Whatever comes out, ``load_dataset``
must raise nothing but ``DatasetError``, whose message names the file at fault inside
the dataset and, when an item is at fault, that item.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groundeval.core.dataset import DatasetError, load_dataset

REPO = Path(__file__).resolve().parents[2]
SOURCES = {name: REPO / "datasets" / name for name in ("smoke", "citation-smoke")}


class _Deep:
    """A value nested ``depth`` arrays deep, written as text by ``_encode`` (a leaf for ``_paths``)."""

    def __init__(self, depth: int, value: Any) -> None:
        self.depth, self.value = depth, value


_ODD_TEXT = st.sampled_from(
    [
        "",
        " ",
        "v1\n",
        "\ud800",
        "a\udfffb",
        "\u200b",
        "\x00",
        "\u2028",
        "e\u0301",
        "😀",
        "\ufeff",
        "$tx:",
        "$id:",
        "../x",
        "/etc/passwd",
        "a" * 300,
        "NaN",
        "[1]",
        "(?P<x>",
        "(?P<speaker>(\\w+\\s?)+)\\(",
    ]
)
_NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**53, 2**53 - 1, 10**400, 1.5, -0.0, 1e308, float("nan"), float("inf"), float("-inf")]),
)
_SCALARS = st.one_of(st.none(), st.booleans(), _NUMBERS, st.text(max_size=12), _ODD_TEXT)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.one_of(st.text(max_size=6), _ODD_TEXT), children, max_size=3)
    ),
    max_leaves=8,
)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside ``node`` (dict keys and list indexes), root excluded."""
    found: list[tuple] = []
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        found.append((*prefix, key))
        found.extend(_paths(child, (*prefix, key)))
    return found


def _parent(root: Any, path: tuple) -> Any:
    for key in path[:-1]:
        root = root[key]
    return root


def _mutate(manifest: dict, data: st.DataObject) -> dict:
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        paths = _paths(manifest)
        if not paths:
            break
        path = data.draw(st.sampled_from(paths), label="path")
        parent, key = _parent(manifest, path), path[-1]
        how = data.draw(st.sampled_from(["drop", "rename", "retype", "nest", "duplicate-item"]), label="how")
        if how == "drop":
            del parent[key]
        elif how == "rename" and isinstance(parent, dict):
            parent[key + data.draw(_ODD_TEXT | st.text(min_size=1, max_size=3), label="suffix")] = parent.pop(key)
        elif how == "retype":
            parent[key] = data.draw(_VALUES, label="value")
        elif how == "nest":
            # Spliced in as text (``_encode``): json.dumps itself cannot write 3000 levels.
            depth = data.draw(st.sampled_from([1, 2, 50, 3000]), label="depth")
            parent[key] = _Deep(depth, parent[key])
        elif how == "duplicate-item" and isinstance(manifest.get("items"), list) and manifest["items"]:
            manifest["items"].append(copy.deepcopy(manifest["items"][0]))
    return manifest


def _encode(manifest: dict, data: st.DataObject) -> bytes:
    ascii_only = data.draw(st.booleans(), label="ascii")

    def dump(value: Any) -> str:
        if isinstance(value, _Deep):
            return "[" * value.depth + dump(value.value) + "]" * value.depth
        if isinstance(value, dict):
            return (
                "{" + ", ".join(f"{json.dumps(k, ensure_ascii=ascii_only)}: {dump(v)}" for k, v in value.items()) + "}"
            )
        if isinstance(value, list):
            return "[" + ", ".join(dump(v) for v in value) + "]"
        return json.dumps(value, ensure_ascii=ascii_only, allow_nan=True)

    text = dump(manifest)
    raw = text.encode("utf-8", errors="surrogatepass")  # lone surrogates as raw (invalid) UTF-8 too
    if data.draw(st.booleans(), label="cut"):
        at = data.draw(st.integers(0, len(raw)), label="at")
        insert = data.draw(
            st.sampled_from([b"", b",", b"}", b"\xff", b'"', b"\\u", b'"id": "x",', b"NaN"]), label="insert"
        )
        raw = raw[:at] + insert + raw[at + data.draw(st.integers(0, 3), label="drop") :]
    return raw


@pytest.fixture(scope="module")
def sources() -> dict[str, dict]:
    return {name: json.loads((root / "manifest.json").read_text(encoding="utf-8")) for name, root in SOURCES.items()}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mutated_manifest_loads_or_raises_a_dataset_error_naming_its_file_and_item(
    data: st.DataObject, sources: dict[str, dict], tmp_path: Path
) -> None:
    name = data.draw(st.sampled_from(sorted(SOURCES)), label="dataset")
    root = tmp_path / name
    if not root.exists():
        shutil.copytree(SOURCES[name], root)
    manifest = _mutate(copy.deepcopy(sources[name]), data)
    raw = _encode(manifest, data)
    (root / "manifest.json").write_bytes(raw)
    try:
        load_dataset(root)
    except DatasetError as exc:
        message = str(exc)
        assert exc.path is not None and str(root) in message, message
        assert str(exc.path) in message, message
        if exc.item_id is not None:
            assert exc.item_id in message, message
        assert "Traceback" not in message and "pydantic" not in message, message
    else:
        _assert_sendable(json.loads(raw.decode("utf-8-sig")))


def _assert_sendable(value: Any) -> None:
    """What the loader accepts can be sent to a target as standard UTF-8 JSON, read the same everywhere."""
    json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")  # no NaN/Infinity, no lone surrogate
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, int) and not isinstance(node, bool):
            assert abs(node) <= 2**53 - 1, node
