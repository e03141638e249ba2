"""``groundeval rejudge`` on both backends (docs/history.md): what it needs, its progress bar, a judge that answers HTML."""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--judges", "J", "--judge-url", "http://127.0.0.1:9/v1"], "--judges FILE names each judge's URL and model"),
        (["--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "a", "--judge-model", "a"],
         "--judge-model names 'a' twice"),
        (["--judge-url", "ftp://127.0.0.1/v1", "--judge-model", "a"], "--judge-url: 'ftp://127.0.0.1/v1' is not an "
                                                                       "http(s) URL"),
        (["--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "a", "--judge-model", "b", "--judge-policy", "x"],
         "--judge-policy 'x' is not a jury policy: expected one of majority, unanimous, strictest"),
        (["--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "a", "--judge-policy", "strictest"],
         "--judge-policy given, but one judge"),
        (["--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "a", "--judge-concurrency", "0"],
         "--judge-concurrency 0: expected a whole number >= 1"),
        (["--judges", "BAD"], "--judges: BAD: judges[1].model 'a' is also judges[0].model"),
        (["--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "a", "--label", "x"], "--label names the copy "
                                                                                          "--as-new-run makes"),
    ],
)  # fmt: skip
def test_rejudge_checks_its_judge_options_as_the_plugin_does(
    store: HistoryStore, history_url: str, tmp_path, capsys, args, message
) -> None:
    run_id = recorded_run(store, [_data.citation("c", [_data.paragraph(0)])], label="x", started_ms=1)
    (tmp_path / "J").write_text(
        '[{"url": "http://127.0.0.1:9/v1", "model": "a"}, {"url": "http://h/v1", "model": "b"}]'
    )
    (tmp_path / "BAD").write_text(
        '[{"url": "http://127.0.0.1:9/v1", "model": "a"}, {"url": "http://h/v1", "model": "a"}]'
    )
    args = [str(tmp_path / a) if a in ("J", "BAD") else a for a in args]
    assert rejudge_main([run_id, *args, "--history", history_url]) == 2
    err = capsys.readouterr().err
    assert message.replace("BAD", str(tmp_path / "BAD")) in err, err
