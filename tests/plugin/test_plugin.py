"""End-to-end tests of the pytest plugin with pytester: the smoke dataset against the
embedded reference target and the mock provider, in every run mode."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_groundeval.cli import main as groundeval

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "datasets" / "smoke"

MODES = {
    "plain": [],
    "n0": ["-n", "0"],
    "n2": ["-n", "2"],
    "no-xdist": ["-p", "no:xdist"],
}

# Metrics that do not depend on timing: they must be identical in every mode (docs/gate.md).
DETERMINISTIC = (
    "retrievalRecall",
    "claimSupportPrecision",
    "claimSupportRecall",
    "falsehoodRejection",
    "temporalAccuracy",
    "tokensPerQuery",
    "errors",
    "items",
)


def read_report(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


_plain_metrics: dict[str, dict] = {}


@pytest.mark.parametrize(
    "mode", [pytest.param(m, marks=pytest.mark.xdist_group("smoke_n2")) if m == "n2" else m for m in MODES]
)
def test_smoke_same_metrics_in_every_mode(run, pytester, smoke, mode, request):
    report = pytester.path / "report.json"
    if mode == "n2":
        # The -n 2 run is shared with test_history.py (it writes a history too): two worker processes, once.
        shared = request.getfixturevalue("smoke_n2_run")
        result, report = shared.result, shared.path / "report.json"
    else:
        result = run(f"--eval-dataset={smoke}", f"--eval-report={report}", *MODES[mode])
    result.assert_outcomes(passed=10)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*groundeval gate*", "claimSupportPrecision*PASS*", "gate: PASS"])
    metrics = read_report(report)["metrics"]
    assert metrics["items"] == 10 and metrics["errors"] == 0
    assert metrics["latencyMsP95"] is not None and metrics["latencyMsP95"] >= metrics["latencyMsP50"] > 0
    if "plain" not in _plain_metrics:
        plain = pytester.path / "plain.json"
        run(f"--eval-dataset={smoke}", f"--eval-report={plain}")
        _plain_metrics["plain"] = read_report(plain)["metrics"]
    assert {k: metrics[k] for k in DETERMINISTIC} == {k: _plain_metrics["plain"][k] for k in DETERMINISTIC}


def test_report_is_complete_and_valid(run, pytester, smoke):
    from pytest_groundeval.core.report import read_report as validate

    report = pytester.path / "out" / "report.json"
    report.parent.mkdir()
    result = run(f"--eval-dataset={smoke}", f"--eval-report={report}")
    assert result.ret == 0
    parsed = validate(report)
    assert parsed.dataset_version == "smoke-1"
    assert parsed.models.generate == "mock-generate" and parsed.models.embed == "mock-embed"
    assert sorted(i.id for i in parsed.items) == sorted(
        i["id"] for i in json.loads((smoke / "manifest.json").read_text())["items"]
    )
    assert all(i.trace_id for i in parsed.items if i.kind in ("qa", "adversarial"))
    assert parsed.gate.passed is True


def test_k_runs_only_the_slice_and_gate_checks_only_what_ran(run, pytester, smoke):
    report = pytester.path / "report.json"
    result = run(f"--eval-dataset={smoke}", "-k", "adversarial", f"--eval-report={report}", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*manifest.json::adversarial::adv-smoke-echo PASSED*",
            "falsehoodRejection*1.0000*PASS*",
            "gate: PASS",
        ]
    )
    # The qa and temporal bounds measure nothing in an adversarial slice: left out of the
    # table (docs/gate.md), not printed as n/a SKIP lines.
    table = result.stdout.str().split("groundeval gate")[1]
    for metric in ("retrievalRecall", "claimSupportPrecision", "claimSupportRecall", "temporalAccuracy"):
        assert metric not in table, metric
    assert {i["kind"] for i in read_report(report)["items"]} == {"adversarial"}


def test_m_selects_by_kind_marker_and_tags_are_markers(run, pytester, smoke):
    result = run(f"--eval-dataset={smoke}", "-m", "temporal", "--strict-markers")
    result.assert_outcomes(passed=3)
    result = run(f"--eval-dataset={smoke}", "-m", "swedish", "--strict-markers")
    result.assert_outcomes(passed=2)


def test_single_item_node_id_as_an_ide_runs_it(run, pytester, smoke):
    result = run("smoke/manifest.json::qa::qa-smoke-index-build", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*smoke/manifest.json::qa::qa-smoke-index-build PASSED*", "gate: PASS"])


def test_dataset_directory_as_a_path_is_collected(run, pytester, smoke):
    result = run("smoke", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["smoke/manifest.json::qa::qa-smoke-alpha-budget", "*10 tests collected*"])


def test_eval_dataset_collects_only_the_dataset(run, pytester, smoke):
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    result = run(f"--eval-dataset={smoke}", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*10 tests collected*"])
    result.stdout.no_fnmatch_line("*test_other*")


def test_reportinfo_points_at_the_item_line(run, pytester, smoke):
    no_others = ("-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:anyio")  # as conftest.py's run
    items, _ = pytester.inline_genitems(*no_others, f"--eval-dataset={smoke}")
    manifest_lines = (smoke / "manifest.json").read_text(encoding="utf-8").splitlines()
    assert len(items) == 10
    for item in items:
        path, lineno, label = item.reportinfo()
        assert Path(path) == smoke / "manifest.json"
        assert f'"id": "{item.name}"' in manifest_lines[lineno] or f'"id": "{item.name}"' in manifest_lines[lineno + 1]
        assert label.endswith(f"::{item.name}")


def test_a_collected_item_holds_no_fixture_request_until_it_runs(run, pytester, smoke):
    # pytest.Function makes a TopRequest per collected item (~0.4 KiB; 40 MiB at 100,000 items).
    no_others = ("-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:anyio")  # as conftest.py's run
    items, _ = pytester.inline_genitems(*no_others, f"--eval-dataset={smoke}")
    assert len(items) == 10
    assert all(item._request is False and item.funcargs is None for item in items)
    items[0]._initrequest()  # what pytest's runtestprotocol does for an item whose request is unset
    assert isinstance(items[0]._request, pytest.FixtureRequest) and items[0].funcargs == {}


def test_items_can_use_fixtures(run, pytester, smoke):
    pytester.makeconftest(
        """
        import pytest
        SEEN = []

        @pytest.fixture(autouse=True)
        def note_item(request):
            SEEN.append(request.node.name)
            yield

        def pytest_sessionfinish(session):
            print("fixture saw", len(SEEN), "items")
        """
    )
    result = run(f"--eval-dataset={smoke}", "-s", "-k", "temporal")
    result.stdout.fnmatch_lines(["*fixture saw 3 items*"])


def test_an_exception_other_than_a_shortfall_is_reported_as_a_failure(run, pytester, smoke):
    # EvalItem.repr_failure passed style= on to pytest.Function.repr_failure, which takes no
    # style: any call-phase exception other than the item's own shortfall became an INTERNALERROR.
    pytester.makeconftest(
        """
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_call(item):
            raise RuntimeError("boom from a plugin")
        """
    )
    result = run(f"--eval-dataset={smoke}", "-k", "adv-smoke-echo")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*RuntimeError: boom from a plugin*"])
    assert "INTERNALERROR" not in result.stdout.str()


def test_help_lists_every_option_in_one_group(run, pytester):
    result = pytester.runpytest("-p", "no:benchmark", "--help")
    result.stdout.fnmatch_lines(["groundeval: gate grounded-answer quality:"])
    text = result.stdout.str()
    group = text.split("groundeval: gate grounded-answer quality:")[1].split("\n\n")[0]
    for name in (
        "dataset",
        "spawn",
        "setup",
        "url",
        "api-key",
        "report",
        "html",
        "markdown",
        "no-step-summary",
        "shard",
        "baseline",
        "floors",
        "alpha",
        "strict",
        "no-gate",
        "confidence",
        "gate-on",
        "timeout",
        "ready-timeout",
        "model-generate",
        "model-embed",
        "max-response-bytes",
        "target-map",
        "repeat",
    ):
        assert f"--eval-{name}" in group, name


def test_spawn_and_url_together_is_a_usage_error(run, pytester, smoke):
    result = run(f"--eval-dataset={smoke}", "--eval-spawn=x", "--eval-url=http://127.0.0.1:1", "--eval-api-key=k")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--eval-spawn and --eval-url both given*"])


@pytest.mark.parametrize("flag", ["--eval-spawn", "--eval-setup"])
def test_an_unknown_spawn_placeholder_is_a_usage_error(run, pytester, smoke, flag):
    result = run(
        f"--eval-dataset={smoke}", "--eval-spawn=serve --port {port}", f"{flag}=serve --port {{prot}}", spawn=True
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*{flag}: the command 'serve --port {{prot}}' uses {{prot}}, which is not a placeholder*"]
    )
    result.stderr.fnmatch_lines(["*the placeholders are {port}, {data_dir}, {llm_url}, {embed_url}, {api_key}*"])


def test_max_response_bytes_is_resolved_from_flag_ini_and_env(pytester, monkeypatch):
    from pytest_groundeval.plugin.options import resolve_settings
    from pytest_groundeval.targets.protocol import DEFAULT_MAX_RESPONSE_BYTES

    assert resolve_settings(pytester.parseconfig()).max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES
    assert resolve_settings(pytester.parseconfig("--eval-max-response-bytes=2MiB")).max_response_bytes == 2 << 20
    assert resolve_settings(pytester.parseconfig("--eval-max-response-bytes=1000")).max_response_bytes == 1000
    monkeypatch.setenv("GROUNDEVAL_MAX_RESPONSE_BYTES", "64 KiB")
    assert resolve_settings(pytester.parseconfig()).max_response_bytes == 64 << 10
    monkeypatch.setenv("GROUNDEVAL_MAX_RESPONSE_BYTES", "0")
    with pytest.raises(pytest.UsageError, match="'0' is not a valid value for env GROUNDEVAL_MAX_RESPONSE_BYTES"):
        resolve_settings(pytester.parseconfig())
    pytester.makeini("[pytest]\neval_max_response_bytes = 16MB\n")
    with pytest.raises(
        pytest.UsageError, match="'16MB' is not a valid value for ini eval_max_response_bytes: expected"
    ):
        resolve_settings(pytester.parseconfig())


def test_missing_dataset_is_a_usage_error(run, pytester):
    result = run("--eval-dataset=nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'nowhere' given by --eval-dataset is not a dataset*"])


def test_env_and_ini_fallbacks_with_flag_precedence(run, pytester, smoke, monkeypatch):
    monkeypatch.setenv("GROUNDEVAL_DATASET", str(smoke))
    result = run("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*10 tests collected*"])
    pytester.makeini(f"[pytest]\neval_dataset = {smoke}\neval_timeout = nope\n")
    result = run("--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'nope' is not a valid value for ini eval_timeout*"])
    result = run("--collect-only", "-q", "--eval-timeout=5")
    result.stdout.fnmatch_lines(["*10 tests collected*"])


def test_invalid_floors_file_is_a_usage_error(run, pytester, smoke):
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"claimSupportPrecison": 0.9}))
    result = run(f"--eval-dataset={smoke}", f"--eval-floors={floors}", "-k", "temporal")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*claimSupportPrecison*"])


def test_malformed_manifest_is_a_plain_collection_error(run, pytester, smoke):
    manifest = json.loads((smoke / "manifest.json").read_text())
    manifest["items"][0]["expectedEvidence"] = [42]
    (smoke / "manifest.json").write_text(json.dumps(manifest, indent=2))
    result = run(f"--eval-dataset={smoke}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*qa-smoke-alpha-budget*expectedEvidence*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*pydantic*")


def test_review_items_start_no_mock_and_no_target(run, pytester):
    dataset = pytester.path / "reviews"
    (dataset / "corpus").mkdir(parents=True)
    (dataset / "corpus" / "q.txt").write_text("Questions.\n")
    import xxhash

    digest = xxhash.xxh3_64_hexdigest((dataset / "corpus" / "q.txt").read_bytes())
    block = {
        "claims": [{"id": "c1", "text": "Aspirin thins the blood", "assertiveness": "definitive", "sourceIds": ["s1"]}],
        "sources": [{"id": "s1", "url": "https://example.org/forum", "declaredTier": "community"}],
    }
    manifest = {
        "version": "v1",
        "corpus": [{"name": "q.txt", "label": "Q", "file": "q.txt", "format": "text"}],
        "corpusHashes": {"q.txt": digest},
        "items": [
            {
                "id": "rev-ok",
                "kind": "review",
                "response": {"answer": "Aspirin thins the blood."},
                "evidence": dict(block, minScore=0.3),
            },
            {
                "id": "rev-flagged",
                "kind": "review",
                "response": {"answer": "Aspirin thins the blood."},
                "evidence": dict(block, minScore=0.5),
            },
        ],
    }
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(scope="session")
        def groundeval_mock():
            raise AssertionError("review items must not start the mock")

        @pytest.fixture(scope="session")
        def groundeval_target():
            raise AssertionError("review items must not start a target")
        """
    )
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={dataset}", f"--eval-report={report}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*rev-flagged*flag_for_human_review*", "evidenceRiskScore*0.3333*INFO*"])
    assert read_report(report)["metrics"]["evidenceRiskScore"] == pytest.approx(1 / 3)
    # The optional evidenceRiskScore floor gates (docs/gate.md).
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"evidenceRiskScore": 0.5}))
    gated = run(f"--eval-dataset={dataset}", f"--eval-floors={floors}")
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    gated.stdout.fnmatch_lines(["evidenceRiskScore*0.3333 [[]*] >= 0.5000*FAIL*", "gate: FAIL"])


def test_a_review_item_not_yet_annotated_is_collected_and_passes_unreviewed(run, pytester):
    # docs/evidence-risk.md: an un-annotated row scores 1.0 with reviewed: false, so a dataset
    # can be adopted before it is fully annotated (it used to be refused at collection).
    dataset = pytester.path / "reviews"
    shutil.copytree(ROOT / "datasets" / "expertqa", dataset)
    manifest = json.loads((dataset / "manifest.json").read_text(encoding="utf-8"))
    first, second = manifest["items"][:2]
    del first["evidence"]
    second["evidence"] = {}
    manifest["items"] = [first, second]
    (dataset / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={dataset}", f"--eval-report={report}")
    result.assert_outcomes(passed=2)
    items = read_report(report)["items"]
    assert [(i["evidenceReview"]["reviewed"], i["evidenceReview"]["score"]) for i in items] == [(False, 1.0)] * 2
    assert read_report(report)["metrics"]["evidenceRiskScore"] is None  # no block was reviewed


def test_a_mention_pattern_that_times_out_errors_its_item_and_the_run_goes_on(run, pytester, monkeypatch):
    from pytest_groundeval.core.kinds.citation import text

    monkeypatch.setattr(text, "MENTION_TIMEOUT_S", 0.05)
    dataset = pytester.path / "cites"
    shutil.copytree(ROOT / "datasets" / "citation-smoke", dataset)
    manifest = json.loads((dataset / "manifest.json").read_text(encoding="utf-8"))
    pattern = r"(?P<speaker>(a|aa)+)b"  # 2**n ways to split a run of a's: hangs without a bound
    manifest["mentionPattern"] = pattern
    manifest["items"][0]["response"]["answer"] = "a" * 40 + " [1]"
    (dataset / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={dataset}", f"--eval-report={report}")
    assert result.parseoutcomes().get("errors") == 1
    result.stdout.fnmatch_lines(["*citation item cit-smoke-two-speakers could not be run: mentionPattern*"])
    errored = [i for i in read_report(report)["items"] if i["error"]]
    assert [i["id"] for i in errored] == ["cit-smoke-two-speakers"] and repr(pattern) in errored[0]["error"]
    assert len(read_report(report)["items"]) == len(manifest["items"])  # every other item was judged


def test_spawn_target_that_fails_to_start_shows_command_exit_code_and_log(run, pytester, smoke):
    command = f"{sys.executable} -c \"import sys; print('boom: cannot bind'); sys.exit(3)\""
    result = run(f"--eval-dataset={smoke}", f"--eval-spawn={command}", "-k", "qa")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    assert "exit code 3" in text and "boom: cannot bind" in text and "sys.exit(3)" in text
    assert "Traceback" not in text and "def groundeval_target" not in text
    # One clear error, then the session stops instead of failing every item the same way.
    result.assert_outcomes(errors=1)


@pytest.mark.xdist_group("down_target")
@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_url_target_that_is_down_fails_fast_with_one_error(down_target_run, mode):
    # Under xdist the stop reaches the controller as an interrupt: still exit 1, not 2.
    # The smoke dataset's qa items against http://127.0.0.1:9: runs shared with test_never_green.py.
    result = down_target_run(*mode).result
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=1 if not mode else 2)  # one error per process that tried
    result.stdout.fnmatch_lines(["*the target at http://127.0.0.1:9 is unavailable*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*httpcore*")


def test_a_target_refusing_the_key_fails_once(run, pytester, smoke):
    pytester.makeconftest(
        """
import pytest
from pytest_groundeval.targets import HttpTarget

@pytest.fixture(scope="session")
def groundeval_target(groundeval_target):
    with HttpTarget(groundeval_target.base_url, "not-the-key") as target:
        yield target
"""
    )
    result = run(f"--eval-dataset={smoke}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the target refused the harness's API key*401*"])


def test_a_target_whose_info_names_a_model_by_a_list_still_runs_its_items(run, pytester, smoke):
    # The items of a run share one block of dataset version and lineage (plugin/record.py, a cache keyed
    # by the lineage): a lineage value that cannot be a cache key must not turn every item into an error.
    pytester.makeconftest(
        """
import pytest

@pytest.fixture(scope="session")
def groundeval_target(groundeval_target):
    class Listed:
        def __getattr__(self, name):
            return getattr(groundeval_target, name)

        def info(self):
            return {"models": {"generate": ["gpt-x", "v2"], "embed": "e"}}

    return Listed()
"""
    )
    result = run(f"--eval-dataset={smoke}", "-k", "qa")
    result.assert_outcomes(passed=4)
    result.stdout.no_fnmatch_line("*unhashable*")


def test_spawn_placeholders_reach_a_user_server(run, pytester, smoke):
    """--eval-spawn with the reference server started by a user command and a setup step."""
    marker = pytester.path / "setup-ran"
    spawn = f"{sys.executable} -m pytest_groundeval.reference --port {{port}} --data-dir {{data_dir}}"
    setup = f"{sys.executable} -c \"open(r'{marker}', 'w').write('{{port}}')\""
    result = run(f"--eval-dataset={smoke}", f"--eval-spawn={spawn}", f"--eval-setup={setup}", "-k", "qa")
    result.assert_outcomes(passed=4)
    assert marker.read_text().isdigit()


# -- every gate FAILS on a target broken in exactly that way ---------------------------

BROKEN_CONFTEST = '''
import pytest
from pytest_groundeval.targets import HttpTarget

BROKEN = {how!r}


def keep(body, evidence):
    """A retriever that returned only ``evidence``: the answer cites nothing else."""
    markers = {{e["marker"] for e in evidence}}
    body["evidence"] = evidence
    body["claims"] = [c for c in body["claims"] if set(c["markers"]) <= markers]


class Broken:
    """The real reference target (spawned, against the mock) with one thing broken."""

    def __init__(self, inner):
        self.inner = inner
        self.generates = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, question, find):
        self.generates += 1
        if BROKEN == "dies" and self.generates == 3:
            # From here on every call goes to a port nobody listens on: a real refused connection.
            self.inner = HttpTarget("http://127.0.0.1:9", "k", timeout_s=5)
        body = self.inner.generate(question, find)
        if BROKEN == "permissive":
            for claim in body["claims"]:
                claim["verdict"] = "supported"
        if BROKEN == "drops-evidence":
            keep(body, body["evidence"][-1:])
        if BROKEN == "one-item" and question.startswith("How long"):
            keep(body, [])
        if BROKEN == "silent":
            body.update(answer="", evidence=[], claims=[])
        if BROKEN == "shifted-offsets":
            for claim in body["claims"]:
                claim["start"] += 3
                claim["end"] += 3
        if BROKEN == "ghost-marker" and body["claims"]:
            body["claims"][-1]["markers"] = ["S99"]
        return body

    def query(self, body):
        if BROKEN == "ignores-as-of-tx":
            body = {{k: v for k, v in body.items() if k != "asOfTx"}}
        return self.inner.query(body)


@pytest.fixture(scope="session")
def groundeval_target(groundeval_target):
    return Broken(groundeval_target)
'''


def broken(pytester: pytest.Pytester, how: str) -> None:
    pytester.makeconftest(BROKEN_CONFTEST.format(how=how))


QA_BASELINE = pytest.mark.xdist_group("smoke_qa_baseline")
"""The tests that share ``qa_baseline``'s run: on one worker under xdist, so that it runs once."""


@pytest.fixture(scope="module")
def qa_baseline(run_once) -> Callable[[Path], pytest.RunResult]:
    """``qa_baseline(path) -> RunResult``: a report of the smoke qa items against the unbroken target, copied to ``path``.

    What ``run(f"--eval-dataset={smoke}", f"--eval-report={path}", "-k", "qa")`` writes, run once for
    the module; the result returned is that run's. Each test gets its own copy to use or change.
    """
    shared = run_once(
        "smoke-qa-baseline", "--eval-dataset={path}/smoke", "--eval-report={path}/baseline.json", "-k", "qa"
    )

    def copy(path: Path) -> pytest.RunResult:
        shutil.copyfile(shared.path / "baseline.json", path)
        return shared.result

    return copy


def test_permissive_verifier_fails_falsehood_rejection_and_precision(run, pytester, smoke):
    broken(pytester, "permissive")
    result = run(f"--eval-dataset={smoke}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "claimSupportPrecision*0.9000*FAIL*",
            "falsehoodRejection*0.0000*>= 0.9500*FAIL*",
            "gate: FAIL",
        ]
    )


@QA_BASELINE
def test_retriever_that_drops_evidence_fails_recall_against_a_same_lineage_baseline(run, pytester, smoke, qa_baseline):
    baseline = pytester.path / "baseline.json"
    good = qa_baseline(baseline)
    assert good.ret == 0
    broken(pytester, "drops-evidence")
    result = run(f"--eval-dataset={smoke}", f"--eval-baseline={baseline}", "-k", "qa")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["retrievalRecall*>= 0.9800*FAIL*", "gate: FAIL"])


@QA_BASELINE
def test_eval_alpha_reaches_the_baseline_checks_paired_test(run, pytester, smoke, monkeypatch, qa_baseline):
    # docs/statistics.md: a recall drop beyond the margin FAILs only when significant at --eval-alpha.
    baseline = pytester.path / "baseline.json"
    assert qa_baseline(baseline).ret == 0
    broken(pytester, "drops-evidence")
    # The smoke dataset's four qa items cannot reach p < 0.05: the fixed margin judges, and says so.
    result = run(f"--eval-dataset={smoke}", f"--eval-baseline={baseline}", "-k", "qa")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["retrievalRecall*FAIL*; fixed margin: 4 paired qa items cannot reach alpha 0.05*"])
    # At a level four items can reach, the paired test decides: from the environment, then the flag.
    monkeypatch.setenv("GROUNDEVAL_ALPHA", "0.01")
    result = run(f"--eval-dataset={smoke}", f"--eval-baseline={baseline}", "-k", "qa", "--eval-alpha=0.5")
    result.stdout.fnmatch_lines(["retrievalRecall*FAIL*; significant (p=0.*) over 4 paired qa items at alpha 0.5"])
    report = pytester.path / "r.json"
    run(f"--eval-dataset={smoke}", f"--eval-baseline={baseline}", "-k", "qa", f"--eval-report={report}")
    recorded = json.loads(report.read_text())["baseline"]
    assert recorded["alpha"] == 0.01 and recorded["pairedItems"] == 4 and 0 < recorded["recallPValue"] <= 1
    # groundeval gate against the baseline report: the level the run recorded, or --alpha.
    for alpha, line in ((None, "fixed margin: 4 paired qa items cannot reach alpha 0.01"),
                        ("0.5", "significant (p=0.")):  # fmt: skip
        out = pytester.path / f"gate-{alpha}.txt"
        argv = ["gate", "--report", str(report), "--baseline", str(baseline), *(["--alpha", alpha] if alpha else [])]
        with out.open("w") as stream, contextlib.redirect_stdout(stream):
            assert groundeval(argv) == 1
        (check,) = [text for text in out.read_text().splitlines() if text.startswith("retrievalRecall")]
        assert "FAIL" in check and line in check, check


@pytest.mark.parametrize("value", ["1", "0", "-0.1", "often"])
def test_an_alpha_that_is_no_significance_level_is_a_usage_error(run, pytester, smoke, value):
    result = run(f"--eval-dataset={smoke}", f"--eval-alpha={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*{value!r} is not a valid value for --eval-alpha: expected a significance level, a number in (0, 1)"]
    )


@QA_BASELINE
def test_groundeval_gate_reapplies_the_baseline_and_floors_the_run_recorded(run, pytester, smoke, capsys, qa_baseline):
    # Issue 12 point 2: re-gating a saved run must not turn its recall FAIL into a PASS.
    baseline = pytester.path / "baseline.json"
    assert qa_baseline(baseline).ret == 0
    broken(pytester, "drops-evidence")
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"temporalAccuracy": None, "retrievalRecallMargin": 0.03}))
    saved = pytester.path / "r.json"
    result = run(
        f"--eval-dataset={smoke}", f"--eval-baseline={baseline}", f"--eval-floors={floors}",
        f"--eval-report={saved}", "-k", "qa",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    capsys.readouterr()

    assert groundeval(["gate", "--report", str(saved)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "applied: floors recorded in the report; baseline baseline.json as recorded in the report"
    recall = [line for line in out if line.startswith("retrievalRecall") and "baseline" in line]
    assert len(recall) == 1 and "FAIL" in recall[0] and "margin 0.0300" in recall[0]
    assert out[-1] == "gate: FAIL"
    report = json.loads(saved.read_text())
    assert report["baseline"]["path"] == "baseline.json"
    assert (
        report["baseline"]["qaItems"] == report["baseline"]["baselineQaItems"] == report["metrics"]["itemsByKind"]["qa"]
    )
    assert report["baseline"]["retrievalRecall"] == json.loads(baseline.read_text())["metrics"]["retrievalRecall"]
    assert report["floors"]["retrievalRecallMargin"] == 0.03 and "temporalAccuracy" not in report["floors"]

    # Told otherwise, it says so: no baseline, then the defaults' margin from a floors file.
    assert groundeval(["gate", "--report", str(saved), "--no-baseline"]) in (0, 1)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "applied: floors recorded in the report; no baseline (--no-baseline)"
    assert any(line.startswith("retrievalRecall") and "SKIP" in line and "no baseline given" in line for line in out)
    other = pytester.path / "other-floors.json"
    other.write_text("{}")
    assert groundeval(["gate", "--report", str(saved), "--floors", str(other), "--baseline", str(baseline)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"applied: floors from {other}; baseline {baseline}"
    assert any(line.startswith("retrievalRecall") and "margin 0.0200" in line for line in out)


@QA_BASELINE
def test_baseline_of_another_lineage_does_not_arm_recall(run, pytester, smoke, qa_baseline):
    baseline = pytester.path / "baseline.json"
    assert qa_baseline(baseline).ret == 0
    data = json.loads(baseline.read_text())
    data["models"]["embed"] = "text-embedding-3-small"
    baseline.write_text(json.dumps(data))
    broken(pytester, "drops-evidence")
    result = run(f"--eval-dataset={smoke}", f"--eval-baseline={baseline}", "-k", "qa")
    result.stdout.fnmatch_lines(["retrievalRecall*SKIP*lineage*", "gate: PASS"])
    assert result.ret == 0


def test_temporal_bug_fails_temporal_accuracy(run, pytester, smoke):
    broken(pytester, "ignores-as-of-tx")
    result = run(f"--eval-dataset={smoke}", "-k", "temporal")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*tmp-smoke-as-of-tx*", "temporalAccuracy*0.6667*FAIL*", "gate: FAIL"])


def test_target_that_dies_mid_run_fails_the_errors_budget(run, pytester, smoke):
    broken(pytester, "dies")
    # One item at a time, so "the third generate call" is the same item in every run.
    result = run(f"--eval-dataset={smoke}", "-k", "qa or adversarial", "--eval-concurrency=1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = result.parseoutcomes()
    # Three refused calls in a row: the target counts as gone and the session stops there,
    # instead of repeating the same error for every remaining item.
    assert outcomes["passed"] == 2 and outcomes["errors"] == 3
    result.stdout.fnmatch_lines(
        [
            "*could not be run*127.0.0.1:9*",
            # 3 items errored, and the 2 the stop left unrun count as errors too (notRun).
            "errors*5 <= 0*FAIL*",
            "notRun*2 <= 0*FAIL*2 of 7 collected items never ran*",
            "run*interrupted after 5 items*",
            "gate: FAIL",
        ]
    )
    result.stdout.fnmatch_lines(["*groundeval: the target has refused 3 calls in a row*"])
    many = run(f"--eval-dataset={smoke}", "-k", "qa or adversarial", "--eval-concurrency=8")
    assert many.ret == pytest.ExitCode.TESTS_FAILED
    # Calls already in flight when the target dies still complete; every later one errors.
    assert many.parseoutcomes()["errors"] >= 1
    many.stdout.fnmatch_lines(["errors*<= 0*FAIL*", "gate: FAIL"])


def test_failed_item_with_passing_gate_exits_0_unless_strict(run, pytester, smoke):
    broken(pytester, "one-item")
    result = run(f"--eval-dataset={smoke}", "-k", "qa")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*qa-smoke-index-build*expected evidence*not retrieved*", "gate: PASS"])
    assert result.ret == 0
    strict = run(f"--eval-dataset={smoke}", "-k", "qa", "--eval-strict")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED


def test_lf_reruns_only_the_failed_item(run, pytester, smoke):
    broken(pytester, "one-item")
    first = run(f"--eval-dataset={smoke}", "-k", "qa", cache=True)
    first.assert_outcomes(passed=3, failed=1)
    again = run(f"--eval-dataset={smoke}", "--lf", "-v", cache=True)
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*qa::qa-smoke-index-build FAILED*"])


def test_crashed_worker_item_counts_as_error(run, pytester, smoke):
    pytester.makeconftest(
        """
import os
import pytest

@pytest.fixture(autouse=True)
def crash_on_one(request):
    if request.node.name == "adv-smoke-echo":
        os._exit(1)
"""
    )
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={smoke}", "-n", "2", "-k", "adversarial", f"--eval-report={report}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["errors*1 <= 0*FAIL*", "gate: FAIL"])
    items = {i["id"]: i for i in read_report(report)["items"]}
    assert items["adv-smoke-echo"]["error"]
    # The crashed item is not rejected: it stays in falsehoodRejection's denominator.
    assert read_report(report)["metrics"]["falsehoodRejection"] == pytest.approx(2 / 3)


@QA_BASELINE
def test_a_dataset_baseline_arms_recall_without_a_flag(run, pytester, smoke, qa_baseline):
    assert qa_baseline(smoke / "baseline.json").ret == 0
    broken(pytester, "drops-evidence")
    result = run(f"--eval-dataset={smoke}", "-k", "qa")
    result.stdout.fnmatch_lines(["retrievalRecall*>= 0.9800*FAIL*", "baseline: smoke/baseline.json", "gate: FAIL"])
    # The same from an IDE-style node id run, with no --eval-dataset.
    result = run("smoke/manifest.json::qa::qa-smoke-index-build")
    result.stdout.fnmatch_lines(["retrievalRecall*FAIL*", "gate: FAIL"])


def test_evidence_reviews_make_no_provider_call(run, pytester, smoke):
    """Review items, and the review of a qa answer's evidence block, leave the mock's log unchanged (docs/evidence-risk.md)."""
    manifest = json.loads((smoke / "manifest.json").read_text(encoding="utf-8"))
    block = {
        "claims": [
            {
                "id": "c1",
                "text": "Kontoret i Göteborg öppnade i mars 2021",
                "assertiveness": "definitive",
                "sourceIds": ["s1"],
            }
        ],
        "sources": [{"id": "s1", "url": "https://example.org/notes", "declaredTier": "official"}],
    }
    for item in manifest["items"]:
        if item["id"] == "qa-smoke-goteborg-office":
            item["evidence"] = block
    manifest["items"].append(
        {
            "id": "rev-office",
            "kind": "review",
            "response": {"answer": "Kontoret i Göteborg öppnade i mars 2021."},
            "evidence": block,
        }
    )
    (smoke / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    calls = pytester.path / "calls.jsonl"
    pytester.makeconftest(
        f"""
import json
import pytest

@pytest.fixture(autouse=True)
def count_provider_calls(request, groundeval_mock):
    before = len(groundeval_mock.log)
    yield
    with open({str(calls)!r}, "a") as f:
        f.write(json.dumps([request.node.name, len(groundeval_mock.log) - before]) + "\\n")
"""
    )
    args = (f"--eval-dataset={smoke}", "-k", "goteborg or rev", "--eval-concurrency=1")
    result = run(*args, spawn=True)
    result.assert_outcomes(passed=2)
    with_block = dict(json.loads(line) for line in calls.read_text().splitlines())
    assert with_block["rev-office"] == 0
    # The qa item makes exactly the provider calls it makes without the block.
    for item in manifest["items"]:
        item.pop("evidence", None) if item["kind"] == "qa" else None
    (smoke / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    calls.unlink()
    run(*args, spawn=True).assert_outcomes(passed=2)
    without_block = dict(json.loads(line) for line in calls.read_text().splitlines())
    assert with_block["qa-smoke-goteborg-office"] == without_block["qa-smoke-goteborg-office"] > 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nowhere/r.json", "is in a directory that does not exist"),
        (".", "is a directory"),
        ("smoke/manifest.json/r.json", "is under *manifest.json, which is not a directory"),  # said "does not exist"
        # Root may write anywhere the permissions say, but not where the file system refuses (an INTERNALERROR before).
        ("/sys/r.json", "is in a directory this run cannot write (/sys: Permission denied)"),
    ],
)
def test_unwritable_report_path_is_a_usage_error_before_the_run(run, pytester, smoke, value, message):
    result = run(f"--eval-dataset={smoke}", f"--eval-report={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{value!r} given by --eval-report {message}*"])
    result.stdout.no_fnmatch_line("*passed*")


@pytest.mark.parametrize("content", ['{"claimSupportPrecision": 1.5}', "{not json", '{"bogus": 1}'])
def test_invalid_floors_content_is_refused_before_any_item_runs(run, pytester, smoke, content):
    floors = pytester.path / "floors.json"
    floors.write_text(content)
    result = run(f"--eval-dataset={smoke}", f"--eval-floors={floors}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*floors*"])
    result.stdout.no_fnmatch_line("*passed*")


def test_invalid_baseline_is_refused_before_any_item_runs(run, pytester, smoke):
    baseline = pytester.path / "baseline.json"
    baseline.write_text('{"metrics": {}}')
    result = run(f"--eval-dataset={smoke}", f"--eval-baseline={baseline}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*baseline.json*"])
    result.stdout.no_fnmatch_line("*passed*")


def test_interrupted_run_is_marked_and_its_report_fails_the_gate_cli(run, pytester, smoke):
    from pytest_groundeval import cli

    broken(pytester, "one-item")
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={smoke}", "-k", "qa", "-x", f"--eval-report={report}")
    result.stdout.fnmatch_lines(["run*FAIL*interrupted after 3 items*", "gate: FAIL"])
    saved = read_report(report)
    assert saved["interrupted"] is True and saved["gate"]["passed"] is False
    assert cli.main(["gate", "--report", str(report)]) == 1
    # Reports are readable by others (not mkstemp's 0600).
    assert report.stat().st_mode & 0o044 == 0o044


def test_eval_dataset_flag_with_other_paths_runs_both(run, pytester, smoke):
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    result = run(f"--eval-dataset={smoke}", "test_other.py", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*11 tests collected*"])
    # A node id of the dataset itself is not doubled.
    result = run(f"--eval-dataset={smoke}", "smoke/manifest.json::qa", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*4 tests collected*"])


def test_dataset_outside_the_rootdir_keeps_its_node_ids_and_its_gate(run, pytester, smoke, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "ds"
    shutil.copytree(smoke, outside)
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"tokensPerQuery": 1}))
    result = run(f"--eval-dataset={outside}", f"--eval-floors={floors}", "-k", "cited", "-v")
    result.stdout.fnmatch_lines(
        ["*ds/manifest.json::adversarial::adv-smoke-cited-budget PASSED*", "tokensPerQuery*FAIL*", "gate: FAIL"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_spawned_target_that_dies_mid_run_stops_the_session_with_its_exit_and_log(run, pytester, smoke):
    pytester.makeconftest(
        """
import os, signal
import pytest
from pytest_groundeval.plugin import spawned_key

@pytest.fixture(scope="session")
def groundeval_target(request, groundeval_target):
    spawned = request.session.stash[spawned_key]

    class KilledAfterTwo:
        calls = 0

        def __getattr__(self, name):
            return getattr(groundeval_target, name)

        def generate(self, question, find):
            KilledAfterTwo.calls += 1
            if KilledAfterTwo.calls == 3:
                os.killpg(spawned.process.pid, signal.SIGKILL)
                spawned.process.wait()
            return groundeval_target.generate(question, find)

    return KilledAfterTwo()
"""
    )
    result = run(f"--eval-dataset={smoke}", "-k", "qa or adversarial", "--eval-concurrency=1", spawn=True)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == 2 and outcomes["errors"] == 1
    result.stdout.fnmatch_lines(
        ["*the target process died*", "*killed by SIGKILL*", "*target.log*", "*groundeval: the target process died*"]
    )


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("shifted-offsets", "*claims[[]0[]] start/end*do not slice its text*"),
        ("ghost-marker", "*markers names [[]'S99'[]], which no evidence entry has*"),
    ],
)
def test_contract_violations_in_generate_are_errors_naming_the_field(run, pytester, smoke, how, message):
    broken(pytester, how)
    result = run(f"--eval-dataset={smoke}", "-k", "qa-smoke-index-build")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message, "gate: FAIL"])


def test_a_target_that_answers_nothing_fails_the_gate(run, pytester, smoke):
    broken(pytester, "silent")
    result = run(f"--eval-dataset={smoke}", "-k", "qa")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "claimSupportPrecision*FAIL*4 qa items ran but the target returned no claims*",
            "claimSupportRecall*FAIL*returned no claims*",
            "gate: FAIL",
        ]
    )


def test_a_file_that_is_not_a_manifest_is_a_usage_error(run, pytester, smoke):
    (pytester.path / "notes.md").write_text("# notes\n")
    result = run("--eval-dataset=notes.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'notes.md' given by --eval-dataset is a file but not a dataset manifest*"])


def test_a_target_failing_every_call_stops_after_a_streak(run, pytester, smoke):
    pytester.makeconftest(
        """
import pytest
from pytest_groundeval.targets import TargetError

@pytest.fixture(scope="session")
def groundeval_target(groundeval_target):
    class Failing:
        def __getattr__(self, name):
            return getattr(groundeval_target, name)

        def generate(self, question, find):
            raise TargetError("POST /v1/generate: returned an error status (HTTP 500)", status=500)

    return Failing()
"""
    )
    manifest = json.loads((smoke / "manifest.json").read_text(encoding="utf-8"))
    qa = next(i for i in manifest["items"] if i["id"] == "qa-smoke-index-build")
    manifest["items"] += [dict(qa, id=f"qa-copy-{n:02d}") for n in range(12)]
    (smoke / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    result = run(f"--eval-dataset={smoke}", "-k", "qa", "--eval-concurrency=1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # Stopped long before the 16 selected items all repeated the same error (the item sent
    # ahead while pytest reports the current one may finish the streak one item early).
    assert result.parseoutcomes()["errors"] <= 10
    result.stdout.fnmatch_lines(["*groundeval: 10 items in a row could not be run*HTTP 500*"])


def test_groundeval_gate_applies_the_slice_rule_like_the_plugin(run, pytester, smoke, capsys):
    from pytest_groundeval import cli

    # A baseline in which qa-smoke-index-build misses its evidence: overall recall 0.75.
    broken(pytester, "one-item")
    baseline = pytester.path / "baseline.json"
    run(f"--eval-dataset={smoke}", f"--eval-report={baseline}", "-k", "qa")
    assert read_report(baseline)["metrics"]["retrievalRecall"] == pytest.approx(0.75)
    # The slice holding only that item is compared with its own baseline figure (0.0), not 0.75.
    sliced = pytester.path / "slice.json"
    result = run(f"--eval-dataset={smoke}", "-k", "index", f"--eval-baseline={baseline}", f"--eval-report={sliced}")
    result.stdout.fnmatch_lines(["retrievalRecall*PASS*baseline over the 1 qa item that ran 0.0000*"])
    capsys.readouterr()
    cli.main(["gate", "--report", str(sliced), "--baseline", str(baseline)])
    recall = [line for line in capsys.readouterr().out.splitlines() if line.startswith("retrievalRecall")]
    assert len(recall) == 1 and " PASS " in recall[0] and "baseline over the 1 qa item that ran" in recall[0]
