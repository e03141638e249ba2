"""Datasets (SPEC §2): manifest v1 models, corpus documents and the loader.

A dataset is a directory holding ``manifest.json`` and ``corpus/``. ``load_dataset``
reads the manifest once, validates every item with one pydantic pass, reads each
corpus file once (hashing the same bytes it decodes), and returns a ``Dataset``.
Every problem with the input is raised as ``DatasetError`` with a plain message
naming the file, the item and the JSON path of the bad field.

``hash_corpus_main`` is ``groundeval hash-corpus``: it prints the hashes to paste
into ``corpusHashes`` without running the validating loader, so it works exactly
when the manifest's hashes are wrong.

This module does not import pytest.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, NamedTuple, Union

import xxhash
from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ._model import WireModel
from .evidence import EvidenceBlock, EvidenceClaim, EvidenceSource

__all__ = [
    "AdversarialItem",
    "AnyItem",
    "CHUNK_SIZE",
    "HASH_BUFFER_SIZE",
    "CitationItem",
    "CompareExpect",
    "CompareProbe",
    "CorpusDocument",
    "CorpusEntry",
    "Dataset",
    "DatasetError",
    "ExpectedEvidence",
    "ExpectedRecord",
    "ITEM_ADAPTER",
    "ITEM_KINDS",
    "Item",
    "Manifest",
    "QaItem",
    "QueryExpect",
    "QueryProbe",
    "RecordedAnswer",
    "RecordedResponse",
    "RecordedSource",
    "Reference",
    "ReviewItem",
    "VERSION_PATTERN",
    "SourceMetadata",
    "TemporalItem",
    "TemporalStep",
    "ValidTime",
    "canonical_json",
    "canonical_text",
    "hash_corpus_main",
    "hash_file",
    "load_dataset",
    "parse_reference",
    "parse_rfc3339",
]

CHUNK_SIZE = 64 * 1024
"""Reference size of a read: tests build files spanning several of these."""

HASH_BUFFER_SIZE = 1024 * 1024
"""Bytes per read in ``hash_file``. With 64 KiB reads the per-read system call and
interpreter loop held hashing at about 0.7x the throughput of ``cat``; at 1 MiB that
cost vanishes while the buffer still sits in the CPU cache between the kernel's copy
and the hash (``benchmarks/bench_hash.py``)."""

VERSION_PATTERN = r"^v[0-9]+([._-][A-Za-z0-9]+)*$"
"""A dataset version: ``v1``, ``v2``, ``v1.1``, ``v3-rc1``. The manifest format is v1 whatever
the version; the version names the dataset's content and is bumped when the corpus or items
change (SPEC §2), so a baseline is only compared with a run of the same version (SPEC §9)."""
"""Manifest versions this module reads (SPEC §2)."""

ITEM_KINDS = ("qa", "adversarial", "temporal", "citation", "review")
"""The item kinds of SPEC §2, in the order the table lists them."""

ID_PATTERN = r"^[A-Za-z0-9_-]+$"
"""Item ids: letters, digits, ``-`` and ``_`` so node ids, ``-k`` and IDE re-runs work (SPEC §2)."""

TAG_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""Tags become pytest markers, so they must be valid marker names."""

SAVE_PATTERN = r"^[A-Za-z0-9_]+$"
"""Temporal save names; no ``-``/``+`` so ``$tx:<save>-N`` parses one way only."""

HASH_PATTERN = r"^[0-9a-f]{16}$"
"""xxh3_64 digests: 16 lower-case hex digits (SPEC §2)."""

MARKER_PATTERN = r"^S?[0-9]+$"
"""Citation markers as written inside the brackets: ``S1`` or ``1`` (SPEC §11)."""

RESERVED_TAGS = frozenset({"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings"})
"""pytest's built-in markers: a tag with one of these names would change how pytest runs the item."""

_UTF8_BOM = b"\xef\xbb\xbf"

_PATTERN_EXPLANATIONS = {
    ID_PATTERN: "an id may contain only letters, digits, '-' and '_' (SPEC §2: ids become pytest node ids)",
    TAG_PATTERN: "a tag must be a valid pytest marker name: a letter or '_' followed by letters, digits or '_'",
    SAVE_PATTERN: "a save name may contain only letters, digits and '_'",
    HASH_PATTERN: "expected an xxh3_64 digest: 16 lower-case hex digits",
    MARKER_PATTERN: "expected a citation marker such as 'S1' or '1'",
}

HASH_CORPUS_HINT = "bump the dataset version and run `groundeval hash-corpus --dataset {dataset}`"
"""What to do when a corpus file and its recorded hash disagree (SPEC §2)."""

LINE_ENDING_HINT = (
    "the file matches once its CRLF/CR line endings are turned into LF: the checkout "
    "converted line endings (for example git's core.autocrlf). Keep corpus bytes exact with a "
    ".gitattributes rule such as `corpus/** -text`"
)
"""Added to a hash mismatch when LF-normalised bytes would match."""


# --------------------------------------------------------------------------- errors


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


class _RuleError(ValueError):
    """A cross-field rule broken inside a model validator, carrying where it happened.

    Pydantic keeps the raised ``ValueError`` in the error's ``ctx``; the loader reads
    ``json_path`` from it because a model-level validator's ``loc`` points at the model.
    """

    def __init__(self, message: str, json_path: str | None = None) -> None:
        super().__init__(message)
        self.json_path = json_path


# --------------------------------------------------------------------------- small parsers


class Reference(NamedTuple):
    """A parsed ``$tx:<save>[+N|-N]`` or ``$id:<save>`` value (SPEC §6)."""

    kind: Literal["tx", "id"]
    """``tx``: the save's ``txStart`` (ms); ``id``: the save's record id."""
    save: str
    """The setup step's ``save`` name."""
    offset_ms: int
    """Milliseconds added to the tx time (0 for ``$id``)."""


_REFERENCE_RE = re.compile(r"^\$(tx|id):([A-Za-z0-9_]+)(?:([+-])([0-9]+))?$")


def parse_reference(value: str) -> Reference | None:
    """Parse a temporal placeholder.

    Args:
        value: A probe or step value such as ``$tx:v1+5`` or ``$id:rec``.

    Returns:
        The reference, or None when ``value`` does not start with ``$``.

    Raises:
        ValueError: ``value`` starts with ``$`` but is not ``$tx:<save>``,
            ``$tx:<save>+N``, ``$tx:<save>-N`` or ``$id:<save>`` (SPEC §6).
    """
    if not value.startswith("$"):
        return None
    match = _REFERENCE_RE.match(value)
    if match is None or (match.group(1) == "id" and match.group(3)):
        raise ValueError(
            f"{value!r} is not a reference: expected $tx:<save>, $tx:<save>+N, $tx:<save>-N or $id:<save>"
        )
    kind, save, sign, digits = match.groups()
    offset = int(digits) if digits else 0
    return Reference(kind, save, -offset if sign == "-" else offset)


_RFC3339_RE = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$"
)


def parse_rfc3339(value: str) -> datetime:
    """Parse an RFC 3339 timestamp with a UTC offset into an aware ``datetime``.

    Valid times are compared as instants, never as strings (SPEC §3).

    Raises:
        ValueError: Not RFC 3339, no offset, or not a real date/time.
    """
    match = _RFC3339_RE.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(
            f"{value!r} is not an RFC 3339 timestamp with an offset, e.g. 2024-05-01T00:00:00Z"
        )
    date, time, fraction, offset = match.groups()
    # datetime.fromisoformat on Python 3.10 takes neither "Z" nor more than 6 fraction digits.
    micro = f".{(fraction + '000000')[:6]}" if fraction else ""
    offset = "+00:00" if offset in ("Z", "z") else offset
    try:
        return datetime.fromisoformat(f"{date}T{time}{micro}{offset}")
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a valid RFC 3339 timestamp: {exc}") from None


# --------------------------------------------------------------------------- manifest models

ItemId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
TagName = Annotated[str, StringConstraints(pattern=TAG_PATTERN)]
SaveName = Annotated[str, StringConstraints(pattern=SAVE_PATTERN)]
Digest = Annotated[str, StringConstraints(pattern=HASH_PATTERN)]
Marker = Annotated[str, StringConstraints(pattern=MARKER_PATTERN)]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]


def _check_tags(tags: list[str]) -> list[str]:
    for i, tag in enumerate(tags):
        if tag in RESERVED_TAGS:
            raise _RuleError(
                f"tag {tag!r} is one of pytest's built-in markers and would change how the item runs; rename it",
                json_path=f"[{i}]",
            )
    return tags


class CorpusEntry(WireModel):
    """One corpus document as the manifest declares it (SPEC §2)."""

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
    def _file_inside_corpus(cls, value: str) -> str:
        if not _inside_corpus(value):
            raise ValueError(f"{value!r} must be a '/'-separated path inside corpus/ (no absolute path, no '..')")
        return value


def _inside_corpus(file: str) -> bool:
    path = PurePosixPath(file)
    return not (path.is_absolute() or "\\" in file or ".." in path.parts or re.match(r"^[A-Za-z]:", file))


class ExpectedEvidence(WireModel):
    """An expected evidence string pinned to one document."""

    document: NonEmpty
    """The corpus entry ``name`` the evidence must come from."""
    text: NonEmpty
    """Text that must occur in a retrieved evidence span of that document."""


def _expected_evidence_tag(value: Any) -> str | None:
    if isinstance(value, str):
        return "string-evidence"
    if isinstance(value, (dict, ExpectedEvidence)):
        return "document-evidence"
    return None


ExpectedEvidenceValue = Annotated[
    Union[Annotated[NonEmpty, Tag("string-evidence")], Annotated[ExpectedEvidence, Tag("document-evidence")]],
    Discriminator(
        _expected_evidence_tag,
        custom_error_type="expected_evidence_type",
        custom_error_message='expected a string or a {"document": name, "text": str} object',
    ),
]


class _ItemBase(WireModel):
    id: ItemId
    """Unique within the dataset; letters, digits, ``-``, ``_`` (SPEC §2)."""
    tags: list[TagName] = Field(default_factory=list)
    """Names that become pytest markers on the item."""

    @field_validator("tags")
    @classmethod
    def _tags_not_reserved(cls, value: list[str]) -> list[str]:
        return _check_tags(value)


class QaItem(_ItemBase):
    """A question whose answer must be grounded in the expected evidence (SPEC §2, §5)."""

    kind: Literal["qa"]
    """Always ``qa``."""
    question: NonEmpty
    """Sent to the target's ``POST /v1/generate``."""
    find: str | None = None
    """Corpus label to restrict retrieval to, or null for all documents."""
    expected_evidence: list[ExpectedEvidenceValue] = Field(default_factory=list)
    """Strings that must occur in retrieved evidence spans; a ``{document, text}`` pins the document."""
    truths: list[NonEmpty] = Field(default_factory=list)
    """True statements; a claim the target marks ``supported`` must be one of them (SPEC §5)."""
    evidence: EvidenceBlock | None = None
    """Optional evidence-risk block reviewed against the answer (SPEC §8)."""

    @property
    def expected_texts(self) -> list[tuple[str | None, str]]:
        """``expected_evidence`` as ``(document name or None, text)`` pairs."""
        return [(None, e) if isinstance(e, str) else (e.document, e.text) for e in self.expected_evidence]


class AdversarialItem(_ItemBase):
    """A question that makes the target echo a planted falsehood (SPEC §2)."""

    kind: Literal["adversarial"]
    """Always ``adversarial``."""
    question: str
    """``ECHO: <falsehood>`` (emitted uncited) or ``ECHO-CITED: <falsehood>`` (cited to the first evidence block)."""
    find: str | None = None
    """Corpus label to restrict retrieval to, or null."""
    evidence: EvidenceBlock | None = None
    """Optional evidence-risk block (SPEC §8)."""

    @field_validator("question")
    @classmethod
    def _planted_falsehood(cls, value: str) -> str:
        if not value.startswith(("ECHO:", "ECHO-CITED:")):
            raise ValueError(f"an adversarial question must start with 'ECHO:' or 'ECHO-CITED:', got {value[:60]!r}")
        if not value.split(":", 1)[1].strip():
            raise ValueError("the planted falsehood after 'ECHO:'/'ECHO-CITED:' is empty")
        return value

    @property
    def cited(self) -> bool:
        """True for ``ECHO-CITED:``: the falsehood is emitted with a citation."""
        return self.question.startswith("ECHO-CITED:")

    @property
    def falsehood(self) -> str:
        """The planted falsehood: the question after the prefix, stripped."""
        return self.question.split(":", 1)[1].strip()


class ValidTime(WireModel):
    """A valid-time interval of RFC 3339 timestamps with offsets (SPEC §6)."""

    start: str
    """Start instant, inclusive."""
    end: str | None = None
    """End instant, exclusive; null means open-ended."""

    @field_validator("start", "end")
    @classmethod
    def _rfc3339(cls, value: str | None) -> str | None:
        if value is not None:
            parse_rfc3339(value)
        return value

    @model_validator(mode="after")
    def _end_after_start(self) -> "ValidTime":
        if self.end is not None and parse_rfc3339(self.end) <= parse_rfc3339(self.start):
            raise _RuleError(f"end {self.end!r} must be after start {self.start!r}", json_path="end")
        return self


class TemporalStep(WireModel):
    """One ``POST /v1/records`` call of a temporal item's setup (SPEC §6)."""

    op: Literal["create", "update", "delete"]
    """What the call does."""
    save: SaveName
    """Name under which the response's ``id`` and ``txStart`` are captured."""
    target: str | None = None
    """``$id:<save>`` of an earlier step for update/delete; null for create."""
    label: str | None = None
    """Record label (rewritten with a per-item suffix before sending); required for create."""
    properties: dict[str, Any] = Field(default_factory=dict)
    """Record properties."""
    valid_time: ValidTime | None = None
    """Valid-time interval, or null for the target's default."""

    @model_validator(mode="after")
    def _shape_of_op(self) -> "TemporalStep":
        if self.op == "create":
            if self.target is not None:
                raise _RuleError("a create step has no target; use update or delete", json_path="target")
            if not self.label:
                raise _RuleError("a create step needs a label", json_path="label")
        elif self.target is None:
            raise _RuleError(f"an {self.op} step needs target '$id:<save>'", json_path="target")
        return self


def _reject_bool_or_other(value: Any) -> Any:
    # bool is an int in Python and JSON numbers like 1.5 are not milliseconds.
    if value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValueError(f"expected integer milliseconds or a '$tx:<save>[+N|-N]' reference, got {value!r}")


TxValue = Annotated[Union[int, str, None], BeforeValidator(_reject_bool_or_other)]


class QueryProbe(WireModel):
    """``POST /v1/query`` with placeholders (SPEC §3, §6)."""

    call: Literal["query"]
    """Always ``query``."""
    label: str | None = None
    """Label to query (rewritten with the item's suffix)."""
    target: str | None = None
    """``$id:<save>`` of a setup step, or null."""
    as_of_tx: TxValue = None
    """Transaction time: integer ms, or ``$tx:<save>`` / ``$tx:<save>+N`` / ``$tx:<save>-N``; null means now."""
    as_of_valid: str | None = None
    """Valid time (RFC 3339 with offset); null means now."""

    @field_validator("as_of_valid")
    @classmethod
    def _valid_instant(cls, value: str | None) -> str | None:
        if value is not None:
            parse_rfc3339(value)
        return value


class CompareProbe(WireModel):
    """``POST /v1/compare`` with placeholders (SPEC §3, §6)."""

    call: Literal["compare"]
    """Always ``compare``."""
    target: str | None = None
    """``$id:<save>`` of a setup step, or null."""
    label: str | None = None
    """Label to compare (rewritten with the item's suffix)."""
    from_tx: TxValue
    """Earlier transaction time: integer ms or a ``$tx:`` reference."""
    to_tx: TxValue
    """Later transaction time: integer ms or a ``$tx:`` reference."""


Probe = Annotated[Union[QueryProbe, CompareProbe], Field(discriminator="call")]


class ExpectedRecord(WireModel):
    """A record a query must return: its properties are a subset of a distinct returned record's."""

    properties: dict[str, Any] = Field(default_factory=dict)
    """Properties that must all be present with these values."""


class QueryExpect(WireModel):
    """What a query probe must return (SPEC §6)."""

    count: Annotated[int, Field(ge=0)] | None = None
    """Number of records returned, or null to not check."""
    records: list[ExpectedRecord] = Field(default_factory=list)
    """Records matched order-insensitively, each against a distinct returned record."""


class CompareExpect(WireModel):
    """What a compare probe must return (SPEC §6); each count is optional."""

    added: Annotated[int, Field(ge=0)] | None = None
    """Number of added records."""
    removed: Annotated[int, Field(ge=0)] | None = None
    """Number of removed records."""
    changed: Annotated[int, Field(ge=0)] | None = None
    """Number of changed records."""


_COMPARE_KEYS = frozenset({"added", "removed", "changed"})


def _expect_tag(value: Any) -> str | None:
    if isinstance(value, (QueryExpect, CompareExpect)):
        return "compare-expect" if isinstance(value, CompareExpect) else "query-expect"
    if isinstance(value, dict):
        return "compare-expect" if _COMPARE_KEYS & set(value) else "query-expect"
    return None


Expect = Annotated[
    Union[Annotated[QueryExpect, Tag("query-expect")], Annotated[CompareExpect, Tag("compare-expect")]],
    Discriminator(
        _expect_tag,
        custom_error_type="expect_type",
        custom_error_message='expected an object: {"count", "records"} for a query, {"added", "removed", "changed"} for a compare',
    ),
]


class TemporalItem(_ItemBase):
    """Bitemporal records set up, then probed (SPEC §6)."""

    kind: Literal["temporal"]
    """Always ``temporal``."""
    setup: Annotated[list[TemporalStep], Field(min_length=1)]
    """Steps run in order against ``/v1/records``."""
    probe: Probe
    """The query or compare call whose result is checked."""
    expect: Expect
    """What the probe must return; its shape follows ``probe.call``."""

    @model_validator(mode="after")
    def _references_resolve(self) -> "TemporalItem":
        saves: dict[str, int] = {}
        for i, step in enumerate(self.setup):
            if step.target is not None:
                _check_reference(step.target, "id", saves, f"setup[{i}].target")
            if step.save in saves:
                raise _RuleError(
                    f"save name {step.save!r} is already used by setup[{saves[step.save]}]",
                    json_path=f"setup[{i}].save",
                )
            saves[step.save] = i
        probe = self.probe
        if probe.label is None and probe.target is None:
            raise _RuleError("a probe needs a label or a target, so it stays inside the item's namespace", "probe")
        if probe.target is not None:
            _check_reference(probe.target, "id", saves, "probe.target")
        tx_fields = ("asOfTx",) if isinstance(probe, QueryProbe) else ("fromTx", "toTx")
        for alias in tx_fields:
            value = getattr(probe, _SNAKE[alias])
            if isinstance(value, str):
                _check_reference(value, "tx", saves, f"probe.{alias}")
        self._check_expect()
        return self

    def _check_expect(self) -> None:
        if isinstance(self.probe, QueryProbe):
            if not isinstance(self.expect, QueryExpect):
                raise _RuleError("the probe is a query: expect takes count and/or records", "expect")
            if self.expect.count is None and not self.expect.records:
                raise _RuleError("expect checks nothing: give count and/or records", "expect")
        else:
            if not isinstance(self.expect, CompareExpect):
                raise _RuleError("the probe is a compare: expect takes added, removed and/or changed", "expect")


def _check_reference(value: str, kind: str, saves: dict[str, int], where: str) -> None:
    try:
        ref = parse_reference(value)
    except ValueError as exc:
        raise _RuleError(str(exc), where) from None
    if ref is None:
        expected = "'$id:<save>'" if kind == "id" else "integer ms or '$tx:<save>[+N|-N]'"
        raise _RuleError(f"expected {expected}, got {value!r}", where)
    if ref.kind != kind:
        raise _RuleError(f"expected a ${kind}: reference here, got {value!r}", where)
    if ref.save not in saves:
        known = ", ".join(saves) or "none"
        raise _RuleError(f"{value!r} names no earlier save; saves so far: {known}", where)


class RecordedAnswer(WireModel):
    """A recorded answer reviewed without calling a target."""

    answer: str
    """The answer text."""


class RecordedSource(WireModel):
    """One source of a recorded answer, as its citation markers name it."""

    marker: Marker
    """The marker inside the brackets: ``S1`` or ``1``."""
    document: str | None = None
    """Document name the source came from."""
    text: str | None = None
    """The source's text (scored for coverage, SPEC §11)."""
    start: Annotated[int, Field(ge=0)] | None = None
    """UTF-8 byte offset of the span in the document's canonical text."""
    end: Annotated[int, Field(ge=0)] | None = None
    """UTF-8 byte offset, exclusive."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Metadata fields (e.g. ``speaker``, ``party``)."""


class RecordedResponse(RecordedAnswer):
    """A recorded production answer with its sources (SPEC §11)."""

    sources: list[RecordedSource] = Field(default_factory=list)
    """The sources the answer's markers cite."""


class SourceMetadata(WireModel):
    """Metadata of a source a citation may cite, checked against ``mentionPattern`` (SPEC §11)."""

    marker: Marker
    """The marker inside the brackets: ``S1`` or ``1``."""
    document: str | None = None
    """The corpus document behind the marker, if fixed."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Field name → value, e.g. ``{"speaker": "Anna Lind", "party": "S"}``."""


class CitationItem(_ItemBase):
    """Paragraph-level citation accuracy (SPEC §11)."""

    kind: Literal["citation"]
    """Always ``citation``."""
    question: str | None = None
    """Sent to the target; optional when a recorded ``response`` is given."""
    response: RecordedResponse | None = None
    """A recorded answer judged without calling the target."""
    find: str | None = None
    """Corpus label to restrict retrieval to, or null."""
    sources: list[SourceMetadata] = Field(default_factory=list)
    """Metadata of the sources the answer may cite."""
    evidence: EvidenceBlock | None = None
    """Optional evidence-risk block (SPEC §8)."""

    @model_validator(mode="after")
    def _question_or_response(self) -> "CitationItem":
        if not self.question and self.response is None:
            raise _RuleError("a citation item needs a question or a recorded response", "question")
        seen: dict[str, int] = {}
        for i, source in enumerate(self.sources):
            if source.marker in seen:
                raise _RuleError(
                    f"marker {source.marker!r} is already described by sources[{seen[source.marker]}]",
                    f"sources[{i}].marker",
                )
            seen[source.marker] = i
        return self


class ReviewItem(_ItemBase):
    """A recorded answer reviewed against an evidence block; no target call (SPEC §8)."""

    kind: Literal["review"]
    """Always ``review``."""
    response: RecordedAnswer
    """The recorded answer."""
    evidence: EvidenceBlock
    """The block the answer is reviewed against."""


AnyItem = Union[QaItem, AdversarialItem, TemporalItem, CitationItem, ReviewItem]
"""Any one of the item models."""

Item = Annotated[AnyItem, Field(discriminator="kind")]
"""A dataset item: a union discriminated on ``kind`` (SPEC §2)."""

ITEM_ADAPTER: TypeAdapter[Any] = TypeAdapter(Item)
"""Validates one item (built once; ``Manifest`` validates all items in one pass)."""


class Manifest(WireModel):
    """``manifest.json`` version v1 (SPEC §2, §11).

    Cross-field rules checked here: unique item ids and corpus names, every corpus
    file has a hash and every hash a file, ``find`` labels and
    ``expectedEvidence`` documents exist, at least one item.
    """

    version: str
    """Manifest format version; only ``v1``."""
    corpus: list[CorpusEntry] = Field(default_factory=list)
    """The documents ingested into the target."""
    corpus_hashes: dict[str, Digest] = Field(default_factory=dict)
    """Corpus file name → xxh3_64 hex digest of its raw bytes."""
    mention_pattern: str | None = None
    """Regex whose named groups are metadata fields, e.g. ``(?P<speaker>[A-Z]\\w+ \\w+)`` (SPEC §11)."""
    items: list[Item]
    """The items, in order; each becomes one pytest test."""

    @field_validator("mention_pattern")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            compiled = re.compile(value)
        except (re.error, OverflowError, RecursionError, ValueError) as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        if not compiled.groupindex:
            raise ValueError("needs at least one named group, e.g. (?P<speaker>...), naming a metadata field")
        return value

    @cached_property
    def mention_regex(self) -> re.Pattern[str] | None:
        """``mention_pattern`` compiled, or None."""
        return None if self.mention_pattern is None else re.compile(self.mention_pattern)

    @model_validator(mode="after")
    def _cross_references(self, info: ValidationInfo) -> "Manifest":
        dataset = (info.context or {}).get("dataset", "DIR") if info is not None else "DIR"
        self._check_corpus(str(dataset))
        self._check_items()
        return self

    def _check_corpus(self, dataset: str) -> None:
        names: dict[str, int] = {}
        files: set[str] = set()
        for i, entry in enumerate(self.corpus):
            if entry.name in names:
                raise _RuleError(
                    f"duplicate corpus name {entry.name!r} (also corpus[{names[entry.name]}])", f"corpus[{i}].name"
                )
            names[entry.name] = i
            files.add(entry.file)
            if entry.file not in self.corpus_hashes:
                raise _RuleError(
                    f"corpus file {entry.file!r} has no hash in corpusHashes; run "
                    f"`groundeval hash-corpus --dataset {dataset}` and paste its output",
                    f"corpus[{i}].file",
                )
        for name in self.corpus_hashes:
            if name not in files:
                raise _RuleError(
                    f"corpusHashes has a hash for {name!r}, which no corpus entry uses; "
                    "remove it or add the corpus entry",
                    f"corpusHashes[{json.dumps(name, ensure_ascii=False)}]",
                )

    def _check_items(self) -> None:
        if not self.items:
            raise _RuleError("the manifest has no items; a dataset needs at least one", "items")
        labels = {entry.label for entry in self.corpus}
        documents = {entry.name for entry in self.corpus}
        seen: dict[str, int] = {}
        for i, item in enumerate(self.items):
            if item.id in seen:
                raise _RuleError(f"duplicate item id {item.id!r} at items[{seen[item.id]}] and items[{i}]", f"items[{i}].id")
            seen[item.id] = i
            find = getattr(item, "find", None)
            if find is not None and find not in labels:
                raise _RuleError(
                    f"find label {find!r} is not the label of any corpus entry; labels: {_listing(labels)}",
                    f"items[{i}].find",
                )
            if isinstance(item, QaItem):
                for j, expected in enumerate(item.expected_evidence):
                    if isinstance(expected, ExpectedEvidence) and expected.document not in documents:
                        raise _RuleError(
                            f"document {expected.document!r} is not a corpus name; names: {_listing(documents)}",
                            f"items[{i}].expectedEvidence[{j}].document",
                        )
            if isinstance(item, CitationItem) and item.response is None:
                for j, source in enumerate(item.sources):
                    if source.document is not None and source.document not in documents:
                        raise _RuleError(
                            f"document {source.document!r} is not a corpus name; names: {_listing(documents)}",
                            f"items[{i}].sources[{j}].document",
                        )


def _listing(values: set[str], limit: int = 20) -> str:
    ordered = sorted(values)
    shown = ", ".join(repr(v) for v in ordered[:limit])
    return (shown + f", … ({len(ordered) - limit} more)") if len(ordered) > limit else (shown or "none")


def _all_aliases() -> dict[str, str]:
    """Every field name and alias of the manifest models → its camelCase alias."""
    aliases: dict[str, str] = {}
    pending: list[type[WireModel]] = [
        Manifest, CorpusEntry, ExpectedEvidence, QaItem, AdversarialItem, TemporalItem, TemporalStep, ValidTime,
        QueryProbe, CompareProbe, QueryExpect, CompareExpect, ExpectedRecord, CitationItem, ReviewItem,
        RecordedAnswer, RecordedResponse, RecordedSource, SourceMetadata, EvidenceBlock, EvidenceClaim,
        EvidenceSource,
    ]
    for model in pending:
        for name, info in model.model_fields.items():
            alias = info.alias or name
            aliases[name] = alias
            aliases[alias] = alias
    return aliases


_ALIASES = _all_aliases()
_SNAKE = {alias: name for name, alias in _ALIASES.items() if name != alias}
_FREE_FORM_KEYS = frozenset({"properties", "metadata", "corpusHashes"})
_UNION_TAGS = frozenset(ITEM_KINDS) | {
    "query", "compare", "string-evidence", "document-evidence", "query-expect", "compare-expect",
    "int", "str", "none",
}


# --------------------------------------------------------------------------- corpus documents


def canonical_json(records: list[Any]) -> str:
    """Canonical text of a json document (SPEC §2).

    Each record is serialised with sorted keys, separators ``(",", ":")`` and
    non-ASCII kept; records are joined by ``\\n``.
    """
    return "\n".join(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for r in records)


def canonical_text(text: str) -> str:
    """Canonical text of a text document: ``\\r\\n`` and ``\\r`` become ``\\n`` (SPEC §2)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class CorpusDocument:
    """A loaded corpus document.

    Attributes:
        name: Corpus entry name (what evidence spans name).
        label: Corpus entry label.
        file: File name relative to ``corpus/``.
        format: ``json`` or ``text``.
        content: What ``POST /v1/documents`` sends: the list of JSON records (one
            object becomes a one-element list) or the canonical text (SPEC §3).
        content_hash: xxh3_64 hex digest of the file's raw bytes.
        canonical: Canonical text; evidence offsets are UTF-8 byte offsets into it.
        canonical_bytes: ``canonical`` encoded as UTF-8.
    """

    name: str
    label: str
    file: str
    format: Literal["json", "text"]
    content: list[Any] | str
    content_hash: str
    canonical: str
    canonical_bytes: bytes = field(repr=False)

    def slice(self, start: int, end: int) -> str:
        """Text of the canonical bytes ``[start, end)``.

        Args:
            start: UTF-8 byte offset, inclusive.
            end: UTF-8 byte offset, exclusive.

        Raises:
            ValueError: Offsets out of ``[0, len(canonical_bytes)]``, reversed, or not
                on a character boundary; the message names the document.
        """
        data = self.canonical_bytes
        if not (isinstance(start, int) and isinstance(end, int)) or not 0 <= start <= end <= len(data):
            raise ValueError(
                f"span [{start}, {end}) is outside document {self.name!r} "
                f"({len(data)} UTF-8 bytes of canonical text)"
            )
        for offset in (start, end):
            # A UTF-8 continuation byte is 0b10xxxxxx: an offset there splits a character.
            if offset < len(data) and data[offset] & 0xC0 == 0x80:
                raise ValueError(
                    f"span [{start}, {end}) of document {self.name!r}: byte offset {offset} "
                    "is not on a character boundary"
                )
        return data[start:end].decode("utf-8")


def hash_file(path: str | Path, buffer_size: int = HASH_BUFFER_SIZE) -> str:
    """xxh3_64 hex digest of a file's bytes, streamed in ``buffer_size``-byte reads (SPEC §2).

    Memory stays at one buffer whatever the file's size.

    Raises:
        OSError: The file cannot be read.
    """
    hasher = xxhash.xxh3_64()
    buffer = bytearray(buffer_size)
    view = memoryview(buffer)
    # Unbuffered: each readinto is one read(2) straight into our buffer, no second copy.
    with open(path, "rb", buffering=0) as handle:
        while count := handle.readinto(buffer):
            hasher.update(view[:count])
    return hasher.hexdigest()


def _read_hashed(path: Path) -> tuple[bytearray, str]:
    """Read a corpus file once, hashing it as it streams in; return its bytes and xxh3_64 digest.

    The loader keeps the bytes (to decode them), so they land in one buffer sized
    from ``fstat``; each ``HASH_BUFFER_SIZE`` read goes straight into it and into the
    hasher, never a ``read()`` of the whole file followed by a second pass (SPEC §2).
    """
    hasher = xxhash.xxh3_64()
    with open(path, "rb", buffering=0) as handle:
        buffer = bytearray(os.fstat(handle.fileno()).st_size)
        filled = 0
        with memoryview(buffer) as view:
            while filled < len(buffer):
                count = handle.readinto(view[filled : filled + HASH_BUFFER_SIZE])
                if not count:  # the file shrank since fstat
                    break
                hasher.update(view[filled : filled + count])
                filled += count
        tail = handle.read()  # whatever a growing file added since fstat
    hasher.update(tail)
    if filled < len(buffer) or tail:
        buffer[filled:] = tail
    # The bytearray itself, not a bytes copy of it: decoding and JSON parsing take either.
    return buffer, hasher.hexdigest()


def _decode_utf8(data: bytes | bytearray, path: Path) -> str:
    if data.startswith(_UTF8_BOM):
        raise DatasetError(
            f"{path}: starts with a UTF-8 byte-order mark (EF BB BF); remove it (save as UTF-8 without BOM)",
            path=path,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{path}: not valid UTF-8 at byte offset {exc.start} ({exc.reason})", path=path
        ) from None


def _json_error(exc: json.JSONDecodeError, path: Path) -> DatasetError:
    return DatasetError(
        f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path=path
    )


def _load_document(entry: CorpusEntry, data: bytes | bytearray, digest: str, path: Path) -> CorpusDocument:
    text = _decode_utf8(data, path)
    if entry.format == "text":
        canonical = canonical_text(text)
        content: list[Any] | str = canonical
    else:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _json_error(exc, path) from None
        except (ValueError, RecursionError) as exc:
            raise DatasetError(f"{path}: unreadable JSON: {exc}", path=path) from None
        records = [parsed] if isinstance(parsed, dict) else parsed
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise DatasetError(
                f"{path}: a json corpus file must hold an array of objects or one object "
                f"(corpus entry {entry.name!r}); use format 'text' for plain text",
                path=path,
            )
        canonical = canonical_json(records)
        content = records
    return CorpusDocument(
        name=entry.name,
        label=entry.label,
        file=entry.file,
        format=entry.format,
        content=content,
        content_hash=digest,
        canonical=canonical,
        canonical_bytes=canonical.encode("utf-8"),
    )


def _hash_mismatch(
    path: Path, manifest_path: Path, expected: str, actual: str, data: bytes | bytearray, root: Path
) -> DatasetError:
    message = (
        f"{path}: corpus hash mismatch: {manifest_path.name} records {expected}, the file hashes to {actual}. "
        f"If the change is intended, {HASH_CORPUS_HINT.format(dataset=root)}."
    )
    normalised = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if normalised != data and xxhash.xxh3_64_hexdigest(normalised) == expected:
        message += f" Note: {LINE_ENDING_HINT}."
    return DatasetError(message, path=path)


# --------------------------------------------------------------------------- the loader


@dataclass
class Dataset:
    """A loaded, validated dataset.

    Attributes:
        root: The dataset directory.
        manifest_path: Its ``manifest.json``.
        manifest: The validated manifest.
        version: The dataset version (``v1``, ``v2``, …; see ``VERSION_PATTERN``).
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
    items: list[AnyItem]
    item_lines: dict[str, int]
    by_id: dict[str, AnyItem]


def load_dataset(path: str | Path) -> Dataset:
    """Load and validate a dataset (SPEC §2).

    Args:
        path: The dataset directory or its ``manifest.json``.

    Returns:
        The dataset, with every corpus file read once, hash-checked and decoded.

    Raises:
        DatasetError: Any problem with the manifest or corpus, with a message naming
            the file, the item and the JSON path of the bad field.
    """
    manifest_path, root = _locate(Path(path))
    with _gc_paused():
        raw, lines = _read_manifest(manifest_path)
        manifest = _validate_manifest(raw, manifest_path, root)
    documents = _load_corpus(manifest, manifest_path, root)
    items = list(manifest.items)
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
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large manifest is parsed and validated.

    Parsing and validation allocate millions of container objects that all stay
    alive; each automatic collection re-walks them, which made a 100,000-item load
    two to three times slower. Nothing collectable is created, so pausing loses nothing.
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


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)
_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _read_manifest(manifest_path: Path) -> tuple[dict[str, Any], list[int]]:
    """Parse manifest.json; return the object and the 1-based line of each item."""
    try:
        data = manifest_path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{manifest_path}: cannot read: {exc.strerror or exc}", path=manifest_path) from None
    text = _decode_utf8(data, manifest_path)
    try:
        raw, offsets = _scan_manifest(text)
        return raw, _offsets_to_lines(text, offsets)
    except (json.JSONDecodeError, _DuplicateKey, ValueError, IndexError, RecursionError):
        pass
    # The fast scanner gives up on anything unusual; the standard parser then explains.
    try:
        parsed = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise _json_error(exc, manifest_path) from None
    except _DuplicateKey as exc:
        raise DatasetError(
            f"{manifest_path}: duplicate key {exc.key!r} in one JSON object; the later value would "
            "silently win, so remove one",
            path=manifest_path,
        ) from None
    except (ValueError, RecursionError) as exc:
        raise DatasetError(f"{manifest_path}: unreadable JSON: {exc}", path=manifest_path) from None
    if not isinstance(parsed, dict):
        raise DatasetError(
            f"{manifest_path}: the manifest must be a JSON object with version, corpus, corpusHashes "
            f"and items, got a JSON {type(parsed).__name__}",
            path=manifest_path,
        )
    raise DatasetError(f"{manifest_path}: could not read the manifest's items", path=manifest_path)  # pragma: no cover


def _scan_manifest(text: str) -> tuple[dict[str, Any], list[int]]:
    """Parse the top-level object by hand so each item's start offset comes for free.

    Each value is decoded by the C scanner (``raw_decode``), so this is one parse
    at C speed, not a second pass over the text. Raises on anything not a JSON
    object; the caller then reparses with ``json.loads`` for a precise message.
    """
    skip = _WHITESPACE.match
    decode = _DECODER.raw_decode
    pos = skip(text, 0).end()
    if text[pos] != "{":
        raise ValueError("not an object")
    result: dict[str, Any] = {}
    offsets: list[int] = []
    pos = skip(text, pos + 1).end()
    if text[pos] == "}":
        pos += 1
    else:
        while True:
            if text[pos] != '"':
                raise ValueError("expected a key")
            key, pos = decode(text, pos)
            if key in result:
                raise _DuplicateKey(key)
            pos = skip(text, pos).end()
            if text[pos] != ":":
                raise ValueError("expected ':'")
            pos = skip(text, pos + 1).end()
            if key == "items" and text[pos] == "[":
                result[key], offsets, pos = _scan_items(text, pos)
            else:
                result[key], pos = decode(text, pos)
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
    return result, offsets


def _scan_items(text: str, pos: int) -> tuple[list[Any], list[int], int]:
    skip = _WHITESPACE.match
    decode = _DECODER.raw_decode
    items: list[Any] = []
    offsets: list[int] = []
    pos = skip(text, pos + 1).end()
    if text[pos] == "]":
        return items, offsets, pos + 1
    while True:
        offsets.append(pos)
        value, pos = decode(text, pos)
        items.append(value)
        pos = skip(text, pos).end()
        if text[pos] == ",":
            pos = skip(text, pos + 1).end()
            continue
        if text[pos] != "]":
            raise ValueError("expected ',' or ']'")
        return items, offsets, pos + 1


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
    version = raw.get("version")
    if "version" in raw and not (isinstance(version, str) and re.match(VERSION_PATTERN, version)):
        raise DatasetError(
            f"{manifest_path}: invalid dataset version {version!r}; expected 'v' and a number, "
            "optionally with a suffix ('v1', 'v2', 'v1.1'); bump it whenever the corpus or items change",
            path=manifest_path,
            json_path="version",
        )
    _validate_items_in_place(raw, root)
    try:
        return Manifest.model_validate(raw, context={"dataset": root})
    except ValidationError as exc:
        raise _describe_errors(exc, raw, manifest_path) from None


def _validate_items_in_place(raw: dict[str, Any], root: Path) -> None:
    """Replace each valid raw item dict in ``raw["items"]`` by its model, one at a time.

    Each raw dict is freed as soon as its model exists, so a large manifest never
    holds all its raw items and all its models at once (validating the manifest
    in one pass did: about twice the memory of the models alone at 100,000 items).
    ``Manifest`` then takes the models as they are (pydantic does not revalidate
    model instances). An invalid item stays a raw dict, so the manifest's own
    validation reports it exactly as before, with every other error.
    """
    items = raw.get("items")
    if not isinstance(items, list):
        return
    validate = ITEM_ADAPTER.validate_python
    context = {"dataset": root}
    for i, value in enumerate(items):
        try:
            items[i] = validate(value, context=context)
        except ValidationError:
            continue


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


def _check_no_stray_files(corpus_dir: Path, listed: set[str], manifest_path: Path) -> None:
    """Every file under corpus/ must be a listed, hashed corpus file (SPEC §2).

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
                    f"evaluated (SPEC §2: every corpus file must have a hash); add it to corpus and corpusHashes "
                    f"(`groundeval hash-corpus --dataset {corpus_dir.parent}` prints the hash) or remove it",
                    path=path,
                    json_path="corpus",
                )


# --------------------------------------------------------------------------- validation messages


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


def _describe(error: Any, raw: dict[str, Any], manifest_path: Path) -> DatasetError:
    loc = tuple(error.get("loc", ()))
    json_path = _json_path(loc, raw)
    rule = (error.get("ctx") or {}).get("error")
    if isinstance(rule, _RuleError) and rule.json_path:
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
    # A valid item was already replaced by its model (``_validate_items_in_place``).
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
    for segment in loc:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
            node = node[segment] if isinstance(node, list) and 0 <= segment < len(node) else None
            free_form = False
            continue
        segment = str(segment)
        present = isinstance(node, dict) and segment in node
        # pydantic puts a union member's tag in loc; it is not a key of the input.
        if segment in _UNION_TAGS and (not present or _is_tag_here(node, segment)):
            continue
        shown = segment if free_form else _ALIASES.get(segment, segment)
        parts.append(_key_part(shown, first=not parts))
        node = node[segment] if present else None
        free_form = shown in _FREE_FORM_KEYS
    return "".join(parts)


def _is_tag_here(node: dict[str, Any], segment: str) -> bool:
    return node.get("kind") == segment or node.get("call") == segment


_KIND_LIST = ", ".join(ITEM_KINDS)


def _what_was_expected(error: Any, loc: tuple[Any, ...]) -> str:
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if kind == "value_error" and ctx.get("error") is not None:
        return str(ctx["error"])
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        key = str(loc[-1]) if loc else "?"
        close = difflib.get_close_matches(key, list(_ALIASES.values()), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown key {key!r} (unknown keys are errors so typos cannot pass silently){hint}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        discriminator = str(ctx.get("discriminator", "")).strip("'")
        if discriminator == "kind":
            if not isinstance(value, dict):
                return f"expected an item object, got {_short(value)}"
            if "kind" in value:
                return f"unknown kind {value['kind']!r}; valid kinds: {_KIND_LIST}"
            return f"missing 'kind'; valid kinds: {_KIND_LIST}"
        if discriminator == "call":
            if not isinstance(value, dict):
                return f'expected a probe object {{"call": "query" | "compare", ...}}, got {_short(value)}'
            if "call" in value:
                return f"unknown call {value['call']!r}; valid calls: query, compare"
            return "missing 'call'; valid calls: query, compare"
    if kind == "string_pattern_mismatch":
        explanation = _PATTERN_EXPLANATIONS.get(str(ctx.get("pattern")), error.get("msg", "bad value"))
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


# --------------------------------------------------------------------------- groundeval hash-corpus


def _corpus_files(root: Path) -> list[str]:
    """Corpus files named by the manifest; every file under corpus/ if the manifest is unusable.

    Raises:
        OSError: A listed file lies outside corpus/, or there is nothing to list.
    """
    files: list[str] = []
    try:
        corpus = json.loads((root / "manifest.json").read_bytes().decode("utf-8-sig"))["corpus"]
        files = sorted({entry["file"] for entry in corpus if isinstance(entry["file"], str)})
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        pass
    outside = [name for name in files if not _inside_corpus(name)]
    if outside:
        raise OSError(f"{root / 'manifest.json'}: corpus file {outside[0]!r} is not a path inside corpus/")
    if files:
        return files
    corpus_dir = root / "corpus"
    if not corpus_dir.is_dir():
        raise OSError(f"{root}: neither a usable manifest.json corpus list nor a corpus/ directory")
    return sorted(p.relative_to(corpus_dir).as_posix() for p in corpus_dir.rglob("*") if p.is_file())


def _current_hashes(root: Path) -> dict[str, Any]:
    try:
        hashes = json.loads((root / "manifest.json").read_bytes().decode("utf-8-sig")).get("corpusHashes")
        return hashes if isinstance(hashes, dict) else {}
    except (OSError, ValueError, AttributeError, RecursionError):
        return {}


def hash_corpus_main(argv: list[str]) -> int:
    """``groundeval hash-corpus --dataset DIR``: print corpus hashes to paste into a manifest.

    Prints one ``"file": "digest"`` line per corpus file, sorted by file name, each
    followed by a comma except the last, so the lines paste as the body of the
    ``corpusHashes`` object. Files come from the manifest's ``corpus`` list, or
    every file under ``corpus/`` when the manifest is unusable. The manifest's
    current hashes are never checked (fixing them is the point); files whose hash
    changed are listed on stderr.

    Returns:
        0 on success; 2 on a usage error or unreadable input (one-line message on stderr).
    """
    parser = argparse.ArgumentParser(
        prog="groundeval hash-corpus",
        description="Print xxh3_64 hashes of a dataset's corpus files, ready to paste into corpusHashes",
    )
    parser.add_argument("--dataset", required=True, metavar="DIR", help="Dataset directory (or its manifest.json)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    root = Path(args.dataset)
    if root.name == "manifest.json" and root.is_file():
        root = root.parent
    try:
        if not root.is_dir():
            raise OSError(f"{root}: not a dataset directory")
        files = _corpus_files(root)
        digests = [(name, hash_file(root / "corpus" / name)) for name in files]
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"groundeval hash-corpus: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    lines = [f"{json.dumps(name, ensure_ascii=False)}: {json.dumps(digest)}" for name, digest in digests]
    print(",\n".join(lines))
    current = _current_hashes(root)
    changed = [name for name, digest in digests if current.get(name) != digest]
    if changed:
        print(f"changed or new since manifest.json: {', '.join(changed)}", file=sys.stderr)
    return 0
