"""The current history schema (docs/history.md): tables as SQLAlchemy Core objects.

Seven tables and one version row:

* ``runs``: one row per run (per dataset of a session), its configuration,
  start and finish times, gate outcome, metrics and their confidence intervals.
* ``items``: one row per item outcome of a run.
* ``item_tags``: one row per (item, tag), so tag analysis is plain SQL.
* ``tool_calls``: one row per entry of an item's ``toolTrace``.
* ``judgment_sets``: one row per set of judgments of a run: the run's own, then
  one per rejudge, each with its judge model, prompt version, time, status
  (``complete``/``incomplete``) and whether it is the run's current set.
* ``judgments``: one row per citation paragraph per judgment set: the
  deterministic findings and, once a judge ran, its verdict, rationale, coverage
  score, model and tokens; for a jury's verdict, each judge's own (``judges``).
* ``schema_info``: the schema version of the database (``SCHEMA_VERSION``).

Times are Unix epoch milliseconds (BIGINT), latencies milliseconds (float).
JSON columns are ``JSONB`` on PostgreSQL and JSON text on SQLite. The schema
of every earlier version is frozen in ``migrations.py``; changing a table here
needs a new version and a migration there.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB

SCHEMA_VERSION = 6
"""The schema this package reads and writes. 1 was the first released schema (see ``migrations.py``)."""

SET_COMPLETE = "complete"
"""A judgment set whose every paragraph has a parseable verdict (not NULL, not ``unparseable``)."""
SET_INCOMPLETE = "incomplete"
"""A judgment set with a paragraph left without a parseable verdict (or a run that did not finish)."""
ORIGIN_RUN = "run"
"""The judgment set a run recorded as it ran."""
ORIGIN_REJUDGE = "rejudge"
"""A judgment set written by ``groundeval rejudge``."""

JSONType = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
"""JSON on SQLite (stored as text, queried with ``json_extract``), JSONB on PostgreSQL."""

RUN_ID_LENGTH = 32
"""Run ids are 32 lowercase hex digits (a UUID4 without dashes)."""

metadata = MetaData()

schema_info = Table(
    "schema_info",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),  # always 1: one row
    Column("version", Integer, nullable=False),
    Column("migrated_ms", BigInteger, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", String(RUN_ID_LENGTH), primary_key=True),
    Column("label", Text, nullable=True),
    Column("dataset_path", Text, nullable=True),
    Column("dataset_version", Text, nullable=True),
    Column("config", JSONType, nullable=False),
    Column("started_ms", BigInteger, nullable=False),
    Column("finished_ms", BigInteger, nullable=True),  # NULL until finish_run: an interrupted run keeps NULL
    Column("interrupted", Boolean, nullable=True),
    Column("gate_passed", Boolean, nullable=True),
    Column("gate", JSONType, nullable=True),
    Column("metrics", JSONType, nullable=True),
    Column("confidence", JSONType, nullable=True),  # v4: the report's confidence intervals
    Index("ix_runs_started", "started_ms"),
    Index("ix_runs_label", "label"),
)

items = Table(
    "items",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(RUN_ID_LENGTH), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("item_id", Text, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("passed", Boolean, nullable=False),
    Column("error", Text, nullable=True),
    Column("detail", Text, nullable=False),
    Column("trace_id", Text, nullable=True),
    Column("question", Text, nullable=True),
    Column("answer", Text, nullable=True),
    Column("tags", JSONType, nullable=False),
    Column("sources", JSONType, nullable=True),
    Column("trace", JSONType, nullable=True),
    Column("latency_ms", Float, nullable=True),
    Column("prompt_tokens", Integer, nullable=True),
    Column("completion_tokens", Integer, nullable=True),
    Column("tool_trace", JSONType, nullable=True),  # v2
    Column("iterations", Integer, nullable=True),  # v2
    Column("outcome", JSONType, nullable=False),
    Column("recorded_ms", BigInteger, nullable=False),
    UniqueConstraint("run_id", "item_id", name="uq_items_run_item"),
)

item_tags = Table(
    "item_tags",
    metadata,
    Column("item", Integer, ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
    Column("tag", Text, primary_key=True),
    Column("run_id", String(RUN_ID_LENGTH), nullable=False),
    Index("ix_item_tags_run", "run_id", "tag"),
)

tool_calls = Table(  # v2
    "tool_calls",
    metadata,
    Column("item", Integer, ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True, autoincrement=False),
    Column("run_id", String(RUN_ID_LENGTH), nullable=False),
    Column("tool", Text, nullable=False),
    Column("calls", Integer, nullable=False),
    Column("hit_count", Integer, nullable=False),
    Column("hit_ids", JSONType, nullable=False),
    Index("ix_tool_calls_run", "run_id", "tool"),
)

judgment_sets = Table(  # v3
    "judgment_sets",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(RUN_ID_LENGTH), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("origin", String(16), nullable=False),  # ORIGIN_RUN or ORIGIN_REJUDGE
    Column("judge_model", Text, nullable=True),
    Column("scorer_model", Text, nullable=True),
    Column("prompt_version", Text, nullable=True),
    Column("created_ms", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),  # SET_COMPLETE or SET_INCOMPLETE
    Column("is_current", Boolean, nullable=False),
    Column("paragraphs", Integer, nullable=False),
    Column("failed", Integer, nullable=False),  # paragraphs with no parseable verdict
    Column("reason", Text, nullable=True),  # why the set is incomplete
    Column("metrics", JSONType, nullable=True),  # the run's metrics and gate computed from this set
    Column("gate", JSONType, nullable=True),
    Column("confidence", JSONType, nullable=True),  # v4: and its confidence intervals
    Index("ix_judgment_sets_run", "run_id"),
)
Index(
    "uq_judgment_sets_current",
    judgment_sets.c.run_id,
    unique=True,
    sqlite_where=judgment_sets.c.is_current,
    postgresql_where=judgment_sets.c.is_current,
)  # at most one current set per run

judgments = Table(
    "judgments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("set_id", Integer, ForeignKey("judgment_sets.id", ondelete="CASCADE"), nullable=False),  # v3
    Column("item", Integer, ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
    Column("run_id", String(RUN_ID_LENGTH), nullable=False),
    Column("paragraph", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("markers", JSONType, nullable=False),
    Column("missing_markers", JSONType, nullable=False),
    Column("metadata_mismatch", JSONType, nullable=False),
    Column("deterministic_pass", Boolean, nullable=False),
    Column("verdict", String(32), nullable=True),  # NULL: no judge verdict yet (rejudge fills it)
    Column("rationale", Text, nullable=True),
    Column("expected_verdict", String(32), nullable=True),
    Column("coverage_score", Float, nullable=True),  # v2
    Column("judge_model", Text, nullable=True),  # v2
    Column("judged_ms", BigInteger, nullable=True),  # v2
    # v5: a jury's verdict: each judge's [{"judgeModel", "verdict", "rationale", "judgeError"}]; NULL for one judge
    Column("judges", JSONType, nullable=True),
    # v6: the judge's tokens (a jury's: its judges' summed) for this paragraph (docs/judges.md); NULL: recorded before, unknown.
    Column("prompt_tokens", Integer, nullable=True),
    Column("completion_tokens", Integer, nullable=True),
    Column("replies", Integer, nullable=True),
    Column("replies_without_usage", Integer, nullable=True),
    UniqueConstraint("set_id", "item", "paragraph", name="uq_judgments_set_item_paragraph"),  # v3
    Index("ix_judgments_run", "run_id"),
    Index("ix_judgments_set", "set_id"),  # v3
)
