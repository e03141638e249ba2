"""review items: a recorded answer reviewed against an evidence block, no target call (docs/evidence-risk.md).

Runs offline: ``review_answer`` scores the recorded answer against the block;
the item passes when the score reaches the block's ``minScore``. Its score feeds
evidenceRiskScore, which every kind's evidence block contributes to (``core.metrics``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ..evidence import EvidenceBlock, describe_review, review_answer
from ..outcome import ItemOutcome
from .base import ItemBase, Kind, RecordedAnswer

if TYPE_CHECKING:
    from ..dataset import Dataset


class ReviewItem(ItemBase):
    """A recorded answer reviewed against an evidence block; no target call (docs/evidence-risk.md)."""

    kind: Literal["review"]
    """Always ``review``."""
    response: RecordedAnswer
    """The recorded answer."""
    evidence: EvidenceBlock
    """The block the answer is reviewed against."""


class ReviewKind(Kind):
    name = "review"
    model = ReviewItem

    def needs_target(self, item: ReviewItem) -> bool:
        return False

    def run_offline(self, item: ReviewItem, dataset: Dataset) -> ItemOutcome:
        review = review_answer(item.evidence, item.response.answer)
        return ItemOutcome(
            id=item.id,
            kind="review",
            passed=review.passed,
            detail=describe_review(review) if not review.passed else f"evidence-risk score {review.score:.3f}",
            evidence_review=review,
        )


KIND = ReviewKind()
