"""Dataset errors: ``DatasetError``, and pydantic's validation errors told as plain messages.

Every problem with a dataset is a ``DatasetError`` naming the file, the item and
the JSON path of the bad field (camelCase, as in the manifest), with a hint for
typos. This module knows the models only through the registry of kinds, so a
new kind's fields get the same messages.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from ..contract import MARKER_NAME_PATTERN
from ..kinds import KIND_NAMES, all_kinds, generation
from ..kinds.base import ID_PATTERN, TAG_PATTERN, RuleError

HASH_PATTERN = r"^[0-9a-f]{16}$"
"""xxh3_64 digests: 16 lower-case hex digits (docs/dataset.md)."""

_PATTERN_EXPLANATIONS = {
    ID_PATTERN: "an id may contain only letters, digits, '-' and '_' (docs/dataset.md: ids become pytest node ids)",
    TAG_PATTERN: "a tag must be a valid pytest marker name: a letter or '_' followed by letters, digits or '_'",
    HASH_PATTERN: "expected an xxh3_64 digest: 16 lower-case hex digits",
    MARKER_NAME_PATTERN: "expected a citation marker such as 'S1' or '1'",
}
"""What a value of a shared pattern must look like; each kind adds its own (``Kind.pattern_explanations``)."""


class DatasetError(Exception):
    """A dataset cannot be used. The message is plain text meant for the user.

    Attributes:
        path: The file at fault (manifest or corpus file), when known.
        item_id: The item at fault; ``items[i]`` when the item's own id is missing or bad.
        json_path: JSON path of the bad field inside the manifest, e.g. ``items[3].expectedEvidence[0]``.
    """

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        item_id: str | None = None,
        json_path: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.item_id = item_id
        self.json_path = json_path

    def __str__(self) -> str:
        return self.message


def _all_aliases(root: type[BaseModel]) -> dict[str, str]:
    """Every field name and alias of ``root`` and the models nested in it -> its camelCase alias."""
    aliases: dict[str, str] = {}
    seen: set[type[BaseModel]] = set()
    pending: list[type[BaseModel]] = [root, *(kind.model for kind in all_kinds())]
    while pending:
        model = pending.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            alias = info.alias or name
            aliases[name] = alias
            aliases[alias] = alias
            pending.extend(_models_in(info.annotation))
    return aliases


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation mentions (inside unions, lists, Annotated)."""
    found: list[type[BaseModel]] = []
    stack = [annotation]
    while stack:
        node = stack.pop()
        if isinstance(node, type) and issubclass(node, BaseModel):
            found.append(node)
            continue
        stack.extend(get_args(node))
    return found


_ALIASES: dict[str, str] = {}
_ALIASES_OF: list[int] = []
"""The registry ``generation`` ``_ALIASES`` was built for (empty: not built yet)."""
_FREE_FORM_KEYS = frozenset({"properties", "metadata", "corpusHashes", "origin"})
_SHARED_UNION_TAGS = frozenset({"int", "str", "none"})
"""Tags pydantic gives the members of plain unions such as ``int | str | None``."""


def _union_tags() -> frozenset[str]:
    """Every tag pydantic may put in an error's location: kind names and each kind's inner union tags."""
    return _SHARED_UNION_TAGS.union(KIND_NAMES, *(kind.union_tags for kind in all_kinds()))


def _pattern_explanation(pattern: str) -> str | None:
    for kind in all_kinds():
        if pattern in kind.pattern_explanations:
            return kind.pattern_explanations[pattern]
    return _PATTERN_EXPLANATIONS.get(pattern)


def _aliases() -> dict[str, str]:
    return _ALIASES


def describe_validation_error(
    exc: ValidationError, raw: dict[str, Any], manifest_path: Path, root: type[BaseModel]
) -> DatasetError:
    """One plain ``DatasetError`` for a pydantic ``ValidationError`` of the manifest model ``root``.

    The message names the manifest, the item (by id, else ``items[i]``) and the JSON
    path of the first bad field with camelCase names, then up to four more problems.
    """
    if _ALIASES_OF != [generation()]:
        _ALIASES.clear()
        _ALIASES.update(_all_aliases(root))
        _ALIASES_OF[:] = [generation()]
    return _describe_errors(exc, raw, manifest_path)


def _describe_errors(exc: ValidationError, raw: dict[str, Any], manifest_path: Path) -> DatasetError:
    """Turn a pydantic ValidationError into one plain DatasetError (first error first)."""
    described = [_describe(error, raw, manifest_path) for error in exc.errors(include_url=False)]
    first = described[0]
    message = first.message
    others = [d.message.removeprefix(f"{manifest_path}: ") for d in described[1:]]
    if others:
        message += "".join(f"\n  also: {o}" for o in others[:4])
        if len(others) > 4:
            message += f"\n  and {len(others) - 4} more"
    return DatasetError(message, path=manifest_path, item_id=first.item_id, json_path=first.json_path)


def _describe(error: ErrorDetails, raw: dict[str, Any], manifest_path: Path) -> DatasetError:
    loc = tuple(error.get("loc", ()))
    json_path = _json_path(loc, raw)
    rule = (error.get("ctx") or {}).get("error")
    if isinstance(rule, RuleError) and rule.json_path:
        json_path = _join_path(json_path, rule.json_path)
    item_id = None
    if (json_path or "").startswith("items["):
        index = int(json_path[6 : json_path.index("]")])
        item_id = _item_name(raw, index)
    what = _what_was_expected(error, loc)
    if item_id is None:
        where = ""
    elif item_id.startswith("items["):
        where = f"item {item_id} (no valid id), "
    else:
        where = f"item {item_id!r}, "
    field_part = f"field {json_path}: " if json_path else ""
    return DatasetError(
        f"{manifest_path}: {where}{field_part}{what}", path=manifest_path, item_id=item_id, json_path=json_path or None
    )


def _join_path(base: str, tail: str) -> str:
    """Append a rule's path (relative to the model that raised it) to the model's own path."""
    if not base:
        return tail
    return base + ("" if tail.startswith("[") else ".") + tail


def _item_name(raw: dict[str, Any], index: int) -> str:
    items = raw.get("items")
    item = items[index] if isinstance(items, list) and 0 <= index < len(items) else None
    # A valid item was already replaced by its model (``loader._item_validator``).
    item_id = item.get("id") if isinstance(item, dict) else getattr(item, "id", None)
    if isinstance(item_id, str) and re.match(ID_PATTERN, item_id):
        return item_id
    return f"items[{index}]"


def _key_part(key: str, first: bool) -> str:
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
        return key if first else f".{key}"
    return f"[{json.dumps(key, ensure_ascii=False)}]"


def _json_path(loc: tuple[Any, ...], raw: Any) -> str:
    """JSON path of a pydantic ``loc``, with camelCase names and union tags dropped."""
    parts: list[str] = []
    node: Any = raw
    free_form = False
    union_tags = _union_tags()
    for segment in loc:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
            node = node[segment] if isinstance(node, list) and 0 <= segment < len(node) else None
            free_form = False
            continue
        segment = str(segment)
        present = isinstance(node, dict) and segment in node
        # pydantic puts a union member's tag in loc; it is not a key of the input.
        if segment in union_tags and (not present or _is_tag_here(node, segment)):
            continue
        shown = segment if free_form else _aliases().get(segment, segment)
        parts.append(_key_part(shown, first=not parts))
        node = node[segment] if present else None
        free_form = shown in _FREE_FORM_KEYS
    return "".join(parts)


def _is_tag_here(node: dict[str, Any], segment: str) -> bool:
    return node.get("kind") == segment or node.get("call") == segment


def _what_was_expected(error: ErrorDetails, loc: tuple[Any, ...]) -> str:
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if kind == "value_error" and ctx.get("error") is not None:
        return str(ctx["error"])
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        key = str(loc[-1]) if loc else "?"
        close = difflib.get_close_matches(key, list(_aliases().values()), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown key {key!r} (unknown keys are errors so typos cannot pass silently){hint}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        discriminator = str(ctx.get("discriminator", "")).strip("'")
        if discriminator == "kind":
            if not isinstance(value, dict):
                return f"expected an item object, got {_short(value)}"
            if "kind" in value:
                return f"unknown kind {value['kind']!r}; valid kinds: {', '.join(KIND_NAMES)}"
            return f"missing 'kind'; valid kinds: {', '.join(KIND_NAMES)}"
        if discriminator == "call":
            if not isinstance(value, dict):
                return f'expected a probe object {{"call": "query" | "compare", ...}}, got {_short(value)}'
            if "call" in value:
                return f"unknown call {value['call']!r}; valid calls: query, compare"
            return "missing 'call'; valid calls: query, compare"
    if kind == "string_pattern_mismatch":
        explanation = _pattern_explanation(str(ctx.get("pattern"))) or error.get("msg", "bad value")
        return f"{explanation}; got {_short(value)}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected', '?')}; got {_short(value)}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        if len(loc) == 2 and loc[0] == "items":
            return f"expected an item object, got {_short(value)}"
        return f"expected a JSON object, got {_short(value)}"
    if kind == "list_type":
        return f"expected a JSON array, got {_short(value)}"
    message = str(error.get("msg", "invalid value"))
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if kind in ("expected_evidence_type", "expect_type"):
        return f"{message}; got {_short(value)}"
    return f"{message[:1].lower()}{message[1:]}; got {_short(value)}"


def _short(value: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
