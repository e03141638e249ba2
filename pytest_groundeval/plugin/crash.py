"""Blaming a crashed xdist worker on the right items (docs/gate.md: what the gate guarantees).

With ``--eval-concurrency`` above 1 a worker sends items to the target ahead of the one
pytest is running. When the target ends the worker's process (an in-process target
calling ``os._exit``, a segfault in a native library), xdist blames whichever item
pytest was running, and puts the worker's other pending items back in the queue, so
the item that really crashed it goes on to crash the next worker.

A journal fixes that. Each worker appends ``sent`` (before its target call starts)
and ``done`` (when the call has finished, whatever its result) lines for every item
to ``<journal>/<worker id>.jsonl``, one small line each, unbuffered, so they survive
the process dying. When a worker dies the controller reads its journal:

- items sent and not done were *in flight*: one of them crashed it. Each is written
  to ``<journal>/poisoned.json`` with a message naming all of them; a worker given
  one of them later records that error instead of calling the target again, so the
  culprit is never retried;
- the item xdist blames is given that message, or, when its call had finished
  (not the culprit), it is put back in the queue to be run again and report its
  real result (``pytest_handlecrashitem``'s documented rerun);
- an in-flight item that never reports (xdist ran out of worker restarts and
  stopped before handing it to another worker) is still a crash at the end of the
  session, with that message (``crash_of``), never "not run".

The journal directory is the controller's, passed to workers in ``workerinput``,
and removed at the end of the session.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

WORKERINPUT_KEY = "groundeval_journal"
"""``workerinput`` key carrying the journal directory to each xdist worker."""

POISONED = "poisoned.json"


def _line(event: str, nodeid: str) -> bytes:
    return (json.dumps({event: nodeid}, ensure_ascii=False) + "\n").encode("utf-8")


class WorkerJournal:
    """The worker's side: records what it sends and finishes; tells it which items not to run.

    Args:
        directory: The session's journal directory.
        worker_id: This worker's id (``gw0``, …).
    """

    def __init__(self, directory: str | Path, worker_id: str) -> None:
        self.directory = Path(directory)
        self._fd = os.open(self.directory / f"{worker_id}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._poisoned: dict[str, str] = {}
        self._poisoned_mtime: float | None = None

    @classmethod
    def for_worker(cls, config: Any) -> WorkerJournal | None:
        """The journal of this xdist worker, or None outside xdist."""
        workerinput = getattr(config, "workerinput", None)
        if not workerinput or WORKERINPUT_KEY not in workerinput:
            return None
        return cls(workerinput[WORKERINPUT_KEY], workerinput["workerid"])

    def sent(self, nodeid: str) -> None:
        """The item's target call is about to start."""
        os.write(self._fd, _line("sent", nodeid))

    def done(self, nodeid: str) -> None:
        """The item's target call has finished (with an outcome or an error)."""
        os.write(self._fd, _line("done", nodeid))

    def poisoned(self, nodeid: str) -> str | None:
        """Why ``nodeid`` must not be run (it was in flight when a worker crashed), or None."""
        path = self.directory / POISONED
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            return None
        if mtime != self._poisoned_mtime:
            try:
                self._poisoned = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            self._poisoned_mtime = mtime
        return self._poisoned.get(nodeid)

    def close(self) -> None:
        """Close the journal file."""
        os.close(self._fd)


class ControllerJournal:
    """The controller's side: the directory, and what a dead worker left in it."""

    def __init__(self, base: Path | None = None) -> None:
        """Make the journal directory, under ``base`` (pytest's basetemp) when given.

        Under pytest's basetemp it is cleaned up as pytest's own temporary directories
        are (the last few sessions are kept), also after a run killed before teardown.
        """
        if base is not None:
            base.mkdir(parents=True, exist_ok=True)
        self.directory = Path(tempfile.mkdtemp(prefix="groundeval-journal-", dir=base))
        self.in_flight: dict[str, list[str]] = {}
        """Worker id -> the items it had in flight when it died."""
        self.done: dict[str, set[str]] = {}
        """Worker id -> the items whose calls had finished when it died."""
        self.rerun: set[str] = set()
        """Items put back in the queue after a crash (once each: an item that crashes its
        worker outside its target call must not crash one worker after another)."""
        self.crashed: dict[str, str] = {}
        """Node id -> the crash message of every item that was in flight on a worker that died."""

    def read(self, worker_id: str) -> tuple[list[str], set[str]]:
        """``(sent, done)`` of a worker's journal: sent in order, done as a set."""
        sent: list[str] = []
        done: set[str] = set()
        try:
            raw = (self.directory / f"{worker_id}.jsonl").read_bytes()
        except FileNotFoundError:
            return sent, done
        for line in raw.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut by the crash
            if "sent" in event:
                sent.append(event["sent"])
            elif "done" in event:
                done.add(event["done"])
        return sent, done

    def worker_died(self, worker_id: str, reported: Any) -> list[str]:
        """Poison the items ``worker_id`` had in flight; return them.

        Args:
            worker_id: The dead worker.
            reported: ``nodeid -> bool``: whether the controller already has the item's result.
        """
        sent, done = self.read(worker_id)
        in_flight = [n for n in dict.fromkeys(sent) if n not in done and not reported(n)]
        self.in_flight[worker_id] = in_flight
        self.done[worker_id] = done
        if in_flight:
            message = crash_message(worker_id, in_flight)
            path = self.directory / POISONED
            try:
                poisoned = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                poisoned = {}
            poisoned.update({nodeid: message for nodeid in in_flight})
            self.crashed.update({nodeid: message for nodeid in in_flight})
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(poisoned, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
        return in_flight

    def crash_of(self, nodeid: str) -> str | None:
        """The crash message of ``nodeid`` when it was in flight on a worker that died, else None."""
        return self.crashed.get(nodeid)

    def stop_reason(self) -> str | None:
        """Why items never ran when workers died: ``the session ended after worker gw0 crashed``; None if none died.

        The controller uses it for the items that were never sent to the target when
        xdist stopped (its ``--max-worker-restart`` spent); the items in flight have ``crash_of``.
        """
        if not self.in_flight:
            return None
        workers = list(self.in_flight)
        named = f"worker {workers[0]}" if len(workers) == 1 else f"workers {', '.join(workers)}"
        return f"the session ended after {named} crashed"

    def cleanup(self) -> None:
        """Remove the journal directory."""
        shutil.rmtree(self.directory, ignore_errors=True)


MAX_NAMED = 10


def crash_message(worker_id: str, in_flight: list[str]) -> str:
    """One line naming the items a crashed worker had in flight (at most ``MAX_NAMED`` of them)."""
    names = [nodeid.rsplit("::", 1)[-1] for nodeid in in_flight]
    shown = ", ".join(names[:MAX_NAMED]) + (f", … ({len(names) - MAX_NAMED} more)" if len(names) > MAX_NAMED else "")
    return (
        f"worker {worker_id} crashed while {len(in_flight)} item{'s were' if len(in_flight) != 1 else ' was'} "
        f"in flight ({shown}): one of them crashed it, so none is retried"
    )
