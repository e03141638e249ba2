"""Fixtures of the outputs tests beyond the shared saved reports (tests/_support/saved_reports.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests._support.saved_reports import _load


@pytest.fixture
def attribution_report() -> dict[str, Any]:
    """A citation run with a judge and human labels: datasets/attribution under ``--eval-judge=mock``
    (60 items, 12 failing; each paragraph's ``expectedVerdict`` beside the judge's verdict)."""
    return _load("report-attribution.json.gz")
