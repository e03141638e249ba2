"""``groundeval mock`` and ``python -m pytest_groundeval.mock`` (docs/mock.md)."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from pytest_groundeval.cli.mock import _parser
from pytest_groundeval.mock import DEFAULT_LOG_LIMIT, MockProvider


def test_log_limit_defaults_to_the_providers_bound():
    assert MockProvider().log_limit == DEFAULT_LOG_LIMIT == _parser().parse_args([]).log_limit
    assert _parser().parse_args(["--log-limit", "5"]).log_limit == 5


@pytest.mark.parametrize("arg", ["-1", "many"])
def test_cli_log_limit_rejects_a_bad_value(arg, capsys):
    from pytest_groundeval.cli.mock import main

    with pytest.raises(SystemExit) as exc:
        main(["--log-limit", arg])
    assert exc.value.code == 2 and "--log-limit" in capsys.readouterr().err


def test_cli_serves_until_terminated():
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_groundeval.mock", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        base_url = line.rsplit(" ", 1)[-1].strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        assert httpx.get(base_url + "/models").status_code == 200
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
        process.stdout.close()
        process.stderr.close()


def test_noise_and_seed_default_to_no_noise_and_parse():
    args = _parser().parse_args([])
    assert (args.noise, args.seed) == (0.0, 0)
    args = _parser().parse_args(["--noise", "0.25", "--seed", "-3"])
    assert (args.noise, args.seed) == (0.25, -3)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--noise", "1.5"], "expected a probability in [0, 1], got '1.5'"),
        (["--noise", "nan"], "expected a probability in [0, 1], got 'nan'"),
        (["--noise", "some"], "expected a probability in [0, 1], got 'some'"),
        (["--seed", "0.5"], "expected a whole number, got '0.5'"),
    ],
)
def test_cli_noise_and_seed_reject_a_bad_value(args, message, capsys):
    from pytest_groundeval.cli.mock import main

    with pytest.raises(SystemExit) as exc:
        main(args)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and args[0] in err and message in err


def test_cli_serves_noisy_generations_with_noise_and_seed():
    from pytest_groundeval.mock import NoiseSettings, generate_answer, noised_answer

    messages = [{"role": "user", "content": "[S1] Opened in 2021.\n[S2] Forty staff.\nQuestion: When?"}]
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_groundeval.mock", "--port", "0", "--noise", "1", "--seed", "9"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = process.stdout.readline().rsplit(" ", 1)[-1].strip()
        for attempt in ("0", "1"):
            response = httpx.post(
                base_url + "/chat/completions",
                json={"model": "m", "messages": messages},
                headers={"X-Groundeval-Attempt": attempt},
            )
            expected, applied = noised_answer(messages, generate_answer(messages), NoiseSettings(1.0, 9), int(attempt))
            assert applied is not None
            assert response.json()["choices"][0]["message"]["content"] == expected
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
        process.stdout.close()
        process.stderr.close()
