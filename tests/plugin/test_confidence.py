"""Confidence intervals through the plugin (docs/statistics.md): ``--eval-confidence`` and ``--eval-gate-on``
resolved and refused as options, every rate's interval in the summary and the report, the same
intervals under ``-n 0`` and ``-n 2``, and a run whose values pass its floors failing on their intervals."""

from __future__ import annotations

import json
import re

import pytest

from pytest_groundeval.plugin.options import resolve_settings

INTERVAL = r"\d\.\d{4} \[\d\.\d{4}, \d\.\d{4}\]"
"""A rate as the summary prints it: ``0.9906 [0.9812, 0.9961]``."""


def test_the_options_resolve_from_flag_ini_and_env(pytester, monkeypatch):
    settings = resolve_settings(pytester.parseconfig())
    assert (settings.confidence, settings.gate_on) == (0.95, "point")
    settings = resolve_settings(pytester.parseconfig("--eval-confidence=0.9", "--eval-gate-on=lower-bound"))
    assert (settings.confidence, settings.gate_on) == (0.9, "lower-bound")
    monkeypatch.setenv("GROUNDEVAL_CONFIDENCE", "0.8")
    monkeypatch.setenv("GROUNDEVAL_GATE_ON", "Lower-Bound")
    assert (resolve_settings(pytester.parseconfig()).confidence, resolve_settings(pytester.parseconfig()).gate_on) == (
        0.8,
        "lower-bound",
    )
    pytester.makeini("[pytest]\neval_confidence = 0.99\neval_gate_on = point\n")
    settings = resolve_settings(pytester.parseconfig())
    assert (settings.confidence, settings.gate_on) == (0.99, "point")  # ini over env
    assert resolve_settings(pytester.parseconfig("--eval-confidence=0.5")).confidence == 0.5  # the flag over ini


@pytest.mark.parametrize(
    ("given", "source"),
    [
        (("--eval-confidence=1",), "--eval-confidence"),
        (("--eval-confidence=0",), "--eval-confidence"),
        (("--eval-confidence=95",), "--eval-confidence"),
        (("--eval-confidence=-0.5",), "--eval-confidence"),
        (("--eval-confidence=nan",), "--eval-confidence"),
        (("--eval-confidence=high",), "--eval-confidence"),
    ],
)
def test_a_confidence_outside_zero_one_is_a_usage_error(pytester, given, source):
    value = given[0].split("=", 1)[1]
    with pytest.raises(pytest.UsageError, match=re.escape(f"'{value}' is not a valid value for {source}")) as caught:
        resolve_settings(pytester.parseconfig(*given))
    assert "strictly between 0 and 1" in str(caught.value)


def test_bad_values_from_ini_and_env_are_usage_errors(pytester, monkeypatch):
    monkeypatch.setenv("GROUNDEVAL_CONFIDENCE", "1.0")
    with pytest.raises(pytest.UsageError, match="'1.0' is not a valid value for env GROUNDEVAL_CONFIDENCE"):
        resolve_settings(pytester.parseconfig())
    monkeypatch.delenv("GROUNDEVAL_CONFIDENCE")
    pytester.makeini("[pytest]\neval_gate_on = upper-bound\n")
    with pytest.raises(
        pytest.UsageError, match="'upper-bound' is not a valid value for ini eval_gate_on: expected point"
    ):
        resolve_settings(pytester.parseconfig())


def test_a_run_with_a_bad_confidence_stops_before_any_item(run, smoke):
    result = run(f"--eval-dataset={smoke}", "--eval-confidence=1.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'1.5' is not a valid value for --eval-confidence: expected a confidence level*"])
    assert "passed" not in result.stdout.str()


def test_every_rate_has_its_interval_in_the_summary_and_the_report_the_same_under_n0_and_n2(run, pytester, smoke):
    reports = {}
    for mode in ("0", "2"):
        path = pytester.path / f"report-n{mode}.json"
        result = run(f"--eval-dataset={smoke}", f"--eval-report={path}", "-n", mode, "--eval-confidence=0.9")
        assert result.ret == 0, result.stdout.str()
        result.stdout.re_match_lines(
            [rf"retrievalRecall\s+{INTERVAL} >= n/a\s+SKIP", rf"falsehoodRejection\s+{INTERVAL} >= 0\.9500\s+PASS"]
        )
        result.stdout.re_match_lines([r"intervals: 90% confidence \(docs/statistics\.md\)"])
        reports[mode] = json.loads(path.read_text())
    plain, xdist = reports["0"], reports["2"]
    assert plain["confidenceLevel"] == xdist["confidenceLevel"] == 0.9
    # Byte for byte: each item is one cluster whatever process ran it, and the bootstrap is seeded.
    assert json.dumps(plain["confidence"]) == json.dumps(xdist["confidence"])
    rates = {name: interval for name, interval in plain["confidence"].items() if interval is not None}
    assert {"retrievalRecall", "falsehoodRejection", "temporalAccuracy"} <= set(rates)
    for name, interval in rates.items():
        assert interval["low"] <= plain["metrics"][name] <= interval["high"], name
    # Three adversarial items that all rejected their falsehood: Wilson's 90% interval of 3 of 3.
    # By hand: n/(n + z²) with z = 1.644854 at 90%, 3 / 5.705543 = 0.5258.
    assert rates["falsehoodRejection"] == {"low": pytest.approx(0.5258, abs=5e-5), "high": 1.0, "method": "wilson"}


def test_gate_on_lower_bound_fails_a_run_whose_values_pass(run, pytester, smoke):
    floors = pytester.path / "floors.json"
    # The smoke run rejects all 3 falsehoods: 1.0 passes 0.95; Wilson's 95% interval of 3 of 3 starts at 0.4385.
    floors.write_text(json.dumps({"falsehoodRejection": 0.95, "temporalAccuracy": None}))
    args = (f"--eval-dataset={smoke}", f"--eval-floors={floors}", "-k", "adversarial")
    assert run(*args).ret == 0
    report = pytester.path / "report.json"
    result = run(*args, "--eval-gate-on=lower-bound", f"--eval-report={report}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "falsehoodRejection*1.0000 [[]0.4385, 1.0000] >= 0.9500*FAIL  low end 0.4385 < 0.9500 (value 1.0000, "
            "95% interval [[]0.4385, 1.0000], wilson)",
            "note: --eval-gate-on=lower-bound: each floor is compared with its metric's interval's low end*",
            "gate: FAIL",
        ]
    )
    gate = json.loads(report.read_text())["gate"]
    assert gate["gateOn"] == "lower-bound" and gate["passed"] is False
    # groundeval gate re-applies what the run recorded, and can gate the same report on its values.
    from pytest_groundeval.cli import main as groundeval

    assert groundeval(["gate", "--report", str(report)]) == 1
    assert groundeval(["gate", "--report", str(report), "--gate-on", "point"]) == 0
    assert groundeval(["gate", "--report", str(report), "--confidence", "1.5"]) == 2
