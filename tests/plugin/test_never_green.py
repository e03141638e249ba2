"""Never green by accident: every way a run could pass, lose results or blame the wrong item
(issue 12; docs/gate.md, what the gate guarantees). Each test fails on the code before the fix."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# -- 1. options that would measure nothing -------------------------------------------------


@pytest.mark.parametrize("how", ["flag", "env", "ini"])
def test_an_empty_dataset_value_is_a_usage_error(run, pytester, monkeypatch, how):
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    args: list[str] = ["--eval-strict"] if how != "flag" else []
    if how == "flag":
        args += ["--eval-dataset=", "--eval-strict", f"--eval-report={pytester.path / 'r.json'}"]
    elif how == "env":
        monkeypatch.setenv("GROUNDEVAL_DATASET", "")
    else:
        pytester.makeini("[pytest]\neval_dataset =\n")
    result = run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*[Ee][Vv][Aa][Ll]?[Dd][Aa][Tt][Aa][Ss][Ee][Tt]* is given but empty (an unset CI variable?)*"]
    )
    assert not (pytester.path / "r.json").exists()


@pytest.mark.parametrize(
    "flag", ["--eval-report=r.json", "--eval-floors=floors.json", "--eval-baseline=b.json", "--eval-strict"]
)
def test_gate_options_without_a_dataset_are_usage_errors(run, pytester, flag):
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    (pytester.path / "floors.json").write_text("{}")
    (pytester.path / "b.json").write_text("{}")
    result = run(flag)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{flag.split('=')[0]} given, but no dataset: nothing would be measured*"])


def test_a_manifest_path_counts_as_a_dataset_for_those_options(run, pytester, smoke):
    # An IDE runs one item by node id; --eval-report still has a dataset to report on.
    result = run("smoke/manifest.json::qa::qa-smoke-index-build", f"--eval-report={pytester.path / 'r.json'}")
    assert result.ret == 0
    assert json.loads((pytester.path / "r.json").read_text())["metrics"]["items"] == 1


# -- 11. credentials in a target URL ----------------------------------------------------------


def test_credentials_in_the_url_are_refused_and_never_printed(run, pytester, smoke):
    report = pytester.path / "r.json"
    result = run(
        f"--eval-dataset={smoke}",
        "--eval-url=http://user:SECRET@127.0.0.1:9",
        "--eval-api-key=k",
        f"--eval-report={report}",
        "--junitxml=j.xml",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*carries credentials*--eval-api-key*"])
    text = result.stdout.str() + result.stderr.str()
    assert "SECRET" not in text and "user:" not in text
    assert not report.exists()


# -- 3. items that never ran -------------------------------------------------------------------

CRASHING_TARGET = """
import os
import time
import pytest

CRASH_ON = {crash!r}
SLOW_ON = {slow!r}

@pytest.fixture(scope="session")
def groundeval_target(groundeval_target):
    class Crashing:
        def __getattr__(self, name):
            return getattr(groundeval_target, name)

        def generate(self, question, find):
            if any(question.startswith(prefix) for prefix in SLOW_ON):
                time.sleep(1.0)
            if any(question.startswith(prefix) for prefix in CRASH_ON):
                os._exit(1)
            return groundeval_target.generate(question, find)

    return Crashing()
"""


def test_items_that_never_ran_after_the_restart_budget_are_errors(run, pytester, smoke):
    # Three items crash their worker; with one restart allowed xdist gives up, and the
    # items it never handed out must be accounted for, not dropped.
    pytester.makeconftest(CRASHING_TARGET.format(crash=("What is", "När", "How long"), slow=()))
    report = pytester.path / "r.json"
    result = run(
        f"--eval-dataset={smoke}",
        "-n",
        "2",
        "--max-worker-restart=1",
        f"--eval-report={report}",
        "--eval-concurrency=1",
    )
    assert result.ret != 0
    data = json.loads(report.read_text())
    assert data["interrupted"] is True
    assert data["metrics"]["items"] == 10  # every collected item accounted for
    not_run = [i for i in data["items"] if i["notRun"]]
    assert not_run and all(i["error"].startswith("not run:") for i in not_run)
    assert data["metrics"]["errors"] >= len(not_run) + 2
    assert data["gate"]["passed"] is False
    assert any(c["metric"] == "notRun" and c["outcome"] == "FAIL" for c in data["gate"]["checks"])
    result.stdout.fnmatch_lines(["*never ran; they count as errors (notRun)*", "gate: FAIL"])
    # The temporal metric is measured over every temporal item, not skipped as n/a.
    assert data["metrics"]["temporalAccuracy"] is not None


# -- 6. a crash blamed on the items in flight --------------------------------------------------


def test_a_crash_is_blamed_on_the_items_in_flight_and_the_culprit_is_not_retried(run, pytester, smoke):
    # The second question makes the in-process target end its worker while the first (slow)
    # is the item pytest is running: xdist alone would blame the first and hand the second
    # to a new worker, which it would crash too.
    pytester.makeconftest(CRASHING_TARGET.format(crash=("När",), slow=("What is",)))
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={smoke}", "-n", "1", "--eval-concurrency=4", f"--eval-report={report}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.stdout.str().count("replacing crashed worker") == 1  # the culprit never ran again
    data = json.loads(report.read_text())
    items = {i["id"]: i for i in data["items"]}
    assert len(items) == 10 and data["metrics"]["items"] == 10  # every item accounted for, once
    culprit = items["qa-smoke-goteborg-office"]
    assert culprit["error"] and "crashed while" in culprit["error"] and "qa-smoke-goteborg-office" in culprit["error"]
    blamed = [i for i in items.values() if i["error"] and "crashed while" in i["error"]]
    # Every item blamed is named in the culprit's message; the others kept their real results.
    assert all(i["id"] in culprit["error"] for i in blamed)
    assert all(i["pass"] for i in items.values() if i not in blamed)
    assert data["metrics"]["errors"] == len(blamed)
    # The item xdist blamed (the slow first one) was in flight too, and says so.
    assert items["qa-smoke-alpha-budget"] in blamed


@pytest.mark.parametrize("restarts", [0, 1])
def test_items_in_flight_when_the_restart_budget_runs_out_are_crashes_not_not_run(run, pytester, smoke, restarts):
    # xdist hands each worker two items first: one gets (alpha-budget, goteborg-office), the
    # other (index-build, draft-with-errors). At concurrency 4 each worker sends both at once;
    # goteborg-office ends its worker while the slow alpha-budget is still in flight, and
    # index-build ends the other. With the restart budget spent, xdist stops before the dead
    # workers' items reach anyone: those in flight crashed, only the others never ran.
    pytester.makeconftest(CRASHING_TARGET.format(crash=("När", "How long"), slow=("What is",)))
    report = pytester.path / "r.json"
    result = run(
        f"--eval-dataset={smoke}",
        "-n",
        "2",
        "--eval-concurrency=4",
        f"--max-worker-restart={restarts}",
        f"--eval-report={report}",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data = json.loads(report.read_text())
    items = {i["id"]: i for i in data["items"]}
    assert len(data["items"]) == len(items) == 10 and data["metrics"]["items"] == 10
    for item_id in ("qa-smoke-alpha-budget", "qa-smoke-goteborg-office", "qa-smoke-index-build"):
        item = items[item_id]
        assert not item["notRun"], item
        assert item["error"].startswith("worker gw") and " crashed while " in item["error"], item
        assert item_id in item["error"], item
    # Every other error is a crash naming the item (a replacement worker may run some items).
    crashed = [i for i in items.values() if i["error"] and not i["notRun"]]
    assert all(i["error"].startswith("worker gw") and i["id"] in i["error"] for i in crashed)
    # Only items never sent to the target are notRun, and they say which crash ended the session.
    not_run = [i for i in items.values() if i["notRun"]]
    assert not_run and all(i["error"].startswith("not run: the session ended after worker") for i in not_run)
    assert all("crashed" in i["error"] for i in not_run)
    assert data["metrics"]["errors"] == len(crashed) + len(not_run) and data["gate"]["passed"] is False
    result.stdout.no_fnmatch_line("*the session ended before it ran*")


# -- 4. several datasets in one session ------------------------------------------------------


def _second_dataset(pytester: pytest.Pytester, smoke: Path, version: str, break_temporal: bool) -> Path:
    other = pytester.path / "other"
    shutil.copytree(smoke, other)
    manifest = json.loads((other / "manifest.json").read_text(encoding="utf-8"))
    manifest["version"] = version
    if break_temporal:
        for item in manifest["items"]:
            if item["kind"] == "temporal" and "count" in item["expect"]:
                item["expect"]["count"] = item["expect"]["count"] + 5
                break
    (other / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
    return other


def test_two_datasets_are_gated_one_by_one(run, pytester, smoke):
    # The same item ids in both manifests: nothing may merge.
    other = _second_dataset(pytester, smoke, "smoke-1-other", break_temporal=True)
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={smoke}", "other", f"--eval-report={report}")
    result.assert_outcomes(passed=19, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # one gate fails, so the session does
    # Each dataset has its own section, in the order its items ran; the verdict comes last.
    result.stdout.fnmatch_lines(
        ["*groundeval gate: smoke-1 *", "dataset smoke-1 *items 10 (failed 0, errors 0)", "*", "gate smoke-1: PASS"]
    )
    result.stdout.fnmatch_lines(
        [
            "*groundeval gate: smoke-1-other*",
            "dataset smoke-1-other *items 10 (failed 1, errors 0)",
            "temporalAccuracy*0.6667*FAIL*",
            "gate smoke-1-other: FAIL",
        ]
    )
    result.stdout.fnmatch_lines(["gate: FAIL (smoke-1-other)"])
    data = json.loads(report.read_text())
    by_version = {d["datasetVersion"]: d for d in data["datasets"]}
    assert sorted(by_version) == ["smoke-1", "smoke-1-other"]
    assert [len(d["items"]) for d in data["datasets"]] == [10, 10]
    assert by_version["smoke-1"]["gate"]["passed"] is True and by_version["smoke-1-other"]["gate"]["passed"] is False
    from pytest_groundeval.cli import main as groundeval

    assert groundeval(["gate", "--report", str(report)]) == 1
    assert other.exists()


# -- 5. cancelled and killed runs ------------------------------------------------------------------

SLOW_TARGET = """
import asyncio
import pytest

@pytest.fixture(scope="session")
def groundeval_target(groundeval_target):
    class Slow:
        # Async, as an HTTP target's calls are, so that an interrupt cancels the wait.
        def __getattr__(self, name):
            return getattr(groundeval_target, name)

        async def agenerate(self, question, find):
            await asyncio.sleep({delay})
            return await groundeval_target.agenerate(question, find)

    return Slow()
"""


def _start(pytester: pytest.Pytester, smoke: Path, shared_target, report: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
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
        "no:anyio",  # see NO_THIRD_PARTY_PLUGINS in conftest.py
        f"--eval-url={shared_target.base_url}",
        f"--eval-api-key={shared_target.api_key}",
        f"--eval-report={report}",
        "--eval-concurrency=1",
        "-k",
        "qa or adversarial",
        *extra,
    ]
    return subprocess.Popen(
        command,
        cwd=pytester.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=_as_from_a_terminal,
    )


def _as_from_a_terminal() -> None:
    """In the child before it runs: Ctrl-C's default disposition, as a shell gives a command it starts.

    An ignored signal stays ignored across exec, and Python installs its KeyboardInterrupt handler
    only for a SIGINT that is not ignored; a worker of this suite that has SIGINT ignored by then
    (whatever ran in it before) would start a child deaf to the Ctrl-C these tests send.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_spooled_items(report: Path, n: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for spool in report.parent.glob(f".{report.name}.*.items.tmp"):
            lines = spool.read_text(encoding="utf-8").splitlines()
            if sum(1 for line in lines if not line.startswith('{"groundevalContext"')) >= n:
                return
        time.sleep(0.05)
    raise AssertionError(f"no spool with {n} items beside {report}")


def test_sigterm_is_handled_like_ctrl_c(pytester, smoke, shared_target):
    pytester.makeconftest(SLOW_TARGET.format(delay=0.4))
    report = pytester.path / "r.json"
    child = _start(pytester, smoke, shared_target, report)
    try:
        _wait_for_spooled_items(report, 2)
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode not in (0, None)
    data = json.loads(report.read_text())
    assert data["interrupted"] is True and data["gate"]["passed"] is False
    assert data["metrics"]["items"] == 7
    assert sum(1 for i in data["items"] if not i["notRun"]) >= 2
    assert list(report.parent.glob(f".{report.name}.*.tmp")) == []
    assert b"SIGTERM" in out


def test_ctrl_c_before_the_first_item_finishes_still_writes_a_report(pytester, smoke, shared_target):
    pytester.makeconftest(SLOW_TARGET.format(delay=30))
    report = pytester.path / "r.json"
    child = _start(pytester, smoke, shared_target, report)
    try:
        for line in child.stdout:  # wait until collection is over and the first item is running
            if b"selected" in line:
                break
        time.sleep(1.0)  # the first generate sleeps 30 s: no item has finished
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == pytest.ExitCode.INTERRUPTED
    data = json.loads(report.read_text())
    assert data["interrupted"] is True and data["gate"]["passed"] is False
    assert data["metrics"]["items"] == 7 and data["metrics"]["errors"] == 7, data["items"]


SWALLOWED_SIGNAL = """
import os
import signal
import time

import pytest

SIGNAL = signal.{signal}
sent = []


class Finalized:
    def __del__(self):
        # The signal arrives while a finalizer runs: Python prints "Exception ignored in"
        # and swallows its KeyboardInterrupt, and the session goes on.
        os.kill(os.getpid(), SIGNAL)
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            pass


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if not sent:
        sent.append(1)
        Finalized()
"""


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_swallowed_by_a_finalizer_still_stops_the_run(pytester, smoke, shared_target, name):
    # A Ctrl-C that lands inside a __del__ used to be lost: the run went on, 30 s an item.
    pytester.makeconftest(SLOW_TARGET.format(delay=30) + SWALLOWED_SIGNAL.format(signal=name))
    report = pytester.path / "r.json"
    child = _start(pytester, smoke, shared_target, report)
    try:
        out, _ = child.communicate(timeout=25)  # less than one item's generate
    finally:
        child.kill()
    assert b"Exception ignored in" in out and b"KeyboardInterrupt" in out, out.decode()
    assert child.returncode not in (0, None)
    data = json.loads(report.read_text())
    assert data["interrupted"] is True and data["gate"]["passed"] is False
    assert data["metrics"]["items"] == 7 and data["metrics"]["errors"] == 7, data["items"]
    if name == "SIGTERM":
        assert b"SIGTERM" in out
    else:
        assert child.returncode == pytest.ExitCode.INTERRUPTED


def _smoke_baseline(smoke: Path, path: Path) -> Path:
    """A baseline report of every smoke qa item (recall 1.0), as a finished run writes one."""
    from pytest_groundeval.core.gate import evaluate_gate
    from pytest_groundeval.core.metrics import compute_metrics
    from pytest_groundeval.core.outcome import ItemOutcome
    from pytest_groundeval.core.report import Report, write_report

    manifest = json.loads((smoke / "manifest.json").read_text())
    items = [ItemOutcome(id=item["id"], kind="qa", passed=True, evidence_expected=1, evidence_found=1)
             for item in manifest["items"] if item["kind"] == "qa"]  # fmt: skip
    metrics = compute_metrics(items)
    models = {"generate": "mock-generate", "embed": "mock-embed"}
    gate = evaluate_gate(metrics, dataset_version=manifest["version"], models=models)
    environment = {"pluginVersion": "0", "python": "3", "platform": "test", "gitCommit": None}
    report = Report(dataset_version=manifest["version"], models=models, started_at_ms=0, duration_ms=1.0,
                    metrics=metrics, gate=gate, environment=environment, items=items)  # fmt: skip
    return write_report(path, report)


def _kill(child: subprocess.Popen) -> None:
    try:
        child.kill()  # SIGKILL: no teardown, no report
        child.communicate(timeout=60)
    finally:
        child.kill()


def test_items_of_a_killed_run_are_recovered(pytester, smoke, shared_target, capsys):
    pytester.makeconftest(SLOW_TARGET.format(delay=0.4))
    report = pytester.path / "r.json"
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"falsehoodRejection": 0.5}))
    baseline = _smoke_baseline(smoke, pytester.path / "base.json")
    child = _start(pytester, smoke, shared_target, report, f"--eval-floors={floors}", f"--eval-baseline={baseline}")
    try:
        _wait_for_spooled_items(report, 2)
    finally:
        _kill(child)
    assert not report.exists()
    from pytest_groundeval.cli import main as groundeval

    assert groundeval(["report", "--recover", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["interrupted"] is True and data["gate"]["passed"] is False
    assert data["datasetVersion"] == "smoke-1" and data["models"]["generate"] == "mock-generate"
    # Every collected item is in the report: the ones that ran, and the others as notRun errors.
    ran = [i for i in data["items"] if not i["notRun"]]
    never = [i for i in data["items"] if i["notRun"]]
    assert len(ran) >= 2 and never, data["items"]
    assert data["metrics"]["items"] == len(data["items"]) == 7
    assert all(i["error"].startswith("not run: the run was killed") for i in never)
    assert data["metrics"]["errors"] >= len(never)
    assert f"recovered {len(ran)} items" in capsys.readouterr().out
    notrun = [c for c in data["gate"]["checks"] if c["metric"] == "notRun"]
    assert notrun[0]["outcome"] == "FAIL" and notrun[0]["reason"].startswith(f"{len(never)} of 7 collected items")
    # The floors and the baseline the run used, recorded and applied.
    assert data["floors"]["falsehoodRejection"] == 0.5
    assert data["baseline"]["path"] == "base.json" and data["baseline"]["qaItems"] == 4
    assert data["baseline"]["retrievalRecall"] == 1.0
    falsehood = [c for c in data["gate"]["checks"] if c["metric"] == "falsehoodRejection"]
    assert falsehood[0]["bound"] == 0.5
    assert list(report.parent.glob(f".{report.name}.*.tmp")) == []
    assert groundeval(["gate", "--report", str(report)]) == 1
    assert groundeval(["report", "--recover", str(report)]) == 2  # nothing left to recover


def test_a_run_killed_before_its_first_item_finished_is_recovered_as_never_run(pytester, smoke, shared_target):
    pytester.makeconftest(SLOW_TARGET.format(delay=30))
    report = pytester.path / "r.json"
    child = _start(pytester, smoke, shared_target, report)
    try:
        for line in child.stdout:  # wait until collection is over and the first item is running
            if b"selected" in line:
                break
        time.sleep(1.0)  # the first generate sleeps 30 s: no item has finished
    finally:
        _kill(child)
    from pytest_groundeval.cli import main as groundeval

    assert groundeval(["report", "--recover", str(report)]) == 0
    data = json.loads(report.read_text())
    assert [i["notRun"] for i in data["items"]] == [True] * 7
    assert data["metrics"]["items"] == 7 and data["metrics"]["errors"] == 7
    # The smoke qa items keep their expected evidence in the recall denominator.
    assert data["metrics"]["retrievalRecall"] == 0.0
    assert data["gate"]["passed"] is False


# -- 15. the same exit status with and without xdist -----------------------------------------


def _break_manifest(smoke: Path) -> None:
    manifest = json.loads((smoke / "manifest.json").read_text(encoding="utf-8"))
    manifest["items"][0]["expectedEvidence"] = [42]
    (smoke / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_manifest_that_does_not_load_exits_2_with_or_without_xdist(run, pytester, smoke, workers):
    # pytest interrupts a plain run on a collection error; an xdist controller only counted it
    # as a failure (exit 1, and exit 0 with gate PASS once --eval-report gave the gate a run).
    _break_manifest(smoke)
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={smoke}", "-n", workers, f"--eval-report={report}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*qa-smoke-alpha-budget*expectedEvidence*"])
    result.stdout.no_fnmatch_line("gate: PASS")
    data = json.loads(report.read_text())
    assert data["interrupted"] is True and data["gate"]["passed"] is False
    result = run(f"--eval-dataset={smoke}", "-n", workers)
    assert result.ret == pytest.ExitCode.INTERRUPTED


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_collection_error_never_ends_in_a_passing_gate(run, pytester, smoke, workers):
    # With --continue-on-collection-errors the dataset runs and passes its gate, but a test
    # file that does not import is still a failed session, as pytest alone would say.
    pytester.makepyfile(test_broken="import a_module_that_does_not_exist\n")
    result = run(
        f"--eval-dataset={smoke}", "test_broken.py", "-k", "temporal", "-n", workers, "--continue-on-collection-errors"
    )
    result.stdout.fnmatch_lines(["*ERROR*test_broken.py*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# -- 14. the summary's words ------------------------------------------------------------------


def test_a_target_that_never_started_still_names_the_dataset(run, pytester, smoke):
    command = f'{sys.executable} -c "import sys; sys.exit(3)"'
    result = run(f"--eval-dataset={smoke}", f"--eval-spawn={command}", "-k", "qa")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["dataset smoke-1  lineage*items 4 (failed 0, errors 4)*"])
    result.stdout.no_fnmatch_line("dataset unknown*")


@pytest.mark.xdist_group("down_target")
@pytest.mark.parametrize(
    ("how", "stop"),
    [
        ("down", "*groundeval: the target at http://127.0.0.1:9 is unavailable*"),
        ("down-n2", "*groundeval: the target at http://127.0.0.1:9 is unavailable*"),
        ("refused", "*groundeval: the target refused the harness's API key*401*"),
    ],
    ids=["down", "down-n2", "refused"],
)
def test_a_target_that_never_answered_is_not_a_target_that_returned_no_claims(
    run, shared_target, smoke, down_target_run, how, stop
):
    # The claim floors still FAIL, but the reason is the stop the summary names, not silence.
    if how.startswith("down"):
        # --eval-url=http://127.0.0.1:9 -k qa, and -n 2 for down-n2: runs shared with test_plugin.py.
        result = down_target_run(*(["-n", "2"] if how == "down-n2" else [])).result
    else:
        target = [f"--eval-url={shared_target.base_url}", "--eval-api-key=not-the-key"]
        result = run(f"--eval-dataset={smoke}", *target, "-k", "qa")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "claimSupportPrecision*FAIL  no qa item ran: all 4 qa items errored (see errors), so no claim was measured",
            "claimSupportRecall*FAIL  no qa item ran: all 4 qa items errored*",
            "gate: FAIL",
        ]
    )
    result.stdout.fnmatch_lines([stop])
    result.stdout.no_fnmatch_line("*returned no claims*")


def test_claims_missing_beside_errors_do_not_say_the_items_ran():
    from pytest_groundeval.core.gate import evaluate_gate
    from pytest_groundeval.core.metrics import compute_metrics
    from pytest_groundeval.core.outcome import ItemOutcome

    def reasons(outcomes: list[ItemOutcome]) -> list[str]:
        result = evaluate_gate(compute_metrics(outcomes), dataset_version="v1", models={"generate": "g", "embed": "e"})
        return [c.reason for c in result.checks if c.metric == "claimSupportPrecision" and c.outcome == "FAIL"]

    down = ItemOutcome(id="q", kind="qa", passed=False, error="target down", evidence_expected=1)
    assert reasons([down]) == ["no qa item ran: the qa item errored (see errors), so no claim was measured"]
    # An adversarial item answered, the qa item errored: nothing says the qa item ran.
    answered = ItemOutcome(id="a", kind="adversarial", passed=True)
    assert reasons([down, answered]) == [
        "no claim measured for the 1 qa item (1 item of the run errored, see errors): nothing supported, nothing to measure"
    ]


def test_one_silent_qa_item_is_one_item_in_the_gate_text():
    from pytest_groundeval.core.gate import evaluate_gate
    from pytest_groundeval.core.metrics import compute_metrics
    from pytest_groundeval.core.outcome import ItemOutcome

    metrics = compute_metrics([ItemOutcome(id="q", kind="qa", passed=False, evidence_expected=1)])
    result = evaluate_gate(metrics, dataset_version="v1", models={"generate": "g", "embed": "e"})
    reasons = [c.reason for c in result.checks if c.metric == "claimSupportPrecision"]
    assert reasons == ["1 qa item ran but the target returned no claims: nothing supported, nothing to measure"]


def test_a_sigterm_after_the_run_loop_lets_the_session_finish(pytester, smoke):
    # Once every item has run, the session is writing its report: a late SIGTERM must not
    # cut it short with a traceback; before that, it interrupts like Ctrl-C.
    config = pytester.parseconfigure("-p", "no:benchmark", f"--eval-dataset={smoke}")
    gate = config.pluginmanager.get_plugin("groundeval-gate")
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
            gate._on_sigterm(signal.SIGTERM, None)
        assert gate.interrupted_by == "SIGTERM"
        gate.interrupted_by = None
        gate.finishing = True
        gate._on_sigterm(signal.SIGTERM, None)  # returns: the report is being written
        assert gate.interrupted_by is None
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # a second one ends the process
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- issue 19: inputs that must be refused ----------------------------------------------------------


def _scripted_module():
    """tests/targets/servers/scripted.py (a stdlib HTTP server whose replies the test sets), loaded by path."""
    import importlib.util

    if "groundeval_scripted_server" not in sys.modules:
        path = Path(__file__).parents[1] / "targets" / "servers" / "scripted.py"
        spec = importlib.util.spec_from_file_location("groundeval_scripted_server", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["groundeval_scripted_server"] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules["groundeval_scripted_server"]


@pytest.fixture
def scripted_target():
    """A target written in the test: ``/readyz`` and ingest answer, ``/v1/generate`` says what the test sets."""
    scripted = _scripted_module()
    server = scripted.serve()
    server.routes["/readyz"] = scripted.Reply(body=b'{"status": "ready"}')
    server.routes["/v1/info"] = scripted.Reply(status=404, body=b"{}")
    server.routes["/v1/documents"] = scripted.Reply(body=b'{"documentId": "a.txt", "txStart": 1}')
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _one_qa_dataset(root: Path, expected: str = "Alpha ships in May.") -> Path:
    """A dataset of one qa item over one text document, ``Alpha ships in May.``."""
    import xxhash

    (root / "corpus").mkdir(parents=True)
    text = b"Alpha ships in May.\n"
    (root / "corpus" / "a.txt").write_bytes(text)
    manifest = {
        "version": "v1",
        "corpus": [{"name": "a.txt", "label": "A", "file": "a.txt", "format": "text"}],
        "corpusHashes": {"a.txt": xxhash.xxh3_64_hexdigest(text)},
        "items": [{"id": "qa-alpha", "kind": "qa", "question": "When does Alpha ship?", "find": "A",
                   "expectedEvidence": [expected], "truths": ["Alpha ships in May."]}],
    }  # fmt: skip
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def _alpha_answer(**extra: object) -> bytes:
    """A correct generate response for ``_one_qa_dataset``'s item, with ``extra`` fields."""
    return json.dumps({
        "answer": "Alpha ships in May [S1].",
        "evidence": [{"marker": "S1", "document": "a.txt", "start": 0, "end": 19}],
        "claims": [{"text": "Alpha ships in May", "start": 0, "end": 18, "markers": ["S1"], "verdict": "supported"}],
        **extra,
    }).encode()  # fmt: skip


@pytest.mark.parametrize("usage", [{"promptTokens": -5000, "completionTokens": 10}, {"completionTokens": -1}])
def test_negative_token_counts_are_a_malformed_response(run, pytester, scripted_target, usage):
    # A negative count would pull tokensPerQuery under any ceiling: the response is refused instead.
    scripted = _scripted_module()
    dataset = _one_qa_dataset(pytester.path / "ds")
    (pytester.path / "floors.json").write_text('{"tokensPerQuery": 100}')
    args = (f"--eval-dataset={dataset}", f"--eval-url={scripted_target.url}", "--eval-api-key=k",
            "--eval-floors=floors.json", f"--eval-report={pytester.path / 'r.json'}")  # fmt: skip
    scripted_target.routes["/v1/generate"] = scripted.Reply(body=_alpha_answer(usage={"promptTokens": 50}))
    assert run(*args).ret == 0  # the same answer with an honest count passes
    scripted_target.routes["/v1/generate"] = scripted.Reply(body=_alpha_answer(usage=usage))
    result = run(*args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*generate returned a malformed response: field 'usage.*Tokens' must be an integer >= 0, got -*"]
    )
    item = json.loads((pytester.path / "r.json").read_text())["items"][0]
    assert item["error"] and item["promptTokens"] is None


def test_expected_evidence_missing_from_the_corpus_blames_the_dataset_not_the_target(run, pytester, scripted_target):
    # Before: the item ran and failed "1 of 1 expected evidence strings not retrieved" (exit 1).
    scripted = _scripted_module()
    scripted_target.routes["/v1/generate"] = scripted.Reply(body=_alpha_answer())
    dataset = _one_qa_dataset(pytester.path / "ds", expected="Alpha ships in June.")
    result = run(f"--eval-dataset={dataset}", f"--eval-url={scripted_target.url}", "--eval-api-key=k")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error, as every broken manifest
    assert (
        "manifest.json: item 'qa-alpha', field items[0].expectedEvidence[0]: the expected evidence "
        "string 'Alpha ships in June.' does not occur in the canonical text"
    ) in result.stdout.str()
    assert not [r for r in scripted_target.requests if r[1] == "/v1/generate"]


TARGET_KEY = "sk-tg-5b1c0e93f7d2a8c4e6"


def _key_pieces(key: str, size: int = 8) -> list[bytes]:
    """Every run of ``size`` characters of ``key`` (docs/options.md, "Keys": a piece of a key is masked too)."""
    return [key[i : i + size].encode() for i in range(len(key) - size + 1)]


@pytest.mark.parametrize("echo", ["error-body", "cut-body", "answer"])
def test_a_target_echoing_its_key_gets_it_scrubbed_from_every_output(run, pytester, scripted_target, echo):
    # The target quotes the request's Authorization header: in a 500 page, or in its answer.
    scripted = _scripted_module()
    if echo == "error-body":
        reply = scripted.Reply(status=500, body=f"<h1>500</h1><pre>Authorization: Bearer {TARGET_KEY}</pre>".encode())
    elif echo == "cut-body":
        # The key straddles the 500-character body excerpt: a cut through it must not leave a piece.
        reply = scripted.Reply(status=500, body=("A" * 470 + f"Bearer {TARGET_KEY}" + "B" * 100).encode())
    else:
        answer = json.loads(_alpha_answer())
        answer["answer"] = f"Alpha ships in May [S1]. My key is {TARGET_KEY}."
        answer["traceId"] = f"trace-{TARGET_KEY}"
        answer["claims"].append({"text": f"My key is {TARGET_KEY}.", "start": 25, "end": 25 + 11 + len(TARGET_KEY),
                                 "markers": ["S1"], "verdict": "supported"})  # fmt: skip
        reply = scripted.Reply(body=json.dumps(answer).encode())
    scripted_target.routes["/v1/generate"] = reply
    dataset = _one_qa_dataset(pytester.path / "ds")
    out = pytester.path / "out"
    out.mkdir()
    result = run(f"--eval-dataset={dataset}", f"--eval-url={scripted_target.url}", f"--eval-api-key={TARGET_KEY}",
                 f"--eval-report={out / 'r.json'}", f"--junitxml={out / 'j.xml'}", f"--eval-markdown={out / 'g.md'}",
                 f"--eval-html={out / 'r.html'}", f"--eval-history=sqlite:///{out / 'h.db'}", "-rA", "-vv")  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # an error, or a supported claim that is not true
    item = json.loads((out / "r.json").read_text())["items"][0]
    if echo == "error-body":
        assert "HTTP 500" in item["error"] and "Bearer ***" in item["error"]  # the rest of the body stays
    elif echo == "cut-body":
        assert "HTTP 500" in item["error"] and "Bearer ***" in item["error"] and "A" * 50 in item["error"]
    else:
        assert "My key is ***." in item["detail"]
    files = sorted(p for p in out.rglob("*") if p.is_file())
    assert {p.name for p in files} >= {"r.json", "j.xml", "g.md", "r.html", "h.db"}
    printed = result.stdout.str().encode() + result.stderr.str().encode()
    for piece in _key_pieces(TARGET_KEY):
        assert piece not in printed, piece
        for path in files:
            assert piece not in path.read_bytes(), (path.name, piece)


def test_the_judge_key_is_never_in_the_debug_log(run, pytester, smoke, monkeypatch):
    key = "sk-judge-secret-77aa01"
    monkeypatch.setenv("GROUNDEVAL_JUDGE_API_KEY", key)
    result = run(f"--eval-dataset={smoke}", "--eval-judge-url=http://127.0.0.1:9/v1", "--eval-judge-model=m",
                 "--debug=debug.log", "--collect-only")  # fmt: skip
    assert result.ret == 0
    log = (pytester.path / "debug.log").read_text()
    assert "--eval-judge-url=http://127.0.0.1:9/v1" in log  # the argv is there, the key is not
    assert key not in log
    # Given on the command line, it is refused (and never echoed).
    monkeypatch.delenv("GROUNDEVAL_JUDGE_API_KEY")
    refused = run(f"--eval-dataset={smoke}", "--eval-judge-url=http://127.0.0.1:9/v1", "--eval-judge-model=m",
                  f"--eval-judge-api-key={key}", "--collect-only")  # fmt: skip
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*judge's API key was given by --eval-judge-api-key*GROUNDEVAL_JUDGE_API_KEY*"])
    assert key not in refused.stdout.str() + refused.stderr.str()


# -- issue 19: nothing gated is not a pass --------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]

NO_TARGET = ("-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:anyio")
"""The options of the runs below, which need no target (``run`` would give them one): ``run``'s own, without
the installed plugins that are not ours (NO_THIRD_PARTY_PLUGINS in conftest.py; Hypothesis's, imported
again by every in-process run that loads it, cost about a second of CPU a run)."""


def _dataset(pytester, name: str, floors=..., edit=None) -> Path:
    """A copy of ``datasets/<name>`` in the pytester directory; ``floors`` replaces the manifest's
    ``floors`` (``None`` removes them), ``edit`` changes the manifest dict in place."""
    target = pytester.path / name
    shutil.copytree(ROOT / "datasets" / name, target)
    manifest = target / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    if floors is None:
        data.pop("floors", None)
    elif floors is not ...:
        data["floors"] = floors
    if edit is not None:
        edit(data)
    manifest.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return target


def test_expertqa_default_run_gates_a_quality_metric(pytester):
    # 144 of 180 items fail their own check; the gate used to check only errors and pass.
    dataset = _dataset(pytester, "expertqa")
    result = pytester.runpytest(*NO_TARGET, f"--eval-dataset={dataset}")
    result.stdout.re_match_lines(
        [r"evidenceRiskScore\s+0\.3019 \[[\d.]+, [\d.]+\] >= 0\.2800\s+PASS\s+0\.3019 >= 0\.2800$"]
    )
    assert "qualityBounds" not in result.stdout.str()
    assert result.ret == 0
    result.stdout.fnmatch_lines(["gate: PASS"])


def test_a_run_that_gates_only_errors_fails_saying_what_was_measured(pytester):
    dataset = _dataset(pytester, "expertqa", floors=None)
    result = pytester.runpytest(*NO_TARGET, f"--eval-dataset={dataset}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "qualityBounds * FAIL  nothing gated: no quality metric was compared with a bound (only error counts); "
            'measured: evidenceRiskScore 0.3019; arm a floor in the dataset manifest\'s "floors" or a floors file '
            "(--eval-floors FILE, *), or measure without gating with --eval-no-gate*",
            "gate: FAIL",
        ]
    )


def test_default_floors_that_are_all_n_a_gate_nothing(pytester):
    # A citation dataset under the default floors: every default bound is n/a, none compared.
    dataset = _dataset(pytester, "citation-smoke", floors=None)
    report = pytester.path / "r.json"
    result = pytester.runpytest(*NO_TARGET, f"--eval-dataset={dataset}", f"--eval-report={report}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*nothing gated*measured: citationMetadataAccuracy 0.7143, evidenceRiskScore 1.0000;*"]
    )
    # groundeval gate re-applies the same rule to the saved report.
    from pytest_groundeval.cli import main

    assert main(["gate", "--report", str(report)]) == 1


@pytest.mark.parametrize("how", ["flag", "ini", "env"])
def test_no_gate_measures_without_gating(pytester, monkeypatch, how):
    dataset = _dataset(pytester, "citation-smoke", floors={"citationMetadataAccuracy": 0.99})
    args = [*NO_TARGET, f"--eval-dataset={dataset}", f"--eval-report={pytester.path / 'r.json'}"]
    if how == "flag":
        args.append("--eval-no-gate")
    elif how == "ini":
        pytester.makeini("[pytest]\neval_no_gate = true\n")
    else:
        monkeypatch.setenv("GROUNDEVAL_NO_GATE", "1")
    result = pytester.runpytest(*args)
    # The floor would FAIL (0.7143 < 0.99); not gated, it is an INFO line and the run exits 0.
    assert result.ret == 0
    result.stdout.re_match_lines(
        [r"citationMetadataAccuracy\s+0\.7143 \[[\d.]+, [\d.]+\]\s+INFO  reported; no bound set"]
    )
    result.stdout.fnmatch_lines(["errors * PASS *", "gate: NOT GATED", "note: --eval-no-gate:*"])
    assert "qualityBounds" not in result.stdout.str()
    data = json.loads((pytester.path / "r.json").read_text())
    assert data["gate"]["gated"] is False and data["gate"]["passed"] is True
    assert data["floors"]["citationMetadataAccuracy"] == 0.99  # recorded: groundeval gate applies it


def test_a_run_not_gated_never_reads_as_pass_in_junit_or_history(pytester, capsys):
    # Before: the JUnit gate case passed and `history list` said PASS for a run whose floor would FAIL.
    import xml.etree.ElementTree as ET

    from pytest_groundeval.cli.history import history_main

    dataset = _dataset(pytester, "citation-smoke", floors={"citationMetadataAccuracy": 0.99})
    junit, db = pytester.path / "j.xml", f"sqlite:///{pytester.path / 'h.db'}"
    result = pytester.runpytest(*NO_TARGET, f"--eval-dataset={dataset}", "--eval-no-gate",
                                f"--junitxml={junit}", f"--eval-history={db}")  # fmt: skip
    assert result.ret == 0 and "gate: NOT GATED" in result.stdout.str()
    (case,) = [c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name", "").endswith("gate")]
    (skipped,) = case.findall("skipped")
    assert "not gated (--eval-no-gate)" in skipped.get("message", "") + (skipped.text or "")
    capsys.readouterr()  # the in-process run's own output
    assert history_main(["list", "--history", db]) == 0
    (row,) = capsys.readouterr().out.splitlines()[1:]
    assert " NOT GATED " in row and " PASS " not in row


def test_an_ini_boolean_that_is_not_one_is_a_usage_error_and_an_empty_one_falls_through(pytester, monkeypatch):
    # pytest's own "bool" ini type raised ValueError: an INTERNALERROR (exit 3) for "perhaps" or "".
    dataset = _dataset(pytester, "citation-smoke", floors={"citationMetadataAccuracy": 0.99})
    args = [*NO_TARGET, f"--eval-dataset={dataset}"]
    bad = pytester.runpytest(*args, "-o", "eval_no_gate=perhaps")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*'perhaps' is not a valid value for ini eval_no_gate: expected true or false*"])
    monkeypatch.setenv("GROUNDEVAL_NO_GATE", "1")  # an empty ini value leaves the environment's
    empty = pytester.runpytest(*args, "-o", "eval_no_gate=")
    assert empty.ret == 0 and "gate: NOT GATED" in empty.stdout.str()


ONE_ITEM_ERRORS = """
import pytest
from pytest_groundeval.targets.protocol import TargetError

@pytest.fixture(scope="session")
def groundeval_target(groundeval_target):
    class OneFails:
        def __getattr__(self, name):
            return getattr(groundeval_target, name)

        def generate(self, question, find):
            if question.startswith("What is the budget"):
                raise TargetError("POST /v1/generate: 500 from the test's target")
            return groundeval_target.generate(question, find)

    return OneFails()
"""


def test_no_gate_still_fails_a_run_whose_items_errored(run, pytester, smoke):
    pytester.makeconftest(ONE_ITEM_ERRORS)
    result = run(f"--eval-dataset={smoke}", "--eval-no-gate", "-n", "0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["errors * 1 <= 0 * FAIL *", "gate: FAIL (not gated: errors failed)"])
    # No quality bound was applied: the claim floors are INFO lines.
    result.stdout.re_match_lines([r"claimSupportPrecision\s+\S+ \[[\d.]+, [\d.]+\]\s+INFO  reported; no bound set"])


def test_manifest_floors_apply_and_a_floors_file_overrides_them_key_by_key(pytester):
    from pytest_groundeval.cli import main

    floors = {"citationMetadataAccuracy": 0.9, "evidenceRiskScore": 0.5}
    dataset = _dataset(pytester, "citation-smoke", floors=floors)
    report = pytester.path / "r.json"
    result = pytester.runpytest(*NO_TARGET, f"--eval-dataset={dataset}", f"--eval-report={report}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "citationMetadataAccuracy * 0.7143 [[]*] >= 0.9000 * FAIL  0.7143 < 0.9000",
            "evidenceRiskScore * 1.0000 [[]*] >= 0.5000 * PASS  1.0000 >= 0.5000",
        ]
    )
    data = json.loads(report.read_text())
    assert data["floors"]["citationMetadataAccuracy"] == 0.9 and data["floors"]["evidenceRiskScore"] == 0.5
    # groundeval gate re-applies the manifest's floors the report recorded.
    assert main(["gate", "--report", str(report)]) == 1
    # The floors file names one key: it wins for that key, the manifest's other key stays.
    (pytester.path / "floors.json").write_text('{"citationMetadataAccuracy": 0.7}')
    result = pytester.runpytest(
        *NO_TARGET,
        f"--eval-dataset={dataset}",
        f"--eval-floors={pytester.path / 'floors.json'}",
        f"--eval-report={report}",
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "citationMetadataAccuracy * 0.7143 [[]*] >= 0.7000 * PASS *",
            "evidenceRiskScore * 1.0000 [[]*] >= 0.5000 * PASS *",
            "gate: PASS",
        ]
    )
    assert json.loads(report.read_text())["floors"]["evidenceRiskScore"] == 0.5
    assert main(["gate", "--report", str(report)]) == 0


@pytest.mark.parametrize(
    ("floors", "field", "problem"),
    [
        (
            {"citationMetadataAccuracy": 1.5},
            'floors["citationMetadataAccuracy"]',
            "'1.5' is not a valid floor for citationMetadataAccuracy: expected a number in [[]0, 1[]]",
        ),
        (
            {"claimSupportPrecison": 0.9},
            'floors["claimSupportPrecison"]',
            "'claimSupportPrecison' is not a metric with a floor or ceiling; valid names: *",
        ),
        ({"errors": None}, 'floors["errors"]', "errors cannot be disabled with null: it is always checked"),
        ([0.9], "floors", "floors must be a JSON object mapping metric names to numbers, got [[]0.9[]]"),
    ],
)
def test_invalid_manifest_floors_are_a_dataset_error_naming_file_and_field(pytester, floors, field, problem):
    dataset = _dataset(pytester, "citation-smoke", floors=floors)
    result = pytester.runpytest(*NO_TARGET, f"--eval-dataset={dataset}")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error
    field = field.replace("[", "[[]")  # fnmatch: a literal '['
    result.stdout.fnmatch_lines([f"*{dataset / 'manifest.json'}: field {field}: {problem}*"])


def test_a_citation_only_table_lists_only_what_its_kinds_measure(pytester):
    dataset = _dataset(pytester, "citation-smoke")
    result = pytester.runpytest(*NO_TARGET, f"--eval-dataset={dataset}")
    assert result.ret == 0
    table = result.stdout.str().split("groundeval gate")[1]
    for metric in (
        "retrievalRecall",
        "claimSupportPrecision",
        "claimSupportRecall",
        "falsehoodRejection",
        "temporalAccuracy",
    ):
        assert metric not in table, metric
    result.stdout.fnmatch_lines(["citationMetadataAccuracy * PASS *", "errors * PASS *", "gate: PASS"])


def test_an_explicit_baseline_of_another_dataset_version_is_a_usage_error(run, pytester, smoke):
    report = pytester.path / "r.json"
    result = run(
        f"--eval-dataset={smoke}",
        f"--eval-baseline={ROOT / 'datasets' / 'v1' / 'baseline.json'}",
        f"--eval-report={report}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*baseline *baseline.json is a report of dataset 'v1.1', but this run is dataset 'smoke-1': a baseline is "
            "compared only with a run of the same dataset version*",
        ]
    )
    assert not report.exists()


def test_an_explicit_baseline_of_another_version_is_refused_when_the_dataset_is_a_path(run, pytester, smoke):
    # As an IDE runs it: no --eval-dataset, so the version is known only at the end.
    result = run(str(smoke / "manifest.json"), f"--eval-baseline={ROOT / 'datasets' / 'v1' / 'baseline.json'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["groundeval: baseline *is a report of dataset 'v1.1', but this run is dataset 'smoke-1'*"]
    )


def _other_lineage_baseline(path: Path, version: str) -> Path:
    from pytest_groundeval.core.gate import evaluate_gate
    from pytest_groundeval.core.metrics import compute_metrics
    from pytest_groundeval.core.outcome import ItemOutcome
    from pytest_groundeval.core.report import Report, write_report

    # One qa item that found its evidence: the report's metrics are its items' (a baseline is re-read).
    items = [ItemOutcome(id="qa-smoke-alpha-budget", kind="qa", passed=True, evidence_expected=1, evidence_found=1)]
    models = {"generate": "other-generate", "embed": "other-embed"}
    metrics = compute_metrics(items)  # its gate is its own too: a report's stored gate is re-checked
    write_report(
        path,
        Report(
            dataset_version=version,
            models=models,
            started_at_ms=1_700_000_000_000,
            duration_ms=1.0,
            metrics=metrics,
            gate=evaluate_gate(metrics, dataset_version=version, models=models),
            items=items,
            environment={"pluginVersion": "0.1.0", "python": "3.11", "platform": "linux", "gitCommit": None},
        ),
    )
    return path


def test_a_baseline_of_another_lineage_is_skipped_and_the_absolute_recall_floor_applies(run, pytester):
    def unreachable_evidence(data):
        # Evidence from the field notes for a question the target answers from the project notes.
        item = next(i for i in data["items"] if i["id"] == "qa-smoke-alpha-budget")
        item["expectedEvidence"].append("Fikapausen börjar klockan tre på eftermiddagen.")

    dataset = _dataset(pytester, "smoke", floors={"retrievalRecall": 0.95}, edit=unreachable_evidence)
    baseline = _other_lineage_baseline(pytester.path / "b.json", "smoke-1")
    result = run(f"--eval-dataset={dataset}", f"--eval-baseline={baseline}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "retrievalRecall * 0.8000 [[]*] >= 0.9500 * FAIL  0.8000 < 0.9500",
            "retrievalRecall * 0.8000 [[]*] >= n/a * SKIP  baseline model lineage generate=other-generate/embed=other-embed "
            "differs from generate=mock-generate/embed=mock-embed: a baseline arms recall only within its lineage; "
            "the absolute retrievalRecall floor 0.9500 applies",
            "gate: FAIL",
        ]
    )
