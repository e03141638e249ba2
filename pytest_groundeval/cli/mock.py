"""``groundeval mock``: serve the deterministic OpenAI-compatible mock provider from a shell (docs/mock.md).

``python -m pytest_groundeval.mock`` runs the same command.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import signal
import sys

from ..mock.noise import NO_NOISE, NoiseSettings
from ..mock.server import DEFAULT_LOG_LIMIT, MockProvider
from ._args import Parser


def _parser() -> Parser:
    parser = Parser(
        prog="groundeval mock",
        description="Serve the deterministic OpenAI-compatible mock provider until Ctrl-C or SIGTERM.",
    )
    parser.add_argument("--port", type=int, default=0, help="Port to bind (default 0: a free port)")
    parser.add_argument("--host", default="127.0.0.1", help="Interface to bind (default 127.0.0.1)")
    parser.add_argument(
        "--log-limit",
        type=_log_limit,
        default=DEFAULT_LOG_LIMIT,
        metavar="N",
        help=f"Requests the in-memory log keeps, the most recent (default {DEFAULT_LOG_LIMIT}; 0 keeps none)",
    )
    parser.add_argument(
        "--noise",
        type=_probability,
        default=0.0,
        metavar="P",
        help="Chance in [0, 1] that a generation is noised: one cited block dropped or one number changed "
        "(default 0: none; docs/mock.md)",
    )
    parser.add_argument(
        "--seed", type=_seed, default=0, metavar="S", help="Seed of the noise draws, a whole number (default 0)"
    )
    return parser


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1], got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _log_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of requests, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


async def _serve(host: str, port: int, log_limit: int = DEFAULT_LOG_LIMIT, noise: NoiseSettings = NO_NOISE) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - Windows / non-main thread
            pass
    async with MockProvider(host, port, log_limit=log_limit, noise=noise) as mock:
        print(f"groundeval mock provider serving at {mock.base_url}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    """Run ``groundeval mock [--port N] [--host H] [--log-limit N] [--noise P] [--seed S]``: serve until interrupted.

    Prints ``groundeval mock provider serving at http://HOST:PORT/v1`` once
    listening. Returns 0 after SIGINT/SIGTERM, 2 when the address cannot be bound.

    Raises:
        SystemExit: ``--help`` (status 0) or a usage error (status 2, the usage and the
            error on stderr), as a plain argparse parser exits.
    """
    parser = _parser()
    args = parser.parse_or_status(sys.argv[1:] if argv is None else argv)
    if isinstance(args, int):
        raise SystemExit(args)
    try:
        asyncio.run(_serve(args.host, args.port, args.log_limit, NoiseSettings(args.noise, args.seed)))
    except OSError as exc:
        print(f"groundeval mock: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover - signal arrived before the handler was installed
        pass
    return 0
