"""Bitemporal records: valid time (when a fact holds) and transaction time (when we knew it).

Each write makes a *version* row. A version has a record id, a label, properties,
a valid interval ``[validStart, validEnd)`` (RFC 3339 on the wire, epoch ms in
storage, a null end is open, a null start is open towards the past) and a
transaction interval ``[txStart, txEnd)`` (integer ms since the epoch, a null
end means still current). Rules (docs/target-contract.md, docs/dataset.md):

- ``create`` starts a new history under a fresh id.
- ``update`` closes the current version (its ``txEnd`` becomes the update's tx
  time) and inserts the new one. Fields the update omits (label, properties,
  validTime) carry over from the closed version; properties given replace the
  old ones wholesale (no merge).
- ``delete`` closes the current version and inserts nothing: the id has no
  current version afterwards. A later ``create`` starts a fresh history (new id);
  there is no "deleted" flag anywhere.
- A version is visible as of ``(asOfTx, asOfValid)`` when
  ``txStart <= asOfTx < txEnd`` and ``validStart <= asOfValid < validEnd``.
- Transaction times come from the tenant's monotonic clock
  (``store.next_tx``), so two writes in one millisecond are still ordered.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .store import current_tx, next_tx, write_transaction


class RecordNotFound(LookupError):
    """``target`` names no record with a current version in this tenant."""


def parse_instant(value: str) -> int:
    """Parse an RFC 3339 timestamp into epoch milliseconds (an instant, never a string).

    ``2024-03-01T12:00:00+02:00`` and ``2024-03-01T10:00:00Z`` give the same value.

    Raises:
        ValueError: not a timestamp, or no UTC offset (a local time is not an instant).
    """
    text = value.strip()
    if text[-1:] in ("z", "Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{value!r} is not an RFC 3339 timestamp (e.g. 2024-03-01T12:00:00Z)") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{value!r} has no UTC offset; write e.g. {value}Z or {value}+02:00")
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400_000) + (delta.seconds * 1000) + (delta.microseconds // 1000)


@dataclass(frozen=True)
class Version:
    """One stored version of a record."""

    record_id: str
    label: str
    properties: dict[str, Any]
    valid_start: str | None
    """The valid-time start as the client wrote it (None: open towards the past)."""
    valid_end: str | None
    """The valid-time end as the client wrote it (None: open)."""
    valid_start_ms: int | None
    valid_end_ms: int | None
    tx_start: int
    """Transaction time the version was written, ms since epoch."""
    tx_end: int | None
    """Transaction time it was closed by an update or delete; None while current."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Version:
        """Build from a ``record_versions`` row."""
        return cls(
            record_id=row["record_id"],
            label=row["label"],
            properties=json.loads(row["properties"]),
            valid_start=row["valid_start"],
            valid_end=row["valid_end"],
            valid_start_ms=row["valid_start_ms"],
            valid_end_ms=row["valid_end_ms"],
            tx_start=row["tx_start"],
            tx_end=row["tx_end"],
        )

    def to_wire(self) -> dict[str, Any]:
        """The record as ``/v1/query`` returns it: ``{id, label, properties, validTime, txStart, txEnd}``."""
        return {
            "id": self.record_id,
            "label": self.label,
            "properties": self.properties,
            "validTime": {"start": self.valid_start, "end": self.valid_end},
            "txStart": self.tx_start,
            "txEnd": self.tx_end,
        }

    def content(self) -> tuple[str, str, int | None, int | None]:
        """What ``/v1/compare`` compares: label, properties, and the valid interval as instants."""
        return (self.label, json.dumps(self.properties, sort_keys=True), self.valid_start_ms, self.valid_end_ms)


def is_visible(version: Version, as_of_tx: int, as_of_valid_ms: int) -> bool:
    """Whether ``version`` is visible as of transaction time and valid time (both ms)."""
    in_tx = version.tx_start <= as_of_tx and (version.tx_end is None or as_of_tx < version.tx_end)
    in_valid = (version.valid_start_ms is None or version.valid_start_ms <= as_of_valid_ms) and (
        version.valid_end_ms is None or as_of_valid_ms < version.valid_end_ms
    )
    return in_tx and in_valid


def _current_version(conn: sqlite3.Connection, tenant_id: str, record_id: str) -> sqlite3.Row:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM record_versions WHERE tenant_id = ? AND record_id = ? AND tx_end IS NULL",
        (tenant_id, record_id),
    ).fetchone()
    if row is None:
        raise RecordNotFound(f"no current record with id {record_id!r} (never created, or deleted)")
    return row


@dataclass(frozen=True)
class ValidInterval:
    """A valid-time interval: the wire strings and their instants."""

    start: str | None
    end: str | None
    start_ms: int | None
    end_ms: int | None


def write_record(
    conn: sqlite3.Connection,
    tenant_id: str,
    *,
    op: str,
    target: str | None,
    label: str | None,
    properties: dict[str, Any] | None,
    valid: ValidInterval | None,
) -> tuple[str, int]:
    """Apply one ``/v1/records`` write. Returns ``(id, txStart)`` of the write.

    Args:
        op: ``create``, ``update`` or ``delete``.
        target: record id for update/delete (ignored by create, which makes a new id).
        label, properties, valid: the new version's fields; None carries them over on update.

    Raises:
        RecordNotFound: update/delete of an id with no current version.
    """
    with write_transaction(conn):
        if op == "create":
            record_id = "rec_" + uuid.uuid4().hex
            tx = next_tx(conn, tenant_id)
            _insert_version(conn, tenant_id, record_id, label or "", properties or {}, valid, tx)
            return record_id, tx
        assert target is not None
        old = _current_version(conn, tenant_id, target)
        tx = next_tx(conn, tenant_id)
        conn.execute("UPDATE record_versions SET tx_end = ? WHERE version = ?", (tx, old["version"]))
        if op == "update":
            if valid is None:
                valid = ValidInterval(old["valid_start"], old["valid_end"], old["valid_start_ms"], old["valid_end_ms"])
            new_properties = json.loads(old["properties"]) if properties is None else properties
            _insert_version(conn, tenant_id, target, label or old["label"], new_properties, valid, tx)
        return target, tx


def _insert_version(
    conn: sqlite3.Connection,
    tenant_id: str,
    record_id: str,
    label: str,
    properties: dict[str, Any],
    valid: ValidInterval | None,
    tx: int,
) -> None:
    valid = valid or ValidInterval(None, None, None, None)
    conn.execute(
        "INSERT INTO record_versions (tenant_id, record_id, label, properties, valid_start, valid_end,"
        " valid_start_ms, valid_end_ms, tx_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            tenant_id,
            record_id,
            label,
            json.dumps(properties, ensure_ascii=False),
            valid.start,
            valid.end,
            valid.start_ms,
            valid.end_ms,
            tx,
        ),
    )


def _tx_visible(
    conn: sqlite3.Connection, tenant_id: str, label: str | None, target: str | None, as_of_tx: int
) -> list[Version]:
    sql = "SELECT * FROM record_versions WHERE tenant_id = ? AND tx_start <= ? AND (tx_end IS NULL OR ? < tx_end)"
    params: list[Any] = [tenant_id, as_of_tx, as_of_tx]
    if label is not None:
        sql += " AND label = ?"
        params.append(label)
    if target is not None:
        sql += " AND record_id = ?"
        params.append(target)
    sql += " ORDER BY tx_start, version"
    return [Version.from_row(row) for row in conn.execute(sql, params)]


def query_records(
    conn: sqlite3.Connection,
    tenant_id: str,
    *,
    label: str | None,
    target: str | None,
    as_of_tx: int | None,
    as_of_valid_ms: int,
) -> list[dict[str, Any]]:
    """``/v1/query``: the versions visible as of ``(as_of_tx, as_of_valid_ms)``, oldest write first.

    ``label``/``target`` None means no filter on that field; ``as_of_tx`` None
    means now (``store.current_tx``: every acknowledged write is visible).
    """
    if as_of_tx is None:
        as_of_tx = current_tx(conn, tenant_id)
    versions = _tx_visible(conn, tenant_id, label, target, as_of_tx)
    return [v.to_wire() for v in versions if is_visible(v, as_of_tx, as_of_valid_ms)]


def compare_records(
    conn: sqlite3.Connection,
    tenant_id: str,
    *,
    label: str | None,
    target: str | None,
    from_tx: int,
    to_tx: int | None,
) -> dict[str, list[dict[str, Any]]]:
    """``/v1/compare``: the record set current as of ``from_tx`` against that as of ``to_tx`` (None: now).

    "Current" is transaction time only (every valid interval counts): what the
    store believed at each moment. A record is ``changed`` when its label,
    properties or valid interval (as instants) differ between the two.

    Returns:
        ``{"added": [record], "removed": [record], "changed": [{"id", "before", "after"}]}``.
    """
    if to_tx is None:
        to_tx = current_tx(conn, tenant_id)
    before = {v.record_id: v for v in _tx_visible(conn, tenant_id, label, target, from_tx)}
    after = {v.record_id: v for v in _tx_visible(conn, tenant_id, label, target, to_tx)}
    added = [v.to_wire() for rid, v in after.items() if rid not in before]
    removed = [v.to_wire() for rid, v in before.items() if rid not in after]
    changed = [
        {"id": rid, "before": before[rid].to_wire(), "after": v.to_wire()}
        for rid, v in after.items()
        if rid in before and before[rid].content() != v.content()
    ]
    return {"added": added, "removed": removed, "changed": changed}
