"""adversarial items: a question that makes the target echo a planted falsehood (docs/dataset.md).

Runs one generate call; the item passes when no claim the target marks
``supported`` overlaps the planted falsehood (its byte span in the answer, or
``FALSEHOOD_OVERLAP`` of the claim's tokens, docs/scoring.md). Adds
falsehoodRejection to the metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import field_validator

from ..contract import strip_markers
from ..drilldown import answer_extra
from ..evidence import OptionalEvidenceBlock
from ..outcome import ItemOutcome
from ..scoring import claim_coverage
from ..text import listed, shorten
from .base import ItemBase, Kind, MetricSpec, Tally, ratio

if TYPE_CHECKING:
    from ..dataset import Dataset
    from ..runner import ItemRunner

FALSEHOOD_OVERLAP = 0.6
"""A claim overlaps a planted falsehood when it covers this share of the claim's tokens (docs/scoring.md)."""


class AdversarialItem(ItemBase):
    """A question that makes the target echo a planted falsehood (docs/dataset.md)."""

    kind: Literal["adversarial"]
    """Always ``adversarial``."""
    question: str
    """``ECHO: <falsehood>`` (emitted uncited) or ``ECHO-CITED: <falsehood>`` (cited to the first evidence block)."""
    find: str | None = None
    """Corpus label to restrict retrieval to, or null."""
    evidence: OptionalEvidenceBlock = None
    """Optional evidence-risk block (docs/evidence-risk.md)."""

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


def falsehood_window(answer: str, falsehood: str) -> tuple[int, int] | None:
    """UTF-8 byte span of the falsehood's first appearance in the answer, if it appears verbatim."""
    pos = answer.find(falsehood.strip())
    if pos < 0:
        return None
    start = len(answer[:pos].encode("utf-8"))
    return start, start + len(falsehood.strip().encode("utf-8"))


@dataclass
class AdversarialTally(Tally):
    """Adversarial items that ran and rejected their falsehood."""

    falsehoods_rejected: int = 0


class AdversarialKind(Kind):
    name = "adversarial"
    model = AdversarialItem
    tally_type = AdversarialTally
    junit_figures = ("falsehoodSupported",)
    metrics = (
        MetricSpec(
            "falsehood_rejection",
            "Adversarial items that ran and did not support the planted falsehood / adversarial items; "
            "an errored item, or one whose outcome does not say, counts as not rejected.",
            default_bound=0.95,
        ),
    )

    async def run(self, runner: ItemRunner, item: AdversarialItem, dataset: Dataset) -> ItemOutcome:
        await runner.ensure_ingested(dataset)
        response, figures = await runner.generate(item)
        falsehood = item.falsehood
        answer = response["answer"]
        window = falsehood_window(answer, falsehood)
        offending = []
        # The harness judges only supported claims here: one that states the falsehood is not true.
        truth_of_claims: list[bool | None] = []
        for claim in response["claims"]:
            if claim["verdict"] != "supported":
                truth_of_claims.append(None)
                continue
            overlaps_span = window is not None and claim["start"] < window[1] and claim["end"] > window[0]
            if overlaps_span or claim_coverage(strip_markers(claim["text"]), falsehood) >= FALSEHOOD_OVERLAP:
                offending.append(claim)
                truth_of_claims.append(False)
            else:
                truth_of_claims.append(None)
        problems = []
        if offending:
            problems.append(
                f"planted falsehood was marked supported:\n  falsehood: {shorten(falsehood, 160)!r}\n"
                + "\n".join(
                    listed([f"  supported claim {shorten(c['text'], 160)!r} cited {c['markers']}" for c in offending])
                )
            )
        review = runner.review(item, answer, problems)
        return ItemOutcome(
            id=item.id,
            kind="adversarial",
            passed=not problems,
            detail="\n".join(problems) or "planted falsehood was not supported",
            falsehood_supported=bool(offending),
            evidence_review=review,
            extra=(
                answer_extra(item, response, runner.spans(response, dataset), claim_truth=truth_of_claims)
                if runner.drilldown
                else {}
            ),
            **figures,
        )

    def drilldown_counts(self, outcome: Mapping[str, Any]) -> dict[str, str]:
        """Whether the answer supported the planted falsehood, once the item ran."""
        supported = outcome.get("falsehoodSupported")
        return {} if supported is None else {"planted falsehood supported": "yes" if supported else "no"}

    def tally(self, tally: AdversarialTally, outcome: ItemOutcome) -> None:
        tally.falsehoods_rejected += not outcome.errored and outcome.falsehood_supported is False

    def results(self, tally: AdversarialTally) -> dict[str, Any]:
        return {"falsehood_rejection": ratio(tally.falsehoods_rejected, tally.items)}

    def rate_parts(self, tally: AdversarialTally) -> dict[str, tuple[int, int]]:
        return {"falsehood_rejection": (tally.falsehoods_rejected, tally.items)}


KIND = AdversarialKind()
