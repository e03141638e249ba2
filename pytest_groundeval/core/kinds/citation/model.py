"""The citation item model (docs/citation.md): an item, its recorded answer, its sources and labels.

A citation item asks a question (or carries a recorded ``response``), names the
metadata of the sources an answer may cite, and may carry human labels of the
recorded answer's paragraphs to measure a judge against.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ...evidence import OptionalEvidenceBlock
from ...judging import JudgeVerdict
from ...wire import WireModel
from ..base import ItemBase, MarkerName, RecordedAnswer, RuleError

__all__ = ["CitationItem", "ParagraphLabel", "RecordedResponse", "RecordedSource", "SourceMetadata"]


class RecordedSource(WireModel):
    """One source of a recorded answer, as its citation markers name it."""

    marker: MarkerName
    """The marker inside the brackets: ``S1`` or ``1``."""
    document: str | None = None
    """Document name the source came from."""
    text: str | None = None
    """The source's text (scored for coverage, docs/citation.md)."""
    start: Annotated[int, Field(ge=0)] | None = None
    """UTF-8 byte offset of the span in the document's canonical text."""
    end: Annotated[int, Field(ge=0)] | None = None
    """UTF-8 byte offset, exclusive."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Metadata fields (e.g. ``speaker``, ``party``)."""


class RecordedResponse(RecordedAnswer):
    """A recorded production answer with its sources (docs/citation.md)."""

    sources: list[RecordedSource] = Field(default_factory=list)
    """The sources the answer's markers cite."""


class SourceMetadata(WireModel):
    """Metadata of a source a citation may cite, checked against ``mentionPattern`` (docs/citation.md)."""

    marker: MarkerName
    """The marker inside the brackets: ``S1`` or ``1``."""
    document: str | None = None
    """The corpus document behind the marker, if fixed."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Field name → value, e.g. ``{"speaker": "Anna Lind", "party": "S"}``."""


class ParagraphLabel(WireModel):
    """A human label of one paragraph of a recorded answer (docs/citation.md, "A judge measured against people")."""

    index: Annotated[int, Field(ge=0)]
    """The paragraph's position among the answer's non-empty paragraphs, from 0 (as ``extra.citationParagraphs``)."""
    expected_verdict: JudgeVerdict
    """The verdict a person gave the paragraph."""


class CitationItem(ItemBase):
    """Paragraph-level citation accuracy (docs/citation.md)."""

    kind: Literal["citation"]
    """Always ``citation``."""
    question: str | None = None
    """Sent to the target; optional when a recorded ``response`` is given."""
    response: RecordedResponse | None = None
    """A recorded answer judged without calling the target."""
    find: str | None = None
    """Corpus label to restrict retrieval to, or null."""
    sources: list[SourceMetadata] = Field(default_factory=list)
    """Metadata of the sources the answer may cite."""
    evidence: OptionalEvidenceBlock = None
    """Optional evidence-risk block (docs/evidence-risk.md)."""
    paragraph_labels: list[ParagraphLabel] = Field(default_factory=list)
    """Human labels of the recorded answer's paragraphs, to measure a judge against (docs/citation.md)."""
    origin: dict[str, str | int] | None = None
    """Where a generated item came from, e.g. ``{"strategy": "seeded", "document": …, "record": 3}``; not evaluated."""

    @model_validator(mode="after")
    def _question_or_response(self) -> CitationItem:
        if not self.question and self.response is None:
            raise RuleError("a citation item needs a question or a recorded response", "question")
        labelled: dict[int, int] = {}
        for i, label in enumerate(self.paragraph_labels):
            if self.response is None:
                raise RuleError(
                    "paragraphLabels label the paragraphs of a recorded response; this item has none",
                    f"paragraphLabels[{i}]",
                )
            if label.index in labelled:
                raise RuleError(
                    f"index {label.index} (the answer's paragraph {label.index + 1}) is already labelled by "
                    f"paragraphLabels[{labelled[label.index]}]",
                    f"paragraphLabels[{i}].index",
                )
            labelled[label.index] = i
        seen: dict[str, int] = {}
        for i, source in enumerate(self.sources):
            if source.marker in seen:
                raise RuleError(
                    f"marker {source.marker!r} is already described by sources[{seen[source.marker]}]",
                    f"sources[{i}].marker",
                )
            seen[source.marker] = i
        return self
