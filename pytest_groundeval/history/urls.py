"""History URLs (docs/history.md), parsed without SQLAlchemy so the pytest controller's writer stays light.

``resolve_url`` turns what a user wrote (``--eval-history``, ``--history``,
``GROUNDEVAL_HISTORY``) into a canonical URL: ``sqlite:///<absolute path>`` or
``postgresql+psycopg://…`` (the form SQLAlchemy takes; ``dbapi_conninfo`` gives
psycopg's own form).
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .errors import HistoryError as HistoryError  # re-exported: URL-only callers catch it from here

DEFAULT_PATH = Path(".groundeval") / "history.db"
"""Where the shorthand ``sqlite`` (or an empty value) stores the history, relative to the working directory."""

SHORTHANDS = frozenset({"", "sqlite", "default"})
"""Values meaning "the embedded default database" (``DEFAULT_PATH``)."""

ENV_VAR = "GROUNDEVAL_HISTORY"
"""Environment fallback for the history URL."""

BUSY_TIMEOUT_S = 30.0
"""How long a SQLite writer waits for another writer's lock before failing."""

VALID_FORMS = (
    "valid forms: 'sqlite' (the default, .groundeval/history.db), 'sqlite:///relative/path.db', "
    "'sqlite:////absolute/path.db', 'postgresql://user:password@host:port/database'"
)

PSYCOPG_SCHEME = "postgresql+psycopg"


def resolve_url(value: str | None, cwd: str | Path | None = None) -> str:
    """The canonical URL for a history setting.

    Args:
        value: What the user wrote; None or a ``SHORTHANDS`` value means
            ``<cwd>/.groundeval/history.db``. ``sqlite:///rel.db`` is relative to
            ``cwd``; ``postgresql://`` and ``postgres://`` map to the psycopg 3
            driver (``postgresql+psycopg://``).
        cwd: Directory relative SQLite paths are resolved against; the process's cwd by default.

    Returns:
        ``sqlite:///<absolute path>`` or ``postgresql+psycopg://…``.

    Raises:
        HistoryError: Not a URL, an unknown scheme, an in-memory SQLite database (a
            history must outlive the process), or another PostgreSQL driver than psycopg 3.
    """
    base = Path(cwd) if cwd is not None else Path.cwd()
    text = (value or "").strip()
    if text.lower() in SHORTHANDS:
        return f"sqlite:///{(base / DEFAULT_PATH).resolve()}"
    scheme, sep, rest = text.partition("://")
    if not sep or not scheme or " " in scheme:
        raise HistoryError(f"history URL {text!r} is not a database URL; {VALID_FORMS}")
    backend, _, driver = scheme.lower().partition("+")
    if backend == "sqlite":
        if driver not in ("", "pysqlite"):
            raise HistoryError(f"history URL {text!r}: SQLite driver {driver!r} is not supported; {VALID_FORMS}")
        database = rest[1:] if rest.startswith("/") else rest
        if not database or database == ":memory:":
            raise HistoryError(
                f"history URL {text!r} names an in-memory database, which is lost when the run ends; {VALID_FORMS}"
            )
        path = Path(database)
        if not path.is_absolute():
            path = base / path
        return f"sqlite:///{path.resolve()}"
    if backend in ("postgresql", "postgres"):
        if driver not in ("", "psycopg"):
            raise HistoryError(
                f"history URL {text!r}: driver {driver!r} is not supported; PostgreSQL history uses psycopg 3 "
                "(write postgresql://…)"
            )
        return f"{PSYCOPG_SCHEME}://{rest}"
    raise HistoryError(f"history URL {text!r}: unknown database {backend!r}; {VALID_FORMS}")


def is_database_url(value: str) -> bool:
    """Whether a ``--history`` value names a database (``scheme://…`` or a shorthand such as ``sqlite``).

    Anything else is the JSON file of runs ``--history`` named before it meant the
    database on every command: read as ``--trends FILE``, with a deprecation warning.
    """
    return "://" in value or value.strip().lower() in SHORTHANDS


def url_from_sources(flag: str | None, env: dict[str, str] | None = None) -> str | None:
    """The history setting from a flag value, else ``GROUNDEVAL_HISTORY``; None when neither is set."""
    if flag is not None:
        return flag
    environ = os.environ if env is None else env
    return environ.get(ENV_VAR)


def describe_url(url: str) -> str:
    """The URL with any password masked, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def sqlite_path(url: str) -> Path | None:
    """The file of a resolved SQLite URL; None for PostgreSQL."""
    return Path(url[len("sqlite:///") :]) if url.startswith("sqlite:///") else None


def dbapi_conninfo(url: str) -> str:
    """psycopg's connection string for a resolved PostgreSQL URL (``postgresql://…``)."""
    return "postgresql://" + url.partition("://")[2]


CLIENT_ENCODING = "UTF8"
"""The client encoding every PostgreSQL connection asks for: text and JSON are exchanged as UTF-8."""


def check_server_encoding(connection: Any, url: str) -> None:
    """Refuse a PostgreSQL database whose encoding is not UTF-8 (docs/history.md, "PostgreSQL").

    ``connection`` is a psycopg connection opened with ``client_encoding=UTF8``.
    ``SQL_ASCII`` stores bytes unchecked, so answers written by one client could
    not be read back by another; any other encoding cannot hold every answer.

    Raises:
        HistoryError: the database's encoding is not UTF8; the message names it.
    """
    cursor = connection.cursor()
    try:
        cursor.execute("SHOW server_encoding")
        row = cursor.fetchone()
    finally:
        cursor.close()
    encoding = row[0] if row else None
    if isinstance(encoding, bytes):
        encoding = encoding.decode("ascii", "replace")
    if str(encoding).upper().replace("-", "") != CLIENT_ENCODING:
        raise HistoryError(
            f"history database {describe_url(url)} has encoding {encoding}, but the history needs UTF8: "
            "create it with CREATE DATABASE name ENCODING 'UTF8' TEMPLATE template0 (docs/history.md)"
        )


def enable_wal(cursor: Any, path: Path | str, timeout_s: float) -> None:
    """Switch a SQLite file to WAL, waiting for other processes: the switch does not use the busy timeout.

    SQLite answers ``database is locked`` at once, without its busy handler, when
    another connection holds a lock while this one changes the journal mode (two
    processes creating one fresh database). WAL is a property of the file, so
    after one process switched it the others only read the mode.

    Raises:
        HistoryError: Still locked after ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    pause = 0.005
    while True:
        try:
            mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise HistoryError(f"history database {path}: still locked after {timeout_s:.0f} s") from exc
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


def configure_sqlite(connection: sqlite3.Connection, path: Path | str, timeout_s: float) -> None:
    """The settings every history connection to SQLite gets (docs/history.md).

    Transactions are begun explicitly (``isolation_level = None``); busy timeout;
    WAL; ``synchronous = NORMAL`` (durable against a killed process, only a power
    cut may lose the last commits); foreign keys on.
    """
    connection.isolation_level = None
    cursor = connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
        enable_wal(cursor, path, timeout_s)
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()
