"""The judge path's CPU against a bare ``AsyncOpenAI`` loop (issue 22; goal: ratio <= 1.2).

Run: ``python benchmarks/bench_judge_cpu.py [--requests 600] [--rounds 5] [--concurrency 8] [--profile]``
(about a minute by default).

The mock provider (``groundeval mock``) runs in a process of its own, so its CPU is not
counted; this process is the client. Two subjects send the same ``--requests`` judge
requests (distinct paragraphs, one cited source each) to it, at most ``--concurrency``
in flight:

- (a) *bare*: a loop over the official ``openai`` SDK's ``AsyncOpenAI`` (SDK retries off,
  as the judge's), with the judge's own messages built beforehand and the same
  ``response_format`` ``json_schema`` and ``temperature`` 0; it reads each reply's content
  and decodes its JSON verdict, the least any judge must do;
- (b) *judge*: the plugin's ``JudgeClient.judge_many`` on the judge inputs: it builds
  each prompt, sends it through its limiter, reads the reply and its usage, and checks the
  verdict (docs/citation.md, docs/judges.md). No cache.
- (c) *assessed*, for information: the same paragraphs as a run's citation kind sends them
  (``core.kinds.citation.assess_paragraphs``: 60 answers of 10 paragraphs, each record's
  judge input built, the result checked and folded into the record), with the same judge.

The CPU of this process (``time.process_time``) is read around each subject's run; the
rounds interleave the two (a then b, then b then a, ...). Reported: CPU per request of
each, median over rounds, and the ratio b / a of the medians (the goal is at most 1.2).
``--profile`` runs (b) once more under cProfile and prints its top entries by own time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import time

import _harness as h
from bench_aimd import start_mock

from pytest_groundeval.core.judging import judge_input
from pytest_groundeval.core.kinds.citation import assess_paragraphs
from pytest_groundeval.judge.client import JudgeClient
from pytest_groundeval.judge.prompt import JUDGE_SCHEMA, JUDGE_SCHEMA_NAME, judge_messages

SOURCE = {
    "marker": "1",
    "metadata": {"speaker": "Anna Berg", "party": "S"},
    "text": "Anna Berg (S): Every municipality should have fibre to ninety percent of households by 2030, and the "
    "state should pay a third of the cost in sparsely populated areas.",
}
MODEL = "mock-judge"


def payloads(n: int) -> list:
    """``n`` distinct judge inputs: the paragraph carries its number."""
    return [
        judge_input(f"Anna Berg (S) wants fibre to ninety percent of households by 2030, case {i} [1].", [SOURCE])
        for i in range(n)
    ]


async def bare(url: str, messages: list, concurrency: int) -> int:
    """(a): the SDK alone; returns the verdicts read."""
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=0)
    gate = asyncio.Semaphore(concurrency)
    response_format = {"type": "json_schema", "json_schema": {"name": JUDGE_SCHEMA_NAME, "schema": JUDGE_SCHEMA,
                                                              "strict": True}}  # fmt: skip

    async def one(message: list) -> str:
        async with gate:
            completion = await client.chat.completions.create(
                model=MODEL, messages=message, response_format=response_format, temperature=0
            )
        return json.loads(completion.choices[0].message.content or "{}")["verdict"]

    try:
        verdicts = await asyncio.gather(*(one(m) for m in messages))
    finally:
        await client.close()
    return sum(1 for v in verdicts if v)


async def judged(url: str, inputs: list, concurrency: int) -> int:
    """(b): the plugin's judge client; returns the verdicts read."""
    async with JudgeClient(url, MODEL, concurrency=concurrency) as judge:
        results = await judge.judge_many(inputs)
    return sum(1 for r in results if r.verdict and r.error is None)


ANSWERS = 60
"""Answers of (c); the paragraphs are split evenly among them."""


def answers(n: int) -> list[tuple[str, list[dict]]]:
    """(c)'s answers: ``(answer text, paragraph records)``, ``n`` paragraphs in all, one marker each."""
    out = []
    per = max(1, n // ANSWERS)
    for start in range(0, n, per):
        texts = [
            f"Anna Berg (S) wants fibre to ninety percent of households by 2030, case {i} [1]."
            for i in range(start, min(start + per, n))
        ]
        records = [
            {"index": j, "text": t, "markers": ["1"], "metadataMismatch": [], "missingMarkers": [],
             "deterministicPass": True}
            for j, t in enumerate(texts)
        ]  # fmt: skip
        out.append(("\n\n".join(texts), records))
    return out


async def assessed(url: str, items: list[tuple[str, list[dict]]], concurrency: int) -> int:
    """(c): the citation kind's path; returns the verdicts read."""
    sources = {"1": {"text": SOURCE["text"], "metadata": SOURCE["metadata"]}}
    async with JudgeClient(url, MODEL, concurrency=concurrency) as judge:
        done = await asyncio.gather(
            *(assess_paragraphs(records, answer=text, sources=sources, judge=judge) for text, records in items)
        )
    return sum(1 for records in done for r in records if r["verdict"] and r["judgeError"] is None)


def cpu_of(coro_factory) -> tuple[float, int]:
    """CPU seconds of this process while one subject runs (a fresh event loop each), and its verdict count."""
    started = time.process_time()
    done = asyncio.run(coro_factory())
    return time.process_time() - started, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--profile", action="store_true", help="Profile (b) once more and print the top entries")
    args = parser.parse_args()
    n, c = args.requests, args.concurrency
    inputs = payloads(n)
    messages = [judge_messages(p) for p in inputs]
    items = answers(n)
    mock, url = start_mock()
    cpu: dict[str, list[float]] = {"bare": [], "judge": [], "assessed": []}
    try:
        # One warm-up of each: imports, the SDK's first client, the mock's first requests.
        cpu_of(lambda: bare(url, messages[:50], c))
        cpu_of(lambda: judged(url, inputs[:50], c))
        for round_ in range(args.rounds):
            order = ("bare", "judge", "assessed") if round_ % 2 == 0 else ("assessed", "judge", "bare")
            for subject in order:
                if subject == "bare":
                    seconds, done = cpu_of(lambda: bare(url, messages, c))
                elif subject == "judge":
                    seconds, done = cpu_of(lambda: judged(url, inputs, c))
                else:
                    seconds, done = cpu_of(lambda: assessed(url, items, c))
                if done != n:
                    raise SystemExit(f"{subject}: {done} of {n} verdicts read")
                cpu[subject].append(seconds)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            asyncio.run(judged(url, inputs, c))
            profiler.disable()
    finally:
        mock.terminate()
        mock.wait()
    a, b = h.median(cpu["bare"]), h.median(cpu["judge"])
    print(f"{n} judge requests, concurrency {c}, {args.rounds} interleaved rounds; {h.machine_note()}")
    print(
        h.table(
            ["subject", "client CPU ms/request, median (min–max)"],
            [
                ["(a) bare AsyncOpenAI loop", h.spread([s * 1000 / n for s in cpu["bare"]], "{:.3f}")],
                ["(b) JudgeClient.judge_many", h.spread([s * 1000 / n for s in cpu["judge"]], "{:.3f}")],
                ["(c) assess_paragraphs (a run's path)", h.spread([s * 1000 / n for s in cpu["assessed"]], "{:.3f}")],
            ],
        )
    )
    ratio = b / a
    print(f"ratio b / a: {ratio:.2f} (goal <= 1.2: {h.verdict(ratio, 1.2, at_most=True)})")
    print(f"ratio c / a: {h.median(cpu['assessed']) / a:.2f} (for information)")
    if args.profile:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue())


if __name__ == "__main__":
    main()
