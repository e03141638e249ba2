"""The citation judge and coverage scorer in a pytest run, through HTTP against the mock (docs/citation.md).

Recorded citation answers need no target: these runs start the mock provider (as the
judge and scorer) and nothing else, in process. One five-paragraph answer reaches each of
the mock judge's five verdicts from its input alone (docs/mock.md).
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from pytest_groundeval.cli import main as groundeval
from pytest_groundeval.mock import ThreadedMockProvider

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "datasets" / "citation-smoke"

SOURCES = [
    {"marker": "1", "document": "citation-smoke/debate.txt", "metadata": {"speaker": "Anna Berg", "party": "S"},
     "text": "Anna Berg (S): Every municipality should have fibre to ninety percent of households by 2030, and the "
             "state should pay a third of the cost in sparsely populated areas."},
    {"marker": "2", "document": "citation-smoke/debate.txt", "metadata": {"speaker": "Lars Holm", "party": "M"},
     "text": "Lars Holm (M): The market has already reached most towns. Subsidies should go only where no operator "
             "will build, and they should be tendered openly."},
]  # fmt: skip

PARAGRAPHS = [
    # (paragraph, the mock judge's verdict, the human label)
    ("Anna Berg (S) wants fibre to ninety percent of households by 2030 [1].", "supported", "supported"),
    ("Anna Berg (S) said the market has already reached most towns [2].", "wrong_speaker", "wrong_speaker"),
    ("The market has already reached most towns, and subsidies should be tendered openly [1].",
     "wrong_attribution", "wrong_attribution"),
    ("Fibre for ninety percent of households needs new cooperative towers and fresh rural budgets [1].",
     "partial", "partial"),
    ("Satellite launches will replace copper lines everywhere [1].", "unsupported", "supported"),
]  # fmt: skip

VERDICTS = [verdict for _, verdict, _ in PARAGRAPHS]


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def cites(pytester: pytest.Pytester) -> Path:
    """A dataset of one recorded citation item whose five paragraphs reach the five verdicts."""
    dataset = pytester.path / "cites"
    shutil.copytree(SMOKE, dataset)
    manifest = read(dataset / "manifest.json")
    manifest["items"] = [
        {
            "id": "cit-every-verdict",
            "kind": "citation",
            "response": {"answer": "\n\n".join(p for p, _, _ in PARAGRAPHS), "sources": SOURCES},
            "paragraphLabels": [{"index": i, "expectedVerdict": label} for i, (_, _, label) in enumerate(PARAGRAPHS)],
        }
    ]
    (dataset / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return dataset


@pytest.fixture(scope="module")
def mock():
    """A mock provider outside the runs, so a test can read what the judge was asked."""
    with ThreadedMockProvider() as provider:
        yield provider


def judge_calls(mock) -> int:
    return sum(1 for record in mock.log if record.kind == "judge")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def records(report: Path) -> list[dict]:
    (item,) = read(report)["items"]
    return item["extra"]["citationParagraphs"]


def test_every_verdict_reaches_the_report_metrics_and_summary(run, pytester, cites):
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={cites}", "--eval-judge=mock", "--eval-scorer-url=mock", f"--eval-report={report}")
    result.assert_outcomes(failed=1)  # the wrong-speaker paragraph fails the deterministic metadata check
    paragraphs = records(report)
    assert [p["verdict"] for p in paragraphs] == VERDICTS
    assert all(p["rationale"] and p["judgeModel"] == "mock-judge" and p["judgeError"] is None for p in paragraphs)
    assert [p["expectedVerdict"] for p in paragraphs] == [label for _, _, label in PARAGRAPHS]
    assert all(0.0 <= p["coverageScore"] <= 1.0 and p["scorerError"] is None for p in paragraphs)
    extra = read(report)["items"][0]["extra"]
    assert (extra["citationParagraphsSupported"], extra["citationParagraphsWrongSpeaker"]) == (1, 1)
    assert (extra["citationParagraphsUnparseable"], extra["citationJudgeErrors"], extra["citationScorerErrors"]) == (
        0,
        0,
        0,
    )
    metrics = read(report)["metrics"]
    assert metrics["citationSupportedRate"] == metrics["wrongSpeakerRate"] == 0.2
    assert (metrics["unparseableRate"], metrics["judgeErrors"], metrics["scorerErrors"]) == (0.0, 0, 0)
    # 4 of 5 labels agree; p_e = (2·1 + 1 + 1 + 1) / 25, so κ = (0.8 − 0.2) / 0.8.
    assert metrics["judgeAgreement"] == pytest.approx(0.8) and metrics["judgeKappa"] == pytest.approx(0.75)
    assert metrics["judgeConfusion"] == {
        "supported": {"supported": 1, "unsupported": 1}, "partial": {"partial": 1},
        "wrong_speaker": {"wrong_speaker": 1}, "wrong_attribution": {"wrong_attribution": 1},
    }  # fmt: skip
    assert metrics["verdictDistribution"] == {
        "supported": 1, "partial": 1, "unsupported": 1, "wrong_speaker": 1, "wrong_attribution": 1,
        "unparseable": 0, "unjudged": 0,
    }  # fmt: skip
    assert metrics["citationCatches"] == {
        "deterministicCatches": 1, "judgeCatches": 4, "judgeOnlyCatches": 3, "deterministicOnlyCatches": 0,
        "wrongSpeaker": 1, "wrongSpeakerDeterministic": 1, "wrongSpeakerJudgeOnly": 0,
    }  # fmt: skip
    result.stdout.fnmatch_lines([
        "judgeKappa*0.7500*INFO*",
        "citation judge mock-judge: 5 paragraph(s): supported 1, partial 1, unsupported 1, wrong_speaker 1, "
        "wrong_attribution 1, unparseable 0, unjudged 0",
        "citation catches: deterministic 1, judge 4 (judge-only 3), deterministic-only 0 *; wrong_speaker 1: "
        "the metadata check had caught 1, judge-only 0",
        "judge vs human labels (expected→judge): supported→supported 1, supported→unsupported 1, *",
        "gate: PASS",
    ])  # fmt: skip


def test_a_judge_answering_prose_is_unparseable_everywhere_and_cannot_pass_a_floor(run, pytester, cites):
    report, floors = pytester.path / "r.json", pytester.path / "floors.json"
    floors.write_text(json.dumps({"citationSupportedRate": 0.1}))
    result = run(f"--eval-dataset={cites}", "--eval-judge=mock", "--eval-judge-model=mock-judge+fault=prose",
                 f"--eval-report={report}", f"--eval-floors={floors}")  # fmt: skip
    paragraphs = records(report)
    assert [p["verdict"] for p in paragraphs] == ["unparseable"] * 5
    # One request and two parse retries per paragraph, each rejection recorded (every fault: tests/judge).
    assert all(p["judgeAttempts"] == 3 and len(p["parseFailures"]) == 3 for p in paragraphs)
    assert all(
        "not a JSON object" in p["parseFailures"][0] and "not a JSON object" in p["rationale"] for p in paragraphs
    )
    metrics = read(report)["metrics"]
    assert (metrics["unparseableRate"], metrics["citationSupportedRate"], metrics["judgeErrors"]) == (1.0, 0.0, 0)
    assert metrics["verdictDistribution"]["unparseable"] == 5 and metrics["judgeAgreement"] == 0.0
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["citationSupportedRate*0.0000 [[]*] >= 0.1000*FAIL*", "gate: FAIL"])


@pytest.mark.parametrize(
    ("judge", "floors", "line"),
    [
        ("prose", {"wrongSpeakerRate": 0.5}, "unparseableRate*1.0000 [[]*] <= 0.0500*FAIL*1.0000 > 0.0500 (armed by the "
                                             "wrongSpeakerRate bound)"),
        ("prose", {"judgeErrors": 0}, "unparseableRate*1.0000 [[]*] <= n/a*FAIL*1.0000: every paragraph sent to the judge "
                                      "came back unparseable*"),
        ("html", {"wrongSpeakerRate": 0.5}, "unparseableRate*1.0000 [[]*] <= 0.0500*FAIL*"),
        ("plain", {"judgeErrors": 0}, "unparseableRate*1.0000 [[]*] <= n/a*FAIL*every paragraph*unparseable*"),
    ],
    ids=["prose-wrongSpeakerRate", "prose-judgeErrors", "html-wrongSpeakerRate", "plain-text-judgeErrors"],
)  # fmt: skip
def test_a_judge_whose_replies_never_parse_fails_any_judge_bound(run, pytester, cites, plain_endpoint, judge, floors,
                                                                 line):  # fmt: skip
    # Before: wrongSpeakerRate 0 passed its ceiling and judgeErrors 0 its own, so the run exited 0;
    # a 200 with an HTML or plain-text body turned the item into an AttributeError instead.
    report, path = pytester.path / "r.json", pytester.path / "floors.json"
    path.write_text(json.dumps(floors))
    if judge == "prose":
        args = ["--eval-judge=mock", "--eval-judge-model=mock-judge+fault=prose"]
    else:
        body = b"<html><body>502 Bad Gateway</body></html>" if judge == "html" else b"upstream busy"
        url = plain_endpoint("text/html" if judge == "html" else "text/plain", body)
        args = [f"--eval-judge-url={url}", "--eval-judge-model=m"]
    result = run(f"--eval-dataset={cites}", *args, f"--eval-floors={path}", f"--eval-report={report}")
    result.assert_outcomes(failed=1)  # judged (its wrong-speaker paragraph), not an error
    assert [p["verdict"] for p in records(report)] == ["unparseable"] * 5
    assert read(report)["metrics"]["unparseableRate"] == 1.0
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([line, "gate: FAIL"])
    assert "Traceback" not in result.stdout.str() and "AttributeError" not in result.stdout.str()


RED = "\x1b[31m"


def test_judge_errors_and_unparseable_counts_print_in_red_when_non_zero(run, pytester, cites):
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"judgeErrors": 10, "unparseableRate": 1.0, "scorerErrors": 10}))
    # Before, these figures were INFO lines only (or, under a loose bound, PASS lines).
    prose = run(f"--eval-dataset={cites}", "--eval-judge=mock", "--eval-judge-model=mock-judge+fault=prose",
                f"--eval-floors={floors}", "--color=yes")  # fmt: skip
    lines = prose.stdout.lines
    (unparseable,) = [line for line in lines if "paragraph(s) unparseable" in line]
    assert (
        unparseable.startswith(RED) and "judge: 5 of 5 paragraph(s) unparseable (unparseableRate 1.0000)" in unparseable
    )
    assert not [line for line in lines if "left unjudged (" in line]
    down = run(f"--eval-dataset={cites}", "--eval-judge=mock", "--eval-judge-model=mock-judge+fault=500",
               "--eval-scorer-url=mock", "--eval-scorer-model=mock-score+fault=500", f"--eval-floors={floors}",
               "--color=yes")  # fmt: skip
    (unjudged,) = [line for line in down.stdout.lines if "left unjudged (judgeErrors)" in line]
    assert unjudged.startswith(RED) and "judge: 5 of 5 paragraph(s) left unjudged (judgeErrors)" in unjudged
    (unscored,) = [line for line in down.stdout.lines if "got no score (scorerErrors)" in line]
    assert unscored.startswith(RED) and "coverage scorer: 5 paragraph(s)" in unscored
    # A judge that answered every paragraph prints no such line.
    fine = run(f"--eval-dataset={cites}", "--eval-judge=mock", f"--eval-floors={floors}", "--color=yes")
    assert not [line for line in fine.stdout.lines if "unparseable (" in line or "left unjudged (" in line]


def test_judge_down_and_scorer_down_are_counted_and_fail_the_floors(run, pytester, cites):
    report, floors = pytester.path / "r.json", pytester.path / "floors.json"
    floors.write_text(json.dumps({"wrongSpeakerRate": 0.5, "coverageScoreMean": 0.1}))
    port = closed_port()
    result = run(f"--eval-dataset={cites}", f"--eval-judge-url=http://127.0.0.1:{port}/v1", "--eval-judge-model=m",
                 f"--eval-scorer-url=http://127.0.0.1:{port}", f"--eval-report={report}", f"--eval-floors={floors}")  # fmt: skip
    paragraphs = records(report)
    assert [p["verdict"] for p in paragraphs] == [None] * 5
    assert all("unreachable" in p["judgeError"] and "after 3 attempt(s)" in p["judgeError"] for p in paragraphs)
    assert all(p["coverageScore"] is None and "unreachable" in p["scorerError"] for p in paragraphs)
    metrics = read(report)["metrics"]
    assert (metrics["judgeErrors"], metrics["scorerErrors"], metrics["coverageScoreMean"]) == (5, 5, None)
    assert metrics["verdictDistribution"]["unjudged"] == 5 and metrics["citationSupportedRate"] == 0.0
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # A wrongSpeakerRate of 0 would pass its ceiling: the armed judgeErrors ceiling fails the run instead.
    result.stdout.fnmatch_lines([
        "wrongSpeakerRate*0.0000 [[]*] <= 0.5000*PASS*",
        "judgeErrors*5 <= 0*FAIL*5 > 0 (armed by the wrongSpeakerRate bound)",
        "coverageScoreMean*n/a >= 0.1000*FAIL*the coverage scorer gave no score: 5 scorer error(s)*",
        "scorerErrors*5 <= 0*FAIL*5 > 0 (armed by the coverageScoreMean bound)",
        "gate: FAIL",
    ])  # fmt: skip


def copies(cites: Path, n: int) -> None:
    """Make the dataset's one recorded item ``n`` items (``cit-0`` …), the same answer each."""
    manifest = read(cites / "manifest.json")
    (item,) = manifest["items"]
    manifest["items"] = [dict(item, id=f"cit-{i}") for i in range(n)]
    (cites / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_judge_that_gave_up_stops_the_session_like_a_dead_target(run, pytester, cites, workers):
    # No judge bound at all: before, an unreachable judge left every paragraph unjudged and exited 0.
    copies(cites, 6)
    report, port = pytester.path / "r.json", closed_port()
    url = f"http://127.0.0.1:{port}/v1"
    result = run(f"--eval-dataset={cites}", f"--eval-judge-url={url}", "--eval-judge-model=judge-m",
                 f"--eval-report={report}", "-n", workers)  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # One error naming the URL, the model and the cause.
    stop = f"groundeval: the citation judge (model 'judge-m' at {url}) gave up: 3 paragraphs in a row left unjudged; "
    result.stdout.fnmatch_lines([f"*{stop}the last: judge at {url}: unreachable (*), after 3 attempt(s)*"])
    data = read(report)
    assert data["interrupted"] is True
    judged = [item for item in data["items"] if not item.get("notRun")]
    # Every item reported was judged (its paragraphs counted in judgeErrors); the rest never ran.
    assert judged and all(item["extra"]["citationJudgeErrors"] == 5 for item in judged)
    assert data["metrics"]["judgeErrors"] == 5 * len(judged) and data["metrics"]["errors"] == 6 - len(judged)
    if workers == "0":
        assert len(judged) == 1  # the first item's five paragraphs already made the judge give up
        result.stdout.fnmatch_lines(["notRun*5 <= 0*FAIL*", "run*FAIL*interrupted after 1 item:*", "gate: FAIL"])


def test_a_scorer_that_gave_up_stops_the_session_too(run, pytester, cites):
    copies(cites, 3)
    port = closed_port()
    result = run(f"--eval-dataset={cites}", f"--eval-scorer-url=http://127.0.0.1:{port}", "--eval-scorer-model=s-m")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "notRun*2 <= 0*FAIL*",
        f"*groundeval: the coverage scorer (model 's-m' at http://127.0.0.1:{port}) gave up: "
        "3 paragraphs in a row got no score; the last: scorer at *unreachable*",
    ])  # fmt: skip


def test_a_judge_that_answers_keeps_the_session_running(run, pytester, cites):
    copies(cites, 3)
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"citationSupportedRate": 0.1}))
    result = run(f"--eval-dataset={cites}", "--eval-judge=mock", f"--eval-floors={floors}")
    result.assert_outcomes(failed=3)  # the wrong-speaker paragraph of each copy; the gate decides
    assert result.ret == pytest.ExitCode.OK and "gave up" not in result.stdout.str()


def test_the_cache_makes_an_unchanged_rerun_ask_nothing_and_the_key_is_never_written(
    run, pytester, cites, mock, monkeypatch
):
    key = "sk-groundeval-test-3f9a1c77e2"
    monkeypatch.setenv("GROUNDEVAL_JUDGE_API_KEY", key)
    cache, report, junit = pytester.path / "cache", pytester.path / "r.json", pytester.path / "j.xml"
    args = (f"--eval-dataset={cites}", f"--eval-judge-url={mock.base_url}", "--eval-judge-model=mock-judge",
            f"--eval-judge-cache={cache}", f"--eval-report={report}",
            f"--junitxml={junit}", "-v", "-rA")  # fmt: skip
    mock.clear_log()
    first = run(*args)
    assert judge_calls(mock) == 5 and [p["judgeCached"] for p in records(report)] == [False] * 5
    second = run(*args)
    assert judge_calls(mock) == 5  # the re-run asked the judge nothing
    assert [p["verdict"] for p in records(report)] == VERDICTS
    assert [p["judgeCached"] for p in records(report)] == [True] * 5
    written = [report, junit, *(p for p in cache.rglob("*") if p.is_file())]
    assert len(written) == 7
    for text in (first.stdout.str(), first.stderr.str(), second.stdout.str(), second.stderr.str(),
                 *(p.read_text(encoding="utf-8") for p in written)):  # fmt: skip
        assert key not in text


FALLBACK_MODEL = "mock-judge+fault=temperature_400,max_tokens_400"
"""A reasoning model's endpoint: refuses temperature 0 and max_tokens (docs/judges.md, "Fallbacks")."""


def four_copies_judged(shared_run, run, pytester, cites, mock, workers: str) -> tuple[pytest.RunResult, dict]:
    """``(result, report JSON)`` of four copies of the item, judged and scored, under ``-n workers``; made once.

    The judge is the module's mock behind ``FALLBACK_MODEL``: one endpoint for every worker, as a
    real judge is (``--eval-judge=mock`` gives each worker a mock of its own). The scorer is the
    run's own mock (``--eval-scorer-url=mock``), one per worker. The two tests below check
    different things of the same two runs (``shared_run``).
    """

    def make() -> tuple[pytest.RunResult, dict]:
        dataset = shutil.copytree(cites, pytester.path / f"cites-n{workers}")
        copies(dataset, 4)
        report = pytester.path / f"r{workers}.json"
        result = run(f"--eval-dataset={dataset}", f"--eval-judge-url={mock.base_url}",
                     f"--eval-judge-model={FALLBACK_MODEL}", "--eval-judge-max-tokens=512", "--eval-scorer-url=mock",
                     f"--eval-report={report}", "-n", workers)  # fmt: skip
        return result, read(report)

    return shared_run(("four-copies", workers), make)


@pytest.mark.xdist_group("judge_four_copies")
@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_judge_fallback_is_made_once_and_warned_once_in_the_summary(shared_run, run, pytester, cites, mock, workers):
    result, data = four_copies_judged(shared_run, run, pytester, cites, mock, workers)
    result.assert_outcomes(failed=4)  # the wrong-speaker paragraph of each copy, as without the refusals
    assert [p["verdict"] for item in data["items"] for p in item["extra"]["citationParagraphs"]] == VERDICTS * 4
    assert data["metrics"]["judgeErrors"] == 0
    warnings = [line for line in result.stdout.lines if line.startswith("warning: judge ")]
    assert len(warnings) == 2, warnings  # once per fallback, whatever the number of workers and items
    assert warnings[0].startswith(f"warning: judge '{FALLBACK_MODEL}' at {mock.base_url} refused ")
    assert {w.split("; it ")[1] for w in warnings} == {
        "sends no temperature for the rest of the run", "sends max_completion_tokens for the rest of the run"
    }  # fmt: skip


@pytest.mark.xdist_group("judge_four_copies")
def test_xdist_gives_the_same_citation_metrics(shared_run, run, pytester, cites, mock):
    figures = []
    for workers in ("0", "2"):
        _, data = four_copies_judged(shared_run, run, pytester, cites, mock, workers)
        metrics = data["metrics"]
        figures.append(
            {
                k: v
                for k, v in metrics.items()
                if k.startswith(("citation", "judge", "verdict", "wrong", "coverage", "scorer", "unparseable"))
            }
        )
    assert figures[0] == figures[1]
    assert figures[0]["judgeKappa"] == pytest.approx(0.75) and figures[0]["verdictDistribution"]["supported"] == 4


def test_generated_questions_run_against_the_target_with_the_judge(run, pytester, mock):
    out = pytester.path / "generated"
    code = groundeval(["generate-questions", "--dataset", str(ROOT / "datasets" / "attribution"), "--n", "3",
                       "--llm-url", mock.base_url, "--model", "mock-questions", "--out", str(out)])  # fmt: skip
    assert code == 0
    report = pytester.path / "r.json"
    # Its own target (spawn): the shared one holds other tests' corpora, which an unrestricted question may cite.
    result = run(f"--eval-dataset={out}", "--eval-judge=mock", f"--eval-report={report}", spawn=True)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 3 and "errors" not in outcomes
    items = read(report)["items"]
    assert len(items) == 3 and all(i["latencyMs"] is not None for i in items)  # the target answered each
    asked = [p for i in items for p in i["extra"]["citationParagraphs"]]
    assert asked and all(p["judgeModel"] == "mock-judge" and p["verdict"] for p in asked)
    assert read(report)["metrics"]["judgeErrors"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--eval-judge=gpt"], "'gpt' given by --eval-judge is not a judge: the only value is mock"),
        (["--eval-judge=mock", "--eval-judge-url=http://127.0.0.1:1/v1"], "both given: a run has one judge"),
        (["--eval-judge-url=http://127.0.0.1:1/v1"], "--eval-judge-url needs --eval-judge-model"),
        (["--eval-judge-model=m"], "--eval-judge-model given, but no judge"),
        (["--eval-scorer-cap=10"], "--eval-scorer-cap given, but no scorer"),
        (["--eval-judge=mock", "--eval-judge-concurrency=0"], "expected a whole number >= 1"),
        (["--eval-judge-max-tokens=512"], "--eval-judge-max-tokens given, but no judge"),
        (["--eval-judge=mock", "--eval-judge-max-tokens=0"], "expected a whole number >= 1"),
        (["--eval-judge-url=http://u:sk-secret@127.0.0.1/v1", "--eval-judge-model=m"], "GROUNDEVAL_JUDGE_API_KEY"),
        (
            ["--eval-judge-url=http://127.0.0.1:1/v1", "--eval-judge-model=m", "--eval-judge-api-key=sk-secret"],
            "the judge's API key was given by --eval-judge-api-key: it is read only from the environment variable "
            "GROUNDEVAL_JUDGE_API_KEY",
        ),
        (
            ["--eval-judge-url=http://127.0.0.1:1/v1", "--eval-judge-model=m", "-o", "eval_judge_api_key=sk-secret"],
            "the judge's API key was given by ini eval_judge_api_key",
        ),
    ],
)
def test_judge_options_are_checked(pytester, args, message):
    from pytest_groundeval.plugin.options import resolve_settings

    with pytest.raises(pytest.UsageError, match=None) as info:
        resolve_settings(pytester.parseconfig(*args))
    assert message in str(info.value) and "sk-secret" not in str(info.value)


def test_judge_settings_resolve_and_never_show_the_key(pytester, monkeypatch):
    from pytest_groundeval.plugin.options import resolve_settings

    monkeypatch.setenv("GROUNDEVAL_JUDGE_API_KEY", "sk-from-env-0042")
    settings = resolve_settings(
        pytester.parseconfig("--eval-judge-url=https://judge.example/v1/", "--eval-judge-model=m")
    )
    assert (settings.judge_url, settings.judge_model, settings.judge_api_key) == (
        "https://judge.example/v1",
        "m",
        "sk-from-env-0042",
    )
    assert settings.judge_cache is None and settings.scorer_cap == 28_000 and "sk-from-env-0042" not in repr(settings)
    mocked = resolve_settings(pytester.parseconfig("--eval-judge=mock", "--eval-scorer-url=mock"))
    assert (mocked.judge_model, mocked.scorer_url, mocked.scorer_model, mocked.judge_api_key) == (
        "mock-judge",
        "mock",
        "mock-score",
        None,
    )


def test_a_kappa_floor_on_the_lower_bound_gates_on_the_interval_calibrate_prints(run, pytester, capsys):
    # The labelled paragraphs of tests/cli/test_calibrate.py: the mock's kappa 0.4 over eight of them.
    from tests.cli.test_calibrate import labelled_dataset

    dataset = labelled_dataset(pytester.path / "labelled")
    floors, report = pytester.path / "floors.json", pytester.path / "r.json"
    floors.write_text(json.dumps({"judgeKappa": 0.3}))
    result = run(f"--eval-dataset={dataset}", "--eval-judge=mock", "--eval-gate-on=lower-bound",
                 f"--eval-floors={floors}", f"--eval-report={report}")  # fmt: skip
    stored = read(report)
    check = next(c for c in stored["gate"]["checks"] if c["metric"] == "judgeKappa")
    interval = stored["confidence"]["judgeKappa"]
    # The point clears the floor; its interval's low end, over eight paragraphs, does not.
    assert check["value"] == pytest.approx(0.4) and check["gatedOn"] == "low" and check["outcome"] == "FAIL"
    assert interval["method"] == "bootstrap" and interval["low"] < 0.3
    result.stdout.fnmatch_lines(["gate: FAIL"])
    capsys.readouterr()
    assert groundeval(["calibrate", "--dataset", str(dataset), "--judge", "mock", "--min-kappa", "0.3", "--json"]) == 1
    calibrated = json.loads(capsys.readouterr().out)
    # calibrate's interval of the same paragraphs is the run's, end for end (one bootstrap, one seed).
    assert {k: calibrated["judgeKappa"][k] for k in ("low", "high", "method")} == interval
    assert calibrated["judgeAgreement"]["low"] == stored["confidence"]["judgeAgreement"]["low"]
