"""``groundeval history`` and ``groundeval rejudge`` on both backends (docs/history.md)."""

from __future__ import annotations

import json

import pytest

from pytest_groundeval.cli import main
from pytest_groundeval.cli.history import history_main
from pytest_groundeval.cli.rejudge import rejudge_main
from pytest_groundeval.history import HistoryStore

from tests._support import history_records as _data


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
    # The run's own page ("this run"), with a trend over the earlier run of the same dataset and lineage.
    assert page.startswith("<!DOCTYPE html>") and first[:12] in page and _page_runs(page) == [first, "this run"]
    assert second[:12] not in page


def _page_runs(page: str) -> list[str]:
    import json
    import re

    island = re.search(r'<script type="application/json" id="ge-data">(.*?)</script>', page, flags=re.S)
    assert island, "the page carries no data island"
    return [run["id"] for run in json.loads(island.group(1))["runs"]]


def test_show_html_compares_the_run_with_the_one_before_it_never_itself(
    store: HistoryStore, history_url: str, tmp_path, capsys
) -> None:
    first = _run(store, [_data.qa("q1")], label="main", started_ms=1_700_000_000_000)
    out = tmp_path / "first.html"
    assert history_main(["show", first, "--html", str(out), "--history", history_url]) == 0
    page = out.read_text(encoding="utf-8")
    # No earlier run: the page says so, and has no comparison that could set the run against itself.
    assert _page_runs(page) == ["this run"]
    assert 'id="cmp-none"' in page and "No earlier run of this dataset" in page and 'id="cmp-a"' not in page

    second = _run(store, [_data.qa("q1", passed=False)], label="pr-7", started_ms=1_700_000_100_000)
    out = tmp_path / "second.html"
    assert history_main(["show", "latest", "--html", str(out), "--history", history_url]) == 0
    page = out.read_text(encoding="utf-8")
    runs = _page_runs(page)
    # The comparison's default pair is the last two runs: the one before it (A) and this run (B).
    assert runs == [first, "this run"] and second not in runs
    assert 'id="cmp-a"' in page and "cmp-none" not in page


# --- groundeval gate --run RUN --history URL (issue 19) ------------------------------------------


def _measured_run(store: HistoryStore, records, *, started_ms: int) -> str:
    """A finished run whose stored metrics are its items' and whose gate applied its floors."""
    from pytest_groundeval.core.gate import evaluate_gate, parse_floors
    from pytest_groundeval.core.metrics import compute_metrics
    from pytest_groundeval.history.stored_report import stored_outcomes

    floors = parse_floors({"claimSupportPrecision": 0.9}, "test floors")
    config = _data.config(floors=floors)
    run_id = store.open_run(config, label="main", started_ms=started_ms)
    store.add_items(run_id, records)
    metrics = compute_metrics(stored_outcomes(store, run_id))
    gate = evaluate_gate(metrics, floors=floors, dataset_version="2026.1", models=config["models"])
    store.finish_run(run_id, metrics=metrics.to_wire(), gate=gate.to_wire(), finished_ms=started_ms + 1500)
    return run_id


def test_gate_takes_the_run_with_run_and_the_database_with_history(store: HistoryStore, history_url: str,
                                                                   capsys) -> None:  # fmt: skip
    _measured_run(store, [_data.qa("q1"), _data.qa("q2")], started_ms=1_700_000_000_000)
    assert main(["gate", "--run", "latest", "--history", history_url]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == "gate: PASS" and captured.err == ""
    assert "claimSupportPrecision" in captured.out


@pytest.mark.parametrize(
    ("argv", "warned"),
    [
        (["--history", "latest", "--history-url", "{url}"], ["--history-url URL", "--history RUN"]),
        (["--run", "latest", "--history-url", "{url}"], ["--history-url URL"]),
        (["--history", "latest"], ["--history RUN"]),  # the database from GROUNDEVAL_HISTORY
    ],
)
def test_gates_old_spellings_still_work_and_warn(store: HistoryStore, history_url: str, capsys, monkeypatch,
                                                 argv, warned) -> None:  # fmt: skip
    _measured_run(store, [_data.qa("q1")], started_ms=1_700_000_000_000)
    monkeypatch.setenv("GROUNDEVAL_HISTORY", history_url)
    assert main(["gate", *(arg.format(url=history_url) for arg in argv)]) == 0
    err = capsys.readouterr().err.splitlines()
    use = {"--history-url URL": "use --history URL", "--history RUN": "use --run RUN"}
    assert [line.split(" is deprecated; ")[0] for line in err] == [f"groundeval gate: {old}" for old in warned]
    assert all(use[old] in line for old, line in zip(warned, err))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--history", "sqlite"], "--history URL names the database of --run RUN"),
        (["--report", "r.json", "--history", "sqlite"], "a --report needs none"),
        (["--run", "latest", "--history", "sqlite", "--history-url", "sqlite"], "both name the history database"),
    ],
)
def test_gate_history_usage_errors_exit_2(argv, message, capsys) -> None:
    assert main(["gate", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_stored_run_whose_metrics_are_not_its_items_is_refused(store: HistoryStore, history_url: str,
                                                                 capsys) -> None:  # fmt: skip
    # _run stores metrics that claim no items and precision 1.0 over an item it lists.
    _run(store, [_data.qa("q1", passed=False)], label="x", started_ms=1)
    assert main(["gate", "--run", "latest", "--history", history_url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("groundeval gate: history run latest: metrics.items is 0 but the report's 1 item(s) give 1")


def test_report_draws_html_trends_from_the_history_database(store: HistoryStore, history_url: str, tmp_path,
                                                                capsys) -> None:  # fmt: skip
    from pytest_groundeval.core.report import write_report
    from pytest_groundeval.history.stored_report import report_from_history

    first = _measured_run(store, [_data.qa("q1")], started_ms=1_700_000_000_000)
    second = _measured_run(store, [_data.qa("q1"), _data.qa("q2")], started_ms=1_700_000_100_000)
    report = write_report(tmp_path / "r.json", report_from_history(store, second))
    out = tmp_path / "r.html"
    assert main(["report", str(report), "--html", str(out), "--history", history_url]) == 0
    captured = capsys.readouterr()
    assert f"wrote {out}" in captured.out and captured.err == ""
    page = out.read_text(encoding="utf-8")
    assert "Trends over the last 2 runs" in page and first[:12] in page
    # --trends FILE reads the JSON list --history FILE used to.
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps([{"id": "run-from-file", "startedAt": 1, "metrics": {"errors": 0}}]))
    assert main(["report", str(report), "--html", str(out), "--trends", str(runs)]) == 0
    assert "run-from-file" in out.read_text(encoding="utf-8") and capsys.readouterr().err == ""


def test_report_history_file_is_a_deprecated_spelling_of_trends(store: HistoryStore, history_url: str, tmp_path,
                                                                capsys) -> None:  # fmt: skip
    from pytest_groundeval.core.report import write_report
    from pytest_groundeval.history.stored_report import report_from_history

    run_id = _measured_run(store, [_data.qa("q1")], started_ms=1_700_000_000_000)
    report = write_report(tmp_path / "r.json", report_from_history(store, run_id))
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps([{"id": "run-from-file", "startedAt": 1, "metrics": {"errors": 0}}]))
    out = tmp_path / "r.html"
    assert main(["report", str(report), "--html", str(out), "--history", str(runs)]) == 0
    assert "run-from-file" in out.read_text(encoding="utf-8")
    assert "groundeval report: --history FILE (a JSON list of runs) is deprecated; use --trends FILE" in (
        capsys.readouterr().err
    )



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
    # Every paragraph unparseable: the attempt is kept incomplete and nothing current is replaced.
    assert code == 1 and f"run {run_id}" in out
