"""The deterministic OpenAI-compatible mock provider (docs/mock.md).

Start it from async code with :class:`MockProvider`, from sync code (fixtures)
with :class:`ThreadedMockProvider`, or from a shell with
``groundeval mock --port N`` / ``python -m pytest_groundeval.mock`` (``cli/mock.py``).
Behaviour, fault grammar, seeded noise and wire shapes are documented in ``docs/mock.md``.
"""

from __future__ import annotations

from pytest_groundeval.mock.behaviour import count_tokens, decompose, embed_text, generate_answer, score_logit
from pytest_groundeval.mock.faults import FaultPlan, FaultSpecError, parse_fault_spec
from pytest_groundeval.mock.noise import AppliedNoise, Noise, NoiseSettings, noise_for, noised_answer, request_key
from pytest_groundeval.mock.server import DEFAULT_LOG_LIMIT, MockProvider, RequestRecord
from pytest_groundeval.mock.threaded import ThreadedMockProvider

__all__ = [
    "DEFAULT_LOG_LIMIT",
    "AppliedNoise",
    "FaultPlan",
    "FaultSpecError",
    "MockProvider",
    "Noise",
    "NoiseSettings",
    "RequestRecord",
    "ThreadedMockProvider",
    "count_tokens",
    "decompose",
    "embed_text",
    "generate_answer",
    "noise_for",
    "noised_answer",
    "parse_fault_spec",
    "request_key",
    "score_logit",
]
