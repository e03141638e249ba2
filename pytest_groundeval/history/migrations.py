"""Schema versions and forward migrations of the history database (docs/history.md).

A history database outlives plugin versions, so its schema carries a version
(``schema_info.version``) and every older version has a migration to the next.
``ensure_schema`` runs on every open: it creates a fresh database at
``SCHEMA_VERSION``, migrates an older one step by step inside one transaction,
and refuses a newer one. Two processes opening the same database at once are
serialised: by SQLite's write lock (``BEGIN IMMEDIATE``) or a PostgreSQL
transaction-scoped advisory lock, so only one creates or migrates.

Versions:

* **1**, the first released schema: runs, items (no tool trace, no iteration
  count), item_tags, judgments (no coverage score, no judge model, no judging time).
* **2** (current): items gain ``tool_trace`` and ``iterations``; a ``tool_calls``
  table holds one row per tool-trace entry; judgments gain ``coverage_score``,
  ``judge_model`` and ``judged_ms``.

``V1_METADATA`` is version 1 frozen as it shipped; tests build a v1 database from
it and migrate it. Never edit a frozen version: add a new one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Connection,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    inspect,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.types import TypeEngine

from . import schema
from .engine import WRITE, HistoryError, describe_url, is_postgres

_LOCK_KEY = 0x67726E64  # "grnd": the advisory lock every groundeval writer takes to create or migrate

_JSON = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")

# --- version 1, frozen ---------------------------------------------------------------------

V1_METADATA = MetaData()
"""The first released schema (version 1), frozen."""

Table(
    "schema_info",
    V1_METADATA,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("version", Integer, nullable=False),
    Column("migrated_ms", BigInteger, nullable=False),
)
Table(
    "runs",
    V1_METADATA,
    Column("id", String(32), primary_key=True),
    Column("label", Text, nullable=True),
    Column("dataset_path", Text, nullable=True),
    Column("dataset_version", Text, nullable=True),
    Column("config", _JSON, nullable=False),
    Column("started_ms", BigInteger, nullable=False),
    Column("finished_ms", BigInteger, nullable=True),
    Column("interrupted", Boolean, nullable=True),
    Column("gate_passed", Boolean, nullable=True),
    Column("gate", _JSON, nullable=True),
    Column("metrics", _JSON, nullable=True),
    Index("ix_runs_started", "started_ms"),
    Index("ix_runs_label", "label"),
)
Table(
    "items",
    V1_METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("item_id", Text, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("passed", Boolean, nullable=False),
    Column("error", Text, nullable=True),
    Column("detail", Text, nullable=False),
    Column("trace_id", Text, nullable=True),
    Column("question", Text, nullable=True),
    Column("answer", Text, nullable=True),
    Column("tags", _JSON, nullable=False),
    Column("sources", _JSON, nullable=True),
    Column("trace", _JSON, nullable=True),
    Column("latency_ms", Float, nullable=True),
    Column("prompt_tokens", Integer, nullable=True),
    Column("completion_tokens", Integer, nullable=True),
    Column("outcome", _JSON, nullable=False),
    Column("recorded_ms", BigInteger, nullable=False),
    UniqueConstraint("run_id", "item_id", name="uq_items_run_item"),
)
Table(
    "item_tags",
    V1_METADATA,
    Column("item", Integer, ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
    Column("tag", Text, primary_key=True),
    Column("run_id", String(32), nullable=False),
    Index("ix_item_tags_run", "run_id", "tag"),
)
Table(
    "judgments",
    V1_METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item", Integer, ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
    Column("run_id", String(32), nullable=False),
    Column("paragraph", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("markers", _JSON, nullable=False),
    Column("missing_markers", _JSON, nullable=False),
    Column("metadata_mismatch", _JSON, nullable=False),
    Column("deterministic_pass", Boolean, nullable=False),
    Column("verdict", String(32), nullable=True),
    Column("rationale", Text, nullable=True),
    Column("expected_verdict", String(32), nullable=True),
    UniqueConstraint("item", "paragraph", name="uq_judgments_item_paragraph"),
    Index("ix_judgments_run", "run_id"),
)

# --- migrations ------------------------------------------------------------------------------


def _add_column(conn: Connection, table: str, name: str, type_: TypeEngine) -> None:
    # ADD COLUMN of a nullable column without a default: the same statement on SQLite and
    # PostgreSQL, and cheap on both (no table rewrite).
    compiled = type_.dialect_impl(conn.dialect).compile(dialect=conn.dialect)
    conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {name} {compiled}")


def _migrate_1_to_2(conn: Connection) -> None:
    """v1 → v2: tool trace and iterations on items, ``tool_calls``, judge model and coverage on judgments."""
    _add_column(conn, "items", "tool_trace", _JSON)
    _add_column(conn, "items", "iterations", Integer())
    _add_column(conn, "judgments", "coverage_score", Float())
    _add_column(conn, "judgments", "judge_model", Text())
    _add_column(conn, "judgments", "judged_ms", BigInteger())
    v2 = MetaData()
    Table("items", v2, Column("id", Integer, primary_key=True))
    Table(
        "tool_calls",
        v2,
        Column("item", Integer, ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
        Column("position", Integer, primary_key=True, autoincrement=False),
        Column("run_id", String(32), nullable=False),
        Column("tool", Text, nullable=False),
        Column("calls", Integer, nullable=False),
        Column("hit_count", Integer, nullable=False),
        Column("hit_ids", _JSON, nullable=False),
        Index("ix_tool_calls_run", "run_id", "tool"),
    ).create(conn)


MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _migrate_1_to_2}
"""``MIGRATIONS[v]`` takes a database from version ``v`` to ``v + 1``."""

assert set(MIGRATIONS) == set(range(1, schema.SCHEMA_VERSION)), "every old version needs a migration"


# --- opening ---------------------------------------------------------------------------------


def _first_line(exc: BaseException) -> str:
    message = str(getattr(exc, "orig", None) or exc).strip()
    return message.splitlines()[0] if message else type(exc).__name__


def _now_ms() -> int:
    return int(time.time() * 1000)


def stored_version(conn: Connection) -> int | None:
    """The database's schema version; None for an empty database.

    Raises:
        HistoryError: The database has tables but no ``schema_info`` (not a groundeval history).
    """
    names = set(inspect(conn).get_table_names())
    if "schema_info" not in names:
        if "runs" in names or "items" in names:
            raise HistoryError(
                "the database has runs/items tables but no schema_info table: it is not a groundeval history "
                "database (docs/history.md)"
            )
        return None
    version = conn.execute(select(schema.schema_info.c.version).where(schema.schema_info.c.id == 1)).scalar()
    where = f"history database {describe_url(conn.engine.url.render_as_string(hide_password=False))}"
    if version is None:
        raise HistoryError(f"{where}: its schema_info table is empty (docs/history.md)")
    # SQLite keeps whatever was stored (2.9, "two"); only a whole number of a released schema is a version.
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise HistoryError(
            f"{where}: schema_info.version is {version!r}, not a groundeval schema version (a whole number from 1 "
            f"to {schema.SCHEMA_VERSION}); the database was changed by hand or is not a groundeval history "
            "(docs/history.md)"
        )
    return version


def create_version(conn: Connection, metadata: MetaData, version: int) -> None:
    """Create the tables of ``metadata`` and record ``version`` (used for fresh databases and by tests)."""
    metadata.create_all(conn)
    conn.execute(
        schema.schema_info.insert().values(id=1, version=version, migrated_ms=_now_ms())
    )


def ensure_schema(engine: Engine) -> int:
    """Bring the database to ``SCHEMA_VERSION``: create it, migrate it, or check it is current.

    Returns:
        The version the database had before (0 for a fresh one).

    Raises:
        HistoryError: The database is newer than this plugin (upgrade the plugin),
            or is not a groundeval history database.
    """
    with engine.connect() as conn:
        version = stored_version(conn)
    if version == schema.SCHEMA_VERSION:
        return version
    with engine.connect().execution_options(**WRITE) as conn, conn.begin():
        if is_postgres(engine):
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        # Read again under the lock: another process may have created or migrated it meanwhile.
        before = stored_version(conn)
        current = before
        if current is None:
            create_version(conn, schema.metadata, schema.SCHEMA_VERSION)
            return 0
        if current > schema.SCHEMA_VERSION:
            raise HistoryError(
                f"history database {describe_url(str(engine.url))} has schema version {current}, newer than "
                f"version {schema.SCHEMA_VERSION} this pytest-groundeval reads: upgrade pytest-groundeval"
            )
        while current < schema.SCHEMA_VERSION:
            try:
                MIGRATIONS[current](conn)
            except SQLAlchemyError as exc:
                # The tables are not what schema_info says (e.g. a current database marked version 1):
                # nothing is changed (the transaction rolls back) and the database is refused.
                raise HistoryError(
                    f"history database {describe_url(str(engine.url))} says schema version {before}, but migrating "
                    f"it from version {current} to {current + 1} failed: {_first_line(exc)}; its tables do not "
                    f"match schema_info.version (docs/history.md)"
                ) from exc
            current += 1
        conn.execute(
            schema.schema_info.update()
            .where(schema.schema_info.c.id == 1)
            .values(version=current, migrated_ms=_now_ms())
        )
        return before
