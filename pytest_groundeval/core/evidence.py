"""Evidence risk (docs/evidence-risk.md): models of the ``evidence`` block and its deterministic review.

A dataset item may declare the claims its answer is likely to make, the sources
each claim rests on and how strong those sources are. ``review_answer`` checks
the claims the answer actually asserted against that declaration — a definitive
claim on a community source, a claim with no source at all — and suggests a
rewrite where one fixes the problem. It is pure: no I/O, no clock, no provider
call, so the same block and answer always give the same review.

The rules (the tier table, the unsourced-claim verdicts, the risk weights) are
documented, with their reasons, in ``docs/evidence-risk.md``.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from .wire import WireModel

Tier = Literal["guideline", "official", "peer_reviewed", "reputable", "community", "unverified"]
"""Source tiers, strongest first (docs/evidence-risk.md)."""

Assertiveness = Literal["definitive", "likely", "tentative"]
"""How strongly a claim is asserted (docs/evidence-risk.md)."""

FindingVerdict = Literal["pass", "soften", "flag_for_human_review", "remove"]
"""Finding verdicts, least to most severe (docs/evidence-risk.md)."""

Check = Literal["evidence_strength", "unsourced_claim"]
"""The checks a claim goes through (docs/evidence-risk.md)."""

TIERS: tuple[Tier, ...] = (
    "guideline",
    "official",
    "peer_reviewed",
    "reputable",
    "community",
    "unverified",
)
"""Every tier, strongest first; a claim's strength is its best-ranked source."""

VERDICT_RISK: Mapping[FindingVerdict, float] = MappingProxyType(
    {"pass": 0.0, "soften": 1 / 3, "flag_for_human_review": 2 / 3, "remove": 1.0}
)
"""Risk weight of each verdict (docs/evidence-risk.md); the review's ``riskScore`` is the worst one."""

EVIDENCE_STRENGTH: Mapping[tuple[Assertiveness, Tier], FindingVerdict] = MappingProxyType(
    {
        # A definitive statement is only as safe as an authority that states it.
        ("definitive", "guideline"): "pass",
        ("definitive", "official"): "pass",
        ("definitive", "peer_reviewed"): "pass",
        ("definitive", "reputable"): "soften",
        ("definitive", "community"): "flag_for_human_review",
        ("definitive", "unverified"): "flag_for_human_review",
        # "Likely" admits doubt, so a reputable source is enough.
        ("likely", "guideline"): "pass",
        ("likely", "official"): "pass",
        ("likely", "peer_reviewed"): "pass",
        ("likely", "reputable"): "pass",
        ("likely", "community"): "soften",
        ("likely", "unverified"): "flag_for_human_review",
        # A tentative claim overstates nothing unless nobody vouches for the source.
        ("tentative", "guideline"): "pass",
        ("tentative", "official"): "pass",
        ("tentative", "peer_reviewed"): "pass",
        ("tentative", "reputable"): "pass",
        ("tentative", "community"): "pass",
        ("tentative", "unverified"): "soften",
    }
)
"""The ``evidence_strength`` table: (assertiveness, strongest tier) → verdict.

The same table, with the reasoning, is in ``docs/evidence-risk.md``; the two must
be changed together.
"""

UNSOURCED: Mapping[Assertiveness, FindingVerdict] = MappingProxyType(
    {"definitive": "remove", "likely": "flag_for_human_review", "tentative": "soften"}
)
"""The ``unsourced_claim`` verdict for a claim that names no source."""

_TIER_RANK: Mapping[Tier, int] = MappingProxyType({tier: rank for rank, tier in enumerate(TIERS)})
_TIER_PHRASE: Mapping[Tier, str] = MappingProxyType(
    {
        "guideline": "a guideline",
        "official": "an official source",
        "peer_reviewed": "a peer-reviewed source",
        "reputable": "a reputable source",
        "community": "a community source",
        "unverified": "an unverified source",
    }
)
_PASSING_TIERS: Mapping[Assertiveness, str] = MappingProxyType(
    {
        assertiveness: ", ".join(tier for tier in TIERS if EVIDENCE_STRENGTH[(assertiveness, tier)] == "pass")
        for assertiveness in ("definitive", "likely", "tentative")
    }
)


class EvidenceSource(WireModel):
    """A source that declared claims may rest on."""

    id: str = Field(min_length=1)
    """Source id, unique within the block, referenced by ``EvidenceClaim.source_ids``."""
    url: str | None = None
    """Where the source lives; quoted in attribution rewrites (informational otherwise)."""
    declared_tier: Tier
    """The tier the dataset author declares for this source."""


class EvidenceClaim(WireModel):
    """A claim the answer may assert, with the sources it rests on."""

    id: str = Field(min_length=1)
    """Claim id, unique within the block; findings name it."""
    text: str
    """The claim's text; the answer asserts it when it contains this text
    (case-folded, whitespace-collapsed, Unicode-normalised containment)."""
    assertiveness: Assertiveness
    """How strongly the claim is asserted."""
    source_ids: list[str] = Field(default_factory=list)
    """Ids of the sources this claim rests on; empty means unsourced."""
    match: list[str] = Field(default_factory=list)
    """Other phrasings whose presence in the answer also counts as asserting the claim."""

    @field_validator("text")
    @classmethod
    def _text_not_blank(cls, value: str) -> str:
        # A blank needle is contained in every answer: the claim would always count as asserted.
        if not value.strip():
            raise ValueError("text must contain at least one non-whitespace character")
        return value

    @field_validator("match")
    @classmethod
    def _match_not_blank(cls, value: list[str]) -> list[str]:
        for i, phrase in enumerate(value):
            if not phrase.strip():
                raise ValueError(f"match[{i}] is blank; a blank phrase would match every answer")
        return value


class EvidenceBlock(WireModel):
    """The optional ``evidence`` block of an item (docs/evidence-risk.md).

    Raises:
        pydantic.ValidationError: on validation, for a ``minScore`` outside [0, 1],
            NaN or not a number; an unknown tier or assertiveness; a blank claim
            text or match phrase; duplicate claim or source ids; a claim citing a
            source id the block does not declare. Messages name the offending
            path inside the block (``claims[2].sourceIds[0]``).
    """

    profile: str | None = None
    """Free-form profile name (for example ``clinical``), carried into the report."""
    min_score: float = Field(0.5, strict=True)
    """The item's evidence-risk check passes when ``score >= min_score``; in [0, 1].
    Strict: ``true`` or ``"0.5"`` are refused rather than read as numbers."""
    claims: list[EvidenceClaim] = Field(default_factory=list)
    """Declared claims, in the order findings report them."""
    sources: list[EvidenceSource] = Field(default_factory=list)
    """Declared sources."""

    @field_validator("min_score")
    @classmethod
    def _min_score_in_range(cls, value: float) -> float:
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"minScore must be a number in [0, 1], got {value!r}")
        return value

    @model_validator(mode="after")
    def _ids_unique_and_known(self) -> EvidenceBlock:
        source_at = _first_index_of_ids("sources", [s.id for s in self.sources], "source")
        _first_index_of_ids("claims", [c.id for c in self.claims], "claim")
        for i, claim in enumerate(self.claims):
            for j, source_id in enumerate(claim.source_ids):
                if source_id not in source_at:
                    raise ValueError(
                        f"claims[{i}].sourceIds[{j}]: claim {claim.id!r} cites unknown "
                        f"source id {source_id!r}; declared sources: {sorted(source_at)}"
                    )
        return self


def _empty_block_is_none(value: Any) -> Any:
    # docs/evidence-risk.md: an empty block is no block, so a dataset can be adopted before it is annotated.
    return None if isinstance(value, dict) and not value else value


OptionalEvidenceBlock = Annotated[EvidenceBlock | None, BeforeValidator(_empty_block_is_none)]
"""An item's ``evidence`` field: a block, or none (absent, ``null`` or ``{}``; docs/evidence-risk.md).

No block reviews as ``reviewed: false``, score 1.0, "no evidence block on this item";
a block that is present but malformed is still a validation error."""


def _first_index_of_ids(field: str, ids: list[str], what: str) -> dict[str, int]:
    """Map each id to its first index, refusing a repeated id with both positions."""
    first: dict[str, int] = {}
    for i, item_id in enumerate(ids):
        if item_id in first:
            raise ValueError(
                f"{field}[{i}].id: duplicate {what} id {item_id!r} (first declared at {field}[{first[item_id]}])"
            )
        first[item_id] = i
    return first


class Finding(WireModel):
    """One check's verdict on one asserted claim."""

    check: Check
    """Which check produced the finding."""
    claim_id: str
    """The claim reviewed."""
    verdict: FindingVerdict
    """What should happen to the claim."""
    reason: str
    """Plain-language reason, naming the tier and assertiveness involved."""
    suggested_rewrite: str | None = None
    """A concrete rewrite that would fix the finding: a hedge for ``soften``, an
    attribution to the source for ``flag_for_human_review``; None for ``pass``,
    for ``remove``, and where no rewrite helps (an unsourced claim to flag)."""


class EvidenceReview(WireModel):
    """The outcome of reviewing one evidence block against one answer."""

    reviewed: bool
    """False when there was no block, or an empty one."""
    risk_score: float
    """The worst finding's risk weight: pass 0, soften 1/3, flag 2/3, remove 1;
    1.0 when no declared claim was asserted; 0.0 when not reviewed."""
    score: float
    """``1 - risk_score``; 1.0 when not reviewed, 0.0 when no declared claim was asserted."""
    max_verdict: FindingVerdict | None = None
    """The worst verdict among the findings, if any."""
    findings: list[Finding] = Field(default_factory=list)
    """One finding per asserted claim, in claim order."""
    asserted_claim_ids: list[str] = Field(default_factory=list)
    """Ids of the declared claims the answer asserted (the ones reviewed), in claim order."""
    reason: str = ""
    """Why the score is what it is."""
    min_score: float = 0.5
    """The block's floor, copied for the report."""
    passed: bool = True
    """``score >= min_score`` (always True when not reviewed)."""


def review_answer(block: EvidenceBlock | None, answer: str) -> EvidenceReview:
    """Review the claims an answer asserted against its item's evidence block (docs/evidence-risk.md).

    Only declared claims the answer asserts are reviewed: the answer must contain
    the claim's ``text`` or one of its ``match`` phrases, compared case-folded,
    Unicode-normalised and with runs of whitespace collapsed to one space. A
    claim with sources gets an ``evidence_strength`` finding (``EVIDENCE_STRENGTH``
    at its strongest source's tier); one without gets an ``unsourced_claim``
    finding (``UNSOURCED``).

    Args:
        block: The item's evidence block, or None when the item has none.
        answer: The answer text (the target's, or the recorded ``response.answer``).

    Returns:
        The review. No block or no declared claims: ``reviewed=False``, score 1.0.
        Claims declared but none asserted: ``reviewed=True``, score 0.0. Otherwise
        ``risk_score`` is the worst finding's ``VERDICT_RISK``, ``score`` is
        ``1 - risk_score`` and ``passed`` is ``score >= block.min_score``.
    """
    if block is None:
        return EvidenceReview(
            reviewed=False,
            risk_score=0.0,
            score=1.0,
            reason="no evidence block on this item; nothing to review",
        )
    if not block.claims:
        return EvidenceReview(
            reviewed=False,
            risk_score=0.0,
            score=1.0,
            reason="the evidence block declares no claims; nothing to review",
            min_score=block.min_score,
        )
    haystack = normalise_for_match(answer)
    asserted = [claim for claim in block.claims if _asserted(claim, haystack)]
    if not asserted:
        return EvidenceReview(
            reviewed=True,
            risk_score=1.0,
            score=0.0,
            reason=(
                f"the answer asserted no declared claim (none of the {len(block.claims)} "
                f"declared claims' text or match phrases appear in it)"
            ),
            min_score=block.min_score,
            passed=block.min_score <= 0.0,
        )
    sources = {source.id: source for source in block.sources}
    findings = [_finding(claim, sources) for claim in asserted]
    worst = max(findings, key=lambda finding: VERDICT_RISK[finding.verdict])
    risk = VERDICT_RISK[worst.verdict]
    score = 1.0 - risk
    return EvidenceReview(
        reviewed=True,
        risk_score=risk,
        score=score,
        max_verdict=worst.verdict,
        findings=findings,
        asserted_claim_ids=[claim.id for claim in asserted],
        reason=(
            f"{len(asserted)} of {len(block.claims)} declared claims asserted; worst finding: "
            f"claim {worst.claim_id!r} {worst.verdict} ({worst.check}: {worst.reason})"
        ),
        min_score=block.min_score,
        passed=score >= block.min_score,
    )


def describe_review(review: EvidenceReview) -> str:
    """A failed review in plain text: the score against ``minScore``, then one line per finding.

    Each finding that is not ``pass`` names its check, its claim, its verdict and
    why, and, when it has one, the suggested rewrite. The one formatter of reviews:
    item details and reports use it alike.
    """
    lines = [f"evidence-risk score {review.score:.3f} below minScore {review.min_score:.3f}: {review.reason}"]
    for f in review.findings:
        if f.verdict != "pass":
            rewrite = f"\n    suggested rewrite: {f.suggested_rewrite!r}" if f.suggested_rewrite else ""
            lines.append(f"  {f.check} {f.claim_id}: {f.verdict} — {f.reason}{rewrite}")
    return "\n".join(lines)


def normalise_for_match(text: str) -> str:
    """Return ``text`` in the form claim containment is tested in.

    Case-folded, canonically decomposed (so NFC and NFD spellings compare equal,
    Unicode's canonical caseless matching) and with every run of whitespace
    collapsed to one space, trimmed at both ends.

    Args:
        text: Any string.

    Returns:
        The normalised string; ASCII input skips the Unicode passes.
    """
    if text.isascii():
        return " ".join(text.lower().split())
    folded = unicodedata.normalize("NFD", unicodedata.normalize("NFD", text).casefold())
    return " ".join(folded.split())


def _asserted(claim: EvidenceClaim, haystack: str) -> bool:
    if normalise_for_match(claim.text) in haystack:
        return True
    return any(normalise_for_match(phrase) in haystack for phrase in claim.match)


def _finding(claim: EvidenceClaim, sources: Mapping[str, EvidenceSource]) -> Finding:
    if not claim.source_ids:
        return unsourced_claim(claim)
    strongest = min(
        (sources[source_id] for source_id in claim.source_ids),
        key=lambda source: _TIER_RANK[source.declared_tier],
    )
    return evidence_strength(claim, strongest)


def evidence_strength(claim: EvidenceClaim, strongest: EvidenceSource) -> Finding:
    """The ``evidence_strength`` check: assertiveness against the strongest source's tier.

    Args:
        claim: An asserted claim that names at least one source.
        strongest: Its best-tiered source (the first one in ``source_ids`` order on a tie).

    Returns:
        The finding, with the verdict from ``EVIDENCE_STRENGTH``; a hedge as the
        rewrite for ``soften``, an attribution to ``strongest`` for
        ``flag_for_human_review``.
    """
    tier = strongest.declared_tier
    verdict = EVIDENCE_STRENGTH[(claim.assertiveness, tier)]
    where = f"{_TIER_PHRASE[tier]} ({strongest.id})"
    if verdict == "pass":
        reason = f"{claim.assertiveness} claim rests on {where}, strong enough"
        rewrite = None
    else:
        reason = (
            f"{claim.assertiveness} claim rests at best on {where}; a {claim.assertiveness} "
            f"claim passes only on {_PASSING_TIERS[claim.assertiveness]}"
        )
        rewrite = hedge(claim.text) if verdict == "soften" else attribute(claim.text, strongest)
    return Finding(
        check="evidence_strength",
        claim_id=claim.id,
        verdict=verdict,
        reason=reason,
        suggested_rewrite=rewrite,
    )


def unsourced_claim(claim: EvidenceClaim) -> Finding:
    """The ``unsourced_claim`` check: a claim that names no source.

    Args:
        claim: An asserted claim with empty ``source_ids``.

    Returns:
        The finding, with the verdict from ``UNSOURCED``; a possibility hedge as
        the rewrite for ``soften`` and none otherwise (removing needs no
        rewrite, and no wording attributes a claim to a source it lacks).
    """
    verdict = UNSOURCED[claim.assertiveness]
    rewrite = None
    if verdict == "soften":
        rewrite = f"It is possible that {_sentence_tail(claim.text)}"
    return Finding(
        check="unsourced_claim",
        claim_id=claim.id,
        verdict=verdict,
        reason=f"{claim.assertiveness} claim names no source",
        suggested_rewrite=rewrite,
    )


def hedge(claim_text: str) -> str:
    """Rewrite a claim as hedged: ``"Evidence suggests that <claim>"``.

    Args:
        claim_text: The claim as declared.

    Returns:
        The hedged sentence; the claim's first letter is lower-cased unless its
        first word looks like an acronym (``"NASA"``) or is ``"I"``.
    """
    return f"Evidence suggests that {_sentence_tail(claim_text)}"


def attribute(claim_text: str, source: EvidenceSource) -> str:
    """Rewrite a claim as attributed to its source and that source's tier.

    Args:
        claim_text: The claim as declared.
        source: The source to attribute it to; its ``url`` is quoted, else its id.

    Returns:
        ``"According to <tier phrase> (<url>), <claim>"``, for example
        ``"According to a community source (https://forum.example/t/1), the
        drug is safe."``.
    """
    where = source.url or source.id
    return f"According to {_TIER_PHRASE[source.declared_tier]} ({where}), {_sentence_tail(claim_text)}"


def _sentence_tail(claim_text: str) -> str:
    """The claim with whitespace collapsed and a sentence-initial capital lowered to follow a lead-in."""
    text = " ".join(claim_text.split())
    first_word = text.split(maxsplit=1)[0]
    # "NASA", "UK", "I", "COVID-19": lowering the first letter would misspell them.
    pronoun_i = first_word == "I" or first_word.startswith(("I'", "I\u2019"))
    if not first_word[0].isupper() or pronoun_i or any(c.isupper() for c in first_word[1:]):
        return text
    return text[0].lower() + text[1:]
