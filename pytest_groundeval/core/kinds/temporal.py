"""temporal items: bitemporal records set up, then probed (docs/dataset.md: temporal items).

Runs its setup steps in order against ``POST /v1/records``, each step's response
saved under its ``save`` name, then one query or compare probe whose ``$tx:`` /
``$id:`` references are replaced by the saved values (``substitute``). Labels are
namespaced per run and item (``namespace_label``), and per attempt under
``--eval-repeat``, so items and attempts never see each other's records. Adds
temporalAccuracy to the metrics.

The ``$tx`` grammar is defined once, here: ``$tx:<save>``, ``$tx:<save>+N``,
``$tx:<save>-N`` (N milliseconds) and ``$id:<save>``, where a save name holds
only letters, digits and ``_`` (``SAVE_PATTERN``), so ``-N`` parses one way only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple, cast

from pydantic import BeforeValidator, Discriminator, Field, StringConstraints, Tag, field_validator, model_validator

from ..contract import TEMPORAL_LABEL_SEPARATOR
from ..outcome import ItemOutcome
from ..text import shorten
from ..wire import WireModel
from .base import ItemBase, Kind, MetricSpec, RuleError, Tally, ratio

if TYPE_CHECKING:
    from ..dataset import Dataset
    from ..runner import ItemRunner

SAVE_PATTERN = r"^[A-Za-z0-9_]+$"
"""Temporal save names; no ``-``/``+`` so ``$tx:<save>-N`` parses one way only."""

SaveName = Annotated[str, StringConstraints(pattern=SAVE_PATTERN)]


# --------------------------------------------------------------------------- the $tx grammar


class Reference(NamedTuple):
    """A parsed ``$tx:<save>[+N|-N]`` or ``$id:<save>`` value (docs/dataset.md)."""

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
            ``$tx:<save>+N``, ``$tx:<save>-N`` or ``$id:<save>`` (docs/dataset.md).
    """
    if not value.startswith("$"):
        return None
    match = _REFERENCE_RE.match(value)
    if match is None or (match.group(1) == "id" and match.group(3)):
        raise ValueError(f"{value!r} is not a reference: expected $tx:<save>, $tx:<save>+N, $tx:<save>-N or $id:<save>")
    kind, save, sign, digits = match.groups()
    offset = int(digits) if digits else 0
    # The pattern's first group is (tx|id).
    return Reference(cast(Literal["tx", "id"], kind), save, -offset if sign == "-" else offset)


_RFC3339_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$")


def parse_rfc3339(value: str) -> datetime:
    """Parse an RFC 3339 timestamp with a UTC offset into an aware ``datetime``.

    Valid times are compared as instants, never as strings (docs/target-contract.md).

    Raises:
        ValueError: Not RFC 3339, no offset, or not a real date/time.
    """
    match = _RFC3339_RE.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{value!r} is not an RFC 3339 timestamp with an offset, e.g. 2024-05-01T00:00:00Z")
    date, time, fraction, offset = match.groups()
    # datetime.fromisoformat on Python 3.10 takes neither "Z" nor more than 6 fraction digits.
    micro = f".{(fraction + '000000')[:6]}" if fraction else ""
    offset = "+00:00" if offset in ("Z", "z") else offset
    try:
        return datetime.fromisoformat(f"{date}T{time}{micro}{offset}")
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a valid RFC 3339 timestamp: {exc}") from None


def substitute(value: Any, saves: Mapping[str, Mapping[str, Any]]) -> Any:
    """Replace ``$tx:`` / ``$id:`` references to saved setup steps (``parse_reference``'s grammar).

    Strings of the form ``$tx:<save>`` become the saved step's ``txStart`` (an
    int, ms since the epoch), ``$tx:<save>+N`` / ``$tx:<save>-N`` that plus or
    minus N ms, and ``$id:<save>`` the saved step's ``id``. Dicts (values only)
    and lists are walked recursively; other values, and strings not starting
    with ``$tx:`` or ``$id:``, are returned unchanged.

    Args:
        value: A probe or step, or any part of one.
        saves: Save name -> the ``POST /v1/records`` response captured under
            it, ``{"id": ..., "txStart": int}``.

    Returns:
        A new value with every reference replaced (the input is not modified).

    Raises:
        ValueError: a reference is malformed, names an unknown save, or the saved
            response lacks ``id`` / ``txStart``.
    """
    if isinstance(value, dict):
        return {key: substitute(item, saves) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, saves) for item in value]
    if not isinstance(value, str) or not value.startswith(("$tx:", "$id:")):
        return value
    ref = parse_reference(value)
    assert ref is not None
    if ref.kind == "id":
        return _saved(saves, ref.save, "id", value)
    tx_start = _saved(saves, ref.save, "txStart", value)
    if not isinstance(tx_start, int) or isinstance(tx_start, bool):
        raise ValueError(f"{value!r}: save {ref.save!r} has a txStart that is not an integer: {tx_start!r}")
    return tx_start + ref.offset_ms


def _known(saves: Mapping[str, Any]) -> str:
    return ", ".join(repr(name) for name in saves) or "none"


def _saved(saves: Mapping[str, Mapping[str, Any]], name: str, key: str, ref: str) -> Any:
    if name not in saves:
        raise ValueError(f"{ref!r} refers to an unknown save {name!r} (known: {_known(saves)})")
    if key not in saves[name]:
        raise ValueError(f"{ref!r}: the response saved as {name!r} has no {key!r}")
    return saves[name][key]


def namespace_label(label: str, run_id: str, item_id: str) -> str:
    """Return ``label`` with the per-run, per-item namespace suffix of docs/dataset.md.

    The suffix is ``contract.TEMPORAL_LABEL_SEPARATOR`` (``"__ge_"``) followed by
    the first 12 hex digits of BLAKE2b over ``run_id`` and ``item_id``, so each
    temporal item of each run sees only its own records, also under xdist and
    against a shared url target. The suffix holds only letters, digits and
    ``_``. The same (label, run, item) always gives the same result, so setup
    and probe labels agree.

    Example: ``namespace_label("TASK", "run-1", "tmp-update")`` →
    ``"TASK__ge_<12 hex digits>"``.
    """
    digest = hashlib.blake2b(f"{run_id}\x00{item_id}".encode(), digest_size=6).hexdigest()
    return f"{label}{TEMPORAL_LABEL_SEPARATOR}{digest}"


# --------------------------------------------------------------------------- the item


class ValidTime(WireModel):
    """A valid-time interval of RFC 3339 timestamps with offsets (docs/dataset.md)."""

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
    def _end_after_start(self) -> ValidTime:
        if self.end is not None and parse_rfc3339(self.end) <= parse_rfc3339(self.start):
            raise RuleError(f"end {self.end!r} must be after start {self.start!r}", json_path="end")
        return self


class TemporalStep(WireModel):
    """One ``POST /v1/records`` call of a temporal item's setup (docs/dataset.md)."""

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
    def _shape_of_op(self) -> TemporalStep:
        if self.op == "create":
            if self.target is not None:
                raise RuleError("a create step has no target; use update or delete", json_path="target")
            if not self.label:
                raise RuleError("a create step needs a label", json_path="label")
        elif self.target is None:
            raise RuleError(f"an {self.op} step needs target '$id:<save>'", json_path="target")
        return self


def _reject_bool_or_other(value: Any) -> Any:
    # bool is an int in Python and JSON numbers like 1.5 are not milliseconds.
    if value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValueError(f"expected integer milliseconds or a '$tx:<save>[+N|-N]' reference, got {value!r}")


TxValue = Annotated[int | str | None, BeforeValidator(_reject_bool_or_other)]


class QueryProbe(WireModel):
    """``POST /v1/query`` with placeholders (docs/target-contract.md, docs/dataset.md)."""

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
    """``POST /v1/compare`` with placeholders (docs/target-contract.md, docs/dataset.md)."""

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


Probe = Annotated[QueryProbe | CompareProbe, Field(discriminator="call")]


class ExpectedRecord(WireModel):
    """A record a query must return: its properties are a subset of a distinct returned record's."""

    properties: dict[str, Any] = Field(default_factory=dict)
    """Properties that must all be present with these values."""


class QueryExpect(WireModel):
    """What a query probe must return (docs/dataset.md)."""

    count: Annotated[int, Field(ge=0)] | None = None
    """Number of records returned, or null to not check."""
    records: list[ExpectedRecord] = Field(default_factory=list)
    """Records matched order-insensitively, each against a distinct returned record."""


class CompareExpect(WireModel):
    """What a compare probe must return (docs/dataset.md); each count is optional."""

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
    Annotated[QueryExpect, Tag("query-expect")] | Annotated[CompareExpect, Tag("compare-expect")],
    Discriminator(
        _expect_tag,
        custom_error_type="expect_type",
        custom_error_message='expected an object: {"count", "records"} for a query, {"added", "removed", "changed"} for a compare',
    ),
]


class TemporalItem(ItemBase):
    """Bitemporal records set up, then probed (docs/dataset.md)."""

    kind: Literal["temporal"]
    """Always ``temporal``."""
    setup: Annotated[list[TemporalStep], Field(min_length=1)]
    """Steps run in order against ``/v1/records``."""
    probe: Probe
    """The query or compare call whose result is checked."""
    expect: Expect
    """What the probe must return; its shape follows ``probe.call``."""

    @model_validator(mode="after")
    def _references_resolve(self) -> TemporalItem:
        saves: dict[str, int] = {}
        for i, step in enumerate(self.setup):
            if step.target is not None:
                _check_reference(step.target, "id", saves, f"setup[{i}].target")
            if step.save in saves:
                raise RuleError(
                    f"save name {step.save!r} is already used by setup[{saves[step.save]}]",
                    json_path=f"setup[{i}].save",
                )
            saves[step.save] = i
        probe = self.probe
        if probe.label is None and probe.target is None:
            raise RuleError("a probe needs a label or a target, so it stays inside the item's namespace", "probe")
        if probe.target is not None:
            _check_reference(probe.target, "id", saves, "probe.target")
        tx_fields = (
            (("asOfTx", "as_of_tx"),) if isinstance(probe, QueryProbe) else (("fromTx", "from_tx"), ("toTx", "to_tx"))
        )
        for alias, name in tx_fields:
            value = getattr(probe, name)
            if isinstance(value, str):
                _check_reference(value, "tx", saves, f"probe.{alias}")
        self._check_expect()
        return self

    def _check_expect(self) -> None:
        if isinstance(self.probe, QueryProbe):
            if not isinstance(self.expect, QueryExpect):
                raise RuleError("the probe is a query: expect takes count and/or records", "expect")
            if self.expect.count is None and not self.expect.records:
                raise RuleError("expect checks nothing: give count and/or records", "expect")
        else:
            if not isinstance(self.expect, CompareExpect):
                raise RuleError("the probe is a compare: expect takes added, removed and/or changed", "expect")


def _check_reference(value: str, kind: str, saves: dict[str, int], where: str) -> None:
    try:
        ref = parse_reference(value)
    except ValueError as exc:
        raise RuleError(str(exc), where) from None
    if ref is None:
        expected = "'$id:<save>'" if kind == "id" else "integer ms or '$tx:<save>[+N|-N]'"
        raise RuleError(f"expected {expected}, got {value!r}", where)
    if ref.kind != kind:
        raise RuleError(f"expected a ${kind}: reference here, got {value!r}", where)
    if ref.save not in saves:
        known = ", ".join(saves) or "none"
        raise RuleError(f"{value!r} names no earlier save; saves so far: {known}", where)


# --------------------------------------------------------------------------- judging


def _check_query(expect: QueryExpect, result: dict[str, Any]) -> list[str]:
    """What a checked query response gets wrong against the item's ``expect`` (none: an empty list)."""
    records = result["records"]
    problems = []
    if expect.count is not None and len(records) != expect.count:
        problems.append(f"expected {expect.count} record(s), target returned {len(records)}")
    # Each expected record must match a distinct returned record (docs/dataset.md): greedy is
    # not enough for overlapping subsets, so use a small bipartite matching.
    wanted = [e.properties for e in expect.records]
    have = [r.get("properties") or {} for r in records if isinstance(r, dict)]
    matched = _match_subsets(wanted, have)
    for i in range(len(wanted)):
        if i not in matched:
            problems.append(f"no distinct returned record has properties ⊇ {wanted[i]}")
    return problems


def _match_subsets(wanted: list[dict[str, Any]], have: list[dict[str, Any]]) -> dict[int, int]:
    """Maximum bipartite matching of expected property subsets to returned records."""
    fits = [[j for j, h in enumerate(have) if all(h.get(k) == v for k, v in w.items())] for w in wanted]
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(wanted)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


def _check_compare(expect: CompareExpect, result: dict[str, Any]) -> list[str]:
    """What a checked compare response gets wrong against the item's ``expect``."""
    problems = []
    for key in ("added", "removed", "changed"):
        want = getattr(expect, key)
        if want is not None and len(result[key]) != want:
            problems.append(f"expected {want} {key}, target returned {len(result[key])}")
    return problems


@dataclass
class TemporalTally(Tally):
    """Temporal items that ran and passed."""

    passed: int = 0


class TemporalKind(Kind):
    name = "temporal"
    model = TemporalItem
    tally_type = TemporalTally
    union_tags = frozenset({"query", "compare", "query-expect", "compare-expect"})
    pattern_explanations = {SAVE_PATTERN: "a save name may contain only letters, digits and '_'"}
    metrics = (
        MetricSpec(
            "temporal_accuracy",
            "Temporal items passed / temporal items; an errored item counts as failed.",
            default_bound=1.0,
        ),
    )

    async def run(self, runner: ItemRunner, item: TemporalItem, dataset: Dataset) -> ItemOutcome:
        # The namespace names the manifest too: two datasets in one session may share item ids.
        scope = f"{dataset.manifest_path}::{item.id}"
        if runner.attempt is not None:
            # Under --eval-repeat each attempt sets up its own records (docs/dataset.md, label namespacing).
            scope += f"::attempt-{runner.attempt}"

        def label(value: Any) -> Any:
            return namespace_label(value, runner.run_id, scope) if isinstance(value, str) else value

        saves: dict[str, dict[str, Any]] = {}
        for step in item.setup:
            body = step.model_dump(mode="json", by_alias=True, exclude={"save"})
            body["label"] = label(body.get("label"))
            saves[step.save] = await runner.call("records", substitute(body, saves))
        probe = item.probe.model_dump(mode="json", by_alias=True, exclude={"call"})
        probe["label"] = label(probe.get("label"))
        probe = substitute(probe, saves)
        call = "compare" if isinstance(item.probe, CompareProbe) else "query"
        result = await runner.call(call, probe)
        # The item's validator pairs a compare probe with a compare expect, a query with a query's.
        expect = item.expect
        problems = _check_compare(expect, result) if isinstance(expect, CompareExpect) else _check_query(expect, result)
        detail = (
            "\n".join(problems) + f"\nprobe ({call}): {probe}" + f"\ntarget returned: {shorten(repr(result), 1200)}"
            if problems
            else "probe matched"
        )
        return ItemOutcome(
            id=item.id, kind="temporal", passed=not problems, detail=detail, extra={"tags": list(item.tags)}
        )

    def tally(self, tally: TemporalTally, outcome: ItemOutcome) -> None:
        tally.passed += not outcome.errored and outcome.passed

    def results(self, tally: TemporalTally) -> dict[str, Any]:
        return {"temporal_accuracy": ratio(tally.passed, tally.items)}

    def rate_parts(self, tally: TemporalTally) -> dict[str, tuple[int, int]]:
        return {"temporal_accuracy": (tally.passed, tally.items)}


KIND = TemporalKind()
