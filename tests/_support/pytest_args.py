"""Command-line arguments shared by the runs of pytest that tests start (in process or not)."""

from __future__ import annotations

NO_THIRD_PARTY_PLUGINS = ("-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:anyio", "-p", "no:platformdirs")
"""Installed plugins the runs under test leave out: none of them is ours to test.

pytest-benchmark, where a developer has it installed, warns under xdist. Hypothesis's
plugin imports all of Hypothesis at the terminal summary of every session (about a
second of CPU per process here), anyio's imports trio (a few tenths), and platformdirs' (where a
developer has it, through pre-commit's virtualenv) a tenth: nothing for a
run in this process (they are already imported), but every worker of an ``-n 2`` run
and every subprocess run is a new process. The subprocess runs elsewhere
(tests/conftest.py ``main_job``, tests/datasets/test_v1_roleswap.py,
tests/plugin/test_never_green.py, test_history.py, test_xdist_internals.py) pass the same flags, and
the in-process runs of tests/cli and tests/history use this tuple.
"""
