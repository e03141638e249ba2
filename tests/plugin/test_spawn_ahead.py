"""The embedded reference server started ahead of the mock and the HTTP stack (plugin/spawn_ahead.py)."""

from __future__ import annotations

import socket

import pytest

from pytest_groundeval.plugin import spawn_ahead
from pytest_groundeval.targets.spawn import SpawnedTarget
from tests._support.pytest_args import NO_THIRD_PARTY_PLUGINS

ONE_ITEM = ("-k", "qa-smoke-alpha-budget")

REPORT_PORTS = r"""
def pytest_sessionfinish(session):
    from pytest_groundeval.plugin.record import mock_key, mock_port_key
    mock = session.stash.get(mock_key, None)
    reserved = session.stash.get(mock_port_key, None)
    print(f"\nmock port {mock.provider.port if mock else None}, reserved {reserved}")
"""

OVERRIDDEN_MOCK = """
import pytest
from pytest_groundeval.mock import ThreadedMockProvider

@pytest.fixture(scope="session")
def groundeval_mock():
    with ThreadedMockProvider() as mock:  # on a port of its own, not the one reserved
        yield mock
"""


def _launches(pytester: pytest.Pytester) -> int:
    """How many times the last run launched a target: each launch gets a ``groundeval-target*`` directory of
    its own under the run's base temporary directory (pytester's, which each in-process run starts empty)."""
    return len(list((pytester.path.parent / "basetemp").glob("groundeval-target[0-9]*")))


def _logs(pytester: pytest.Pytester) -> int:
    """The ``target.log`` files the last run left (a launch discarded for another leaves none)."""
    return len(list((pytester.path.parent / "basetemp").rglob("target.log")))


def test_the_server_launched_ahead_is_the_one_the_run_uses(run, pytester, smoke):
    pytester.makeconftest(REPORT_PORTS)
    result = run(f"--eval-dataset={smoke}", *ONE_ITEM, "-s", spawn=True)
    result.assert_outcomes(passed=1)
    port = int(result.stdout.str().split("mock port ")[1].split(",")[0])
    result.stdout.fnmatch_lines([f"mock port {port}, reserved {port}"])  # the mock bound the port the server was told
    assert _launches(pytester) == 1


def test_an_overridden_mock_gets_the_server_started_again_against_it(run, pytester, smoke):
    pytester.makeconftest(REPORT_PORTS + OVERRIDDEN_MOCK)
    result = run(f"--eval-dataset={smoke}", *ONE_ITEM, "-s", spawn=True)
    result.assert_outcomes(passed=1)
    assert _launches(pytester) == 2  # the one launched ahead, stopped, and the one against this mock
    assert _logs(pytester) == 1  # the run's own: the discarded launch's log (its command line alone) is gone


def test_a_reserved_port_taken_meanwhile_gets_the_server_started_again(run, pytester, smoke, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        reserved = taken.getsockname()[1]
        monkeypatch.setattr(spawn_ahead, "free_loopback_port", lambda: reserved)
        pytester.makeconftest(REPORT_PORTS)
        result = run(f"--eval-dataset={smoke}", *ONE_ITEM, "-s", spawn=True)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"mock port *, reserved {reserved}"])
    result.stdout.no_fnmatch_line(f"mock port {reserved}, *")
    assert _launches(pytester) == 2


def test_no_launch_ahead_for_a_spawn_command_or_setup_commands(run, pytester, smoke):
    # A user's --eval-spawn command, or --eval-setup commands, may do what they like when they run:
    # they run once, after the mock (the serial path).
    pytester.makeconftest(REPORT_PORTS)
    result = run(f"--eval-dataset={smoke}", *ONE_ITEM, "-s", "--eval-setup=true", spawn=True)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["mock port *, reserved None"])
    assert _launches(pytester) == 1


def test_a_server_started_again_is_stopped_when_the_session_is_interrupted_while_it_starts(
    run, pytester, smoke, monkeypatch
):
    # Ctrl-C while the server started against an overridden mock was starting left it running until the
    # process exited (the fixture's own clean-up knows only the server launched ahead).
    launched: list[SpawnedTarget] = []
    stopped: list[SpawnedTarget] = []
    launch, stop = SpawnedTarget.launch, SpawnedTarget.stop

    def record_launch(self: SpawnedTarget) -> SpawnedTarget:
        launched.append(self)
        return launch(self)

    def record_stop(self: SpawnedTarget) -> None:
        stopped.append(self)
        stop(self)

    def interrupted(self: SpawnedTarget) -> SpawnedTarget:
        raise KeyboardInterrupt

    monkeypatch.setattr(SpawnedTarget, "launch", record_launch)
    monkeypatch.setattr(SpawnedTarget, "stop", record_stop)
    monkeypatch.setattr(SpawnedTarget, "wait_until_ready", interrupted)
    pytester.makeconftest(OVERRIDDEN_MOCK)
    # As conftest.py's run(spawn=True), with pytester told not to raise the run's KeyboardInterrupt here.
    args = (*NO_THIRD_PARTY_PLUGINS, "-p", "no:cacheprovider", f"--eval-dataset={smoke}", *ONE_ITEM)
    result = pytester.inline_run(*args, no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert len(launched) == 2  # ahead, then against the overridden mock
    assert all(spawned in stopped and not spawned.is_alive() for spawned in launched)
