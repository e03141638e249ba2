"""A jury of judges in a pytest run (docs/judges.md, "Juries"): the mock's two judges, a judges file, the history.

Recorded citation answers need no target: these runs start the mock provider as the judges
and nothing else, in process. One five-paragraph answer, labelled by people, is judged by
``mock-judge`` and ``mock-judge-strict`` (docs/mock.md), which disagree on two paragraphs.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

# Imported before any in-process run (tests/plugin/conftest.py says why).
import pytest_groundeval.history.migrations
import pytest_groundeval.history.rejudge_judge  # noqa: F401
from pytest_groundeval.cli import main as groundeval
from pytest_groundeval.core.judging import USAGE_RECORD_KEYS
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
    # (paragraph, mock-judge's verdict, mock-judge-strict's verdict, the human label); coverage in the comment
    ("Anna Berg (S) wants fibre to ninety percent of households by 2030 [1].",  # 7 of 8 words: 0.875
     "supported", "partial", "supported"),
    ("Anna Berg (S) said the market has already reached most towns [2].", "wrong_speaker", "wrong_speaker",
     "wrong_speaker"),
    ("The market has already reached most towns, and subsidies should be tendered openly [1].",
     "wrong_attribution", "wrong_attribution", "wrong_attribution"),
    ("Fibre for ninety percent of households needs new cooperative towers and fresh rural budgets [1].",  # 4/11
     "partial", "unsupported", "partial"),
    ("Satellite launches will replace copper lines everywhere [1].", "unsupported", "unsupported", "supported"),
]  # fmt: skip

MOCK_JURY = ["--eval-judge=mock", "--eval-judge-model=mock-judge", "--eval-judge-model=mock-judge-strict"]
JURY_NAME = "jury(majority: mock-judge, mock-judge-strict)"


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def cites(pytester: pytest.Pytester) -> Path:
    """A dataset of one recorded citation item whose five paragraphs people labelled."""
    dataset = pytester.path / "cites"
    shutil.copytree(SMOKE, dataset)
    manifest = read(dataset / "manifest.json")
    manifest["items"] = [
        {
            "id": "cit-jury",
            "kind": "citation",
            "response": {"answer": "\n\n".join(p for p, *_ in PARAGRAPHS), "sources": SOURCES},
            "paragraphLabels": [{"index": i, "expectedVerdict": row[3]} for i, row in enumerate(PARAGRAPHS)],
        }
    ]
    (dataset / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return dataset


def copies(dataset: Path, n: int) -> None:
    manifest = read(dataset / "manifest.json")
    (item,) = manifest["items"]
    manifest["items"] = [dict(item, id=f"cit-{k}") for k in range(n)]
    (dataset / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


JURY_KEYS = ("judgeAlpha", "judgeAgreementByModel", "judgeKappaByModel", "verdictDistributionByModel")


def test_a_jury_of_two_mock_judges_gives_the_same_figures_under_n0_and_n2(run, pytester, cites):
    copies(cites, 4)
    figures = []
    for workers in ("0", "2"):
        report = pytester.path / f"r{workers}.json"
        result = run(f"--eval-dataset={cites}", *MOCK_JURY, f"--eval-report={report}", "-n", workers)
        result.assert_outcomes(passed=0, failed=4)  # the wrong-speaker paragraph fails the metadata check
        metrics = read(report)["metrics"]
        figures.append({k: v for k, v in metrics.items() if k.startswith(("citation", "judge", "verdict", "unpars"))})
        result.stdout.fnmatch_lines([
            "judgeAlpha*0.5000*INFO*",
            f"citation judge {JURY_NAME}: 20 paragraph(s): supported 0, partial 4, unsupported 8, wrong_speaker 4, "
            "wrong_attribution 4, unparseable 0, unjudged 0",
            "jury judge mock-judge: supported 4, partial 4, unsupported 4, wrong_speaker 4, wrong_attribution 4",
            "jury judge mock-judge-strict: partial 4, unsupported 8, wrong_speaker 4, wrong_attribution 4",
            "judge vs human labels by judge (kappa): mock-judge 0.7500, mock-judge-strict 0.3182; most in "
            "disagreement with the humans: mock-judge-strict (kappa 0.3182)",
        ])  # fmt: skip
    assert figures[0] == figures[1]
    m = figures[0]
    # alpha by hand: four copies of (S,P) (WS,WS) (WA,WA) (P,U) (U,U): n = 40 values, n_c = S 4, P 8, WS 8,
    # WA 8, U 12; the cells off the diagonal sum to 16; sum_{c!=k} n_c n_k = 1600 - 352 = 1248, so
    # alpha = 1 - 39 * 16 / 1248 = 0.5 (one copy alone: 1 - 9 * 4 / 78 = 7/13, alpha corrects for small samples).
    assert m["judgeAlpha"] == pytest.approx(0.5)
    assert m["judgeAgreementByModel"] == {"mock-judge": 0.8, "mock-judge-strict": 0.4}
    # mock-judge-strict by hand: p_o 0.4, p_e = (ws 1*1 + wa 1*1 + partial 1*1) / 25 = 0.12, kappa 0.28 / 0.88.
    assert m["judgeKappaByModel"] == {
        "mock-judge": pytest.approx(0.75),
        "mock-judge-strict": pytest.approx(0.28 / 0.88),
    }
    assert m["judgeAgreement"] == 0.4  # the jury's own figures stay judgeKappa and judgeAgreement
    assert m["verdictDistributionByModel"]["mock-judge-strict"]["unjudged"] == 0


def test_a_jury_with_repeats_prices_and_intervals_gives_the_same_report_under_n0_and_n2(run, pytester, cites):
    copies(cites, 4)
    prices = pytester.path / "prices.json"
    prices.write_text(json.dumps({"mock-judge": {"input": 1.0, "output": 4.0},
                                  "mock-judge-strict": {"input": 2.0, "output": 8.0}}))  # fmt: skip
    reports = []
    for workers in ("0", "2"):
        report = pytester.path / f"r{workers}.json"
        run(f"--eval-dataset={cites}", *MOCK_JURY, "--eval-repeat=2", f"--eval-prices={prices}",
            "--eval-gate-on=lower-bound", f"--eval-report={report}", "-n", workers)  # fmt: skip
        reports.append(read(report))
    plain, split = reports
    # Every figure, interval and gate check: sums of whole numbers and exact fractions, one seeded bootstrap.
    assert plain["metrics"] == split["metrics"] and plain["confidence"] == split["confidence"]
    assert plain["gate"] == split["gate"]
    m = plain["metrics"]
    # Four items, two attempts each, five paragraphs: every judge asked 40 times, its tokens under its own model.
    assert set(m["judgeTokens"]) == {"mock-judge", "mock-judge-strict"}
    assert all(cell["replies"] == 40 and cell["repliesWithoutUsage"] == 0 for cell in m["judgeTokens"].values())
    cost = sum(cell["promptTokens"] * price["input"] + cell["completionTokens"] * price["output"]
               for model, cell in m["judgeTokens"].items()
               for price in [read(prices)[model]]) / 1_000_000  # fmt: skip
    assert m["judgeCostUsd"] == pytest.approx(cost) and m["unpricedModels"] == {}
    # Each item is one cluster of its attempts; a jury's alpha gets its interval over paragraphs.
    # Every attempt's paragraphs are judged again: eight copies of the five, so by hand (as for four in the test
    # above) n = 80 values, off-diagonal cells 32, sum_{c!=k} n_c n_k = 6400 - 1408: alpha = 1 - 79 * 32 / 4992.
    alpha = plain["confidence"]["judgeAlpha"]
    assert m["judgeAlpha"] == pytest.approx(1 - 79 * 32 / 4992) and alpha["method"] == "bootstrap"
    assert alpha["low"] <= m["judgeAlpha"] <= alpha["high"] and alpha["low"] < alpha["high"]
    assert m["passAtK"] == 0.0 and plain["confidence"]["passAtK"]["method"] == "wilson"
    # Tables and dollars have no interval (docs/statistics.md).
    assert not {"judgeKappaByModel", "judgeTokens", "judgeCostUsd", "targetCostUsd"} & set(plain["confidence"])


def test_each_judges_verdict_is_in_the_paragraph_records_beside_the_jurys(run, pytester, cites):
    report = pytester.path / "r.json"
    run(f"--eval-dataset={cites}", *MOCK_JURY, "--eval-judge-policy=strictest", f"--eval-report={report}")
    (item,) = read(report)["items"]
    records = item["extra"]["citationParagraphs"]
    assert [[j["verdict"] for j in r["judges"]] for r in records] == [[a, b] for _, a, b, _ in PARAGRAPHS]
    assert all([j["judgeModel"] for j in r["judges"]] == ["mock-judge", "mock-judge-strict"] for r in records)
    assert all(j["rationale"] and j["judgeAttempts"] == 1 for r in records for j in r["judges"])
    assert [r["verdict"] for r in records] == ["partial", "wrong_speaker", "wrong_attribution", "unsupported",
                                               "unsupported"]  # fmt: skip
    assert {r["judgeModel"] for r in records} == {"jury(strictest: mock-judge, mock-judge-strict)"}
    assert records[0]["rationale"] == (
        "strictest of 2 of 2 judge(s) -> partial (mock-judge: supported; mock-judge-strict: partial)"
    )
    assert item["extra"]["citationJudgeErrors"] == 0 and records[0]["judgeAttempts"] == 2


def test_one_judge_adds_nothing_to_the_records_and_nulls_to_the_metrics(run, pytester, cites):
    report = pytester.path / "r.json"
    result = run(f"--eval-dataset={cites}", "--eval-judge=mock", f"--eval-report={report}")
    (item,) = read(report)["items"]
    assert all("judges" not in record for record in item["extra"]["citationParagraphs"])
    metrics = read(report)["metrics"]
    assert [metrics[k] for k in JURY_KEYS] == [None] * 4
    assert "jury judge" not in result.stdout.str() and "judgeAlpha" not in result.stdout.str()


def test_a_judge_alpha_floor_without_a_jury_fails_the_gate(run, pytester, cites):
    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"judgeAlpha": 0.2}))
    result = run(f"--eval-dataset={cites}", "--eval-judge=mock", f"--eval-floors={floors}")
    result.stdout.fnmatch_lines(["judgeAlpha*n/a >= 0.2000*FAIL*no jury judged them*", "gate: FAIL"])
    passing = run(f"--eval-dataset={cites}", *MOCK_JURY, f"--eval-floors={floors}")
    passing.stdout.fnmatch_lines(["judgeAlpha*0.5385 [[]-0.1250, 1.0000] >= 0.2000*PASS*", "gate: PASS"])


def test_a_judge_gone_in_a_jury_is_counted_for_that_judge_and_the_jury_answers(run, pytester, cites):
    report = pytester.path / "r.json"
    # An account with no quota left: HTTP 429 insufficient_quota, not retried (docs/judges.md).
    gone = "mock-judge-strict+fault=quota"
    result = run(f"--eval-dataset={cites}", "--eval-judge=mock", "--eval-judge-model=mock-judge",
                 f"--eval-judge-model={gone}", f"--eval-report={report}")  # fmt: skip
    metrics = read(report)["metrics"]
    strict = metrics["verdictDistributionByModel"][gone]
    assert strict["unjudged"] == 5 and sum(strict.values()) == 5  # every paragraph: counted, never dropped
    assert metrics["judgeAgreementByModel"][gone] == 0.0
    assert metrics["judgeErrors"] == 0 and metrics["judgeAgreement"] == 0.8  # the other judge's verdicts
    assert metrics["judgeAlpha"] is None  # no paragraph got two verdicts
    result.stdout.fnmatch_lines([f"jury judge {gone}: 5 left unjudged of 5 paragraph(s): no vote in the jury's *"])
    assert result.ret == 0  # the jury answered every paragraph: the run goes on, the gone judge's count shows it


def test_a_judges_file_jury_with_keys_from_the_environment(run, pytester, cites, monkeypatch):
    report, judges = pytester.path / "r.json", pytester.path / "judges.json"
    monkeypatch.setenv("STRICT_JUDGE_KEY", "sk-strict-0123456789")
    with ThreadedMockProvider() as mock:
        judges.write_text(json.dumps([
            {"url": mock.base_url, "model": "mock-judge"},
            {"url": mock.base_url, "model": "mock-judge-strict", "apiKeyEnv": "STRICT_JUDGE_KEY"},
        ]))  # fmt: skip
        db = pytester.path / "h.db"
        result = run(f"--eval-dataset={cites}", f"--eval-judges={judges}", "--eval-judge-policy=unanimous",
                     f"--eval-report={report}", f"--eval-history=sqlite:///{db}")  # fmt: skip
        asked = sorted(record.model for record in mock.log if record.kind == "judge")
    assert asked == ["mock-judge"] * 5 + ["mock-judge-strict"] * 5
    assert "sk-strict" not in result.stdout.str() + report.read_text() + db.read_bytes().decode("latin-1")
    assert read(report)["metrics"]["judgeKappaByModel"]["mock-judge"] == pytest.approx(0.75)
    # The history keeps each judge's verdict beside the jury's, and the jury in the run's config.
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT verdict, judge_model, judges FROM judgments ORDER BY paragraph").fetchall()
        tokens = conn.execute("SELECT prompt_tokens, replies, judges FROM judgments ORDER BY paragraph").fetchall()
        (config,) = conn.execute("SELECT config FROM runs").fetchone()
        (set_judge,) = conn.execute("SELECT judge_model FROM judgment_sets").fetchone()
    finally:
        conn.close()
    assert [json.loads(js)[1]["verdict"] for _, _, js in rows] == [b for _, _, b, _ in PARAGRAPHS]
    # Each judge's verdict, rationale and error, and its own tokens (docs/judges.md, "Tokens and cost").
    kept = {"judgeModel", "verdict", "rationale", "judgeError", *USAGE_RECORD_KEYS}
    assert all(set(j) == kept for *_, js in rows for j in json.loads(js))
    # The jury's row holds its judges' tokens summed; the report's judgeTokens is keyed by each judge's model.
    for prompt, replies, js in tokens:
        judged = json.loads(js)
        assert prompt == sum(j["judgePromptTokens"] for j in judged) > 0
        assert replies == sum(j["judgeReplies"] for j in judged) == 2
    assert set(read(report)["metrics"]["judgeTokens"]) == {"mock-judge", "mock-judge-strict"}
    assert {model for _, model, _ in rows} == {"jury(unanimous: mock-judge, mock-judge-strict)"} == {set_judge}
    options = json.loads(config)["options"]
    assert options["judgePolicy"] == "unanimous" and options["judges"][1] == {
        "url": mock.base_url, "model": "mock-judge-strict", "apiKeyEnv": "STRICT_JUDGE_KEY"}  # fmt: skip
    # The stored run gives its own metrics back (groundeval gate --run recomputes them from the history).
    assert groundeval(["gate", "--run", "latest", "--history", f"sqlite:///{db}"]) == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "judges.json: not JSON: line 1 column 2"),
        ('{"url": "http://h/v1"}', "judges.json: expected a JSON list of judges"),
        ("[]", "judges.json: lists no judge"),
        ('["m"]', "judges.json: judges[0]: expected an object"),
        ('[{"url": "http://h/v1", "model": "a"}, {"model": "b"}]', "judges.json: judges[1].url: missing"),
        ('[{"url": "ftp://h/v1", "model": "a"}]', "judges.json: judges[0].url: 'ftp://h/v1' is not an http(s) URL"),
        ('[{"url": "http://u:sk-secret-99@h/v1", "model": "a"}]', "judges.json: judges[0].url: the URL carries "
                                                                  "credentials"),
        ('[{"url": "http://h/v1", "model": " "}]', "judges.json: judges[0].model: expected the judge's model name"),
        ('[{"url": "http://h/v1", "model": "a", "apiKey": "sk-secret-99"}]', "judges.json: judges[0].apiKey: "
                                                                            "unknown field"),
        ('[{"url": "http://h/v1", "model": "a", "apiKeyEnv": "sk-secret-99"}]', "judges.json: judges[0].apiKeyEnv: "
                                                                               "expected the name of the environment"),
        ('[{"url": "http://h/v1", "model": "a", "apiKeyEnv": "NO_SUCH_VAR_4711"}]', "judges.json: judges[0].apiKeyEnv: "
                                                                                   "the environment variable "
                                                                                   "NO_SUCH_VAR_4711 is not set"),
        ('[{"url": "http://h/v1", "model": "a"}, {"url": "http://g/v1", "model": "a"}]',
         "judges.json: judges[1].model 'a' is also judges[0].model"),
    ],
)  # fmt: skip
def test_a_bad_judges_file_is_a_usage_error_naming_the_file_the_entry_and_the_field(pytester, content, message):
    from pytest_groundeval.plugin.options import resolve_settings

    path = pytester.path / "judges.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(pytest.UsageError) as info:
        resolve_settings(pytester.parseconfig(f"--eval-judges={path}"))
    assert f"--eval-judges: {path.parent}" in str(info.value) and message in str(info.value)
    assert "sk-secret" not in str(info.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--eval-judge-url=http://127.0.0.1:1/v1", "--eval-judges=J"], "--eval-judges and --eval-judge-url both "
                                                                          "given"),
        (["--eval-judge=mock", "--eval-judges=J"], "--eval-judges and --eval-judge both given"),
        (["--eval-judge=mock", "--eval-judge-model=a", "--eval-judge-model=a"], "--eval-judge-model names 'a' twice"),
        (["--eval-judge=mock", "--eval-judge-model=a", "--eval-judge-model="], "--eval-judge-model is given but "
                                                                                "empty"),
        (["--eval-judge=mock", "--eval-judge-policy=loudest", "--eval-judge-model=a", "--eval-judge-model=b"],
         "'loudest' given by --eval-judge-policy is not a jury policy: expected one of majority, unanimous, "
         "strictest"),
        (["--eval-judge=mock", "--eval-judge-policy=strictest"], "--eval-judge-policy given, but no jury"),
        # The mock's heuristic, reported under a real model's name, would read as that model's figures.
        (["--eval-judge=mock", "--eval-judge-model=gpt-4o"], "--eval-judge-model: 'gpt-4o' is not a judge of the "
                                                             "mock provider (mock-judge, mock-judge-strict)"),
        (["--eval-judge=mock", "--eval-judge-model=mock-judge", "--eval-judge-model=o4-mini"],
         "--eval-judge-model: 'o4-mini' is not a judge of the mock provider"),
    ],
)  # fmt: skip
def test_jury_options_are_checked(pytester, args, message):
    from pytest_groundeval.plugin.options import resolve_settings

    (pytester.path / "J").write_text('[{"url": "http://h/v1", "model": "a"}, {"url": "http://h/v1", "model": "b"}]')
    with pytest.raises(pytest.UsageError) as info:
        resolve_settings(pytester.parseconfig(*[a.replace("=J", f"={pytester.path / 'J'}") for a in args]))
    assert message in str(info.value)


def test_jury_settings_resolve_and_never_show_a_key(pytester, monkeypatch):
    from pytest_groundeval.plugin.options import resolve_settings

    monkeypatch.setenv("GROUNDEVAL_JUDGE_API_KEY", "sk-from-env-0042")
    flags = resolve_settings(pytester.parseconfig(
        "--eval-judge-url=https://judge.example/v1/", "--eval-judge-model=a", "--eval-judge-model=b",
        "--eval-judge-policy=Unanimous"))  # fmt: skip
    assert [(j.url, j.model, j.api_key) for j in flags.judges] == [
        ("https://judge.example/v1", "a", "sk-from-env-0042"),
        ("https://judge.example/v1", "b", "sk-from-env-0042"),
    ]
    assert (flags.judge_model, flags.judge_policy) == ("jury(unanimous: a, b)", "unanimous")
    assert "sk-from-env-0042" not in repr(flags)
    one = pytester.path / "one.json"
    one.write_text('[{"url": "http://h/v1/", "model": "solo", "apiKeyEnv": "GROUNDEVAL_JUDGE_API_KEY"}]')
    single = resolve_settings(pytester.parseconfig(f"--eval-judges={one}"))
    # A judges file of one judge is that judge, as --eval-judge-url and --eval-judge-model give it.
    assert (single.judges, single.judge_url, single.judge_model, single.judge_api_key) == (
        (), "http://h/v1", "solo", "sk-from-env-0042")  # fmt: skip
    plain = resolve_settings(pytester.parseconfig("--eval-judge=mock", "-o", "eval_judge_model=mock-judge-strict"))
    assert (plain.judges, plain.judge_model) == ((), "mock-judge-strict")


def test_a_stored_run_rejudged_by_a_jury_as_a_new_run_compares_with_the_original(run, pytester, cites, capsys):
    db = pytester.path / "h.db"
    url = f"sqlite:///{db}"
    result = run(f"--eval-dataset={cites}", "--eval-judge=mock", f"--eval-history={url}", "--eval-label=one")
    assert result.ret == 0, result.stdout.str()
    with ThreadedMockProvider() as mock:
        code = groundeval(["rejudge", "latest", "--as-new-run", "--label", "jury", "--judge-url", mock.base_url,
                           "--judge-model", "mock-judge", "--judge-model", "mock-judge-strict", "--history", url])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    conn = sqlite3.connect(db)
    try:
        (original, _), (copy, config) = conn.execute("SELECT id, config FROM runs ORDER BY started_ms").fetchall()
        stored = conn.execute(
            "SELECT j.run_id, j.judge_model, j.judges FROM judgments j JOIN judgment_sets s ON s.id = j.set_id "
            "AND s.is_current ORDER BY j.run_id, j.paragraph"
        ).fetchall()
    finally:
        conn.close()
    assert json.loads(config)["copiedFrom"] == original
    assert f"run {copy} is a copy of run {original}" in out and f"history compare {original[:12]} {copy[:12]}" in out
    assert f"(judge {JURY_NAME}) is complete and now current" in out
    assert 'jury: {"judgeAlpha": 0.5384615384615384, "judgeKappa": 0.3181818181818182' in out
    # The stored run keeps its one judge's verdicts; the copy holds the jury's, each judge's beside them.
    mine = [row for row in stored if row[0] == original]
    theirs = [row for row in stored if row[0] == copy]
    assert {m for _, m, _ in mine} == {"mock-judge"} and all(js is None for *_, js in mine)
    assert [[j["verdict"] for j in json.loads(js)] for *_, js in theirs] == [[a, b] for _, a, b, _ in PARAGRAPHS]
    assert groundeval(["history", "compare", original[:12], copy[:12], "--history", url]) == 0
    compared = capsys.readouterr().out
    assert any(line.split()[:4] == ["judgeKappa", "0.7500", "0.3182", "-0.4318"] for line in compared.splitlines())
    assert any(line.split()[:3] == ["judgeAlpha", "n/a", "0.5385"] for line in compared.splitlines())
    assert "verdicts (A -> B): supported 1 -> 0, partial 1 -> 1, unsupported 1 -> 2" in compared


def test_an_empty_judge_model_from_the_environment_is_refused_as_before(pytester, monkeypatch):
    from pytest_groundeval.plugin.options import resolve_settings

    # The repeatable option keeps the single one's rule: an unset CI variable must not silently pick a default.
    monkeypatch.setenv("GROUNDEVAL_JUDGE_MODEL", "  ")
    with pytest.raises(pytest.UsageError, match="env GROUNDEVAL_JUDGE_MODEL is given but empty"):
        resolve_settings(pytester.parseconfig("--eval-judge=mock"))
    monkeypatch.setenv("GROUNDEVAL_JUDGE_MODEL", "mock-judge\nmock-judge-strict\n")
    jury = resolve_settings(pytester.parseconfig("--eval-judge=mock"))
    assert [(j.url, j.model) for j in jury.judges] == [("mock", "mock-judge"), ("mock", "mock-judge-strict")]
