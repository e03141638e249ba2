"""``--eval-repeat N`` in a pytest run (docs/gate.md, "Repeats"): one test per item with its N attempts inside.

In process against the shared reference target (tests/plugin/conftest.py), on datasets/smoke or a
dataset written here; ``-n 2`` only where xdist is the point. The rules themselves (attempts,
pass@k, pass^k, the report): tests/core/test_repeats.py.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import pytest_groundeval.history.stored_report  # noqa: F401  (before any in-process run: tests/plugin/conftest.py)
from pytest_groundeval.cli import main as groundeval
from pytest_groundeval.core.metrics import compute_metrics
from tests._support.datasets import REVIEW, write_dataset

ROOT = Path(__file__).resolve().parents[2]

TIMING = ("latencyMsP50", "latencyMsP95")
"""Metrics that measure wall time: two runs of the same items differ in them, and only in them."""


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def untimed(metrics: dict) -> dict:
    return {name: value for name, value in metrics.items() if name not in TIMING}


# --- the option -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "value", "source"),
    [("flag", "0", "--eval-repeat"), ("ini", "two", "ini eval_repeat"), ("env", "-1", "env GROUNDEVAL_REPEAT")],
)
def test_a_bad_repeat_is_a_usage_error_naming_where_it_came_from(pytester, monkeypatch, where, value, source):
    from pytest_groundeval.plugin.options import resolve_settings

    args = []
    if where == "flag":
        args = [f"--eval-repeat={value}"]
    elif where == "ini":
        pytester.makeini(f"[pytest]\neval_repeat = {value}\n")
    else:
        monkeypatch.setenv("GROUNDEVAL_REPEAT", value)
    with pytest.raises(pytest.UsageError) as info:
        resolve_settings(pytester.parseconfig(*args))
    assert str(info.value) == f"{value!r} is not a valid value for {source}: expected a whole number >= 1"


def test_a_bad_repeat_stops_the_run_before_any_item(run, smoke):
    result = run(f"--eval-dataset={smoke}", "--eval-repeat=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'0' is not a valid value for --eval-repeat: expected a whole number >= 1*"])


def test_repeat_resolves_from_flag_ini_and_env(pytester, monkeypatch):
    from pytest_groundeval.plugin.options import resolve_settings

    assert resolve_settings(pytester.parseconfig()).repeat == 1
    monkeypatch.setenv("GROUNDEVAL_REPEAT", "3")
    assert resolve_settings(pytester.parseconfig()).repeat == 3
    pytester.makeini("[pytest]\neval_repeat = 4\n")
    assert resolve_settings(pytester.parseconfig()).repeat == 4
    assert resolve_settings(pytester.parseconfig("--eval-repeat=5")).repeat == 5


# --- one test per item, exact under xdist ----------------------------------------------------------


def repeated_smoke(shared_run, run, pytester, smoke, mode: str) -> tuple[pytest.RunResult, Path, Path]:
    """``(result, report, history database)`` of datasets/smoke under ``--eval-repeat=2 -n mode``, made once.

    The ``-n 0`` run is also the unsharded run the shards below are merged against (``shared_run``).
    """

    def make() -> tuple[pytest.RunResult, Path, Path]:
        report, db = pytester.path / f"n{mode}.json", pytester.path / f"n{mode}.db"
        args = (
            f"--eval-dataset={smoke}",
            "--eval-repeat=2",
            f"--eval-report={report}",
            f"--eval-history=sqlite:///{db}",
        )
        return run(*args, "-n", mode), report, db

    return shared_run(("repeated-smoke", mode), make)


@pytest.mark.xdist_group("repeated_smoke")
def test_repeats_keep_the_test_ids_and_give_equal_metrics_under_n0_and_n2(shared_run, run, pytester, smoke):
    plain_ids = run(f"--eval-dataset={smoke}", "--collect-only", "-q").stdout.lines
    repeated_ids = run(f"--eval-dataset={smoke}", "--collect-only", "-q", "--eval-repeat=3").stdout.lines
    assert [line for line in plain_ids if "::" in line] == [line for line in repeated_ids if "::" in line]
    reports = {}
    for mode in ("0", "2"):
        result, report, _ = repeated_smoke(shared_run, run, pytester, smoke, mode)
        assert result.ret == 0, result.stdout.str()
        result.assert_outcomes(passed=10)  # ten tests, not twenty: the attempts run inside each item's test
        result.stdout.fnmatch_lines(["*items 10 (20 attempts; failed 0, errors 0)", "passHatK*1.0000*INFO*"])
        reports[mode] = read(report)
    plain, xdist = reports["0"], reports["2"]
    assert untimed(plain["metrics"]) == untimed(xdist["metrics"])
    assert plain["repeat"] == 2 and plain["metrics"]["items"] == 20
    assert plain["metrics"]["itemsByKind"] == {"qa": 8, "adversarial": 6, "temporal": 6, "citation": 0, "review": 0}
    assert plain["metrics"]["passHatK"] <= plain["metrics"]["passAtK"]
    for item in plain["items"]:
        assert len(item["attempts"]) == 2 and item["passRate"] == 1.0
        assert all(attempt["pass"] and "attempts" not in attempt for attempt in item["attempts"])


# --- pass^k fails a target that fails some attempts ------------------------------------------------

SECOND_ATTEMPT_LOSES_EVIDENCE = """
import pytest
from pytest_groundeval.targets.protocol import call_attempt


class SecondAttemptLosesEvidence:
    '''The reference target, except that every second attempt's answer cites no evidence.'''

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, question, find):
        body = self.inner.generate(question, find)
        if call_attempt.get() == 2:
            body["evidence"], body["claims"] = [], []
        return body


@pytest.fixture(scope="session")
def groundeval_target(groundeval_target):
    return SecondAttemptLosesEvidence(groundeval_target)
"""


def test_a_pass_hat_k_floor_fails_a_target_that_fails_some_attempts_while_pass_at_k_passes(run, pytester, smoke):
    pytester.makeconftest(SECOND_ATTEMPT_LOSES_EVIDENCE)
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"passAtK": 1.0, "passHatK": 1.0}))
    report = pytester.path / "r.json"
    args = (f"--eval-dataset={smoke}", f"--eval-floors={floors}", "-k", "qa")
    junit = pytester.path / "junit.xml"
    result = run(*args, "--eval-repeat=2", f"--eval-report={report}", f"--junitxml={junit}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(
        [
            "*qa item qa-smoke-alpha-budget: 1 of 2 attempts passed",
            "*attempt 2 failed: *",
            "passAtK*1.0000 [[]*] >= 1.0000*PASS*",
            "passHatK*0.0000 [[]*] >= 1.0000*FAIL*0.0000 < 1.0000",
            "gate: FAIL",
        ]
    )
    items = read(report)["items"]
    assert [(i["passRate"], [a["pass"] for a in i["attempts"]]) for i in items] == [(0.5, [True, False])] * 4
    cases = [case for case in ET.parse(junit).getroot().iter("testcase") if case.get("name") != "gate"]
    assert [{p.get("name"): p.get("value") for p in case.iter("property")}["passRate"] for case in cases] == [
        "0.5000"
    ] * 4
    # The same target without repeats is never asked twice: it passes, and a pass^k floor cannot be met
    # by a run that did not repeat (it FAILs saying so, never a silent pass).
    single = run(*args)
    single.stdout.fnmatch_lines(["passAtK*n/a >= 1.0000*FAIL*each item ran once: run with --eval-repeat N*"])
    single.assert_outcomes(passed=4)


# --- N = 1 changes nothing ----------------------------------------------------------------------------

MAIN_REPORT_KEYS = [
    "schemaVersion", "datasetVersion", "models", "startedAtMs", "durationMs", "metrics", "confidence",
    "confidenceLevel", "gate", "environment", "interrupted", "floors", "shard", "merge", "baseline", "items",
]  # fmt: skip
"""The keys of a report as the plugin wrote it before repeats existed (commit 8474f40), in order, with the two
that the confidence intervals added beside them (``confidence``, ``confidenceLevel``: docs/statistics.md)."""

MAIN_METRICS_KEYS = [
    "retrievalRecall", "claimSupportPrecision", "claimSupportRecall", "qaClaims", "falsehoodRejection",
    "temporalAccuracy", "citationMetadataAccuracy", "citationSupportedRate", "wrongSpeakerRate", "unparseableRate",
    "judgeErrors", "coverageScoreMean", "scorerErrors", "judgeAgreement", "judgeKappa", "judgeAlpha",
    "verdictDistribution", "judgeConfusion", "citationCatches", "judgeAgreementByModel", "judgeKappaByModel",
    "verdictDistributionByModel", "judgeTokens", "evidenceRiskScore", "latencyMsP50", "latencyMsP95",
    "tokensPerQuery", "targetTokens", "errors", "judgeCostUsd", "targetCostUsd", "unpricedModels", "items",
    "itemsByKind",
]  # fmt: skip
"""Its ``metrics`` keys, in order, with the jury's (``judgeAlpha`` and the three per-judge tables, null
without a jury: docs/judges.md) and the tokens' and costs' (docs/gate.md, "Cost"), which every report
carries whether or not it repeats."""

MAIN_ITEM_KEYS = [
    "id", "kind", "pass", "error", "notRun", "traceId", "detail", "latencyMs", "promptTokens", "completionTokens",
    "evidenceExpected", "evidenceFound", "claimsReturned", "claimsSupported", "claimsSupportedTrue",
    "claimsTrueCited", "claimsTrueCitedSupported", "falsehoodSupported", "evidenceReview", "extra",
]  # fmt: skip
"""An item's keys, in order."""


def _volatile_free(report: dict) -> dict:
    """The report without what differs between two runs of the same items: times, trace ids, label digests."""
    text = json.dumps(report, ensure_ascii=False)
    for item in report["items"]:
        for key in ("latencyMs", "traceId"):
            text = text.replace(json.dumps({key: item[key]})[1:-1], f'"{key}": "<volatile>"')
    report = json.loads(text)
    report.pop("startedAtMs"), report.pop("durationMs")
    report["environment"].pop("gitCommit")
    report["metrics"] = untimed(report["metrics"])
    report["gate"]["checks"] = [c for c in report["gate"]["checks"] if c["metric"] not in TIMING]
    report["items"] = sorted(report["items"], key=lambda item: item["id"])
    return report


def test_without_repeats_the_report_keeps_the_shape_it_had_before_them(run, pytester, smoke):
    reports = []
    for extra in ([], ["--eval-repeat=1"]):
        report = pytester.path / f"r{len(reports)}.json"
        # Items whose answers are the same from run to run (temporal items namespace their labels per run).
        result = run(f"--eval-dataset={smoke}", f"--eval-report={report}", "-k", "qa or adversarial", *extra)
        assert result.ret == 0, result.stdout.str()
        result.stdout.no_fnmatch_line("*passAtK*")
        result.stdout.no_fnmatch_line("*attempts*")
        reports.append(read(report))
    default, explicit = reports
    assert list(default) == MAIN_REPORT_KEYS
    assert list(default["metrics"]) == MAIN_METRICS_KEYS
    assert all(list(item) == MAIN_ITEM_KEYS for item in default["items"])
    assert _volatile_free(default) == _volatile_free(explicit)


# --- every kind, and temporal isolation -----------------------------------------------------------

SEEN_ONCE = {
    "id": "tmp-seen-once",
    "kind": "temporal",
    "setup": [{"op": "create", "save": "v1", "label": "SEEN", "properties": {"n": 1}}],
    "probe": {"call": "query", "label": "SEEN"},
    "expect": {"count": 1},
}
"""Passes only when its probe sees exactly the one record its own setup wrote: a second attempt
writing into the first one's namespace would see two."""


def test_temporal_attempts_never_see_each_others_records_on_a_real_target(run, pytester):
    dataset = write_dataset(pytester.path / "seen", [SEEN_ONCE])
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={dataset}", "--eval-repeat=3", f"--eval-report={report}")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1)
    (item,) = read(report)["items"]
    assert [attempt["detail"] for attempt in item["attempts"]] == ["probe matched"] * 3


CITE = {
    "id": "cit-two-paragraphs",
    "kind": "citation",
    "response": {
        "answer": "Anna Berg (S) wants fibre to ninety percent of households by 2030 [1].\n\n"
        "Satellite launches will replace copper lines everywhere [1].",
        "sources": [
            {"marker": "1", "document": "citation-smoke/debate.txt", "metadata": {"speaker": "Anna Berg", "party": "S"},
             "text": "Anna Berg (S): Every municipality should have fibre to ninety percent of households by 2030."},
        ],
    },
}  # fmt: skip


def test_recorded_citation_and_review_items_are_judged_once_per_attempt(run, pytester):
    dataset = pytester.path / "cites"
    shutil.copytree(ROOT / "datasets" / "citation-smoke", dataset)
    manifest = read(dataset / "manifest.json")
    manifest["items"] = [CITE, REVIEW]
    (dataset / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={dataset}", "--eval-judge=mock", "--eval-repeat=3", f"--eval-report={report}")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=2)
    saved = read(report)
    cite = next(item for item in saved["items"] if item["kind"] == "citation")
    verdicts = [[p["verdict"] for p in a["extra"]["citationParagraphs"]] for a in cite["attempts"]]
    assert verdicts == [["supported", "unsupported"]] * 3  # the judge asked about every attempt's paragraphs
    assert sum(saved["metrics"]["verdictDistribution"].values()) == 6
    assert saved["metrics"]["citationSupportedRate"] == 0.5
    assert saved["metrics"]["itemsByKind"]["review"] == 3


# --- shards, merge and history ---------------------------------------------------------------------


@pytest.mark.xdist_group("repeated_smoke")
def test_merged_shards_with_repeats_equal_the_unsharded_run_and_the_history_keeps_the_attempts(
    shared_run, run, pytester, smoke, capsys
):
    result, whole, db = repeated_smoke(shared_run, run, pytester, smoke, "0")
    args = (f"--eval-dataset={smoke}", "--eval-repeat=2")
    assert result.ret == 0
    shards = [pytester.path / f"s{k}.json" for k in (1, 2)]
    for k, shard in enumerate(shards, 1):
        assert run(*args, f"--eval-shard={k}/2", f"--eval-report={shard}").ret == 0
    merged = pytester.path / "merged.json"
    assert groundeval(["merge", *map(str, shards), "-o", str(merged)]) == 0
    unsharded, joined = read(whole), read(merged)
    assert untimed(joined["metrics"]) == untimed(unsharded["metrics"])
    assert (joined["metrics"]["passAtK"], joined["metrics"]["passHatK"], joined["repeat"]) == (1.0, 1.0, 2)
    assert sorted((i["id"], len(i["attempts"])) for i in joined["items"]) == sorted(
        (i["id"], 2) for i in unsharded["items"]
    )
    # Shards that did not repeat alike are not one run.
    other = pytester.path / "other.json"
    assert run(f"--eval-dataset={smoke}", "--eval-shard=2/2", f"--eval-report={other}").ret == 0
    capsys.readouterr()
    assert groundeval(["merge", str(shards[0]), str(other), "-o", str(merged)]) == 2
    assert "has repeat (attempts per item, --eval-repeat) 2 but" in capsys.readouterr().err
    # The history stores every attempt, and the stored run gates as its report does.
    from pytest_groundeval.history.stored_report import stored_report_at

    stored = stored_report_at(f"sqlite:///{db}", "latest").to_wire()
    by_id = {item["id"]: item for item in unsharded["items"]}
    assert stored["repeat"] == 2
    assert all(item["attempts"] == by_id[item["id"]]["attempts"] for item in stored["items"])
    assert compute_metrics(stored["items"]).to_wire() == stored["metrics"] == unsharded["metrics"]
    assert stored["metrics"]["passHatK"] == 1.0
    assert groundeval(["gate", "--run", "latest", "--history", f"sqlite:///{db}"]) == 0
    # Rejudging would judge none of the attempts' paragraphs (they are kept per attempt): refused, saying so.
    capsys.readouterr()
    rejudge = ["rejudge", "latest", "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m"]
    assert groundeval([*rejudge, "--history", f"sqlite:///{db}"]) == 2
    assert "ran each item 2 times (--eval-repeat)" in capsys.readouterr().err
