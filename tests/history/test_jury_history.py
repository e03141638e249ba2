"""A jury's verdicts in the history, on SQLite and PostgreSQL (docs/history.md, docs/judges.md "Juries").

Each judge's verdict is stored beside the jury's (``judgments.judges``, schema version 5), read
back into the paragraph records, rejudged by a jury, and a version 4 database migrates with
its judgments' ``judges`` NULL. Runs here are stored through the writer the plugin uses.
"""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, select

from pytest_groundeval.core.judging import JudgeResult
from pytest_groundeval.core.kinds.citation import Jury
from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.history import HistoryError, HistoryStore, schema
from pytest_groundeval.history.migrations import V4_METADATA, create_version, stored_version
from pytest_groundeval.history.rejudge import rejudge_run
from pytest_groundeval.history.rejudge_judge import RejudgeJudge
from pytest_groundeval.history.run_copy import copy_run
from pytest_groundeval.history.stored_report import stored_outcomes
from tests._support import history_records as _data


def _judges(store: HistoryStore, run_id: str) -> list:
    j, sets = schema.judgments, schema.judgment_sets
    with store.engine.connect() as conn:
        return [r.judges for r in conn.execute(
            select(j.c.judges).join(sets, (sets.c.id == j.c.set_id) & sets.c.is_current)
            .where(j.c.run_id == run_id).order_by(j.c.item, j.c.paragraph))]  # fmt: skip


def test_each_judges_verdict_is_stored_beside_the_jurys_and_read_back(store: HistoryStore) -> None:
    records = [
        _data.citation("c1", [_data.jury_paragraph(0, ["supported", "partial"], "partial"), _data.paragraph(1, verdict="supported")]),
        _data.citation("c2", [_data.jury_paragraph(0, ["unsupported", None], "unsupported")]),
    ]  # fmt: skip
    run_id = _data.measured_run(store, records, started_ms=1)
    stored = _judges(store, run_id)
    # What the history keeps of each judge: model, verdict, rationale, error; NULL for one judge's verdict.
    assert stored[0] == [
        {"judgeModel": "a", "verdict": "supported", "rationale": "r", "judgeError": None},
        {"judgeModel": "b", "verdict": "partial", "rationale": "r", "judgeError": None},
    ]
    assert stored[1] is None and stored[2][1] == {
        "judgeModel": "b",
        "verdict": None,
        "rationale": "",
        "judgeError": "down",
    }
    outcomes = {o["id"]: o for o in stored_outcomes(store, run_id)}
    paragraphs = outcomes["c1"]["extra"]["citationParagraphs"]
    assert [j["verdict"] for j in paragraphs[0]["judges"]] == ["supported", "partial"]
    assert "judges" not in paragraphs[1]  # one judge's paragraph reads back as it always did
    # The per-judge metrics come back from the history as the run computed them.
    metrics = compute_metrics(stored_outcomes(store, run_id))
    assert metrics.verdict_distribution_by_model["b"]["unjudged"] == 1 and metrics.judge_alpha is not None


@pytest.mark.parametrize(
    ("judges", "message"),
    [
        ("a", r"field 'extra.citationParagraphs\[0\].judges' must be a list of judge objects or null"),
        ([{"verdict": "supported"}], r"field 'extra.citationParagraphs\[0\].judges\[0\].judgeModel' must be a judge "
                                     "model named once"),
        ([{"judgeModel": "a", "verdict": "fine"}], r"field 'extra.citationParagraphs\[0\].judges\[0\].verdict' must "
                                                   "be one of supported"),
        ([{"judgeModel": "a"}, {"judgeModel": "a"}], r"field 'extra.citationParagraphs\[0\].judges\[1\].judgeModel' "
                                                     "must be a judge model named once"),
    ],
)  # fmt: skip
def test_a_bad_jury_record_is_refused_naming_the_item_and_field(store: HistoryStore, judges, message) -> None:
    paragraph = _data.jury_paragraph(0, ["supported", "supported"], "supported")
    paragraph["judges"] = judges
    run_id = store.open_run(_data.config())
    with pytest.raises(HistoryError, match=r"item 'c1': " + message):
        store.add_items(run_id, [_data.citation("c1", [paragraph])])


class FixedJudge:
    """A core judge with no network: one verdict per paragraph index, or an error."""

    gave_up = None

    def __init__(self, model: str, verdicts: dict[int, str | None]) -> None:
        self.model, self.verdicts = model, verdicts

    async def judge(self, payload):
        index = int(payload["paragraph"].split()[1])  # "Paragraph N says something [SN]."
        verdict = self.verdicts.get(index, "supported")
        return JudgeResult(verdict=verdict, rationale="checked" if verdict else "", model=self.model,
                           error=None if verdict else "down")  # fmt: skip

    async def close(self) -> None:
        pass


def test_a_stored_run_rejudged_by_a_jury_keeps_each_judges_verdict_and_its_figures(store: HistoryStore) -> None:
    records = [_data.citation("c1", [_data.paragraph(0, verdict="supported"), _data.paragraph(1, verdict="supported"),
                                     _data.paragraph(2, verdict="supported")])]  # fmt: skip
    run_id = _data.measured_run(store, records, started_ms=1)
    judges = [FixedJudge("a", {1: "partial"}), FixedJudge("b", {1: "unsupported", 2: None})]
    with RejudgeJudge(lambda: Jury(judges, "strictest")) as jury:
        result = rejudge_run(store, run_id, jury, all_paragraphs=True)
    assert result.complete and result.judge_model == "jury(strictest: a, b)"
    stored = _judges(store, run_id)
    assert [[j["verdict"] for j in paragraph] for paragraph in stored] == [
        ["supported", "supported"], ["partial", "unsupported"], ["supported", None]]  # fmt: skip
    verdicts = [p["verdict"] for o in stored_outcomes(store, run_id) for p in o["extra"]["citationParagraphs"]]
    assert verdicts == ["supported", "unsupported", "supported"]  # strictest; b's error has no vote
    assert result.metrics["verdictDistributionByModel"]["b"] == {
        "supported": 1, "partial": 0, "unsupported": 1, "wrong_speaker": 0, "wrong_attribution": 0,
        "unparseable": 0, "unjudged": 1}  # fmt: skip
    # alpha over the two paragraphs both judges answered, (S,S) and (P,U): n = 4, off-diagonal 2,
    # sum n_c n_k = 16 - (4 + 1 + 1) = 10, so 1 - 3 * 2 / 10.
    assert result.metrics["judgeAlpha"] == pytest.approx(0.4)
    # Rejudged again by one judge: its verdicts replace the jury's, judges and all.
    with RejudgeJudge(lambda: FixedJudge("c", {})) as one:
        assert rejudge_run(store, run_id, one, all_paragraphs=True).complete
    assert _judges(store, run_id) == [None, None, None]


def test_a_copy_of_a_run_is_a_new_run_with_the_same_answers_and_the_stored_run_untouched(store: HistoryStore) -> None:
    records = [_data.citation("c1", [_data.jury_paragraph(0, ["supported", "partial"], "partial")], tags=("a", "b"))]
    run_id = _data.measured_run(store, records, started_ms=1)
    copy = copy_run(store, run_id, label="jury")
    assert copy != run_id and store.resolve_run("latest") == copy
    assert stored_outcomes(store, copy) == stored_outcomes(store, run_id)
    runs, tags, tools = schema.runs, schema.item_tags, schema.tool_calls
    with store.engine.connect() as conn:
        row = conn.execute(select(runs.c.label, runs.c.config, runs.c.metrics).where(runs.c.id == copy)).one()
        original = conn.execute(select(runs.c.metrics).where(runs.c.id == run_id)).scalar_one()
        copied_tags = conn.execute(select(tags.c.tag).where(tags.c.run_id == copy).order_by(tags.c.tag)).scalars()
        copied_tools = conn.execute(select(tools.c.tool).where(tools.c.run_id == copy)).scalars().all()
    assert row.label == "jury" and row.config["copiedFrom"] == run_id and row.metrics == original
    assert list(copied_tags) == ["a", "b"] and copied_tools == ["lookup"]
    with RejudgeJudge(lambda: FixedJudge("c", {0: "wrong_speaker"})) as one:
        assert rejudge_run(store, copy, one, all_paragraphs=True).complete
    assert _judges(store, run_id)[0][1]["verdict"] == "partial" and _judges(store, copy) == [None]
    unfinished = store.open_run(_data.config())
    with pytest.raises(HistoryError, match="has no finish time"):
        copy_run(store, unfinished)


def test_migration_from_version_4_adds_judges_null_for_every_judgment(history_url: str) -> None:
    from pytest_groundeval.history.engine import WRITE, create_history_engine, resolve_url

    engine = create_history_engine(resolve_url(history_url))
    interval = {"retrievalRecall": {"low": 0.5, "high": 0.9, "method": "wilson"}}
    v4 = V4_METADATA.tables
    with engine.connect().execution_options(**WRITE) as conn, conn.begin():
        create_version(conn, V4_METADATA, 4)
        conn.execute(v4["runs"].insert().values(id="a" * 32, label="v4", config={"models": {}}, started_ms=5,
                                                finished_ms=9, metrics={"errors": 0}, gate={"passed": True},
                                                confidence=interval))  # fmt: skip
        item = conn.execute(v4["items"].insert().returning(v4["items"].c.id).values(
            run_id="a" * 32, item_id="c1", kind="citation", passed=True, detail="", tags=[],
            outcome={"id": "c1", "kind": "citation", "pass": True, "extra": {}}, recorded_ms=6)).scalar()  # fmt: skip
        set_id = conn.execute(v4["judgment_sets"].insert().returning(v4["judgment_sets"].c.id).values(
            run_id="a" * 32, origin="run", judge_model="judge-x", created_ms=5, status="complete", is_current=True,
            paragraphs=1, failed=0)).scalar()  # fmt: skip
        conn.execute(v4["judgments"].insert().values(
            set_id=set_id, item=item, run_id="a" * 32, paragraph=0, text="Old [1].", markers=["1"],
            missing_markers=[], metadata_mismatch=[], deterministic_pass=True, verdict="supported",
            rationale="old", judge_model="judge-x"))  # fmt: skip
    engine.dispose()
    with HistoryStore.open(history_url) as store:
        with store.engine.connect() as conn:
            assert stored_version(conn) == schema.SCHEMA_VERSION == 6
            # Version 4's own column keeps what it held.
            assert conn.execute(select(schema.runs.c.confidence)).scalar() == interval
            migrated = inspect(conn)
            for table in schema.metadata.sorted_tables:  # the migrated schema is the fresh one
                assert {c["name"] for c in migrated.get_columns(table.name)} == set(table.c.keys()), table.name
            assert {i["name"] for i in migrated.get_indexes("judgments")} >= {"ix_judgments_run", "ix_judgments_set"}
        assert _judges(store, "a" * 32) == [None]
        (outcome,) = stored_outcomes(store, "a" * 32)
        assert "judges" not in outcome["extra"]["citationParagraphs"][0]
        # The migrated table takes a jury's verdicts.
        new = _data.measured_run(store, [_data.citation("c", [_data.jury_paragraph(0, ["partial", "partial"], "partial")])],
                                 started_ms=20)  # fmt: skip
        assert [j["judgeModel"] for j in _judges(store, new)[0]] == ["a", "b"]
