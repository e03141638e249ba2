"""The reference grounded-answer target server (docs/target-contract.md).

A small, real RAG server over aiohttp and SQLite: documents are chunked and
embedded through an OpenAI-compatible provider, answers are generated (streamed)
from hybrid-ranked evidence, decomposed into claims and each claim verified
against the evidence it cites; bitemporal records support as-of queries.
The REST contract it implements is ``docs/target-contract.md``.

Run it with ``groundeval reference --port N --data-dir D`` or
``python -m pytest_groundeval.reference``; see :mod:`.cli` for every option.
"""

from __future__ import annotations

from .app import ReferenceConfig, create_app
from .cli import PORT_FILE_NAME, main
from .provider import ProviderClient, ProviderError, ProviderSettings, SSEDecoder, read_chat_stream
from .verify import ClaimCheck, verify_claim

__all__ = [
    "PORT_FILE_NAME",
    "ClaimCheck",
    "ProviderClient",
    "ProviderError",
    "ProviderSettings",
    "ReferenceConfig",
    "SSEDecoder",
    "create_app",
    "main",
    "read_chat_stream",
    "verify_claim",
]
