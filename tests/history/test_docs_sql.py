"""Every ready SQL query of docs/history.md runs on both backends and agrees with the Python analysis."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import text

from pytest_groundeval.history import HistoryStore
from pytest_groundeval.history.queries import group_items
from pytest_groundeval.history.rejudge import JudgeVerdict, rejudge_run
from tests._support import history_records as _data

DOC = Path(__file__).resolve().parents[2] / "docs" / "history.md"
BLOCKS = re.findall(r"```sql\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def _populate(store: HistoryStore) -> str:
    older = store.open_run(_data.config(), label="nightly", started_ms=1_000)
    jury = [_data.jury_paragraph(0, ["supported", "partial"], "partial"), _data.jury_paragraph(1, ["partial", None],
                                                                                             "partial")]  # fmt: skip
    store.add_items(older, [_data.qa("a"), _data.qa("b", passed=False), _data.citation("j", jury, tools=())])
    store.finish_run(older, metrics={"claimSupportPrecision": 0.95}, gate={"passed": True, "checks": []})
    newer = store.open_run(_data.config(), label="nightly", started_ms=2_000)
    store.add_items(
        newer,
        [
            _data.qa("a", passed=False, tools=("search", "sql")),
            _data.qa("b", tools=("search", "search")),
            _data.citation("c", [_data.paragraph(0, verdict="wrong_speaker"), _data.paragraph(1)], tools=("sql",)),
        ],
    )
    store.finish_run(newer, metrics={"claimSupportPrecision": 0.9}, gate={"passed": False, "checks": []})
    # A complete rejudge clears c (its set becomes current); an incomplete attempt calling it wrong_speaker
    # again is kept but not current: the queries must read the current set only.
    supported = JudgeVerdict(verdict="supported", rationale="checked", judge_model="judge-b", usage=(300, 20, 2, 1))
    assert rejudge_run(store, newer, lambda request: supported, all_paragraphs=True).complete

    def failing(request):
        if request.paragraph == 1:
            raise ConnectionError("judge unreachable")
        return JudgeVerdict(verdict="wrong_speaker", rationale="no", judge_model="judge-c")

    assert not rejudge_run(store, newer, failing, all_paragraphs=True).complete
    store.open_run(_data.config(), label="killed", started_ms=500)
    return newer


def test_every_ready_query_runs_and_returns_rows(store: HistoryStore) -> None:
    assert len(BLOCKS) >= 9, "the ready SQL blocks of docs/history.md were not found"
    newer = _populate(store)
    dialect = store.engine.dialect.name
    results = {}
    with store.engine.connect() as conn:
        for block in BLOCKS:
            first = block.splitlines()[0].strip()
            if first.startswith("--") and first[2:].strip() != dialect:
                continue
            rows = conn.execute(text(block)).all()
            assert rows, f"no rows from:\n{block}"
            results[block.split("FROM")[0]] = rows
    by_tool = next(rows for head, rows in results.items() if "t.tool" in head)
    expected = {g.group: (g.items, g.bad) for g in group_items(store, newer, "tool")}
    assert {row[0]: (row[1], row[2]) for row in by_tool} == expected == {"search": (2, 1), "sql": (2, 1)}
    sets = next(rows for head, rows in results.items() if "prompt_version" in head)
    assert [(r[1], r[2], r[5], bool(r[6])) for r in sets] == [
        ("run", None, "incomplete", False),
        ("rejudge", "judge-b", "complete", True),
        ("rejudge", "judge-c", "incomplete", False),
    ]
    earlier = next(rows for head, rows in results.items() if "s.id AS set_id" in head)
    assert {(r[2], r[3], r[4]) for r in earlier} == {("incomplete", "wrong_speaker", 1), ("incomplete", "unjudged", 1)}
    judges = next(rows for head, rows in results.items() if "judgeModel" in head)
    assert sorted(tuple(r) for r in judges) == [("a", "partial", 1), ("a", "supported", 1), ("b", "partial", 1),
                                                ("b", "unjudged", 1)]  # fmt: skip
    tokens = next(rows for head, rows in results.items() if "AS replies_without_usage" in head)
    assert [tuple(r) for r in tokens] == [("judge-b", 600, 40, 4, 2)]  # two paragraphs of c, rejudged
    flips = next(rows for head, rows in results.items() if "a.passed AS was" in head)
    assert sorted((r[0], bool(r[2]), bool(r[3])) for r in flips) == [("a", True, False), ("b", False, True)]
