"""Fixtures for the history tests (tests/history, tests/cli): a real PostgreSQL 15 server, a fresh database per test.

Every store test runs twice, against SQLite (a file in ``tmp_path``) and against
PostgreSQL (a server started once per session from the Debian binaries in
``pg_config --bindir``, one schema per test). There is no skip: without the
server binaries the PostgreSQL half fails and says what to install
(``.ci/history-postgres.md``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_INSTALL_HINT = (
    "PostgreSQL server binaries (initdb, pg_ctl) not found in `pg_config --bindir` nor /usr/lib/postgresql/*/bin: "
    "install them with `apt-get install -y postgresql-15` (see .ci/history-postgres.md)"
)


def _pg_bindir() -> Path:
    candidates = []
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10, check=False)
        if out.returncode == 0 and out.stdout.strip():
            candidates.append(Path(out.stdout.strip()))
    except OSError:
        pass
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for path in candidates:
        if (path / "initdb").is_file() and (path / "pg_ctl").is_file():
            return path
    pytest.fail(PG_INSTALL_HINT, pytrace=False)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (trust auth, fsync off), run as the ``postgres`` user."""

    def __init__(self) -> None:
        self.bindir = _pg_bindir()
        self.root = Path(tempfile.mkdtemp(prefix="groundeval-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = 0
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            # initdb refuses to run as root: hand the directory to the postgres user.
            import pwd

            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                pytest.fail(
                    "running as root and no 'postgres' user exists to run the test server "
                    "(apt-get install -y postgresql-15 creates it)",
                    pytrace=False,
                )
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self.prefix = ["runuser", "-u", "postgres", "--"]
        os.chmod(self.root, 0o700)

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, *args], capture_output=True, text=True, timeout=timeout, check=False)

    def start(self) -> None:
        init = self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        )
        if init.returncode != 0:
            pytest.fail(f"initdb failed ({init.returncode}): {init.stderr or init.stdout}", pytrace=False)
        problem = ""
        for _attempt in range(3):  # a port taken between probing and binding: try another
            self.port = _free_port()
            options = (
                f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c synchronous_commit=off "
                "-c full_page_writes=off -c max_connections=50"
            )
            started = self._run(
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-w",
                "-t",
                "30",
                "-o",
                options,
                "start",
            )
            if started.returncode == 0:
                return
            problem = started.stderr + (self.log.read_text(errors="replace") if self.log.exists() else "")
        pytest.fail(f"PostgreSQL did not start: {problem[-2000:]}", pytrace=False)

    def stop(self) -> None:
        if self.data.exists():
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)

    DATABASE = "groundeval_tests"

    def _admin(self, database: str = "postgres"):
        from sqlalchemy import create_engine

        return create_engine(
            f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}", isolation_level="AUTOCOMMIT"
        )

    def create_test_database(self) -> None:
        from sqlalchemy import text

        admin = self._admin()
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{self.DATABASE}"'))
        admin.dispose()
        self.engine = self._admin(self.DATABASE)

    def create_schema(self) -> str:
        """A new empty schema in the test database (cheaper than a database per test); returns its URL."""
        from sqlalchemy import text

        name = f"t_{uuid.uuid4().hex[:12]}"
        with self.engine.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{name}"'))
        # Every connection of that URL works in the schema: search_path set at connect time.
        return f"postgresql://postgres@127.0.0.1:{self.port}/{self.DATABASE}?options=-csearch_path%3D{name}", name

    def drop_schema(self, name: str) -> None:
        from sqlalchemy import text

        with self.engine.connect() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """A PostgreSQL 15 server for the whole session, on a free loopback port, removed at the end."""
    server = PostgresServer()
    try:
        server.start()
        server.create_test_database()
        yield server
    finally:
        if getattr(server, "engine", None) is not None:
            server.engine.dispose()
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty history database: a SQLite file, or a fresh schema on the PostgreSQL server."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'history.db'}"
        return
    server: PostgresServer = request.getfixturevalue("pg_server")
    url, name = server.create_schema()
    try:
        yield url
    finally:
        server.drop_schema(name)


@pytest.fixture
def store(history_url: str):
    """A ``HistoryStore`` opened on ``history_url`` (schema created), closed afterwards."""
    from pytest_groundeval.history import HistoryStore

    opened = HistoryStore.open(history_url)
    try:
        yield opened
    finally:
        opened.close()


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.02) -> None:
    """Poll ``predicate`` until true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)
