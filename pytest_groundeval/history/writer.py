"""The history writer (docs/history.md): runs, items and judgments written through the database driver.

This is what the pytest controller loads, so it imports neither pytest nor
SQLAlchemy: ``sqlite3`` or ``psycopg`` directly, a handful of statements, and
SQLAlchemy only when the database must first be created or migrated
(``migrations.ensure_schema_at``, the one import made inside a function). Readers (``queries``, ``rejudge``, the CLI) use
SQLAlchemy through ``store.HistoryStore``.

Writing, as the controller does it::

    writer = HistoryWriter.open("sqlite")               # or sqlite:///…, postgresql://…
    recorder = RunRecorder(writer, config, label="nightly", run_id=run_id)
    recorder.add(record)                                # per item outcome, as its report arrives
    recorder.finish(metrics=metrics_wire, gate=gate_wire, interrupted=False)
    writer.close()

Every batch is one transaction, committed on its own: a run killed with SIGKILL
keeps everything it committed and its ``finished_ms`` stays NULL. SQLite write
transactions are ``BEGIN IMMEDIATE`` (the lock is taken up front, waiting up to
the busy timeout for another writer) on a WAL database.
"""

from __future__ import annotations

import json
import queue
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from ..judge.prompt import PROMPT_VERSION
from .errors import HistoryError
from .records import item_row
from .urls import (
    BUSY_TIMEOUT_S,
    CLIENT_ENCODING,
    check_server_encoding,
    configure_sqlite,
    dbapi_conninfo,
    describe_url,
    resolve_url,
    sqlite_path,
)

SCHEMA_VERSION = 6
"""The schema version this writer writes (``schema.SCHEMA_VERSION``; a test keeps the two equal)."""

SCHEMA_TABLES = ("schema_info", "runs", "items", "item_tags", "tool_calls", "judgment_sets", "judgments")
"""The tables of that schema (``schema.metadata``; a test keeps the two equal)."""

RUN_ID_LENGTH = 32
"""Run ids are 32 lowercase hex digits (a UUID4 without dashes)."""

DEFAULT_BATCH_SIZE = 100
"""Item records per commit in ``RunRecorder``."""

DEFAULT_MAX_DELAY_S = 2.0
"""Longest a recorded item waits in ``RunRecorder``'s buffer before it is committed."""

_HEX_RE = re.compile(r"^[0-9a-f]+$")

# Columns written per table, in order; JSON columns are sent as text (cast to jsonb on PostgreSQL).
_COLUMNS = {
    "runs": ("id", "label", "dataset_path", "dataset_version", "config", "started_ms"),
    "items": (
        "run_id",
        "item_id",
        "kind",
        "passed",
        "error",
        "detail",
        "trace_id",
        "question",
        "answer",
        "tags",
        "sources",
        "trace",
        "latency_ms",
        "prompt_tokens",
        "completion_tokens",
        "tool_trace",
        "iterations",
        "outcome",
        "recorded_ms",
    ),
    "item_tags": ("item", "tag", "run_id"),
    "tool_calls": ("item", "position", "run_id", "tool", "calls", "hit_count", "hit_ids"),
    "judgment_sets": (
        "run_id",
        "origin",
        "judge_model",
        "scorer_model",
        "prompt_version",
        "created_ms",
        "status",
        "is_current",
        "paragraphs",
        "failed",
    ),
    "judgments": (
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
        "judges",
        "prompt_tokens",
        "completion_tokens",
        "replies",
        "replies_without_usage",
    ),
}
_JSON_COLUMNS = frozenset(
    {
        "config",
        "tags",
        "sources",
        "trace",
        "tool_trace",
        "outcome",
        "hit_ids",
        "markers",
        "missing_markers",
        "metadata_mismatch",
        "metrics",
        "gate",
        "judges",
    }
)


def now_ms() -> int:
    """Current time, Unix epoch milliseconds."""
    return int(time.time() * 1000)


def new_run_id() -> str:
    """A fresh run id: 32 lowercase hex digits (UUID4). Choose it before ``open_run`` to send it to workers."""
    return uuid.uuid4().hex


# One encoder for every value: json.dumps with options builds a new encoder per call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False).encode


def _dumps(value: Any, what: str = "value") -> str | None:
    # SQL NULL for None (the JSON columns are none_as_null), compact JSON text otherwise.
    if value is None:
        return None
    try:
        return _ENCODE(value)
    except (TypeError, ValueError) as exc:
        raise HistoryError(f"{what} must be JSON built-ins (no NaN): {exc}") from exc


def _dataset_of(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The run config's ``dataset`` object (``path``, ``version``, ...), or an empty one without it."""
    dataset = config.get("dataset")
    return dataset if isinstance(dataset, Mapping) else {}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class HistoryWriter:
    """One connection to a history database, for writing runs. Use from one thread at a time."""

    def __init__(self, url: str, connection: Any, postgres: bool) -> None:
        """Wrap an open DB-API connection (use ``HistoryWriter.open``)."""
        self.url = url
        self._conn = connection
        self._postgres = postgres
        self._mark = "%s" if postgres else "?"

    @classmethod
    def open(
        cls, value: str | None, cwd: str | None = None, *, busy_timeout_s: float = BUSY_TIMEOUT_S
    ) -> HistoryWriter:
        """Connect, creating or migrating the schema first when it is not current.

        Args:
            value: A history URL or shorthand (``urls.resolve_url``).
            cwd: Directory relative SQLite paths and the default database live under.

        Raises:
            HistoryError: Invalid URL, unreachable database, psycopg missing for
                PostgreSQL, or a schema newer than this plugin's.
        """
        url = resolve_url(value, cwd)
        path = sqlite_path(url)
        try:
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                conn: Any = sqlite3.connect(path, timeout=busy_timeout_s, check_same_thread=False)
                configure_sqlite(conn, path, busy_timeout_s)
            else:
                try:
                    import psycopg
                except ImportError as exc:
                    raise HistoryError(
                        f"history database {describe_url(url)} needs psycopg 3: "
                        "pip install 'pytest-groundeval[postgres]'"
                    ) from exc
                conn = psycopg.connect(dbapi_conninfo(url), autocommit=True, client_encoding=CLIENT_ENCODING)
                try:
                    check_server_encoding(conn, url)
                except BaseException:
                    conn.close()
                    raise
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"cannot open history database {describe_url(url)}: {_first_line(exc)}") from exc
        except Exception as exc:
            if type(exc).__module__.startswith("psycopg"):
                raise HistoryError(f"cannot open history database {describe_url(url)}: {_first_line(exc)}") from exc
            raise
        writer = cls(url, conn, postgres=path is None)
        try:
            writer._ensure_schema()
        except BaseException:
            writer.close()
            raise
        return writer

    def _ensure_schema(self) -> None:
        try:
            row = self._fetchone("SELECT version FROM schema_info WHERE id = 1", ())
        except Exception:  # noqa: BLE001 - no schema_info yet (or unreadable): the migrations decide
            row = None
            if self._postgres:
                self._conn.rollback()
        if row is not None and row[0] == SCHEMA_VERSION and self._tables_look_current():
            return
        # Creating or migrating needs the table definitions: only then is SQLAlchemy loaded.
        from .migrations import ensure_schema_at  # the writer's one hand-off (module docstring)

        ensure_schema_at(self.url)

    def _tables_look_current(self) -> bool:
        """Whether every table of the schema is there and ``schema_info`` has one row, checked
        without SQLAlchemy; when not, ``migrations.ensure_schema`` names what is wrong."""
        try:
            if self._fetchone("SELECT COUNT(*) FROM schema_info", ())[0] != 1:
                return False
            for table in SCHEMA_TABLES:
                self._fetchone(f"SELECT 1 FROM {table} WHERE 1 = 0", ())  # fixed table names, no input in the SQL
        except Exception:  # noqa: BLE001 - a missing table: the migrations name it
            if self._postgres:
                self._conn.rollback()
            return False
        return True

    def close(self) -> None:
        """Close the connection. Safe to call twice."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- statements -----------------------------------------------------------------------

    def _cursor(self) -> Any:
        if self._conn is None:
            raise HistoryError(f"history writer for {describe_url(self.url)} is closed")
        return self._conn.cursor()

    def _fetchone(self, sql: str, params: Sequence[Any]) -> Any:
        cursor = self._cursor()
        try:
            cursor.execute(sql, params)
            return cursor.fetchone()
        finally:
            cursor.close()

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        cursor = self._cursor()
        try:
            if self._postgres:
                with self._conn.transaction():
                    yield cursor
            else:
                cursor.execute("BEGIN IMMEDIATE")
                try:
                    yield cursor
                except BaseException:
                    cursor.execute("ROLLBACK")
                    raise
                cursor.execute("COMMIT")
        finally:
            cursor.close()

    def _insert(self, cursor: Any, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
        if not rows:
            return
        names = _COLUMNS[table]
        cast = "::jsonb" if self._postgres else ""
        values = ", ".join(f"{self._mark}{cast}" if n in _JSON_COLUMNS else self._mark for n in names)
        sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({values})"
        params = [tuple(_dumps(r.get(n)) if n in _JSON_COLUMNS else r.get(n) for n in names) for r in rows]
        cursor.executemany(sql, params)

    def _integrity_error(self, exc: BaseException) -> bool:
        if isinstance(exc, sqlite3.IntegrityError):
            return True
        return self._postgres and type(exc).__name__ in ("UniqueViolation", "ForeignKeyViolation", "IntegrityError")

    # --- the writer API -------------------------------------------------------------------

    def open_run(
        self,
        config: Mapping[str, Any],
        *,
        label: str | None = None,
        run_id: str | None = None,
        started_ms: int | None = None,
    ) -> str:
        """Record the start of a run.

        Args:
            config: The run's configuration (docs/history.md, "runs"): ``models``
                (``generate``, ``embed``), ``judgeModel``, ``scorerModel``, ``dataset``
                (``path``, ``version``), ``gitCommit``, ``pluginVersion``, ``floors``,
                ``options``; JSON built-ins. ``dataset.path`` and ``dataset.version`` are
                also stored in their own columns for filtering.
            label: ``--eval-label``, or None.
            run_id: A preset id (``new_run_id()``), e.g. one already sent to xdist workers.
            started_ms: Start time; now by default.

        Returns:
            The run id.

        Raises:
            HistoryError: ``config`` is not a JSON-ready object, the id is malformed or taken.
        """
        if not isinstance(config, Mapping):
            raise HistoryError(f"run config must be an object, got {type(config).__name__}")
        _dumps(dict(config), "run config")
        run_id = run_id or new_run_id()
        if len(run_id) != RUN_ID_LENGTH or not _HEX_RE.match(run_id):
            raise HistoryError(f"run id {run_id!r} must be {RUN_ID_LENGTH} lowercase hex digits")
        dataset = _dataset_of(config)
        row = {
            "id": run_id,
            "label": label,
            "dataset_path": None if dataset.get("path") is None else str(dataset["path"]),
            "dataset_version": None if dataset.get("version") is None else str(dataset["version"]),
            "config": dict(config),
            "started_ms": now_ms() if started_ms is None else int(started_ms),
        }
        judged = config.get("judgeModel")
        # The run's own judgment set, current from the start; finish_run records whether it is complete.
        judgment_set = {
            "run_id": run_id, "origin": "run", "judge_model": None if judged is None else str(judged),
            "scorer_model": None if config.get("scorerModel") is None else str(config["scorerModel"]),
            "prompt_version": PROMPT_VERSION if judged else None, "created_ms": row["started_ms"],
            "status": "incomplete", "is_current": True, "paragraphs": 0, "failed": 0,
        }  # fmt: skip
        try:
            with self._transaction() as cursor:
                self._insert(cursor, "runs", [row])
                self._insert(cursor, "judgment_sets", [judgment_set])
        except Exception as exc:
            if self._integrity_error(exc):
                raise HistoryError(f"run id {run_id} is already in the history") from exc
            raise
        return run_id

    def add_items(self, run_id: str, records: Iterable[Mapping[str, Any]]) -> int:
        """Record a batch of item records in one transaction (all or nothing).

        Args:
            run_id: A run opened with ``open_run``.
            records: Item records (outcome wire dicts, see ``records.py``).

        Returns:
            How many items were recorded.

        Raises:
            HistoryError: A record is invalid (nothing of the batch is written; the
                message names the item and field), the run is unknown, or an item id
                is already recorded for this run.
        """
        parsed = [item_row(record, n) for n, record in enumerate(records)]
        if not parsed:
            return 0
        ids = [row["item_id"] for row, *_ in parsed]
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise HistoryError(f"run {run_id}: item id(s) {', '.join(map(repr, twice[:5]))} appear twice in one batch")
        recorded = now_ms()
        m = self._mark
        try:
            with self._transaction() as cursor:
                cursor.execute(
                    f"SELECT s.id FROM runs r LEFT JOIN judgment_sets s ON s.run_id = r.id AND s.origin = 'run' "
                    f"WHERE r.id = {m}",
                    (run_id,),
                )
                found = cursor.fetchone()
                if found is None:
                    raise HistoryError(f"run {run_id} is not in the history (open_run first)")
                if found[0] is None:
                    raise HistoryError(f"run {run_id} has no judgment set of its own (docs/history.md)")
                set_id = found[0]
                self._insert(
                    cursor, "items", [{**row, "run_id": run_id, "recorded_ms": recorded} for row, *_ in parsed]
                )
                if self._postgres:
                    cursor.execute(
                        f"SELECT item_id, id FROM items WHERE run_id = {m} AND item_id = ANY({m})", (run_id, ids)
                    )
                else:
                    cursor.execute(
                        f"SELECT item_id, id FROM items WHERE run_id = ? AND item_id IN ({', '.join('?' * len(ids))})",
                        (run_id, *ids),
                    )
                keys = dict(cursor.fetchall())
                tags: list[dict[str, Any]] = []
                tools: list[dict[str, Any]] = []
                judgments: list[dict[str, Any]] = []
                for row, item_tags, item_tools, item_judgments in parsed:
                    key = keys[row["item_id"]]
                    tags.extend({"item": key, "tag": tag, "run_id": run_id} for tag in item_tags)
                    tools.extend({**tool, "item": key, "run_id": run_id} for tool in item_tools)
                    judgments.extend(
                        {
                            **j,
                            "set_id": set_id,
                            "item": key,
                            "run_id": run_id,
                            "judged_ms": recorded if j["verdict"] else None,
                        }
                        for j in item_judgments
                    )
                self._insert(cursor, "item_tags", tags)
                self._insert(cursor, "tool_calls", tools)
                self._insert(cursor, "judgments", judgments)
        except Exception as exc:
            if self._integrity_error(exc):
                raise HistoryError(
                    f"run {run_id}: an item of this batch is already recorded ({len(ids)} items starting with "
                    f"{ids[0]!r}); each item is recorded once per run"
                ) from exc
            raise
        return len(parsed)

    def finish_run(
        self,
        run_id: str,
        *,
        metrics: Mapping[str, Any] | None,
        gate: Mapping[str, Any] | None,
        interrupted: bool = False,
        finished_ms: int | None = None,
        config_update: Mapping[str, Any] | None = None,
        confidence: Mapping[str, Any] | None = None,
    ) -> None:
        """Record a run's end: metrics (``Metrics.to_wire()``), gate (``GateResult.to_wire()``), finish time.

        Args:
            confidence: The run's confidence intervals (``Report.confidence`` as wire JSON), or None.
            config_update: Keys to set in the stored config, for what was learnt during
                the run (e.g. ``models`` once the target reported its lineage); a shallow
                merge over the config given to ``open_run``.

        Raises:
            HistoryError: The run is unknown, or metrics/gate/config are not JSON-ready.
        """
        if config_update:
            self._update_config(run_id, config_update)
        m = self._mark
        cast = "::jsonb" if self._postgres else ""
        params = (
            now_ms() if finished_ms is None else int(finished_ms),
            bool(interrupted),
            _dumps(dict(metrics), "metrics") if metrics is not None else None,
            _dumps(dict(gate), "gate") if gate is not None else None,
            None if gate is None else bool(gate.get("passed")),
            _dumps(dict(confidence), "confidence") if confidence is not None else None,
            run_id,
        )
        with self._transaction() as cursor:
            cursor.execute(
                f"UPDATE runs SET finished_ms = {m}, interrupted = {m}, metrics = {m}{cast}, gate = {m}{cast}, "
                f"gate_passed = {m}, confidence = {m}{cast} WHERE id = {m}",
                params,
            )
            if cursor.rowcount != 1:
                raise HistoryError(f"run {run_id} is not in the history")
            # The run's own judgment set: complete when the run finished and every paragraph has a
            # parseable verdict; its figures are the run's.
            cursor.execute(
                "SELECT COUNT(*), "
                "COALESCE(SUM(CASE WHEN verdict IS NULL OR verdict = 'unparseable' THEN 1 ELSE 0 END), 0) "
                f"FROM judgments WHERE set_id = (SELECT id FROM judgment_sets WHERE run_id = {m} AND origin = 'run')",
                (run_id,),
            )
            total, failed = (int(v) for v in cursor.fetchone())
            if interrupted:
                status, reason = "incomplete", "the run was interrupted"
            elif failed:
                status, reason = "incomplete", f"{failed} of {total} paragraph(s) have no parseable verdict"
            else:
                status, reason = "complete", None
            cursor.execute(
                f"UPDATE judgment_sets SET status = {m}, paragraphs = {m}, failed = {m}, reason = {m}, "
                f"metrics = {m}{cast}, gate = {m}{cast}, confidence = {m}{cast} WHERE run_id = {m} AND origin = 'run'",
                (status, total, failed, reason, params[2], params[3], params[5], run_id),
            )

    def _update_config(self, run_id: str, update: Mapping[str, Any]) -> None:
        m = self._mark
        cast = "::jsonb" if self._postgres else ""
        with self._transaction() as cursor:
            lock = " FOR UPDATE" if self._postgres else ""
            cursor.execute(f"SELECT config FROM runs WHERE id = {m}{lock}", (run_id,))
            row = cursor.fetchone()
            if row is None:
                raise HistoryError(f"run {run_id} is not in the history")
            config = row[0] if isinstance(row[0], dict) else json.loads(row[0])
            config.update(update)
            dataset = _dataset_of(config)
            cursor.execute(
                f"UPDATE runs SET config = {m}{cast}, dataset_path = {m}, dataset_version = {m} WHERE id = {m}",
                (
                    _dumps(config, "run config"),
                    None if dataset.get("path") is None else str(dataset["path"]),
                    None if dataset.get("version") is None else str(dataset["version"]),
                    run_id,
                ),
            )


_FLUSH = object()
_STOP = object()


class RunRecorder:
    """Record one run as outcomes arrive: committed every ``batch_size`` items or ``max_delay_s`` seconds.

    Usage (the pytest controller)::

        recorder = RunRecorder(writer, config, label=label, run_id=run_id)  # open_run
        recorder.add(outcome_wire)        # per item, as each report arrives
        recorder.finish(metrics=..., gate=..., interrupted=...)            # flush + finish_run

    Records are buffered in the caller's thread. With ``background=True`` (the
    default) a full buffer is handed to one writer thread, which commits it
    (the driver releases the GIL while SQLite or PostgreSQL work, so that work
    overlaps with the session's), and which also commits a buffer whose oldest
    record waited ``max_delay_s`` even if no further record arrives; it wakes once
    per batch and twice per ``max_delay_s``, never per record (a wake-up per
    record cost the controller more CPU than the writing, see
    benchmarks/bench_history.py). With ``background=False`` batches are
    committed in the caller's thread, on the ``add`` that fills the buffer or
    finds it old enough.

    Batches are committed in order, each on its own, so a killed process keeps
    every batch committed before the kill. A failed batch (an invalid record, a
    database error) is raised from the next ``add``, ``flush`` or ``finish``, and
    the recorder writes nothing more. ``recorded`` counts the items committed.
    """

    def __init__(
        self,
        store: HistoryWriter | Any,
        config: Mapping[str, Any],
        *,
        label: str | None = None,
        run_id: str | None = None,
        started_ms: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_delay_s: float = DEFAULT_MAX_DELAY_S,
        background: bool = True,
    ) -> None:
        """Open the run through ``store`` (a ``HistoryWriter``, or anything with its three methods,
        such as ``store.HistoryStore``); raises what ``open_run`` raises."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.store = store
        self.batch_size = batch_size
        self.max_delay_s = max_delay_s
        self.run_id = store.open_run(config, label=label, run_id=run_id, started_ms=started_ms)
        self.recorded = 0
        self._buffer: list[Mapping[str, Any]] = []
        self._oldest = 0.0
        self._failure: BaseException | None = None
        self._lock = threading.Lock()
        self._queue: queue.Queue[Any] | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._queue = queue.Queue()
            self._thread = threading.Thread(
                target=self._drain, name=f"groundeval-history-{self.run_id[:8]}", daemon=True
            )
            self._thread.start()

    def _write(self, batch: list[Mapping[str, Any]]) -> None:
        if batch and self._failure is None:
            try:
                self.recorded += self.store.add_items(self.run_id, batch)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                self._failure = exc

    def _take(self, only_if_old: bool = False) -> list[Mapping[str, Any]]:
        """The buffered records (emptying the buffer); with ``only_if_old``, only once the oldest is due."""
        with self._lock:
            if not self._buffer or (only_if_old and time.monotonic() - self._oldest < self.max_delay_s):
                return []
            batch, self._buffer = self._buffer, []
            return batch

    def _drain(self) -> None:
        # Woken once per full batch, or every half max_delay_s to commit a batch that waited long enough.
        assert self._queue is not None
        while True:
            try:
                entry = self._queue.get(timeout=self.max_delay_s / 2)
            except queue.Empty:
                self._write(self._take(only_if_old=True))
                continue
            try:
                if entry is _STOP or entry is _FLUSH:
                    self._write(self._take())
                    if entry is _STOP:
                        return
                else:
                    self._write(entry)
            finally:
                self._queue.task_done()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def add(self, record: Mapping[str, Any]) -> None:
        """Record one item record (committed with its batch).

        Raises:
            HistoryError: An earlier batch could not be recorded.
        """
        self._raise_failure()
        with self._lock:
            if not self._buffer:
                self._oldest = time.monotonic()
            self._buffer.append(record)
            full = len(self._buffer) >= self.batch_size
        if self._queue is None:
            if full or time.monotonic() - self._oldest >= self.max_delay_s:
                self._write(self._take())
        elif full:
            batch = self._take()
            if batch:
                self._queue.put(batch)

    def flush(self) -> int:
        """Commit everything added so far and wait for it; returns ``recorded``.

        Raises:
            HistoryError: A batch could not be recorded (the first failure).
        """
        if self._queue is not None:
            self._queue.put(_FLUSH)
            self._queue.join()
        else:
            self._write(self._take())
        self._raise_failure()
        return self.recorded

    def close(self) -> None:
        """Commit what was added, stop the writer thread; records no finish time. Safe to call twice."""
        if self._thread is not None and self._queue is not None:
            self._queue.put(_STOP)
            self._thread.join()
            self._thread = None

    def finish(
        self,
        *,
        metrics: Mapping[str, Any] | None,
        gate: Mapping[str, Any] | None,
        interrupted: bool = False,
        config_update: Mapping[str, Any] | None = None,
        confidence: Mapping[str, Any] | None = None,
    ) -> None:
        """Commit what was added, then record the end of the run (see ``HistoryWriter.finish_run``).

        Raises:
            HistoryError: A batch could not be recorded; the run is then left without a
                finish time, as an interrupted one.
        """
        try:
            self.flush()
        finally:
            self.close()
        self.store.finish_run(
            self.run_id,
            metrics=metrics,
            gate=gate,
            interrupted=interrupted,
            config_update=config_update,
            confidence=confidence,
        )
