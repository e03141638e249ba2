"""The judge protocol and the citation kind's layout (docs/architecture.md, docs/citation.md "Judge").

- a custom object satisfying ``core.judging.Judge`` drives a citation item through ``core``
  without ``pytest_groundeval.judge`` being imported, and the HTTP clients satisfy the protocols;
- ``core`` imports nothing of ``pytest_groundeval.judge``, not even inside a function;
- the citation kind is a package of modules under 800 lines, its text module a leaf, with no
  function-level import of the package's own modules, still found by the registry;
- the judge's verdicts, the claim verdicts, ``unparseable``/``unjudged`` and Cohen's κ are each
  defined once, under names that say which vocabulary they belong to.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_groundeval.core import judging
from pytest_groundeval.core.judging import JUDGE_VERDICTS, Judge, JudgeResult, Scorer, ScoreResult

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_groundeval"
CITATION = PACKAGE / "core" / "kinds" / "citation"
SMOKE = Path(__file__).resolve().parents[2] / "datasets" / "citation-smoke"


@functools.cache
def trees() -> dict[str, ast.Module]:
    """Every module of the package by its path under it, parsed once, when a test first asks.

    Not at import: the subprocess test below imports this module for its judge, and parsing
    the package is most of that process's CPU.
    """
    return {
        str(path.relative_to(PACKAGE)): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


class FixedJudge:
    """A judge that needs no network: ``partial`` for every paragraph, naming what it saw."""

    model = "fixed-judge"
    gave_up = None

    def __init__(self) -> None:
        self.seen: list[dict] = []

    async def judge(self, payload):
        self.seen.append(payload)
        return JudgeResult(verdict="partial", rationale=f"saw {len(payload['citedSources'])} cited", model=self.model)

    async def close(self) -> None:
        pass


class FixedScorer:
    gave_up = None

    async def score(self, paragraph, texts):
        return ScoreResult(0.25, logit=-1.0)

    async def close(self) -> None:
        pass


def test_a_custom_judge_satisfies_the_protocol_and_the_http_clients_do_too():
    assert isinstance(FixedJudge(), Judge) and isinstance(FixedScorer(), Scorer)
    assert not isinstance(object(), Judge)
    pytest.importorskip("openai")
    from pytest_groundeval.judge.client import JudgeClient
    from pytest_groundeval.judge.scorer import CoverageScorer

    assert isinstance(JudgeClient("http://127.0.0.1:9/v1", "m"), Judge)
    assert isinstance(CoverageScorer("http://127.0.0.1:9"), Scorer)


CUSTOM_JUDGE_RUN = f"""
import asyncio, json, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_judging import FixedJudge, FixedScorer
from pytest_groundeval.core.dataset import load_dataset
from pytest_groundeval.core.runner import ItemRunner

dataset = load_dataset({str(SMOKE)!r})
runner = ItemRunner(None)
runner.judge, runner.scorer = FixedJudge(), FixedScorer()
outcome = asyncio.run(runner.run_offline_async(dataset.by_id["cit-smoke-wrong-speaker"], dataset))
print(json.dumps({{
    "records": outcome.extra["citationParagraphs"],
    "seen": runner.judge.seen,
    "judgeModules": sorted(m for m in sys.modules if m.startswith("pytest_groundeval.judge")),
}}))
"""


def test_a_custom_judge_drives_a_citation_item_through_core_without_the_judge_package():
    out = subprocess.run([sys.executable, "-c", CUSTOM_JUDGE_RUN], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result["judgeModules"] == []
    (record,) = result["records"]
    assert (record["verdict"], record["judgeModel"], record["rationale"]) == ("partial", "fixed-judge", "saw 1 cited")
    assert (record["coverageScore"], record["coverageLogit"]) == (0.25, -1.0)
    # The judge got the wire shape of core.judging.judge_input, with the deterministic finding as a hint.
    (payload,) = result["seen"]
    assert set(payload) == {"paragraph", "citedSources", "otherSources", "metadataMismatch"}
    assert payload["citedSources"][0]["marker"] == "2" and "Lars Holm" in payload["metadataMismatch"][0]


def _imports(tree: ast.Module) -> list[tuple[int, str, int, bool]]:
    """``(line, module, level, inside_a_function)`` of every import outside ``TYPE_CHECKING`` blocks."""
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, 0, in_function) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.module or "", node.level, in_function))
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(tree, False)
    return found


def _absolute(relpath: str, module: str, level: int) -> str:
    if not level:
        return module
    parts = ["pytest_groundeval", *Path(relpath).with_suffix("").parts]
    package = parts if parts[-1] == "__init__" else parts[:-1]
    package = [p for p in package if p != "__init__"]
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def test_core_never_imports_the_judge_package_not_even_in_a_function():
    offenders = [
        (relpath, line)
        for relpath, tree in trees().items()
        if relpath.startswith("core/")
        for line, module, level, _ in _imports(tree)
        if _absolute(relpath, module, level).startswith("pytest_groundeval.judge")
    ]
    assert offenders == []


def test_the_citation_kind_is_a_package_of_small_modules_with_a_leaf_for_text():
    from pytest_groundeval.core import kinds
    from pytest_groundeval.core.kinds import citation

    assert CITATION.is_dir() and kinds.KIND_MODULES["citation"] == "citation"
    assert kinds.get("citation") is citation.KIND and citation.KIND.model is citation.CitationItem
    modules = sorted(p.stem for p in CITATION.glob("*.py"))
    assert modules == ["__init__", "assess", "checks", "jury", "kind", "model", "tally", "text"]
    for path in CITATION.glob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 800, path.name
        relpath = str(path.relative_to(PACKAGE))
        for line, module, level, in_function in _imports(trees()[relpath]):
            target = _absolute(relpath, module, level)
            assert not (in_function and target.startswith("pytest_groundeval")), f"{relpath}:{line} imports {target}"
            if path.stem == "text":
                assert not target.startswith("pytest_groundeval.core.kinds.citation"), (
                    f"text.py:{line} imports {target}"
                )


@functools.cache
def _string_tuples(tree: ast.Module) -> list[tuple[int, frozenset[str]]]:
    """Every tuple, list or ``Literal[...]`` of string constants only, as a set, with its line (once per tree)."""
    found = []
    for node in ast.walk(tree):
        elements = None
        if isinstance(node, (ast.Tuple, ast.List)):
            elements = node.elts
        if elements and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elements):
            found.append((node.lineno, frozenset(e.value for e in elements)))
    return found


@pytest.mark.parametrize(
    ("name", "marker", "home"),
    [("judge verdicts", {"partial", "wrong_attribution"}, "core/judging.py"),
     ("claim verdicts", {"contradicted", "unverifiable"}, "core/contract.py"),
     ("finding verdicts", {"soften", "flag_for_human_review", "remove"}, "core/evidence.py")],
)  # fmt: skip
def test_each_verdict_vocabulary_is_spelled_out_once(name, marker, home):
    places = [
        f"{relpath}:{line}"
        for relpath, tree in trees().items()
        for line, values in _string_tuples(tree)
        if marker <= values
    ]
    assert len(places) == 1 and places[0].startswith(home + ":"), (name, places)


def test_unparseable_and_unjudged_are_defined_once_and_no_module_says_just_verdicts():
    defined: dict[str, list[str]] = {"unparseable": [], "unjudged": []}
    ambiguous = []
    for relpath, tree in trees().items():
        for node in tree.body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            ambiguous += [f"{relpath}:{name}" for name in names if name in ("VERDICTS", "Verdict", "VERDICT_LABELS")]
            value = getattr(node, "value", None)
            if names and isinstance(value, ast.Constant) and value.value in defined:
                defined[value.value].append(relpath)
    assert defined == {"unparseable": ["core/judging.py"], "unjudged": ["core/judging.py"]}
    assert ambiguous == []
    assert judging.JUDGE_LABELS == (*JUDGE_VERDICTS, judging.UNPARSEABLE, judging.UNJUDGED)


def test_cohen_kappa_is_implemented_once():
    kappas = [
        relpath
        for relpath, tree in trees().items()
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "kappa" in node.name.lower()
    ]
    assert kappas == ["core/kinds/citation/tally.py"]
    assert not (PACKAGE / "judge" / "metrics.py").exists()


def test_the_two_judges_outside_judge_are_named_for_what_they_are():
    assert not (PACKAGE / "mock" / "judge.py").exists() and not (PACKAGE / "history" / "judge.py").exists()
    assert (PACKAGE / "mock" / "citation_judge.py").is_file() and (PACKAGE / "history" / "rejudge_judge.py").is_file()
