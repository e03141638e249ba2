"""``groundeval compare A.json B.json`` (cli/compare.py; docs/statistics.md, "Paired comparison").

Reports are built here and the command runs in process; one test runs it as a process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_groundeval.cli import main
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.significance import REPLICATES
from tests._support.paired_runs import qa_items, report_of, write_report_json

REPO = Path(__file__).resolve().parents[2]
TIGHT = {"retrievalRecallMargin": 0.005}
"""The README's floors file: the recall margin tightened so that one lost item is beyond it."""


def _pair(tmp_path: Path, a: list[ItemOutcome], b: list[ItemOutcome], **report) -> tuple[str, str]:
    path_a = write_report_json(tmp_path / "a.json", report_of(a, **report))
    path_b = write_report_json(tmp_path / "b.json", report_of(b, **report))
    return str(path_a), str(path_b)


def _compare(capsys, *argv: str) -> tuple[int, list[str]]:
    status = main(["compare", *argv])
    return status, capsys.readouterr().out.splitlines()


def test_one_flipped_item_of_369_is_beyond_the_margin_but_not_significant(tmp_path, capsys):
    # As in datasets/v1: 160 of the 369 qa items expect evidence; one of them loses it.
    a, b = _pair(tmp_path, qa_items(evidence_items=160), qa_items(lost={126}, evidence_items=160), floors=TIGHT)
    status, out = _compare(capsys, a, b)
    assert status == 0, "\n".join(out)
    assert "pass -> fail: 1" in out and "  qa::qa-0126" in out
    recall = next(line for line in out if line.startswith("  retrievalRecall"))
    assert "-0.0062" in recall and "not significant (p=1.0000): exact sign-flip over 1 differing item" in recall
    assert any(line.startswith("  pass/fail") and "not significant (p=1.0000)" in line for line in out)
    assert out[-2] == (
        "not a regression: retrievalRecall 0.9938 < run A's 1.0000 - margin 0.0050 (same dataset version and "
        "model lineage); not significant (p=1.0000): not a regression"
    )
    assert out[-1] == "compare: OK"


def test_a_planted_regression_is_significant_and_exits_1(tmp_path, capsys):
    # 41 of 369 items lose their evidence (a retriever that drops it): far beyond noise.
    a, b = _pair(tmp_path, qa_items(), qa_items(lost=set(range(0, 369, 9))), floors=TIGHT)
    status, out = _compare(capsys, a, b)
    assert status == 1
    regression = next(line for line in out if line.startswith("REGRESSION retrievalRecall"))
    assert regression.endswith(f"; significant (p={1 / (REPLICATES + 1):.4f})")
    assert any(line.startswith("  pass/fail") and "significant (p=" in line for line in out)
    assert "pass -> fail: 41" in out and out[-1] == "compare: REGRESSION"


def test_every_compared_metric_says_significant_or_not(tmp_path, capsys):
    a, b = _pair(tmp_path, qa_items(40), qa_items(40, lost={2}))
    status, out = _compare(capsys, a, b)
    assert status == 0
    start = next(i for i, line in enumerate(out) if line.startswith("paired over 40 items; alpha 0.05"))
    tested = [line for line in out[start + 1 :] if line.startswith("  ")]
    assert [line.split()[0] for line in tested] == [
        "pass/fail", "retrievalRecall", "claimSupportPrecision", "claimSupportRecall"]  # fmt: skip
    assert all("significant (p=" in line for line in tested)


def test_items_in_only_one_report_are_listed_not_paired(tmp_path, capsys):
    a, b = _pair(tmp_path, qa_items(30), qa_items(16, start=14) + qa_items(12, start=100))
    status, out = _compare(capsys, a, b)
    assert status == 0
    assert "items only in A (not paired): 14: qa-0000, qa-0001, qa-0002, qa-0003, qa-0004, qa-0005, qa-0006, " \
        "qa-0007, qa-0008, qa-0009 … and 4 more" in out  # fmt: skip
    assert "items only in B (not paired): 12: qa-0100, qa-0101, qa-0102, qa-0103, qa-0104, qa-0105, qa-0106, " \
        "qa-0107, qa-0108, qa-0109 … and 2 more" in out  # fmt: skip
    assert any(line.startswith("paired over 16 items") for line in out)


def test_the_json_form_holds_every_test_and_the_verdict(tmp_path, capsys):
    a, b = _pair(tmp_path, qa_items(), qa_items(lost=set(range(0, 369, 9))), floors=TIGHT)
    status = main(["compare", a, b, "--json", "--alpha", "0.01"])
    data = json.loads(capsys.readouterr().out)
    assert status == 1 and data["regressed"] is True and data["schemaVersion"] == 1
    (cmp,) = data["comparisons"]
    assert (cmp["datasetVersion"], cmp["alpha"], cmp["pairedItems"], cmp["seed"]) == ("v1", 0.01, 369, 21)
    assert len(cmp["passToFail"]) == 41 and cmp["mcnemarP"] < 1e-9
    recall = next(m for m in cmp["metrics"] if m["metric"] == "retrievalRecall")
    assert recall["significant"] is True and recall["high"] < 0 and recall["discordant"] == 41
    assert cmp["regressions"][0].startswith("retrievalRecall 0.8889 < run A's 1.0000 - margin 0.0050")


def test_the_same_reports_give_the_same_output(tmp_path, capsys):
    a, b = _pair(tmp_path, qa_items(60), qa_items(60, lost={4, 9, 31}))
    assert _compare(capsys, a, b) == _compare(capsys, a, b)


def test_a_stricter_alpha_turns_a_regression_into_noise(tmp_path, capsys):
    # Six items of 60 lose their evidence: exact p = 2 / 2^6 = 0.03125.
    a, b = _pair(tmp_path, qa_items(60), qa_items(60, lost={1, 2, 3, 4, 5, 6}), floors=TIGHT)
    status, out = _compare(capsys, a, b)
    assert status == 1 and any("significant (p=0.0312)" in line for line in out if line.startswith("REGRESSION"))
    status, out = _compare(capsys, a, b, "--alpha", "0.01")
    assert status == 0 and out[-1] == "compare: OK"
    assert any(line.startswith("not a regression: retrievalRecall") for line in out)


def test_five_items_cannot_be_significant_so_the_fixed_margin_judges(tmp_path, capsys):
    # Five paired qa items: the smallest p-value any change of them can give is 0.0625 > 0.05.
    a, b = _pair(tmp_path, qa_items(5), qa_items(5, lost={0, 1, 2, 3, 4}))
    status, out = _compare(capsys, a, b)
    assert status == 1
    regression = next(line for line in out if line.startswith("REGRESSION retrievalRecall"))
    assert regression.endswith("; fixed margin: 5 paired items cannot reach alpha 0.05 (smallest p 0.0625)")


def test_floors_from_a_file_and_a_lineage_that_differs(tmp_path, capsys):
    a, b = _pair(tmp_path, qa_items(60), qa_items(60, lost={1, 2, 3, 4, 5, 6, 7, 8}))
    floors = tmp_path / "floors.json"
    floors.write_text(json.dumps({"retrievalRecallMargin": 0.5}))
    status, out = _compare(capsys, a, b, "--floors", str(floors))
    assert status == 0 and not any(line.startswith(("REGRESSION", "not a regression")) for line in out)
    other = report_of(qa_items(60, lost={1, 2, 3, 4, 5, 6, 7, 8}), models={"generate": "g2", "embed": "mock-embed"})
    write_report_json(Path(b), other)
    status, out = _compare(capsys, a, b)
    assert status == 0 and any(line.startswith("model lineage differs") for line in out)


def test_a_floor_failed_only_by_b_is_judged_too(tmp_path, capsys):
    a, b = _pair(tmp_path, qa_items(60), qa_items(60, lost=set(range(10))), floors={"retrievalRecall": 0.9})
    status, out = _compare(capsys, a, b)
    assert status == 1
    assert any(
        line.startswith("REGRESSION retrievalRecall 0.8333 fails its floor >= 0.9 (run A: 1); significant (p=")
        for line in out
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["a.json"], "required"),
        (["a.json", "b.json", "--alpha", "1.5"], "--alpha must be a number in (0, 1), got 1.5"),
        (["a.json", "b.json", "--alpha", "x"], "invalid float value"),
        (["missing.json", "b.json"], "missing.json"),
        (["a.json", "other.json"], "share no dataset version"),
        (["a.json", "b.json", "--floors", "bad.json"], "bad.json"),
    ],
)
def test_usage_errors_exit_2(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    _pair(tmp_path, qa_items(3), qa_items(3))
    write_report_json(tmp_path / "other.json", report_of(qa_items(3), version="v2"))
    (tmp_path / "bad.json").write_text('{"retrievalRecal": 1}')
    assert main(["compare", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_report_of_no_items_is_not_paired(tmp_path, capsys):
    a, b = _pair(tmp_path, [], [])
    status, out = _compare(capsys, a, b)
    assert status == 0
    assert "not paired: report A lists no items (a recorded summary); drops are judged by the fixed margin alone" in out


def test_the_console_command_exits_with_the_verdict(tmp_path):
    a, b = _pair(tmp_path, qa_items(40), qa_items(40, lost=set(range(12))))
    done = subprocess.run(
        [sys.executable, "-m", "pytest_groundeval.cli", "compare", a, b],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[-1] == "compare: REGRESSION"
