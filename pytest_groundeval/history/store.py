"""The history store (docs/history.md): the SQLAlchemy side, for reading, run references and rejudging.

``HistoryStore.open`` checks (creating or migrating) the schema and gives an
engine for ``queries`` and ``rejudge``. Its ``open_run``/``add_items``/
``finish_run`` delegate to the driver-level ``writer.HistoryWriter`` on the same
database, which is what the pytest controller uses directly (it needs no
SQLAlchemy import).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, Engine, func, make_url, select
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from . import schema
from .engine import WRITE, HistoryError, create_history_engine, describe_url, resolve_url
from .migrations import _first_line, ensure_schema
from .writer import DEFAULT_BATCH_SIZE, DEFAULT_MAX_DELAY_S, HistoryWriter, RunRecorder, new_run_id, now_ms

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MAX_DELAY_S",
    "HistoryStore",
    "HistoryWriter",
    "RunRecorder",
    "current_set_id",
    "new_run_id",
    "now_ms",
]

_LATEST_RE = re.compile(r"^latest(?:~(\d+))?$")
_HEX_RE = re.compile(r"^[0-9a-f]+$")


class HistoryStore:
    """A history database: schema checked (and migrated) on open, writer and run lookup.

    Safe to use from one thread; open one store per process (two processes may
    write the same database at once).
    """

    def __init__(self, engine: Engine, url: str | None = None) -> None:
        """Wrap an engine whose schema is current (use ``HistoryStore.open`` to get one)."""
        self.engine = engine
        self.url = url or engine.url.render_as_string(hide_password=False)
        self._writer: HistoryWriter | None = None

    @classmethod
    def open(cls, value: str | None, cwd: str | None = None, *, create: bool = True) -> HistoryStore:
        """Open (creating or migrating) the history database named by ``value``.

        Args:
            value: A history URL or shorthand (see ``engine.resolve_url``).
            cwd: Directory that relative SQLite paths and the default database live under.
            create: False for a command that only reads what runs recorded (``groundeval
                history``, ``gate --run``, ``rejudge``, trends): a SQLite file that does not
                exist is an error naming it (a mistyped path, or no run recorded there yet),
                not an empty database made on the spot.

        Raises:
            HistoryError: The URL is invalid, the database cannot be reached, or its
                schema is newer than this plugin's; the message names the database. With
                ``create=False``: the SQLite file does not exist.
        """
        url = resolve_url(value, cwd)
        parsed = make_url(url)
        if not create and parsed.get_backend_name() == "sqlite" and not Path(parsed.database or "").is_file():
            raise HistoryError(
                f"no history database at {parsed.database}: no run has been recorded there "
                "(a run records with --eval-history; docs/history.md)"
            )
        engine = create_history_engine(url)
        try:
            ensure_schema(engine)
        except HistoryError:
            engine.dispose()
            raise
        except SQLAlchemyError as exc:
            engine.dispose()
            raise HistoryError(f"cannot open history database {describe_url(url)}: {_first_line(exc)}") from exc
        return cls(engine, url)

    def close(self) -> None:
        """Release the database connections."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self.engine.dispose()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def write(self) -> Any:
        """A write transaction (context manager yielding a ``Connection``), committed on exit."""
        return _WriteTransaction(self.engine)

    # --- writing (through the DB-API writer, see writer.py) ------------------------------------

    @property
    def writer(self) -> HistoryWriter:
        """The driver-level writer on the same database, opened on first use."""
        if self._writer is None:
            self._writer = HistoryWriter.open(self.url)
        return self._writer

    def open_run(self, config: Mapping[str, Any], **kwargs: Any) -> str:
        """``HistoryWriter.open_run`` on this database."""
        return self.writer.open_run(config, **kwargs)

    def add_items(self, run_id: str, records: Iterable[Mapping[str, Any]]) -> int:
        """``HistoryWriter.add_items`` on this database."""
        return self.writer.add_items(run_id, records)

    def finish_run(self, run_id: str, **kwargs: Any) -> None:
        """``HistoryWriter.finish_run`` on this database."""
        self.writer.finish_run(run_id, **kwargs)

    # --- run references -------------------------------------------------------------------

    def resolve_run(self, ref: str) -> str:
        """The full run id a reference names: a full id, a unique id prefix, ``latest`` or ``latest~N``.

        ``latest`` is the most recently started run, ``latest~1`` the one before it.

        Raises:
            HistoryError: No run matches, a prefix matches several runs (some are
                listed), or ``latest~N`` reaches past the oldest run.
        """
        ref = ref.strip()
        runs = schema.runs
        with self.engine.connect() as conn:
            latest = _LATEST_RE.match(ref)
            if latest:
                back = int(latest.group(1) or 0)
                row = conn.execute(
                    select(runs.c.id).order_by(runs.c.started_ms.desc(), runs.c.id.desc()).offset(back).limit(1)
                ).first()
                if row is None:
                    total = conn.execute(select(func.count()).select_from(runs)).scalar() or 0
                    raise HistoryError(f"run {ref!r}: the history holds {total} run(s)")
                run_id: str = row[0]
                return run_id
            if not ref or not _HEX_RE.match(ref.lower()):
                raise HistoryError(f"run {ref!r}: expected a run id, a unique id prefix, 'latest' or 'latest~N'")
            ref = ref.lower()
            rows = conn.execute(
                select(runs.c.id).where(runs.c.id.startswith(ref, autoescape=True)).order_by(runs.c.id).limit(6)
            ).all()
        if not rows:
            raise HistoryError(f"run {ref!r}: no run id starts with it (groundeval history list shows the runs)")
        if len(rows) > 1:
            shown = ", ".join(r[0][:12] for r in rows[:5])
            raise HistoryError(
                f"run {ref!r} is ambiguous: it starts {'more than 5' if len(rows) > 5 else len(rows)} "
                f"run ids ({shown}); give more digits"
            )
        only: str = rows[0][0]
        return only


def current_set_id(run_id: str) -> Any:
    """A scalar subquery: the id of ``run_id``'s current judgment set (docs/history.md, "Judgment sets")."""
    sets = schema.judgment_sets
    return select(sets.c.id).where(sets.c.run_id == run_id, sets.c.is_current.is_(True)).scalar_subquery()


class _WriteTransaction:
    """A write transaction; turns a lock timeout into a ``HistoryError`` naming the database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.conn: Connection | None = None
        self.tx: Any = None

    def __enter__(self) -> Connection:
        self.conn = self.engine.connect().execution_options(**WRITE)
        try:
            self.tx = self.conn.begin()
        except OperationalError as exc:
            self.conn.close()
            raise HistoryError(f"history database {describe_url(str(self.engine.url))}: {_first_line(exc)}") from exc
        return self.conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self.conn is not None
        try:
            if exc_type is None:
                self.tx.commit()
            else:
                self.tx.rollback()
        finally:
            self.conn.close()
