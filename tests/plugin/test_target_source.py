"""Exactly one target applies (docs/plugin.md, "Targets"): an option naming a target beside a
``groundeval_target`` fixture that replaces the plugin's is a usage error (``plugin.target_source``).

The project is the one ``groundeval init`` writes: its ``conftest.py`` defines the fixture, and its
docstring says to delete it for a target map. A user who forgets would have had the map ignored
without a word and the example target measured instead.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from pytest_groundeval.byo.init import init_project

ARGS = ("-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:anyio")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A new project from ``groundeval init``, and ``map.json``: a map of an API nothing answers for."""
    init_project(pytester.path)
    target_map = {
        "request": {"url": f"http://127.0.0.1:{_closed_port()}/api/ask", "body": {"q": "{question}"}},
        "response": {"answer": "answer", "sources": "sources"},
    }
    (pytester.path / "map.json").write_text(json.dumps(target_map), encoding="utf-8")
    return pytester.path


def test_a_target_map_beside_inits_conftest_fixture_is_a_usage_error_naming_both(pytester, project):
    result = pytester.runpytest(*ARGS, "--eval-target-map=map.json", "--eval-report=r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --eval-target-map {project / 'map.json'} and the groundeval_target fixture in conftest.py "
            'both give this run its target: exactly one applies (docs/plugin.md, "Targets")*'
        ]
    )
    result.assert_outcomes()  # nothing ran: not the example target, not the map
    assert "gate:" not in result.stdout.str() and not (project / "r.json").exists()
    assert not list(project.glob(".r.json.*"))  # the report's spool, opened at collection, closed and gone


@pytest.mark.parametrize(
    ("option", "named"),
    [
        (["--eval-url=http://127.0.0.1:9", "--eval-api-key=k"], "--eval-url"),
        (["--eval-spawn=my-server --port {port}"], "--eval-spawn"),
        (["--eval-setup=make data"], "--eval-setup"),
    ],
    ids=["url", "spawn", "setup"],
)
def test_any_target_option_beside_a_replacing_fixture_is_a_usage_error(pytester, project, option, named):
    result = pytester.runpytest(*ARGS, *option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {named} and the groundeval_target fixture in conftest.py both give*"])
    (line,) = [line for line in result.stderr.lines if line.startswith("ERROR: ")]
    assert "http://127.0.0.1:9" not in line and "my-server" not in line and "make data" not in line  # may hold a key


def test_a_fixture_in_the_datasets_own_conftest_is_found_too(pytester, project):
    conftest = project / "conftest.py"
    (project / "groundeval" / "conftest.py").write_text(conftest.read_text(encoding="utf-8"), encoding="utf-8")
    conftest.unlink()
    result = pytester.runpytest(*ARGS, "--eval-target-map=map.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the groundeval_target fixture in groundeval/conftest.py both give*"])


def test_under_xdist_each_worker_stops_the_session_before_any_item_calls_a_target(pytester, project):
    # A worker cannot end the session while it collects (xdist reports a crash): its runner
    # fixture stops the session with the same message, before any item is sent.
    result = pytester.runpytest(*ARGS, "-n", "2", "--eval-target-map=map.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*groundeval: --eval-target-map * and the groundeval_target fixture in conftest.py*"])
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) >= 1 and "passed" not in outcomes and "failed" not in outcomes


def test_a_fixture_that_wraps_the_plugins_target_is_no_second_target(pytester, project):
    # It takes groundeval_target as an argument: the map's target, wrapped. The API is down, so every item errors.
    (project / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture(scope='session')\ndef groundeval_target(groundeval_target):\n"
        "    return groundeval_target\n",
        encoding="utf-8",
    )
    result = pytester.runpytest(*ARGS, "--eval-target-map=map.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*cannot connect to the target*"])


def test_the_fixture_alone_is_the_target(pytester, project):
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(passed=5)
    assert result.ret == pytest.ExitCode.OK


def test_an_api_that_is_down_fails_the_run_saying_every_item_errored_not_to_arm_a_floor(pytester, project):
    # The new user's first run of their own API, which is not up: the map's port has no listener.
    source = (project / "conftest.py").read_text(encoding="utf-8")
    (project / "conftest.py").write_text(source[: source.index("@pytest.fixture")], encoding="utf-8")
    port = json.loads((project / "map.json").read_text(encoding="utf-8"))["request"]["url"].split(":")[2]
    result = pytester.runpytest(*ARGS, "--eval-target-map=map.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # errors are counted: the run fails
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "errors * 5 <= 0 * FAIL  5 > 0",
            "qualityBounds * FAIL  nothing gated: every item errored (5 of 5), so no quality metric was measured*",
            f"note: every item errored, so nothing was measured; the first error: *127.0.0.1:{port}*"
            "cannot connect to the target*",
            "gate: FAIL",
        ]
    )
    assert "arm a floor" not in out
    # The items that could not be run are citation items: no metric keeps them as misses, and none is named.
    result.stdout.fnmatch_lines(["note: 3 items could not be run; they count as errors, never dropped"])
    for metric in ("recall", "falsehoodRejection", "temporalAccuracy"):
        assert metric not in out


def test_the_note_names_only_the_rates_that_keep_an_errored_item_as_a_miss():
    from pytest_groundeval.core.outcome import ItemOutcome
    from pytest_groundeval.plugin.state import DatasetRun

    run = DatasetRun(key="d/manifest.json", manifest=Path("d/manifest.json"))
    down = {"passed": False, "error": "down"}
    run.note_error(ItemOutcome(id="c", kind="citation", **down))
    assert run.misses() == [] and run.first_error == "down"  # a citation item's rates count paragraphs
    run.note_error(ItemOutcome(id="t", kind="temporal", **down))
    run.note_error(ItemOutcome(id="q", kind="qa", evidence_expected=2, **down))
    run.note_error(ItemOutcome(id="n", kind="adversarial", not_run=True, passed=False, error="not run: stopped"))
    assert run.misses() == ["retrievalRecall", "temporalAccuracy"]  # in report order; a never-run item is no miss
    assert (run.first_error, run.first_not_run) == ("down", "not run: stopped")
