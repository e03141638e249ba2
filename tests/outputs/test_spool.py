"""The on-disk item spool the plugin keeps its outputs' items in (outputs/spool.py, issue 24)."""

from __future__ import annotations

import math
import os
from types import SimpleNamespace

import pytest

from pytest_groundeval.outputs.html import render_html
from pytest_groundeval.outputs.markdown import render_markdown
from pytest_groundeval.outputs.spool import ItemSpool
from pytest_groundeval.outputs.write import write_session_outputs


def test_items_come_back_in_order_as_often_as_asked_and_passes_may_interleave():
    spool = ItemSpool()
    assert not spool and list(spool) == []
    items = [{"id": f"q{i}", "answer": "Zoë said «non» \u2028 [S1]", "pass": i % 2 == 0} for i in range(5)]
    for item in items:
        spool.add(item)
    assert len(spool) == 5
    assert list(spool) == items
    first, second = iter(spool), iter(spool)
    assert [next(first), next(second), next(first)] == [items[0], items[0], items[1]]
    spool.add({"id": "q5"})
    assert [item["id"] for item in spool][-1] == "q5"


def test_close_removes_the_file():
    spool = ItemSpool()
    spool.add({"id": "q1"})
    name = spool._file.name
    assert os.path.exists(name)
    spool.close()
    assert not os.path.exists(name) and len(spool) == 0 and list(spool) == []


def test_a_value_json_cannot_carry_is_refused_at_add():
    spool = ItemSpool()
    with pytest.raises(ValueError):
        spool.add({"id": "q1", "latencyMs": math.nan})
    with pytest.raises(TypeError):
        spool.add({"id": "q1", "when": object()})


def test_the_page_and_table_written_from_a_spool_are_those_of_the_list(tmp_path, attribution_report):
    # The plugin hands the outputs a spool; `groundeval report` a list read from the file: same bytes.
    spool = ItemSpool()
    for item in attribution_report["items"]:
        spool.add(item)
    streamed = dict(attribution_report, items=spool)
    out = write_session_outputs([streamed], html=tmp_path / "page.html", markdown=tmp_path / "gate.md")
    assert out.errors == []
    assert (tmp_path / "page.html").read_text(encoding="utf-8") == render_html(attribution_report)
    assert (tmp_path / "gate.md").read_text(encoding="utf-8") == render_markdown(attribution_report)


def _no_temporary_directory(*args, **kwargs):
    raise OSError(28, "No space left on device")


def test_a_temporary_file_that_cannot_be_written_drops_the_items_and_fails_only_the_outputs(
    tmp_path, monkeypatch, attribution_report
):
    # A full or read-only temporary directory: the spool keeps the error, not the items, and never
    # raises while the session runs; the page, the table and the step summary each say why they are missing.
    from pytest_groundeval.outputs import spool as spool_module

    monkeypatch.setattr(spool_module, "tempfile", SimpleNamespace(NamedTemporaryFile=_no_temporary_directory))
    spool = ItemSpool()
    for item in attribution_report["items"]:
        spool.add(item)
    assert isinstance(spool.error, OSError) and len(spool) == 0
    with pytest.raises(OSError, match="No space left on device"):
        list(spool)
    spool.close()  # still quiet
    summary = tmp_path / "summary.md"
    out = write_session_outputs(
        [dict(attribution_report, items=spool)],
        html=tmp_path / "page.html",
        markdown=tmp_path / "gate.md",
        step_summary=summary,
    )
    assert out.written == []
    assert len(out.errors) == 2 and all("No space left on device" in error for error in out.errors)
    assert out.step_summary_error is not None and "No space left on device" in out.step_summary_error
    assert not (tmp_path / "page.html").exists() and not (tmp_path / "gate.md").exists() and not summary.exists()
