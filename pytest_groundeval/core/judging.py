"""What the citation kind needs from a judge and a coverage scorer (docs/citation.md, "Judge").

The citation kind (``core.kinds.citation``) asks a :class:`Judge` for one verdict per
cited paragraph and a :class:`Scorer` for one coverage score per cited paragraph. Both
are protocols: the HTTP clients of ``pytest_groundeval.judge`` (``JudgeClient``,
``CoverageScorer``) satisfy them, so does any object with the same methods (a
deterministic judge in a test, a judge supplied by an extension), and ``core`` never
imports ``pytest_groundeval.judge``. The rejudge adapter of the run history reaches its
judge through the same protocol.

This module also holds the judge's vocabulary, defined here once: the verdicts a judge
may give (:data:`JUDGE_VERDICTS`), what is recorded when its replies cannot be read
(:data:`UNPARSEABLE`) or it cannot be reached (:data:`UNJUDGED`), and the wire shape
of its input (:func:`judge_input`). Claim verdicts, which a target returns for its
claims, are another vocabulary: ``core.contract.CLAIM_VERDICTS``.

Standard library only; imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict, get_args, runtime_checkable

__all__ = [
    "JUDGE_LABELS",
    "JUDGE_VERDICTS",
    "RECORDED_VERDICTS",
    "UNJUDGED",
    "UNPARSEABLE",
    "USAGE_KEYS",
    "USAGE_RECORD_KEYS",
    "VERDICT_ORDER",
    "Judge",
    "JudgeInput",
    "JudgeResult",
    "JudgeVerdict",
    "ScoreResult",
    "Scorer",
    "SourceInput",
    "judge_input",
    "paragraph_label",
    "record_usage",
]

JudgeVerdict = Literal["supported", "partial", "unsupported", "wrong_speaker", "wrong_attribution"]
"""A verdict a judge may give a cited paragraph, and a human label may name (docs/citation.md)."""

JUDGE_VERDICTS: tuple[JudgeVerdict, ...] = get_args(JudgeVerdict)
"""The five judge verdicts, in report order (docs/citation.md). ``unparseable`` is not one: it is
what is recorded when no reply of the judge could be read."""

UNPARSEABLE = "unparseable"
"""The verdict recorded when no reply of the judge could be parsed (docs/citation.md); never supported."""

UNJUDGED = "unjudged"
"""The label of a paragraph the judge was asked about and could not answer (a ``judgeErrors`` entry);
never a recorded verdict (such a paragraph's ``verdict`` is null)."""

VERDICT_ORDER: tuple[JudgeVerdict, ...] = tuple(JUDGE_VERDICTS[i] for i in (3, 2, 4, 1, 0))
"""The judge verdicts from worst to best, the order a jury breaks ties by (docs/judges.md, "Juries"):
``wrong_speaker``, ``unsupported``, ``wrong_attribution``, ``partial``, ``supported``.

``wrong_speaker`` puts a source's words in another person's mouth, the error citation checks exist
to catch; ``unsupported`` cites sources that back none of the paragraph (it may be made up);
``wrong_attribution`` states what another source of the answer backs, but cites the wrong one;
``partial`` is backed in part; ``supported`` in full. The same five as :data:`JUDGE_VERDICTS`."""

RECORDED_VERDICTS: tuple[str, ...] = (*JUDGE_VERDICTS, UNPARSEABLE)
"""Every non-null ``verdict`` a paragraph record or a stored judgment may hold."""

JUDGE_LABELS: tuple[str, ...] = (*RECORDED_VERDICTS, UNJUDGED)
"""Every label of ``verdictDistribution`` and of the columns of ``judgeConfusion``, in order."""


# --------------------------------------------------------------------------- the judge's input


class SourceInput(TypedDict):
    """One source as the judge sees it."""

    marker: str
    """The marker inside the brackets: ``S1`` or ``1``."""
    metadata: dict[str, str]
    """Metadata fields, e.g. ``{"speaker": "Anna Berg", "party": "S"}``."""
    text: str
    """The source's full text; "" when the dataset has none."""


class JudgeInput(TypedDict):
    """The judge's input for one paragraph (:func:`judge_input`); the wire shape of a judge request."""

    paragraph: str
    """The paragraph, with its citation markers."""
    citedSources: list[SourceInput]
    """The sources the paragraph cites, in citation order."""
    otherSources: list[SourceInput]
    """Sources the answer cites elsewhere, not in this paragraph (for ``wrong_attribution``)."""
    metadataMismatch: list[str]
    """The deterministic metadata check's findings for the paragraph (a hint, docs/citation.md)."""


def judge_input(
    paragraph: str,
    cited: Sequence[Mapping[str, Any]],
    others: Sequence[Mapping[str, Any]] = (),
    metadata_mismatch: Sequence[str] = (),
) -> JudgeInput:
    """The judge's input object for one paragraph.

    Args:
        paragraph: The paragraph, with its markers.
        cited: ``[{"marker": str, "metadata": {str: str}, "text": str}]``, the sources the
            paragraph cites, in citation order; ``text`` is the source's full text ("" when
            the dataset has none). Missing keys become "" and ``{}``; values become strings.
        others: The same shape, for the answer's sources the paragraph does not cite.
        metadata_mismatch: The deterministic check's findings for this paragraph (docs/citation.md).

    Returns:
        ``{"paragraph", "citedSources", "otherSources", "metadataMismatch"}``, JSON built-ins.
    """

    def shape(source: Mapping[str, Any]) -> SourceInput:
        return {
            "marker": str(source.get("marker", "")),
            "metadata": {str(k): str(v) for k, v in dict(source.get("metadata") or {}).items()},
            "text": str(source.get("text") or ""),
        }

    return {
        "paragraph": paragraph,
        "citedSources": [shape(s) for s in cited],
        "otherSources": [shape(s) for s in others],
        "metadataMismatch": [str(m) for m in metadata_mismatch],
    }


# --------------------------------------------------------------------------- results


@dataclass
class JudgeResult:
    """A judge's outcome for one paragraph."""

    verdict: str | None
    """One of ``JUDGE_VERDICTS``, ``UNPARSEABLE``, or None when the judge could not be reached (see ``error``)."""
    rationale: str = ""
    """The judge's rationale, required (not empty) with a verdict; for ``unparseable``, why the last reply
    was rejected; "" when unjudged. A verdict without one is recorded as unjudged (a judge error)."""
    model: str = ""
    """The judge model asked (recorded as the paragraph's ``judgeModel``); when "" the judge's own
    :attr:`Judge.model` is recorded. So ``JudgeResult(verdict=None, error="...")`` is a complete result."""
    attempts: int = 0
    """Requests sent for this paragraph (0 for a cache hit)."""
    cached: bool = False
    """True when the verdict came from a cache."""
    error: str | None = None
    """Why the paragraph is unjudged (a ``judgeErrors`` entry), or None."""
    parse_failures: list[str] = field(default_factory=list)
    """Why each rejected reply was rejected, in order."""
    replies: int | None = None
    """HTTP 200 replies received for this paragraph (0 for a cache hit, or a judge that never answered);
    None for a judge that reports no usage at all (an extension's): its tokens are then unknown."""
    replies_without_usage: int = 0
    """Of ``replies``, those that carried no ``usage``: their tokens are unknown, never counted as 0."""
    prompt_tokens: int = 0
    """Prompt tokens of the replies that carried ``usage``, summed (docs/judges.md, "Tokens and cost")."""
    completion_tokens: int = 0
    """Completion tokens of the same replies, summed."""
    judges: list[JudgeResult] | None = None
    """A jury's result (``core.kinds.citation.jury.Jury``): each judge's own result, in the jury's order;
    None for one judge. The fields above are then the jury's, its tokens the sum of its judges'
    (docs/judges.md, "Juries")."""

    def to_record(self) -> dict[str, Any]:
        """The judge fields of a paragraph record (JSON built-ins; docs/citation.md, "Paragraph records").

        A jury's record also holds ``judges``: one such record per judge (without ``judges``).
        """
        record: dict[str, Any] = {
            "verdict": self.verdict,
            "rationale": self.rationale,
            "judgeModel": self.model,
            "judgeError": self.error,
            "judgeAttempts": self.attempts,
            "judgeCached": self.cached,
            "parseFailures": list(self.parse_failures),
            "judgeReplies": self.replies,
            "judgeRepliesWithoutUsage": self.replies_without_usage,
            "judgePromptTokens": self.prompt_tokens,
            "judgeCompletionTokens": self.completion_tokens,
        }
        if self.judges is not None:
            record["judges"] = [judge.to_record() for judge in self.judges]
        return record


@dataclass
class ScoreResult:
    """The coverage score of one paragraph."""

    score: float | None
    """Sigmoid of the logit, in [0, 1]; None when the scorer failed (see ``error``) or nothing was cited with text."""
    logit: float | None = None
    """The raw score the server returned."""
    truncated: bool = False
    """True when the sources' texts were cut to the scorer's cap."""
    error: str | None = None
    """Why there is no score (a ``scorerErrors`` entry), or None."""

    def to_record(self) -> dict[str, Any]:
        """The scorer fields of a paragraph record (JSON built-ins)."""
        return {
            "coverageScore": self.score,
            "coverageLogit": self.logit,
            "coverageTruncated": self.truncated,
            "scorerError": self.error,
        }


# --------------------------------------------------------------------------- protocols


@runtime_checkable
class Judge(Protocol):
    """A citation judge: one verdict per cited paragraph (docs/citation.md, "Judge").

    ``pytest_groundeval.judge.client.JudgeClient`` is the HTTP one. The citation kind
    awaits :meth:`judge` once per cited paragraph of an answer, all of an answer's
    paragraphs concurrently, on the event loop that runs the items.
    """

    model: str
    """The judge model's name (recorded with each verdict and in the run history)."""

    gave_up: str | None
    """Once the judge counts as gone (it left paragraphs unjudged too many times in a row): why,
    naming the judge; the session then stops as on a dead target. None while it answers."""

    async def judge(self, payload: JudgeInput) -> JudgeResult:
        """Judge one paragraph.

        Args:
            payload: The paragraph, its cited and other sources, and the deterministic findings
                (:func:`judge_input`).

        Returns:
            A :class:`JudgeResult`. A judge that is down, slow or talking nonsense does not
            raise: it returns ``verdict`` None with an ``error`` (unjudged), or :data:`UNPARSEABLE`.
        """
        ...

    async def close(self) -> None:
        """Release the judge's connections; called once, when the session ends."""
        ...


@runtime_checkable
class Scorer(Protocol):
    """A coverage scorer: one score in [0, 1] per cited paragraph against its cited sources' texts.

    ``pytest_groundeval.judge.scorer.CoverageScorer`` is the HTTP one.
    """

    gave_up: str | None
    """As :attr:`Judge.gave_up`, for paragraphs left without a score."""

    async def score(self, paragraph: str, texts: Sequence[str]) -> ScoreResult:
        """Score ``paragraph`` against the texts of the sources it cites.

        Returns:
            A :class:`ScoreResult`; a scorer that is down does not raise: ``score`` None with an ``error``.
        """
        ...

    async def close(self) -> None:
        """Release the scorer's connections; called once, when the session ends."""
        ...


USAGE_KEYS: tuple[str, ...] = ("promptTokens", "completionTokens", "replies", "repliesWithoutUsage")
"""The keys of one judge model's cell of ``judgeTokens`` (docs/judges.md, "Tokens and cost"), in order."""

USAGE_RECORD_KEYS: tuple[str, ...] = (
    "judgePromptTokens",
    "judgeCompletionTokens",
    "judgeReplies",
    "judgeRepliesWithoutUsage",
)
"""The paragraph record's keys (``JudgeResult.to_record``) behind ``USAGE_KEYS``, in the same order."""


def record_usage(record: Mapping[str, Any]) -> tuple[int, int, int, int] | None:
    """``(prompt, completion, replies, replies without usage)`` of one paragraph record a judge was asked about.

    A record whose ``judgeReplies`` is null (a judge that reports no usage) counts as one reply
    without usage: its tokens are unknown, never 0. None when the record has no ``judgeReplies``
    key at all (written before usage was recorded).

    Raises:
        ValueError: a usage field is not a whole number >= 0, or more replies lack usage than
            there are; the message names the field.
    """
    if "judgeReplies" not in record:
        return None
    if record["judgeReplies"] is None:
        return 0, 0, 1, 1
    values = []
    for key in USAGE_RECORD_KEYS:
        value = record.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{key} must be a whole number >= 0, got {value!r}")
        values.append(value)
    prompt, completion, replies, without = values
    if without > replies:
        raise ValueError(f"judgeRepliesWithoutUsage ({without}) exceeds judgeReplies ({replies})")
    return prompt, completion, replies, without


def paragraph_label(record: Mapping[str, Any]) -> str:
    """The judge's label of one paragraph record: its ``verdict``, or :data:`UNJUDGED` when it has none."""
    verdict = record.get("verdict")
    return verdict if isinstance(verdict, str) else UNJUDGED
