"""citation items: paragraph-level citation accuracy (docs/citation.md), one package per concern.

- ``model``: the item, its recorded answer, its sources' metadata and paragraph labels;
- ``text``: paragraphs, markers and mentions of an answer (a leaf: imports no other module here);
- ``checks``: the deterministic checks (``missingSource``, ``metadataMismatch``) of one answer;
- ``assess``: the judge's and the coverage scorer's figures per cited paragraph, reached
  through the ``core.judging`` protocols (``core`` never imports ``pytest_groundeval.judge``);
- ``jury``: ``Jury``, several judges asked about every paragraph, one verdict by a policy;
- ``tally``: the tally of outcomes and the citation metrics, Cohen's κ among them;
- ``kind``: ``CitationKind``, how an item runs, and ``KIND``, which the registry
  (``core.kinds.KIND_MODULES``) finds here.

None of these modules imports pytest.
"""

from __future__ import annotations

from .assess import (
    MAX_OTHER_SOURCES,
    assess_citation,
    assess_paragraphs,
    judge_payload,
    paragraph_labels,
    source_details,
    with_assessment,
)
from .checks import (
    NO_CITATION_DETAIL,
    PARAGRAPH_TEXT_CHARS,
    ExpectedSource,
    ParagraphVerdict,
    disagreements,
    expected_source_findings,
    expected_sources,
    judge_citation,
    judge_paragraph,
    mention_mismatch,
    source_map,
)
from .jury import Jury
from .kind import KIND, CitationKind
from .model import CitationItem, ParagraphLabel, RecordedResponse, RecordedSource, SourceMetadata
from .tally import (
    CATCHES,
    JUDGE_BOUNDS,
    METRICS,
    UNPARSEABLE_CEILING,
    CitationTally,
    cohen_kappa,
    paragraph_catches,
    paragraph_metrics,
    tally_outcome,
    tally_results,
)
from .text import MentionTimeout, cited_markers, mentions, normalise_field, paragraphs

__all__ = [
    "CATCHES",
    "JUDGE_BOUNDS",
    "KIND",
    "MAX_OTHER_SOURCES",
    "METRICS",
    "NO_CITATION_DETAIL",
    "PARAGRAPH_TEXT_CHARS",
    "UNPARSEABLE_CEILING",
    "CitationItem",
    "CitationKind",
    "CitationTally",
    "ExpectedSource",
    "Jury",
    "MentionTimeout",
    "ParagraphLabel",
    "ParagraphVerdict",
    "RecordedResponse",
    "RecordedSource",
    "SourceMetadata",
    "assess_citation",
    "assess_paragraphs",
    "cited_markers",
    "cohen_kappa",
    "disagreements",
    "expected_source_findings",
    "expected_sources",
    "judge_citation",
    "judge_paragraph",
    "judge_payload",
    "mention_mismatch",
    "mentions",
    "normalise_field",
    "paragraph_catches",
    "paragraph_labels",
    "paragraph_metrics",
    "paragraphs",
    "source_details",
    "source_map",
    "tally_outcome",
    "tally_results",
    "with_assessment",
]
