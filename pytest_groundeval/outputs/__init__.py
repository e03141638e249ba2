"""Outputs made from a saved report: the HTML page and the Markdown gate table.

Everything here works on a report's JSON (``pytest_groundeval.core.report``) with no
pytest import, so the ``groundeval`` CLI and the plugin share it (docs/ci.md). Merging
a sharded run's reports is ``core.shard_merge``; the shards themselves are ``core.sharding``.
"""

from .html import render_html
from .markdown import render_markdown

__all__ = [
    "render_html",
    "render_markdown",
]
