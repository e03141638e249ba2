"""``groundeval calibrate`` against the mock judge (docs/citation.md, "Calibration"): figures and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_groundeval.cli import main as groundeval
from tests._support.datasets import write_dataset

SOURCE = "Alpha bravo charlie delta echo foxtrot."
# (paragraph, the mock judge's verdict by word coverage of SOURCE, the human label): the pairs of
# tests/core/test_calibration.py, so agreement 5/8 and κ 0.4 by hand.
PARAGRAPHS = [
    ("Alpha bravo charlie delta [1].", "supported", "supported"),
    ("Bravo charlie delta echo [1].", "supported", "supported"),
    ("Alpha bravo kilo lima [1].", "partial", "supported"),
    ("Kilo lima mike november [1].", "unsupported", "unsupported"),
    ("Charlie delta echo foxtrot [1].", "supported", "unsupported"),
    ("Echo foxtrot oscar papa [1].", "partial", "partial"),
    ("Oscar papa quebec romeo [1].", "unsupported", "partial"),
    ("Alpha delta echo foxtrot [1].", "supported", "supported"),
]


def labelled_dataset(root: Path, *, humans_agree: bool = False) -> Path:
    """Eight one-paragraph citation items with recorded answers and a human label each, plus one unlabelled.

    ``humans_agree``: label each paragraph with the mock's own verdict (agreement 1).
    """
    items = [
        {
            "id": f"cite-{i}",
            "kind": "citation",
            "response": {"answer": text, "sources": [{"marker": "1", "text": SOURCE}]},
            "paragraphLabels": [{"index": 0, "expectedVerdict": mock if humans_agree else human}],
        }
        for i, (text, mock, human) in enumerate(PARAGRAPHS)
    ]
    items.append({"id": "cite-unlabelled", "kind": "citation",
                  "response": {"answer": "Alpha bravo [1].", "sources": [{"marker": "1", "text": SOURCE}]}})  # fmt: skip
    return write_dataset(root, items)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return labelled_dataset(tmp_path_factory.mktemp("calibrate"))


def calibrate(*args: str) -> int:
    return groundeval(["calibrate", "--resamples", "400", *args])


def test_figures_by_hand_and_the_judge_asked_only_about_labelled_paragraphs(dataset, capsys):
    assert calibrate("--dataset", str(dataset), "--judge", "mock", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["paragraphs"] == 8 and out["labels"] == 8 and out["uncitedLabels"] == 0
    assert out["judgeAgreement"]["value"] == 5 / 8
    assert out["judgeKappa"]["value"] == pytest.approx(0.4)
    assert out["judgeConfusion"] == {
        "supported": {"supported": 3, "partial": 1},
        "partial": {"partial": 1, "unsupported": 1},
        "unsupported": {"supported": 1, "unsupported": 1},
    }
    assert out["perVerdict"]["supported"] == {"precision": 0.75, "recall": 0.75, "support": 4, "predicted": 4}
    assert out["perVerdict"]["partial"]["precision"] == 0.5 and out["perVerdict"]["unsupported"]["recall"] == 0.5
    # The unlabelled item was never sent: 8 replies, each with the mock's usage.
    (usage,) = out["usage"].values()
    assert usage["replies"] == 8 and usage["repliesWithoutUsage"] == 0 and usage["promptTokens"] > 0
    assert out["checks"] == [] and out["passed"] is True


def test_exit_0_when_every_lower_bound_clears_its_minimum(tmp_path, capsys):
    agreeing = labelled_dataset(tmp_path / "agree", humans_agree=True)
    assert calibrate("--dataset", str(agreeing), "--judge", "mock", "--min-kappa", "0.9", "--min-agreement", "0.6") == 0
    out = capsys.readouterr().out
    assert "judgeKappa       PASS  lower bound 1.0000 >= 0.9000" in out and out.rstrip().endswith("calibrate: PASS")
    # Agreement is a share of paragraphs: Wilson's interval, as a run's. Eight of eight agreeing reach down
    # to 0.6756 (Wilson 1927), so eight paragraphs do not show agreement of 0.9 (a bootstrap would say [1, 1]).
    assert "judgeAgreement   PASS  lower bound 0.6756 >= 0.6000" in out
    assert calibrate("--dataset", str(agreeing), "--judge", "mock", "--min-agreement", "0.9") == 1
    assert "judgeAgreement   FAIL  lower bound 0.6756 < 0.9000" in capsys.readouterr().out


def test_exit_1_when_kappa_lower_bound_is_under_its_minimum_though_the_point_is_not(dataset, capsys):
    assert calibrate("--dataset", str(dataset), "--judge", "mock", "--min-kappa", "0.3") == 1
    out = capsys.readouterr().out
    assert "judgeKappa       FAIL  lower bound" in out and "point 0.4000" in out
    assert "judgeAgreement" not in out.split("confusion")[1]  # no agreement minimum, no agreement check
    assert out.rstrip().endswith("calibrate: FAIL")


def test_exit_1_when_agreement_lower_bound_is_under_its_minimum(dataset, capsys):
    assert calibrate("--dataset", str(dataset), "--judge", "mock", "--min-agreement", "0.5", "--min-kappa", "-1") == 1
    out = capsys.readouterr().out
    assert "judgeAgreement   FAIL  lower bound" in out and "point 0.6250" in out
    assert "judgeKappa       PASS" in out


def test_exit_1_when_the_judge_answers_nothing(dataset, capsys):
    code = calibrate("--dataset", str(dataset), "--judge", "mock", "--judge-model", "mock-judge+fault=prose")
    assert code == 1
    out = capsys.readouterr().out
    assert "judge            FAIL  the judge answered none of the 8 paragraph(s) (0 unjudged, 8 unparseable)" in out


def test_the_bootstrap_is_reproducible_and_seeded(dataset, capsys):
    runs = []
    for seed in ("0", "0", "1"):
        assert calibrate("--dataset", str(dataset), "--judge", "mock", "--json", "--seed", seed) == 0
        out = json.loads(capsys.readouterr().out)
        runs.append((out["judgeAgreement"], out["judgeKappa"]))
    assert runs[0] == runs[1] and runs[0] != runs[2]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "no judge: give --judge-url"),
        (["--judge", "gpt"], "the only value is mock"),
        (["--judge", "mock", "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m"], "both given"),
        (["--judge-url", "http://127.0.0.1:9/v1"], "--judge-url needs --judge-model"),
        (["--judge", "mock", "--judge-model", "gpt-4o"], "--judge-model: 'gpt-4o' is not a judge of the mock provider"),
        (["--judge-url", "http://u:p@127.0.0.1:9/v1", "--judge-model", "m"], "carries credentials"),
        (["--judge", "mock", "--min-kappa", "1.5"], "--min-kappa 1.5: expected a number in [-1, 1]"),
        (["--judge", "mock", "--min-agreement", "-0.1"], "--min-agreement -0.1: expected a number in [0, 1]"),
        (["--judge", "mock", "--confidence", "1"], "--confidence 1.0: expected a number in (0, 1)"),
        (["--judge", "mock", "--resamples", "0"], "--resamples 0: expected a whole number >= 1"),
        (["--judge", "mock", "--judge-api-key", "k"], "unrecognized arguments: --judge-api-key"),
    ],
)
def test_usage_errors_are_exit_2(dataset, capsys, args, message):
    assert calibrate("--dataset", str(dataset), *args) == 2
    assert message in capsys.readouterr().err


def test_a_dataset_without_labels_or_that_does_not_load_is_exit_2(tmp_path, dataset_dir, capsys):
    assert calibrate("--dataset", str(dataset_dir), "--judge", "mock") == 2
    assert "carries paragraphLabels" in capsys.readouterr().err
    assert calibrate("--dataset", str(tmp_path / "nowhere"), "--judge", "mock") == 2
    assert "manifest.json" in capsys.readouterr().err


def test_the_key_comes_from_the_environment_only_and_is_never_printed(dataset, capsys, monkeypatch):
    # A judge written here: records each request's Authorization header and answers "supported"
    # with no usage at all (as some proxies do): 8 replies whose tokens are unknown, not 0.
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []

    class Judge(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append(self.headers.get("Authorization", ""))
            said = json.dumps({"verdict": "supported", "rationale": "looks fine"})
            body = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": said}}]}).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Judge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = "sk-calibrate-secret-51c0"
    monkeypatch.setenv("GROUNDEVAL_JUDGE_API_KEY", key)
    try:
        code = calibrate("--dataset", str(dataset), "--judge-url", f"http://127.0.0.1:{server.server_address[1]}/v1",
                         "--judge-model", "echo")  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    captured = capsys.readouterr()
    assert code == 0 and seen == [f"Bearer {key}"] * 8
    assert key not in captured.out + captured.err
    assert "judge tokens echo: prompt 0, completion 0 (8 replies; 8 without usage: tokens unknown)" in captured.out
