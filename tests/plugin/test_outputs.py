"""The plugin's CI outputs (docs/ci.md): HTML, Markdown and the step summary, JUnit XML, sharding.

In process against the shared reference target (``run``), except where xdist is the point.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_groundeval.cli import main as groundeval
from pytest_groundeval.core.report import read_report
from pytest_groundeval.core.sharding import shard_of

ROOT = Path(__file__).resolve().parents[2]


def _island(html: str) -> dict:
    """The item data the HTML page's script reads (``<script type="application/json" id="ge-data">``)."""
    start = html.index('id="ge-data">') + len('id="ge-data">')
    return json.loads(html[start : html.index("</script>", start)])


# -- HTML and Markdown ------------------------------------------------------------------------------


def test_html_and_markdown_are_written_without_a_json_report(run, pytester, smoke, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    html, md = pytester.path / "out.html", pytester.path / "out.md"
    result = run(f"--eval-dataset={smoke}", f"--eval-html={html}", f"--eval-markdown={md}", "--eval-shard=1/1")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["groundeval: *, shard 1/1"])  # the plugin's version in pytest's header
    result.stdout.fnmatch_lines(["html: out.html", "markdown: out.md", "gate: PASS"])
    page = html.read_text(encoding="utf-8")
    assert 'class="badge big b-pass">gate PASS' in page
    items = {item["id"]: item for item in _island(page)["items"]}
    assert len(items) == 10
    qa = items["qa-smoke-goteborg-office"]
    assert qa["question"] and qa["segments"] and qa["claims"] and qa["evidence"]
    assert qa["expected"] and all(e["found"] is True for e in qa["expected"])
    assert qa["tags"]
    text = md.read_text(encoding="utf-8")
    assert text.startswith("### groundeval gate: ✅ PASS — dataset smoke-1")
    assert "| errors | 0 | ≤ 0 | ✅ PASS |" in text
    assert not list(pytester.path.glob("*.json"))  # no JSON report was asked for


def test_the_item_spool_is_removed_when_the_session_ends_in_a_usage_error(run, pytester, smoke, monkeypatch, tmp_path):
    # The page's items are spooled to a temporary file as they report; a usage error found at the end
    # of the session (here a baseline of another dataset version) writes no page, and must not leave
    # the file, every item's answer in it, behind in the temporary directory (outputs/spool.py).
    spool_dir = tmp_path / "tmp"
    spool_dir.mkdir()
    monkeypatch.setenv("TMPDIR", str(spool_dir))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    baseline = pytester.path / "other.json"
    assert run(f"--eval-dataset={smoke}", "-k", "qa", f"--eval-report={baseline}").ret == 0
    wire = json.loads(baseline.read_text(encoding="utf-8"))
    baseline.write_text(json.dumps(dict(wire, datasetVersion="other-1")), encoding="utf-8")
    html = pytester.path / "out.html"
    result = run(
        str(smoke), "-k", "qa", f"--eval-html={html}", f"--eval-baseline={baseline}", subprocess=True
    )  # the dataset named by its path: its version is known, and the baseline refused, at the session's end
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert not html.exists()
    assert [p.name for p in spool_dir.glob("groundeval-items.*")] == []


def test_a_temporary_directory_that_cannot_hold_the_items_fails_the_outputs_not_the_session(
    run, pytester, smoke, monkeypatch
):
    # The page's items are spooled to a temporary file as they report (outputs/spool.py); a full or
    # read-only temporary directory is an output error at the end, as an unwritable page is, never
    # an internal error in the middle of the run that loses the gate.
    from types import SimpleNamespace

    from pytest_groundeval.outputs import spool as spool_module

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(spool_module, "tempfile", SimpleNamespace(NamedTemporaryFile=full))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    html, md = pytester.path / "out.html", pytester.path / "out.md"
    result = run(f"--eval-dataset={smoke}", "-k", "qa", f"--eval-html={html}", f"--eval-markdown={md}")
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*cannot write out.html: *No space left on device*"])
    result.stdout.fnmatch_lines(["*cannot write out.md: *No space left on device*"])
    # The gate passed; the line after its verdict says why the session still fails.
    result.stdout.fnmatch_lines(["gate: PASS", "exit status 1: an output could not be written as asked*"])
    assert result.ret != pytest.ExitCode.OK  # a file not written fails the session (docs/ci.md)
    assert not html.exists() and not md.exists()


def test_markdown_lists_failures_and_the_step_summary_gets_it_appended(run, pytester, smoke, monkeypatch):
    summary = pytester.path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"falsehoodRejection": 1.0, "claimSupportPrecision": 1.0}))
    result = run(f"--eval-dataset={smoke}", "-k", "qa", f"--eval-floors={floors}")
    assert result.ret == 0
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n### groundeval gate: ✅ PASS — dataset smoke-1")
    before = summary.read_text(encoding="utf-8")
    assert run(f"--eval-dataset={smoke}", "-k", "qa", "--eval-no-step-summary").ret == 0
    assert summary.read_text(encoding="utf-8") == before


def test_the_step_summary_is_turned_off_by_flag_ini_or_env(pytester, monkeypatch):
    from pytest_groundeval.plugin.options import resolve_settings

    monkeypatch.delenv("GROUNDEVAL_NO_STEP_SUMMARY", raising=False)
    assert resolve_settings(pytester.parseconfig()).step_summary is True
    assert resolve_settings(pytester.parseconfig("--eval-no-step-summary")).step_summary is False
    monkeypatch.setenv("GROUNDEVAL_NO_STEP_SUMMARY", "yes")
    assert resolve_settings(pytester.parseconfig()).step_summary is False
    pytester.makeini("[pytest]\neval_no_step_summary = false\n")
    assert resolve_settings(pytester.parseconfig()).step_summary is True  # ini beats env


def test_a_failing_gate_shows_in_the_markdown_with_its_failed_items(run, pytester, smoke, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"tokensPerQuery": 1}))
    md = pytester.path / "gate.md"
    result = run(f"--eval-dataset={smoke}", f"--eval-floors={floors}", f"--eval-markdown={md}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = md.read_text(encoding="utf-8")
    assert text.startswith("### groundeval gate: ❌ FAIL")
    assert "| tokensPerQuery |" in text and "❌ FAIL" in text


def test_markdown_of_two_datasets_covers_each_and_html_of_two_is_refused(run, pytester, smoke, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    citation = pytester.path / "citation-smoke"
    shutil.copytree(ROOT / "datasets" / "citation-smoke", citation)
    md = pytester.path / "gate.md"
    result = run(str(smoke), str(citation), f"--eval-markdown={md}")
    text = md.read_text(encoding="utf-8")
    assert "### groundeval smoke-1 gate:" in text and "### groundeval citation-smoke" in text
    result = run(str(smoke), str(citation), f"--eval-html={pytester.path / 'r.html'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--eval-html writes the page of one dataset, but this run has 2 (*citation-smoke*smoke*)*"]
    )
    assert not (pytester.path / "r.html").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--eval-html=nowhere/r.html",),
            "*'nowhere/r.html' given by --eval-html is in a directory that does not exist*",
        ),
        (("--eval-markdown=.",), "*'.' given by --eval-markdown is a directory*"),
        (("--eval-html=r.out", "--eval-markdown=r.out"), "*--eval-html and --eval-markdown name the same file*"),
        (("--eval-shard=4/3",), "*--eval-shard: '4/3' is not a valid shard: expected K/N with 1 <= K <= N*"),
        (("--eval-shard=two",), "*--eval-shard: 'two' is not a valid shard*"),
    ],
)
def test_bad_output_options_are_usage_errors_before_the_run(run, smoke, args, message):
    result = run(f"--eval-dataset={smoke}", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_output_options_without_a_dataset_are_refused(run):
    result = run("--eval-html=r.html", "--eval-shard=1/2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--eval-html, --eval-shard given, but no dataset*"])


def smoke_run(shared_run, run, pytester, smoke, mode: list[str]) -> tuple[pytest.RunResult, Path, Path]:
    """``(result, report, junit)`` of datasets/smoke with a JSON report and the JUnit XML, made once per mode.

    The tests that read a plain run of the smoke dataset share it (``shared_run``), so does the
    JUnit test's ``-n 2`` parametrisation (its two worker processes are most of its cost).
    """

    def make() -> tuple[pytest.RunResult, Path, Path]:
        name = "-".join(["smoke", *mode])
        report, junit = pytester.path / f"{name}.json", pytester.path / f"{name}.xml"
        return run(f"--eval-dataset={smoke}", f"--eval-report={report}", f"--junitxml={junit}", *mode), report, junit

    return shared_run(("smoke", *mode), make)


@pytest.mark.xdist_group("smoke_outputs")
def test_report_items_carry_the_drill_down(shared_run, run, pytester, smoke):
    result, report, _ = smoke_run(shared_run, run, pytester, smoke, [])
    assert result.ret == 0
    items = {item.id: item for item in read_report(report).items}
    qa = items["qa-smoke-goteborg-office"].extra
    assert qa["question"] and qa["answer"] and qa["tags"]
    answer = qa["answer"].encode()
    for claim in qa["claims"]:
        assert set(claim) == {"text", "start", "end", "markers", "verdict", "true"}
        assert claim["true"] in (True, False)
        assert answer[claim["start"] : claim["end"]].decode().strip()
    assert all(set(e) == {"marker", "document", "start", "end", "text"} and e["text"] for e in qa["evidence"])
    assert qa["expectedEvidence"] and all(e["found"] is True and e["text"] for e in qa["expectedEvidence"])
    adversarial = next(o for o in items.values() if o.kind == "adversarial").extra
    assert adversarial["claims"] and {c["true"] for c in adversarial["claims"]} <= {None}  # none states the falsehood
    temporal = next(o for o in items.values() if o.kind == "temporal").extra
    assert temporal == {"tags": temporal["tags"]}
    assert read_report(report).shard.model_dump() == {
        "index": 1, "count": 1, "assigned": 10, "dataset_items": 10, "dataset_items_digest": read_report(report).shard.dataset_items_digest
    }  # fmt: skip


# -- JUnit XML --------------------------------------------------------------------------------------


def _cases(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    return {f"{case.get('classname')}::{case.get('name')}": case for case in root.iter("testcase")}


def _props(case: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in case.iter("property")}


@pytest.mark.xdist_group("smoke_outputs")
@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_junit_xml_has_each_items_figures_and_the_gate_as_a_case(shared_run, run, pytester, smoke, shared_target, mode):
    result, _, junit = smoke_run(shared_run, run, pytester, smoke, mode)
    assert result.ret == 0
    cases = _cases(junit)
    assert len(cases) == 11
    qa = _props(cases["smoke.manifest.json.qa::qa-smoke-goteborg-office"])
    assert qa["outcome"] == "pass" and float(qa["latencyMs"]) > 0 and int(qa["tokens"]) > 0
    assert qa["evidenceFound"] == qa["evidenceExpected"] == "1" and int(qa["claimsReturned"]) >= 1
    assert qa["traceId"].startswith("tr_")
    gate = cases["smoke.manifest.json::gate"]
    assert gate.find("failure") is None and gate.find("skipped") is None
    props = _props(gate)
    assert props["gate"] == "PASS" and props["items"] == "10" and props["shard"] == "1/1"
    assert props["check.errors"] == "PASS 0 <= 0"
    # Each rate's interval (docs/statistics.md): three of three falsehoods rejected, Wilson's 95% interval.
    assert props["confidence.falsehoodRejection"] == "0.4385 1.0000 wilson"
    assert "confidence.errors" not in props and "confidence.latencyMsP95" not in props
    text = junit.read_text(encoding="utf-8")
    assert shared_target.api_key not in text and "groundeval_outcome" not in text
    assert shared_target.base_url not in text


def test_junit_gate_case_fails_when_the_gate_fails(run, pytester, smoke):
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"tokensPerQuery": 1}))
    junit = pytester.path / "junit.xml"
    result = run(f"--eval-dataset={smoke}", "-k", "qa", f"--eval-floors={floors}", f"--junitxml={junit}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=4)  # the terminal counts items only; the gate case is in the XML
    failure = _cases(junit)["smoke.manifest.json::gate"].find("failure")
    assert failure is not None and failure.get("message").startswith("gate FAIL for dataset smoke-1")
    assert "tokensPerQuery" in failure.text and "FAIL" in failure.text
    root = ET.parse(junit).getroot().find("testsuite")
    assert root.get("failures") == "1" and root.get("tests") == "5"


# -- sharding -----------------------------------------------------------------------------------------


def _comparable(report) -> tuple[dict, list]:
    """Metrics and gate checks without the run's wall-clock figures (latency differs from run to run)."""
    metrics = {k: v for k, v in report.metrics.to_wire().items() if not k.startswith("latency")}
    checks = [(c.metric, c.outcome, None if c.metric.startswith("latency") else c.value) for c in report.gate.checks]
    return metrics, checks


@pytest.mark.xdist_group("smoke_outputs")
def test_three_shards_merged_equal_the_unsharded_run_and_a_missing_shard_fails(
    shared_run, run, pytester, smoke, capsys
):
    result, whole, _ = smoke_run(shared_run, run, pytester, smoke, [])
    assert result.ret == 0
    shards = []
    for k in (1, 2, 3):
        path = pytester.path / f"shard-{k}.json"
        result = run(f"--eval-dataset={smoke}", f"--eval-shard={k}/3", f"--eval-report={path}")
        assert result.ret == 0, result.stdout.str()
        expected = sorted(i.id for i in read_report(whole).items if shard_of(i.id, 3) == k)
        assert sorted(i.id for i in read_report(path).items) == expected
        assert read_report(path).shard.index == k and read_report(path).shard.count == 3
        shards.append(str(path))
    merged = pytester.path / "merged.json"
    assert groundeval(["merge", *shards, "-o", str(merged)]) == 0
    assert _comparable(read_report(merged)) == _comparable(read_report(whole))
    assert read_report(merged).confidence == read_report(whole).confidence  # docs/statistics.md
    assert read_report(merged).gate.passed is True
    capsys.readouterr()
    partial = pytester.path / "partial.json"
    assert groundeval(["merge", *shards[:2], "-o", str(partial), "--dataset", str(smoke)]) == 1
    out = capsys.readouterr().out
    assert "shard(s) 3/3 not given" in out and out.rstrip().endswith("gate: FAIL")
    assert read_report(partial).merge.missing_item_ids == sorted(
        i.id for i in read_report(whole).items if shard_of(i.id, 3) == 3
    )


def test_a_shards_partial_gate_does_not_fail_it_but_errors_do(run, pytester, smoke):
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"tokensPerQuery": 1}))
    junit = pytester.path / "junit.xml"
    result = run(f"--eval-dataset={smoke}", "--eval-shard=1/3", f"--eval-floors={floors}", f"--junitxml={junit}")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["gate: FAIL", "note: shard 1/3: this gate covers the shard's items only*"])
    skipped = _cases(junit)["smoke.manifest.json::gate"].find("skipped")
    assert skipped is not None and "partial gate of shard 1/3 FAIL" in skipped.get("message")
    # An item that cannot be run fails the shard: the target is gone.
    result = run(f"--eval-dataset={smoke}", "--eval-shard=1/3", "--eval-url=http://127.0.0.1:9", "--eval-api-key=k",
                 "--eval-timeout=2")  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["errors * FAIL *"])
