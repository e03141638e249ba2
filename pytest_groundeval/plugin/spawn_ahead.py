"""Launch the embedded reference server before the session imports its HTTP stack (issue 24, start-up).

A run against the embedded reference server used to do everything in turn: the first item's
set-up imported the runner, the HTTP clients and the mock (aiohttp), started the mock, and only
then started the server, whose own start (its imports, about half a second on a 2-core machine)
the item then waited out. Here ``groundeval_target`` starts the server first, told the URL of a
mock that is not running yet (a free loopback port, which ``groundeval_mock`` then binds), and
the rest of the set-up happens while the server starts (benchmarks/README.md, "Start-up, fourth
pass"). ``SpawnedTarget.launch`` imports no HTTP library, and neither does this module.

Launched ahead only when nothing could make a second start matter: the embedded reference
server (not a ``--eval-spawn`` command, which may do what it likes when it starts) with no
``--eval-setup`` commands. ``runners.serve_target`` adopts the launch when the mock it gets is
at the URL the server was told; otherwise (``groundeval_mock`` overridden in a conftest, or
its port taken meanwhile) it stops it and starts the server again against the right URL.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ..core.secrets import Scrubber
from ..targets.protocol import TargetError
from ..targets.spawn import SpawnConfig, SpawnedTarget, free_loopback_port, reference_command
from .options import Settings
from .record import mock_key, mock_port_key, session_id, settings_key
from .xdist import worker_id

__all__ = ["Launched", "launch_ahead", "spawn_config", "start_problem"]


@dataclass
class Launched:
    """A target started ahead of the mock: the server (None when its launch failed), the
    provider URL it was told, and why its launch failed (None when it did not)."""

    spawned: SpawnedTarget | None
    llm_url: str
    problem: str | None = None


def start_problem(spawned: SpawnedTarget, error: Exception) -> str:
    """The session's one error for a target that did not start (``runners.stop_session`` says it), with
    the fresh key the child was given masked: its log tail, quoted in ``error``, may show it."""
    return f"the target failed to start: {Scrubber([spawned.api_key]).text(str(error))}"


def spawn_config(request: pytest.FixtureRequest, settings: Settings, llm_url: str) -> SpawnConfig:
    """How this session spawns its target (``--eval-spawn`` or the embedded reference server),
    against the provider at ``llm_url``; a fresh data directory under the session's temporary one."""
    return SpawnConfig(
        command=settings.spawn or reference_command(),
        setup=list(settings.setup),
        ready_timeout_s=settings.ready_timeout_s,
        timeout_s=settings.timeout_s,
        max_response_bytes=settings.max_response_bytes,
        llm_url=llm_url,
        embed_url=llm_url,
        worker_id=worker_id(request.config),
        base_dir=request.getfixturevalue("tmp_path_factory").mktemp("groundeval-target"),
        run_id=session_id(request.config),
    )


def launch_ahead(request: pytest.FixtureRequest) -> Launched | None:
    """Start the embedded reference server now, against the mock's URL to be; None when not to.

    The mock's URL is that of the mock already running (another fixture asked for it first), or
    ``http://127.0.0.1:PORT/v1`` on a free port stashed for ``groundeval_mock`` to bind. A launch
    that fails (the server cannot be started) is returned with its ``problem``, which
    ``runners.serve_target`` reports as it reports its own.
    """
    settings: Settings = request.config.stash[settings_key]
    if settings.target_map is not None or settings.url or settings.spawn or settings.setup:
        return None
    running = request.session.stash.get(mock_key, None)
    if running is not None:
        llm_url = running.base_url
    else:
        port = request.session.stash[mock_port_key] = free_loopback_port()
        llm_url = f"http://127.0.0.1:{port}/v1"  # ThreadedMockProvider.base_url on that port
    spawned = SpawnedTarget(spawn_config(request, settings, llm_url))
    try:
        spawned.launch()
    except (TargetError, ValueError) as exc:  # ValueError: a placeholder with no value
        return Launched(None, llm_url, start_problem(spawned, exc))
    return Launched(spawned, llm_url)
