"""Shared pieces of the benchmark scripts: timed subprocesses, the instant target, tables.

Every benchmark runs its subject and its baseline side by side in one
invocation, interleaved round by round, and reports ratios of medians; the
absolute figures depend on the machine and on whatever else it is doing.

``BENCH_REV=<git revision>`` measures that commit's ``pytest_groundeval`` instead
of the working tree: the package is exported with ``git archive`` into a temp
dir that goes first on ``sys.path`` (this process) and ``PYTHONPATH`` (every
child), ahead of the editable install. Useful in a shared working tree where
someone's edit is half done, and for before/after comparisons.
``BENCH_SOURCE=<dir>`` does the same with a directory holding a (patched) copy
of the ``pytest_groundeval`` package, to measure a proposed change.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import io
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
PYTHON = sys.executable


def export_rev(rev: str) -> str:
    """``rev``'s ``pytest_groundeval`` exported into a temp dir (removed at exit); returns the dir."""
    archive = subprocess.run(
        ["git", "archive", rev, "pytest_groundeval"], cwd=REPO, capture_output=True, check=True
    ).stdout
    dest = tempfile.mkdtemp(prefix="bench-src-")
    atexit.register(shutil.rmtree, dest, True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest)
    return dest


def _pin_source() -> str | None:
    source = os.environ.get("BENCH_SOURCE")
    if source:
        if not (Path(source) / "pytest_groundeval" / "__init__.py").is_file():
            raise SystemExit(f"BENCH_SOURCE={source}: no pytest_groundeval package in that directory")
        source = str(Path(source).resolve())
        sys.path.insert(0, source)
        return source
    rev = os.environ.get("BENCH_REV")
    if not rev:
        return None
    dest = export_rev(rev)
    sys.path.insert(0, dest)
    return dest


SOURCE = _pin_source()
"""Where ``pytest_groundeval`` is imported from when ``BENCH_REV`` is set (else None: the working tree)."""

QUIET_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
"""Given to every pytest run on both sides of a comparison: no cache writes, and no
Hypothesis plugin (it imports Hypothesis in every terminal summary, ~0.3 s that
says nothing about either side)."""


@dataclass(frozen=True)
class Measured:
    """One finished subprocess."""

    wall_s: float
    """Wall time from start to exit, in seconds."""
    max_rss_mib: float
    """Peak resident set size of the child, in MiB (``ru_maxrss`` of that one child)."""
    cpu_s: float
    """User + system CPU time of the child, in seconds."""
    returncode: int
    output: str
    """The child's stdout and stderr (stderr appended)."""


def run_measured(cmd: Sequence[str], *, cwd: str | Path | None = None, env: dict | None = None) -> Measured:
    """Run ``cmd`` to completion and measure it.

    Peak memory comes from ``os.wait4``, which returns the ``struct rusage`` of
    exactly this child: the same ``ru_maxrss`` that ``getrusage(RUSAGE_CHILDREN)``
    reports in a fresh parent that ran only this child, without that figure's
    pitfall of being the maximum over every child the parent ever waited for.

    Raises:
        RuntimeError: the command failed; the message carries its output's tail.
    """
    with open(os.devnull, "rb") as stdin:
        out = _spool()
        err = _spool()
        started = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdin=stdin, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    output = _read(out) + _read(err)
    measured = Measured(wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, proc.returncode, output)
    return measured


_PR_SET_CHILD_SUBREAPER = 36
"""``prctl`` option (Linux): orphaned descendants are re-parented to this process, which can reap them."""


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux ``prctl``); False where that is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def run_measured_tree(
    cmd: Sequence[str], *, cwd: str | Path | None = None, env: dict | None = None, linger_s: float = 10.0
) -> Measured:
    """``run_measured``, with ``cpu_s`` the CPU time of the child's whole process tree.

    ``run_measured``'s figure (``os.wait4`` of the child) counts the child and the descendants
    it reaped, not those nobody reaped: a spawned server's multiprocessing forkserver or resource
    tracker outlives the server and is re-parented to init. Here this process is made their
    reaper (``become_subreaper``), and after the child exits every descendant is awaited (up to
    ``linger_s`` seconds) and reaped; the CPU is the change in ``RUSAGE_CHILDREN``. Wall time
    and peak RSS stay the child's own. Elsewhere than Linux it is ``run_measured``.
    """
    if not become_subreaper():
        return run_measured(cmd, cwd=cwd, env=env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    measured = run_measured(cmd, cwd=cwd, env=env)
    deadline = time.monotonic() + linger_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break  # no descendant left
        if pid == 0:
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tree_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Measured(measured.wall_s, measured.max_rss_mib, tree_cpu, measured.returncode, measured.output)


def check(measured: Measured, what: str, ok: Sequence[int] = (0,)) -> Measured:
    """Return ``measured``, or raise when its exit code is not one of ``ok``."""
    if measured.returncode not in ok:
        tail = "\n".join(measured.output.splitlines()[-25:])
        raise RuntimeError(f"{what} exited {measured.returncode}:\n{tail}")
    return measured


def expect_output(name: str, output: str, wanted: Sequence[str], *, tail_lines: int = 15) -> None:
    """Raise, with the output's last lines, unless every text in ``wanted`` is in ``output``."""
    for text in wanted:
        if text not in output:
            tail = "\n".join(output.splitlines()[-tail_lines:])
            raise RuntimeError(f"{name}: expected '{text}' in the output:\n{tail}")


def _spool():
    return tempfile.TemporaryFile()


def _read(handle) -> str:
    handle.seek(0)
    text = handle.read().decode("utf-8", "replace")
    handle.close()
    return text


@contextlib.contextmanager
def instant_target(api_key: str = "k") -> Iterator[str]:
    """Start ``instant_target.py`` on a free loopback port; yield its base URL; stop it."""
    proc = subprocess.Popen(
        [PYTHON, str(BENCH_DIR / "instant_target.py"), "--port", "0", "--api-key", api_key],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise RuntimeError(f"instant target failed to start: {line}{proc.stdout.read()}")
        yield line.removeprefix("listening on ")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def pytest_env(*, path: Sequence[str | Path] = (), **extra: str) -> dict[str, str]:
    """The environment for a child: ours, without GROUNDEVAL_* settings leaking in.

    ``path`` entries go on ``PYTHONPATH`` after the pinned source (``BENCH_REV``/``BENCH_SOURCE``).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDEVAL_") and k != "PYTEST_ADDOPTS"}
    entries = [SOURCE, *map(str, path), env.get("PYTHONPATH")]
    if any(entries[:-1]):
        env["PYTHONPATH"] = os.pathsep.join(p for p in entries if p)
    env.update(extra)
    return env


def write_ini(directory: Path) -> Path:
    """An empty ``pytest.ini`` so that ``directory`` is the rootdir and no project config applies."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return directory


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def spread(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    """``median (min–max)`` of the values, formatted."""
    return f"{fmt.format(median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def machine_note() -> str:
    """CPU count, load average and the git commit (``+dirty`` when the tree has changes)."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    try:
        commit = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=REPO, capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    if os.environ.get("BENCH_SOURCE"):
        commit = f"BENCH_SOURCE={SOURCE}"
    elif SOURCE is not None:
        rev = os.environ["BENCH_REV"]
        resolved = subprocess.run(["git", "rev-parse", "--short", rev], cwd=REPO, capture_output=True, text=True)
        commit = f"commit {resolved.stdout.strip()} (BENCH_REV={rev})"
    elif commit:
        commit = f"commit {commit}"
    return f"{os.cpu_count()} CPUs, load average {load}, {commit or 'commit unknown'}, Python {sys.version.split()[0]}"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (pastes into benchmarks/README.md as it is)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def verdict(ratio: float, goal: float, at_most: bool) -> str:
    """``met`` or ``missed by N%`` for a ratio against a goal (``at_most``: lower is better)."""
    met = ratio <= goal if at_most else ratio >= goal
    if met:
        return "met"
    return f"missed by {abs(ratio / goal - 1) * 100:.0f}%"
