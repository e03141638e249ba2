"""``groundeval gate`` (docs/gate.md): re-gating a saved report, its exit codes, and what it refuses."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_groundeval import cli
from pytest_groundeval.cli import main
from pytest_groundeval.core.gate import evaluate_gate, parse_floors, summarize_baseline
from pytest_groundeval.core.report import Report, read_report, write_report
from pytest_groundeval.history import HistoryStore
from tests._support import history_records as _data
from tests._support.gate_reports import MODELS, report
from tests._support.history_records import measured_run, recorded_run


def check_line(lines: list[str], metric: str, containing: str = "") -> str:
    """The one line of ``groundeval gate`` output for ``metric`` (and ``containing``)."""
    found = [line for line in lines if line.split(" ", 1)[0] == metric and containing in line]
    assert len(found) == 1, lines
    return found[0]


def outcome_of(line: str) -> str:
    """The outcome column of a ``groundeval gate`` check line (after the value, its interval and the bound)."""
    return next(word for word in line.split() if word in ("PASS", "FAIL", "SKIP"))


@pytest.fixture
def saved(tmp_path):
    def save(name: str, rep: Report) -> str:
        return str(write_report(tmp_path / name, rep))

    return save


def test_cli_gate_pass_exits_0(saved, capsys):
    path = saved("r.json", report())
    assert cli.main(["gate", "--report", path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "gate: PASS"
    assert any(line.startswith("claimSupportPrecision") and "PASS" in line for line in out)


def test_cli_gate_fail_exits_1(saved, capsys):
    path = saved("r.json", report(falsehood_rejection=0.5))
    assert cli.main(["gate", "--report", path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "gate: FAIL"
    assert any(line.startswith("falsehoodRejection") and "FAIL" in line for line in out)


def test_cli_gate_reapplies_floors_and_baseline(saved, tmp_path, capsys):
    path = saved("r.json", report(retrieval_recall=0.80))
    base = saved("b.json", report(retrieval_recall=0.95))
    assert cli.main(["gate", "--report", path, "--baseline", base]) == 1
    assert "retrievalRecall" in capsys.readouterr().out
    floors = tmp_path / "floors.json"
    floors.write_text(json.dumps({"retrievalRecallMargin": 0.2}))
    assert cli.main(["gate", "--report", path, "--baseline", base, "--floors", str(floors)]) == 0


def _drop_keys(path: str, *keys: str) -> str:
    wire = json.loads(Path(path).read_text())
    for key in keys:
        del wire[key]
    Path(path).write_text(json.dumps(wire))
    return path


def test_cli_gate_applies_the_floors_and_baseline_a_report_records(saved, tmp_path, capsys):
    base = read_report(saved("b.json", report(retrieval_recall=0.95)))
    run_floors = parse_floors({"falsehoodRejection": 0.5, "retrievalRecallMargin": 0.1}, "t")
    run = report(retrieval_recall=0.80, falsehood_rejection=0.6)
    record = summarize_baseline(base, None, "b.json")
    gate = evaluate_gate(run.metrics, floors=run_floors, baseline=record, dataset_version="v1", models=MODELS)
    recorded = run.model_copy(update={"floors": run_floors, "baseline": record, "gate": gate})
    path = saved("r.json", recorded)
    assert cli.main(["gate", "--report", path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "applied: floors recorded in the report; baseline b.json as recorded in the report"
    assert outcome_of(check_line(out, "falsehoodRejection")) == "PASS"  # 0.6 >= the run's 0.5, not the default 0.95
    assert "FAIL  0.8000 < 0.8500 (baseline 0.9500 - margin 0.1000)" in check_line(out, "retrievalRecall", "baseline")
    # --no-baseline and --baseline cannot both be given.
    assert cli.main(["gate", "--report", path, "--no-baseline", "--baseline", path]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_cli_gate_reads_a_report_written_before_floors_and_baseline_were_recorded(saved, capsys):
    path = _drop_keys(saved("old.json", report(falsehood_rejection=0.9)), "floors", "shard", "merge", "baseline")
    assert cli.main(["gate", "--report", path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "applied: default floors (the report records none); no baseline (the report records none)"
    assert outcome_of(check_line(out, "falsehoodRejection")) == "FAIL"  # the default 0.95
    assert "no baseline given" in check_line(out, "retrievalRecall", "baseline")


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing-report", "cannot read report"),
        ("bad-json-report", "not valid JSON"),
        ("bad-baseline", "unknown schemaVersion 99"),
        ("bad-floors", "is not a valid floor for claimSupportPrecision"),
        ("no-args", "one of the arguments --report --run is required"),
        ("bad-alpha", "--alpha must be a number in (0, 1), got 1.5"),
        ("bad-prices", "prices file"),
    ],
)
def test_cli_gate_unusable_input_exits_2(saved, tmp_path, capsys, setup, message):
    good = saved("r.json", report())
    bad = tmp_path / "bad.json"
    argv = ["gate", "--report", good]
    if setup == "missing-report":
        argv = ["gate", "--report", str(tmp_path / "nope.json")]
    elif setup == "bad-json-report":
        bad.write_text('{"schemaVersion": 1,')
        argv = ["gate", "--report", str(bad)]
    elif setup == "bad-baseline":
        bad.write_text(json.dumps({**report().to_wire(), "schemaVersion": 99}))
        argv += ["--baseline", str(bad)]
    elif setup == "bad-floors":
        bad.write_text(json.dumps({"claimSupportPrecision": 1.5}))
        argv += ["--floors", str(bad)]
    elif setup == "bad-alpha":
        argv += ["--alpha", "1.5"]
    elif setup == "bad-prices":
        bad.write_text('{"m": {"input": 1}}')
        argv += ["--prices", str(bad)]
    else:
        argv = ["gate"]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert "\n" not in err
    assert err.startswith("groundeval gate: ")
    assert message in err


def _groundeval_command() -> list[str]:
    exe = shutil.which("groundeval", path=str(Path(sys.executable).parent)) or shutil.which("groundeval")
    return [exe] if exe else [sys.executable, "-m", "pytest_groundeval.cli"]


def test_installed_entry_point_exit_codes(saved):
    passing = saved("pass.json", report())
    failing = saved("fail.json", report(errors=3))
    codes = []
    for argv in (["gate", "--report", passing], ["gate", "--report", failing], ["gate", "--report", passing + "x"]):
        proc = subprocess.run([*_groundeval_command(), *argv], capture_output=True, text=True, timeout=60)
        codes.append(proc.returncode)
        if proc.returncode == 1:
            assert proc.stdout.splitlines()[-1] == "gate: FAIL"
            assert "errors" in proc.stdout
    assert codes == [0, 1, 2]


@pytest.mark.parametrize(("metric_overrides", "status"), [({}, 0), ({"errors": 3}, 1)])
def test_a_reader_that_stops_early_costs_output_not_a_traceback_or_the_status(saved, metric_overrides, status):
    # `groundeval gate ... | head -1`: the reader is gone before the command writes.
    path = saved("r.json", report(**metric_overrides))
    proc = subprocess.Popen(
        [*_groundeval_command(), "gate", "--report", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == status
    assert "BrokenPipeError" not in err and "Traceback" not in err
    assert err == ""


# --- re-gating trusts nothing it can recompute (issue 19) ----------------------------------------


def _all_errored_under_perfect_metrics(wire: dict) -> None:
    for item in wire["items"]:
        item.update({"pass": False, "error": "target down: connection refused"})
    for name, value in wire["metrics"].items():
        if isinstance(value, float) and name not in ("latencyMsP50", "latencyMsP95", "tokensPerQuery"):
            wire["metrics"][name] = 1.0


HAND_EDITS = {
    "every item errored under metrics of 1.0": (_all_errored_under_perfect_metrics, "metrics.retrievalRecall"),
    "negative errors": (lambda w: w["metrics"].update(errors=-5), "metrics.errors"),
    "items removed": (lambda w: w.update(items=[]), "metrics.items is 3 but the report's 0 item(s) give 0"),
    "rate Infinity": (lambda w: w["metrics"].update(retrievalRecall=math.inf), "metrics.retrievalRecall"),
    "rate NaN": (lambda w: w["metrics"].update(claimSupportRecall=math.nan), "metrics.claimSupportRecall"),
    "rate 5.0": (lambda w: w["metrics"].update(falsehoodRejection=5.0), "metrics.falsehoodRejection"),
    "rate true": (lambda w: w["metrics"].update(temporalAccuracy=True), "metrics.temporalAccuracy"),
    "count true": (lambda w: w["metrics"].update(errors=True), "metrics.errors"),
    "count 5.0": (lambda w: w["metrics"].update(items=3.0), "metrics.items"),
    "errors hidden": (lambda w: w["metrics"].update(errors=0), "metrics.errors is 0 but the report's 5 item(s) give 2"),
}


@pytest.mark.parametrize("edit", HAND_EDITS, ids=list(HAND_EDITS))
def test_a_hand_edited_report_is_refused_naming_the_field(saved, capsys, edit):
    mutate, field = HAND_EDITS[edit]
    base = report(errors=2) if edit == "errors hidden" else report()
    wire = base.to_wire()
    mutate(wire)
    path = Path(saved("r.json", base)).with_name("edited.json")
    path.write_text(json.dumps(wire))  # allow_nan: Infinity and NaN as Python's json writes them
    for command in (["gate", "--report", str(path)], ["report", str(path)]):
        assert cli.main(command) == 2, command
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith(f"groundeval {command[0]}: {path}: ")
        assert field in captured.err and "\n" not in captured.err.strip()


def test_an_unedited_report_with_errors_still_gates(saved, capsys):
    # The same report as "errors hidden", as written: it reads, and its errors fail the gate.
    path = saved("r.json", report(errors=2))
    assert cli.main(["gate", "--report", path]) == 1
    assert "errors" in check_line(capsys.readouterr().out.splitlines(), "errors")


def test_cli_gate_refuses_a_baseline_of_another_dataset_version(saved, capsys):
    path = saved("r.json", report())
    other = saved("b.json", report(dataset_version="v0"))
    assert cli.main(["gate", "--report", path, "--baseline", other]) == 2
    err = capsys.readouterr().err
    assert "is a report of dataset 'v0', but this run is dataset 'v1'" in err


# --- groundeval gate --run RUN --history URL (issue 19) ------------------------------------------


def test_gate_takes_the_run_with_run_and_the_database_with_history(store: HistoryStore, history_url: str,
                                                                   capsys) -> None:  # fmt: skip
    measured_run(store, [_data.qa("q1"), _data.qa("q2")], started_ms=1_700_000_000_000)
    assert main(["gate", "--run", "latest", "--history", history_url]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == "gate: PASS" and captured.err == ""
    assert "claimSupportPrecision" in captured.out


@pytest.mark.parametrize(
    ("argv", "warned"),
    [
        (["--history", "latest", "--history-url", "{url}"], ["--history-url URL", "--history RUN"]),
        (["--run", "latest", "--history-url", "{url}"], ["--history-url URL"]),
        (["--history", "latest"], ["--history RUN"]),  # the database from GROUNDEVAL_HISTORY
    ],
)
def test_gates_old_spellings_still_work_and_warn(store: HistoryStore, history_url: str, capsys, monkeypatch,
                                                 argv, warned) -> None:  # fmt: skip
    measured_run(store, [_data.qa("q1")], started_ms=1_700_000_000_000)
    monkeypatch.setenv("GROUNDEVAL_HISTORY", history_url)
    assert main(["gate", *(arg.format(url=history_url) for arg in argv)]) == 0
    err = capsys.readouterr().err.splitlines()
    use = {"--history-url URL": "use --history URL", "--history RUN": "use --run RUN"}
    assert [line.split(" is deprecated; ")[0] for line in err] == [f"groundeval gate: {old}" for old in warned]
    assert all(use[old] in line for old, line in zip(warned, err))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--history", "sqlite"], "--history URL names the database of --run RUN"),
        (["--report", "r.json", "--history", "sqlite"], "a --report needs none"),
        (["--run", "latest", "--history", "sqlite", "--history-url", "sqlite"], "both name the history database"),
    ],
)
def test_gate_history_usage_errors_exit_2(argv, message, capsys) -> None:
    assert main(["gate", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_stored_run_whose_metrics_are_not_its_items_is_refused(store: HistoryStore, history_url: str,
                                                                 capsys) -> None:  # fmt: skip
    # recorded_run stores metrics that claim no items and precision 1.0 over an item it lists.
    recorded_run(store, [_data.qa("q1", passed=False)], label="x", started_ms=1)
    assert main(["gate", "--run", "latest", "--history", history_url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("groundeval gate: history run latest: metrics.items is 0 but the report's 1 item(s) give 1")
