"""review items: a recorded answer reviewed against an evidence block, no target call (docs/evidence-risk.md).

Runs offline: ``review_answer`` scores the recorded answer against the block;
the item passes when the score reaches the block's ``minScore``. An item with no
block yet (absent, ``null`` or ``{}``) is not reviewed: it scores 1.0 with
``reviewed: false`` and says so, so a dataset can be adopted before every row is
annotated (docs/evidence-risk.md); a malformed block is still a dataset error. Its score feeds
evidenceRiskScore, which every kind's evidence block contributes to (``core.metrics``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ..evidence import OptionalEvidenceBlock, describe_review, review_answer
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
    evidence: OptionalEvidenceBlock = None
    """The block the answer is reviewed against; none (absent, ``null`` or ``{}``) means not yet annotated."""


class ReviewKind(Kind):
    name = "review"
    model = ReviewItem

    def needs_target(self, item: ReviewItem) -> bool:
        return False

    def run_offline(self, item: ReviewItem, dataset: Dataset) -> ItemOutcome:
        review = review_answer(item.evidence, item.response.answer)
        if not review.passed:
            detail = describe_review(review)
        elif not review.reviewed:
            detail = f"not reviewed (score {review.score:.3f}, reviewed: false): {review.reason}"
        else:
            detail = f"evidence-risk score {review.score:.3f}"
        return ItemOutcome(
            id=item.id,
            kind="review",
            passed=review.passed,
            detail=detail,
            evidence_review=review,
            extra={"tags": list(item.tags)},
        )


KIND = ReviewKind()
