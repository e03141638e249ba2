"""The per-item outcome: what one dataset item produced, as it travels to the aggregator.

Outcomes travel on their items' reports as JSON built-ins (see
``ItemOutcome.to_wire``) so they survive pytest-xdist's serialisation, and are
read back on the controller with ``ItemOutcome.model_validate``. Metrics
(``pytest_groundeval.metrics``) and the report are computed from a list of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_serializer, model_validator
from pydantic_core import PydanticCustomError

from .evidence import EvidenceReview
from .kinds.names import KIND_NAMES
from .text import shorten
from .wire import WireModel


def _registered_kind(value: str) -> str:
    """``value`` when it names a kind of the registry as it is now (kinds registered at run time count)."""
    if value not in KIND_NAMES:
        # The wording of pydantic's own literal_error, which this field raised while its type was a Literal.
        *head, last = (repr(name) for name in KIND_NAMES)
        expected = f"{', '.join(head)} or {last}" if head else last
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
    return value


ItemKind = Annotated[str, AfterValidator(_registered_kind)]
"""The name of a kind of the registry (``core.kinds``), checked when an outcome is validated."""


class ItemOutcome(WireModel):
    """One item's result. Counts are per item; metrics sum them over items (docs/gate.md).

    Validated: counts and tokens are >= 0, ``evidence_found`` is at most
    ``evidence_expected``, an item with an ``error`` is not passed, and an item that
    never ran (``not_run``) is not passed and says why in ``error``; a violation is a ``ValidationError`` naming the field.
    """

    id: str
    """The dataset item id."""
    kind: ItemKind
    """The item kind."""
    passed: bool = Field(alias="pass")
    """Whether the item met its own check (errors are never passed)."""
    error: str | None = None
    """Why the item could not be run (target down, timeout, malformed response); None when it ran."""
    not_run: bool = False
    """True for an item that was collected but never ran (the run stopped first); its
    ``error`` says why. It counts as an error, never dropped (docs/gate.md)."""
    trace_id: str | None = None
    """The target's ``traceId`` for the generate call, if any."""
    detail: str = ""
    """Plain-language explanation: what was expected and what the target returned."""

    latency_ms: float | None = None
    """Client-side wall time of ``/v1/generate`` in milliseconds; None without a generate call."""
    prompt_tokens: int | None = Field(default=None, ge=0)
    """Prompt tokens of the generate call (target's ``usage``, else the mock's count)."""
    completion_tokens: int | None = Field(default=None, ge=0)
    """Completion tokens of the generate call."""

    evidence_expected: int = Field(default=0, ge=0)
    """qa: expected evidence strings."""
    evidence_found: int = Field(default=0, ge=0)
    """qa: expected evidence strings found in the retrieved evidence spans."""
    claims_returned: int = Field(default=0, ge=0)
    """qa: claims the target returned, whatever their verdict."""
    claims_supported: int = Field(default=0, ge=0)
    """qa: claims the target marked ``supported``."""
    claims_supported_true: int = Field(default=0, ge=0)
    """qa: of those, claims that are true (docs/scoring.md)."""
    claims_true_cited: int = Field(default=0, ge=0)
    """qa: claims that are true and cite at least one evidence marker."""
    claims_true_cited_supported: int = Field(default=0, ge=0)
    """qa: of those, claims marked ``supported``."""

    falsehood_supported: bool | None = None
    """adversarial: whether a claim overlapping the planted falsehood was marked supported."""

    evidence_review: EvidenceReview | None = None
    """The evidence-risk review (docs/evidence-risk.md), when the item carries an evidence block."""

    extra: dict[str, Any] = Field(default_factory=dict)
    """Kind-specific figures for the report (e.g. citation paragraphs), JSON built-ins only."""

    attempts: list[ItemOutcome] | None = None
    """Under ``--eval-repeat N`` (N > 1): one outcome per attempt, in order, each shaped as an item's
    outcome without ``attempts`` (docs/gate.md, "Repeats"); the item's own fields then sum its
    attempts (``outcome_of_attempts``). None, and left out of the wire, for a run without repeats."""
    pass_rate: float | None = None
    """Attempts passed / attempts, with ``attempts``; None, and left out of the wire, without them."""

    @field_validator("error")
    @classmethod
    def _errors_never_pass(cls, error: str | None, info: ValidationInfo) -> str | None:
        if error is not None and info.data.get("passed"):
            raise ValueError("an item that errored cannot pass (pass must be false)")
        return error

    @field_validator("evidence_found")
    @classmethod
    def _found_within_expected(cls, found: int, info: ValidationInfo) -> int:
        expected = info.data.get("evidence_expected")
        if expected is not None and found > expected:
            raise ValueError(f"{found} evidence strings found but only {expected} expected (evidenceExpected)")
        return found

    @field_validator("not_run")
    @classmethod
    def _not_run_is_an_error(cls, not_run: bool, info: ValidationInfo) -> bool:
        if not_run and info.data.get("passed"):
            raise ValueError("an item that never ran cannot pass (pass must be false)")
        if not_run and "error" in info.data and info.data["error"] is None:
            raise ValueError("an item that never ran is an error: its error must say why (docs/gate.md)")
        return not_run

    @model_validator(mode="after")
    def _attempts_add_up(self) -> ItemOutcome:
        if self.attempts is None:
            if self.pass_rate is not None:
                raise ValueError("passRate is given without attempts: it is the share of attempts that passed")
            return self
        if not self.attempts:
            raise ValueError("attempts is empty: an item repeated N times lists N attempts (docs/gate.md, Repeats)")
        for i, attempt in enumerate(self.attempts):
            if attempt.attempts is not None:
                raise ValueError(f"attempts[{i}] has attempts of its own: attempts are not nested")
            if (attempt.id, attempt.kind) != (self.id, self.kind):
                raise ValueError(
                    f"attempts[{i}] is {attempt.kind} item {attempt.id!r}, not this {self.kind} item {self.id!r}"
                )
        passed = sum(attempt.passed for attempt in self.attempts)
        rate = float(Fraction(passed, len(self.attempts)))
        if self.pass_rate is None or abs(self.pass_rate - rate) > 1e-12:
            raise ValueError(f"passRate is {self.pass_rate} but {passed} of {len(self.attempts)} attempts passed")
        if self.passed != (passed == len(self.attempts)):
            raise ValueError(
                f"pass is {str(self.passed).lower()} but {passed} of {len(self.attempts)} attempts passed: "
                "an item passes when every attempt passed"
            )
        if (self.error is None) != all(attempt.error is None for attempt in self.attempts):
            raise ValueError("an item errored exactly when one of its attempts errored (error)")
        return self

    @model_serializer(mode="wrap")
    def _omit_attempts_without_repeats(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.attempts is None:
            # A run without repeats keeps the outcome shape it always had.
            data.pop("attempts", None)
            data.pop("passRate", None)
            data.pop("pass_rate", None)
        return data

    def to_wire(self) -> dict[str, Any]:
        """Dump as JSON-ready built-ins with camelCase keys, as ``WireModel.to_wire``.

        The common outcome (an ``ItemOutcome`` itself, no attempts, no evidence review, every
        value a JSON built-in: ``str``, ``int``, ``bool``, ``None``, a finite ``float``, and
        lists and ``str``-keyed dicts of those) is built by hand, fresh containers included: the
        same dict as pydantic's dump (a test compares them) at about half the cost, paid once
        per item (issue 24, CPU per item). Anything else goes through pydantic.
        """
        if type(self) is ItemOutcome and self.attempts is None and self.evidence_review is None:
            try:
                return _plain_wire(self)
            except _NotPlain:
                pass
        return super().to_wire()

    @property
    def errored(self) -> bool:
        """True when the item could not be run."""
        return self.error is not None


class _NotPlain(Exception):
    """A value ``_plain`` cannot copy as it is: pydantic's dump converts it (a tuple, a non-finite float, ...)."""


_PLAIN_TYPES = frozenset({str, int, bool, type(None)})
"""The types pydantic's JSON-mode dump of an ``Any`` value returns as they are (exact types, not subclasses)."""

_WIRE_FIELDS = tuple(
    (name, field.serialization_alias or name)
    for name, field in ItemOutcome.model_fields.items()
    if name not in ("attempts", "pass_rate")
)
"""``(field name, wire key)`` of what an outcome without attempts dumps, in pydantic's order
(``_omit_attempts_without_repeats`` leaves ``attempts`` and ``passRate`` out)."""


def _plain(value: Any) -> Any:
    """``value`` when a JSON built-in (containers copied); raises ``_NotPlain`` otherwise.

    A container's strings, integers, booleans and Nones are taken without a call each.
    """
    kind = type(value)
    if kind is dict:
        copied = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            copied[key] = item if type(item) in _PLAIN_TYPES else _plain(item)
        return copied
    if kind is list:
        return [item if type(item) in _PLAIN_TYPES else _plain(item) for item in value]
    if kind in _PLAIN_TYPES:
        return value
    if kind is float and math.isfinite(value):
        return value
    raise _NotPlain


def _plain_wire(outcome: ItemOutcome) -> dict[str, Any]:
    """The wire dict of an outcome without attempts whose values are all JSON built-ins
    (``ItemOutcome.to_wire``); raises ``_NotPlain`` for any other value."""
    values = outcome.__dict__
    wire = {}
    for name, key in _WIRE_FIELDS:
        value = values[name]
        wire[key] = value if type(value) in _PLAIN_TYPES else _plain(value)
    return wire


ITEM_EXTRA_KEYS = ("tags", "question")
"""``extra`` keys of an item under repeats: what it is, not what an attempt answered (``outcome_of_attempts``)."""

_SUMMED = (
    "evidence_expected",
    "evidence_found",
    "claims_returned",
    "claims_supported",
    "claims_supported_true",
    "claims_true_cited",
    "claims_true_cited_supported",
)


def _sum_or_none(values: Sequence[float | int | None]) -> Any:
    present = [value for value in values if value is not None]
    return sum(present) if present else None


def outcome_of_attempts(attempts: Sequence[ItemOutcome]) -> ItemOutcome:
    """One item's outcome from its attempts under ``--eval-repeat N`` (docs/gate.md, "Repeats").

    The item passes only when every attempt passed (pass^k of one item); it errored when an
    attempt errored (``error`` says how many and the first one's message); it never ran
    (``not_run``) when no attempt ran. Its counts (evidence, claims), latency and tokens are
    the sums over its attempts (None when no attempt has one), so a figure taken over items
    equals the one taken over every attempt; ``falsehood_supported`` is True when any attempt
    supported the falsehood; ``evidence_review`` is the lowest-scoring attempt's; ``trace_id``
    is None (each attempt keeps its own); ``extra`` keeps only ``ITEM_EXTRA_KEYS`` (each
    attempt keeps its own). ``pass_rate`` is attempts passed / attempts.

    Args:
        attempts: The attempts' outcomes, in order; at least one, all of one item, none nested.

    Raises:
        ValueError: no attempts.
        pydantic.ValidationError: the attempts are of different items, or nested.
    """
    if not attempts:
        raise ValueError("an item repeated under --eval-repeat has at least one attempt")
    first = attempts[0]
    passed = sum(attempt.passed for attempt in attempts)
    n = len(attempts)
    errored = [(k, attempt) for k, attempt in enumerate(attempts, 1) if attempt.error is not None]
    failed = [(k, attempt) for k, attempt in enumerate(attempts, 1) if attempt.error is None and not attempt.passed]
    lines = [f"{passed} of {n} attempts passed"]
    lines += [f"attempt {k} failed: {attempt.detail}" for k, attempt in failed]
    lines += [f"attempt {k} could not be run: {attempt.error}" for k, attempt in errored]
    error = None
    if errored:
        k, attempt = errored[0]
        error = f"{len(errored)} of {n} attempts could not be run; attempt {k}: {shorten(attempt.error or '', 2000)}"
    falsehoods = [attempt.falsehood_supported for attempt in attempts if attempt.falsehood_supported is not None]
    reviews = [attempt.evidence_review for attempt in attempts if attempt.evidence_review is not None]
    reviewed = [review for review in reviews if review.reviewed]
    review = min(reviewed, key=lambda r: r.score) if reviewed else (reviews[0] if reviews else None)
    figures: dict[str, Any] = {name: sum(getattr(attempt, name) for attempt in attempts) for name in _SUMMED}
    return ItemOutcome(
        id=first.id,
        kind=first.kind,
        passed=passed == n,
        error=error,
        not_run=all(attempt.not_run for attempt in attempts),
        detail="\n".join(lines),
        latency_ms=_sum_or_none([attempt.latency_ms for attempt in attempts]),
        prompt_tokens=_sum_or_none([attempt.prompt_tokens for attempt in attempts]),
        completion_tokens=_sum_or_none([attempt.completion_tokens for attempt in attempts]),
        falsehood_supported=any(falsehoods) if falsehoods else None,
        evidence_review=review,
        extra={key: first.extra[key] for key in ITEM_EXTRA_KEYS if key in first.extra},
        attempts=list(attempts),
        pass_rate=float(Fraction(passed, n)),
        **figures,
    )


def as_attempts(outcome: ItemOutcome, repeat: int) -> ItemOutcome:
    """The outcome of an item none of whose ``repeat`` attempts produced one, under ``--eval-repeat``.

    An item whose worker crashed, or that never ran, lost every attempt: each counts as an
    errored attempt (errors are counted, never dropped, docs/gate.md). With ``repeat`` 1 the
    outcome is returned as it is.
    """
    return outcome if repeat == 1 else outcome_of_attempts([outcome] * repeat)
