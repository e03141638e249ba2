"""``groundeval reference``: serve the reference target, or create an API key.

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
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

from aiohttp import web

from . import store
from .app import VERIFY_EXECUTORS, ReferenceConfig, create_app

PORT_FILE_NAME = "reference.port"
"""File in the data dir that receives the bound port once the server listens."""

DEFAULT_PORT = 8787
DEFAULT_DATA_DIR = ".groundeval/reference"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise _UsageError(f"{self.prog}: error: {message}")


class _UsageError(Exception):
    pass


def _serve_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="groundeval reference",
        description="Serve the reference grounded-answer target (docs/target-contract.md)",
        epilog="Also: 'groundeval reference create-key --data-dir D' creates a tenant and prints its API key.",
    )
    parser.add_argument("--host", default=env.get("GROUNDEVAL_HOST", "127.0.0.1"), help="Interface to bind")
    # String defaults go through ``type`` too, so a bad env value is a usage error naming the flag.
    parser.add_argument("--port", type=int, default=env.get("GROUNDEVAL_PORT", str(DEFAULT_PORT)), help="Port to bind (0: any free port)")
    parser.add_argument("--data-dir", default=env.get("GROUNDEVAL_DATA_DIR", DEFAULT_DATA_DIR), help="Directory for the SQLite database")
    parser.add_argument(
        "--llm-url",
        default=env.get("GROUNDEVAL_LLM_URL") or env.get("OPENAI_BASE_URL"),
        help="OpenAI-style base URL ending in /v1 for chat completions",
    )
    parser.add_argument("--embed-url", default=env.get("GROUNDEVAL_EMBED_URL"), help="OpenAI-style base URL ending in /v1 for embeddings")
    parser.add_argument("--model-generate", default=env.get("GROUNDEVAL_MODEL_GENERATE", "mock-generate"), help="Chat model")
    parser.add_argument("--model-embed", default=env.get("GROUNDEVAL_MODEL_EMBED", "mock-embed"), help="Embedding model")
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


def _create_key_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    parser = _Parser(prog="groundeval reference create-key", description="Create a tenant and print its new API key")
    parser.add_argument("--data-dir", default=env.get("GROUNDEVAL_DATA_DIR", DEFAULT_DATA_DIR), help="The server's data dir")
    return parser


def config_from_args(argv: list[str], env: Mapping[str, str]) -> ReferenceConfig:
    """Resolve flags and environment into a :class:`ReferenceConfig`.

    Raises:
        _UsageError: a bad flag, or no provider URL anywhere.
    """
    args = _serve_parser(env).parse_args(argv)
    if not args.llm_url:
        raise _UsageError(
            "groundeval reference: no provider URL: pass --llm-url, or set GROUNDEVAL_LLM_URL or OPENAI_BASE_URL "
            "(an OpenAI-style base URL ending in /v1)"
        )
    if args.verify_executor not in VERIFY_EXECUTORS:  # argparse checks choices on the flag, not on an env default
        raise _UsageError(
            f"groundeval reference: GROUNDEVAL_VERIFY_EXECUTOR must be one of {', '.join(VERIFY_EXECUTORS)}, "
            f"got {args.verify_executor!r}"
        )
    if args.verify_workers is not None and args.verify_workers < 1:
        raise _UsageError(f"groundeval reference: --verify-workers must be at least 1, got {args.verify_workers}")
    if args.provider_timeout <= 0:
        raise _UsageError(f"groundeval reference: --provider-timeout must be positive, got {args.provider_timeout}")
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


async def serve(config: ReferenceConfig) -> None:
    """Run the server until SIGTERM/SIGINT; write the bound port to the data dir."""
    runner = web.AppRunner(create_app(config), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
        port = runner.addresses[0][1]
        _write_port_file(config.data_dir, port)
        print(f"groundeval reference: listening on http://{config.host}:{port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(signum, stop.set)
            except (NotImplementedError, RuntimeError):  # pragma: no cover - Windows
                pass
        await stop.wait()
    finally:
        await runner.cleanup()


def _write_port_file(data_dir: Path, port: int) -> None:
    # Written atomically so a poller never reads a half-written number.
    temporary = data_dir / (PORT_FILE_NAME + ".tmp")
    temporary.write_text(f"{port}\n", encoding="utf-8")
    os.replace(temporary, data_dir / PORT_FILE_NAME)


def create_key(argv: list[str], env: Mapping[str, str]) -> int:
    """``create-key``: make a tenant, print its key on stdout (only its sha256 is stored)."""
    args = _create_key_parser(env).parse_args(argv)
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
    except _UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    logging.basicConfig(level=config.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        asyncio.run(serve(config))
    except KeyboardInterrupt:  # pragma: no cover - signal handler not installable
        pass
    return 0

