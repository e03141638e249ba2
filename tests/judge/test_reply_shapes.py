"""Judge replies as real providers send them: recorded shapes, one per provider behaviour (docs/judges.md).

Each body below is written from the provider's documentation of its chat completion
response (the page is named above it), filled with a judge's answer. Every shape is
read twice: by the reader alone (``read_verdict`` on the decoded body) and end to end,
served over real HTTP by a replay server to ``JudgeClient`` (the official ``openai``
SDK), which must record the same verdict, or ``unparseable`` with the reason kept.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pytest_groundeval.core.judging import UNPARSEABLE, judge_input
from pytest_groundeval.judge.client import JudgeClient
from pytest_groundeval.judge.parse import UnparseableReply, read_verdict

PAYLOAD = judge_input("Lars Holm (M) said the market has already reached most towns [2].", [])


def answer(verdict: str, rationale: str = "Source [2] quotes Lars Holm saying exactly this.", **extra: Any) -> str:
    return json.dumps({"verdict": verdict, "rationale": rationale, **extra})


def completion(message: dict, *, finish: str = "stop", model: str = "judge", **top: Any) -> dict:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": 412, "completion_tokens": 38, "total_tokens": 450}, **top,
    }  # fmt: skip


# fmt: off
SHAPES: dict[str, tuple[Any, str, str]] = {
    # --- OpenAI chat completions ------------------------------------------------------------------
    # https://platform.openai.com/docs/api-reference/chat/object: content, refusal, annotations,
    # usage with its token details, service_tier, system_fingerprint.
    "openai-structured": (
        completion(
            {"content": answer("supported"), "refusal": None, "annotations": []},
            model="gpt-4o-2024-08-06", service_tier="default", system_fingerprint="fp_1",
        ),
        "supported", "",
    ),
    # https://platform.openai.com/docs/guides/structured-outputs ("Refusals"): content null, refusal set.
    "openai-refusal": (
        completion({"content": None, "refusal": "I'm sorry, I cannot assist with that request."}),
        UNPARSEABLE, "the model refused",
    ),
    # https://platform.openai.com/docs/guides/reasoning: the completion budget spent on reasoning
    # tokens leaves no visible answer (finish_reason length).
    "openai-reasoning-budget": (
        completion({"content": "", "refusal": None}, finish="length", model="o3-mini",
                   usage={"prompt_tokens": 412, "completion_tokens": 800, "total_tokens": 1212,
                          "completion_tokens_details": {"reasoning_tokens": 800}}),
        UNPARSEABLE, "the reply is empty (finish_reason 'length'): the completion budget ran out",
    ),
    # --- Azure OpenAI ----------------------------------------------------------------------------
    # https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/content-filter: annotations
    # prompt_filter_results (per prompt) and content_filter_results (per choice) around the answer.
    "azure-filters": (
        {**completion({"content": "```json\n" + answer("partial") + "\n```"}, model="gpt-4o"),
         "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {
             "hate": {"filtered": False, "severity": "safe"}, "violence": {"filtered": False, "severity": "safe"}}}]},
        "partial", "",
    ),
    # The same page: a filtered completion comes back with finish_reason content_filter and no answer.
    "azure-filtered": (
        {"id": "chatcmpl-2", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o",
         "choices": [{"index": 0, "finish_reason": "content_filter",
                      "content_filter_results": {"violence": {"filtered": True, "severity": "medium"}}}]},
        UNPARSEABLE, "finish_reason 'content_filter'",
    ),
    # --- vLLM --------------------------------------------------------------------------------------
    # https://docs.vllm.ai/en/v0.8.3/features/reasoning_outputs.html: with --reasoning-parser the
    # reasoning comes back as reasoning_content beside content.
    "vllm-reasoning-content": (
        completion({"content": answer("wrong_speaker"),
                    "reasoning_content": "The paragraph credits Anna Berg; source [2] is Lars Holm's."},
                   model="deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"),
        "wrong_speaker", "",
    ),
    # https://docs.vllm.ai/en/stable/features/reasoning_outputs/: the field is now named reasoning.
    "vllm-reasoning": (
        completion({"content": answer("supported"), "reasoning": "Source [2] says it word for word."},
                   model="Qwen/Qwen3-8B"),
        "supported", "",
    ),
    # The same page: without a reasoning parser, the <think> block stays in the content (Qwen3
    # thinks by default).
    "vllm-think-in-content": (
        completion({"content": "<think>\nDoes [2] talk about drought insurance? It does not.\n</think>\n\n"
                               + answer("unsupported")}, model="Qwen/Qwen3-8B"),
        "unsupported", "",
    ),
    # The same page: a budget that ends inside the reasoning leaves content null.
    "vllm-reasoning-only": (
        completion({"content": None, "reasoning_content": "Let me check each cited source in turn. First"},
                   finish="length", model="Qwen/Qwen3-8B"),
        UNPARSEABLE, "only reasoning came back",
    ),
    # --- DeepSeek ----------------------------------------------------------------------------------
    # https://api-docs.deepseek.com/guides/reasoning_model: deepseek-reasoner answers with
    # reasoning_content at the level of content; usage counts reasoning tokens.
    "deepseek-reasoner": (
        completion({"content": "```json\n" + answer("supported") + "\n```",
                    "reasoning_content": "The quote matches source [2] and its speaker."},
                   model="deepseek-reasoner",
                   usage={"prompt_tokens": 412, "completion_tokens": 160, "total_tokens": 572,
                          "prompt_cache_hit_tokens": 0, "prompt_cache_miss_tokens": 412,
                          "completion_tokens_details": {"reasoning_tokens": 120}}),
        "supported", "",
    ),
    # https://huggingface.co/deepseek-ai/DeepSeek-R1 ("Usage Recommendations"): the template starts the
    # answer with "<think>\n", so a server without a reasoning parser returns the reasoning and a lone
    # </think> before the answer.
    "deepseek-r1-template": (
        completion({"content": "The words are in source [1], but the paragraph cites [2].\n</think>\n\n"
                               + answer("wrong_attribution")}, model="DeepSeek-R1"),
        "wrong_attribution", "",
    ),
    # --- Ollama (OpenAI-compatible /v1) ---------------------------------------------------------------
    # https://docs.ollama.com/api/openai-compatibility and https://docs.ollama.com/capabilities/thinking:
    # a thinking model's trace in the message's reasoning field, system_fingerprint fp_ollama; a small
    # local model writes the verdict capitalised and adds keys of its own.
    "ollama-thinking": (
        completion({"content": answer("Supported", confidence=0.9, evidence=["[2]"]),
                    "reasoning": "Checking [2]. It matches."}, model="qwen3:8b", system_fingerprint="fp_ollama"),
        "supported", "",
    ),
    # The same pages: without JSON mode a chat model wraps the JSON in prose and a fence.
    "ollama-prose-fence": (
        completion({"content": "Sure! Here is my assessment:\n\n```json\n" + answer("partial")
                               + "\n```\n\nLet me know if you need anything else."},
                   model="llama3.1:8b", system_fingerprint="fp_ollama"),
        "partial", "",
    ),
    # --- LiteLLM proxy -------------------------------------------------------------------------------
    # https://docs.litellm.ai/docs/reasoning_content: the proxy standardises reasoning_content (and
    # thinking_blocks for Anthropic models) in the message.
    "litellm-reasoning": (
        completion({"content": answer("unsupported"), "reasoning_content": "Nothing in [2] about insurance.",
                    "thinking_blocks": [{"type": "thinking", "thinking": "Nothing in [2].", "signature": "x"}],
                    "provider_specific_fields": {}, "tool_calls": None, "function_call": None},
                   model="claude-sonnet", system_fingerprint=None),
        "unsupported", "",
    ),
    # A model behind the proxy that changes its mind mid-reply: two different answers.
    "litellm-two-answers": (
        completion({"content": answer("supported") + "\n" + answer("partial", "On reflection only half.")}),
        UNPARSEABLE, "2 different JSON values",
    ),
    # --- What no provider documents, but proxies and small models send ------------------------------
    "gateway-html-200": (
        "<!doctype html><html><body><h1>502 Bad Gateway</h1></body></html>", UNPARSEABLE, "not a chat completion",
    ),
    "empty-choices": ({**completion({"content": "x"}), "choices": []}, UNPARSEABLE, "no choices"),
    "unknown-verdict": (completion({"content": answer("mostly_supported")}), UNPARSEABLE, "unknown verdict"),
    "empty-rationale": (completion({"content": answer("supported", "  ")}), UNPARSEABLE, "empty rationale"),
    "bare-json-in-prose": (
        completion({"content": "My verdict: " + answer("supported")}), UNPARSEABLE, "not a JSON object",
    ),
}
# fmt: on


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_reader_reads_each_recorded_shape(name):
    body, verdict, reason = SHAPES[name]
    if verdict == UNPARSEABLE:
        with pytest.raises(UnparseableReply, match=re.escape(reason)):
            read_verdict(body)
    else:
        assert read_verdict(body)[0] == verdict


class _Replay(BaseHTTPRequestHandler):
    """Answers ``POST /<shape>/v1/chat/completions`` with that recorded shape, as its provider would."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = SHAPES[self.path.split("/")[1]][0]
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if isinstance(body, str) else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def replay():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Replay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("name", list(SHAPES))
def test_each_recorded_shape_end_to_end_through_the_sdk(replay, name):
    _, verdict, reason = SHAPES[name]

    async def run():
        async with JudgeClient(f"{replay}/{name}/v1", "judge", parse_retries=0) as judge:
            return await judge.judge(PAYLOAD)

    result = asyncio.run(run())
    assert result.error is None and result.attempts == 1
    assert result.verdict == verdict
    if verdict == UNPARSEABLE:
        assert reason in result.parse_failures[0] and reason in result.rationale
    else:
        assert result.rationale and result.parse_failures == []
