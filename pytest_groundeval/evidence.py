"""Evidence risk (SPEC §8): models of the ``evidence`` block and of its review.

The review logic (``review_answer``) is implemented in this module as well; it
never calls a provider.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ._model import WireModel

Tier = Literal["guideline", "official", "peer_reviewed", "reputable", "community", "unverified"]
"""Source tiers, strongest first (SPEC §8)."""

Assertiveness = Literal["definitive", "likely", "tentative"]
"""How strongly a claim is asserted (SPEC §8)."""

Verdict = Literal["pass", "soften", "flag_for_human_review", "remove"]
"""Finding verdicts, least to most severe (SPEC §8)."""


class EvidenceSource(WireModel):
    """A source that declared claims may rest on."""

    id: str
    """Source id, referenced by ``EvidenceClaim.source_ids``."""
    url: str | None = None
    """Where the source lives (informational)."""
    declared_tier: Tier
    """The tier the dataset author declares for this source."""


class EvidenceClaim(WireModel):
    """A claim the answer may assert, with the sources it rests on."""

    id: str
    """Claim id, unique within the block; findings name it."""
    text: str
    """The claim's text; the answer asserts it when it contains this text."""
    assertiveness: Assertiveness
    """How strongly the claim is asserted."""
    source_ids: list[str] = Field(default_factory=list)
    """Ids of the sources this claim rests on; empty means unsourced."""
    match: list[str] = Field(default_factory=list)
    """Other phrasings whose presence in the answer also counts as asserting the claim."""


class EvidenceBlock(WireModel):
    """The optional ``evidence`` block of an item (SPEC §8)."""

    profile: str | None = None
    """Free-form profile name (for example ``clinical``), carried into the report."""
    min_score: float = 0.5
    """The item's evidence-risk check passes when ``score >= min_score``; in [0, 1]."""
    claims: list[EvidenceClaim] = Field(default_factory=list)
    """Declared claims."""
    sources: list[EvidenceSource] = Field(default_factory=list)
    """Declared sources."""

    @field_validator("min_score")
    @classmethod
    def _min_score_in_range(cls, value: float) -> float:
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"minScore must be a number in [0, 1], got {value!r}")
        return value

    @model_validator(mode="after")
    def _source_ids_known(self) -> "EvidenceBlock":
        known = {s.id for s in self.sources}
        for i, claim in enumerate(self.claims):
            for sid in claim.source_ids:
                if sid not in known:
                    raise ValueError(
                        f"claims[{i}] ({claim.id!r}) cites unknown source id {sid!r}; "
                        f"declared sources: {sorted(known)}"
                    )
        return self


class Finding(WireModel):
    """One check's verdict on one asserted claim."""

    check: Literal["evidence_strength", "unsourced_claim"]
    """Which check produced the finding."""
    claim_id: str
    """The claim reviewed."""
    verdict: Verdict
    """What should happen to the claim."""
    reason: str
    """Plain-language reason, naming the tier and assertiveness involved."""
    suggested_rewrite: str | None = None
    """A concrete rewrite that would fix the finding, where one exists."""


class EvidenceReview(WireModel):
    """The outcome of reviewing one evidence block against one answer."""

    reviewed: bool
    """False when there was no block, or an empty one."""
    risk_score: float
    """The worst finding's risk weight: pass 0, soften 1/3, flag 2/3, remove 1."""
    score: float
    """``1 - risk_score``; 1.0 when not reviewed, 0.0 when no declared claim was asserted."""
    max_verdict: Verdict | None = None
    """The worst verdict among the findings, if any."""
    findings: list[Finding] = Field(default_factory=list)
    """Every finding, in claim order."""
    reason: str = ""
    """Why the score is what it is (always set when not reviewed or nothing asserted)."""
    min_score: float = 0.5
    """The block's floor, copied for the report."""
    passed: bool = True
    """``score >= min_score`` (always True when not reviewed)."""
