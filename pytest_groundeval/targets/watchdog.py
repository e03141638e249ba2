"""The spawned target's watchdog, and the one test of whether a process group is still alive.

``python -m pytest_groundeval.targets.watchdog PGID GRACE_S`` reads its standard input
until it closes, then ends process group PGID as ``SpawnedTarget.stop`` would: SIGTERM,
up to GRACE_S seconds for the group to empty, SIGKILL to what is left.

Ends a spawned target's process group when the harness goes away without tearing down.

pytest killed by SIGTERM or SIGKILL (a cancelled CI job, a crashed xdist worker)
runs no fixture teardown, and the target, in a session of its own, would live on
as an orphan. The watchdog holds the read end of a pipe whose write end only the
harness holds; when the harness exits, however it exits, the read returns and the
watchdog terminates the group as ``stop`` would.

This module imports nothing of the package, so the watchdog starts in milliseconds.
"""

from __future__ import annotations

import os
import signal
import sys
import time


def group_alive(pgid: int) -> bool:
    """True while any process of group ``pgid`` is running (zombies count as gone).

    Zombies must not count: in containers whose init does not reap, an exited
    grandchild stays a zombie in the group forever, and waiting for it would wait
    out the whole grace period.
    """
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    with os.scandir("/proc") as entries:
        pids = [entry.name for entry in entries if entry.name.isdigit()]
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp, ...
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def end_group(pgid: int, grace_s: float) -> None:
    """SIGTERM group ``pgid``, wait up to ``grace_s`` for it to empty, SIGKILL what is left."""
    if not group_alive(pgid):
        return
    try:
        os.killpg(pgid, signal.SIGTERM)
    except OSError:
        pass
    deadline = time.monotonic() + grace_s
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def main(argv: list[str]) -> None:
    """Wait for the harness to close (or lose) the pipe, then end the group."""
    pgid, grace_s = int(argv[0]), float(argv[1])
    sys.stdin.buffer.read()  # returns when the harness closes the pipe, or dies
    end_group(pgid, grace_s)


if __name__ == "__main__":
    main(sys.argv[1:])
