"""History URLs, the SQLite settings and schema versions (docs/history.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text, update

from pytest_groundeval.history import HistoryError, HistoryStore, resolve_url, schema
from pytest_groundeval.history.engine import create_history_engine, describe_url, url_from_sources


@pytest.mark.parametrize("value", [None, "", "sqlite", " default "])
def test_shorthands_mean_the_default_file(value, tmp_path: Path) -> None:
    assert resolve_url(value, tmp_path) == f"sqlite:///{tmp_path.resolve() / '.groundeval' / 'history.db'}"


def test_sqlite_paths_resolve_against_cwd(tmp_path: Path) -> None:
    assert resolve_url("sqlite:///runs/h.db", tmp_path) == f"sqlite:///{tmp_path.resolve() / 'runs' / 'h.db'}"
    assert resolve_url(f"sqlite:///{tmp_path}/abs.db", "/elsewhere") == f"sqlite:///{tmp_path.resolve()}/abs.db"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("postgresql://u:p@db:5432/hist", "postgresql+psycopg://u:p@db:5432/hist"),
        ("postgres://db/hist", "postgresql+psycopg://db/hist"),
        ("postgresql+psycopg://db/hist", "postgresql+psycopg://db/hist"),
    ],
)
def test_postgres_urls_use_psycopg3(value: str, expected: str) -> None:
    assert resolve_url(value) == expected
    assert "p@" not in describe_url(resolve_url("postgresql://u:p@db/h"))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("mysql://db/h", "unknown database 'mysql'"),
        ("postgresql+psycopg2://db/h", "driver 'psycopg2' is not supported"),
        ("sqlite://", "in-memory database"),
        ("sqlite:///:memory:", "in-memory database"),
        ("not a url", "is not a database URL"),
    ],
)
def test_bad_urls_are_refused_with_the_valid_forms(value: str, message: str) -> None:
    with pytest.raises(HistoryError, match=message) as info:
        resolve_url(value)
    assert "valid forms" in str(info.value) or "psycopg 3" in str(info.value)


def test_flag_then_environment() -> None:
    assert url_from_sources("sqlite", {"GROUNDEVAL_HISTORY": "postgresql://x/y"}) == "sqlite"
    assert url_from_sources(None, {"GROUNDEVAL_HISTORY": "postgresql://x/y"}) == "postgresql://x/y"
    assert url_from_sources(None, {}) is None


def test_sqlite_runs_in_wal_with_a_busy_timeout(tmp_path: Path) -> None:
    engine = create_history_engine(resolve_url("sqlite:///h.db", tmp_path), busy_timeout_s=7)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 7000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    engine.dispose()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    with HistoryStore.open(url) as store, store.write() as conn:
        conn.execute(update(schema.schema_info).values(version=schema.SCHEMA_VERSION + 1))
    newer = rf"schema version {schema.SCHEMA_VERSION + 1}, newer than version {schema.SCHEMA_VERSION} .* upgrade"
    with pytest.raises(HistoryError, match=newer):
        HistoryStore.open(url)


def test_a_foreign_database_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    engine = create_history_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE runs (x INTEGER)"))
    engine.dispose()
    with pytest.raises(HistoryError, match="not a groundeval history database"):
        HistoryStore.open(url)


def test_switching_to_wal_waits_for_another_writers_lock(tmp_path: Path) -> None:
    import sqlite3
    import threading

    path = tmp_path / "h.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # a writer mid-transaction on a database not yet in WAL
    other.execute("CREATE TABLE unrelated (x INTEGER)")
    threading.Timer(0.3, lambda: other.execute("COMMIT")).start()
    try:
        # Without the wait, PRAGMA journal_mode = WAL fails at once with "database is locked".
        with HistoryStore.open(f"sqlite:///{path}") as store, store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        other.close()


def test_the_writer_imports_no_sqlalchemy_and_matches_the_schema_version() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from pytest_groundeval.history import HistoryWriter, RunRecorder;"
        "import pytest_groundeval.history.writer as w;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'pytest')))"
    )
    repo = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    from pytest_groundeval.history import writer

    assert writer.SCHEMA_VERSION == schema.SCHEMA_VERSION
    assert writer.RUN_ID_LENGTH == schema.RUN_ID_LENGTH
    for table, columns in writer._COLUMNS.items():
        assert set(columns) <= set(schema.metadata.tables[table].c.keys()), table


def test_the_writer_refuses_a_newer_schema_and_an_unreachable_server(tmp_path: Path) -> None:
    from pytest_groundeval.history import HistoryWriter

    url = f"sqlite:///{tmp_path / 'h.db'}"
    with HistoryStore.open(url) as store, store.write() as conn:
        conn.execute(update(schema.schema_info).values(version=schema.SCHEMA_VERSION + 1))
    with pytest.raises(HistoryError, match="upgrade pytest-groundeval"):
        HistoryWriter.open(url)
    with pytest.raises(
        HistoryError, match=r"cannot open history database postgresql\+psycopg://u:\*\*\*@127.0.0.1:1/x"
    ):
        HistoryWriter.open("postgresql://u:secret@127.0.0.1:1/x?connect_timeout=2")


def test_compact_trace_keeps_spans_and_claims_and_counts_the_rest() -> None:
    from pytest_groundeval.history import compact_trace

    response = {
        "answer": "x",
        "evidence": [
            {"marker": f"S{i}", "document": "d.md", "start": i, "end": i + 1, "text": "t" * 500, "score": 0.5}
            for i in range(60)
        ],
        "claims": [{"text": "c", "verdict": "supported", "markers": ["S1"], "start": 0, "end": 1}],
    }
    trace = compact_trace(response)
    assert len(trace["evidence"]) == 50 and trace["evidenceOmitted"] == 10 and trace["claimsOmitted"] == 0
    assert trace["evidence"][0] == {"marker": "S0", "document": "d.md", "start": 0, "end": 1, "text": "t" * 299 + "…"}
    assert trace["claims"] == [{"text": "c", "verdict": "supported", "markers": ["S1"]}]
