"""A jury's verdict: several judges' verdicts on one paragraph made one (docs/judges.md, "Juries").

Every paragraph is asked of each judge of a jury; a *policy* makes their verdicts one:

- ``majority`` (the default): the verdict most judges gave; a tie goes to the worse verdict;
- ``unanimous``: ``supported`` only when every judge that answered said so; otherwise the
  verdict most of the other judges gave (a tie to the worse), so one dissent is enough to
  refuse ``supported`` and the dissenters' majority says why;
- ``strictest``: the worst verdict any judge gave.

"Worse" is :data:`core.judging.VERDICT_ORDER` (worst first). With two judges the three
policies agree on every paragraph: two verdicts either agree or tie, and a tie goes to
the worse. They part with three judges or more: ``supported, supported, partial`` is
``supported`` by majority, ``partial`` unanimous or strictest; ``partial, partial,
wrong_speaker`` is ``partial`` by majority or unanimous, ``wrong_speaker`` strictest.

Judges that did not answer (left the paragraph unjudged, or gave no readable reply) have
no vote: the policy is taken over the judges that gave a verdict. When none did, the
paragraph is ``unparseable`` if a judge replied with something unreadable, else unjudged
(a judge error of the jury). Each judge's own label stays on its own record and is
counted per judge (``verdictDistributionByModel``), never dropped (:func:`combine`).

Standard library and ``core.judging`` only, so the plugin's options can name the policies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .judging import JUDGE_VERDICTS, UNJUDGED, UNPARSEABLE, VERDICT_ORDER, JudgeResult

__all__ = [
    "DEFAULT_POLICY",
    "MOCK_JUDGE_MODELS",
    "POLICIES",
    "combine",
    "jury_name",
    "jury_verdict",
    "mock_judge_model_problem",
    "worst",
]

POLICIES: tuple[str, ...] = ("majority", "unanimous", "strictest")
"""The values of ``--eval-judge-policy`` (docs/judges.md, "Juries")."""

DEFAULT_POLICY = "majority"
"""The policy when none is given."""

_RANK: dict[str, int] = {verdict: rank for rank, verdict in enumerate(VERDICT_ORDER)}


def _checked(verdicts: Sequence[str]) -> None:
    if not verdicts:
        raise ValueError("a jury's verdict needs at least one judge's verdict")
    for verdict in verdicts:
        if verdict not in _RANK:
            raise ValueError(f"{verdict!r} is not a judge verdict; expected one of {', '.join(JUDGE_VERDICTS)}")


def worst(verdicts: Sequence[str]) -> str:
    """The worst of ``verdicts`` by :data:`core.judging.VERDICT_ORDER`.

    Raises:
        ValueError: ``verdicts`` is empty or holds something that is not a judge verdict.
    """
    _checked(verdicts)
    return min(verdicts, key=_RANK.__getitem__)


def _majority(verdicts: Sequence[str]) -> str:
    counts = Counter(verdicts)
    most = max(counts.values())
    return worst([verdict for verdict, n in counts.items() if n == most])


def jury_verdict(verdicts: Sequence[str], policy: str = DEFAULT_POLICY) -> str:
    """The jury's verdict from its judges' verdicts under ``policy`` (module docstring).

    Args:
        verdicts: The verdicts of the judges that answered, each one of ``JUDGE_VERDICTS``, any order.
        policy: One of :data:`POLICIES`.

    Raises:
        ValueError: no verdict, a value that is not a judge verdict, or an unknown policy.
    """
    _checked(verdicts)
    if policy == "majority":
        return _majority(verdicts)
    if policy == "strictest":
        return worst(verdicts)
    if policy == "unanimous":
        dissent = [verdict for verdict in verdicts if verdict != "supported"]
        return _majority(dissent) if dissent else "supported"
    raise ValueError(f"{policy!r} is not a jury policy; expected one of {', '.join(POLICIES)}")


def jury_name(models: Sequence[str], policy: str = DEFAULT_POLICY) -> str:
    """The jury as its verdicts name it (``judgeModel``, the history's judge): ``jury(majority: a, b)``."""
    return f"jury({policy}: {', '.join(models)})"


def combine(results: Sequence[JudgeResult], policy: str, name: str) -> JudgeResult:
    """The jury's result on one paragraph from its judges' results (module docstring).

    Args:
        results: One result per judge, in the jury's order; each ``model`` names its judge.
        policy: One of :data:`POLICIES`.
        name: The jury's name (:func:`jury_name`), recorded as the result's ``model``.

    Returns:
        A :class:`JudgeResult` whose ``judges`` are ``results``; ``verdict`` by the policy over
        the judges that gave a verdict (else :data:`UNPARSEABLE` when one replied unreadably,
        else None with ``error`` naming each judge's error); ``rationale`` lists each judge's
        label; ``attempts`` sums the judges' requests; ``cached`` when every judge's was; the
        tokens and replies sum the judges' (a judge that reports no usage counts as one reply
        without usage, as ``core.judging.record_usage`` reads its record).

    Raises:
        ValueError: no result, or an unknown policy.
    """
    if not results:
        raise ValueError("a jury needs at least one judge's result")
    if policy not in POLICIES:
        raise ValueError(f"{policy!r} is not a jury policy; expected one of {', '.join(POLICIES)}")
    answered = [result.verdict for result in results if result.verdict in JUDGE_VERDICTS]
    labels = "; ".join(f"{result.model}: {result.verdict or UNJUDGED}" for result in results)
    out = JudgeResult(
        verdict=None,
        model=name,
        attempts=sum(result.attempts for result in results),
        cached=all(result.cached for result in results),
        judges=list(results),
    )
    for result in results:
        if result.replies is None:
            out.replies = (out.replies or 0) + 1
            out.replies_without_usage += 1
        else:
            out.replies = (out.replies or 0) + result.replies
            out.replies_without_usage += result.replies_without_usage
            out.prompt_tokens += result.prompt_tokens
            out.completion_tokens += result.completion_tokens
    if answered:
        verdict = jury_verdict([v for v in answered if v is not None], policy)
        out.verdict = verdict
        out.rationale = f"{policy} of {len(answered)} of {len(results)} judge(s) -> {verdict} ({labels})"
    elif any(result.verdict == UNPARSEABLE for result in results):
        out.verdict = UNPARSEABLE
        out.rationale = f"no judge of the jury gave a readable verdict ({labels})"
    else:
        out.error = "no judge of the jury answered: " + "; ".join(
            f"{result.model}: {result.error or 'no verdict'}" for result in results
        )
    return out


MOCK_JUDGE_MODELS = ("mock-judge", "mock-judge-strict")
"""The judges the mock provider has (docs/mock.md): the default one and the strict one."""


def mock_judge_model_problem(model: str) -> str | None:
    """Why ``model`` cannot name a judge of the mock provider, or None.

    The mock answers every model name, but only ``MOCK_JUDGE_MODELS`` (each with an optional
    ``+fault=…``, docs/mock.md) are its judges: any other name would label the mock's heuristic
    verdicts, tokens and cost as that model's (a calibration of "gpt-4o" that measured the mock).
    """
    if model.strip().split("+", 1)[0] in MOCK_JUDGE_MODELS:
        return None
    return (
        f"{model.strip()!r} is not a judge of the mock provider ({', '.join(MOCK_JUDGE_MODELS)}): the mock's "
        "heuristic verdicts would be reported as that model's; to judge with that model give its URL "
        "(--eval-judge-url, or --judge-url for groundeval calibrate) instead of mock"
    )
