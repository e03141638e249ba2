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
* **2**: items gain ``tool_trace`` and ``iterations``; a ``tool_calls``
  table holds one row per tool-trace entry; judgments gain ``coverage_score``,
  ``judge_model`` and ``judged_ms``.
* **3**: a ``judgment_sets`` table (one set per run as recorded, one per
  rejudge, each with its judge model, prompt version, time, status and whether it
  is current); judgments gain ``set_id`` and are unique per (set, item,
  paragraph). Migrating makes each run's existing judgments its first, current
  set, with the judge model the run recorded.
* **4**: ``runs`` and ``judgment_sets`` gain ``confidence``, the report's
  confidence intervals (docs/statistics.md); NULL for runs recorded before.
* **5**: judgments gain ``judges``, a jury's verdict's judges, each with its
  own verdict (docs/judges.md, "Juries"); NULL for one judge's verdict, and so for
  every judgment recorded before.
* **6** (current): judgments gain the judge's tokens for the paragraph:
  ``prompt_tokens``, ``completion_tokens``, ``replies`` and ``replies_without_usage``
  (docs/judges.md, "Tokens and cost"); NULL for judgments recorded before.

``V1_METADATA`` to ``V5_METADATA`` are versions 1 to 5 frozen as they shipped;
tests build databases from them and migrate them. Never edit a frozen version:
add a new one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

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
    case,
    func,
    inspect,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.types import TypeEngine

from . import schema
from .engine import WRITE, HistoryError, create_history_engine, describe_url, is_postgres

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

# --- version 2, frozen ---------------------------------------------------------------------

V2_METADATA = MetaData()
"""The second schema (version 2), frozen."""

Table(
    "schema_info",
    V2_METADATA,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("version", Integer, nullable=False),
    Column("migrated_ms", BigInteger, nullable=False),
)
Table(
    "runs",
    V2_METADATA,
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
    V2_METADATA,
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
    Column("tool_trace", _JSON, nullable=True),
    Column("iterations", Integer, nullable=True),
    Column("outcome", _JSON, nullable=False),
    Column("recorded_ms", BigInteger, nullable=False),
    UniqueConstraint("run_id", "item_id", name="uq_items_run_item"),
)
Table(
    "item_tags",
    V2_METADATA,
    Column("item", Integer, ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
    Column("tag", Text, primary_key=True),
    Column("run_id", String(32), nullable=False),
    Index("ix_item_tags_run", "run_id", "tag"),
)
Table(
    "tool_calls",
    V2_METADATA,
    Column("item", Integer, ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True, autoincrement=False),
    Column("run_id", String(32), nullable=False),
    Column("tool", Text, nullable=False),
    Column("calls", Integer, nullable=False),
    Column("hit_count", Integer, nullable=False),
    Column("hit_ids", _JSON, nullable=False),
    Index("ix_tool_calls_run", "run_id", "tool"),
)
Table(
    "judgments",
    V2_METADATA,
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
    Column("coverage_score", Float, nullable=True),
    Column("judge_model", Text, nullable=True),
    Column("judged_ms", BigInteger, nullable=True),
    UniqueConstraint("item", "paragraph", name="uq_judgments_item_paragraph"),
    Index("ix_judgments_run", "run_id"),
)

# --- migrations ------------------------------------------------------------------------------


def _add_column(conn: Connection, table: str, name: str, type_: TypeEngine[Any]) -> None:
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


_V3_JUDGMENT_COLUMNS = (
    "id",
    "set_id",
    "item",
    "run_id",
    "paragraph",
    "text",
    "markers",
    "missing_markers",
    "metadata_mismatch",
    "deterministic_pass",
    "verdict",
    "rationale",
    "expected_verdict",
    "coverage_score",
    "judge_model",
    "judged_ms",
)


def _v3_tables(metadata: MetaData, judgments_name: str) -> tuple[Table, Table]:
    """Version 3's ``judgment_sets`` and ``judgments`` (named ``judgments_name``, no indexes), frozen."""
    Table("runs", metadata, Column("id", String(32), primary_key=True))
    Table("items", metadata, Column("id", Integer, primary_key=True))
    sets = Table(
        "judgment_sets",
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        Column("origin", String(16), nullable=False),
        Column("judge_model", Text, nullable=True),
        Column("scorer_model", Text, nullable=True),
        Column("prompt_version", Text, nullable=True),
        Column("created_ms", BigInteger, nullable=False),
        Column("status", String(16), nullable=False),
        Column("is_current", Boolean, nullable=False),
        Column("paragraphs", Integer, nullable=False),
        Column("failed", Integer, nullable=False),
        Column("reason", Text, nullable=True),
        Column("metrics", _JSON, nullable=True),
        Column("gate", _JSON, nullable=True),
        Index("ix_judgment_sets_run", "run_id"),
    )
    Index("uq_judgment_sets_current", sets.c.run_id, unique=True, sqlite_where=sets.c.is_current,
          postgresql_where=sets.c.is_current)  # fmt: skip
    judgments = Table(
        judgments_name,
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("set_id", Integer, ForeignKey("judgment_sets.id", ondelete="CASCADE"), nullable=False),
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
        Column("coverage_score", Float, nullable=True),
        Column("judge_model", Text, nullable=True),
        Column("judged_ms", BigInteger, nullable=True),
        UniqueConstraint("set_id", "item", "paragraph", name="uq_judgments_set_item_paragraph"),
    )
    return sets, judgments


V3_METADATA = MetaData()
"""The third schema (version 3), frozen: version 2's tables but ``judgments``, and version 3's
``judgment_sets`` and ``judgments`` (``_v3_tables``) with their indexes."""

for _name in ("schema_info", "runs", "items", "item_tags", "tool_calls"):
    V2_METADATA.tables[_name].to_metadata(V3_METADATA)
for _table in _v3_tables(MetaData(), "judgments"):
    _table.to_metadata(V3_METADATA)
Index("ix_judgments_run", V3_METADATA.tables["judgments"].c.run_id)
Index("ix_judgments_set", V3_METADATA.tables["judgments"].c.set_id)


def _migrate_2_to_3(conn: Connection) -> None:
    """v2 → v3: ``judgment_sets``; each run's judgments become its first, current set; judgments gain ``set_id``."""
    v2 = V2_METADATA.tables
    runs, old = v2["runs"], v2["judgments"]
    v3 = MetaData()
    sets, _ = _v3_tables(v3, "judgments")
    sets.create(conn)
    failed = case((old.c.verdict.is_(None) | (old.c.verdict == "unparseable"), 1), else_=0)
    per_run = select(old.c.run_id, func.count().label("n"), func.sum(failed).label("failed"),
                     func.max(old.c.judged_ms).label("judged_ms")).group_by(old.c.run_id)  # fmt: skip
    figures = {row.run_id: row for row in conn.execute(per_run)}
    models: dict[str, set[str]] = {}
    for run_id, model in conn.execute(select(old.c.run_id, old.c.judge_model).where(old.c.judge_model.is_not(None))
                                      .distinct()):  # fmt: skip
        models.setdefault(run_id, set()).add(model)
    rows = []
    for run in conn.execute(select(runs)).mappings():
        config = run["config"] if isinstance(run["config"], dict) else {}
        found = figures.get(run["id"])
        n, bad = (int(found.n), int(found.failed or 0)) if found is not None else (0, 0)
        recorded = models.get(run["id"], set())
        # The judge the run recorded; a run rejudged under version 2 names its judge on every judgment.
        judge = next(iter(recorded)) if len(recorded) == 1 else config.get("judgeModel")
        finished = run["finished_ms"] is not None and not run["interrupted"]
        reason = None
        if not finished:
            reason = "the run did not finish"
        elif bad:
            reason = f"{bad} of {n} paragraph(s) have no parseable verdict (recorded before judgment sets)"
        rows.append({
            "run_id": run["id"], "origin": "run", "judge_model": judge, "scorer_model": config.get("scorerModel"),
            "prompt_version": None,
            "created_ms": (found.judged_ms if found is not None and found.judged_ms is not None
                           else run["finished_ms"] or run["started_ms"]),
            "status": "complete" if finished and not bad else "incomplete", "is_current": True,
            "paragraphs": n, "failed": bad, "reason": reason, "metrics": run["metrics"], "gate": run["gate"],
        })  # fmt: skip
    if rows:
        conn.execute(sets.insert(), rows)
    before = conn.execute(select(func.count()).select_from(old)).scalar()
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("ALTER TABLE judgments ADD COLUMN set_id INTEGER")
        conn.exec_driver_sql(
            "UPDATE judgments SET set_id = (SELECT s.id FROM judgment_sets s WHERE s.run_id = judgments.run_id)"
        )
        conn.exec_driver_sql("ALTER TABLE judgments ALTER COLUMN set_id SET NOT NULL")
        conn.exec_driver_sql(
            "ALTER TABLE judgments ADD CONSTRAINT judgments_set_id_fkey FOREIGN KEY (set_id) "
            "REFERENCES judgment_sets (id) ON DELETE CASCADE"
        )
        conn.exec_driver_sql("ALTER TABLE judgments DROP CONSTRAINT uq_judgments_item_paragraph")
        conn.exec_driver_sql(
            "ALTER TABLE judgments ADD CONSTRAINT uq_judgments_set_item_paragraph UNIQUE (set_id, item, paragraph)"
        )
    else:
        # SQLite cannot drop a table constraint: rebuild the table (same ids), then swap it in.
        _, new = _v3_tables(MetaData(), "judgments_v3")
        new.create(conn)
        columns = ", ".join(_V3_JUDGMENT_COLUMNS)
        picked = ", ".join("s.id" if c == "set_id" else f"j.{c}" for c in _V3_JUDGMENT_COLUMNS)
        conn.exec_driver_sql(
            f"INSERT INTO judgments_v3 ({columns}) SELECT {picked} FROM judgments j "
            "JOIN judgment_sets s ON s.run_id = j.run_id"
        )
        conn.exec_driver_sql("DROP TABLE judgments")
        conn.exec_driver_sql("ALTER TABLE judgments_v3 RENAME TO judgments")
        conn.exec_driver_sql("CREATE INDEX ix_judgments_run ON judgments (run_id)")
    conn.exec_driver_sql("CREATE INDEX ix_judgments_set ON judgments (set_id)")
    after = conn.execute(select(func.count()).select_from(old)).scalar()
    if after != before:
        raise HistoryError(f"migrating judgments to version 3 kept {after} of {before} rows (a judgment of no run?)")


def _migrate_3_to_4(conn: Connection) -> None:
    """v3 → v4: ``confidence`` on runs and judgment sets (NULL for the runs recorded before)."""
    _add_column(conn, "runs", "confidence", _JSON)
    _add_column(conn, "judgment_sets", "confidence", _JSON)


# --- version 4, frozen ---------------------------------------------------------------------

V4_METADATA = MetaData()
"""The fourth schema (version 4), frozen: version 3's tables, ``runs`` and ``judgment_sets``
each with a ``confidence`` column."""

for _table in V3_METADATA.sorted_tables:
    _copied = _table.to_metadata(V4_METADATA)
    if _table.name in ("runs", "judgment_sets"):
        _copied.append_column(Column("confidence", _JSON, nullable=True))


def _migrate_4_to_5(conn: Connection) -> None:
    """v4 → v5: judgments gain ``judges`` (a jury's judges' verdicts), NULL for every judgment so far."""
    _add_column(conn, "judgments", "judges", _JSON)


# --- version 5, frozen ---------------------------------------------------------------------

V5_METADATA = MetaData()
"""The fifth schema (version 5), frozen: version 4's tables, ``judgments`` with a ``judges`` column."""

for _table in V4_METADATA.sorted_tables:
    _copied = _table.to_metadata(V5_METADATA)
    if _table.name == "judgments":
        _copied.append_column(Column("judges", _JSON, nullable=True))


def _migrate_5_to_6(conn: Connection) -> None:
    """v5 → v6: judgments gain the judge's tokens (``prompt_tokens``, ``completion_tokens``, ``replies``,
    ``replies_without_usage``); a judgment recorded before keeps NULL: its tokens are unknown."""
    for name in ("prompt_tokens", "completion_tokens", "replies", "replies_without_usage"):
        _add_column(conn, "judgments", name, Integer())


MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: _migrate_1_to_2,
    2: _migrate_2_to_3,
    3: _migrate_3_to_4,
    4: _migrate_4_to_5,
    5: _migrate_5_to_6,
}
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


def check_tables(conn: Connection) -> None:
    """Check that a database at the current version has every table and column of ``schema.metadata``
    and one ``schema_info`` row, before anything is written to it.

    Raises:
        HistoryError: a table or column is missing, or ``schema_info`` holds more than one row
            (the database was changed by hand): naming the first problem (docs/history.md).
    """
    where = f"history database {describe_url(conn.engine.url.render_as_string(hide_password=False))}"
    inspector = inspect(conn)
    names = set(inspector.get_table_names())
    for table in schema.metadata.sorted_tables:
        if table.name not in names:
            raise HistoryError(
                f"{where}: schema_info says version {schema.SCHEMA_VERSION}, but its table {table.name!r} is missing; "
                "the database was changed by hand (docs/history.md)"
            )
        columns = {column["name"] for column in inspector.get_columns(table.name)}
        missing = [column.name for column in table.columns if column.name not in columns]
        if missing:
            raise HistoryError(
                f"{where}: table {table.name!r} has no column {missing[0]!r} of schema version "
                f"{schema.SCHEMA_VERSION}; the database was changed by hand (docs/history.md)"
            )
    rows = conn.execute(select(func.count()).select_from(schema.schema_info)).scalar()
    if rows != 1:
        raise HistoryError(f"{where}: its schema_info table holds {rows} rows, not one (docs/history.md)")


def create_version(conn: Connection, metadata: MetaData, version: int) -> None:
    """Create the tables of ``metadata`` and record ``version`` (used for fresh databases and by tests)."""
    metadata.create_all(conn)
    conn.execute(schema.schema_info.insert().values(id=1, version=version, migrated_ms=_now_ms()))


def ensure_schema_at(url: str) -> None:
    """``ensure_schema`` on a resolved history URL, through an engine of its own, disposed after.

    What ``history.writer`` calls when the database has no current schema: the writer
    itself runs on the database driver alone, and SQLAlchemy loads only with this module.

    Raises:
        HistoryError: as ``ensure_schema``, or the database cannot be reached (the message
            names the database, its password masked, and the driver's first line).
    """
    engine = create_history_engine(url)
    try:
        ensure_schema(engine)
    except SQLAlchemyError as exc:
        raise HistoryError(f"cannot open history database {describe_url(url)}: {_first_line(exc)}") from exc
    finally:
        engine.dispose()


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
            check_tables(conn)
            return version
    with engine.connect().execution_options(**WRITE) as conn, conn.begin():
        if is_postgres(engine):
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        # Read again under the lock: another process may have created or migrated it meanwhile.
        before = stored_version(conn)
        if before is None:
            create_version(conn, schema.metadata, schema.SCHEMA_VERSION)
            return 0
        current = before
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
