"""Writing a session's outputs (docs/ci.md): ``outputs.write.write_session_outputs``, which the plugin calls."""

from __future__ import annotations

from pytest_groundeval.outputs.markdown import render_markdown
from pytest_groundeval.outputs.write import session_markdown, shown_path, write_session_outputs


def test_one_report_gets_its_page_its_table_and_the_job_summary(tmp_path, citation_report):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    out = write_session_outputs([citation_report], html=html, markdown=md, step_summary=summary)
    assert out.written == [html, md] and out.errors == [] and out.step_summary_error is None
    table = render_markdown(citation_report, title="groundeval")
    assert md.read_text(encoding="utf-8") == table == session_markdown([citation_report])
    assert summary.read_text(encoding="utf-8") == "earlier step\n" + table + "\n"
    assert "<html" in html.read_text(encoding="utf-8")


def test_several_reports_get_titled_tables_and_no_page(tmp_path, citation_report, v1_report):
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    out = write_session_outputs([v1_report, citation_report], html=html, markdown=md)
    assert out.written == [md] and not html.exists()
    assert out.errors == ["--eval-html: this run gated 2 datasets and a page shows one; nothing written"]
    text = md.read_text(encoding="utf-8")
    assert text == (
        render_markdown(v1_report, title=f"groundeval {v1_report['datasetVersion']}")
        + "\n"
        + render_markdown(citation_report, title=f"groundeval {citation_report['datasetVersion']}")
    )


def test_what_cannot_be_written_is_reported_not_raised(tmp_path, citation_report):
    missing = tmp_path / "no" / "such" / "dir"
    out = write_session_outputs(
        [citation_report],
        markdown=missing / "r.md",
        step_summary=missing / "summary.md",
        step_summary_name="GITHUB_STEP_SUMMARY",
    )
    assert out.written == []
    (error,) = out.errors
    assert error.startswith(f"cannot write {shown_path(missing / 'r.md')}: ")
    assert error.count("r.md") == 1  # the path once (the error it wrapped named it too)
    assert out.step_summary_error.startswith(f"GITHUB_STEP_SUMMARY ({missing / 'summary.md'}): cannot append: ")


def test_the_page_shows_a_repeated_item_by_its_first_attempt_that_did_not_pass():
    from pytest_groundeval.core.outcome import ItemOutcome, outcome_of_attempts
    from pytest_groundeval.outputs.html import item_view

    def attempt(passed: bool, answer: str) -> ItemOutcome:
        return ItemOutcome(id="qa-1", kind="qa", passed=passed, evidence_expected=1, evidence_found=int(passed),
                           extra={"tags": ["smoke"], "question": "Q?", "answer": answer})  # fmt: skip

    view = item_view(outcome_of_attempts([attempt(True, "right"), attempt(False, "wrong")]).to_wire())
    assert view["outcome"] == "fail" and view["question"] == "Q?" and view["tags"] == ["smoke"]
    assert view["segments"] == [["wrong", -1]]
    assert view["counts"]["attempts passed"] == "1/2" and view["counts"]["evidence found"] == "1/2"
