"""Benchmark 3 (issue 8): corpus hashing of a 1 GiB file in the page cache vs ``cat``.

Run: ``python benchmarks/bench_hash.py [--size-mib 1024] [--rounds 9]`` (about 30 s).

Writes a file of random bytes in ``/tmp`` (deleted at the end), reads it once
to warm the page cache, then, interleaved round by round:

- *cat*: ``cat FILE > /dev/null`` as a subprocess (what reading the bytes costs);
- *hash_file*: ``pytest_groundeval.core.dataset.corpus.hash_file(FILE)`` in this process
  (xxh3_64 over the file, docs/dataset.md; what ``groundeval hash-corpus`` does);
- *read_hashed*: the corpus loader's read-and-hash of a document it keeps in
  memory (``dataset._read_hashed``);
- with ``--variants``: the same streaming loop with other buffer sizes and an
  ``mmap``, to show why ``hash_file`` uses the buffer it does.

Reported: GiB/s of each (median over rounds) and throughput relative to cat,
by wall time and per CPU second (user + system: the kernel's copy into the
buffer counts; steadier than wall time when other work shares the machine).
Goal for ``hash_file``: ≥ 0.85× by wall time.
"""

from __future__ import annotations

import argparse
import functools
import mmap
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable

import _harness as h
import xxhash

from pytest_groundeval.core.dataset import corpus as dataset

GOAL = 0.85
_BLOCK = 16 * 2**20


def write_random_file(size: int) -> str:
    """A file of ``size`` random bytes in the temp dir (a 16 MiB random block repeated)."""
    block = os.urandom(_BLOCK)
    handle = tempfile.NamedTemporaryFile(prefix="bench-hash-", suffix=".bin", delete=False)
    with handle:
        remaining = size
        while remaining > 0:
            handle.write(block[: min(remaining, _BLOCK)])
            remaining -= _BLOCK
    return handle.name


def cat(path: str) -> tuple[float, float]:
    """``cat path > /dev/null``: (wall s, CPU s of the cat process)."""
    measured = h.check(h.run_measured(["sh", "-c", 'exec cat "$0" > /dev/null', path]), "cat")
    return measured.wall_s, measured.cpu_s


def streamed(buffer_size: int) -> Callable[[str], str]:
    """``hash_file`` with another buffer size (for ``--variants``)."""
    return functools.partial(dataset.hash_file, buffer_size=buffer_size)


def mapped(path: str) -> str:
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        return xxhash.xxh3_64(view).hexdigest()


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(fn: Callable[[str], object], path: str) -> tuple[float, float]:
    """(wall s, CPU s) of ``fn(path)`` in this process; CPU includes the kernel's copying."""
    if fn is cat:
        return cat(path)
    cpu = _cpu_self()
    started = time.perf_counter()
    fn(path)
    return time.perf_counter() - started, _cpu_self() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="file size in MiB")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds")
    parser.add_argument("--variants", action="store_true", help="also time other buffer sizes and mmap")
    args = parser.parse_args(argv)

    size = args.size_mib * 2**20
    print(f"benchmark 3: hashing a {args.size_mib} MiB file, {args.rounds} rounds; {h.machine_note()}")
    sides: dict[str, Callable[[str], object]] = {
        "cat > /dev/null": cat,
        "hash_file": dataset.hash_file,
        "read_hashed": lambda p: dataset._read_hashed(p),
    }
    if args.variants:
        for kib in (64, 128, 256, 1024, 4096):
            sides[f"stream {kib} KiB"] = streamed(kib * 1024)
        sides["mmap"] = mapped
    path = write_random_file(size)
    try:
        expected = xxhash.xxh3_64_hexdigest(open(path, "rb").read())
        if dataset.hash_file(path) != expected:
            raise RuntimeError("hash_file disagrees with xxh3_64 of the whole file")
        cat(path)  # warm the page cache
        seconds: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, fn in sides.items():
                wall_s, cpu_s = timed(fn, path)
                seconds[name].append(wall_s)
                cpu[name].append(cpu_s)
    finally:
        os.unlink(path)
    gib = size / 2**30
    base = h.median(seconds["cat > /dev/null"])
    base_cpu = h.median(cpu["cat > /dev/null"])
    rows = []
    for name, values in seconds.items():
        rows.append(
            [
                name,
                f"{gib / h.median(values):.2f} ({gib / max(values):.2f}–{gib / min(values):.2f})",
                f"{base / h.median(values):.2f}",
                f"{gib / h.median(cpu[name]):.2f}",
                f"{base_cpu / h.median(cpu[name]):.2f}",
            ]
        )
    print(
        h.table(
            [
                "reader",
                "GiB/s wall, median (min–max)",
                "wall throughput / cat",
                "GiB per CPU s",
                "CPU throughput / cat",
            ],
            rows,
        )
    )
    ratio = base / h.median(seconds["hash_file"])
    ratio_cpu = base_cpu / h.median(cpu["hash_file"])
    print(
        f"hash_file / cat throughput: {ratio:.2f}x wall, {ratio_cpu:.2f}x per CPU second "
        f"(goal >= {GOAL}x: {h.verdict(ratio, GOAL, at_most=False)} on wall time)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
