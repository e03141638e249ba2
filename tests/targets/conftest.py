"""Fixtures of the target tests: the scripted HTTP server (servers/scripted.py) and ``call_target``."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest


def load_scripted():
    """tests/targets/servers/scripted.py as a module (test directories are not packages)."""
    if "groundeval_scripted_server" in sys.modules:
        return sys.modules["groundeval_scripted_server"]
    path = Path(__file__).parent / "servers" / "scripted.py"
    spec = importlib.util.spec_from_file_location("groundeval_scripted_server", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["groundeval_scripted_server"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


_scripted = load_scripted()


@pytest.fixture(scope="module")
def scripted_server():
    """A ``ScriptedServer`` for the whole module (a Hypothesis test resets it per example)."""
    server = _scripted.serve()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def scripted(scripted_server):
    """The module's ``ScriptedServer``, reset for this test."""
    scripted_server.reset()
    return scripted_server


@pytest.fixture
def other_origin():
    """A second ``ScriptedServer``: another origin (another port) than ``scripted``."""
    server = _scripted.serve()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _call_target(target, mode: str, name: str = "generate", *args):
    if not args and name == "generate":
        args = ("q", None)
    if mode == "sync":
        return getattr(target, name)(*args)

    async def run():
        try:
            return await getattr(target, "a" + name)(*args)
        finally:
            await target.aclose()

    return asyncio.run(run())


@pytest.fixture(scope="session")
def call_target():
    """``call_target(target, mode, name="generate", *args)``: call ``target.<name>`` on the sync
    (httpx, ``mode="sync"``) or async (aiohttp, ``mode="async"``) path; the async session is closed after."""
    return _call_target
