"""The reference server's verification pool workers: lower priority, and end with the server.

``app.new_verifier`` starts its process pool with ``pool_worker_init`` as the initializer:
each worker lowers its scheduling priority (``lower_priority``) and ends when the server
process ends, however it ends (``exit_with``).
"""

from __future__ import annotations

import os
import select
import threading
import time

WORKER_NICENESS = 10
"""How much a verification pool worker lowers its scheduling priority (``os.nice``)."""


def lower_priority() -> None:
    """Lower this process's scheduling priority: ``os.nice(WORKER_NICENESS)`` where there is one.

    Verification is batch work; the event loop answering small requests is
    not. On a machine with few cores a busy worker otherwise takes the core the
    loop is waiting for (``benchmarks/bench_verify_latency.py``).
    """
    if hasattr(os, "nice"):
        try:
            os.nice(WORKER_NICENESS)
        except OSError:  # pragma: no cover - not permitted: run at normal priority
            pass


SERVER_POLL_S = 1.0
"""How often a pool worker looks for its server where it cannot wait on a process handle (no ``os.pidfd_open``)."""


def pool_worker_init(server_pid: int) -> None:
    """Initializer of the server's verification pool workers: :func:`lower_priority`, then :func:`exit_with`.

    Args:
        server_pid: The process id of the server that made the pool.
    """
    lower_priority()
    exit_with(server_pid)


def exit_with(server_pid: int) -> None:
    """End this process as soon as the process ``server_pid`` has ended, from a daemon thread.

    A pool worker blocks on its task queue, whose write end it holds itself,
    so a server killed outright (SIGKILL, an OOM kill) would leave the workers
    and, through them, the forkserver running for good. An orderly stop
    (SIGTERM, SIGINT, cleanup) shuts the pool down first and never gets here.
    Waits on a process file descriptor (``os.pidfd_open``, Linux); elsewhere
    polls ``os.kill(server_pid, 0)`` every :data:`SERVER_POLL_S` seconds.
    A server already gone when this runs ends the worker at once.
    """
    try:
        handle = os.pidfd_open(server_pid) if hasattr(os, "pidfd_open") else None
    except ProcessLookupError:
        os._exit(0)
    except OSError:  # pragma: no cover - a kernel without pidfd: poll instead
        handle = None

    def watch() -> None:
        if handle is not None:
            select.select([handle], [], [])  # readable once the process has ended
            os._exit(0)
        while True:  # pragma: no cover - platforms without pidfd_open
            time.sleep(SERVER_POLL_S)
            try:
                os.kill(server_pid, 0)
            except ProcessLookupError:
                os._exit(0)
            except PermissionError:
                pass  # alive, owned by someone else

    threading.Thread(target=watch, name="verify-exit-with-server", daemon=True).start()
