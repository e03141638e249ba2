"""``groundeval rejudge`` on both backends (docs/history.md): what it needs, its progress bar, a judge that answers HTML."""

from __future__ import annotations

from pytest_groundeval.cli.rejudge import rejudge_main
from pytest_groundeval.history import HistoryStore
from tests._support import history_records as _data
from tests._support.history_records import recorded_run


def test_rejudge_without_a_judge_says_so(store: HistoryStore, history_url: str, capsys) -> None:
    run_id = recorded_run(store, [_data.citation("c", [_data.paragraph(0)])], label="x", started_ms=1)
    assert rejudge_main([run_id, "--history", history_url]) == 2
    assert "rejudge needs a judge: --judge-url URL" in capsys.readouterr().err
    assert rejudge_main([run_id, "--judge-url", "http://127.0.0.1:9/v1", "--history", history_url]) == 2


def test_the_progress_bar_redraws_one_line() -> None:
    import io

    from pytest_groundeval.history.rejudge import tty_progress

    stream = io.StringIO()
    show = tty_progress(stream)
    show(1, 4)
    show(4, 4)
    assert stream.getvalue().endswith("\rrejudge [" + "#" * 30 + "] 4/4\n")
    assert stream.getvalue().startswith("\rrejudge [" + "#" * 7 + "." * 23 + "] 1/4")


def test_rejudge_against_an_html_200_counts_unparseable_without_a_traceback(
    store: HistoryStore, history_url: str, plain_endpoint, capsys
) -> None:
    # A judge URL behind a proxy that answers its error page with status 200 (docs/citation.md, "Parsing").
    run_id = recorded_run(store, [_data.citation("c1", [_data.paragraph(0), _data.paragraph(1)])], label="main",
                          started_ms=1_700_000_000_000)  # fmt: skip
    url = plain_endpoint("text/html", b"<html><body><h1>Sign in to continue</h1></body></html>")
    code = rejudge_main([run_id, "--all", "--judge-url", url, "--judge-model", "judge-x", "--history", history_url])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "AttributeError" not in out + err
    assert plain_endpoint.requests == 2 * 3  # two paragraphs, each asked once and retried twice as a bad reply
    # Every paragraph unparseable: the attempt is kept incomplete and nothing current is replaced.
    assert code == 1 and f"run {run_id}" in out
