"""--eval-concurrency (issue 8): items are sent ahead while pytest reports them in order.

A recording target (the real reference target behind a thin wrapper) logs every
call it receives, and an autouse fixture logs every item a process sets up, so
the tests can compare what was sent with what ran.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "datasets" / "smoke"

RECORDING_CONFTEST = """
import json, os, threading
import pytest

LOG = {log!r}
FAIL_QUESTION = {fail!r}
_lock = threading.Lock()


def note(**fields):
    fields["worker"] = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with _lock, open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps(fields, ensure_ascii=False) + "\\n")


class Recording:
    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, question, find):
        note(event="sent", question=question)
        body = self.inner.generate(question, find)
        if FAIL_QUESTION and question.startswith(FAIL_QUESTION):
            # As if retrieval found nothing: no evidence, no cited claims.
            body["evidence"] = []
            body["claims"] = [c for c in body["claims"] if not c["markers"]]
        return body

    def records(self, step):
        note(event="records", label=step["label"], op=step["op"])
        return self.inner.records(step)


@pytest.fixture(scope="session")
def groundeval_target(groundeval_target):
    return Recording(groundeval_target)


@pytest.fixture(autouse=True)
def ran(request):
    note(event="ran", nodeid=request.node.nodeid)
    yield
"""


@pytest.fixture
def log(pytester: pytest.Pytester) -> Path:
    return pytester.path / "calls.jsonl"


def record(pytester: pytest.Pytester, log: Path, fail: str | None = None) -> None:
    pytester.makeconftest(RECORDING_CONFTEST.format(log=str(log), fail=fail))


def events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def questions(smoke: Path) -> dict[str, str]:
    """question → node id, for items that call generate."""
    manifest = json.loads((smoke / "manifest.json").read_text(encoding="utf-8"))
    return {
        item["question"]: f"smoke/manifest.json::{item['kind']}::{item['id']}"
        for item in manifest["items"]
        if "question" in item
    }


def test_k_sends_only_selected_items(run, pytester, smoke, log):
    record(pytester, log)
    result = run(f"--eval-dataset={smoke}", "-k", "cited", "--eval-concurrency=16")
    result.assert_outcomes(passed=2)
    sent = {questions(smoke)[e["question"]] for e in events(log) if e["event"] == "sent"}
    assert sent == {
        "smoke/manifest.json::adversarial::adv-smoke-cited-budget",
        "smoke/manifest.json::adversarial::adv-smoke-cited-oslo",
    }


def test_xdist_sends_each_item_once_and_only_from_the_worker_that_runs_it(run, pytester, smoke, log):
    record(pytester, log)
    result = run(f"--eval-dataset={smoke}", "-n", "2", "--eval-concurrency=16")
    result.assert_outcomes(passed=10)
    by_question = questions(smoke)
    sent = [(e["worker"], by_question[e["question"]]) for e in events(log) if e["event"] == "sent"]
    ran = {(e["worker"], e["nodeid"]) for e in events(log) if e["event"] == "ran"}
    assert len(sent) == len({nodeid for _, nodeid in sent}) == len(by_question)  # each once
    assert set(sent) <= ran  # sent only by the worker that ran it
    assert {w for w, _ in ran} == {"gw0", "gw1"}
    # And workers did send ahead: some item was sent before its worker set it up.
    order = [
        (e["event"], e.get("nodeid") or by_question[e["question"]]) for e in events(log) if e["event"] != "records"
    ]
    assert any(order.index(("sent", n)) < order.index(("ran", n)) for _, n in sent)


def test_temporal_steps_stay_in_order_under_concurrency(run, pytester, smoke, log):
    record(pytester, log)
    result = run(f"--eval-dataset={smoke}", "-m", "temporal", "--eval-concurrency=16")
    result.assert_outcomes(passed=3)
    manifest = json.loads((smoke / "manifest.json").read_text(encoding="utf-8"))
    expected = sorted(
        [step["op"] for step in item["setup"]] for item in manifest["items"] if item["kind"] == "temporal"
    )
    by_label: dict[str, list[str]] = defaultdict(list)
    for e in events(log):
        if e["event"] == "records":
            by_label[e["label"]].append(e["op"])
    assert sorted(by_label.values()) == expected


def test_exitfirst_reports_nothing_for_items_that_did_not_run(run, pytester, smoke, log):
    record(pytester, log, fail="How long")  # qa-smoke-index-build loses its evidence and fails
    report = pytester.path / "report.json"
    result = run(f"--eval-dataset={smoke}", "-k", "qa", "-x", "--eval-concurrency=8", f"--eval-report={report}")
    result.assert_outcomes(passed=2, failed=1)
    ran = [e["nodeid"] for e in events(log) if e["event"] == "ran"]
    items = json.loads(report.read_text())["items"]
    reported = [i["id"] for i in items if not i["notRun"]]
    assert sorted(reported) == sorted(n.split("::")[-1] for n in ran)
    # An item that never ran is accounted for as an error (notRun), never as a result.
    not_run = [i for i in items if i["notRun"]]
    assert [i["id"] for i in not_run] == ["qa-smoke-draft-with-errors"]
    assert not_run[0]["error"].startswith("not run:") and not_run[0]["pass"] is False


def test_same_metrics_at_concurrency_1_and_16(run, pytester, smoke):
    figures = {}
    for n in (1, 16):
        report = pytester.path / f"r{n}.json"
        result = run(f"--eval-dataset={smoke}", f"--eval-concurrency={n}", f"--eval-report={report}")
        result.assert_outcomes(passed=10)
        metrics = json.loads(report.read_text())["metrics"]
        figures[n] = {k: v for k, v in metrics.items() if not k.startswith("latency")}
    assert figures[1] == figures[16]


@pytest.mark.parametrize("value", ["0", "-2", "many", "1.5"])
def test_invalid_concurrency_is_a_usage_error(run, pytester, smoke, value):
    result = run(f"--eval-dataset={smoke}", f"--eval-concurrency={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{value!r} is not a valid value for --eval-concurrency*whole number >= 1*"])


FIXTURES_CONFTEST = """
import json
import pytest

LOG = {log!r}


@pytest.hookimpl(trylast=True)
def pytest_runtest_call(item):
    funcargs = item.funcargs
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps({{
            "names": sorted(funcargs),
            "defs": sorted(item._request._fixture_defs),
            "values": [id(funcargs[n]) for n in sorted(funcargs) if n != "request"],
            "request": funcargs.get("request") is item._request,
        }}) + "\\n")
"""


def test_every_item_gets_the_session_fixtures_pytest_gave_the_first(run, pytester, smoke, log):
    # From the second item on, the group's session-scoped fixture values are taken as pytest
    # cached them (collect.EvalItem._fill_from_session): each item must see what pytest gave the first.
    pytester.makeconftest(FIXTURES_CONFTEST.format(log=str(log)))
    result = run(f"--eval-dataset={smoke}", "-k", "qa or adversarial", "--eval-concurrency=4")
    result.assert_outcomes(passed=7)
    seen = events(log)
    assert len(seen) == 7
    assert all(entry == seen[0] for entry in seen)
    assert seen[0]["names"] == ["groundeval_runner", "groundeval_target", "request"]
    assert seen[0]["defs"] == ["groundeval_runner", "groundeval_target"] and seen[0]["request"]
