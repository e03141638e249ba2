"""Builders and fixtures shared by test directories (tests/ mirrors the package; see docs/architecture.md).

Test modules import helpers from here as ``tests._support.<module>``: ``pyproject.toml`` puts the
repository root on ``sys.path`` (``pythonpath = ["."]``), which ``--import-mode=importlib`` does not.
Modules that define fixtures are registered once, for the whole suite, by ``pytest_plugins`` in
``tests/conftest.py``: one definition per fixture, so a session fixture (the PostgreSQL server) starts
at most once per process, and only when a test requests it.

- ``postgres``: a throwaway PostgreSQL server and the ``history_url`` / ``store`` fixtures (both backends).
- ``history_records``: item records shaped as the history stores them.
- ``saved_reports``: the saved reports of real runs (``tests/outputs/data``) and shard reports made from them.
- ``gate_reports``: reports built from chosen metric rates, for gating.
- ``sample_report``: one small report with an item of every kind, and writing edited wire reports.
- ``datasets``: a small valid dataset on disk with one item of every kind.
- ``metrics``: metrics folded part by part and merged, as xdist workers fold them.
- ``pytest_args``: the flags that leave installed third-party plugins out of the runs tests start.
- ``waiting``: `wait_for`, for what a server thread records after the client has its answer.
"""
