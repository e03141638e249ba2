"""The citation kind (docs/citation.md): how a citation item runs, and what it adds to the metrics.

With a recorded ``response`` the item is judged without calling the target; else the
target's generate response is. The deterministic checks (``checks``) decide the item;
when the runner carries a judge or a coverage scorer (``core.judging``), ``assess``
adds their figures to each cited paragraph, and ``tally`` folds them into the metrics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...drilldown import ANSWER_CHARS, answer_extra
from ...outcome import ItemOutcome
from ..base import Kind, ManifestIndex, RuleError, UnitTable
from .assess import assess_citation, source_details
from .checks import expected_sources, judge_citation, source_map
from .model import CitationItem
from .tally import METRICS, CitationTally, tally_outcome, tally_rate_parts, tally_results, tally_unit_tables

if TYPE_CHECKING:
    from ...dataset import Dataset
    from ...runner import ItemRunner

__all__ = ["KIND", "CitationKind"]


class CitationKind(Kind):
    """Paragraph-level citation accuracy: the deterministic checks, then the judge and scorer if any."""

    name = "citation"
    model = CitationItem
    tally_type = CitationTally
    metrics = METRICS

    def check_manifest(self, item: CitationItem, where: str, index: ManifestIndex) -> None:
        if item.response is not None:
            return
        for j, source in enumerate(item.sources):
            if source.document is not None and source.document not in index.documents:
                raise RuleError(
                    f"document {source.document!r} is not a corpus name; names: {index.listing(index.documents)}",
                    f"{where}.sources[{j}].document",
                )

    def needs_target(self, item: CitationItem) -> bool:
        return item.response is None

    async def run(self, runner: ItemRunner, item: CitationItem, dataset: Dataset) -> ItemOutcome:
        await runner.ensure_ingested(dataset)
        response, figures = await runner.generate(item)
        target_sources = response.get("sources")
        outcome = judge_citation(
            item,
            answer=response["answer"],
            sources=source_map(item, response["evidence"], target_sources),
            mention_regex=dataset.manifest.mention_regex,
            expected=expected_sources(item, response["evidence"], target_sources),
        )
        drilldown = answer_extra(item, response, runner.spans(response, dataset)) if runner.drilldown else {}
        if runner.drilldown and target_sources:
            # A target's own sources (a mapped API's, docs/byo.md) are in no corpus: their text and metadata
            # as the judge sees them are kept, the history's ``sources``, so that ``groundeval rejudge``
            # judges a stored paragraph against what it cited (docs/history.md).
            drilldown["sources"] = source_details(item, response["evidence"], dataset.documents, target_sources)
        outcome = await assess_citation(
            runner,
            item,
            outcome,
            answer=response["answer"],
            evidence=response["evidence"],
            dataset=dataset,
            target_sources=target_sources,
        )
        return outcome.model_copy(update={**figures, "extra": {**outcome.extra, **drilldown}})

    def run_offline(self, item: CitationItem, dataset: Dataset) -> ItemOutcome:
        if item.response is None:
            return super().run_offline(item, dataset)
        outcome = judge_citation(
            item,
            answer=item.response.answer,
            sources=source_map(item, None),
            mention_regex=dataset.manifest.mention_regex,
        )
        shown = {"answer": item.response.answer[:ANSWER_CHARS], "tags": list(item.tags)}
        if item.question:
            shown["question"] = item.question[:ANSWER_CHARS]
        return outcome.model_copy(update={"extra": {**outcome.extra, **shown}})

    async def run_offline_async(self, runner: ItemRunner, item: CitationItem, dataset: Dataset) -> ItemOutcome:
        outcome = self.run_offline(item, dataset)
        assert item.response is not None  # run_offline raised otherwise
        return await assess_citation(runner, item, outcome, answer=item.response.answer, evidence=None, dataset=dataset)

    def tally_any(self, tally: CitationTally, outcome: ItemOutcome) -> None:
        """Fold the citation figures of any outcome's ``extra`` into ``tally`` (``tally.tally_outcome``).

        Raises:
            ValueError: a figure has the wrong type or exceeds the judged count.
        """
        tally_outcome(tally, outcome)

    def results(self, tally: CitationTally) -> dict[str, Any]:
        """The citation metrics of ``tally`` (``tally.tally_results``)."""
        return tally_results(tally)

    def rate_parts(self, tally: CitationTally) -> dict[str, tuple[Any, int]]:
        """The citation ratios' parts (``tally.tally_rate_parts``)."""
        return tally_rate_parts(tally)

    def unit_tables(self, tally: CitationTally) -> dict[str, UnitTable]:
        """Judge agreement and kappa over paragraphs (``tally.tally_unit_tables``)."""
        return tally_unit_tables(tally)


KIND = CitationKind()
"""The citation kind, as the registry (``core.kinds.KIND_MODULES``) finds it."""
