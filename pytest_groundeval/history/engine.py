"""SQLAlchemy engines for the history (docs/history.md): SQLite embedded, PostgreSQL for teams.

URLs are resolved by ``urls.resolve_url`` (re-exported here); ``create_history_engine``
opens one with the settings the readers and migrations rely on:

* SQLite: WAL journal (readers never block the writer, a killed writer loses
  nothing it committed), ``synchronous=NORMAL`` (durable against a killed
  process; only a power cut may lose the last commits), a busy timeout so two
  writer processes wait for each other instead of failing, foreign keys on, and
  ``BEGIN IMMEDIATE`` for write transactions so a writer takes the lock up front
  rather than failing to upgrade a read lock halfway.
* PostgreSQL: the psycopg 3 driver (``postgresql+psycopg``); plain transactions; client
  encoding UTF8, and a database whose encoding is not UTF8 (e.g. ``SQL_ASCII``) refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from .errors import HistoryError
from .urls import (
    BUSY_TIMEOUT_S,
    CLIENT_ENCODING,
    DEFAULT_PATH,
    ENV_VAR,
    SHORTHANDS,
    VALID_FORMS,
    check_server_encoding,
    configure_sqlite,
    describe_url,
    resolve_url,
    url_from_sources,
)

__all__ = [
    "BUSY_TIMEOUT_S",
    "DEFAULT_PATH",
    "ENV_VAR",
    "SHORTHANDS",
    "VALID_FORMS",
    "WRITE",
    "HistoryError",
    "create_history_engine",
    "describe_url",
    "is_postgres",
    "resolve_url",
    "url_from_sources",
]

WRITE = {"groundeval_write": True}
"""Execution options of a write transaction (``BEGIN IMMEDIATE`` on SQLite)."""


def create_history_engine(url: str, *, busy_timeout_s: float = BUSY_TIMEOUT_S) -> Engine:
    """An engine for a resolved history URL (see ``resolve_url``).

    The SQLite file's directory is created if missing.

    Raises:
        HistoryError: PostgreSQL without psycopg 3 installed, or a SQLite
            directory that cannot be created.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, Path(parsed.database or ""), busy_timeout_s)
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise HistoryError(
            f"history database {describe_url(url)} needs psycopg 3: pip install 'pytest-groundeval[postgres]'"
        ) from exc
    engine = create_engine(url, pool_size=2, max_overflow=2, connect_args={"client_encoding": CLIENT_ENCODING})

    @event.listens_for(engine, "connect")
    def _on_pg_connect(dbapi_connection: Any, _record: Any) -> None:
        check_server_encoding(dbapi_connection, url)

    return engine


def _sqlite_engine(url: str, path: Path, busy_timeout_s: float) -> Engine:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HistoryError(f"cannot create the history directory {path.parent}: {exc}") from exc
    engine = create_engine(url, connect_args={"timeout": busy_timeout_s})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Hand transaction control to the "begin" hook below instead of the sqlite3
        # module's implicit BEGIN (which would not cover DDL nor take the write lock early).
        dbapi_connection.isolation_level = None
        configure_sqlite(dbapi_connection, path, busy_timeout_s)

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        write = connection.get_execution_options().get("groundeval_write", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def is_postgres(engine: Engine) -> bool:
    """True for a PostgreSQL engine."""
    return engine.dialect.name == "postgresql"
