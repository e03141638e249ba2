"""``groundeval history`` and ``groundeval rejudge`` on both backends (docs/history.md)."""

from __future__ import annotations

import pytest

from pytest_groundeval.cli import main
from pytest_groundeval.history import HistoryStore
from pytest_groundeval.history.cli import history_main, rejudge_main

from . import _data


def _run(store: HistoryStore, records, *, label: str, started_ms: int) -> str:
    run_id = store.open_run(_data.config(), label=label, started_ms=started_ms)
    store.add_items(run_id, records)
    store.finish_run(run_id, metrics={"errors": 0, "claimSupportPrecision": 1.0}, gate={"passed": True, "checks": [
        {"metric": "errors", "value": 0, "bound": 0, "op": "<=", "outcome": "PASS", "reason": "0 <= 0"}]},
        finished_ms=started_ms + 1500)
    return run_id


def test_list_show_and_group(store: HistoryStore, history_url: str, capsys, monkeypatch) -> None:
    first = _run(store, [_data.qa("q1")], label="main", started_ms=1_700_000_000_000)
    second = _run(store, [_data.qa("q1", passed=False, tools=("sql",)), _data.qa("q2", error="timeout")],
                  label="pr-7", started_ms=1_700_000_100_000)
    monkeypatch.setenv("GROUNDEVAL_HISTORY", history_url)  # the env fallback
    assert main(["history", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith(second[:12]) and "2023-11-14 22:15:00" in lines[1] and lines[1].endswith("pr-7")
    assert lines[2].startswith(first[:12]) and "PASS" in lines[2] and "1.5 s" in lines[2]
    assert history_main(["list", "--label", "main"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert history_main(["list", "--dataset", "no-such-version"]) == 0
    assert capsys.readouterr().out.strip() == "no runs recorded"

    assert history_main(["show", "latest", "--by", "tool"]) == 0
    out = capsys.readouterr().out
    assert f"run {second}  label pr-7" in out and "1 failed, 1 errors" in out and "ERROR qa::q2  timeout" in out
    assert "models generate=gen-1 embed=emb-1" in out and "gate: PASS" in out
    sql_row = next(line for line in out.splitlines() if line.startswith("sql "))
    assert sql_row.split()[1:4] == ["1", "1", "1.000"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show"], "required"),
        (["show", "latest", "--by", "model"], "invalid choice"),
        (["frobnicate"], "invalid choice"),
        (["show", "zzz"], "expected a run id"),
        (["show", "latest~5"], "holds 0 run"),
        (["list", "--limit", "0"], "--limit must be >= 1"),
    ],
)
def test_usage_errors_exit_2(argv, message, history_url: str, capsys) -> None:
    assert history_main([*argv, "--history", history_url]) == 2
    assert message in capsys.readouterr().err


def test_a_bad_url_exits_2(capsys) -> None:
    assert history_main(["list", "--history", "mysql://x/y"]) == 2
    assert "unknown database 'mysql'" in capsys.readouterr().err


def test_rejudge_without_a_judge_says_so(store: HistoryStore, history_url: str, capsys) -> None:
    run_id = _run(store, [_data.citation("c", [_data.paragraph(0)])], label="x", started_ms=1)
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


def test_show_writes_the_runs_html_report_with_trends(store: HistoryStore, history_url: str, tmp_path, capsys) -> None:
    first = _run(store, [_data.qa("q1")], label="main", started_ms=1_700_000_000_000)
    second = _run(store, [_data.qa("q1", passed=False), _data.qa("q2")], label="pr-7", started_ms=1_700_000_100_000)
    out = tmp_path / "run.html"
    assert history_main(["show", "latest", "--html", str(out), "--history", history_url]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    # The run's own page, with a trend over the earlier run of the same dataset and lineage.
    assert page.startswith("<!DOCTYPE html>") and second[:12] in page and first[:12] in page


def test_rejudge_against_an_html_200_counts_unparseable_without_a_traceback(
    store: HistoryStore, history_url: str, plain_endpoint, capsys
) -> None:
    # A judge URL behind a proxy that answers its error page with status 200 (docs/citation.md, "Parsing").
    run_id = _run(store, [_data.citation("c1", [_data.paragraph(0), _data.paragraph(1)])], label="main",
                  started_ms=1_700_000_000_000)  # fmt: skip
    url = plain_endpoint("text/html", b"<html><body><h1>Sign in to continue</h1></body></html>")
    code = rejudge_main([run_id, "--all", "--judge-url", url, "--judge-model", "judge-x", "--history", history_url])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "AttributeError" not in out + err
    assert plain_endpoint.requests == 2 * 3  # two paragraphs, each asked once and retried twice as a bad reply
    assert code in (0, 1) and f"run {run_id}" in out
