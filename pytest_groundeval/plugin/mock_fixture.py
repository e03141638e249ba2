"""The ``groundeval_mock`` fixture's body, in a module of its own.

Only a session that needs the mock provider (the embedded reference server or a spawned
target talks to it, or ``--eval-judge=mock``) imports it, and with it aiohttp's server side;
a run against ``--eval-url`` or a target map never does (``plugin.fixtures``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..mock import NoiseSettings, ThreadedMockProvider
from .options import Settings
from .record import mock_key, mock_port_key, settings_key

__all__ = ["serve_mock"]


def serve_mock(request: pytest.FixtureRequest) -> Iterator[ThreadedMockProvider]:
    """The ``groundeval_mock`` fixture's body: a started mock provider, stashed on the session.

    Its generations carry the seeded noise of ``--eval-mock-noise`` / ``--eval-mock-seed`` (docs/mock.md).
    """
    settings: Settings = request.config.stash[settings_key]
    noise = NoiseSettings(settings.mock_noise, settings.mock_seed)
    # The port the target launched ahead was told (plugin/spawn_ahead.py), if any; taken by
    # another process meanwhile, any free port (the target is then launched again against it).
    reserved = request.session.stash.get(mock_port_key, 0)
    mock = ThreadedMockProvider(port=reserved, noise=noise)
    try:
        mock.start()
    except OSError:
        if not reserved:
            raise
        mock = ThreadedMockProvider(noise=noise)
        mock.start()
    try:
        request.session.stash[mock_key] = mock
        yield mock
    finally:
        mock.stop()
