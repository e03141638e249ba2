"""Tests for pytest_groundeval.report (docs/gate.md): model, reading, streaming writer (groundeval report: tests/cli)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

import pytest
import tomllib

from pytest_groundeval.core.gate import evaluate_gate
from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.report import (
    SCHEMA_VERSION,
    ReportError,
    ReportWriter,
    environment_info,
    read_report,
    write_report,
)
from tests._support.sample_report import (
    ENV,
    MODELS,
    failed_report_wire,
    finish_kwargs,
    sample_outcomes,
    whole_report,
    write_wire,
)

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
PYPROJECT_VERSION = tomllib.loads(PYPROJECT.read_text("utf-8"))["project"]["version"]


# --- model and round trip -----------------------------------------------------------------------------


def test_report_wire_keys_are_camel_case():
    from pytest_groundeval.core.confidence import compute_confidence

    outcomes = sample_outcomes()
    report = whole_report(outcomes)
    wire = report.model_copy(update={"confidence": compute_confidence(outcomes, report.metrics)}).to_wire()
    assert list(wire) == [
        "schemaVersion", "datasetVersion", "models", "startedAtMs", "durationMs", "metrics", "confidence",
        "confidenceLevel", "gate", "environment", "interrupted", "floors", "shard", "merge", "baseline", "items",
    ]  # fmt: skip
    assert wire["schemaVersion"] == SCHEMA_VERSION == 1
    assert wire["items"][0]["traceId"] == "t-1"
    assert wire["items"][0]["pass"] is True
    assert wire["environment"]["gitCommit"] is None
    assert wire["gate"]["checks"][0].keys() == {"metric", "value", "bound", "op", "outcome", "reason"}


def test_write_and_read_round_trip(tmp_path):
    rep = whole_report(sample_outcomes())
    path = write_report(tmp_path / "report.json", rep)
    assert read_report(path) == rep
    assert os.listdir(tmp_path) == ["report.json"]


def test_write_report_replaces_existing_file(tmp_path):
    path = tmp_path / "report.json"
    path.write_text("old")
    write_report(path, whole_report(sample_outcomes()))
    assert read_report(path).dataset_version == "v1"


# --- reading errors ---------------------------------------------------------------------------------------


def test_read_missing_file(tmp_path):
    with pytest.raises(ReportError, match=r"nope\.json: cannot read report"):
        read_report(tmp_path / "nope.json")


def test_read_bad_json_names_file_and_position(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"schemaVersion": 1,\n "datasetVersion": }')
    with pytest.raises(ReportError, match=r"r\.json: not valid JSON: .*line 2 column"):
        read_report(path)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda w: w.update(schemaVersion=2), "unknown schemaVersion 2; this plugin reads 1"),
        (lambda w: w.pop("schemaVersion"), "missing schemaVersion"),
        (lambda w: w.pop("metrics"), "does not match report schema v1: metrics: Field required"),
        (lambda w: w["items"][1].update(kind="essay"), "items[1].kind"),
        (lambda w: w.update(surprise=1), "surprise: Extra inputs are not permitted"),
    ],
)
def test_read_schema_mismatch(tmp_path, mutate, message):
    wire = whole_report(sample_outcomes()).to_wire()
    mutate(wire)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(wire))
    with pytest.raises(ReportError) as info:
        read_report(path)
    assert str(info.value).startswith(str(path))
    assert message in str(info.value)


def test_read_non_object(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("[1, 2]")
    with pytest.raises(ReportError, match="a report must be a JSON object, got list"):
        read_report(path)


# --- streaming writer ------------------------------------------------------------------------------------


def test_writer_output_reads_back_equal_to_whole_report(tmp_path):
    outcomes = sample_outcomes()
    path = tmp_path / "report.json"
    with ReportWriter(path) as writer:
        for outcome in outcomes:
            writer.add_item(outcome)
        assert writer.finish(**finish_kwargs(outcomes)) == path
    assert read_report(path) == whole_report(outcomes)
    assert os.listdir(tmp_path) == ["report.json"]


def test_writer_with_no_items(tmp_path):
    path = tmp_path / "report.json"
    with ReportWriter(path) as writer:
        writer.finish(**finish_kwargs([]))
    rep = read_report(path)
    assert rep.items == []
    assert rep.metrics.items == 0


def test_writer_10k_items_read_back(tmp_path):
    n = 10_000
    path = tmp_path / "big.json"
    outcomes = [ItemOutcome(id=f"qa-{i}", kind="qa", passed=i % 7 != 0, latency_ms=float(i % 100),
                            evidence_expected=1, evidence_found=i % 2, detail="line\nbreak \u2603")
                for i in range(n)]  # fmt: skip
    with ReportWriter(path) as writer:
        for outcome in outcomes:
            writer.add_item(outcome)
        assert writer.count == n
        metrics = compute_metrics(outcomes)
        writer.finish(
            dataset_version="v1", models=MODELS, started_at_ms=0, duration_ms=1.0, metrics=metrics,
            gate=evaluate_gate(metrics, dataset_version="v1", models=MODELS), environment=ENV,
        )  # fmt: skip
    rep = read_report(path)
    assert len(rep.items) == n
    assert [item.id for item in rep.items[:3]] == ["qa-0", "qa-1", "qa-2"]
    assert rep.items[-1].id == f"qa-{n - 1}"
    assert rep.items[7].passed is False and rep.items[8].passed is True
    assert rep.items[5].detail == "line\nbreak \u2603"
    assert rep.metrics.retrieval_recall == 0.5
    assert os.listdir(tmp_path) == ["big.json"]


def test_unfinished_writer_leaves_no_file_at_target(tmp_path):
    path = tmp_path / "report.json"
    writer = ReportWriter(path)
    try:
        for outcome in sample_outcomes():
            writer.add_item(outcome)
        # Items are spooled to disk already, but the target does not exist until finish.
        assert not path.exists()
        spool = list(tmp_path.iterdir())
        assert len(spool) == 1 and spool[0].name.startswith(".report.json.") and spool[0].stat().st_size > 0
    finally:
        writer.abort()
    assert list(tmp_path.iterdir()) == []
    writer.abort()  # idempotent


def test_exception_inside_with_block_keeps_previous_report(tmp_path):
    path = tmp_path / "report.json"
    write_report(path, whole_report(sample_outcomes()))
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="session crashed"):
        with ReportWriter(path) as writer:
            writer.add_item(sample_outcomes()[0])
            raise RuntimeError("session crashed")
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["report.json"]


def test_finish_with_invalid_header_writes_nothing(tmp_path):
    path = tmp_path / "report.json"
    writer = ReportWriter(path)
    writer.add_item(sample_outcomes()[0])
    kwargs = finish_kwargs(sample_outcomes())
    kwargs["models"] = {"generate": "g"}  # embed missing
    with pytest.raises(ValueError, match="embed"):
        writer.finish(**kwargs)
    assert not path.exists()
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_writer_refuses_use_after_finish(tmp_path):
    writer = ReportWriter(tmp_path / "r.json")
    writer.finish(**finish_kwargs([]))
    with pytest.raises(RuntimeError, match="is closed"):
        writer.add_item(sample_outcomes()[0])
    with pytest.raises(RuntimeError, match="is closed"):
        writer.finish(**finish_kwargs([]))


def test_writer_accepts_wire_dicts(tmp_path):
    path = tmp_path / "r.json"
    outcomes = sample_outcomes()
    with ReportWriter(path) as writer:
        for outcome in outcomes:
            writer.add_item(outcome.to_wire())
        writer.finish(**finish_kwargs(outcomes))
    assert read_report(path).items == outcomes


def test_writer_default_environment(tmp_path):
    path = tmp_path / "r.json"
    kwargs = finish_kwargs([])
    del kwargs["environment"]
    with ReportWriter(path) as writer:
        writer.finish(**kwargs)
    environment = read_report(path).environment
    assert environment.python == platform.python_version() and environment.python.count(".") == 2
    assert environment.plugin_version == metadata.version("pytest-groundeval") == PYPROJECT_VERSION


# --- environment ----------------------------------------------------------------------------------------


def test_environment_info_outside_git_has_no_commit(tmp_path):
    env = environment_info(cwd=tmp_path)
    assert env["gitCommit"] is None
    assert env["pluginVersion"] == "0.1.0"
    assert env["python"] and env["platform"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_environment_info_in_git_checkout_records_head(tmp_path):
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    (tmp_path / "f").write_text("x")
    git("add", "f")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "init")
    assert environment_info(cwd=tmp_path)["gitCommit"] == git("rev-parse", "HEAD").strip()


def test_environment_info_without_git_binary(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no git to run
    assert environment_info()["gitCommit"] is None


# --- the stored gate is the gate of the report's own metrics, floors and baseline (docs/gate.md) ---------------


def test_report_with_only_gate_passed_flipped_is_refused(tmp_path):
    wire = failed_report_wire(tmp_path)
    wire["gate"]["passed"] = True
    with pytest.raises(ReportError, match=r"gate\.passed is true but should be false"):
        read_report(write_wire(tmp_path, wire))


def test_report_without_recorded_floors_is_checked_against_the_default_floors(tmp_path):
    wire = failed_report_wire(tmp_path)
    assert wire["floors"] is None
    read_report(write_wire(tmp_path, wire))
    wire["gate"]["checks"] = [c for c in wire["gate"]["checks"] if c["metric"] != "errors"]  # the FAIL
    with pytest.raises(ReportError, match=r"gate\.checks"):
        read_report(write_wire(tmp_path, wire))


# --- items that break the documented rules are refused, naming items[i].<field> (docs/gate.md) -------------


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (dict(promptTokens=-5), "items[0].promptTokens", "greater than or equal to 0"),
        (dict(claimsSupported=-1), "items[0].claimsSupported", "greater than or equal to 0"),
        (dict(evidenceFound=5), "items[0].evidenceFound", "5 evidence strings found but only 2 expected"),
        (dict(notRun=True, error=None, **{"pass": False}), "items[0].notRun", "its error must say why"),
        (dict(notRun=True, error="not run", **{"pass": True}), "items[0]", "cannot pass"),
    ],
)
def test_read_refuses_an_item_that_breaks_the_rules(tmp_path, edit, field, message):
    wire = whole_report(sample_outcomes()).to_wire()
    wire["items"][0].update(edit)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(wire))
    with pytest.raises(ReportError) as info:
        read_report(path)
    text = str(info.value)
    assert field in text and message in text and "\n" not in text


# --- confidence intervals (docs/statistics.md) --------------------------------------------------------


def _with_confidence(tmp_path, *, gate_on: str = "point", level: float = 0.95):
    """A report of twelve qa items (recall 22/24) finalised as a run would, with its intervals."""
    from pytest_groundeval.core.finalize import RunOutcomes, finalize_run

    items = [
        ItemOutcome(id=f"qa-{i}", kind="qa", passed=i > 1, evidence_expected=2, evidence_found=1 if i < 2 else 2,
                    claims_supported=1, claims_supported_true=1, claims_true_cited=1, claims_true_cited_supported=1)
        for i in range(12)
    ]  # fmt: skip
    floors = {"retrievalRecall": 0.9, "errors": 0.0}
    end = finalize_run(RunOutcomes.of(items), dataset_version="v1", models=MODELS, floors=floors,
                       confidence_level=level, gate_on=gate_on)  # fmt: skip
    kwargs = {**finish_kwargs(items), "metrics": end.metrics, "gate": end.gate}
    with ReportWriter(tmp_path / "r.json") as writer:
        for item in items:
            writer.add_item(item)
        path = writer.finish(**kwargs, floors=floors, confidence=end.confidence, confidence_level=level)
    return path, end


def test_a_report_keeps_its_confidence_and_reads_it_back(tmp_path):
    path, end = _with_confidence(tmp_path, level=0.9)
    wire = json.loads(path.read_text())
    assert wire["confidenceLevel"] == 0.9
    assert wire["confidence"]["retrievalRecall"] == end.confidence["retrievalRecall"].to_wire()
    assert set(wire["confidence"]["retrievalRecall"]) == {"low", "high", "method"}
    assert wire["confidence"]["temporalAccuracy"] is None
    report = read_report(path)
    assert report.confidence == end.confidence and report.confidence_level == 0.9


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["retrievalRecall"].update(low=0.91), r"confidence\.retrievalRecall is \{"),
        (lambda c: c["retrievalRecall"].update(method="wilson"), r"confidence\.retrievalRecall is"),
        (lambda c: c.update(temporalAccuracy={"low": 0.1, "high": 0.2, "method": "wilson"}), "temporalAccuracy"),
        (lambda c: c.pop("retrievalRecall"), r"confidence\.retrievalRecall is null"),
        (lambda c: c.update(latencyMsP50=None), r"confidence\.latencyMsP50 is null but .* give null"),
    ],
    ids=["moved-end", "method", "made-up", "dropped", "not-a-rate"],
)
def test_a_report_whose_confidence_is_not_its_items_is_refused(tmp_path, edit, message):
    path, _ = _with_confidence(tmp_path)
    wire = json.loads(path.read_text())
    edit(wire["confidence"])
    with pytest.raises(ReportError, match=message) as caught:
        read_report(write_wire(tmp_path, wire, "edited.json"))
    assert "edited by hand?" in str(caught.value) and "docs/statistics.md" in str(caught.value)


def test_a_report_whose_level_was_changed_is_refused(tmp_path):
    path, _ = _with_confidence(tmp_path)
    wire = json.loads(path.read_text())
    wire["confidenceLevel"] = 0.99
    with pytest.raises(ReportError, match="at confidenceLevel 0.99"):
        read_report(write_wire(tmp_path, wire, "edited.json"))
    for bad in (0, 1, 1.5):
        wire["confidenceLevel"] = bad
        with pytest.raises(ReportError, match="confidenceLevel"):
            read_report(write_wire(tmp_path, wire, "edited.json"))


def test_a_report_written_before_intervals_reads_without_them(tmp_path):
    wire = whole_report(sample_outcomes()).to_wire()
    wire.pop("confidence", None), wire.pop("confidenceLevel", None)
    report = read_report(write_wire(tmp_path, wire))
    assert report.confidence is None and report.confidence_level == 0.95
    # Written back, it keeps the shape it had (tests/core/test_repeats.py: saved reports byte for byte).
    assert "confidence" not in report.to_wire() and "confidenceLevel" not in report.to_wire()


def test_a_lower_bound_gate_is_recorded_and_checked_on_read(tmp_path):
    path, end = _with_confidence(tmp_path, gate_on="lower-bound")
    wire = json.loads(path.read_text())
    assert wire["gate"]["gateOn"] == "lower-bound" and wire["gate"]["passed"] is False
    (check,) = [c for c in wire["gate"]["checks"] if c["metric"] == "retrievalRecall" and c["bound"] == 0.9]
    assert check["gatedOn"] == "low" and check["outcome"] == "FAIL"
    assert read_report(path).gate == end.gate
    # Said to have gated on the values, the same report's gate is not the one its figures give.
    wire["gate"].pop("gateOn")
    with pytest.raises(ReportError, match="edited by hand"):
        read_report(write_wire(tmp_path, wire, "edited.json"))


def test_a_recovered_report_keeps_the_runs_confidence_level_and_gate_on(tmp_path):
    from pytest_groundeval.core.recover import recover_report

    items = [ItemOutcome(id=f"adv-{i}", kind="adversarial", passed=True, falsehood_supported=False) for i in range(4)]
    target = tmp_path / "killed.json"
    writer = ReportWriter(target)  # never finished: the run was killed
    writer.set_context({"session": "s1", "dataset": "d", "manifest": str(tmp_path / "gone.json"),
                        "datasetVersion": "v1", "models": MODELS, "startedAtMs": 1,
                        "floors": {"falsehoodRejection": 0.95, "errors": 0.0},
                        "items": {item.id: "adversarial" for item in items},
                        "confidenceLevel": 0.9, "gateOn": "lower-bound"})  # fmt: skip
    for item in items:
        writer.add_item(item)
    recover_report(target)
    report = read_report(target)
    assert report.confidence_level == 0.9 and report.gate.gate_on == "lower-bound"
    interval = report.confidence["falsehoodRejection"]
    assert interval is not None and interval.method == "wilson"
    assert interval.low == pytest.approx(4 / (4 + 1.644854**2))  # Wilson's low end of 4 of 4 at 90%
    check = next(c for c in report.gate.checks if c.metric == "falsehoodRejection")
    assert (check.outcome, check.gated_on) == ("FAIL", "low")
    # A spool that records a level outside (0, 1) is refused, naming the spool.
    bad = ReportWriter(tmp_path / "bad.json")
    bad.set_context({"session": "s2", "datasetVersion": "v1", "items": {}, "confidenceLevel": 2})
    with pytest.raises(ReportError, match="confidenceLevel is invalid"):
        recover_report(tmp_path / "bad.json")


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"confidenceLevel": 2}, "the run's confidenceLevel is invalid: 2 is not a confidence level: "
         "expected a number strictly between 0 and 1, e.g. 0.95"),
        ({"gateOn": "median"}, "the run's gateOn 'median' is not one of point, lower-bound"),
    ],
)  # fmt: skip
def test_a_spool_recording_an_invalid_confidence_setting_is_refused_naming_it(tmp_path, context, message):
    from pytest_groundeval.core.recover import recover_report

    spool = tmp_path / "bad.json"
    ReportWriter(spool).set_context({"session": "s", "datasetVersion": "v1", "items": {}, **context})
    with pytest.raises(ReportError) as caught:
        recover_report(spool)
    spool_file, said = str(caught.value).split(": ", 1)
    assert Path(spool_file).parent == tmp_path and said == message  # the spool's file, then what is wrong
