"""SQLite storage of the reference target: tenants, API keys, documents, chunks, records.

One database file, ``<data_dir>/reference.sqlite3``, in WAL mode so that
``groundeval reference create-key`` can add a key while the server runs.

Threading choice: the server never touches the connection from the event loop.
Every call goes through :class:`AsyncStore`, which runs it on a single dedicated
worker thread. Serialising on one thread keeps each call's read-modify-write
(the per-tenant transaction clock, idempotent ingest) atomic without locks, and
the calls are short indexed queries, so one thread is not a bottleneck for a
reference server.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

DB_FILE_NAME = "reference.sqlite3"
"""The database file inside the data dir."""

BOOTSTRAP_TENANT = "bootstrap"
"""Tenant id that owns the key handed over in ``GROUNDEVAL_API_KEY`` (docs/target-contract.md)."""

KEY_PREFIX = "ge_"
"""Prefix of keys made by ``create-key`` (any string is accepted as a bootstrap key)."""

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE tenants (
        id TEXT PRIMARY KEY,
        created_ms INTEGER NOT NULL,
        last_tx INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE api_keys (
        key_hash TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        created_ms INTEGER NOT NULL
    );
    CREATE TABLE documents (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        label TEXT,
        format TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        canonical TEXT NOT NULL,
        tx_start INTEGER NOT NULL,
        current INTEGER NOT NULL DEFAULT 1,
        UNIQUE (tenant_id, name, content_hash)
    );
    CREATE INDEX documents_current ON documents (tenant_id, current, label);
    CREATE TABLE chunks (
        document_id TEXT NOT NULL REFERENCES documents(id),
        ord INTEGER NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        text TEXT NOT NULL,
        rendered TEXT NOT NULL,
        embedding BLOB NOT NULL,
        PRIMARY KEY (document_id, ord)
    );
    CREATE TABLE record_versions (
        version INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        record_id TEXT NOT NULL,
        label TEXT NOT NULL,
        properties TEXT NOT NULL,
        valid_start TEXT,
        valid_end TEXT,
        valid_start_ms INTEGER,
        valid_end_ms INTEGER,
        tx_start INTEGER NOT NULL,
        tx_end INTEGER
    );
    CREATE INDEX record_versions_label ON record_versions (tenant_id, label, tx_start);
    CREATE INDEX record_versions_record ON record_versions (tenant_id, record_id, tx_start);
    """,
)
"""Schema scripts; ``PRAGMA user_version`` counts how many have run."""

T = TypeVar("T")


def now_ms() -> int:
    """Wall-clock time as integer milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


def hash_key(key: str) -> str:
    """The stored form of an API key: sha256 hex of its UTF-8 bytes (keys are never stored)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def open_database(data_dir: Path) -> sqlite3.Connection:
    """Open (creating if needed) the data dir's database and run pending migrations.

    Args:
        data_dir: directory holding ``reference.sqlite3``; created when missing.

    Returns:
        A connection in WAL mode with foreign keys on, usable from any one thread
        at a time (``check_same_thread=False``; callers serialise access).
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(data_dir / DB_FILE_NAME, check_same_thread=False, isolation_level=None, timeout=10.0)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=NORMAL")
    migrate(conn)
    return conn


def migrate(conn: sqlite3.Connection) -> int:
    """Run the schema scripts not yet applied. Returns the resulting schema version."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for index in range(version, len(MIGRATIONS)):
            for statement in MIGRATIONS[index].split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(MIGRATIONS)


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` when the block raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def ensure_tenant(conn: sqlite3.Connection, tenant_id: str) -> None:
    """Create the tenant row if it does not exist (inside the caller's transaction)."""
    conn.execute(
        "INSERT OR IGNORE INTO tenants (id, created_ms) VALUES (?, ?)",
        (tenant_id, now_ms()),
    )


def next_tx(conn: sqlite3.Connection, tenant_id: str) -> int:
    """Allocate the tenant's next transaction time (ms since epoch).

    ``max(now, last + 1)``: a per-tenant monotonic clock, so two writes in the
    same millisecond get distinct, ordered times and both stay in history.
    Must run inside a write transaction.
    """
    row = conn.execute(
        "UPDATE tenants SET last_tx = max(?, last_tx + 1) WHERE id = ? RETURNING last_tx",
        (now_ms(), tenant_id),
    ).fetchone()
    if row is None:
        raise KeyError(f"unknown tenant {tenant_id!r}")
    return int(row[0])


def current_tx(conn: sqlite3.Connection, tenant_id: str) -> int:
    """The transaction time "now" means for ``tenant_id``: ``max(now, last_tx)`` in ms.

    ``next_tx`` may run ahead of the wall clock when writes come faster than one
    per millisecond; "now" must still see every write already acknowledged, so a
    read with no explicit transaction time uses the later of the two clocks.
    """
    row = conn.execute("SELECT last_tx FROM tenants WHERE id = ?", (tenant_id,)).fetchone()
    return max(now_ms(), int(row[0]) if row else 0)


def add_key(conn: sqlite3.Connection, tenant_id: str, key: str) -> None:
    """Register ``key`` (by its hash) for ``tenant_id``, creating the tenant; idempotent."""
    with write_transaction(conn):
        ensure_tenant(conn, tenant_id)
        conn.execute(
            "INSERT OR IGNORE INTO api_keys (key_hash, tenant_id, created_ms) VALUES (?, ?, ?)",
            (hash_key(key), tenant_id, now_ms()),
        )


def create_tenant_key(conn: sqlite3.Connection) -> tuple[str, str]:
    """Make a new tenant and a fresh random key for it. Returns ``(tenant_id, key)``."""
    tenant_id = "t_" + uuid.uuid4().hex[:16]
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    add_key(conn, tenant_id, key)
    return tenant_id, key


def tenant_for_key(conn: sqlite3.Connection, key: str) -> str | None:
    """The tenant owning ``key``, or None when the key is unknown."""
    row = conn.execute("SELECT tenant_id FROM api_keys WHERE key_hash = ?", (hash_key(key),)).fetchone()
    return None if row is None else str(row[0])


@dataclass(frozen=True)
class ChunkRow:
    """A stored chunk as retrieval sees it."""

    document_id: str
    document_name: str
    ord: int
    start: int
    """UTF-8 byte offset of the chunk in its document's canonical text."""
    end: int
    """Exclusive UTF-8 byte end offset."""
    text: str
    """The canonical-text slice ``[start, end)``."""
    rendered: str
    """How the chunk is shown to the generator (one line, see ``retrieval.render_chunk``)."""
    embedding: bytes
    """float32 little-endian vector."""


@dataclass(frozen=True)
class NewChunk:
    """A chunk about to be stored."""

    start: int
    end: int
    text: str
    rendered: str
    embedding: bytes


def find_document(conn: sqlite3.Connection, tenant_id: str, name: str, content_hash: str) -> tuple[str, int] | None:
    """``(documentId, txStart)`` of an ingested (tenant, name, hash), else None."""
    row = conn.execute(
        "SELECT id, tx_start FROM documents WHERE tenant_id = ? AND name = ? AND content_hash = ?",
        (tenant_id, name, content_hash),
    ).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def activate_document(conn: sqlite3.Connection, tenant_id: str, name: str, content_hash: str) -> tuple[str, int] | None:
    """Make an ingested (tenant, name, hash) the current version of ``name``.

    Returns:
        ``(documentId, txStart)`` as first stored, or None when that version was never ingested.
    """
    with write_transaction(conn):
        existing = find_document(conn, tenant_id, name, content_hash)
        if existing is not None:
            conn.execute(
                "UPDATE documents SET current = (id = ?) WHERE tenant_id = ? AND name = ?",
                (existing[0], tenant_id, name),
            )
        return existing


def insert_document(
    conn: sqlite3.Connection,
    tenant_id: str,
    *,
    name: str,
    label: str | None,
    format: str,
    content_hash: str,
    canonical: str,
    chunks: list[NewChunk],
) -> tuple[str, int]:
    """Store a document version and its chunks, making it the current version of ``name``.

    Idempotent on (tenant, name, content hash): when that version exists already
    (e.g. a concurrent identical ingest won the race), it becomes current again
    and its original id and tx time are returned.

    Returns:
        ``(documentId, txStart)``.
    """
    with write_transaction(conn):
        existing = find_document(conn, tenant_id, name, content_hash)
        conn.execute("UPDATE documents SET current = 0 WHERE tenant_id = ? AND name = ?", (tenant_id, name))
        if existing is not None:
            conn.execute("UPDATE documents SET current = 1 WHERE id = ?", (existing[0],))
            return existing
        document_id = "doc_" + uuid.uuid4().hex
        tx = next_tx(conn, tenant_id)
        conn.execute(
            "INSERT INTO documents (id, tenant_id, name, label, format, content_hash, canonical, tx_start)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (document_id, tenant_id, name, label, format, content_hash, canonical, tx),
        )
        conn.executemany(
            'INSERT INTO chunks (document_id, ord, start, "end", text, rendered, embedding) VALUES (?, ?, ?, ?, ?, ?, ?)',
            [(document_id, i, c.start, c.end, c.text, c.rendered, c.embedding) for i, c in enumerate(chunks)],
        )
        return document_id, tx


def current_chunks(conn: sqlite3.Connection, tenant_id: str, label: str | None) -> list[ChunkRow]:
    """Chunks of the tenant's current documents, restricted to ``label`` unless it is None.

    Ordered by document name, then chunk order, so ranking ties break deterministically.
    """
    sql = (
        'SELECT d.id, d.name, c.ord, c.start, c."end", c.text, c.rendered, c.embedding'
        " FROM chunks c JOIN documents d ON d.id = c.document_id"
        " WHERE d.tenant_id = ? AND d.current = 1"
    )
    params: list[Any] = [tenant_id]
    if label is not None:
        sql += " AND d.label = ?"
        params.append(label)
    sql += " ORDER BY d.name, c.ord"
    return [ChunkRow(*row) for row in conn.execute(sql, params)]


class AsyncStore:
    """The database as the event loop uses it: every call runs on one dedicated thread.

    Args:
        data_dir: the server's data dir.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="groundeval-db")
        self._conn: sqlite3.Connection | None = None

    async def open(self) -> None:
        """Open the database and run migrations (on the DB thread)."""
        self._conn = await self._submit(open_database, self.data_dir)

    async def run(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``func(conn, *args, **kwargs)`` on the DB thread and return its result."""
        if self._conn is None:
            raise RuntimeError("store is not open")
        return await self._submit(func, self._conn, *args, **kwargs)

    async def close(self) -> None:
        """Close the connection and stop the DB thread."""
        if self._conn is not None:
            await self._submit(self._conn.close)
            self._conn = None
        self._executor.shutdown(wait=True)

    async def _submit(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: func(*args, **kwargs))
