"""Citation metrics as pure functions over paragraph records (docs/citation.md, "Metrics").

A *paragraph record* is one dict per cited paragraph, as
:func:`.paragraphs.assess_paragraphs` returns it: the deterministic fields
(``deterministicPass``, ``metadataMismatch``, …) and, when a judge or scorer ran,
``verdict``, ``judgeModel``, ``judgeError``, ``coverageScore``, ``scorerError`` and
``expectedVerdict``. Every function takes an iterable of records over the whole run
and returns JSON built-ins; a rate with an empty denominator is None (n/a), never 0
or 1.

Denominators never drop a paragraph: a paragraph the judge was asked about counts
in every judge rate whether it got a verdict, an ``unparseable`` or a judge error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from .client import UNPARSEABLE
from .prompt import VERDICTS

__all__ = [
    "UNJUDGED",
    "catch_split",
    "citation_metadata_accuracy",
    "citation_metrics",
    "citation_supported_rate",
    "cohen_kappa",
    "confusion_matrix",
    "coverage_score_mean",
    "judge_agreement",
    "judge_errors",
    "scorer_errors",
    "unparseable_rate",
    "verdict_distribution",
    "wrong_speaker_rate",
]

UNJUDGED = "unjudged"
"""The label of a paragraph whose judge could not be reached, in the distribution and the confusion matrix."""

Record = Mapping[str, Any]


def _asked(records: Iterable[Record]) -> list[Record]:
    return [r for r in records if r.get("judgeModel")]


def _label(record: Record) -> str:
    verdict = record.get("verdict")
    return verdict if isinstance(verdict, str) else UNJUDGED


def _rate(hits: int, total: int) -> float | None:
    return hits / total if total else None


def citation_metadata_accuracy(records: Iterable[Record]) -> float | None:
    """Paragraphs passing the deterministic checks / judged paragraphs; None with none (gate-able)."""
    records = list(records)
    return _rate(sum(1 for r in records if r.get("deterministicPass")), len(records))


def citation_supported_rate(records: Iterable[Record]) -> float | None:
    """``supported`` verdicts / paragraphs the judge was asked about (errors and unparseable included); None without a judge."""
    asked = _asked(records)
    return _rate(sum(1 for r in asked if r.get("verdict") == "supported"), len(asked))


def wrong_speaker_rate(records: Iterable[Record]) -> float | None:
    """``wrong_speaker`` verdicts / paragraphs the judge was asked about; None without a judge."""
    asked = _asked(records)
    return _rate(sum(1 for r in asked if r.get("verdict") == "wrong_speaker"), len(asked))


def unparseable_rate(records: Iterable[Record]) -> float | None:
    """``unparseable`` verdicts / paragraphs the judge was asked about; None without a judge."""
    asked = _asked(records)
    return _rate(sum(1 for r in asked if r.get("verdict") == UNPARSEABLE), len(asked))


def judge_errors(records: Iterable[Record]) -> int:
    """Paragraphs the judge was asked about and left unjudged (down, rate-limited, timed out)."""
    return sum(1 for r in _asked(records) if r.get("verdict") is None)


def scorer_errors(records: Iterable[Record]) -> int:
    """Paragraphs the scorer was asked about and gave no score (``scorerError`` set)."""
    return sum(1 for r in records if r.get("scorerError"))


def coverage_score_mean(records: Iterable[Record]) -> float | None:
    """Mean ``coverageScore`` over scored paragraphs; None when none was scored (scorer errors are counted apart)."""
    scores = [r["coverageScore"] for r in records if isinstance(r.get("coverageScore"), (int, float))]
    return sum(scores) / len(scores) if scores else None


def verdict_distribution(records: Iterable[Record]) -> dict[str, int]:
    """Count per verdict over paragraphs the judge was asked about, every verdict listed (``unparseable``, ``unjudged`` too)."""
    counts = Counter(_label(r) for r in _asked(records))
    return {label: counts.get(label, 0) for label in (*VERDICTS, UNPARSEABLE, UNJUDGED)}


def _labelled(records: Iterable[Record]) -> list[tuple[str, str]]:
    return [(str(r["expectedVerdict"]), _label(r)) for r in _asked(records) if r.get("expectedVerdict")]


def judge_agreement(records: Iterable[Record]) -> float | None:
    """Share of human-labelled paragraphs whose verdict equals ``expectedVerdict``; None with no labelled paragraph.

    ``unparseable`` and unjudged paragraphs count as disagreements (they are in the denominator).
    """
    pairs = _labelled(records)
    return _rate(sum(1 for expected, got in pairs if expected == got), len(pairs))


def confusion_matrix(records: Iterable[Record]) -> dict[str, dict[str, int]]:
    """``{expectedVerdict: {judge's label: count}}`` over labelled paragraphs (rows and columns only where non-zero)."""
    matrix: dict[str, dict[str, int]] = {}
    for expected, got in _labelled(records):
        row = matrix.setdefault(expected, {})
        row[got] = row.get(got, 0) + 1
    return matrix


def cohen_kappa(records: Iterable[Record]) -> float | None:
    """Cohen's κ between the human labels and the judge over labelled paragraphs.

    ``κ = (p_o − p_e) / (1 − p_e)`` with ``p_o`` the observed agreement and ``p_e``
    the agreement expected from the two label distributions. None with no labelled
    paragraph; 1.0 when both sides use a single, identical label (``p_e = 1``, perfect
    agreement), 0.0 when ``p_e = 1`` but they differ.
    """
    pairs = _labelled(records)
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(1 for e, g in pairs if e == g) / n
    expected_counts = Counter(e for e, _ in pairs)
    got_counts = Counter(g for _, g in pairs)
    chance = sum(expected_counts[k] * got_counts.get(k, 0) for k in expected_counts) / (n * n)
    if chance >= 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - chance) / (1.0 - chance)


def catch_split(records: Iterable[Record]) -> dict[str, int]:
    """How the deterministic checks and the judge divide the catches (docs/citation.md).

    Over paragraphs the judge was asked about:

    - ``wrongSpeaker``: ``wrong_speaker`` verdicts;
    - ``wrongSpeakerDeterministic``: of those, paragraphs the metadata check had already
      flagged (non-empty ``metadataMismatch``);
    - ``wrongSpeakerJudgeOnly``: of those, paragraphs the metadata check passed;
    - ``deterministicCatches``: paragraphs failing the deterministic checks;
    - ``judgeCatches``: paragraphs with a verdict other than ``supported`` (``unparseable``
      and unjudged are not catches);
    - ``judgeOnlyCatches``: judge catches among paragraphs the deterministic checks passed;
    - ``deterministicOnlyCatches``: deterministic failures the judge called ``supported``.
    """
    asked = _asked(records)
    wrong_speaker = [r for r in asked if r.get("verdict") == "wrong_speaker"]
    caught = [r for r in asked if r.get("verdict") in VERDICTS and r.get("verdict") != "supported"]
    return {
        "wrongSpeaker": len(wrong_speaker),
        "wrongSpeakerDeterministic": sum(1 for r in wrong_speaker if r.get("metadataMismatch")),
        "wrongSpeakerJudgeOnly": sum(1 for r in wrong_speaker if not r.get("metadataMismatch")),
        "deterministicCatches": sum(1 for r in asked if not r.get("deterministicPass")),
        "judgeCatches": len(caught),
        "judgeOnlyCatches": sum(1 for r in caught if r.get("deterministicPass")),
        "deterministicOnlyCatches": sum(
            1 for r in asked if not r.get("deterministicPass") and r.get("verdict") == "supported"
        ),
    }


def citation_metrics(records: Iterable[Record]) -> dict[str, Any]:
    """Every citation metric of a run in one dict (camelCase keys, JSON built-ins).

    Keys: ``citationMetadataAccuracy``, ``citationSupportedRate``, ``wrongSpeakerRate``,
    ``unparseableRate``, ``coverageScoreMean``, ``judgeAgreement``, ``judgeKappa``,
    ``judgeErrors``, ``scorerErrors``, ``citationParagraphsAsked`` (paragraphs sent to the
    judge), ``judgeLabelled`` (labelled paragraphs the judge was asked about),
    ``verdictDistribution``, ``judgeConfusion``, ``catchSplit``.
    """
    records = list(records)
    return {
        "citationMetadataAccuracy": citation_metadata_accuracy(records),
        "citationSupportedRate": citation_supported_rate(records),
        "wrongSpeakerRate": wrong_speaker_rate(records),
        "unparseableRate": unparseable_rate(records),
        "coverageScoreMean": coverage_score_mean(records),
        "judgeAgreement": judge_agreement(records),
        "judgeKappa": cohen_kappa(records),
        "judgeErrors": judge_errors(records),
        "scorerErrors": scorer_errors(records),
        "citationParagraphsAsked": len(_asked(records)),
        "judgeLabelled": len(_labelled(records)),
        "verdictDistribution": verdict_distribution(records),
        "judgeConfusion": confusion_matrix(records),
        "catchSplit": catch_split(records),
    }
