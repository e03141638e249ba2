"""A kind registered at run time counts wherever kinds are listed (docs/architecture.md: adding a kind).

The kind below is defined here, in the test, as an extension would define it in a
``conftest.py``; ``core.kinds.register`` adds it. The manifest's item union, outcome
validation, the history's records, the JUnit figures and the HTML per-item view then
accept it without naming it anywhere in the package, and forget it once it is removed.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import pytest
from pydantic import ValidationError

from pytest_groundeval.core import kinds
from pytest_groundeval.core.dataset import DatasetError, Manifest, item_adapter, load_dataset
from pytest_groundeval.core.kinds.base import ItemBase, Kind, MetricSpec
from pytest_groundeval.core.metrics import METRIC_DIRECTIONS, Metrics, compute_metrics
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.history.errors import HistoryError
from pytest_groundeval.history.records import item_row
from pytest_groundeval.outputs.html import item_view, render_html
from pytest_groundeval.plugin.record import record_figures

kind_names = importlib.import_module("pytest_groundeval.core.kinds.names")  # `kinds.names` is a function
BUILT_IN = ("qa", "adversarial", "temporal", "citation", "review")
CITATION_REPORT = Path(__file__).parent / "outputs" / "data" / "report-citation-smoke.json"


class SummaryItem(ItemBase):
    """An answer to summarise in at most ``max_words`` words."""

    kind: Literal["summary"]
    """Always ``summary``."""
    text: str
    """The text to summarise."""
    max_words: int = 50
    """The longest summary that passes."""


class SummaryKind(Kind):
    name = "summary"
    model = SummaryItem
    junit_figures = ("summaryWords",)
    drilldown_extra = frozenset({"summaryWords"})

    def needs_target(self, item: SummaryItem) -> bool:
        return False

    def drilldown_counts(self, outcome: Mapping[str, Any]) -> dict[str, str]:
        return {"summary words": str((outcome.get("extra") or {}).get("summaryWords"))}


@pytest.fixture
def summary() -> Iterator[Kind]:
    kind = kinds.register(SummaryKind)
    try:
        yield kind
    finally:
        kinds.unregister("summary")


def _outcome() -> dict[str, Any]:
    return ItemOutcome(
        id="sum-1", kind="summary", passed=True, detail="12 words", latency_ms=3.0, extra={"summaryWords": 12}
    ).to_wire()


def _dataset(root: Path, items: list[dict[str, Any]]) -> Path:
    root.mkdir()
    (root / "manifest.json").write_text(json.dumps({"version": "v1", "items": items}), encoding="utf-8")
    return root


def test_the_registry_lists_a_registered_kind_after_the_built_in_ones(summary):
    assert tuple(kinds.KIND_NAMES) == (*BUILT_IN, "summary") and "summary" in kinds.KIND_NAMES
    assert kinds.get("summary") is summary and kinds.all_kinds()[-1] is summary
    assert compute_metrics([_outcome()]).items_by_kind == {**dict.fromkeys(BUILT_IN, 0), "summary": 1}


def test_the_manifest_accepts_a_registered_kinds_items(summary, tmp_path):
    item = {"id": "sum-1", "kind": "summary", "text": "A long text."}
    assert isinstance(item_adapter().validate_python(item), SummaryItem)
    assert isinstance(Manifest.model_validate({"version": "v1", "items": [item]}).items[0], SummaryItem)
    dataset = load_dataset(_dataset(tmp_path / "d", [item]))
    assert kinds.kind_of(dataset.items[0]) is summary
    with pytest.raises(DatasetError, match="unknown kind 'sumary'; valid kinds: qa, adversarial, temporal, "
                                           "citation, review, summary"):  # fmt: skip
        load_dataset(_dataset(tmp_path / "typo", [{**item, "kind": "sumary"}]))


def test_history_junit_and_html_accept_a_registered_kinds_outcome(summary):
    wire = _outcome()
    assert ItemOutcome.model_validate(wire).kind == "summary"
    row, tags, tools, judgments = item_row(wire, 0)
    assert row["kind"] == "summary"
    item = SimpleNamespace(user_properties=[])
    record_figures(item, wire)
    assert item.user_properties == [("outcome", "pass"), ("latencyMs", "3.0"), ("summaryWords", 12)]
    view = item_view(wire)
    assert view["kind"] == "summary" and view["counts"] == {"summary words": "12"} and "other" not in view
    report = json.loads(CITATION_REPORT.read_text(encoding="utf-8"))
    report["items"].append(wire)
    page = render_html(report)
    assert '"id":"sum-1","kind":"summary"' in page and '"counts":{"summary words":"12"}' in page


def test_a_removed_kind_is_refused_again(summary):
    kinds.unregister("summary")
    assert tuple(kinds.KIND_NAMES) == BUILT_IN
    with pytest.raises(
        ValidationError, match="Input should be 'qa', 'adversarial', 'temporal', 'citation' or 'review'"
    ):
        ItemOutcome(id="sum-1", kind="summary", passed=True)
    with pytest.raises(HistoryError, match="field 'kind' must be one of qa, adversarial, temporal, citation, review"):
        item_row({"id": "sum-1", "kind": "summary", "pass": True}, 0)
    item = {"id": "sum-1", "kind": "summary", "text": "A long text."}
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        Manifest.model_validate({"version": "v1", "items": [item]})
    assert item_view({"id": "sum-1", "kind": "summary", "pass": True, "extra": {"summaryWords": 1}})["counts"] == {}


def test_a_kind_is_registered_once_and_built_in_kinds_stay(summary):
    class Broken(SummaryKind):
        name = "broken"

    with pytest.raises(ValueError, match="'summary' is registered already"):
        kinds.register(SummaryKind)
    with pytest.raises(ValueError, match=r"its model needs a field `kind: Literal\['broken'\]`"):
        kinds.register(Broken)
    with pytest.raises(ValueError, match="lower-case letters"):
        kinds.register(type("Bad", (SummaryKind,), {"name": "Bad Kind"}))
    with pytest.raises(ValueError, match="built-in kind"):
        kinds.unregister("qa")
    assert tuple(kinds.KIND_NAMES) == (*BUILT_IN, "summary")


def _with_metric(name: str, field: str) -> type[Kind]:
    """A kind like ``SummaryKind`` called ``name`` that measures one rate ``field``."""
    model = type(
        f"{name.title()}Item",
        (SummaryItem,),
        {"__annotations__": {"kind": Literal[name]}, "__module__": __name__},  # type: ignore[valid-type]
    )
    return type(
        f"{name.title()}Kind", (SummaryKind,), {"name": name, "model": model, "metrics": (MetricSpec(field, "doc"),)}
    )


@pytest.mark.parametrize(
    ("field", "clash"),
    [
        ("retrieval_recall", "the metric 'retrievalRecall' of the kind 'qa'"),
        ("retrievalRecall", "the metric 'retrievalRecall' of the kind 'qa'"),
        ("errors", "the metric 'errors' every kind shares"),
        ("latency_ms_p50", "the metric 'latencyMsP50' every kind shares"),
        ("items", "the Metrics field 'items'"),
        ("items_by_kind", "the Metrics field 'itemsByKind'"),
        ("not_run", "the Metrics field 'notRun'"),
    ],
)
def test_a_kind_whose_metric_takes_a_taken_name_is_refused_and_nothing_changes(field, clash):
    fields_before = dict(Metrics.model_fields)
    generation = kinds.generation()
    with pytest.raises(
        ValueError, match=rf"kind 'clash': its metric '{field}' \(\w+\) clashes with {re.escape(clash)}"
    ):
        kinds.register(_with_metric("clash", field))
    assert tuple(kinds.KIND_NAMES) == BUILT_IN and kinds.generation() == generation
    assert dict(Metrics.model_fields) == fields_before


def test_two_extension_kinds_declaring_one_metric_clash():
    first = kinds.register(_with_metric("exact", "exact_match_rate"))
    try:
        with pytest.raises(ValueError, match="kind 'exact2': its metric 'exact_match_rate' .* of the kind 'exact'"):
            kinds.register(_with_metric("exact2", "exact_match_rate"))
        assert tuple(kinds.KIND_NAMES) == (*BUILT_IN, "exact")
        assert "exactMatchRate" in METRIC_DIRECTIONS
    finally:
        kinds.unregister(first.name)
    assert "exactMatchRate" not in METRIC_DIRECTIONS and "exact_match_rate" not in Metrics.model_fields


def test_a_kind_named_like_a_built_in_one_is_refused_for_its_name_first():
    class Qa(SummaryKind):
        name = "qa"  # its model's Literal is 'summary': the name is what is wrong

    with pytest.raises(ValueError, match="'qa' is a built-in kind"):
        kinds.register(Qa)


@pytest.mark.parametrize("thing", ["exact", SummaryItem, object(), SimpleNamespace(name="x", model=SummaryItem)])
def test_what_is_not_a_kind_is_refused_as_such(thing):
    with pytest.raises(
        ValueError, match="is not an item kind: pass a subclass or an instance of pytest_groundeval.Kind"
    ):
        kinds.register(thing)
    assert tuple(kinds.KIND_NAMES) == BUILT_IN


def test_a_listener_that_fails_leaves_no_kind_half_registered():
    def boom() -> None:
        if "summary" in kinds.KIND_NAMES:
            raise RuntimeError("cannot rebuild")

    kinds.on_change(boom)
    try:
        with pytest.raises(RuntimeError, match="cannot rebuild"):
            kinds.register(SummaryKind)
        assert tuple(kinds.KIND_NAMES) == BUILT_IN and kinds.registered("summary") is None
    finally:
        del kind_names._listeners[f"{boom.__module__}.{boom.__qualname__}"]
