"""Keep the collector off the objects a run keeps until the process ends (``gc.freeze``).

A run imports some 75,000 long-lived objects (classes, functions, pydantic schemas).
Every full collection walks them again, pytest's five at the end of a session
(``_pytest.unraisableexception``) included: about 0.3 s of CPU per process on a
2-core CI machine, paid by the controller and each xdist worker
(benchmarks/README.md, "Start-up").
"""

from __future__ import annotations

import gc

__all__ = ["freeze_long_lived_objects"]

_frozen = False
"""Whether this process has frozen (``gc.get_freeze_count`` walks the whole frozen list: slow)."""


def freeze_long_lived_objects() -> None:
    """Collect the garbage there is, then move every object still alive out of the collector's sight.

    Called once per process where the heavy modules are in: when a runner starts (an xdist
    worker, or a run without xdist) and when an xdist controller starts its session. Garbage
    is collected first, so nothing pytest would report as unraisable is hidden; what becomes
    garbage later is collected as usual, and objects frozen here are freed when the process
    ends (Python docs, ``gc.freeze``). A second call in the same process (pytester's in-process
    runs) does nothing.
    """
    global _frozen
    if _frozen:
        return
    _frozen = True
    gc.collect()
    gc.freeze()
