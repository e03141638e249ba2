"""The plugin writes the run history (docs/history.md): options, rows per item, -n 2 equals -n 0, a killed run,
the run and item ids the target sees, gate --run and rejudge with the mock's judge."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_groundeval.cli import main as groundeval
from pytest_groundeval.core.contract import dataset_run_id
from tests._support.postgres import PostgresServer

ROOT = Path(__file__).resolve().parents[2]

# Columns that do not depend on timing or on which worker ran the item.
STABLE = (
    "item_id, kind, passed, error, detail, question, answer, tags, sources, trace, prompt_tokens, "
    "completion_tokens, tool_trace, iterations"
)


def _rows(db: Path, sql: str, *args) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _items(db: Path, run_id: str) -> list[tuple]:
    return _rows(db, f"SELECT {STABLE} FROM items WHERE run_id = ? ORDER BY item_id", run_id)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--eval-history=mysql://h/db"], "*--eval-history: history URL 'mysql://h/db': unknown database 'mysql'*"),
        (["--eval-history=sqlite:///:memory:"], "*in-memory database*"),
        (["--eval-label=nightly"], "*--eval-label labels a run in the history, but no history is given*"),
        (["--eval-history=postgresql://u:s3cret@127.0.0.1:9/db"], "*cannot open history database*u:***@127.0.0.1:9*"),
    ],
)
def test_history_options_are_checked_before_the_run(run, smoke, args, message):
    result = run(f"--eval-dataset={smoke}", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "s3cret" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize(
    "mode", ["--collect-only", "--setup-plan", "--setup-only", "--fixtures-per-test", "--fixtures"]
)
def test_a_session_that_runs_no_item_records_no_run(run, pytester, smoke, mode):
    # Before: --collect-only opened a history run at collection that was never finished.
    # --setup-only, --fixtures-per-test and --fixtures made a failed run of items "never run" and
    # recorded it, with its report.
    db, report = pytester.path / "h.db", pytester.path / "r.json"
    result = run(f"--eval-dataset={smoke}", f"--eval-history=sqlite:///{db}", f"--eval-report={report}", mode)
    assert result.ret == 0, result.stdout.str()
    assert not report.exists() and list(pytester.path.glob(".r.json.*")) == []
    assert _rows(db, "SELECT id FROM runs") == []
    assert _rows(db, "SELECT item_id FROM items") == []
    assert "gate:" not in result.stdout.str()


@pytest.mark.xdist_group("smoke_n2")
def test_a_run_is_recorded_and_n2_rows_equal_n0_rows(run, pytester, smoke, smoke_n2_run):
    # The -n 2 run (label xdist) is shared with test_plugin.py's modes: its history is copied here,
    # and the -n 0 run (label plain) is recorded in the same database after it.
    db = pytester.path / "h.db"
    shutil.copyfile(smoke_n2_run.path / "h.db", db)
    result = run(f"--eval-dataset={smoke}", f"--eval-history=sqlite:///{db}", "--eval-label=plain", "-n", "0")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["history: run * (smoke-1) in sqlite:///*h.db"])
    result = smoke_n2_run.result
    assert result.ret == 0, result.stdout.str()
    runs = _rows(db, "SELECT id, label, finished_ms, gate_passed, config FROM runs ORDER BY label")
    assert [(label, finished is not None, passed) for _, label, finished, passed, _ in runs] == [
        ("plain", True, 1),
        ("xdist", True, 1),
    ]
    (plain, *_, config_a), (xdist, *_, config_b) = runs
    config = json.loads(config_a)
    assert plain == dataset_run_id(config["session"], "smoke/manifest.json")
    assert config["dataset"]["version"] == "smoke-1" and config["models"]["generate"] == "mock-generate"
    assert config["options"]["workers"] == 0 and json.loads(config_b)["options"]["workers"] == 2
    rows = _items(db, plain)
    assert len(rows) == 10 and rows == _items(db, xdist)
    qa = [r for r in rows if r[1] == "qa"]
    assert all(r[5] for r in qa)  # the question, from the dataset
    tags = _rows(db, "SELECT tag, count(*) FROM item_tags WHERE run_id = ? GROUP BY tag ORDER BY tag", plain)
    assert tags and tags == _rows(db, "SELECT tag, count(*) FROM item_tags WHERE run_id = ? GROUP BY tag ORDER BY tag",
                                  xdist)  # fmt: skip
    # The stored run gates as its report would.
    assert groundeval(["gate", "--run", "latest", "--history", f"sqlite:///{db}"]) == 0


TARGET_CONFTEST = """
import asyncio
import pytest

from pytest_groundeval.targets.protocol import call_ids

@pytest.fixture(scope="session")
def groundeval_target(groundeval_target):
    class Traced:
        # Reports a tool trace and an iteration count, sleeping {delay} s per answer.
        def __getattr__(self, name):
            return getattr(groundeval_target, name)

        async def agenerate(self, question, find):
            await asyncio.sleep({delay})
            body = await groundeval_target.agenerate(question, find)
            run_id, item_id = call_ids.get()
            return {{**body, "iterations": 2,
                     "toolTrace": [{{"tool": "search", "hits": [item_id, "d2"]}}, {{"tool": "sql", "hitCount": 0,
                                   "rows": "payload the harness drops"}}]}}

    return Traced()
"""


def test_the_tool_trace_is_stored_and_grouped_by_tool(run, pytester, smoke, capsys):
    pytester.makeconftest(TARGET_CONFTEST.format(delay=0))
    db = pytester.path / "h.db"
    result = run(f"--eval-dataset={smoke}", f"--eval-history=sqlite:///{db}", "-k", "qa or adversarial")
    assert result.ret == 0, result.stdout.str()
    traces = _rows(db, "SELECT item_id, tool_trace, iterations FROM items")
    assert len(traces) == 7
    for item_id, trace, iterations in traces:
        assert json.loads(trace) == [{"tool": "search", "hits": [item_id, "d2"]}, {"tool": "sql", "hitCount": 0}]
        assert iterations == 2
    capsys.readouterr()
    assert groundeval(["history", "show", "latest", "--by", "tool", "--history", f"sqlite:///{db}"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[:2] for line in out.splitlines() if line.startswith(("search", "sql"))] == [
        ["search", "7"],
        ["sql", "7"],
    ]


def test_a_killed_run_keeps_its_items_and_has_no_finish_time(pytester, smoke, shared_target):
    # Slow enough that the kill (once two items are recorded) always lands mid-run.
    pytester.makeconftest(TARGET_CONFTEST.format(delay=1.0))
    db = pytester.path / "h.db"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:benchmark",
        f"--eval-dataset={smoke}",
        "-p",
        "no:hypothesispytest",
        "-p",
        "no:anyio",  # see NO_THIRD_PARTY_PLUGINS in tests/plugin/conftest.py
        f"--eval-url={shared_target.base_url}",
        f"--eval-api-key={shared_target.api_key}",
        f"--eval-history=sqlite:///{db}",
        "--eval-concurrency=1",
        "-k",
        "qa or adversarial",
    ]
    child = subprocess.Popen(command, cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(os.environ))  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        recorded = 0
        while recorded < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
            if db.exists():
                try:
                    recorded = _rows(db, "SELECT count(*) FROM items")[0][0]
                except sqlite3.OperationalError:  # the schema is being created
                    recorded = 0
        child.kill()  # SIGKILL: no teardown, no finish
        child.wait(timeout=60)
    finally:
        child.kill()
    assert recorded >= 2
    ((finished, metrics),) = _rows(db, "SELECT finished_ms, metrics FROM runs")
    assert finished is None and metrics is None
    items = _rows(db, "SELECT count(*) FROM items")[0][0]
    assert 2 <= items < 7
    # A stored run with no finish time gates as an interrupted report: FAIL.
    assert groundeval(["gate", "--run", "latest", "--history", f"sqlite:///{db}"]) == 1


CURRENT = (
    "SELECT j.verdict, j.judge_model FROM judgments j JOIN judgment_sets s ON s.id = j.set_id AND s.is_current "
    "ORDER BY j.item, j.paragraph"
)
"""The verdicts of the current judgment set."""


def test_rejudge_fills_missing_judgments_with_the_mock_judge_and_all_replaces_them(run, pytester, capsys):
    from pytest_groundeval.mock import ThreadedMockProvider

    dataset = pytester.path / "citation-smoke"
    shutil.copytree(ROOT / "datasets" / "citation-smoke", dataset)
    db = pytester.path / "h.db"
    url = f"sqlite:///{db}"
    result = run(f"--eval-dataset={dataset}", f"--eval-history={url}")
    assert result.ret in (0, 1), result.stdout.str()
    before = _rows(db, CURRENT)
    assert before and all(verdict is None for verdict, _ in before)
    with ThreadedMockProvider() as mock:
        judge = ["--judge-url", mock.base_url, "--judge-model", "mock-judge", "--history", url]
        assert groundeval(["rejudge", "latest", *judge]) == 0
        filled = _rows(db, CURRENT)
        assert len(filled) == len(before) and all(v is not None and m == "mock-judge" for v, m in filled)
        assert "judge" in {call.kind for call in mock.log}
        metrics = json.loads(_rows(db, "SELECT metrics FROM runs")[0][0])
        assert metrics["citationSupportedRate"] is not None
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("UPDATE judgments SET verdict = 'partial', judge_model = 'old-judge'")
        conn.close()
        assert groundeval(["rejudge", "latest", *judge]) == 0  # nothing missing: nothing asked
        assert {m for _, m in _rows(db, CURRENT)} == {"old-judge"}
        assert groundeval(["rejudge", "latest", "--all", *judge]) == 0
    assert _rows(db, CURRENT) == filled
    assert "paragraph(s) given a parseable verdict" in capsys.readouterr().out
    # Every set is kept: the run's own, the first rejudge, the one --all replaced it with.
    assert _rows(db, "SELECT origin, status, is_current FROM judgment_sets ORDER BY id") == [
        ("run", "incomplete", 0),
        ("rejudge", "complete", 0),
        ("rejudge", "complete", 1),
    ]


def _unused_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_dead_or_prose_judge_never_destroys_stored_verdicts_nor_flips_the_run(run, pytester, capsys):
    from pytest_groundeval.mock import ThreadedMockProvider

    dataset = pytester.path / "citation-smoke"
    shutil.copytree(ROOT / "datasets" / "citation-smoke", dataset)
    floors = pytester.path / "floors.json"
    # A ceiling the mock judge's verdicts break (1 wrong speaker of 7 paragraphs) and all-unparseable would meet.
    floors.write_text(json.dumps({"wrongSpeakerRate": 0.1}), encoding="utf-8")
    db = pytester.path / "h.db"
    url = f"sqlite:///{db}"
    result = run(f"--eval-dataset={dataset}", f"--eval-history={url}", f"--eval-floors={floors}")
    assert result.ret in (0, 1), result.stdout.str()
    stored = "SELECT gate_passed, metrics, gate FROM runs"
    with ThreadedMockProvider() as mock:
        assert groundeval(["rejudge", "latest", "--judge-url", mock.base_url, "--judge-model", "mock-judge",
                           "--history", url]) == 0  # fmt: skip
        capsys.readouterr()
        judged = _rows(db, CURRENT)
        (run_row,) = _rows(db, stored)
        assert run_row[0] == 0 and json.loads(run_row[1])["wrongSpeakerRate"] > 0.1  # FAIL, as measured
        assert all(v is not None and v != "unparseable" for v, _ in judged) and len(judged) == 7

        # A judge that answers prose: every verdict would be unparseable, and wrongSpeakerRate 0 would PASS.
        prose = ["--judge-url", mock.base_url, "--judge-model", "mock-judge+fault=prose", "--history", url]
        assert groundeval(["rejudge", "latest", "--all", *prose]) == 1
        out, err = capsys.readouterr()
        assert "0 of 7 paragraph(s) given a parseable verdict, 7 failed (0 judge error(s), 7 unparseable)" in out
        assert "7 of 7 paragraph(s) got no parseable verdict (7 unparseable verdict(s))" in err
        assert "gate: FAIL (unchanged)" in out and "0 failed" not in out
        assert _rows(db, CURRENT) == judged and _rows(db, stored) == [run_row]

    # A dead judge (nothing listens on the port): no verdict is set to NULL.
    dead = ["--judge-url", f"http://127.0.0.1:{_unused_port()}/v1", "--judge-model", "judge-x", "--history", url]
    assert groundeval(["rejudge", "latest", "--all", *dead]) == 1
    out, err = capsys.readouterr()
    assert "7 of 7 paragraph(s) got no parseable verdict (7 judge error(s))" in err and "unreachable" in err
    assert _rows(db, CURRENT) == judged and _rows(db, stored) == [run_row]
    assert _rows(db, "SELECT origin, judge_model, status, is_current, failed FROM judgment_sets ORDER BY id") == [
        ("run", None, "incomplete", 0, 7),
        ("rejudge", "mock-judge", "complete", 1, 0),
        ("rejudge", "mock-judge+fault=prose", "incomplete", 0, 7),
        ("rejudge", "judge-x", "incomplete", 0, 7),
    ]
    # The earlier sets are in the database, with their verdicts: the prose attempt's are kept as unparseable.
    assert {v for (v,) in _rows(db, "SELECT verdict FROM judgments WHERE set_id = 3")} == {"unparseable"}

    assert groundeval(["history", "show", "latest", "--history", url]) == 0
    out = capsys.readouterr().out
    assert "judge=mock-judge " in out and "status FAIL" in out
    assert "judgment set 2 [current] rejudge judge mock-judge" in out
    assert "judgment set 4 [kept] rejudge judge judge-x" in out


def _postgres_server() -> PostgresServer:
    """A throwaway PostgreSQL server of its own (the shared ``pg_server`` fixture must not be stopped)."""
    return PostgresServer()


STOP_PG_CONFTEST = """
import subprocess

_stopped = []

def pytest_runtest_setup(item):
    # The database goes away once the run is recorded as started and before any outcome is written.
    if not _stopped:
        _stopped.append(subprocess.run({command!r}, capture_output=True, timeout=60).returncode)
"""


def test_postgres_stopped_mid_run_fails_the_session_and_says_why(run, pytester, smoke):
    server = _postgres_server()
    try:
        server.start()
        url = f"postgresql://postgres@127.0.0.1:{server.port}/postgres"
        stop = [*server.prefix, str(server.bindir / "pg_ctl"), "-D", str(server.data), "-m", "immediate", "-w", "stop"]
        pytester.makeconftest(STOP_PG_CONFTEST.format(command=stop))
        # qa and adversarial items have default floors: the gate is armed and passes.
        result = run(f"--eval-dataset={smoke}", f"--eval-history={url}", "-n", "0", "-k", "qa or adversarial")
    finally:
        server.stop()
    out = result.stdout.str()
    assert "history: recording failed, the history of this run is incomplete: " in out
    lines = out.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("gate: "))
    assert lines[verdict] == "gate: PASS"
    assert lines[verdict + 1].startswith("exit status 1: the run could not be recorded in the history")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
