"""A jury: several judges asked about every cited paragraph, one verdict by a policy (docs/judges.md, "Juries").

:class:`Jury` is a ``core.judging.Judge`` made of several: the citation kind asks it about
a paragraph as it asks one judge, and it asks each of its judges at once (each with its own
requests in flight, fallbacks and rate limiter: the HTTP ``JudgeClient`` holds those), checks
each answer as the kind checks a judge's (``assess.checked_judge_result``), and makes them
one with ``core.jury.combine``. Each judge's result stays on the jury's (``JudgeResult.judges``),
so every judge's verdict, rationale and requests reach the paragraph record, the report and
the history beside the jury's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ...judging import Judge, JudgeInput, JudgeResult
from ...jury import DEFAULT_POLICY, POLICIES, combine, jury_name
from .assess import checked_judge_result

__all__ = ["Jury"]


class Jury:
    """Judges asked together; a ``core.judging.Judge`` whose verdict is their policy's (``core.jury``).

    Args:
        members: Two judges or more, each with a distinct ``model``.
        policy: One of ``core.jury.POLICIES``.

    Raises:
        ValueError: fewer than two judges, two with the same model, or an unknown policy.
    """

    def __init__(self, members: Sequence[Judge], policy: str = DEFAULT_POLICY) -> None:
        models = [str(getattr(member, "model", "") or "") for member in members]
        if len(members) < 2:
            raise ValueError(f"a jury needs two judges or more, got {len(members)}")
        if any(not model for model in models):
            raise ValueError("every judge of a jury needs a model name")
        twice = sorted({model for model in models if models.count(model) > 1})
        if twice:
            raise ValueError(f"judge model {twice[0]!r} is in the jury twice: each judge needs its own model")
        if policy not in POLICIES:
            raise ValueError(f"{policy!r} is not a jury policy; expected one of {', '.join(POLICIES)}")
        self.members: list[Judge] = list(members)
        """The judges, in the order their records are kept."""
        self.models: list[str] = models
        """Their models, in that order."""
        self.policy = policy
        """How their verdicts are made one."""
        self.model: str = jury_name(models, policy)
        """The jury's name, recorded as each paragraph's ``judgeModel`` (``jury(majority: a, b)``)."""
        self._gave_up: str | None = None

    def __repr__(self) -> str:
        return f"Jury({self.members!r}, policy={self.policy!r})"

    @property
    def gave_up(self) -> str | None:
        """Why the jury counts as gone: every judge of it gave up (``Judge.gave_up``); None while one answers.

        A jury with a judge gone goes on with the others: that judge's paragraphs are counted as
        its unjudged ones (``verdictDistributionByModel``), the jury's verdict is the others'.
        """
        if self._gave_up is not None:
            return self._gave_up
        reasons = [getattr(member, "gave_up", None) for member in self.members]
        if all(reasons):
            return "every judge of the jury gave up: " + "; ".join(str(reason) for reason in reasons)
        return None

    @gave_up.setter
    def gave_up(self, reason: str | None) -> None:
        """Set as ``Judge.gave_up`` may be: a reason given here wins over the judges' own."""
        self._gave_up = reason

    async def judge(self, payload: JudgeInput) -> JudgeResult:
        """Ask every judge about one paragraph, at once; the jury's result with each judge's (``core.jury.combine``)."""

        async def ask(member: Judge) -> JudgeResult:
            return checked_judge_result(member, await member.judge(payload))

        results = await asyncio.gather(*(ask(member) for member in self.members))
        return combine(results, self.policy, self.model)

    def pop_notices(self) -> list[str]:
        """The judges' notices not handed out yet (``JudgeClient.pop_notices``), in the jury's order."""
        notices: list[str] = []
        for member in self.members:
            pop = getattr(member, "pop_notices", None)
            if callable(pop):
                notices.extend(str(notice) for notice in pop())
        return notices

    async def close(self) -> None:
        """Close every judge's connections."""
        for member in self.members:
            await member.close()
