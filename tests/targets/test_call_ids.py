"""Every target call of an item carries the run and item ids (docs/target-contract.md, "Run and item ids")."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from pytest_groundeval.core.runner import ItemRunner, agent_extra
from pytest_groundeval.targets import HttpTarget
from pytest_groundeval.targets.protocol import call_attempt, call_ids

Reply = sys.modules["groundeval_scripted_server"].Reply  # loaded by conftest.py from servers/scripted.py

GOOD = json.dumps({"answer": "Alpha.", "evidence": [], "claims": []}).encode()
RUN = "0123456789abcdef0123456789abcdef"


def _headers(scripted) -> dict[str, str]:
    return {k.lower(): v for k, v in scripted.requests[-1][2].items()}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_http_calls_carry_the_ids_of_their_context(scripted, call_target, mode: str) -> None:
    scripted.reply = Reply(body=GOOD)
    target = HttpTarget(scripted.url, "key")
    token = call_ids.set((RUN, "qa-7"))
    try:
        call_target(target, mode)
    finally:
        call_ids.reset(token)
    headers = _headers(scripted)
    assert headers["x-groundeval-run-id"] == RUN and headers["x-groundeval-item-id"] == "qa-7"
    call_target(target, mode)  # outside an item: no ids
    assert "x-groundeval-run-id" not in _headers(scripted) and "x-groundeval-item-id" not in _headers(scripted)
    target.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_http_calls_of_an_attempt_carry_its_number(scripted, call_target, mode: str) -> None:
    """Under --eval-repeat N each call says which attempt it belongs to; without repeats no header."""
    scripted.reply = Reply(body=GOOD)
    target = HttpTarget(scripted.url, "key")
    token = call_attempt.set(2)
    try:
        call_target(target, mode)
    finally:
        call_attempt.reset(token)
    assert _headers(scripted)["x-groundeval-attempt"] == "2"
    call_target(target, mode)
    assert "x-groundeval-attempt" not in _headers(scripted)
    target.close()


class _SyncOnly:
    """A target with blocking methods only: the runner calls it in an executor thread."""

    def __init__(self, inner: HttpTarget) -> None:
        self.inner = inner

    def generate(self, question, find):
        return self.inner.generate(question, find)


def test_a_sync_target_called_from_the_runner_sees_the_items_ids(scripted) -> None:
    scripted.reply = Reply(body=GOOD)
    target = HttpTarget(scripted.url, "key")
    runner = ItemRunner(_SyncOnly(target))

    async def one() -> None:
        call_ids.set((RUN, "citation-3"))  # as _run_target_item does, in the item's task
        await runner.call("generate", "q", None)

    asyncio.run(one())
    assert _headers(scripted)["x-groundeval-item-id"] == "citation-3"
    target.close()


def test_tool_traces_keep_ids_and_counts_only() -> None:
    responses = [
        {"toolTrace": [{"tool": "search", "hits": ["d1", 4], "calls": 2, "text": "a payload"}], "iterations": 2},
        {"toolTrace": [{"tool": "sql", "hitCount": 0}], "iterations": 1},
        {},
    ]
    assert agent_extra(responses) == {
        "toolTrace": [{"tool": "search", "calls": 2, "hits": ["d1", 4]}, {"tool": "sql", "hitCount": 0}],
        "iterations": 3,
    }
    assert agent_extra([{}, {"answer": "x"}]) == {}
