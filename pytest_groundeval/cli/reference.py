"""``groundeval reference``: serve the reference target (``reference/app.py``), or create an API key.

Usage::

    groundeval reference [serve] --port N --data-dir D [--llm-url URL] [--embed-url URL] ...
    groundeval reference create-key --data-dir D
    python -m pytest_groundeval.reference ...

Every serve flag falls back to an environment variable (flag > env > default):

==================== ============================ =========================================
flag                 env                          default
==================== ============================ =========================================
``--host``           ``GROUNDEVAL_HOST``          ``127.0.0.1``
``--port``           ``GROUNDEVAL_PORT``          ``8787`` (``0``: any free port)
``--data-dir``       ``GROUNDEVAL_DATA_DIR``      ``.groundeval/reference``
``--llm-url``        ``GROUNDEVAL_LLM_URL``       ``OPENAI_BASE_URL`` (required one way or another)
``--embed-url``      ``GROUNDEVAL_EMBED_URL``     the LLM URL
``--model-generate`` ``GROUNDEVAL_MODEL_GENERATE`` ``mock-generate``
``--model-embed``    ``GROUNDEVAL_MODEL_EMBED``   ``mock-embed``
``--provider-timeout`` ``GROUNDEVAL_PROVIDER_TIMEOUT`` ``30`` seconds per provider call
(bootstrap key)      ``GROUNDEVAL_API_KEY``       none
(provider key)       ``GROUNDEVAL_PROVIDER_API_KEY``, then ``OPENAI_API_KEY``
==================== ============================ =========================================

Once listening, the server prints ``groundeval reference: listening on
http://HOST:PORT`` and writes the bound port to ``<data-dir>/reference.port``,
so a caller that passed ``--port 0`` can find it. SIGTERM or SIGINT stops it
cleanly. Exit codes: 0 clean stop, 2 usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ..reference import store
from ..reference.app import VERIFY_EXECUTORS, ReferenceConfig, serve
from ._args import Parser, ParserExit, UsageError

DEFAULT_PORT = 8787
DEFAULT_DATA_DIR = ".groundeval/reference"


def _serve_parser(env: Mapping[str, str]) -> Parser:
    parser = Parser(
        prog="groundeval reference",
        description="Serve the reference grounded-answer target (docs/target-contract.md)",
        epilog="Also: 'groundeval reference create-key --data-dir D' creates a tenant and prints its API key.",
    )
    parser.add_argument("--host", default=env.get("GROUNDEVAL_HOST", "127.0.0.1"), help="Interface to bind")
    # String defaults go through ``type`` too, so a bad env value is a usage error naming the flag.
    parser.add_argument(
        "--port",
        type=int,
        default=env.get("GROUNDEVAL_PORT", str(DEFAULT_PORT)),
        help="Port to bind (0: any free port)",
    )
    parser.add_argument(
        "--data-dir", default=env.get("GROUNDEVAL_DATA_DIR", DEFAULT_DATA_DIR), help="Directory for the SQLite database"
    )
    parser.add_argument(
        "--llm-url",
        default=env.get("GROUNDEVAL_LLM_URL") or env.get("OPENAI_BASE_URL"),
        help="OpenAI-style base URL ending in /v1 for chat completions",
    )
    parser.add_argument(
        "--embed-url",
        default=env.get("GROUNDEVAL_EMBED_URL"),
        help="OpenAI-style base URL ending in /v1 for embeddings",
    )
    parser.add_argument(
        "--model-generate", default=env.get("GROUNDEVAL_MODEL_GENERATE", "mock-generate"), help="Chat model"
    )
    parser.add_argument(
        "--model-embed", default=env.get("GROUNDEVAL_MODEL_EMBED", "mock-embed"), help="Embedding model"
    )
    parser.add_argument(
        "--provider-timeout",
        type=float,
        default=env.get("GROUNDEVAL_PROVIDER_TIMEOUT", "30"),
        help="Seconds one provider call may take, retries included",
    )
    parser.add_argument("--top-k", type=int, default=4, help="Evidence blocks per answer")
    parser.add_argument("--log-level", default=env.get("GROUNDEVAL_LOG_LEVEL", "INFO"), help="Python logging level")
    parser.add_argument(
        "--verify-executor",
        choices=VERIFY_EXECUTORS,
        default=env.get("GROUNDEVAL_VERIFY_EXECUTOR", "process"),
        help="Where claims are verified: a process pool (default), a thread pool, or inline on the event loop",
    )
    parser.add_argument(
        "--verify-workers",
        type=int,
        default=env.get("GROUNDEVAL_VERIFY_WORKERS"),
        help="Workers of the verification pool (default: the machine's CPU count)",
    )
    return parser


def _create_key_parser(env: Mapping[str, str]) -> Parser:
    parser = Parser(prog="groundeval reference create-key", description="Create a tenant and print its new API key")
    parser.add_argument(
        "--data-dir", default=env.get("GROUNDEVAL_DATA_DIR", DEFAULT_DATA_DIR), help="The server's data dir"
    )
    return parser


def _parse(parser: Parser, argv: list[str]) -> argparse.Namespace:
    """``parser``'s arguments; a usage error prints the usage line and carries ``PROG: error: MESSAGE``.

    Raises:
        UsageError: a bad flag or value (the usage line is already on stderr).
        ParserExit: ``--help`` was printed.
    """
    try:
        return parser.parse_args(argv)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        raise UsageError(f"{parser.prog}: error: {exc}") from None


def config_from_args(argv: list[str], env: Mapping[str, str]) -> ReferenceConfig:
    """Resolve flags and environment into a :class:`ReferenceConfig`.

    Raises:
        UsageError: a bad flag, or no provider URL anywhere; the message is the whole
            line to print (``groundeval reference: …``).
        ParserExit: ``--help`` was printed.
    """
    args = _parse(_serve_parser(env), argv)
    if not args.llm_url:
        raise UsageError(
            "groundeval reference: no provider URL: pass --llm-url, or set GROUNDEVAL_LLM_URL or OPENAI_BASE_URL "
            "(an OpenAI-style base URL ending in /v1)"
        )
    if args.verify_executor not in VERIFY_EXECUTORS:  # argparse checks choices on the flag, not on an env default
        raise UsageError(
            f"groundeval reference: GROUNDEVAL_VERIFY_EXECUTOR must be one of {', '.join(VERIFY_EXECUTORS)}, "
            f"got {args.verify_executor!r}"
        )
    if args.verify_workers is not None and args.verify_workers < 1:
        raise UsageError(f"groundeval reference: --verify-workers must be at least 1, got {args.verify_workers}")
    if args.provider_timeout <= 0:
        raise UsageError(f"groundeval reference: --provider-timeout must be positive, got {args.provider_timeout}")
    return ReferenceConfig(
        data_dir=Path(args.data_dir),
        llm_url=args.llm_url,
        embed_url=args.embed_url or args.llm_url,
        model_generate=args.model_generate,
        model_embed=args.model_embed,
        provider_api_key=env.get("GROUNDEVAL_PROVIDER_API_KEY") or env.get("OPENAI_API_KEY"),
        bootstrap_api_key=env.get("GROUNDEVAL_API_KEY") or None,
        provider_timeout_s=args.provider_timeout,
        top_k=args.top_k,
        host=args.host,
        port=args.port,
        log_level=args.log_level.upper(),
        verify_executor=args.verify_executor,
        verify_workers=args.verify_workers,
    )


def create_key(argv: list[str], env: Mapping[str, str]) -> int:
    """``create-key``: make a tenant, print its key on stdout (only its sha256 is stored).

    Raises:
        UsageError: a bad flag (the usage line is already on stderr).
        ParserExit: ``--help`` was printed.
    """
    args = _parse(_create_key_parser(env), argv)
    conn = store.open_database(Path(args.data_dir))
    try:
        tenant_id, key = store.create_tenant_key(conn)
    finally:
        conn.close()
    print(key)
    print(f"created tenant {tenant_id} in {args.data_dir}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``groundeval reference`` and ``python -m pytest_groundeval.reference``."""
    args = list(sys.argv[1:] if argv is None else argv)
    env = os.environ
    try:
        if args[:1] == ["create-key"]:
            return create_key(args[1:], env)
        if args[:1] == ["serve"]:
            args = args[1:]
        config = config_from_args(args, env)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    except ParserExit as exc:  # --help
        return exc.status
    logging.basicConfig(
        level=config.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        asyncio.run(serve(config))
    except KeyboardInterrupt:  # pragma: no cover - signal handler not installable
        pass
    return 0
