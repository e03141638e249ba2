"""The judge's tokens and the run's prices in the history, on SQLite and PostgreSQL (docs/history.md, docs/judges.md)."""

from __future__ import annotations

from sqlalchemy import select

from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.history import HistoryStore, schema
from pytest_groundeval.history.migrations import V5_METADATA, create_version, stored_version
from pytest_groundeval.history.records import ITEM_CONTEXT_KEYS
from pytest_groundeval.history.rejudge import JudgeVerdict, rejudge_run
from pytest_groundeval.history.stored_report import report_from_history, stored_outcomes
from tests._support import history_records as _data

PRICES = {"judge-a": {"input": 2.0, "output": 8.0}, "judge-b": {"input": 1.0, "output": 1.0}}


def _paragraph(index: int, usage: tuple | None, model: str = "judge-a") -> dict:
    para = _data.paragraph(index, verdict="supported")
    para["judgeModel"] = model
    if usage is not None:
        prompt, completion, replies, without = usage
        para.update(judgePromptTokens=prompt, judgeCompletionTokens=completion, judgeReplies=replies,
                    judgeRepliesWithoutUsage=without)  # fmt: skip
    return para


def _outcomes(records):
    return [{k: v for k, v in r.items() if k not in ITEM_CONTEXT_KEYS} for r in records]


def _run(store: HistoryStore, records, config=None) -> str:
    run_id = store.open_run(config or _data.config(), label="usage")
    store.add_items(run_id, records)
    store.finish_run(run_id, metrics=compute_metrics(_outcomes(records)).to_wire(), gate={"passed": True, "checks": []})
    return run_id


def _token_rows(store: HistoryStore, run_id: str) -> list[tuple]:
    j = schema.judgments
    columns = (j.c.paragraph, j.c.prompt_tokens, j.c.completion_tokens, j.c.replies, j.c.replies_without_usage)
    with store.engine.connect() as conn:
        return [tuple(row) for row in conn.execute(select(*columns).where(j.c.run_id == run_id).order_by(j.c.id))]


def test_judgments_keep_each_paragraphs_tokens_and_rebuild_the_same_judge_tokens(store: HistoryStore) -> None:
    extension = _paragraph(2, None)
    extension["judgeReplies"] = None  # a judge that reports no usage: one reply of unknown tokens
    records = [_data.citation("c1", [_paragraph(0, (100, 10, 1, 0)), _paragraph(1, (120, 12, 2, 1)), extension])]
    run_id = _run(store, records)
    assert _token_rows(store, run_id) == [(0, 100, 10, 1, 0), (1, 120, 12, 2, 1), (2, 0, 0, 1, 1)]
    before = compute_metrics(_outcomes(records)).judge_tokens
    assert before == {"judge-a": {"promptTokens": 220, "completionTokens": 22, "replies": 4, "repliesWithoutUsage": 2}}
    assert compute_metrics(stored_outcomes(store, run_id)).judge_tokens == before


def test_rejudged_paragraphs_carry_the_new_judges_tokens_priced_with_the_runs_prices(store: HistoryStore) -> None:
    config = {**_data.config(), "prices": PRICES}
    unjudged = _data.paragraph(1)  # no verdict: the rejudge asks about it
    run_id = _run(store, [_data.citation("c1", [_paragraph(0, (1000, 100, 1, 0)), unjudged])], config)
    verdict = JudgeVerdict(verdict="supported", rationale="fine", judge_model="judge-b", usage=(500, 50, 1, 0))
    result = rejudge_run(store, run_id, lambda request: verdict)
    assert result.complete
    j = schema.judgments
    with store.engine.connect() as conn:
        rows = conn.execute(select(j.c.paragraph, j.c.judge_model, j.c.prompt_tokens, j.c.completion_tokens)
                            .where(j.c.set_id == result.set_id).order_by(j.c.paragraph)).all()  # fmt: skip
    # The carried paragraph keeps its judge's tokens; the rejudged one has the new judge's, not the old row's.
    assert [tuple(r) for r in rows] == [(0, "judge-a", 1000, 100), (1, "judge-b", 500, 50)]
    assert result.metrics["judgeTokens"] == {
        "judge-a": {"promptTokens": 1000, "completionTokens": 100, "replies": 1, "repliesWithoutUsage": 0},
        "judge-b": {"promptTokens": 500, "completionTokens": 50, "replies": 1, "repliesWithoutUsage": 0},
    }
    # 1000 × $2 + 100 × $8 + 500 × $1 + 50 × $1, per million tokens.
    assert result.metrics["judgeCostUsd"] == (2000 + 800 + 500 + 50) / 1_000_000
    # The item's generate call (no usage) at lineage model gen-1, which the prices do not name: reported, not 0.
    assert result.metrics["unpricedModels"] == {"target": {"gen-1": 0}} and result.metrics["targetCostUsd"] is None
    assert report_from_history(store, run_id).prices == PRICES


JUDGES = [
    {"judgeModel": "a", "verdict": "supported", "rationale": "r", "judgeError": None},
    {"judgeModel": "b", "verdict": "supported", "rationale": "s", "judgeError": None},
]
"""A jury's judges as schema version 5 stored them: no tokens."""


def test_migration_from_version_5_keeps_judgments_with_unknown_tokens(history_url: str) -> None:
    from pytest_groundeval.history.engine import WRITE, create_history_engine, resolve_url

    engine = create_history_engine(resolve_url(history_url))
    v5 = V5_METADATA.tables
    run_id = "d" * 32
    with engine.connect().execution_options(**WRITE) as conn, conn.begin():
        create_version(conn, V5_METADATA, 5)
        conn.execute(v5["runs"].insert().values(id=run_id, label="v5", config={"models": {}}, started_ms=5,
                                                finished_ms=9, interrupted=False, metrics={"errors": 0},
                                                gate={"passed": True, "checks": []}, gate_passed=True))  # fmt: skip
        item = conn.execute(v5["items"].insert().returning(v5["items"].c.id).values(
            run_id=run_id, item_id="c1", kind="citation", passed=True, detail="", tags=[],
            outcome={"id": "c1", "kind": "citation", "pass": True, "extra": {}}, recorded_ms=6)).scalar()  # fmt: skip
        set_id = conn.execute(v5["judgment_sets"].insert().returning(v5["judgment_sets"].c.id).values(
            run_id=run_id, origin="run", judge_model="jury(majority: a, b)", created_ms=7, status="complete", is_current=True,
            paragraphs=1, failed=0)).scalar()  # fmt: skip
        conn.execute(v5["judgments"].insert().values(
            set_id=set_id, item=item, run_id=run_id, paragraph=0, text="Old [1].", markers=["1"],
            missing_markers=[], metadata_mismatch=[], deterministic_pass=True, verdict="supported",
            rationale="old", judge_model="jury(majority: a, b)", judged_ms=7, judges=JUDGES))  # fmt: skip
    with engine.connect() as conn:
        assert stored_version(conn) == 5
    engine.dispose()

    with HistoryStore.open(history_url) as store:
        with store.engine.connect() as conn:
            assert stored_version(conn) == schema.SCHEMA_VERSION == 6
        assert _token_rows(store, run_id) == [(0, None, None, None, None)]
        # Recorded before usage was: no token keys, so no judgeTokens rather than a guess of 0.
        (outcome,) = stored_outcomes(store, run_id)
        assert "judgeReplies" not in outcome["extra"]["citationParagraphs"][0]
        # Version 5's own column keeps what it held; its judges carry no tokens either.
        assert outcome["extra"]["citationParagraphs"][0]["judges"] == JUDGES
        assert compute_metrics([outcome]).judge_tokens is None
        new = _run(store, [_data.citation("c2", [_paragraph(0, (7, 3, 1, 0))])])
        assert _token_rows(store, new) == [(0, 7, 3, 1, 0)]
        from sqlalchemy import inspect

        with store.engine.connect() as conn:
            migrated = inspect(conn)
            for table in schema.metadata.sorted_tables:
                assert {c["name"] for c in migrated.get_columns(table.name)} == set(table.c.keys()), table.name
