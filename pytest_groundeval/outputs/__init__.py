"""Outputs made from a saved report: the HTML page, the Markdown gate table, and shard merging (the shards
themselves are ``core.sharding``).

Everything here works on a report's JSON (``pytest_groundeval.core.report``) with no
pytest import, so the ``groundeval`` CLI and the plugin share it (docs/ci.md).
"""

from .html import render_html
from .markdown import render_markdown
from .merge import MergeError, merge_reports

__all__ = [
    "MergeError",
    "merge_reports",
    "render_html",
    "render_markdown",
]
