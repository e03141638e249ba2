"""qa items: a question whose answer must be grounded in the expected evidence (docs/dataset.md).

Runs one generate call. Judged by docs/scoring.md: each expected evidence string
must occur in a retrieved span, each claim the target marks ``supported`` must
be true by the item's truths, and each true, cited claim must be marked
``supported``. Adds retrievalRecall, claimSupportPrecision and claimSupportRecall
to the metrics (and ``qaClaims``, so a target that says nothing cannot pass).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from ..contract import strip_markers
from ..drilldown import answer_extra, errored_extra
from ..evidence import OptionalEvidenceBlock
from ..outcome import ItemOutcome
from ..scoring import best_truth, claim_is_true, evidence_found
from ..text import listed, shorten
from ..wire import WireModel
from .base import ItemBase, Kind, ManifestIndex, MetricSpec, NonEmpty, RuleError, Tally, ratio

if TYPE_CHECKING:
    from ..dataset import Dataset
    from ..metrics import Metrics
    from ..runner import ItemRunner
    from ..scoring import EvidenceSearch


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
    Annotated[NonEmpty, Tag("string-evidence")] | Annotated[ExpectedEvidence, Tag("document-evidence")],
    Discriminator(
        _expected_evidence_tag,
        custom_error_type="expected_evidence_type",
        custom_error_message='expected a string or a {"document": name, "text": str} object',
    ),
]


class QaItem(ItemBase):
    """A question whose answer must be grounded in the expected evidence (docs/dataset.md, docs/scoring.md)."""

    kind: Literal["qa"]
    """Always ``qa``."""
    question: NonEmpty
    """Sent to the target's ``POST /v1/generate``."""
    find: str | None = None
    """Corpus label to restrict retrieval to, or null for all documents."""
    expected_evidence: list[ExpectedEvidenceValue] = Field(default_factory=list)
    """Strings that must occur in retrieved evidence spans; a ``{document, text}`` pins the document."""
    truths: list[NonEmpty] = Field(default_factory=list)
    """True statements; a claim the target marks ``supported`` must be one of them (docs/scoring.md)."""
    evidence: OptionalEvidenceBlock = None
    """Optional evidence-risk block reviewed against the answer (docs/evidence-risk.md)."""

    @property
    def expected_texts(self) -> list[tuple[str | None, str]]:
        """``expected_evidence`` as ``(document name or None, text)`` pairs."""
        return [(None, e) if isinstance(e, str) else (e.document, e.text) for e in self.expected_evidence]


@dataclass
class QaTally(Tally):
    """Counters of qa outcomes, summed over items."""

    evidence_expected: int = 0
    evidence_found: int = 0
    claims_returned: int = 0
    claims_supported: int = 0
    claims_supported_true: int = 0
    claims_true_cited: int = 0
    claims_true_cited_supported: int = 0


def _silent(metrics: Metrics) -> str | None:
    """Why an unmeasured claim metric FAILs: qa items were selected and no claim came back.

    The reason tells a silent target from one that never answered (docs/gate.md,
    "n/a and silent targets"): when every item of the run errored (the target is
    down, refused the key, or its worker crashed) no qa item ran, and saying the
    target "returned no claims" would hide the cause; the errors name it.
    """
    qa = metrics.items_by_kind.get("qa", 0)
    if qa == 0 or metrics.qa_claims != 0:
        return None
    items = "1 qa item" if qa == 1 else f"{qa} qa items"
    if metrics.errors == 0:
        return f"{items} ran but the target returned no claims: nothing supported, nothing to measure"
    if metrics.errors >= metrics.items:
        every = "the qa item errored" if qa == 1 else f"all {qa} qa items errored"
        return f"no qa item ran: {every} (see errors), so no claim was measured"
    errored = "1 item" if metrics.errors == 1 else f"{metrics.errors} items"
    return (
        f"no claim measured for the {items} ({errored} of the run errored, see errors): "
        "nothing supported, nothing to measure"
    )


RETRIEVAL_RECALL = "retrievalRecall"
"""The metric a baseline report arms (docs/gate.md: the baseline check)."""


_DRILLDOWN = (
    ("evidence found", "evidenceFound", "evidenceExpected"),
    ("supported claims true", "claimsSupportedTrue", "claimsSupported"),
    ("true cited claims supported", "claimsTrueCitedSupported", "claimsTrueCited"),
)
"""The HTML per-item view's counts of a qa outcome: label, numerator and denominator wire keys."""


class QaKind(Kind):
    name = "qa"
    model = QaItem
    tally_type = QaTally
    union_tags = frozenset({"string-evidence", "document-evidence"})
    junit_figures = (
        "evidenceFound",
        "evidenceExpected",
        "claimsReturned",
        "claimsSupported",
        "claimsSupportedTrue",
        "claimsTrueCited",
        "claimsTrueCitedSupported",
    )
    uses_baseline = True
    metrics = (
        MetricSpec(
            "retrieval_recall",
            "Expected evidence strings found in retrieved spans / expected evidence strings, summed over "
            "qa items; an errored qa item counts its expected strings as not found.",
        ),
        MetricSpec(
            "claim_support_precision",
            "Claims marked supported that are true / claims marked supported, summed over qa items.",
            default_bound=0.90,
            silent=_silent,
        ),
        MetricSpec(
            "claim_support_recall",
            "True, cited claims marked supported / true, cited claims, summed over qa items.",
            default_bound=0.90,
            silent=_silent,
        ),
        MetricSpec(
            "qa_claims",
            "Claims returned over all qa items, whatever their verdict: with qa items run and none "
            "returned, the claim metrics are n/a because the target said nothing, which the gate fails "
            "rather than skips.",
            direction=None,
            type_="count",
        ),
    )

    def check_manifest(self, item: QaItem, where: str, index: ManifestIndex) -> None:
        for j, expected in enumerate(item.expected_evidence):
            if isinstance(expected, ExpectedEvidence) and expected.document not in index.documents:
                raise RuleError(
                    f"document {expected.document!r} is not a corpus name; names: {index.listing(index.documents)}",
                    f"{where}.expectedEvidence[{j}].document",
                )

    def check_corpus(self, item: QaItem, where: str, search: EvidenceSearch) -> None:
        # A string no span could hold would fail every target: the dataset is wrong (docs/dataset.md).
        for j, (document, text) in enumerate(item.expected_texts):
            if not search.occurs(text, document):
                place = f"document {document!r}" if document is not None else "any corpus document"
                raise RuleError(
                    f"the expected evidence string {shorten(text, 160)!r} does not occur in the canonical text of "
                    f"{place} (compared as the scorer compares: NFC, case-folded, white space collapsed; "
                    "docs/scoring.md), so no target could retrieve it; fix the string or the corpus",
                    f"{where}.expectedEvidence[{j}]" + (".text" if document is not None else ""),
                )

    async def run(self, runner: ItemRunner, item: QaItem, dataset: Dataset) -> ItemOutcome:
        await runner.ensure_ingested(dataset)
        response, figures = await runner.generate(item)
        spans = runner.spans(response, dataset)
        missing: list[str] = []
        found = 0
        expected_found: list[tuple[str, bool]] = []
        for expected in item.expected_evidence:
            if isinstance(expected, str):
                text, texts = expected, [s[2] for s in spans]
            else:
                text, texts = expected.text, [s[2] for s in spans if s[1] == expected.document]
            hit = evidence_found(text, texts)
            expected_found.append((text, hit))
            if hit:
                found += 1
            else:
                missing.append(text)

        supported = supported_true = true_cited = true_cited_supported = 0
        false_supported: list[str] = []
        rejected_true: list[str] = []
        truth_of_claims: list[bool] = []
        for claim in response["claims"]:
            is_true = claim_is_true(strip_markers(claim["text"]), item.truths)
            truth_of_claims.append(is_true)
            is_supported = claim["verdict"] == "supported"
            if is_supported:
                supported += 1
                if is_true:
                    supported_true += 1
                else:
                    truth, cov = best_truth(strip_markers(claim["text"]), item.truths)
                    false_supported.append(
                        f"  {shorten(claim['text'], 160)!r}\n    closest truth ({cov:.2f} coverage): "
                        f"{shorten(truth, 160) if truth else '(none)'!r}"
                    )
            if is_true and claim["markers"]:
                true_cited += 1
                if is_supported:
                    true_cited_supported += 1
                else:
                    rejected_true.append(
                        f"  {shorten(claim['text'], 160)!r} cited {claim['markers']} marked {claim['verdict']}"
                    )

        problems = []
        if missing:
            retrieved = [f"  [{m}] {d}: {shorten(t, 120)!r}" for m, d, t in spans] or ["  (no evidence)"]
            problems.append(
                f"{len(missing)} of {len(item.expected_evidence)} expected evidence strings not retrieved:\n"
                + "\n".join(listed([f"  {shorten(m, 160)!r}" for m in missing]))
                + "\nretrieved evidence:\n"
                + "\n".join(listed(retrieved))
            )
        if false_supported:
            problems.append(
                f"{len(false_supported)} claim(s) marked supported are not true by the truths:\n"
                + "\n".join(listed(false_supported))
            )
        if rejected_true:
            problems.append(
                f"{len(rejected_true)} true, cited claim(s) not marked supported:\n" + "\n".join(listed(rejected_true))
            )
        review = runner.review(item, response["answer"], problems)
        return ItemOutcome(
            id=item.id,
            kind="qa",
            passed=not problems,
            detail="\n".join(problems)
            or f"{found}/{len(item.expected_evidence)} evidence found; "
            f"{supported_true}/{supported} supported claims true",
            evidence_expected=len(item.expected_evidence),
            evidence_found=found,
            claims_returned=len(response["claims"]),
            claims_supported=supported,
            claims_supported_true=supported_true,
            claims_true_cited=true_cited,
            claims_true_cited_supported=true_cited_supported,
            evidence_review=review,
            extra=(
                answer_extra(item, response, spans, claim_truth=truth_of_claims, expected=expected_found)
                if runner.drilldown
                else {}
            ),
            **figures,
        )

    def errored(self, item: QaItem, error: str) -> ItemOutcome:
        # The expected evidence stays in the recall denominator, as not found.
        return ItemOutcome(
            id=item.id,
            kind="qa",
            passed=False,
            error=error,
            detail=error,
            evidence_expected=len(item.expected_evidence),
            extra=errored_extra(item),
        )

    def drilldown_counts(self, outcome: Mapping[str, Any]) -> dict[str, str]:
        """Found/expected evidence and the two claim ratios, each shown when its denominator is not 0."""
        return {
            label: f"{outcome.get(num, 0)}/{outcome.get(den, 0)}" for label, num, den in _DRILLDOWN if outcome.get(den)
        }

    def tally(self, tally: QaTally, outcome: ItemOutcome) -> None:
        tally.evidence_expected += outcome.evidence_expected
        if not outcome.errored:
            tally.evidence_found += outcome.evidence_found
        tally.claims_returned += outcome.claims_returned
        tally.claims_supported += outcome.claims_supported
        tally.claims_supported_true += outcome.claims_supported_true
        tally.claims_true_cited += outcome.claims_true_cited
        tally.claims_true_cited_supported += outcome.claims_true_cited_supported

    def results(self, tally: QaTally) -> dict[str, Any]:
        return {
            "retrieval_recall": ratio(tally.evidence_found, tally.evidence_expected),
            "claim_support_precision": ratio(tally.claims_supported_true, tally.claims_supported),
            "claim_support_recall": ratio(tally.claims_true_cited_supported, tally.claims_true_cited),
            "qa_claims": tally.claims_returned,
        }

    def rate_parts(self, tally: QaTally) -> dict[str, tuple[int, int]]:
        return {
            "retrieval_recall": (tally.evidence_found, tally.evidence_expected),
            "claim_support_precision": (tally.claims_supported_true, tally.claims_supported),
            "claim_support_recall": (tally.claims_true_cited_supported, tally.claims_true_cited),
        }


KIND = QaKind()
