"""Judge and target tokens and their cost in a pytest run (docs/gate.md "Cost", docs/judges.md "Tokens and cost").

Two of the smoke dataset's qa items against the shared reference target (its generate calls report
usage; lineage generate model ``mock-generate``), plus one recorded citation answer of five
paragraphs judged by the session's mock (``mock-judge``, whose replies carry usage).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_groundeval.cli import main as groundeval

ROOT = Path(__file__).resolve().parents[2]
PRICES = {"mock-judge": {"input": 3.0, "output": 15.0}, "mock-generate": {"input": 0.5, "output": 1.5}}
SOURCE = "Anna Berg (S): Every municipality should have fibre to ninety percent of households by 2030."
PARAGRAPHS = [
    "Anna Berg (S) wants fibre to ninety percent of households by 2030 [1].",
    "Fibre reaches ninety percent of households [1].",
    "Satellite launches will replace copper lines everywhere [1].",
]


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def mixed(pytester: pytest.Pytester) -> Path:
    """Two qa items of datasets/smoke (the target's generate calls) and two recorded citation answers of
    three paragraphs each (the judge's)."""
    dataset = pytester.path / "mixed"
    shutil.copytree(ROOT / "datasets" / "smoke", dataset)
    manifest = read(dataset / "manifest.json")
    answer = {"answer": "\n\n".join(PARAGRAPHS), "sources": [{"marker": "1", "text": SOURCE}]}
    qa = [item for item in manifest["items"] if item["kind"] == "qa"][:2]
    manifest["items"] = qa + [{"id": f"cit-{n}", "kind": "citation", "response": answer} for n in range(2)]
    (dataset / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return dataset


def write(pytester: pytest.Pytester, name: str, obj: object) -> Path:
    path = pytester.path / name
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def usd(tokens: dict, price: dict) -> float:
    return (tokens["promptTokens"] * price["input"] + tokens["completionTokens"] * price["output"]) / 1_000_000


def test_costs_come_from_the_replies_usage_and_are_reported(run, pytester, mixed):
    report = pytester.path / "r.json"
    prices = write(pytester, "prices.json", PRICES)
    result = run(f"--eval-dataset={mixed}", "--eval-judge=mock", f"--eval-prices={prices}", f"--eval-report={report}")
    data = read(report)
    metrics, items = data["metrics"], data["items"]
    paragraphs = [p for i in items for p in i["extra"].get("citationParagraphs", ())]
    assert len(paragraphs) == 6 and all(p["judgeReplies"] == 1 and p["judgePromptTokens"] > 0 for p in paragraphs)
    judge = metrics["judgeTokens"]["mock-judge"]
    assert judge == {
        "promptTokens": sum(p["judgePromptTokens"] for p in paragraphs),
        "completionTokens": sum(p["judgeCompletionTokens"] for p in paragraphs),
        "replies": 6,
        "repliesWithoutUsage": 0,
    }
    calls = [i for i in items if i["latencyMs"] is not None]
    assert (
        metrics["targetTokens"]
        == {
            "promptTokens": sum(i["promptTokens"] for i in calls),
            "completionTokens": sum(i["completionTokens"] for i in calls),
            "calls": len(calls),
            "callsWithoutUsage": 0,
        }
        and len(calls) == 2
    )
    assert metrics["judgeCostUsd"] > 0
    assert metrics["judgeCostUsd"] == pytest.approx(usd(judge, PRICES["mock-judge"]), rel=1e-12)
    assert metrics["targetCostUsd"] == pytest.approx(usd(metrics["targetTokens"], PRICES["mock-generate"]), rel=1e-12)
    assert metrics["unpricedModels"] == {} and data["prices"] == PRICES
    out = result.stdout.str()
    assert (
        f"judge tokens mock-judge: prompt {judge['promptTokens']}, completion {judge['completionTokens']} (6 replies)"
        in out
    )
    assert f"judgeCostUsd {metrics['judgeCostUsd']:.6f} USD".split()[1] in out
    assert "INFO  reported; no bound set" in out
    target = metrics["targetTokens"]
    assert (
        f"target tokens: prompt {target['promptTokens']}, completion {target['completionTokens']} (2 generate calls)"
        in out
    )
    assert "warning: items report different" not in out  # the recorded answers know no lineage: no conflict
    assert groundeval(["gate", "--report", str(report)]) == 0  # a reader recomputes the costs with the recorded prices


def test_repeats_count_every_attempts_tokens_and_price_them(run, pytester, mixed):
    # The mock answers each attempt alike (no noise): N attempts are N times one run's tokens and dollars.
    prices = write(pytester, "prices.json", PRICES)
    metrics = []
    for repeat in ("1", "2"):
        report = pytester.path / f"r{repeat}.json"
        run(f"--eval-dataset={mixed}", "--eval-judge=mock", f"--eval-prices={prices}", f"--eval-report={report}",
            f"--eval-repeat={repeat}")  # fmt: skip
        metrics.append(read(report)["metrics"])
    once, twice = metrics
    assert twice["targetTokens"] == {key: 2 * n for key, n in once["targetTokens"].items()}
    assert twice["judgeTokens"] == {
        model: {key: 2 * n for key, n in cell.items()} for model, cell in once["judgeTokens"].items()
    }
    assert twice["judgeCostUsd"] == pytest.approx(2 * once["judgeCostUsd"], rel=1e-12)
    assert twice["targetCostUsd"] == pytest.approx(2 * once["targetCostUsd"], rel=1e-12)


def test_a_model_missing_from_the_prices_is_reported_and_its_ceiling_fails(run, pytester, mixed):
    report = pytester.path / "r.json"
    prices = write(pytester, "prices.json", {"mock-generate": PRICES["mock-generate"]})
    floors = write(pytester, "floors.json", {"judgeCostUsd": 1.0, "targetCostUsd": 1.0})
    result = run(f"--eval-dataset={mixed}", "--eval-judge=mock", f"--eval-prices={prices}", f"--eval-floors={floors}",
                 f"--eval-report={report}")  # fmt: skip
    assert result.ret == 1
    metrics = read(report)["metrics"]
    tokens = metrics["judgeTokens"]["mock-judge"]
    assert metrics["judgeCostUsd"] is None
    assert metrics["unpricedModels"] == {"judge": {"mock-judge": tokens["promptTokens"] + tokens["completionTokens"]}}
    checks = {c["metric"]: c for c in read(report)["gate"]["checks"]}
    assert checks["judgeCostUsd"]["outcome"] == "FAIL"
    assert (
        "judge model 'mock-judge'" in checks["judgeCostUsd"]["reason"]
        and "never priced at 0" in checks["judgeCostUsd"]["reason"]
    )
    assert checks["targetCostUsd"]["outcome"] == "PASS"  # the target's model is priced
    result.stdout.fnmatch_lines(["*cost: not priced: judge model 'mock-judge' (* tokens) is not in the prices file*"])


def test_a_cost_above_its_ceiling_fails_and_one_below_passes(run, pytester, mixed):
    prices = write(pytester, "prices.json", PRICES)
    tight = write(pytester, "tight.json", {"judgeCostUsd": 0.000001})
    result = run(f"--eval-dataset={mixed}", "--eval-judge=mock", f"--eval-prices={prices}", f"--eval-floors={tight}")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["judgeCostUsd * <= 0.000001 USD FAIL  * USD > 0.000001 USD"])
    loose = write(pytester, "loose.json", {"judgeCostUsd": 1.0, "targetCostUsd": 1.0})
    result = run(f"--eval-dataset={mixed}", "--eval-judge=mock", f"--eval-prices={prices}", f"--eval-floors={loose}")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["judgeCostUsd * <= 1.000000 USD PASS*", "targetCostUsd * <= 1.000000 USD PASS*"])


def test_a_cost_ceiling_without_prices_fails_saying_so(run, pytester, mixed):
    floors = write(pytester, "floors.json", {"judgeCostUsd": 1.0})
    result = run(f"--eval-dataset={mixed}", "--eval-judge=mock", f"--eval-floors={floors}")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["judgeCostUsd * FAIL  no prices: give --eval-prices FILE*"])


def test_groundeval_gate_prices_a_stored_reports_tokens_with_prices(run, pytester, mixed, capsys):
    # A run recorded without prices: its cost ceiling FAILs on re-gating until --prices prices its tokens.
    report, prices = pytester.path / "r.json", write(pytester, "prices.json", PRICES)
    loose = write(pytester, "loose.json", {"judgeCostUsd": 1.0, "targetCostUsd": 1.0})
    tight = write(pytester, "tight.json", {"judgeCostUsd": 0.000001})
    run(f"--eval-dataset={mixed}", "--eval-judge=mock", f"--eval-report={report}")
    capsys.readouterr()
    assert groundeval(["gate", "--report", str(report), "--floors", str(loose)]) == 1
    (line,) = [text for text in capsys.readouterr().out.splitlines() if text.startswith("judgeCostUsd")]
    assert "FAIL  no prices" in line
    assert groundeval(["gate", "--report", str(report), "--floors", str(loose), "--prices", str(prices)]) == 0
    out = capsys.readouterr().out
    assert f"prices from {prices}" in out
    judge = read(report)["metrics"]["judgeTokens"]["mock-judge"]
    assert f"judgeCostUsd {usd(judge, PRICES['mock-judge']):.6f} USD".split()[1] in out
    assert groundeval(["gate", "--report", str(report), "--floors", str(tight), "--prices", str(prices)]) == 1
    (line,) = [text for text in capsys.readouterr().out.splitlines() if text.startswith("judgeCostUsd")]
    assert "FAIL" in line and "> 0.000001 USD" in line
    bad = write(pytester, "bad.json", {"mock-judge": {"input": -1, "output": 1}})
    assert groundeval(["gate", "--report", str(report), "--prices", str(bad)]) == 2
    assert "mock-judge" in capsys.readouterr().err


def test_tokens_and_costs_are_exact_sums_under_xdist_and_sharding(run, pytester, mixed):
    prices = write(pytester, "prices.json", PRICES)
    keys = ("judgeTokens", "targetTokens", "judgeCostUsd", "targetCostUsd", "unpricedModels")
    figures = []
    for workers in ("0", "2"):
        report = pytester.path / f"r{workers}.json"
        run(f"--eval-dataset={mixed}", "--eval-judge=mock", f"--eval-prices={prices}", f"--eval-report={report}",
            "-n", workers)  # fmt: skip
        figures.append({key: read(report)["metrics"][key] for key in keys})
    shards = []
    for k in (1, 2):
        shards.append(str(pytester.path / f"s{k}.json"))
        run(f"--eval-dataset={mixed}", "--eval-judge=mock", f"--eval-prices={prices}", f"--eval-report={shards[-1]}",
            f"--eval-shard={k}/2")  # fmt: skip
    merged = pytester.path / "merged.json"
    assert groundeval(["merge", *shards, "-o", str(merged)]) == 0
    figures.append({key: read(merged)["metrics"][key] for key in keys})
    assert figures[0] == figures[1] == figures[2]
    assert figures[0]["judgeTokens"]["mock-judge"]["replies"] == 6 and figures[0]["judgeCostUsd"] > 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "expected a JSON object mapping model names"),
        ('{"gpt-x": 3}', "model 'gpt-x': expected an object"),
        ('{"gpt-x": {"input": 1}}', "model 'gpt-x': field 'output' is missing"),
        ('{"gpt-x": {"input": 1, "output": -2}}', "model 'gpt-x': field 'output' is -2: expected a number >= 0"),
        ('{"gpt-x": {"input": true, "output": 2}}', "model 'gpt-x': field 'input' is true"),
        ('{"gpt-x": {"inpt": 1, "input": 1, "output": 2}}', "model 'gpt-x': unknown field 'inpt'"),
        ('{"gpt-x": {"input": 1, "output": 2}, "gpt-x": {}}', "key 'gpt-x' is given twice"),
        ("{not json", "is not valid JSON"),
    ],
)
def test_a_bad_prices_file_is_a_usage_error_naming_file_model_and_field(pytester, content, message):
    from pytest_groundeval.plugin.options import resolve_settings

    prices = pytester.path / "prices.json"
    prices.write_text(content, encoding="utf-8")
    with pytest.raises(pytest.UsageError) as info:
        resolve_settings(pytester.parseconfig(f"--eval-prices={prices}"))
    assert message in str(info.value) and "prices.json" in str(info.value) and "--eval-prices" in str(info.value)


def test_prices_from_ini_and_env_and_not_without_a_dataset(pytester, monkeypatch):
    from pytest_groundeval.plugin.options import resolve_settings

    write(pytester, "p.json", PRICES)
    pytester.makeini("[pytest]\neval_prices = p.json\n")
    assert resolve_settings(pytester.parseconfig()).prices == PRICES
    pytester.makeini("[pytest]\n")
    monkeypatch.setenv("GROUNDEVAL_PRICES", str(pytester.path / "missing.json"))
    with pytest.raises(pytest.UsageError, match="env GROUNDEVAL_PRICES: cannot read prices file"):
        resolve_settings(pytester.parseconfig())
    monkeypatch.delenv("GROUNDEVAL_PRICES")
    result = pytester.runpytest("-p", "no:cacheprovider", "--eval-prices=p.json")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--eval-prices given, but no dataset*"])
