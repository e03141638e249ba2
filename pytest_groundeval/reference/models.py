"""Request bodies of the reference target's REST calls (docs/target-contract.md), validated with pydantic.

Unknown keys are refused (``WireModel``: ``extra="forbid"``), both camelCase and
snake_case keys are accepted, and a validation failure becomes HTTP 422 naming
the field by its JSON path (``validTime.start``, ``content.2``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictInt, StrictStr, ValidationInfo, field_validator

from ..core.wire import WireModel
from .bitemporal import ValidInterval, parse_instant


class DocumentRequest(WireModel):
    """``POST /v1/documents``: ingest one corpus document."""

    name: str = Field(min_length=1)
    """Document name, e.g. ``eval/project-alpha.json``; evidence refers to it."""
    label: str | None = None
    """Corpus label that ``find`` filters on; None matches only ``find: null``."""
    format: Literal["json", "text"] = "json"
    """How ``content`` is to be read (docs/dataset.md)."""
    content_hash: str = Field(min_length=1)
    """The client's hash of the raw file (opaque here): the idempotency key with ``name``."""
    content: Any
    """``json``: a list of objects or one object; ``text``: a string."""

    @field_validator("content")
    @classmethod
    def _content_matches_format(cls, content: Any, info: ValidationInfo) -> Any:
        format = info.data.get("format")
        if format == "text":
            if not isinstance(content, str):
                raise ValueError(f"must be a string when format is 'text', got {_json_type(content)}")
        elif format == "json":
            if isinstance(content, list):
                for index, record in enumerate(content):
                    if not isinstance(record, dict):
                        raise ValueError(f"record {index} must be a JSON object, got {_json_type(record)}")
            elif not isinstance(content, dict):
                raise ValueError(
                    f"must be a list of objects or one object when format is 'json', got {_json_type(content)}"
                )
        return content


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


class GenerateRequest(WireModel):
    """``POST /v1/generate``: answer a question from the tenant's documents."""

    question: str = Field(min_length=1)
    """The user's question."""
    find: str | None = None
    """Restrict evidence to documents with this label; None searches every document."""


class ValidTime(WireModel):
    """A valid-time interval of RFC 3339 timestamps with UTC offsets; a null bound is open."""

    start: str | None = None
    """When the fact starts to hold (inclusive); None: since always."""
    end: str | None = None
    """When it stops holding (exclusive); None: still holds."""

    @field_validator("start", "end")
    @classmethod
    def _is_instant(cls, value: str | None) -> str | None:
        if value is not None:
            parse_instant(value)
        return value

    @field_validator("end")
    @classmethod
    def _after_start(cls, end: str | None, info: ValidationInfo) -> str | None:
        start = info.data.get("start")
        if start is not None and end is not None and parse_instant(end) <= parse_instant(start):
            raise ValueError(f"end {end!r} must be after start {start!r}")
        return end

    def interval(self) -> ValidInterval:
        """The interval with its bounds as epoch milliseconds."""
        return ValidInterval(
            self.start,
            self.end,
            None if self.start is None else parse_instant(self.start),
            None if self.end is None else parse_instant(self.end),
        )


class RecordRequest(WireModel):
    """``POST /v1/records``: one bitemporal write (see ``bitemporal`` for the semantics)."""

    op: Literal["create", "update", "delete"]
    """What to do."""
    target: str | None = Field(default=None, validate_default=True)
    """Record id to update or delete; must be null (or absent) for create."""
    label: str | None = Field(default=None, validate_default=True)
    """Record label; required for create, carried over on update when absent."""
    properties: dict[str, Any] | None = None
    """The record's properties; update replaces them wholesale, absent keeps the old ones."""
    valid_time: ValidTime | None = None
    """Valid-time interval; absent on create means always valid, on update keeps the old one."""

    @field_validator("target")
    @classmethod
    def _target_for_op(cls, target: str | None, info: ValidationInfo) -> str | None:
        op = info.data.get("op")
        if op == "create" and target is not None:
            raise ValueError("must be null for create (create always starts a new record)")
        if op in ("update", "delete") and not target:
            raise ValueError(f"the record id is required for {op}")
        return target

    @field_validator("label")
    @classmethod
    def _label_for_create(cls, label: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("op") == "create" and not label:
            raise ValueError("is required for create")
        return label


class QueryRequest(WireModel):
    """``POST /v1/query``: records visible as of a (transaction time, valid time) pair."""

    label: str | None = None
    """Only records with this label; None: any label."""
    target: str | None = None
    """Only the record with this id; None: any record."""
    as_of_tx: StrictInt | None = None
    """Transaction time, ms since epoch; None: now (strict: ``true`` or ``"5"`` are refused, not read as numbers)."""
    as_of_valid: StrictStr | StrictInt | None = None
    """Valid time, RFC 3339 (or ms since epoch); None: now."""

    @field_validator("as_of_valid")
    @classmethod
    def _valid_instant(cls, value: str | int | None) -> str | int | None:
        if isinstance(value, str):
            parse_instant(value)
        return value

    def as_of_valid_ms(self, now: int) -> int:
        """``as_of_valid`` as epoch ms (``now`` when absent)."""
        if self.as_of_valid is None:
            return now
        return self.as_of_valid if isinstance(self.as_of_valid, int) else parse_instant(self.as_of_valid)


class CompareRequest(WireModel):
    """``POST /v1/compare``: the record set as of ``fromTx`` against the one as of ``toTx``."""

    target: str | None = None
    """Only the record with this id; None: any record."""
    label: str | None = None
    """Only records with this label; None: any label."""
    from_tx: StrictInt
    """Earlier transaction time, ms since epoch (strict, as ``QueryRequest.as_of_tx``)."""
    to_tx: StrictInt | None = None
    """Later transaction time, ms since epoch; None: now."""
