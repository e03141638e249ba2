"""The per-item outcome: what one dataset item produced, as it travels to the aggregator.

Outcomes travel on their items' reports as JSON built-ins (see
``ItemOutcome.to_wire``) so they survive pytest-xdist's serialisation, and are
read back on the controller with ``ItemOutcome.model_validate``. Metrics
(``pytest_groundeval.metrics``) and the report are computed from a list of them.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from .evidence import EvidenceReview
from .kinds.names import KIND_NAMES
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

    @property
    def errored(self) -> bool:
        """True when the item could not be run."""
        return self.error is not None
