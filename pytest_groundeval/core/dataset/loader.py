"""The loader: ``load_dataset`` turns a dataset directory into a validated ``Dataset`` (docs/dataset.md).

``load_dataset`` reads the manifest once (a hand-rolled scanner over the C JSON
decoder records each item's line for ``reportinfo``), validates each item with
its kind's model, reads each corpus file once (hashing the same bytes it
decodes), and returns a ``Dataset``. Every problem with the input is raised as
``DatasetError`` with a plain message naming the file, the item and the JSON path
of the bad field.
"""

from __future__ import annotations

import bisect
import gc
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from ..kinds import kind_of
from ..kinds.base import ID_PATTERN, ItemBase, Kind, RuleError
from ..scoring import EvidenceSearch
from ..strict_json import (
    DECODER,
    LENIENT,
    SURROGATE_ESCAPE,
    DuplicateKey,
    Problem,
    Refused,
    duplicate_key_message,
    first_problem,
)
from .corpus import CorpusDocument, _decode_utf8, _hash_mismatch, _json_error, _load_document, _read_hashed
from .errors import DatasetError, _key_part, describe_validation_error
from .manifest import Manifest, item_adapter, version_problem


@dataclass
class Dataset:
    """A loaded, validated dataset.

    Attributes:
        root: The dataset directory.
        manifest_path: Its ``manifest.json``.
        manifest: The validated manifest.
        version: The dataset version, a label its owner chooses (``v1``, ``smoke-1``; see ``version_problem``).
        documents: Corpus entry name → loaded document, in manifest order.
        items: Items in manifest order.
        item_lines: Item id → 1-based line of the item's object in ``manifest.json``.
        by_id: Item id → item.
    """

    root: Path
    manifest_path: Path
    manifest: Manifest
    version: str
    documents: dict[str, CorpusDocument]
    items: list[ItemBase]
    item_lines: dict[str, int]
    by_id: dict[str, ItemBase]


def load_dataset(path: str | Path) -> Dataset:
    """Load and validate a dataset (docs/dataset.md).

    Args:
        path: The dataset directory or its ``manifest.json``.

    Returns:
        The dataset, with every corpus file read once, hash-checked and decoded.

    Raises:
        DatasetError: Any problem with the manifest or corpus, with a message naming
            the file, the item and the JSON path of the bad field.
    """
    manifest_path, root = _locate(Path(path))
    with gc_paused():
        raw, lines = _read_manifest(manifest_path, _item_validator(root))
        manifest = _validate_manifest(raw, manifest_path, root)
    documents = _load_corpus(manifest, manifest_path, root)
    items = list(manifest.items)
    _check_items_against_corpus(items, documents, manifest_path)
    by_id = {item.id: item for item in items}
    item_lines = {item.id: line for item, line in zip(items, lines)}
    return Dataset(
        root=root,
        manifest_path=manifest_path,
        manifest=manifest,
        version=manifest.version,
        documents=documents,
        items=items,
        item_lines=item_lines,
        by_id=by_id,
    )


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many long-lived objects are made (a manifest's items, their tests).

    Parsing and validation allocate millions of container objects that all stay
    alive; each automatic collection re-walks them, which made a 100,000-item load
    two to three times slower. Nothing collectable is created, so pausing loses nothing.
    The collector's state is restored on leaving (it stays off if it was off).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _locate(path: Path) -> tuple[Path, Path]:
    if path.is_dir():
        manifest_path = path / "manifest.json"
        if not manifest_path.is_file():
            raise DatasetError(f"{path}: no manifest.json in this dataset directory", path=manifest_path)
        return manifest_path, path
    if not path.exists():
        raise DatasetError(f"{path}: no such dataset directory or manifest.json", path=path)
    return path, path.parent


_WHITESPACE = re.compile(r"[ \t\n\r]*")
# The bound C matcher, called as skip(text, pos).end() in the hot loops. `*` matches the
# empty string, so the match never fails: typed without the None that Pattern.match allows.
_SKIP_WS = cast(Callable[[str, int], re.Match[str]], _WHITESPACE.match)


class _Flagged(Exception):
    """The fast scanner met a refused value inside the value starting at ``pos`` (path ``path``)."""

    def __init__(self, pos: int, path: tuple[str | int, ...], cause: Refused) -> None:
        super().__init__(str(cause))
        self.pos, self.path, self.cause = pos, path, cause


def _read_manifest(
    manifest_path: Path, on_item: Callable[[Any], Any] | None = None
) -> tuple[dict[str, Any], list[int]]:
    """Parse manifest.json; return the object and the 1-based line of each item.

    ``on_item`` replaces each item as soon as it is parsed (``_item_validator``).

    Raises:
        DatasetError: not readable, not UTF-8, not JSON, not an object, or holding a
            value a manifest may not hold (``strict_json``), named by item, field and line.
    """
    try:
        data = manifest_path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{manifest_path}: cannot read: {exc.strerror or exc}", path=manifest_path) from None
    text = _decode_utf8(data, manifest_path)
    del data  # the bytes are not needed once decoded: not held while the items are parsed (memory peak)
    try:
        raw, offsets, spans = _scan_manifest(text, on_item)
    except _Flagged as flagged:
        problem = first_problem(text, flagged.pos, flagged.path)
        raise _refusal(text, problem, flagged.cause, manifest_path) from None
    except (json.JSONDecodeError, Refused, ValueError, IndexError, RecursionError):
        pass
    else:
        if "\\u" in text:
            _check_surrogate_escapes(text, spans, offsets, manifest_path)
        return raw, _offsets_to_lines(text, offsets)
    # The fast scanner gives up on anything unusual; the standard parser then explains.
    try:
        parsed = DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise _json_error(exc, manifest_path) from None
    except Refused as exc:
        raise _refusal(text, first_problem(text, _SKIP_WS(text, 0).end()), exc, manifest_path) from None
    except (ValueError, RecursionError) as exc:
        raise DatasetError(f"{manifest_path}: unreadable JSON: {exc}", path=manifest_path) from None
    if not isinstance(parsed, dict):
        raise DatasetError(
            f"{manifest_path}: the manifest must be a JSON object with version, corpus, corpusHashes "
            f"and items, got a JSON {type(parsed).__name__}",
            path=manifest_path,
        )
    raise DatasetError(f"{manifest_path}: could not read the manifest's items", path=manifest_path)  # pragma: no cover


def _scan_manifest(
    text: str, on_item: Callable[[Any], Any] | None = None
) -> tuple[dict[str, Any], list[int], list[tuple[int, int, tuple[str | int, ...]]]]:
    """Parse the top-level object by hand so each item's start offset comes for free.

    Each value is decoded by the C scanner (``raw_decode``), so this is one parse
    at C speed, not a second pass over the text. Raises on anything not a JSON
    object; the caller then reparses with ``json.loads`` for a precise message.

    Returns:
        The object; each item's start offset; and ``(start, end, (key,))`` of every
        top-level value, in document order.

    Raises:
        _Flagged: a value holds something ``strict_json`` refuses; says which value.
    """
    skip = _SKIP_WS
    decode = DECODER.raw_decode
    pos = skip(text, 0).end()
    if text[pos] != "{":
        raise ValueError("not an object")
    result: dict[str, Any] = {}
    offsets: list[int] = []
    spans: list[tuple[int, int, tuple[str | int, ...]]] = []
    pos = skip(text, pos + 1).end()
    if text[pos] == "}":
        pos += 1
    else:
        while True:
            if text[pos] != '"':
                raise ValueError("expected a key")
            try:
                key, pos = decode(text, pos)
            except Refused:  # pragma: no cover - a key is a plain string
                raise ValueError("bad key") from None
            if key in result:
                raise _Flagged(skip(text, 0).end(), (), DuplicateKey(key)) from None
            pos = skip(text, pos).end()
            if text[pos] != ":":
                raise ValueError("expected ':'")
            pos = skip(text, pos + 1).end()
            start = pos
            if key == "items" and text[pos] == "[":
                result[key], offsets, pos = _scan_items(text, pos, on_item)
            else:
                try:
                    result[key], pos = decode(text, pos)
                except Refused as exc:
                    raise _Flagged(start, (key,), exc) from None
            spans.append((start, pos, (key,)))
            pos = skip(text, pos).end()
            if text[pos] == ",":
                pos = skip(text, pos + 1).end()
                continue
            if text[pos] != "}":
                raise ValueError("expected ',' or '}'")
            pos += 1
            break
    if skip(text, pos).end() != len(text):
        raise ValueError("extra data")
    return result, offsets, spans


def _scan_items(text: str, pos: int, on_item: Callable[[Any], Any] | None) -> tuple[list[Any], list[int], int]:
    skip = _SKIP_WS
    decode = DECODER.raw_decode
    items: list[Any] = []
    offsets: list[int] = []
    pos = skip(text, pos + 1).end()
    if text[pos] == "]":
        return items, offsets, pos + 1
    while True:
        start = pos
        offsets.append(start)
        try:
            value, pos = decode(text, pos)
        except Refused as exc:
            raise _Flagged(start, ("items", len(items)), exc) from None
        items.append(value if on_item is None else on_item(value))
        pos = skip(text, pos).end()
        if text[pos] == ",":
            pos = skip(text, pos + 1).end()
            continue
        if text[pos] != "]":
            raise ValueError("expected ',' or ']'")
        return items, offsets, pos + 1


def _check_surrogate_escapes(
    text: str, spans: list[tuple[int, int, tuple[str | int, ...]]], offsets: list[int], manifest_path: Path
) -> None:
    """Refuse a lone surrogate, looking only at the values where a surrogate escape is written.

    Paired escapes (``\\ud83d\\ude00``, what ``json.dumps`` writes for an emoji) are
    fine and common, so only the top-level values and items holding an escape are
    walked, not the whole manifest.

    Args:
        text: The manifest.
        spans: ``(start, end, (key,))`` of each top-level value, in document order.
        offsets: Start offset of each item, in order.
        manifest_path: For the message.
    """
    starts = [start for start, _, _ in spans]
    walked: set[tuple[int, int]] = set()
    for match in SURROGATE_ESCAPE.finditer(text):
        at = match.start()
        top = bisect.bisect_right(starts, at) - 1
        if top < 0 or at >= spans[top][1]:
            where = (-1, -1)  # in a top-level key: walk the whole manifest
        elif spans[top][2] == ("items",) and offsets and at >= offsets[0]:
            where = (top, bisect.bisect_right(offsets, at) - 1)
        else:
            where = (top, -1)
        if where in walked:
            continue
        walked.add(where)
        if where[0] < 0:
            problem = first_problem(text, _SKIP_WS(text, 0).end())
        elif where[1] >= 0:
            problem = first_problem(text, offsets[where[1]], ("items", where[1]))
        else:
            start, _, path = spans[top]
            problem = first_problem(text, start, path)
        if problem is not None:
            raise _refusal(text, problem, None, manifest_path)


def _refusal(text: str, problem: Problem | None, cause: Refused | None, manifest_path: Path) -> DatasetError:
    """The error for a refused value: file, line, item (id, else index) and JSON path."""
    if problem is None:  # the walk could not place it; say what the decoder said
        what = duplicate_key_message(cause.key) if isinstance(cause, DuplicateKey) else str(cause)
        return DatasetError(f"{manifest_path}: {what}", path=manifest_path)
    line = text.count("\n", 0, problem.offset) + 1
    json_path = _path_text(problem.path)
    item_id = None
    where = ""
    if len(problem.path) >= 2 and problem.path[0] == "items" and isinstance(problem.path[1], int):
        item_id = _item_id_at(text, problem.path[1])
        where = f"item {item_id} (no valid id), " if item_id.startswith("items[") else f"item {item_id!r}, "
    field_part = f"field {json_path}: " if json_path else ""
    return DatasetError(
        f"{manifest_path}: line {line}: {where}{field_part}{problem.what}",
        path=manifest_path,
        item_id=item_id,
        json_path=json_path or None,
    )


def _item_id_at(text: str, index: int) -> str:
    """The id of ``items[index]`` read leniently, or ``items[index]`` when it has no valid one."""
    try:
        items = LENIENT.decode(text).get("items")
        item_id = items[index].get("id")
    except (ValueError, AttributeError, IndexError, TypeError, RecursionError):
        item_id = None
    if isinstance(item_id, str) and re.match(ID_PATTERN, item_id):
        return item_id
    return f"items[{index}]"


def _path_text(parts: tuple[str | int, ...]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else _key_part(part, first=not text)
    return text


def _offsets_to_lines(text: str, offsets: list[int]) -> list[int]:
    # One forward sweep: each count covers only the text since the previous item.
    lines: list[int] = []
    line, previous = 1, 0
    for offset in offsets:
        line += text.count("\n", previous, offset)
        previous = offset
        lines.append(line)
    return lines


def _validate_manifest(raw: dict[str, Any], manifest_path: Path, root: Path) -> Manifest:
    if "version" in raw:
        problem = version_problem(raw["version"])
        if problem is not None:
            raise DatasetError(
                f"{manifest_path}: field version: invalid dataset version {raw['version']!r}: {problem}",
                path=manifest_path,
                json_path="version",
            )
    try:
        return Manifest.model_validate(raw, context={"dataset": root})
    except ValidationError as exc:
        raise describe_validation_error(exc, raw, manifest_path, Manifest) from None


def _item_validator(root: Path) -> Callable[[Any], Any]:
    """``item(value)``: a raw manifest item validated into its kind's model as soon as it is parsed.

    Each raw item is dropped as soon as its model exists, so a large manifest never
    holds all its raw items (about 1.5 KB each) and its models at once: validating
    the manifest in one pass did (about twice the memory of the models alone at
    100,000 items), and so did validating the items one by one after parsing them all
    (the raw items were the collection's peak: issue 24). ``Manifest`` then takes the
    models as they are (pydantic does not revalidate model instances). An invalid
    item stays a raw dict, so the manifest's own validation reports it exactly as
    before, with every other error.
    """
    validate = item_adapter().validator.validate_python  # the adapter's own validator, without its per-call wrapper
    context = {"dataset": root}
    fields_sets: dict[frozenset[str], set[str]] = {}

    def item(value: Any) -> Any:
        try:
            model = validate(value, context=context)
        except ValidationError:
            return value
        return _share_fields_set(model, fields_sets)

    return item


def _share_fields_set(item: Any, shared: dict[frozenset[str], set[str]]) -> Any:
    """Give ``item`` the one set of given fields that the manifest's items of its shape share.

    pydantic keeps on each model the names of the fields its input gave
    (``__pydantic_fields_set__``, read by ``model_fields_set`` and ``exclude_unset``):
    a set of six names is 728 bytes, about 40% of a qa item (issue 24, memory per item).
    Items of a manifest mostly give the same fields, so they share one set. Sharing
    is safe because items are frozen (``ItemBase``): pydantic changes the set only on
    assignment, which a frozen model refuses, and ``model_copy`` copies it first.
    """
    names = frozenset(item.__pydantic_fields_set__)
    fields_set = shared.get(names)
    if fields_set is None:
        fields_set = shared[names] = set(names)
    object.__setattr__(item, "__pydantic_fields_set__", fields_set)
    return item


def _load_corpus(manifest: Manifest, manifest_path: Path, root: Path) -> dict[str, CorpusDocument]:
    corpus_dir = root / "corpus"
    read: dict[str, tuple[bytearray, str]] = {}
    documents: dict[str, CorpusDocument] = {}
    for i, entry in enumerate(manifest.corpus):
        path = corpus_dir / entry.file
        if entry.file not in read:
            try:
                read[entry.file] = _read_hashed(path)
            except OSError as exc:
                reason = "file not found" if isinstance(exc, FileNotFoundError) else (exc.strerror or str(exc))
                raise DatasetError(
                    f"{path}: corpus file of corpus[{i}] ({entry.name!r}) cannot be read: {reason}",
                    path=path,
                    json_path=f"corpus[{i}].file",
                ) from None
            data, digest = read[entry.file]
            expected = manifest.corpus_hashes[entry.file]
            if digest != expected:
                raise _hash_mismatch(path, manifest_path, expected, digest, data, root)
        data, digest = read[entry.file]
        documents[entry.name] = _load_document(entry, data, digest, path)
    _check_no_stray_files(corpus_dir, set(read), manifest_path)
    return documents


def _check_items_against_corpus(
    items: list[ItemBase], documents: dict[str, CorpusDocument], manifest_path: Path
) -> None:
    """Each kind's rules against the canonical text (``Kind.check_corpus``), e.g. qa's expected evidence.

    Raises:
        DatasetError: the first item breaking one, naming the item and the field.
    """
    search = EvidenceSearch({name: document.canonical for name, document in documents.items()})
    kinds: dict[str, Kind] = {}  # looked up once per kind, not per item
    for i, item in enumerate(items):
        kind = kinds.get(item.kind)
        if kind is None:
            kind = kinds[item.kind] = kind_of(item)
        try:
            kind.check_corpus(item, f"items[{i}]", search)
        except RuleError as exc:
            json_path = exc.json_path or f"items[{i}]"
            raise DatasetError(
                f"{manifest_path}: item {item.id!r}, field {json_path}: {exc}",
                path=manifest_path,
                item_id=item.id,
                json_path=json_path,
            ) from None


def _check_no_stray_files(corpus_dir: Path, listed: set[str], manifest_path: Path) -> None:
    """Every file under corpus/ must be a listed, hashed corpus file (docs/dataset.md).

    A file dropped into corpus/ and never listed would silently not be evaluated.
    Hidden files (``.gitkeep``, ``.DS_Store``) are not corpus files.
    """
    if not corpus_dir.is_dir():
        return
    for path in sorted(corpus_dir.rglob("*")):
        relative = path.relative_to(corpus_dir).as_posix()
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(corpus_dir).parts):
            if relative not in listed:
                raise DatasetError(
                    f"{path}: not listed in {manifest_path.name}'s corpus, so it has no hash and would not be "
                    f"evaluated (docs/dataset.md: every corpus file must have a hash); add it to corpus and corpusHashes "
                    f"(`groundeval hash-corpus --dataset {corpus_dir.parent}` prints the hash) or remove it",
                    path=path,
                    json_path="corpus",
                )
