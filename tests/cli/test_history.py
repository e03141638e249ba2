"""``groundeval history`` on both backends (docs/history.md): list, show, its HTML page, usage errors.

``groundeval rejudge``: tests/cli/test_rejudge.py; ``gate --run`` and ``report --history``: test_gate.py, test_report.py.
"""

from __future__ import annotations

import json

import pytest

from pytest_groundeval.cli import main
from pytest_groundeval.cli.history import history_main
from pytest_groundeval.history import HistoryStore
from tests._support import history_records as _data
from tests._support.history_records import measured_run, recorded_run


def test_list_show_and_group(store: HistoryStore, history_url: str, capsys, monkeypatch) -> None:
    first = recorded_run(store, [_data.qa("q1")], label="main", started_ms=1_700_000_000_000)
    second = recorded_run(
        store,
        [_data.qa("q1", passed=False, tools=("sql",)), _data.qa("q2", error="timeout")],
        label="pr-7",
        started_ms=1_700_000_100_000,
    )
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
def test_usage_errors_exit_2(argv, message, store: HistoryStore, history_url: str, capsys) -> None:
    assert history_main([*argv, "--history", history_url]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("flag", [[], ["--history", "sqlite:///hsitory.db"]])
def test_reading_a_history_that_does_not_exist_names_it_and_creates_nothing(flag, tmp_path, monkeypatch, capsys):
    # It made an empty database on the spot (the default one, or a mistyped path) and said "no runs recorded".
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GROUNDEVAL_HISTORY", raising=False)
    for argv in (["history", "list", *flag], ["history", "show", "latest", *flag], ["gate", "--run", "latest", *flag]):
        assert main(argv) == 2
        assert "no history database at " in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_bad_url_exits_2(capsys) -> None:
    assert history_main(["list", "--history", "mysql://x/y"]) == 2
    assert "unknown database 'mysql'" in capsys.readouterr().err


def test_show_writes_the_runs_html_report_with_trends(store: HistoryStore, history_url: str, tmp_path, capsys) -> None:
    first = recorded_run(store, [_data.qa("q1")], label="main", started_ms=1_700_000_000_000)
    second = recorded_run(
        store, [_data.qa("q1", passed=False), _data.qa("q2")], label="pr-7", started_ms=1_700_000_100_000
    )
    out = tmp_path / "run.html"
    assert history_main(["show", "latest", "--html", str(out), "--history", history_url]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    # The run's own page ("this run"), with a trend over the earlier run of the same dataset and lineage.
    assert page.startswith("<!DOCTYPE html>") and first[:12] in page and _page_runs(page) == [first, "this run"]
    assert second[:12] not in page


def _page_runs(page: str) -> list[str]:
    import re

    island = re.search(r'<script type="application/json" id="ge-data">(.*?)</script>', page, flags=re.S)
    assert island, "the page carries no data island"
    return [run["id"] for run in json.loads(island.group(1))["runs"]]


def test_show_html_compares_the_run_with_the_one_before_it_never_itself(
    store: HistoryStore, history_url: str, tmp_path, capsys
) -> None:
    first = recorded_run(store, [_data.qa("q1")], label="main", started_ms=1_700_000_000_000)
    out = tmp_path / "first.html"
    assert history_main(["show", first, "--html", str(out), "--history", history_url]) == 0
    page = out.read_text(encoding="utf-8")
    # No earlier run: the page says so, and has no comparison that could set the run against itself.
    assert _page_runs(page) == ["this run"]
    assert 'id="cmp-none"' in page and "No earlier run of this dataset" in page and 'id="cmp-a"' not in page

    second = recorded_run(store, [_data.qa("q1", passed=False)], label="pr-7", started_ms=1_700_000_100_000)
    out = tmp_path / "second.html"
    assert history_main(["show", "latest", "--html", str(out), "--history", history_url]) == 0
    page = out.read_text(encoding="utf-8")
    runs = _page_runs(page)
    # The comparison's default pair is the last two runs: the one before it (A) and this run (B).
    assert runs == [first, "this run"] and second not in runs
    assert 'id="cmp-a"' in page and "cmp-none" not in page


# --- compare: the paired test (docs/statistics.md, "Paired comparison") ----------------------------


def _two_runs(store: HistoryStore, broken: int, extra: int = 0) -> tuple[str, str]:
    """Main's run of 40 qa items and a candidate's in which the first ``broken`` lose one evidence string each."""
    a = measured_run(store, [_data.qa(f"q{i:02d}") for i in range(40)], started_ms=1_700_000_000_000)
    records = [_data.qa(f"q{i:02d}", passed=i >= broken) for i in range(40)]
    records += [_data.qa(f"x{i}") for i in range(extra)]
    return a, measured_run(store, records, started_ms=1_700_000_100_000)


def test_compare_calls_one_flip_beyond_the_margin_not_significant(
    store: HistoryStore, history_url: str, tmp_path, capsys
) -> None:
    a, b = _two_runs(store, broken=1, extra=2)
    floors = tmp_path / "floors.json"
    floors.write_text(json.dumps({"claimSupportPrecision": 0.9, "retrievalRecallMargin": 0.005}))
    assert history_main(["compare", a, b, "--floors", str(floors), "--history", history_url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "items only in B (not paired): 2: x0, x1" in out and any(
        line.startswith("paired over 40 items") for line in out
    )
    recall = next(line for line in out if line.startswith("  retrievalRecall"))
    assert "not significant (p=1.0000): exact sign-flip over 1 differing item" in recall
    assert out[-2] == (
        "not a regression: retrievalRecall 0.9881 < run A's 1.0000 - margin 0.0050 (same dataset version and model "
        "lineage); not significant (p=1.0000): not a regression"
    )
    assert out[-1] == "compare: OK"


def test_compare_calls_a_planted_regression_significant_and_alpha_decides(
    store: HistoryStore, history_url: str, capsys
) -> None:
    a, b = _two_runs(store, broken=12)  # 12 of 40 lose evidence: precision 0.85 < 0.9, recall 0.85
    assert history_main(["compare", a, b, "--history", history_url]) == 1
    out = capsys.readouterr().out.splitlines()
    regressions = [line for line in out if line.startswith("REGRESSION")]
    assert [line.split()[1] for line in regressions] == ["claimSupportPrecision", "retrievalRecall"]
    assert all(line.endswith("; significant (p=0.0005)") for line in regressions)
    # The smallest p 2000 random swaps can give is 1/2001: at alpha 0.0001 nothing is significant.
    assert history_main(["compare", a, b, "--alpha", "0.0001", "--history", history_url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "compare: OK" and sum(line.startswith("not a regression:") for line in out) == 2
    assert history_main(["compare", a, b, "--alpha", "0", "--history", history_url]) == 2
    assert "--alpha must be a number in (0, 1), got 0" in capsys.readouterr().err


def test_show_prints_each_rate_with_its_confidence_interval(store: HistoryStore, history_url: str, capsys) -> None:
    run_id = store.open_run({**_data.config(), "confidenceLevel": 0.9}, label="ci", started_ms=1_700_000_000_000)
    store.add_items(run_id, [_data.qa("q1")])
    store.finish_run(
        run_id,
        metrics={"errors": 0, "retrievalRecall": 0.75, "temporalAccuracy": None},
        gate={"passed": True, "checks": []},
        confidence={"retrievalRecall": {"low": 0.5, "high": 0.875, "method": "bootstrap"}, "temporalAccuracy": None},
    )
    assert history_main(["show", run_id, "--history", history_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  retrievalRecall            0.7500 [0.5000, 0.8750]" in lines
    assert "  temporalAccuracy           n/a" in lines
    assert "intervals: 90% confidence (docs/statistics.md)" in lines
