"""The manifest (docs/dataset.md): ``manifest.json`` as a pydantic model.

Items are a union of the registered kinds' models, discriminated on ``kind``;
each kind checks its own cross-references to the corpus (``Kind.check_manifest``).
The union follows the registry: when a kind is registered at run time
(``core.kinds.register``) it is rebuilt, and ``Manifest`` with it.
"""

from __future__ import annotations

import json
import operator
import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property
from pathlib import PurePosixPath
from types import GenericAlias
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union, cast

import regex
from pydantic import Field, StringConstraints, TypeAdapter, ValidationInfo, field_validator, model_validator

from ..floors import FloorsError, check_floors
from ..kinds import all_kinds, kind_of, on_change
from ..kinds.base import ItemBase, Kind, ManifestIndex, NonEmpty, RuleError
from ..wire import WireModel
from .errors import HASH_PATTERN


def version_problem(value: Any) -> str | None:
    """Why ``value`` is not a dataset version, or None when it is one (docs/dataset.md).

    A dataset version is a label its owner chooses (``v1``, ``2026-11-30``,
    ``rc-3``, ``holdout-1``): any non-empty string without control or format
    characters (a newline or a zero-width space would print the same as another
    version but compare different) and without surrounding whitespace. The version
    names the dataset's content and is bumped when the corpus or items change, so a
    baseline is only compared with a run of the same version (docs/gate.md); the
    manifest format is v1 whatever the version.

    Args:
        value: The manifest's ``version`` value, of any JSON type.

    Returns:
        A plain reason, or None.
    """
    if not isinstance(value, str):
        return (
            f"expected a string naming this dataset's content, e.g. 'v1' or 'smoke-1', got a JSON {_json_type(value)}"
        )
    if not value.strip():
        return "expected a non-empty label naming this dataset's content, e.g. 'v1' or 'smoke-1'"
    for index, char in enumerate(value):
        if unicodedata.category(char) in _UNPRINTABLE:
            return (
                f"character {index} ({char!r}, U+{ord(char):04X}) is a control or format character; "
                "a version is a printable label such as 'v1', 'smoke-1' or '2026-11-30'"
            )
    if value != value.strip():
        return "has leading or trailing whitespace, so it would not equal the same label written without it"
    return None


_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
"""Unicode categories a version may not hold: control, format, surrogate, private use, line and paragraph separators."""


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


Digest = Annotated[str, StringConstraints(pattern=HASH_PATTERN)]


@dataclass(frozen=True)
class _ItemTypes:
    """The item types of the registry as it is: ``AnyItem``, ``Item`` and ``ITEM_ADAPTER``."""

    any_item: object
    """Any one of the registered kinds' item models (a ``Union``)."""
    item: object
    """A dataset item: that union discriminated on ``kind`` (docs/dataset.md)."""
    adapter: TypeAdapter[ItemBase]
    """Validates one item (built once per registry; ``Manifest`` validates all items in one pass)."""


def _item_types() -> _ItemTypes:
    # The union is made of whatever kinds are registered now, so it is built with getitem:
    # a subscript would be read by the type checker as a static type it cannot know.
    any_item = operator.getitem(Union, tuple(kind.model for kind in all_kinds()))
    # Any: a type built at run time (pydantic's TypeAdapter takes it as a type form).
    item: Any = operator.getitem(Annotated, (any_item, Field(discriminator="kind")))
    adapter: TypeAdapter[ItemBase] = TypeAdapter(item)
    return _ItemTypes(any_item, item, adapter)


_types = [_item_types()]
"""The current ``_ItemTypes`` (one slot, replaced when the registry changes)."""

if TYPE_CHECKING:
    # What the type checker knows of an item of any kind: every kind's model is an ItemBase.
    _Item: TypeAlias = ItemBase
    AnyItem: TypeAlias = ItemBase
    Item: TypeAlias = ItemBase
    ITEM_ADAPTER: TypeAdapter[ItemBase]
else:
    _Item = _types[0].item
    """``Manifest.items``' item type when the class is built; ``_rebuild`` replaces it in the field."""


def item_adapter() -> TypeAdapter[ItemBase]:
    """The validator of one dataset item, for the kinds registered now."""
    return _types[0].adapter


def __getattr__(name: str) -> Any:
    # AnyItem, Item and ITEM_ADAPTER follow the registry, so they are read at each access.
    if name in _CURRENT:
        return getattr(_types[0], _CURRENT[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_CURRENT = {"AnyItem": "any_item", "Item": "item", "ITEM_ADAPTER": "adapter"}


def compile_mention_pattern(pattern: str) -> regex.Pattern[str]:
    """Compile a ``mentionPattern`` (docs/citation.md) so that its matching can be bounded in time.

    The ``regex`` package in its ``VERSION0`` mode reads Python ``re`` syntax (named
    groups ``(?P<name>...)`` included) and, unlike ``re``, takes a ``timeout`` on
    ``finditer``: a pattern that backtracks catastrophically, such as
    ``(?P<speaker>(\\w+\\s?)+)\\(``, is stopped instead of hanging the session.

    Raises:
        regex.error: not a valid regular expression.
    """
    return regex.compile(pattern, flags=regex.VERSION0)


class CorpusEntry(WireModel):
    """One corpus document as the manifest declares it (docs/dataset.md)."""

    name: NonEmpty
    """Document name sent to the target and named by evidence spans, e.g. ``eval/project-alpha.json``."""
    label: NonEmpty
    """Label the target files the document under; items' ``find`` selects it."""
    file: NonEmpty
    """Path of the file relative to ``corpus/`` (``/``-separated, inside ``corpus/``)."""
    format: Literal["json", "text"] = "json"
    """``json``: an array of objects or one object; ``text``: UTF-8 text."""

    @field_validator("file")
    @classmethod
    def _fileinside_corpus(cls, value: str) -> str:
        if not inside_corpus(value):
            raise ValueError(f"{value!r} must be a '/'-separated path inside corpus/ (no absolute path, no '..')")
        return value


def inside_corpus(file: str) -> bool:
    path = PurePosixPath(file)
    return not (path.is_absolute() or "\\" in file or ".." in path.parts or re.match(r"^[A-Za-z]:", file))


class Manifest(WireModel):
    """``manifest.json`` version v1 (docs/dataset.md, docs/citation.md).

    Cross-field rules checked here: unique item ids and corpus names, every corpus
    file has a hash and every hash a file, ``find`` labels and
    ``expectedEvidence`` documents exist, at least one item.
    """

    version: str
    """The dataset version: a label its owner chooses, bumped when the corpus or items change (``version_problem``)."""
    corpus: list[CorpusEntry] = Field(default_factory=list)
    """The documents ingested into the target."""
    corpus_hashes: dict[str, Digest] = Field(default_factory=dict)
    """Corpus file name → xxh3_64 hex digest of its raw bytes."""
    mention_pattern: str | None = None
    """Regex whose named groups are metadata fields, e.g. ``(?P<speaker>[A-Z]\\w+ \\w+)`` (docs/citation.md).

    Python ``re`` syntax, run by the ``regex`` package so that each paragraph's
    matching is bounded in time (``core.kinds.citation.text.MENTION_TIMEOUT_S``)."""
    floors: dict[str, Any] | None = None
    """The dataset's own gate bounds (docs/dataset.md, docs/gate.md): metric name -> number or
    ``null``, with the rules of a floors file (``core.floors.check_floors``), merged over the
    default bounds; an ``--eval-floors`` file is merged over them, key by key."""
    items: list[_Item]
    """The items, in order; each becomes one pytest test."""

    @field_validator("floors", mode="before")
    @classmethod
    def _floors_valid(cls, value: Any) -> Any:
        if value is None:
            return value
        try:
            return check_floors(value, "manifest floors")
        except FloorsError as exc:
            where = f"[{json.dumps(exc.key, ensure_ascii=False)}]" if exc.key is not None else None
            raise RuleError(str(exc).removesuffix(" (manifest floors)"), where) from None

    @field_validator("mention_pattern")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            compiled = compile_mention_pattern(value)
        except (regex.error, OverflowError, RecursionError, ValueError, TypeError) as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        if not compiled.groupindex:
            raise ValueError("needs at least one named group, e.g. (?P<speaker>...), naming a metadata field")
        return value

    @cached_property
    def mention_regex(self) -> regex.Pattern[str] | None:
        """``mention_pattern`` compiled with the ``regex`` package (``compile_mention_pattern``), or None."""
        return None if self.mention_pattern is None else compile_mention_pattern(self.mention_pattern)

    @model_validator(mode="after")
    def _cross_references(self, info: ValidationInfo) -> Manifest:
        dataset = (info.context or {}).get("dataset", "DIR") if info is not None else "DIR"
        self._check_corpus(str(dataset))
        self._check_items()
        return self

    def _check_corpus(self, dataset: str) -> None:
        names: dict[str, int] = {}
        files: set[str] = set()
        for i, entry in enumerate(self.corpus):
            if entry.name in names:
                raise RuleError(
                    f"duplicate corpus name {entry.name!r} (also corpus[{names[entry.name]}])", f"corpus[{i}].name"
                )
            names[entry.name] = i
            files.add(entry.file)
            if entry.file not in self.corpus_hashes:
                raise RuleError(
                    f"corpus file {entry.file!r} has no hash in corpusHashes; run "
                    f"`groundeval hash-corpus --dataset {dataset}` and paste its output",
                    f"corpus[{i}].file",
                )
        for name in self.corpus_hashes:
            if name not in files:
                raise RuleError(
                    f"corpusHashes has a hash for {name!r}, which no corpus entry uses; "
                    "remove it or add the corpus entry",
                    f"corpusHashes[{json.dumps(name, ensure_ascii=False)}]",
                )

    def _check_items(self) -> None:
        if not self.items:
            raise RuleError("the manifest has no items; a dataset needs at least one", "items")
        index = ManifestIndex(
            labels={entry.label for entry in self.corpus}, documents={entry.name for entry in self.corpus}
        )
        seen: dict[str, int] = {}
        kinds: dict[str, Kind] = {}  # looked up once per kind, not per item
        for i, item in enumerate(self.items):
            if item.id in seen:
                raise RuleError(
                    f"duplicate item id {item.id!r} at items[{seen[item.id]}] and items[{i}]", f"items[{i}].id"
                )
            seen[item.id] = i
            find = getattr(item, "find", None)
            if find is not None and find not in index.labels:
                raise RuleError(
                    f"find label {find!r} is not the label of any corpus entry; labels: {index.listing(index.labels)}",
                    f"items[{i}].find",
                )
            kind = kinds.get(item.kind)
            if kind is None:
                kind = kinds[item.kind] = kind_of(item)
            kind.check_manifest(item, f"items[{i}]", index)


def _rebuild() -> None:
    """Rebuild the item union and ``Manifest`` after a kind was registered or removed."""
    _types[0] = _item_types()
    # pydantic types FieldInfo.annotation as a class, but takes any annotation (here ``list[Union[...]]``).
    Manifest.model_fields["items"].annotation = cast("type[Any]", GenericAlias(list, (_types[0].item,)))
    Manifest.model_rebuild(force=True)


on_change(_rebuild)
