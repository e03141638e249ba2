"""datasets/v1 tells a bag-of-words verifier from a careful one (issue 19, "Gates that tell targets apart").

The bag-of-words target is this file run as a script: the reference server with
its claim verifier replaced by :func:`bag_of_words` (a claim is supported when
every content word of it occurs in the evidence it cites: the first thing a
reasonable new target does). Everything else (retrieval, the mock's
generation and decomposition) is the reference target's. On v1 as it stood
at 4e1a432 that target passed every gate; the role swaps (tag ``role_swap``:
two names of a true sentence exchanged, the same words with the opposite
meaning) are what it cannot see, so on v1 now it fails the
``falsehoodRejection`` floor, and only that.

The run is one subprocess per session, like the main job (tests/conftest.py).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
V1 = REPO / "datasets" / "v1"


def bag_of_words(claims: Sequence[tuple[str, Sequence[str]]], evidence: Mapping[str, str]) -> list:
    """Verdicts by the bag-of-words rule: supported when all the claim's content words occur in its cited spans.

    Same signature as ``reference.verify.verify_claims`` (``(claim text,
    markers)`` per claim; marker → cited span text), so it can stand in for it.
    A claim citing no known marker is unsupported, as in the reference.
    """
    from pytest_groundeval.core.contract import strip_markers
    from pytest_groundeval.core.scoring import content_tokens, tokenize
    from pytest_groundeval.reference.verify import ClaimCheck

    checks = []
    for text, markers in claims:
        cited = [evidence[m] for m in dict.fromkeys(markers) if m in evidence]
        words = {token for span in cited for token in tokenize(span)}
        content = content_tokens(strip_markers(text))
        supported = bool(cited) and bool(content) and all(word in words for word in content)
        checks.append(ClaimCheck("supported" if supported else "unsupported", "bag of words"))
    return checks


def serve(argv: list[str]) -> int:
    """Run the reference server with :func:`bag_of_words` as its verifier, verifying on the event loop."""
    from pytest_groundeval.cli import reference as cli
    from pytest_groundeval.reference import app

    app.verify_claims = bag_of_words  # the server calls it by this name; "inline" keeps it in this process
    return cli.main([*argv, "--verify-executor", "inline"])


@pytest.fixture(scope="session")
def bag_of_words_job(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """``pytest --eval-dataset=datasets/v1`` against the bag-of-words target, once per session, as a subprocess."""
    out = tmp_path_factory.mktemp("bag-of-words-job")
    report = out / "report.json"
    spawn = f"{shlex.quote(sys.executable)} {shlex.quote(__file__)} --port {{port}} --data-dir {{data_dir}}"
    command = [
        sys.executable, "-m", "pytest", "--rootdir", str(REPO), "-p", "no:cacheprovider", "-p", "no:benchmark", "-q",
        "-p", "no:hypothesispytest", "-p", "no:anyio", "-p", "no:platformdirs",  # see NO_THIRD_PARTY_PLUGINS in tests/plugin/conftest.py
        f"--eval-dataset={V1}", f"--eval-spawn={spawn}", f"--eval-report={report}", "--eval-no-step-summary",
    ]  # fmt: skip
    result = subprocess.run(command, cwd=out, capture_output=True, text=True, timeout=300)
    return {"result": result, "report": report}


def _gate_line(stdout: str, metric: str) -> str:
    return next((line for line in stdout.splitlines() if line.startswith(metric + " ")), "")


@pytest.mark.xdist_group("main_job")
def test_a_bag_of_words_verifier_fails_the_falsehood_floor_on_v1_and_nothing_else(bag_of_words_job) -> None:
    from pytest_groundeval.core.report import read_report

    result = bag_of_words_job["result"]
    output = result.stdout[-4000:] + result.stderr[-2000:]
    assert bag_of_words_job["report"].exists(), output
    assert result.returncode == 1, output
    assert "gate: FAIL" in result.stdout, output
    assert " FAIL " in _gate_line(result.stdout, "falsehoodRejection"), output
    for metric in ("retrievalRecall", "claimSupportPrecision", "claimSupportRecall", "temporalAccuracy", "errors"):
        assert " PASS " in _gate_line(result.stdout, metric), output

    measured = read_report(bag_of_words_job["report"])
    assert measured.metrics.errors == 0
    tags = {item["id"]: item["tags"] for item in _manifest_items()}
    adversarial = [item for item in measured.items if item.kind == "adversarial"]
    swaps = [item for item in adversarial if "role_swap" in tags[item.id]]
    others = [item for item in adversarial if "role_swap" not in tags[item.id]]
    # Without the role swaps it rejects every planted falsehood, as it did on v1 at 4e1a432 ...
    assert others and all(item.falsehood_supported is False for item in others)
    # ... and it supports most role swaps: the same words as the cited sentence, in another order.
    supported = sum(item.falsehood_supported is True for item in swaps)
    assert len(swaps) >= 60 and supported >= 0.8 * len(swaps), (supported, len(swaps))
    assert measured.metrics.falsehood_rejection < 0.95


def _manifest_items() -> list[dict]:
    import json

    return json.loads((V1 / "manifest.json").read_text(encoding="utf-8"))["items"]


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
