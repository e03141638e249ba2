"""Run history (docs/history.md): every run, item and judgment in SQLite or PostgreSQL.

No pytest import anywhere in this package. The pytest controller writes through
``HistoryWriter``/``RunRecorder`` (``writer.py``: the database driver only, no
SQLAlchemy import, so a run with history pays little for it); the ``groundeval
history`` and ``groundeval rejudge`` commands (``cli/history.py``, ``cli/rejudge.py``)
read through ``HistoryStore``, ``queries`` and ``rejudge`` (SQLAlchemy Core).
Names are imported on first use.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "ENV_VAR": "urls",
    "HistoryError": "errors",
    "resolve_url": "urls",
    "ITEM_CONTEXT_KEYS": "records",
    "compact_trace": "records",
    "SCHEMA_VERSION": "writer",
    "HistoryWriter": "writer",
    "RunRecorder": "writer",
    "new_run_id": "writer",
    "HistoryStore": "store",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
