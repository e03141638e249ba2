"""The reference grounded-answer target server (docs/target-contract.md).

A small, real RAG server over aiohttp and SQLite: documents are chunked and
embedded through an OpenAI-compatible provider, answers are generated (streamed)
from hybrid-ranked evidence, decomposed into claims and each claim verified
against the evidence it cites; bitemporal records support as-of queries.
The REST contract it implements is ``docs/target-contract.md``.

Run it with ``groundeval reference --port N --data-dir D`` or
``python -m pytest_groundeval.reference``; ``pytest_groundeval/cli/reference.py`` lists every option.
"""

from __future__ import annotations

from .app import PORT_FILE_NAME, ReferenceConfig, create_app, serve
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
    "read_chat_stream",
    "serve",
    "verify_claim",
]
