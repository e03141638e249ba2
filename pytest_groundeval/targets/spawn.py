"""Spawned targets: a server started as a child process for one session (docs/target-contract.md).

``SpawnConfig`` / ``SpawnedTarget`` start a server in a fresh data dir on a free
loopback port with a fresh API key, and tear it down; ``reference_command`` is
the spawn command of the embedded reference server. The command runs through
``exec`` in a shell of its own process group, so no shell sits between the
harness and the server, and a watchdog process ends the group if the harness
dies without tearing down.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..core.contract import RUN_ID_ENV
from .placeholders import fill_placeholders
from .protocol import DEFAULT_MAX_RESPONSE_BYTES, SpawnError, TargetError, TargetUnavailable, describe_exit
from .watchdog import group_alive as _group_alive

if TYPE_CHECKING:
    from .http import HttpTarget

__all__ = [
    "MOCK_LLM_API_KEY",
    "SpawnConfig",
    "SpawnedTarget",
    "reference_command",
]

MOCK_LLM_API_KEY = "groundeval-mock"
"""``OPENAI_API_KEY`` given to a spawned child routed to the mock provider (the mock ignores it)."""

LOG_TAIL_LINES = 30
"""Lines of the child's log quoted in a ``SpawnError``."""

READY_POLL_S = 0.02
"""Pause between a spawned child's ``GET /readyz`` polls: a server starts in a fraction of a
second, and each poll of a port nobody listens on yet is one refused connection."""

DYING_GRACE_S = 2.0
"""How long a spawned target that refused a connection gets to finish exiting, so that its
exit status and log tail can explain the failure."""


def reference_command() -> str:
    """Return the spawn command of the embedded reference server (docs/target-contract.md option 1, §7).

    The command carries ``{port}`` and ``{data_dir}`` placeholders; the server
    reads the provider URLs and the bootstrap key from the ``GROUNDEVAL_*``
    environment the spawn machinery sets.
    """
    return f"{shlex.quote(sys.executable)} -m pytest_groundeval.reference --port {{port}} --data-dir {{data_dir}}"


@dataclass
class SpawnConfig:
    """How to spawn a target (docs/target-contract.md option 2).

    ``command`` and every ``setup`` command (and every ``env`` value) may use the
    placeholders ``{port}``, ``{data_dir}``, ``{llm_url}``, ``{embed_url}`` and
    ``{api_key}`` (values are inserted verbatim, not shell-quoted). Any other
    ``{word}`` is an error naming it (``fill_placeholders``); ``{{word}}`` is a
    literal ``{word}``, and braces that are not one word (JSON, ``${VAR}``,
    ``{print $1}``) survive.
    """

    command: str
    """Shell command that starts the target server; it must listen on ``{port}``."""
    setup: list[str] = field(default_factory=list)
    """Shell commands run in order before ``command``; a non-zero exit stops the spawn."""
    ready_timeout_s: float = 60.0
    """Seconds to wait for ``GET /readyz`` to answer 200."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment for setup and the child, over ``os.environ`` (the ``GROUNDEVAL_*`` values win)."""
    llm_url: str | None = None
    """OpenAI-style chat base URL ending in ``/v1`` (the mock's); also ``OPENAI_BASE_URL``."""
    embed_url: str | None = None
    """OpenAI-style embeddings base URL ending in ``/v1``."""
    workdir: str | Path | None = None
    """Working directory of setup and the child; None: the current one."""
    worker_id: str = "master"
    """xdist worker id (``gw0``…) or ``master``; part of the data dir's name."""
    base_dir: str | Path | None = None
    """Where the data dir is created (e.g. from ``tmp_path_factory``); None: the system temp dir."""
    llm_api_key: str | None = MOCK_LLM_API_KEY
    """``OPENAI_API_KEY`` for the child; None leaves the inherited value alone."""
    timeout_s: float = 60.0
    """Per-call deadline of the resulting ``HttpTarget``, in seconds."""
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    """Largest response body the resulting ``HttpTarget`` accepts, in bytes."""
    setup_timeout_s: float = 600.0
    """Seconds one setup command may run before it is killed and the spawn fails."""
    terminate_grace_s: float = 5.0
    """Seconds between SIGTERM and SIGKILL at teardown."""
    run_id: str | None = None
    """The session id, given to setup and the child as ``GROUNDEVAL_RUN_ID`` (docs/target-contract.md)."""


_SHELL_SYNTAX = re.compile(r"[;&|<>()`$\n]|^\s*(cd|export|source|\.)\s|^\s*\w+=")


def exec_form(command: str) -> str:
    """``command`` prefixed with ``exec`` when it is one simple command (POSIX shells).

    The shell then replaces itself with the server, so the harness's child *is*
    the target: signals reach it directly and its exit status is the target's.
    A command using shell syntax (``;``, ``&&``, pipes, redirections, variable
    assignments, ``cd``) is left as it is: ``exec`` would change its meaning.
    """
    if os.name != "posix" or _SHELL_SYNTAX.search(command) or command.lstrip().startswith("exec "):
        return command
    return f"exec {command}"


def free_loopback_port() -> int:
    """A loopback TCP port free now (bound to 0, read, closed); another process may take it before it is used."""
    # Another process may take the port between close and the child's bind;
    # the child then fails to start and the SpawnError shows its log.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]  # an AF_INET address is (host, port)
        return port


def _tail(text: str, n: int) -> str:
    return "\n".join(text.splitlines()[-n:])


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines()) or "    (empty)"


def _kill_group(process: subprocess.Popen[bytes], sig: int) -> None:
    """Send ``sig`` to the child's whole process group (the child leads its own session)."""
    if os.name == "posix":
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    elif process.poll() is None:
        # Without process groups (Windows) only the child itself can be signalled.
        if sig == signal.SIGTERM:
            process.terminate()
        else:
            process.kill()


def _start_watchdog(pgid: int, grace_s: float) -> subprocess.Popen[bytes] | None:
    if os.name != "posix":
        return None
    return subprocess.Popen(
        [sys.executable, "-m", "pytest_groundeval.targets.watchdog", str(pgid), str(grace_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stop_watchdog(watchdog: subprocess.Popen[bytes] | None) -> None:
    """Release the watchdog after a normal teardown (the group is already gone)."""
    if watchdog is None:
        return
    try:
        if watchdog.stdin is not None:  # always set: _start_watchdog opens it as a pipe
            watchdog.stdin.close()
        watchdog.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        watchdog.kill()
        watchdog.wait()


def _new_group_kwargs() -> dict[str, Any]:
    if os.name == "posix":
        return {"start_new_session": True}
    return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]


class SpawnedTarget:
    """A target server run as a child process for one session (docs/target-contract.md options 1 and 2).

    On ``start`` (or entering the ``with`` block): makes a fresh data dir named
    after the worker id, picks a free loopback port, makes a fresh random API
    key, substitutes the placeholders, runs the setup commands in order, starts
    the command in its own process group with stdout and stderr going to
    ``<data_dir>/target.log``, and waits for ``GET /readyz`` to answer 200.
    ``launch`` and ``wait_until_ready`` are the same in two steps, for a caller with work
    of its own to do while the child starts.
    The child's environment is ``os.environ`` plus ``config.env`` plus
    ``GROUNDEVAL_PORT``, ``GROUNDEVAL_DATA_DIR``, ``GROUNDEVAL_LLM_URL``,
    ``GROUNDEVAL_EMBED_URL``, ``GROUNDEVAL_API_KEY``, ``GROUNDEVAL_RUN_ID`` (the session
    id, when ``config.run_id`` is set), ``OPENAI_BASE_URL`` (the
    LLM URL) and ``OPENAI_API_KEY`` (``config.llm_api_key``). The data dir is
    kept after teardown so the log can be read.

    On ``stop`` (or leaving the block), always: SIGTERM to the process group,
    up to ``terminate_grace_s`` for every process in it to exit, SIGKILL to
    what is left (so a stray grandchild never outlives the session), close the
    log.

    Attributes:
        target: The ``HttpTarget`` for the child, using the fresh key.
        base_url: ``http://127.0.0.1:<port>``.
        api_key: The fresh key (also in ``{api_key}`` and ``GROUNDEVAL_API_KEY``).
        port: The loopback port.
        data_dir: The fresh data directory.
        log_path: ``<data_dir>/target.log``: setup output, then the child's output.
        process: The child ``Popen`` (None before ``start``).
        command: The command as run, placeholders substituted.

    Raises (from ``start``):
        SpawnError: a setup command failed or timed out, or the child exited or
            was not ready within ``ready_timeout_s``.
        ValueError: a command uses ``{llm_url}`` / ``{embed_url}`` and the
            config has no value for it, or uses a ``{word}`` that is not a
            placeholder (the message names it and the valid ones).
    """

    def __init__(self, config: SpawnConfig) -> None:
        self.config = config
        self.port: int = 0
        self.api_key: str = ""
        self.base_url: str = ""
        self.data_dir: Path = Path()
        self.log_path: Path = Path()
        self.command: str = ""
        self.process: subprocess.Popen[bytes] | None = None
        self._target: HttpTarget | None = None
        self._log: IO[bytes] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._launched_at = 0.0
        """When the child was started (``time.monotonic()``): the start of ``ready_timeout_s``."""
        self._stopped = False

    def __enter__(self) -> SpawnedTarget:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def target(self) -> HttpTarget:
        """The ``HttpTarget`` for the running child."""
        if self._target is None:
            raise RuntimeError("SpawnedTarget.target used before start()")
        return self._target

    # -- start

    def start(self) -> SpawnedTarget:
        """Set up, start and wait for the child; see the class docstring. Returns self."""
        self.launch()
        self.wait_until_ready()
        return self

    def launch(self) -> SpawnedTarget:
        """``start`` up to the child's start: set up and start it, without waiting for ``GET /readyz``.

        For a caller with work of its own to do while the child starts; ``wait_until_ready``
        follows. Imports no HTTP library (``HttpTarget`` is made by ``wait_until_ready``). On an
        error the child (if started) is stopped first. Returns self.
        """
        if self.process is not None:
            raise RuntimeError("SpawnedTarget.start() called twice")
        config = self.config
        worker = re.sub(r"[^A-Za-z0-9_-]", "_", config.worker_id) or "master"
        base_dir = str(config.base_dir) if config.base_dir is not None else None
        self.data_dir = Path(tempfile.mkdtemp(prefix=f"groundeval-{worker}-", dir=base_dir))
        self.log_path = self.data_dir / "target.log"
        self.port = free_loopback_port()
        # A prefix keeps the key from starting with "-", which argument parsers read as a flag.
        self.api_key = f"ge_{secrets.token_urlsafe(24)}"
        self.base_url = f"http://127.0.0.1:{self.port}"
        values = self._placeholder_values()
        self.command = self._fill(config.command, values)
        setup = [self._fill(cmd, values) for cmd in config.setup]
        env = self._child_env(values)
        self._log = open(self.log_path, "wb")
        try:
            for cmd in setup:
                self._run_setup(cmd, env)
            self._log.write(f"$ {self.command}\n".encode())
            self._log.flush()
            self.process = subprocess.Popen(
                exec_form(self.command),
                shell=True,
                cwd=config.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                **_new_group_kwargs(),
            )
            self._launched_at = time.monotonic()  # --eval-ready-timeout counts from here (wait_until_ready)
            self._watchdog = _start_watchdog(self.process.pid, config.terminate_grace_s)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_until_ready(self) -> SpawnedTarget:
        """Wait for a launched child's ``GET /readyz`` to answer 200 within ``ready_timeout_s`` of its
        start (``launch``), whatever the caller did in between; returns self.

        Raises:
            SpawnError: the child exited or was not ready in time; it is stopped first.
            RuntimeError: the child was not launched.
        """
        if self.process is None:
            raise RuntimeError("SpawnedTarget.wait_until_ready() called before launch()")
        try:
            if self._target is None:
                # Imported here, not by launch: the HTTP stack's imports then overlap the child's start
                # (plugin/spawn_ahead.py).
                from .http import HttpTarget

                self._target = HttpTarget(
                    self.base_url,
                    self.api_key,
                    timeout_s=self.config.timeout_s,
                    max_response_bytes=self.config.max_response_bytes,
                )
            try:
                self._target.wait_ready(
                    self.config.ready_timeout_s, READY_POLL_S, process=self.process, since=self._launched_at
                )
            except TargetUnavailable as exc:
                raise self._spawn_error(f"the target did not become ready: {exc}") from exc
        except BaseException:
            self.stop()
            raise
        return self

    def _placeholder_values(self) -> dict[str, str | None]:
        return {
            "port": str(self.port),
            "data_dir": str(self.data_dir),
            "llm_url": self.config.llm_url,
            "embed_url": self.config.embed_url,
            "api_key": self.api_key,
        }

    @staticmethod
    def _fill(command: str, values: Mapping[str, str | None]) -> str:
        return fill_placeholders(command, values)

    def _child_env(self, values: Mapping[str, str | None]) -> dict[str, str]:
        env = dict(os.environ)
        env.update({key: self._fill(value, values) for key, value in self.config.env.items()})
        harness = {
            "GROUNDEVAL_PORT": values["port"],
            "GROUNDEVAL_DATA_DIR": values["data_dir"],
            "GROUNDEVAL_LLM_URL": values["llm_url"],
            "GROUNDEVAL_EMBED_URL": values["embed_url"],
            "GROUNDEVAL_API_KEY": values["api_key"],
            "OPENAI_BASE_URL": values["llm_url"],
            RUN_ID_ENV: self.config.run_id,
        }
        if values["llm_url"] is not None and self.config.llm_api_key is not None:
            harness["OPENAI_API_KEY"] = self.config.llm_api_key
        env.update({key: value for key, value in harness.items() if value is not None})
        return env

    def _run_setup(self, cmd: str, env: dict[str, str]) -> None:
        """Run one setup command to completion; its output goes to the log and, on failure, the error."""
        assert self._log is not None
        proc = subprocess.Popen(
            cmd,
            shell=True,
            cwd=self.config.workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            **_new_group_kwargs(),
        )
        try:
            output, _ = proc.communicate(timeout=self.config.setup_timeout_s)
            outcome = describe_exit(proc.returncode)
        except subprocess.TimeoutExpired:
            _kill_group(proc, getattr(signal, "SIGKILL", signal.SIGTERM))
            output, _ = proc.communicate()
            outcome = f"timed out after {self.config.setup_timeout_s:g} s"
        self._log.write(f"$ {cmd}\n".encode() + output)
        self._log.flush()
        if proc.returncode != 0 or outcome.startswith("timed out"):
            tail = _tail(output.decode("utf-8", "replace"), LOG_TAIL_LINES)
            raise SpawnError(
                f"setup command failed ({outcome})\n  command: {cmd}\n"
                f"  output (last {LOG_TAIL_LINES} lines):\n{_indent(tail)}",
                command=cmd,
                exit_code=proc.returncode,
                log_tail=tail,
            )

    # -- state

    def is_alive(self) -> bool:
        """True while the child process is running."""
        return self.process is not None and self.process.poll() is None

    def log_tail(self, n: int = LOG_TAIL_LINES) -> str:
        """Return the last ``n`` lines of the log ("" when there is no log yet)."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        return _tail(text, n)

    def ensure_alive(self) -> None:
        """Raise ``SpawnError`` (exit code and log tail) if the child has exited.

        Meant for a caller that just got ``TargetUnavailable`` mid-session: the
        child's death explains it better than a refused connection.
        """
        if self.process is not None and self.process.poll() is not None:
            raise self._spawn_error("the target process died")

    def diagnose(self, error: TargetError) -> str | None:
        """Explain a failed call by the child's death: its exit status and log tail, else None.

        A refused connection may come from a child that closed its port on its way
        out, so it first gets ``DYING_GRACE_S`` to finish exiting.
        """
        if isinstance(error, TargetUnavailable) and self.process is not None:
            try:
                self.process.wait(timeout=DYING_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        try:
            self.ensure_alive()
        except SpawnError as exc:
            return str(exc)
        return None

    def _spawn_error(self, reason: str) -> SpawnError:
        assert self.process is not None
        code = self.process.poll()
        status = (
            describe_exit(code)
            if code is not None
            else f"still running, not ready after {self.config.ready_timeout_s:g} s"
        )
        if self._log is not None:
            self._log.flush()
        tail = self.log_tail(LOG_TAIL_LINES)
        return SpawnError(
            f"{reason}\n  command: {self.command}\n  status: {status}\n"
            f"  log {self.log_path} (last {LOG_TAIL_LINES} lines):\n{_indent(tail)}",
            command=self.command,
            exit_code=code,
            log_tail=tail,
        )

    # -- teardown

    def stop(self) -> None:
        """Terminate the child's process group, kill what remains, close the client and log.

        SIGTERM goes to the whole group; the group then has ``terminate_grace_s``
        to exit (all of it, since ``sh -c`` may have left the server as the
        shell's child) before SIGKILL ends every process left in it. Safe to
        call more than once (the group is signalled by the first call only) and
        after a failed ``start``.
        """
        if self._stopped:
            # Its process group is gone: signalling that id again could reach a group that reused it.
            return
        self._stopped = True
        try:
            if self.process is not None:
                _terminate_group(self.process, self.config.terminate_grace_s)
        finally:
            _stop_watchdog(self._watchdog)
            self._watchdog = None
            if self._target is not None:
                self._target.close()
            if self._log is not None:
                self._log.close()
                self._log = None


def _terminate_group(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the child's group, wait up to ``grace_s`` for it to empty, SIGKILL the rest, reap."""
    if os.name != "posix":
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                process.kill()
        process.wait()
        return
    _kill_group(process, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    try:
        process.wait(timeout=grace_s)  # the leader (the server itself, after exec) first: no fixed-step polling
    except subprocess.TimeoutExpired:
        pass
    while time.monotonic() < deadline:
        process.poll()
        if not _group_alive(process.pid):
            break
        time.sleep(0.05)
    _kill_group(process, signal.SIGKILL)
    process.wait()
