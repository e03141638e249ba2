"""The core of pytest-groundeval, usable without pytest.

The data path, one sub-module each (docs/architecture.md):
dataset (``core.dataset``) -> items of one kind each (``core.kinds``) -> running an
item against a target (``core.runner``, ``pytest_groundeval.targets``) -> outcome
(``core.outcome``) -> metrics (``core.metrics``) -> gate (``core.gate``) -> report
(``core.report``), with ``core.render`` for their plain-text form.

No module under ``core`` imports pytest (a test enforces it), and this package
imports nothing on load.
"""
