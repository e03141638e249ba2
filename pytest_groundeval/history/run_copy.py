"""A stored run copied as a new run, to be rejudged beside it (``groundeval rejudge --as-new-run``; docs/history.md).

Rejudging a run in place makes the new judgment set its current one: its metrics and gate
are then the new judge's, the old ones kept only on the earlier set. To compare two judges
(or a judge and a jury) on the same stored answers with ``groundeval history compare``,
:func:`copy_run` copies the run as a new run first: its row (figures, gate, a ``copiedFrom``
in its config), its items with their tags and tool calls, and the current judgment set's
judgments as the copy's own set. The copy is then rejudged; the stored run is untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import insert, select

from . import schema
from .engine import HistoryError
from .store import HistoryStore, now_ms
from .writer import new_run_id

__all__ = ["copy_run"]


def _rows(conn: Any, table: Any, where: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in conn.execute(select(table).where(where)).mappings()]


def copy_run(store: HistoryStore, ref: str, *, label: str | None = None) -> str:
    """Copy a finished run as a new run (module docstring); returns the new run's id.

    Args:
        store: The history.
        ref: The run to copy (a full id, unique prefix, ``latest`` or ``latest~N``).
        label: The copy's label; default ``copy of <first 12 digits of the run's id>``.

    Raises:
        HistoryError: ``ref`` names no run, or the run has no finish time (a rejudge of a
            part of a run would store metrics for that part) or no current judgment set.
    """
    runs, items, tags, tools = schema.runs, schema.items, schema.item_tags, schema.tool_calls
    sets, judgments = schema.judgment_sets, schema.judgments
    run_id = store.resolve_run(ref)
    new_id, now = new_run_id(), now_ms()
    with store.write() as conn:
        run = conn.execute(select(runs).where(runs.c.id == run_id)).mappings().one()
        if run["finished_ms"] is None:
            raise HistoryError(
                f"run {run_id[:12]} has no finish time (killed or still running): a copy would store metrics for "
                "part of a run"
            )
        current = conn.execute(select(sets).where(sets.c.run_id == run_id, sets.c.is_current.is_(True))).mappings()
        current_set = current.one_or_none()
        if current_set is None:
            raise HistoryError(f"run {run_id[:12]} has no current judgment set (docs/history.md)")
        config: Mapping[str, Any] = run["config"] if isinstance(run["config"], Mapping) else {}
        conn.execute(
            insert(runs).values(
                {**dict(run), "id": new_id, "label": label or f"copy of {run_id[:12]}",
                 "config": {**config, "copiedFrom": run_id}, "started_ms": now, "finished_ms": now}
            )
        )  # fmt: skip
        old_items = _rows(conn, items, items.c.run_id == run_id)
        if old_items:
            conn.execute(insert(items), [{**{k: v for k, v in row.items() if k != "id"}, "run_id": new_id}
                                         for row in old_items])  # fmt: skip
        new_keys = dict(conn.execute(select(items.c.item_id, items.c.id).where(items.c.run_id == new_id)).all())
        key = {row["id"]: new_keys[row["item_id"]] for row in old_items}
        for table in (tags, tools):
            copied = [{**row, "item": key[row["item"]], "run_id": new_id}
                      for row in _rows(conn, table, table.c.run_id == run_id)]  # fmt: skip
            if copied:
                conn.execute(insert(table), copied)
        new_set = conn.execute(
            insert(sets)
            .returning(sets.c.id)
            .values({**{k: v for k, v in current_set.items() if k != "id"}, "run_id": new_id, "created_ms": now})
        ).scalar_one()
        copied = [
            {**{k: v for k, v in row.items() if k != "id"}, "set_id": new_set, "item": key[row["item"]],
             "run_id": new_id}
            for row in _rows(conn, judgments, judgments.c.set_id == current_set["id"])
        ]  # fmt: skip
        if copied:
            conn.execute(insert(judgments), copied)
    return new_id
