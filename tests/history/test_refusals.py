"""Databases the history refuses cleanly (docs/history.md): a schema_info version that is not one, a
PostgreSQL database that is not UTF-8. The CLI exits 2 and pytest exits 4 (usage error), never INTERNALERROR."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from pytest_groundeval.cli.history import history_main
from pytest_groundeval.history import HistoryError, HistoryStore
from tests._support.pytest_args import NO_THIRD_PARTY_PLUGINS

SMOKE = Path(__file__).resolve().parents[2] / "datasets" / "smoke"


def _pytest_run(pytester: pytest.Pytester, url: str) -> pytest.RunResult:
    """A pytest run with ``--eval-history=url``; the history is opened before any item runs (no target needed)."""
    shutil.copytree(SMOKE, pytester.path / "smoke")
    return pytester.runpytest(
        *NO_THIRD_PARTY_PLUGINS,
        "-p",
        "no:cacheprovider",
        "--eval-dataset=smoke",
        "--eval-url=http://127.0.0.1:9",
        "--eval-api-key=unused",
        f"--eval-history={url}",
    )


def _set_version(url: str, value: object) -> None:
    HistoryStore.open(url).close()  # a current database
    from pytest_groundeval.history.engine import create_history_engine, resolve_url

    engine = create_history_engine(resolve_url(url))
    with engine.begin() as conn:
        conn.execute(text("UPDATE schema_info SET version = :v WHERE id = 1"), {"v": value})
    engine.dispose()


def _stored(url: str) -> object:
    from pytest_groundeval.history.engine import create_history_engine, resolve_url

    engine = create_history_engine(resolve_url(url))
    with engine.connect() as conn:
        value = conn.execute(text("SELECT version FROM schema_info")).scalar()
    engine.dispose()
    return value


@pytest.mark.parametrize("value", [0, 1, -1, 2.9, "two"])
def test_a_schema_version_that_is_not_one_is_refused_by_the_cli_and_pytest(
    value, history_url: str, pytester: pytest.Pytester, capsys
) -> None:
    if history_url.startswith("postgresql") and not isinstance(value, int):
        pytest.skip("an integer column on PostgreSQL cannot hold 2.9 or text")  # SQLite keeps them as stored
    _set_version(history_url, value)
    with pytest.raises(HistoryError) as info:
        HistoryStore.open(history_url)
    message = str(info.value)
    assert "history database" in message and "schema" in message
    if value == 1:
        # Version 1 is a real version, but these are current tables: the migration fails and nothing changes.
        assert "says schema version 1" in message and "do not match" in message
    else:
        assert f"schema_info.version is {value!r}" in message
    assert _stored(history_url) == value  # refused, not rewritten

    assert history_main(["list", "--history", history_url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("groundeval history list: history database") and len(err.strip().splitlines()) == 1

    result = _pytest_run(pytester, history_url)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["*--eval-history: history database*schema*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("DROP TABLE judgments", "its table 'judgments' is missing"),
        ("INSERT INTO schema_info (id, version, migrated_ms) VALUES (2, 3, 0)", "schema_info table holds 2 rows"),
    ],
)
def test_tables_changed_by_hand_are_refused_before_any_item_runs(
    change: str, expected: str, history_url: str, pytester: pytest.Pytester, capsys
) -> None:
    # Before: every item ran, then "recording failed … no such table: judgments" and a partial run was written.
    from pytest_groundeval.history import schema
    from pytest_groundeval.history.writer import SCHEMA_TABLES

    assert set(SCHEMA_TABLES) == set(schema.metadata.tables)  # the writer checks what the schema defines
    HistoryStore.open(history_url).close()  # a current database
    from pytest_groundeval.history.engine import create_history_engine, resolve_url

    engine = create_history_engine(resolve_url(history_url))
    with engine.begin() as conn:
        conn.execute(text(change))
    engine.dispose()
    with pytest.raises(HistoryError, match=expected):
        HistoryStore.open(history_url)
    assert history_main(["list", "--history", history_url]) == 2
    assert expected in capsys.readouterr().err
    result = _pytest_run(pytester, history_url)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines([f"*--eval-history: history database*{expected}*"])


def test_a_sql_ascii_postgres_database_is_refused_naming_its_encoding(
    pg_server, pytester: pytest.Pytester, capsys
) -> None:
    name = f"ascii_{uuid.uuid4().hex[:8]}"
    admin = pg_server._admin()
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name} ENCODING 'SQL_ASCII' TEMPLATE template0"))
    try:
        url = f"postgresql://postgres@127.0.0.1:{pg_server.port}/{name}"
        with pytest.raises(HistoryError, match="has encoding SQL_ASCII, but the history needs UTF8"):
            HistoryStore.open(url)
        assert history_main(["list", "--history", url]) == 2
        err = capsys.readouterr().err
        assert "encoding SQL_ASCII" in err and f"/{name}" in err and "Traceback" not in err

        result = _pytest_run(pytester, url)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
        result.stderr.fnmatch_lines(["*--eval-history: history database*has encoding SQL_ASCII*UTF8*"])
        assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"confidenceLevel": 95}, "run 0123456789ab recorded confidenceLevel 95: 95 is not a confidence level: "
         "expected a number strictly between 0 and 1, e.g. 0.95"),
        ({"gateOn": "median"}, "run 0123456789ab recorded gateOn 'median', not one of point, lower-bound"),
    ],
)  # fmt: skip
def test_a_recorded_confidence_setting_that_is_not_one_is_refused_naming_the_run(config, message):
    from pytest_groundeval.history.queries import recorded_confidence

    with pytest.raises(HistoryError) as caught:
        recorded_confidence(config, "0123456789abcdef")
    assert str(caught.value) == message
    assert recorded_confidence(None, "0123456789abcdef") == (0.95, "point")  # a run recorded before either was
    assert recorded_confidence({"confidenceLevel": 0.9, "gateOn": "lower-bound"}, "r") == (0.9, "lower-bound")
