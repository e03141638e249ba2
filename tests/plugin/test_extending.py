"""The public extension API runs as docs/extending.md shows it (the examples are read from the page).

Each example is a fenced block preceded by ``<!-- example: NAME FILE -->``; the tests write
those blocks, unchanged, into the pytester directory, so the page and the tests cannot drift.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import re
import textwrap

import pytest

from pytest_groundeval.cli import main as groundeval
from pytest_groundeval.core import kinds
from pytest_groundeval.core.gate import DEFAULT_FLOORS
from pytest_groundeval.core.metrics import METRIC_DIRECTIONS, Metrics
from pytest_groundeval.core.report import read_report

from .conftest import NO_THIRD_PARTY_PLUGINS, ROOT

DOC = ROOT / "docs" / "extending.md"
CITATION_SMOKE = ROOT / "datasets" / "citation-smoke"
_EXAMPLE = re.compile(r"<!-- example: (\w+) (\S+) -->\n```\w*\n(.*?)```", re.S)
MODES = pytest.mark.parametrize("mode", [["-n", "0"], ["-n", "2"]], ids=["n0", "n2"])


def examples(name: str) -> dict[str, str]:
    """File name -> the code of example ``name`` in docs/extending.md."""
    found = {file: code for example, file, code in _EXAMPLE.findall(DOC.read_text(encoding="utf-8")) if example == name}
    assert found, f"docs/extending.md has no example {name!r}"
    return found


def write_example(pytester: pytest.Pytester, name: str, *, append: str = "") -> None:
    for file, code in examples(name).items():
        path = pytester.path / file
        path.parent.mkdir(parents=True, exist_ok=True)
        old = path.read_text(encoding="utf-8") + "\n\n" if path.exists() else ""
        path.write_text(old + code + append, encoding="utf-8")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*NO_THIRD_PARTY_PLUGINS, "-p", "no:cacheprovider", *args)


def assert_registry_is_built_in() -> None:
    assert "keywords" not in kinds.KIND_NAMES
    assert "keyword_recall" not in Metrics.model_fields
    assert "keywordRecall" not in METRIC_DIRECTIONS and "keywordRecall" not in DEFAULT_FLOORS


def docs_kind_run(shared_run, pytester: pytest.Pytester, mode: list[str]) -> tuple[pytest.RunResult, pathlib.Path]:
    """``(result, directory)`` of the docs' kind example as written, run once per mode with every output.

    The JSON report, the history, the JUnit XML and the HTML page of one run: the tests that read
    them share it (``shared_run``; an ``-n 2`` run starts two worker processes).
    """

    def make() -> tuple[pytest.RunResult, pathlib.Path]:
        write_example(pytester, "kind")
        result = run(
            pytester, "--eval-dataset=datasets/keywords", "--eval-report=report.json", "--eval-history=sqlite:///h.db",
            "--junitxml=j.xml", "--eval-html=r.html", "--eval-no-step-summary", *mode,
        )  # fmt: skip
        return result, pytester.path

    return shared_run(("docs-kind", *mode), make)


@pytest.mark.xdist_group("docs_kind")
@MODES
def test_the_docs_kind_is_measured_reported_and_gated(shared_run, pytester: pytest.Pytester, mode: list[str]) -> None:
    result, directory = docs_kind_run(shared_run, pytester, mode)
    assert result.ret == 0, result.stdout.str()
    result.stdout.re_match_lines([r"keywordRecall\s+1\.0000 >= 0\.9000\s+PASS", r"gate: PASS"])
    result.assert_outcomes(passed=3)
    report = json.loads((directory / "report.json").read_text(encoding="utf-8"))
    assert report["metrics"]["keywordRecall"] == 1.0
    assert report["metrics"]["itemsByKind"]["keywords"] == 3
    assert report["floors"]["keywordRecall"] == 0.9
    assert [c["outcome"] for c in report["gate"]["checks"] if c["metric"] == "keywordRecall"] == ["PASS"]
    assert "extensions" not in report
    assert_registry_is_built_in()


@MODES
def test_a_broken_variant_of_the_docs_kind_fails_its_floor(pytester: pytest.Pytester, mode: list[str]) -> None:
    write_example(pytester, "kind")
    conftest = pytester.path / "conftest.py"
    found = "found = [word for word in item.keywords if word.lower() in answer.lower()]"
    assert found in conftest.read_text(encoding="utf-8")
    conftest.write_text(
        conftest.read_text(encoding="utf-8").replace(found, "found = item.keywords[:0]"), encoding="utf-8"
    )
    result = run(pytester, "--eval-dataset=datasets/keywords", *mode)
    assert result.ret == 1, result.stdout.str()
    result.stdout.re_match_lines([r"keywordRecall\s+0\.0000 >= 0\.9000\s+FAIL", r"gate: FAIL"])
    assert_registry_is_built_in()


def test_the_docs_kind_items_carry_its_marker(pytester: pytest.Pytester) -> None:
    write_example(pytester, "kind")
    result = run(
        pytester, "--eval-dataset=datasets/keywords", "-m", "keywords and astronomy", "--strict-markers", "-n", "0"
    )
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1, deselected=2)


def test_the_docs_judge_replaces_the_http_judge(pytester: pytest.Pytester) -> None:
    write_example(pytester, "judge")
    result = run(pytester, f"--eval-dataset={CITATION_SMOKE}", "--eval-report=report.json", "-n", "0")
    result.stdout.fnmatch_lines(["*judge word-overlap: unsupported*", "citation judge: 7 paragraph(s): *"])
    (report,) = [read_report(pytester.path / "report.json")]
    assert sum(report.metrics.verdict_distribution.values()) == 7
    assert report.metrics.judge_errors == 0


def test_the_docs_report_hook_adds_extensions_that_readers_keep(pytester: pytest.Pytester) -> None:
    write_example(pytester, "kind")
    (pytester.path / "datasets/keywords/manifest.json").write_text(
        (pytester.path / "datasets/keywords/manifest.json")
        .read_text()
        .replace('"answer": "Jupiter', '"answer": "Saturn'),
        encoding="utf-8",
    )
    write_example(pytester, "report")
    result = run(pytester, "--eval-dataset=datasets/keywords", "--eval-report=report.json", "-n", "0")
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert report["extensions"] == {"triage": {"verdict": "FAIL", "failedItems": ["kw-planets"]}}, result.stdout.str()
    assert list(report)[-2:] == ["extensions", "items"]
    kinds.register(_load_kind(pytester))
    try:
        assert read_report(pytester.path / "report.json").extensions == report["extensions"]
    finally:
        kinds.unregister("keywords")


def test_extensions_that_are_not_json_are_left_out_and_fail_the_run(pytester: pytest.Pytester) -> None:
    write_example(pytester, "kind")
    with (pytester.path / "conftest.py").open("a", encoding="utf-8") as f:
        f.write("\n\ndef pytest_groundeval_report(config, report):\n    report.extensions['bad'] = {1, 2}\n")
    result = run(pytester, "--eval-dataset=datasets/keywords", "--eval-report=report.json", "-n", "0")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*extensions added by pytest_groundeval_report are not JSON*"])
    assert "extensions" not in json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))


def _load_kind(pytester: pytest.Pytester) -> type:
    """The docs' ``KeywordsKind``, imported from a module holding the example (pytester restores ``sys.modules``)."""
    (pytester.path / "docs_keywords_kind.py").write_text(examples("kind")["conftest.py"], encoding="utf-8")
    pytester.syspathinsert()
    return importlib.import_module("docs_keywords_kind").KeywordsKind  # type: ignore[no-any-return]


def test_an_installed_package_adds_a_kind_through_the_entry_point_group(pytester: pytest.Pytester) -> None:
    write_example(pytester, "kind")
    code = (pytester.path / "conftest.py").read_text(encoding="utf-8")
    (pytester.path / "conftest.py").unlink()
    site = pytester.mkdir("site")
    (site / "keywords_kind.py").write_text(code.replace("def pytest_groundeval_register_kinds", "def _unused"))
    info = site / "keywords_kind-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: keywords-kind\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest_groundeval.kinds]\nkeywords = keywords_kind:KeywordsKind\n")
    pytester.syspathinsert(site)
    result = run(pytester, "--eval-dataset=datasets/keywords", "-n", "0")
    assert result.ret == 0, result.stdout.str()
    result.stdout.re_match_lines([r"keywordRecall\s+1\.0000 >= 0\.9000\s+PASS"])
    assert_registry_is_built_in()


def test_an_entry_point_that_does_not_load_is_a_usage_error(pytester: pytest.Pytester) -> None:
    site = pytester.mkdir("site")
    info = site / "broken_kind-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-kind\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest_groundeval.kinds]\nbroken = no_such_module:Kind\n")
    pytester.syspathinsert(site)
    result = run(pytester, "--co")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot load the item kind of entry point broken = no_such_module:Kind*"])


def test_a_kind_registered_for_a_session_is_removed_when_it_ends(pytester: pytest.Pytester) -> None:
    write_example(pytester, "kind")
    pytester.makepyfile(
        test_seen=textwrap.dedent(
            """
            from pytest_groundeval.core.gate import DEFAULT_FLOORS
            from pytest_groundeval.core.kinds import KIND_NAMES

            def test_registered_during_the_session():
                assert "keywords" in KIND_NAMES and DEFAULT_FLOORS["keywordRecall"] == 0.9
            """
        )
    )
    fields = list(Metrics.model_fields)
    result = run(pytester, "test_seen.py", "-n", "0")
    result.assert_outcomes(passed=1)
    assert_registry_is_built_in()
    assert list(Metrics.model_fields) == fields


def test_a_kind_name_taken_twice_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write_example(pytester, "kind")
    with (pytester.path / "conftest.py").open("a", encoding="utf-8") as f:
        f.write("\n\ndef pytest_groundeval_register_kinds(config):\n    return [KeywordsKind, KeywordsKind]\n")
    result = run(pytester, "--co")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot register the item kind*a kind named 'keywords' is registered already*"])
    assert_registry_is_built_in()


@pytest.mark.xdist_group("docs_kind")
def test_a_hook_kind_is_accepted_by_the_history_junit_and_html(shared_run, pytester: pytest.Pytester) -> None:
    # The kind list is defined once (docs/architecture.md): a kind added through the hook is
    # recorded by the history, carries its declared JUnit figures and is drawn in the HTML page.
    import sqlite3
    import xml.etree.ElementTree as ET

    result, directory = docs_kind_run(shared_run, pytester, ["-n", "2"])
    assert result.ret == 0, result.stdout.str()
    with sqlite3.connect(directory / "h.db") as db:
        assert db.execute("SELECT kind, COUNT(*) FROM items GROUP BY kind").fetchall() == [("keywords", 3)]
    cases = [c for c in ET.parse(directory / "j.xml").iter("testcase") if c.get("name", "").startswith("kw-")]
    assert len(cases) == 3, ET.tostring(ET.parse(directory / "j.xml").getroot())[:2000]
    for case in cases:
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert properties.get("keywordsFound") not in (None, "0"), properties
    page = (directory / "r.html").read_text(encoding="utf-8")
    assert "kw-planets" in page and "keywordRecall" in page
    assert_registry_is_built_in()


def _judge_returning(pytester: pytest.Pytester, value: str, make: str = "OverlapJudge()") -> None:
    """The docs' judge example, with ``judge`` returning ``value`` and ``make_judge`` returning ``make``."""
    write_example(pytester, "judge")
    conftest = pytester.path / "conftest.py"
    code = conftest.read_text(encoding="utf-8")
    assert "        return ge.JudgeResult(\n" in code and "    return OverlapJudge()" in code
    code = code.replace("        return ge.JudgeResult(\n", f"        return {value}\n        return ge.JudgeResult(\n")
    conftest.write_text(code.replace("    return OverlapJudge()", f"    return {make}"), encoding="utf-8")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (
            'ge.JudgeResult(verdict="yes-ish", rationale="x", model=self.model)',
            "returned verdict 'yes-ish', not one of",
        ),
        ("None", "returned NoneType None, not a JudgeResult"),
        ('{"verdict": "supported"}', "returned dict {'verdict': 'supported'}, not a JudgeResult"),
    ],
    ids=["badverdict", "none", "dict"],
)
def test_a_hook_judge_returning_junk_counts_judge_errors_and_the_report_reads(
    pytester: pytest.Pytester, value: str, problem: str
) -> None:
    _judge_returning(pytester, value)
    result = run(pytester, f"--eval-dataset={CITATION_SMOKE}", "--eval-report=report.json", "-n", "0")
    assert result.ret in (0, 1), result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(["gate: *"])
    report = read_report(pytester.path / "report.json")
    assert report.metrics.judge_errors == 7 and not report.interrupted
    errors = [p["judgeError"] for item in report.items for p in item.extra.get("citationParagraphs", [])]
    assert len(errors) == 7
    assert all(e.startswith(f"the judge OverlapJudge (model 'word-overlap') {problem}") for e in errors), errors
    assert groundeval(["report", str(pytester.path / "report.json")]) == 0


def test_the_documented_judge_failure_form_is_an_unjudged_paragraph(pytester: pytest.Pytester) -> None:
    _judge_returning(pytester, 'ge.JudgeResult(verdict=None, error="backend timeout")')
    result = run(pytester, f"--eval-dataset={CITATION_SMOKE}", "--eval-report=report.json", "-n", "0")
    assert "TypeError" not in result.stdout.str()
    report = read_report(pytester.path / "report.json")
    assert report.metrics.judge_errors == 7
    records = [p for item in report.items for p in item.extra.get("citationParagraphs", [])]
    assert {(p["judgeError"], p["judgeModel"]) for p in records} == {("backend timeout", "word-overlap")}


def test_make_judge_returning_no_judge_stops_the_session_naming_the_hooks_file(pytester: pytest.Pytester) -> None:
    _judge_returning(pytester, "None", make='"hello"')
    result = run(pytester, f"--eval-dataset={CITATION_SMOKE}", "--eval-report=report.json", "-n", "0")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [f"*the citation judge could not be set up: pytest_groundeval_make_judge (implemented in "
         f"{pytester.path / 'conftest.py'}) returned str 'hello', not a Judge*"]
    )  # fmt: skip


def _report_hook(pytester: pytest.Pytester, body: str) -> None:
    write_example(pytester, "kind")
    write_example(pytester, "report", append=f"\n{body}\n")


def test_a_report_hook_that_raises_loses_no_output_and_fails_the_run(pytester: pytest.Pytester) -> None:
    _report_hook(pytester, "\ndef pytest_groundeval_report(config, report):\n    raise RuntimeError('hook exploded')")
    conftest = pytester.path / "conftest.py"
    # Two implementations: the docs' one (renamed into a plugin) and one that raises.
    code = conftest.read_text(encoding="utf-8")
    code = code.replace(
        "def pytest_groundeval_report(config, report):\n    failed", "def _triage(config, report):\n    failed", 1
    )
    conftest.write_text(code, encoding="utf-8")
    (pytester.path / "triage_plugin.py").write_text(
        "from conftest import _triage\n\n\ndef pytest_groundeval_report(config, report):\n    _triage(config, report)\n",
        encoding="utf-8",
    )
    pytester.syspathinsert()
    result = run(
        pytester, "-p", "triage_plugin", "--eval-dataset=datasets/keywords", "--eval-report=report.json",
        "--junitxml=junit.xml", "-n", "0",
    )  # fmt: skip
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        [f"*pytest_groundeval_report in {conftest} raised RuntimeError: hook exploded*", "gate: PASS"]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert report["extensions"] == {"triage": {"verdict": "PASS", "failedItems": []}}
    assert (pytester.path / "junit.xml").exists()
    assert sorted(p.name for p in pytester.path.iterdir() if ".tmp" in p.name) == []


def test_each_extension_that_is_not_json_is_named_and_the_others_kept(pytester: pytest.Pytester) -> None:
    _report_hook(
        pytester,
        "\n_docs = pytest_groundeval_report\n\n\ndef pytest_groundeval_report(config, report):\n"
        "    _docs(config, report)\n    report.extensions['bad'] = {1, 2}\n    report.extensions['nanny'] = float('nan')",
    )
    result = run(pytester, "--eval-dataset=datasets/keywords", "--eval-report=report.json", "-n", "0")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["*extensions added by pytest_groundeval_report are not JSON: 'bad'*",
         "*extensions added by pytest_groundeval_report are not JSON: 'nanny'*"]
    )  # fmt: skip
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert report["extensions"] == {"triage": {"verdict": "PASS", "failedItems": []}}


@pytest.mark.parametrize("mode", [["-n", "0"], ["-n", "2"]], ids=["n0", "n2"])
def test_report_items_are_there_without_a_report_file(pytester: pytest.Pytester, mode: list[str]) -> None:
    write_example(pytester, "kind")
    manifest = pytester.path / "datasets/keywords/manifest.json"
    manifest.write_text(manifest.read_text().replace('"answer": "Jupiter', '"answer": "Saturn'), encoding="utf-8")
    write_example(
        pytester,
        "report",
        append="\n    print(f\"\\nTRIAGE {report.extensions['triage']} {len(list(report.items()))}\")\n",
    )
    result = run(pytester, "--eval-dataset=datasets/keywords", "-s", *mode)
    assert "TRIAGE {'verdict': 'FAIL', 'failedItems': ['kw-planets']} 3" in result.stdout.str(), result.stdout.str()


_BROKEN_KINDS = {
    "recall": """
class Clash(KeywordsKind):
    metrics = (ge.MetricSpec("retrieval_recall", "clashes with qa's"),)

KINDS = [Clash]
""",
    "errors": """
class Clash(KeywordsKind):
    metrics = (ge.MetricSpec("errors", "clashes with the common count"),)

KINDS = [Clash]
""",
    "same": """
class Keywords2Item(KeywordsItem):
    kind: Literal["keywords2"]

class Keywords2(KeywordsKind):
    name = "keywords2"
    model = Keywords2Item

KINDS = [KeywordsKind, Keywords2]
""",
    "qa": """
class Qa(KeywordsKind):
    name = "qa"

KINDS = [Qa]
""",
    "notakind": """
class NotAKind:
    name = "zzz"
    model = KeywordsItem

KINDS = [NotAKind]
""",
    "string": """
KINDS = "keywords"
""",
}


def _broken(pytester: pytest.Pytester, name: str) -> pytest.RunResult:
    write_example(
        pytester,
        "kind",
        append=_BROKEN_KINDS[name] + "\n\ndef pytest_groundeval_register_kinds(config):\n    return KINDS\n",
    )
    return run(pytester, "--eval-dataset=datasets/keywords", "-n", "0")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "recall",
            "kind 'keywords': its metric 'retrieval_recall' (retrievalRecall) clashes with the metric "
            "'retrievalRecall' of the kind 'qa'",
        ),
        ("errors", "kind 'keywords': its metric 'errors' (errors) clashes with the metric 'errors' every kind shares"),
        (
            "same",
            "kind 'keywords2': its metric 'keyword_recall' (keywordRecall) clashes with the metric "
            "'keywordRecall' of the kind 'keywords'",
        ),
        ("qa", "'qa' is a built-in kind"),
        ("notakind", "is not an item kind: pass a subclass or an instance of pytest_groundeval.Kind"),
    ],
)
def test_a_kind_that_cannot_be_registered_is_a_usage_error_naming_the_conftest_file(
    pytester: pytest.Pytester, name: str, message: str
) -> None:
    result = _broken(pytester, name)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    conftest = pytester.path / "conftest.py"
    (line,) = [line for line in result.stderr.lines if "cannot register" in line]
    assert f"from pytest_groundeval_register_kinds in {conftest}: " in line and message in line, line
    assert "gate:" not in result.stdout.str()
    assert_registry_is_built_in()
    assert "keywords2" not in kinds.KIND_NAMES


def test_a_hook_returning_a_string_is_a_usage_error_not_one_per_character(pytester: pytest.Pytester) -> None:
    result = _broken(pytester, "string")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(
        [
            f"*pytest_groundeval_register_kinds in {pytester.path / 'conftest.py'} returned 'keywords', not a list or "
            "tuple of item kinds*"
        ]
    )
    assert "'k'" not in result.stderr.str()
    assert_registry_is_built_in()


def _installed_kind(pytester: pytest.Pytester) -> pathlib.Path:
    """The docs kind as an installed package (an entry point), not on the path yet; returns its site directory."""
    write_example(pytester, "kind")
    code = (pytester.path / "conftest.py").read_text(encoding="utf-8")
    site = pytester.mkdir("site")
    (site / "keywords_kind.py").write_text(code.replace("def pytest_groundeval_register_kinds", "def _unused"))
    info = site / "keywords_kind-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: keywords-kind\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest_groundeval.kinds]\nkeywords = keywords_kind:KeywordsKind\n")
    return site


def test_the_groundeval_command_reads_back_a_report_of_an_installed_kind(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    site = _installed_kind(pytester)
    (pytester.path / "conftest.py").unlink()
    pytester.syspathinsert(site)
    result = run(pytester, "--eval-dataset=datasets/keywords", "--eval-report=report.json", "-n", "0")
    assert result.ret == 0, result.stdout.str()
    capsys.readouterr()
    report = str(pytester.path / "report.json")
    assert groundeval(["gate", "--report", report]) == 0, capsys.readouterr().err
    assert re.search(r"keywordRecall\s+1\.0000 >= 0\.9000\s+PASS", capsys.readouterr().out)
    assert groundeval(["report", report]) == 0, capsys.readouterr().err
    assert groundeval(["merge", report, "-o", str(pytester.path / "merged.json")]) == 0, capsys.readouterr().err
    assert_registry_is_built_in()


@pytest.mark.xdist_group("docs_kind")
def test_the_groundeval_command_says_once_that_a_conftest_kind_is_not_registered(
    shared_run, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    result, directory = docs_kind_run(shared_run, pytester, ["-n", "0"])
    history = f"sqlite:///{directory / 'h.db'}"
    assert result.ret == 0, result.stdout.str()
    capsys.readouterr()
    report = str(directory / "report.json")
    expected = (
        f"{report}: item kind 'keywords' and metric 'keywordRecall' are not registered (an extension's kind or "
        "metric? the groundeval command loads kinds from the pytest_groundeval.kinds entry points only, not from "
        "conftest.py files; docs/extending.md)"
    )
    for command, args in [("gate", ["--report", report]), ("report", [report]), ("merge", [report, "-o", "m.json"])]:
        assert groundeval([command, *args]) == 2
        err = capsys.readouterr().err
        assert err == f"groundeval {command}: {expected}\n", err
    assert groundeval(["history", "list", "--history", history]) == 0
    run_id = capsys.readouterr().out.splitlines()[1].split()[0]
    assert groundeval(["gate", "--run", run_id, "--history", history]) == 2
    err = capsys.readouterr().err
    assert (
        "in the history is not a valid report: item kind 'keywords' and metric 'keywordRecall' are not registered ("
        in err
    )


def test_the_groundeval_command_refuses_an_installed_kind_that_does_not_register(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    site = _installed_kind(pytester)
    module = site / "keywords_kind.py"
    module.write_text(module.read_text().replace('name = "keywords"', 'name = "qa"'))
    pytester.syspathinsert(site)
    assert groundeval(["report", "nothing.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "groundeval report: cannot register the item kind 'qa' from entry point keywords = keywords_kind:KeywordsKind "
        "(pytest_groundeval.kinds): 'qa' is a built-in kind"
    ), err
    assert_registry_is_built_in()


def test_a_conftest_beside_the_dataset_is_not_loaded_as_the_docs_say(pytester: pytest.Pytester) -> None:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"<!-- output: conftest-beside-the-dataset -->\n```\n(.*?)```", text, re.S)
    assert block, "docs/extending.md shows no error of a conftest.py beside the dataset"
    write_example(pytester, "kind")
    (pytester.path / "conftest.py").rename(pytester.path / "datasets/keywords/conftest.py")
    result = run(pytester, "--eval-dataset=datasets/keywords", "-n", "0")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*" + line.replace("/path/to/", "*").replace("[", "[[]") + "*" for line in block.group(1).splitlines()]
    )
    # The remedy the page gives: name the dataset's directory on the command line too.
    result = run(pytester, "--eval-dataset=datasets/keywords", "datasets/keywords", "-n", "0")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=3)
