"""``groundeval report`` (docs/gate.md): a saved report printed or drawn, and the reports it refuses to read."""

from __future__ import annotations

import json

import pytest

from pytest_groundeval import cli
from pytest_groundeval.cli import main
from pytest_groundeval.core.gate import evaluate_gate
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.report import Report, read_report, write_report
from pytest_groundeval.history import HistoryStore
from tests._support import history_records as _data
from tests._support.history_records import measured_run
from tests._support.sample_report import (
    MODELS,
    failed_report_wire,
    finish_kwargs,
    sample_outcomes,
    whole_report,
    write_wire,
)


def test_cli_report_prints_metrics_gate_and_failed_items(tmp_path, capsys):
    path = write_report(tmp_path / "r.json", whole_report(sample_outcomes()))
    assert cli.main(["report", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "dataset v1  models generate=mock-generate embed=mock-embed"
    assert "  retrievalRecall            1.0000" in out
    assert "  evidenceRiskScore          0.6667" in out
    assert "  latencyMsP95               11.8 ms" in out
    assert "gate: FAIL" in out  # one item errored
    failed = [line for line in out if line.startswith(("FAIL", "ERROR"))]
    assert failed == [
        'FAIL  adversarial::adv-ñ  supported "the moon is cheese" line 2',
        "ERROR temporal::tmp-1  target down: connection refused",
    ]


def test_cli_report_unreadable_exits_2(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text("{}")
    assert cli.main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("groundeval report: ") and "missing schemaVersion" in err
    assert cli.main(["report"]) == 2


# --- the stored gate is the gate of the report's own metrics, floors and baseline (docs/gate.md) ---------------


def test_report_with_gate_flipped_to_pass_is_refused(tmp_path, capsys):
    wire = failed_report_wire(tmp_path)
    wire["gate"]["passed"] = True
    for check in wire["gate"]["checks"]:
        check["outcome"] = "PASS" if check["outcome"] == "FAIL" else check["outcome"]
    path = write_wire(tmp_path, wire)
    for argv in (["report", str(path)], ["report", str(path), "--markdown", str(tmp_path / "r.md")],
                 ["gate", "--report", str(path)]):  # fmt: skip
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "gate.checks[" in err and "edited by hand" in err and str(path) in err
    assert not (tmp_path / "r.md").exists()


def test_report_with_recorded_floors_edited_is_refused(tmp_path, capsys):
    from pytest_groundeval.core.gate import DEFAULT_FLOORS

    wire = failed_report_wire(tmp_path, floors=dict(DEFAULT_FLOORS))
    read_report(write_wire(tmp_path, wire))  # as written: reads
    wire["floors"]["errors"] = 100
    path = write_wire(tmp_path, wire)
    assert cli.main(["gate", "--report", str(path)]) == 2
    assert "gate.checks[" in capsys.readouterr().err


def test_report_with_baseline_figure_edited_is_refused(tmp_path, capsys):
    from pytest_groundeval.core.gate import summarize_baseline

    outcomes = sample_outcomes()
    base_outcomes = [o.model_copy(update={"evidence_found": 1}) if o.kind == "qa" else o for o in outcomes]
    record = summarize_baseline(whole_report(base_outcomes), {"qa-1"}, "b.json")
    kwargs = finish_kwargs(outcomes)
    kwargs["gate"] = evaluate_gate(kwargs["metrics"], baseline=record, dataset_version="v1", models=MODELS)
    wire = Report(**kwargs, baseline=record, items=outcomes).to_wire()
    read_report(write_wire(tmp_path, wire))
    wire["baseline"]["retrievalRecall"] = 1.0
    path = write_wire(tmp_path, wire)
    assert cli.main(["gate", "--report", str(path)]) == 2
    assert "baseline.retrievalRecall is 1.0" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--html", "--markdown"])
def test_cli_report_never_writes_an_output_over_the_report(tmp_path, monkeypatch, capsys, option):
    monkeypatch.chdir(tmp_path)
    path = write_report(tmp_path / "r.json", whole_report(sample_outcomes()))
    before = path.read_bytes()
    assert cli.main(["report", "r.json", option, str(path)]) == 2
    assert f"{option} names the input report" in capsys.readouterr().err
    assert path.read_bytes() == before
    assert cli.main(["report", "r.json", "--html", "o.x", "--markdown", "./o.x"]) == 2
    assert "--html and --markdown name the same file" in capsys.readouterr().err
    assert not (tmp_path / "o.x").exists()


def test_read_refuses_duplicate_item_ids_even_with_metrics_to_match(tmp_path, capsys):
    outcomes = sample_outcomes()
    copies = [outcomes[0]] * 10 + outcomes[1:]
    path = write_report(tmp_path / "r.json", whole_report(copies))
    assert cli.main(["report", str(path)]) == 2
    assert "items[1].id 'qa-1' is also items[0].id" in capsys.readouterr().err


def test_cli_gate_fails_a_report_with_not_run_items_whatever_its_interrupted_flag(tmp_path, capsys):
    from pytest_groundeval.core.gate import not_run_check, parse_floors

    outcomes = [sample_outcomes()[0],
                ItemOutcome(id="qa-2", kind="qa", passed=False, error="not run: the run was stopped", not_run=True)]  # fmt: skip
    floors = parse_floors({"errors": 5}, "t")  # an error ceiling loose enough for the run's one error
    kwargs = finish_kwargs(outcomes)
    gate = evaluate_gate(kwargs["metrics"], floors=floors, dataset_version="v1", models=MODELS)
    assert gate.passed  # only the item that never ran can fail it
    kwargs["gate"] = gate.model_copy(update={"passed": False, "checks": [*gate.checks, not_run_check(1, 2)]})
    path = write_report(tmp_path / "r.json", Report(**kwargs, floors=floors, interrupted=False, items=outcomes))
    assert cli.main(["gate", "--report", str(path)]) == 1
    out = capsys.readouterr().out
    assert "1 of 2 collected items never ran" in out and out.splitlines()[-1] == "gate: FAIL"


# --- trends from the history database ----------------------------------------------------------


def test_report_draws_html_trends_from_the_history_database(store: HistoryStore, history_url: str, tmp_path,
                                                                capsys) -> None:  # fmt: skip
    from pytest_groundeval.core.report import write_report
    from pytest_groundeval.history.stored_report import report_from_history

    first = measured_run(store, [_data.qa("q1")], started_ms=1_700_000_000_000)
    second = measured_run(store, [_data.qa("q1"), _data.qa("q2")], started_ms=1_700_000_100_000)
    report = write_report(tmp_path / "r.json", report_from_history(store, second))
    out = tmp_path / "r.html"
    assert main(["report", str(report), "--html", str(out), "--history", history_url]) == 0
    captured = capsys.readouterr()
    assert f"wrote {out}" in captured.out and captured.err == ""
    page = out.read_text(encoding="utf-8")
    assert "Trends over the last 2 runs" in page and first[:12] in page
    # --trends FILE reads the JSON list --history FILE used to.
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps([{"id": "run-from-file", "startedAt": 1, "metrics": {"errors": 0}}]))
    assert main(["report", str(report), "--html", str(out), "--trends", str(runs)]) == 0
    assert "run-from-file" in out.read_text(encoding="utf-8") and capsys.readouterr().err == ""


def test_report_history_file_is_a_deprecated_spelling_of_trends(store: HistoryStore, history_url: str, tmp_path,
                                                                capsys) -> None:  # fmt: skip
    from pytest_groundeval.core.report import write_report
    from pytest_groundeval.history.stored_report import report_from_history

    run_id = measured_run(store, [_data.qa("q1")], started_ms=1_700_000_000_000)
    report = write_report(tmp_path / "r.json", report_from_history(store, run_id))
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps([{"id": "run-from-file", "startedAt": 1, "metrics": {"errors": 0}}]))
    out = tmp_path / "r.html"
    assert main(["report", str(report), "--html", str(out), "--history", str(runs)]) == 0
    assert "run-from-file" in out.read_text(encoding="utf-8")
    assert "groundeval report: --history FILE (a JSON list of runs) is deprecated; use --trends FILE" in (
        capsys.readouterr().err
    )
