"""Outputs made from a saved report: the HTML page, the Markdown gate table, and shard merging.

Everything here works on a report's JSON (``pytest_groundeval.core.report``) with no
pytest import, so the ``groundeval`` CLI and the plugin share it (docs/ci.md).
"""

from .html import render_html
from .markdown import render_markdown
from .merge import MergeError, ids_digest, merge_reports, parse_shard, shard_info, shard_of

__all__ = [
    "MergeError",
    "ids_digest",
    "merge_reports",
    "parse_shard",
    "render_html",
    "render_markdown",
    "shard_info",
    "shard_of",
]
