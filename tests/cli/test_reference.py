"""``groundeval reference`` (docs/target-contract.md): its options and what it refuses before serving.

The server it starts: tests/reference.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_groundeval.cli._args import UsageError
from pytest_groundeval.cli.reference import config_from_args


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (
            [],
            {"GROUNDEVAL_VERIFY_EXECUTOR": "gpu"},
            "GROUNDEVAL_VERIFY_EXECUTOR must be one of process, thread, inline, got 'gpu'",
        ),
        (["--verify-workers", "0"], {}, "--verify-workers must be at least 1, got 0"),
        ([], {"GROUNDEVAL_VERIFY_WORKERS": "0"}, "--verify-workers must be at least 1, got 0"),
    ],
)
def test_bad_verification_options_are_usage_errors(argv: list[str], env: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        config_from_args(["--llm-url", "http://127.0.0.1:9/v1", *argv], env)


def test_verification_options_from_flags_and_env() -> None:
    config = config_from_args(["--llm-url", "u", "--verify-executor", "thread"], {"GROUNDEVAL_VERIFY_WORKERS": "3"})
    assert (config.verify_executor, config.verify_workers) == ("thread", 3)
    assert config_from_args(["--llm-url", "u"], {}).verify_executor == "process"


def test_cli_refuses_to_start_without_a_provider_url(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GROUNDEVAL_", "OPENAI_"))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest_groundeval.reference", "--data-dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "GROUNDEVAL_LLM_URL" in result.stderr
