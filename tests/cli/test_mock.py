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
