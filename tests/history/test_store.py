"""The history store against SQLite and a real PostgreSQL server (docs/history.md).

Every test here takes ``history_url``/``store`` and so runs on both backends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from pytest_groundeval.cli.history import history_main
from pytest_groundeval.cli.rejudge import rejudge_main
from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.history import HistoryError, HistoryStore, RunRecorder, new_run_id, schema
from pytest_groundeval.history.migrations import V1_METADATA, create_version, stored_version
from pytest_groundeval.history.queries import compare_runs, group_items, list_runs, show_run
from pytest_groundeval.history.records import ITEM_CONTEXT_KEYS, outcome_from_rows
from pytest_groundeval.history.rejudge import JudgeVerdict, rejudge_run
from tests._support import history_records as _data

WRITER = Path(__file__).with_name("writer_process.py")
REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _count(store: HistoryStore, table, run_id: str) -> int:
    with store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table).where(table.c.run_id == run_id)).scalar()


def _finished(store: HistoryStore, run_id: str):
    with store.engine.connect() as conn:
        return conn.execute(select(schema.runs.c.finished_ms).where(schema.runs.c.id == run_id)).scalar()


def _outcomes(records):
    """The outcome part of item records (what ``compute_metrics`` takes)."""
    return [{k: v for k, v in r.items() if k not in ITEM_CONTEXT_KEYS} for r in records]


def _record_run(store, records, *, label="main", floors=None, gate_passed=True, started_ms=None):
    run_id = store.open_run(_data.config(floors=floors), label=label, started_ms=started_ms)
    store.add_items(run_id, records)
    metrics = compute_metrics(_outcomes(records)).to_wire()
    store.finish_run(run_id, metrics=metrics, gate={"passed": gate_passed, "checks": []})
    return run_id


def test_record_and_read_back(store: HistoryStore) -> None:
    records = [
        _data.qa("qa-1", latency=10.0, tags=("geo", "easy")),
        _data.qa("qa-2", passed=False, latency=30.0),
        _data.qa("qa-3", error="target timed out after 30 s", latency=None, iterations=None),
        _data.citation("cit-1", [_data.paragraph(0), _data.paragraph(1, mismatch=["speaker 'X' but [S2] has 'Y'"])]),
    ]
    run_id = _record_run(store, records, label="nightly")

    detail = show_run(store, run_id)
    assert detail.run.label == "nightly" and detail.run.items == 4 and detail.run.status == "PASS"
    assert (detail.passed, detail.failed) == (2, 1)
    assert detail.errors == [("qa-3", "qa", "target timed out after 30 s")]
    assert detail.latency_ms_p50 == 20.0 and detail.latency_ms_p95 == pytest.approx(29.0)
    assert detail.verdicts["unjudged"] == 2 and detail.verdicts["supported"] == 0
    assert detail.mismatched_paragraphs == 1
    assert detail.config["dataset"]["version"] == "2026.1" and detail.config["options"] == {"concurrency": 4}
    assert detail.metrics["errors"] == 1

    assert _count(store, schema.item_tags, run_id) == 5
    assert _count(store, schema.tool_calls, run_id) == 4
    items, j = schema.items, schema.judgments
    with store.engine.connect() as conn:
        row = conn.execute(select(items).where(items.c.item_id == "cit-1")).mappings().one()
        paragraphs = [dict(r) for r in conn.execute(select(j).where(j.c.item == row["id"])).mappings()]
        qa1 = conn.execute(select(items).where(items.c.item_id == "qa-1")).mappings().one()
    assert qa1["question"] == "What about qa-1?" and qa1["iterations"] == 1 and qa1["tags"] == ["geo", "easy"]
    assert qa1["trace"]["claims"][0]["verdict"] == "supported"
    # The stored outcome plus its judgments rebuild the outcome: same metrics as the records.
    rebuilt = outcome_from_rows(row["outcome"], paragraphs)
    assert rebuilt["extra"]["citationParagraphs"][1]["metadataMismatch"] == ["speaker 'X' but [S2] has 'Y'"]
    assert compute_metrics([rebuilt]).to_wire() == compute_metrics(_outcomes([records[3]])).to_wire()


def test_bad_record_names_item_and_field_and_writes_nothing(store: HistoryStore) -> None:
    run_id = store.open_run(_data.config())
    bad = _data.qa("qa-2")
    bad["toolTrace"] = [{"tool": "", "hits": []}]
    with pytest.raises(HistoryError, match=r"item 'qa-2': field 'toolTrace\[0\].tool' must be a non-empty string"):
        store.add_items(run_id, [_data.qa("qa-1"), bad])
    with pytest.raises(HistoryError, match=r"item 'c': field 'extra.citationParagraphs\[0\].verdict'"):
        store.add_items(run_id, [_data.citation("c", [_data.paragraph(0, verdict="fine")])])
    assert _count(store, schema.items, run_id) == 0
    store.add_items(run_id, [_data.qa("qa-1")])
    with pytest.raises(HistoryError, match="already recorded"):
        store.add_items(run_id, [_data.qa("qa-1")])
    with pytest.raises(HistoryError, match="not in the history"):
        store.add_items(new_run_id(), [_data.qa("qa-9")])


def test_killed_writer_keeps_its_batches_and_has_no_finish_time(store: HistoryStore, history_url: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), history_url, "killed", "1000", "10", "slow"],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        run_id, seen = None, 0
        while seen < 30:
            line = proc.stdout.readline()
            assert line, f"writer exited early with {proc.poll()}"
            _, run_id, count = line.split()
            seen = int(count)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    rows = _count(store, schema.items, run_id)
    assert 30 <= rows < 1000 and rows % 10 == 0, rows  # whole batches only
    assert _count(store, schema.item_tags, run_id) == rows
    assert _finished(store, run_id) is None
    assert show_run(store, run_id).run.status == "unfinished"


def test_two_writer_processes_at_once_both_succeed(history_url: str) -> None:
    # Neither finds a schema: both create it at the same moment, then both write.
    start_at = time.time() + 1.0
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), history_url, label, "300", "10", "finish", str(start_at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for label in ("left", "right")
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, f"exit {proc.returncode}; stdout tail {out[-300:]!r}; stderr {err[-3000:]}"
        assert out.splitlines()[-1].startswith("finished "), out[-300:]
    with HistoryStore.open(history_url) as store:
        runs = list_runs(store)
        assert sorted(r.label for r in runs) == ["left", "right"]
        for run in runs:
            assert run.items == 300 and run.finished_ms is not None
            assert _count(store, schema.tool_calls, run.id) == 300


def test_recorder_commits_per_batch(store: HistoryStore) -> None:
    recorder = RunRecorder(store, _data.config(), batch_size=3, max_delay_s=60, background=False)
    for i in range(7):
        recorder.add(_data.qa(f"q{i}"))
    assert _count(store, schema.items, recorder.run_id) == 6
    recorder.finish(metrics={"errors": 0}, gate={"passed": False, "checks": []})
    assert _count(store, schema.items, recorder.run_id) == 7
    assert show_run(store, recorder.run_id).run.status == "FAIL"


def test_background_recorder_writes_everything_and_reports_a_bad_batch(store: HistoryStore) -> None:
    recorder = RunRecorder(store, _data.config(), batch_size=4, max_delay_s=60)
    for i in range(10):
        recorder.add(_data.qa(f"q{i}"))
    assert recorder.flush() == 10 and _count(store, schema.items, recorder.run_id) == 10
    recorder.add({**_data.qa("bad"), "latencyMs": -1.0})
    with pytest.raises(HistoryError, match="item 'bad': field 'latencyMs'"):
        recorder.finish(metrics={"errors": 0}, gate={"passed": True, "checks": []})
    assert _finished(store, recorder.run_id) is None  # a failed recording is not a finished run
    with pytest.raises(HistoryError, match="item 'bad'"):
        recorder.add(_data.qa("later"))


def test_group_by_tool_kind_and_tag(store: HistoryStore) -> None:
    records = [
        _data.qa("a", tools=("search",), tags=("geo",), latency=10, iterations=1),
        _data.qa("b", tools=("search", "sql"), tags=("geo", "hard"), passed=False, latency=20, iterations=3),
        _data.qa("c", tools=(), tags=(), latency=30, iterations=None),
        _data.citation(
            "d",
            [_data.paragraph(0, verdict="wrong_speaker"), _data.paragraph(1, verdict="supported")],
            tools=("sql",),
            tags=("hard",),
            latency=40,
        ),
        _data.citation("e", [_data.paragraph(0, verdict="partial")], tools=("sql",), tags=("hard",), latency=50),
    ]
    run_id = _record_run(store, records)
    tools = {g.group: g for g in group_items(store, run_id, "tool")}
    assert set(tools) == {"search", "sql", "(no tool)"}
    assert (tools["sql"].items, tools["sql"].bad) == (3, 2)  # b failed its check, d has wrong_speaker
    assert tools["search"].bad_rate == 0.5 and tools["(no tool)"].bad == 0
    assert tools["sql"].latency_ms_p50 == 40 and tools["sql"].iterations_p95 == pytest.approx(2.9)
    kinds = {g.group: g for g in group_items(store, run_id, "kind")}
    assert (kinds["qa"].items, kinds["qa"].bad, kinds["citation"].bad) == (3, 1, 1)
    tags = group_items(store, run_id, "tag")
    assert tags[0].group == "hard" and tags[0].bad == 2 and tags[0].items == 3  # worst first
    assert {g.group for g in tags} == {"geo", "hard", "(untagged)"}
    with pytest.raises(HistoryError, match="cannot group by 'model'"):
        group_items(store, run_id, "model")  # type: ignore[arg-type]


def test_run_references(store: HistoryStore) -> None:
    ids = [_record_run(store, [_data.qa("q")], started_ms=1_000 + n) for n in range(3)]
    assert store.resolve_run("latest") == ids[2]
    assert store.resolve_run("latest~2") == ids[0]
    assert store.resolve_run(ids[1]) == ids[1] and store.resolve_run(ids[1][:10].upper()) == ids[1]
    with pytest.raises(HistoryError, match="holds 3 run"):
        store.resolve_run("latest~3")
    with pytest.raises(HistoryError, match="no run id starts with"):
        store.resolve_run("f" * 32 if not any(i.startswith("f" * 32) for i in ids) else "0" * 32)
    with pytest.raises(HistoryError, match="expected a run id"):
        store.resolve_run("yesterday")
    # A prefix every id shares is ambiguous: the empty-ish prefix "" is refused, so build one.
    with store.write() as conn:
        for suffix in "ab":
            conn.execute(schema.runs.insert().values(id="abc" + suffix * 29, config={}, started_ms=0))
    with pytest.raises(HistoryError, match="ambiguous"):
        store.resolve_run("abc")
    assert [r.id for r in list_runs(store, limit=2)] == [ids[2], ids[1]]


def test_compare_finds_a_planted_regression_and_the_cli_exits_1(store: HistoryStore, history_url: str, capsys) -> None:
    good = [_data.qa(f"q{i}") for i in range(10)] + [_data.citation("c", [_data.paragraph(0)], tags=("speech",))]
    # Seven items break, precision falls: significant (exact p = 2/2**7); three of ten would not be (p = 0.25).
    bad = [_data.qa(f"q{i}", passed=i >= 7) for i in range(10)]
    bad += [_data.citation("c", [_data.paragraph(0)], passed=False, tags=("speech",))]
    a = _record_run(store, good, label="main", started_ms=1_000)
    b = _record_run(store, bad, label="pr", started_ms=2_000)
    cmp = compare_runs(store, a, b)
    assert cmp.regressed
    assert any(r.startswith("claimSupportPrecision 0.65 fails its floor >= 0.9") for r in cmp.regressions), (
        cmp.regressions
    )
    assert [f.item_id for f in cmp.pass_to_fail] == ["c", *(f"q{i}" for i in range(7))] and cmp.fail_to_pass == []
    assert cmp.flips_by("kind", cmp.pass_to_fail) == {"citation": 1, "qa": 7}
    assert cmp.flips_by("tag", cmp.pass_to_fail) == {"geo": 7, "speech": 1}
    precision = next(m for m in cmp.metrics if m.name == "claimSupportPrecision")
    assert (precision.a, precision.b) == (1.0, 0.65) and precision.delta == pytest.approx(-0.35)

    assert history_main(["compare", "latest~1", "latest", "--history", history_url]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION claimSupportPrecision" in out and "compare: REGRESSION" in out and "qa::q0" in out
    # The reverse direction, and a run compared with itself, are no regression.
    assert history_main(["compare", b, a, "--history", history_url]) == 0
    assert history_main(["compare", a, a, "--history", history_url]) == 0
    assert "compare: OK" in capsys.readouterr().out


def test_compare_flags_an_unfinished_candidate(store: HistoryStore) -> None:
    a = _record_run(store, [_data.qa("q")], started_ms=1)
    b = store.open_run(_data.config(), started_ms=2)
    store.add_items(b, [_data.qa("q")])
    cmp = compare_runs(store, a, b)
    assert cmp.regressed and "no finish time" in cmp.regressions[0]


def _judge(model: str, verdicts: dict[str, str], fail_on: set[str] = frozenset()):
    calls = []

    def judge(request):
        calls.append((request.item_id, request.paragraph))
        if request.item_id in fail_on:
            raise ConnectionError("judge unreachable")
        assert request.text.startswith(f"Paragraph {request.paragraph}") and request.question
        return JudgeVerdict(
            verdict=verdicts.get(request.item_id, "supported"),
            rationale="checked the source",
            judge_model=model,
            coverage_score=0.75,
        )

    judge.calls = calls
    return judge


def _sets(store: HistoryStore, run_id: str):
    sets = schema.judgment_sets
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(
            select(sets.c.id, sets.c.origin, sets.c.judge_model, sets.c.status, sets.c.is_current, sets.c.paragraphs,
                   sets.c.failed).where(sets.c.run_id == run_id).order_by(sets.c.id))]  # fmt: skip


def _set_verdicts(store: HistoryStore, set_id: int):
    j = schema.judgments
    with store.engine.connect() as conn:
        return sorted((r.verdict or "-", r.judge_model or "-", r.coverage_score) for r in conn.execute(
            select(j.c.verdict, j.c.judge_model, j.c.coverage_score).where(j.c.set_id == set_id)))  # fmt: skip


def test_rejudge_writes_a_new_set_and_makes_it_current_only_when_complete(
    store: HistoryStore, history_url: str, capsys
) -> None:
    records = [
        _data.citation("c1", [_data.paragraph(0, verdict="supported"), _data.paragraph(1)]),
        _data.citation("c2", [_data.paragraph(0), _data.paragraph(1)]),
        _data.qa("q1"),
    ]
    run_id = _record_run(store, records, floors={"citationSupportedRate": 0.9})
    ((run_set, origin, _, status, current, paragraphs, failed),) = _sets(store, run_id)
    # The run's own set: 3 of 4 paragraphs recorded without a verdict.
    assert (origin, status, current, paragraphs, failed) == ("run", "incomplete", True, 4, 3)

    first = _judge("judge-b", {"c2": "wrong_speaker"})
    result = rejudge_run(store, run_id, first)
    assert first.calls == [("c1", 1), ("c2", 0), ("c2", 1)]  # c1#0 already had a verdict
    assert (result.judged, result.errors, result.complete) == (3, 0, True)
    second_set = result.set_id
    assert _sets(store, run_id) == [
        (run_set, "run", None, "incomplete", False, 4, 3),
        (second_set, "rejudge", "judge-b", "complete", True, 4, 0),
    ]
    # The run's own verdicts are kept as they were; the new set holds the old verdict and the new ones.
    assert _set_verdicts(store, run_set) == [
        ("-", "-", None),
        ("-", "-", None),
        ("-", "-", None),
        ("supported", "judge-a", 0.5),
    ]
    assert _set_verdicts(store, second_set) == [
        ("supported", "judge-a", 0.5),
        ("supported", "judge-b", 0.75),
        ("wrong_speaker", "judge-b", 0.75),
        ("wrong_speaker", "judge-b", 0.75),
    ]
    detail = show_run(store, run_id)
    assert detail.metrics["citationSupportedRate"] == 0.5 and detail.metrics["wrongSpeakerRate"] == 0.5
    assert detail.gate["passed"] is False and detail.run.status == "FAIL"  # 0.5 < the recorded floor 0.9
    assert any(c["metric"] == "citationSupportedRate" and c["outcome"] == "FAIL" for c in detail.gate["checks"])
    assert detail.current_set.id == second_set and detail.current_set.judge_model == "judge-b"
    assert rejudge_run(store, run_id, first).candidates == 0  # nothing missing any more: no set written
    assert len(_sets(store, run_id)) == 2

    # A judge failing on c2: the attempt is kept, incomplete and not current; nothing current changes.
    second = _judge("judge-c", {}, fail_on={"c2"})
    result = rejudge_run(store, run_id, second, all_paragraphs=True)
    assert len(second.calls) == 4 and (result.judged, result.errors, result.failed, result.complete) == (2, 2, 2, False)
    assert "2 of 4 paragraph(s) got no parseable verdict (2 judge error(s))" in result.reason
    assert "c2#0: judge unreachable" in result.reason
    assert _sets(store, run_id)[1:] == [
        (second_set, "rejudge", "judge-b", "complete", True, 4, 0),
        (result.set_id, "rejudge", "judge-c", "incomplete", False, 4, 2),
    ]
    assert _set_verdicts(store, result.set_id) == [
        ("-", "-", 0.75),
        ("-", "-", 0.75),
        ("supported", "judge-c", 0.75),
        ("supported", "judge-c", 0.75),
    ]
    assert _set_verdicts(store, second_set)[1:] == [
        ("supported", "judge-b", 0.75),
        ("wrong_speaker", "judge-b", 0.75),
        ("wrong_speaker", "judge-b", 0.75),
    ]
    after = show_run(store, run_id)
    assert (after.metrics, after.gate, after.run.status) == (detail.metrics, detail.gate, "FAIL")
    assert after.verdicts == detail.verdicts and after.verdicts["wrong_speaker"] == 2

    # The CLI: without a judge it is a usage error; an incomplete attempt exits 1 saying why; a complete one 0.
    assert rejudge_main([run_id, "--history", history_url]) == 2
    assert rejudge_main([run_id[:8], "--all", "--history", history_url],
                        lambda args: _judge("judge-d", {}, fail_on={"c1"})) == 1  # fmt: skip
    captured = capsys.readouterr()
    assert "0 of 4" not in captured.out and "2 failed (2 judge error(s), 0 unparseable)" in captured.out
    assert "is incomplete and kept as an attempt: 2 of 4 paragraph(s) got no parseable verdict" in captured.err
    assert "gate: FAIL (unchanged)" in captured.out
    assert rejudge_main([run_id[:8], "--all", "--history", history_url], lambda args: _judge("judge-d", {})) == 0
    assert "is complete and now current" in capsys.readouterr().out
    final = show_run(store, run_id)
    assert final.metrics["citationSupportedRate"] == 1.0 and final.current_set.judge_model == "judge-d"
    assert len(final.judgment_sets) == 5 and sum(s.is_current for s in final.judgment_sets) == 1


def test_rejudge_refuses_an_unfinished_run(store: HistoryStore) -> None:
    run_id = store.open_run(_data.config())
    store.add_items(run_id, [_data.citation("c", [_data.paragraph(0)])])
    with pytest.raises(HistoryError, match="no finish time"):
        rejudge_run(store, run_id, _judge("j", {}))


def test_migration_from_the_first_released_schema(history_url: str) -> None:
    from pytest_groundeval.history.engine import WRITE, create_history_engine, resolve_url

    engine = create_history_engine(resolve_url(history_url))
    v1 = V1_METADATA.tables
    with engine.connect().execution_options(**WRITE) as conn, conn.begin():
        create_version(conn, V1_METADATA, 1)
        conn.execute(
            v1["runs"]
            .insert()
            .values(
                id="a" * 32,
                label="old",
                config={"models": {}},
                started_ms=5,
                finished_ms=9,
                metrics={"errors": 0},
                gate={"passed": True},
            )
        )
        item = conn.execute(
            v1["items"]
            .insert()
            .returning(v1["items"].c.id)
            .values(
                run_id="a" * 32,
                item_id="c1",
                kind="citation",
                passed=True,
                detail="",
                tags=["x"],
                outcome={"id": "c1", "kind": "citation", "pass": True, "extra": {}},
                recorded_ms=6,
            )
        ).scalar()
        conn.execute(v1["item_tags"].insert().values(item=item, tag="x", run_id="a" * 32))
        conn.execute(
            v1["judgments"]
            .insert()
            .values(
                item=item,
                run_id="a" * 32,
                paragraph=0,
                text="Old [1].",
                markers=["1"],
                missing_markers=[],
                metadata_mismatch=[],
                deterministic_pass=True,
                verdict="supported",
                rationale="old judge",
            )
        )
    with engine.connect() as conn:
        assert stored_version(conn) == 1
    engine.dispose()

    with HistoryStore.open(history_url) as store:
        with store.engine.connect() as conn:
            assert stored_version(conn) == schema.SCHEMA_VERSION == 6
            old = conn.execute(select(schema.judgments)).mappings().one()
        assert old["verdict"] == "supported" and old["judge_model"] is None and old["coverage_score"] is None
        detail = show_run(store, "latest")
        assert detail.run.label == "old" and detail.verdicts["supported"] == 1
        # The new columns take data, for old and new runs alike.
        new = _record_run(store, [_data.qa("q", tools=("search",))], started_ms=10)
        assert [g.group for g in group_items(store, new, "tool")] == ["search"]
        # A v1 judgment can be rejudged: the judge model is recorded in the new set, the old verdict kept.
        verdict = {"verdict": "partial", "rationale": "only half", "judgeModel": "judge-v2"}
        result = rejudge_run(store, "a" * 32, lambda request: verdict, all_paragraphs=True)
        assert result.judged == 1 and result.complete
        assert _set_verdicts(store, result.set_id) == [("partial", "judge-v2", None)]
        assert _set_verdicts(store, result.replaced_set) == [("supported", "-", None)]


def test_migration_from_version_2_makes_the_judgments_each_runs_first_current_set(history_url: str) -> None:
    from pytest_groundeval.history.engine import WRITE, create_history_engine, resolve_url
    from pytest_groundeval.history.migrations import V2_METADATA

    engine = create_history_engine(resolve_url(history_url))
    v2 = V2_METADATA.tables
    judged, unjudged, killed = "a" * 32, "b" * 32, "c" * 32
    with engine.connect().execution_options(**WRITE) as conn, conn.begin():
        create_version(conn, V2_METADATA, 2)
        for run_id, judge, started in ((judged, "judge-x", 5), (unjudged, None, 6), (killed, "judge-x", 7)):
            conn.execute(
                v2["runs"]
                .insert()
                .values(
                    id=run_id,
                    label=run_id[0],
                    config={"models": {}, "judgeModel": judge, "scorerModel": None},
                    started_ms=started,
                    finished_ms=None if run_id == killed else started + 10,
                    interrupted=None if run_id == killed else False,
                    metrics=None if run_id == killed else {"errors": 0},
                    gate=None if run_id == killed else {"passed": run_id == judged, "checks": []},
                    gate_passed=None if run_id == killed else run_id == judged,
                )
            )
            item = conn.execute(
                v2["items"]
                .insert()
                .returning(v2["items"].c.id)
                .values(
                    run_id=run_id,
                    item_id="c1",
                    kind="citation",
                    passed=True,
                    detail="",
                    tags=[],
                    tool_trace=None,
                    outcome={"id": "c1", "kind": "citation", "pass": True, "extra": {}},
                    recorded_ms=started,
                )
            ).scalar()
            for paragraph in (0, 1):
                conn.execute(
                    v2["judgments"]
                    .insert()
                    .values(
                        item=item,
                        run_id=run_id,
                        paragraph=paragraph,
                        text=f"P{paragraph} [1].",
                        markers=["1"],
                        missing_markers=[],
                        metadata_mismatch=[],
                        deterministic_pass=True,
                        verdict="supported" if judge else None,
                        rationale="ok" if judge else None,
                        judge_model=judge,
                        judged_ms=started + 1 if judge else None,
                        coverage_score=0.5,
                    )
                )
    engine.dispose()

    with HistoryStore.open(history_url) as store:
        with store.engine.connect() as conn:
            assert stored_version(conn) == schema.SCHEMA_VERSION == 6  # through versions 3, 4 and 5
        # One set per run, current, with the judge model the run recorded; complete only when finished and judged.
        sets = {run_id: _sets(store, run_id) for run_id in (judged, unjudged, killed)}
        assert [row[1:] for row in sets[judged]] == [("run", "judge-x", "complete", True, 2, 0)]
        assert [row[1:] for row in sets[unjudged]] == [("run", None, "incomplete", True, 2, 2)]
        assert [row[1:] for row in sets[killed]] == [("run", "judge-x", "incomplete", True, 2, 0)]
        assert _set_verdicts(store, sets[judged][0][0]) == [("supported", "judge-x", 0.5)] * 2
        detail = show_run(store, judged)
        assert detail.verdicts["supported"] == 2 and detail.current_set.judge_model == "judge-x"
        assert show_run(store, unjudged).verdicts["unjudged"] == 2
        # The migrated table takes a second set of the same paragraphs (unique per set, item, paragraph).
        verdict = JudgeVerdict(verdict="supported", rationale="checked", judge_model="judge-y", coverage_score=0.75)
        result = rejudge_run(store, unjudged, lambda request: verdict, all_paragraphs=True)
        assert result.complete and _set_verdicts(store, result.set_id) == [("supported", "judge-y", 0.75)] * 2
        assert _set_verdicts(store, result.replaced_set) == [("-", "-", 0.5)] * 2
        # New runs record their own set on the migrated database.
        new = _record_run(store, [_data.citation("c", [_data.paragraph(0, verdict="supported")])], started_ms=20)
        assert [row[1:] for row in _sets(store, new)] == [("run", None, "complete", True, 1, 0)]
        # The migrated schema is the fresh one: same tables, columns and unique constraints.
        from sqlalchemy import inspect

        with store.engine.connect() as conn:
            migrated = inspect(conn)
            for table in schema.metadata.sorted_tables:
                assert {c["name"] for c in migrated.get_columns(table.name)} == set(table.c.keys()), table.name
            uniques = {u["name"] for u in migrated.get_unique_constraints("judgments")}
            assert "uq_judgments_set_item_paragraph" in uniques and "uq_judgments_item_paragraph" not in uniques
            indexes = {i["name"] for i in migrated.get_indexes("judgments")}
            assert {"ix_judgments_run", "ix_judgments_set"} <= indexes


def test_compare_uses_the_recorded_floors_as_they_are(store: HistoryStore) -> None:
    # The run disabled the temporal floor; merging its floors over the defaults again would revive it.
    floors = {"claimSupportPrecision": 0.9, "errors": 0, "retrievalRecallMargin": 0.02}
    a = _record_run(store, [_data.qa("q")], floors=floors, started_ms=1)
    b = store.open_run(_data.config(floors=floors), started_ms=2)
    store.add_items(b, [_data.qa("q")])
    store.finish_run(b, metrics={"temporalAccuracy": 0.5, "errors": 0}, gate={"passed": True, "checks": []})
    assert compare_runs(store, a, b).regressions == []
    reasons = compare_runs(store, a, b, floors={"temporalAccuracy": 1.0}).regressions
    assert reasons and reasons[0].startswith("temporalAccuracy 0.5 fails its floor >= 1")


def test_background_recorder_commits_a_lone_batch_after_max_delay(store: HistoryStore) -> None:
    recorder = RunRecorder(store, _data.config(), batch_size=100, max_delay_s=0.05)
    recorder.add(_data.qa("q1"))
    recorder.add(_data.qa("q2"))
    deadline = time.monotonic() + 10
    while recorder.recorded < 2:  # no flush, no further item: the writer's timer commits the batch
        assert time.monotonic() < deadline, "the batch was not committed after max_delay_s"
        time.sleep(0.01)
    assert _count(store, schema.items, recorder.run_id) == 2
    recorder.close()


def test_finish_can_record_what_the_run_learnt(store: HistoryStore) -> None:
    config = {**_data.config(), "models": {"generate": "unknown", "embed": "unknown"}}
    recorder = RunRecorder(store, config, background=False)
    recorder.add(_data.qa("q"))
    recorder.finish(
        metrics={"errors": 0},
        gate={"passed": True, "checks": []},
        config_update={"models": {"generate": "gen-2", "embed": "emb-2"}},
    )
    detail = show_run(store, recorder.run_id)
    assert detail.config["models"] == {"generate": "gen-2", "embed": "emb-2"}
    assert detail.config["options"] == {"concurrency": 4} and detail.run.dataset_version == "2026.1"


def test_migration_from_version_3_adds_the_confidence_columns(history_url: str) -> None:
    from pytest_groundeval.history.engine import WRITE, create_history_engine, resolve_url
    from pytest_groundeval.history.migrations import V3_METADATA

    engine = create_history_engine(resolve_url(history_url))
    v3 = V3_METADATA.tables
    old = "d" * 32
    with engine.connect().execution_options(**WRITE) as conn, conn.begin():
        create_version(conn, V3_METADATA, 3)
        conn.execute(v3["runs"].insert().values(id=old, label="v3", config={"models": {}}, started_ms=5,
                                                finished_ms=9, metrics={"errors": 0}, gate={"passed": True}))  # fmt: skip
        conn.execute(v3["judgment_sets"].insert().values(run_id=old, origin="run", created_ms=9, status="complete",
                                                         is_current=True, paragraphs=0, failed=0))  # fmt: skip
    engine.dispose()

    with HistoryStore.open(history_url) as store:
        with store.engine.connect() as conn:
            assert stored_version(conn) == schema.SCHEMA_VERSION == 6
            assert conn.execute(select(schema.runs.c.confidence).where(schema.runs.c.id == old)).scalar() is None
        assert show_run(store, old).confidence is None  # recorded before intervals: none, not made up
        # The new columns take data: a run recorded on the migrated database keeps its intervals.
        interval = {"low": 0.5, "high": 0.9, "method": "wilson"}
        run_id = store.open_run(_data.config(), label="v4", started_ms=20)
        store.finish_run(run_id, metrics={"errors": 0}, gate={"passed": True, "checks": []},
                         confidence={"retrievalRecall": interval, "temporalAccuracy": None})  # fmt: skip
        assert show_run(store, run_id).confidence == {"retrievalRecall": interval, "temporalAccuracy": None}
        with store.engine.connect() as conn:
            stored = conn.execute(
                select(schema.judgment_sets.c.confidence).where(schema.judgment_sets.c.run_id == run_id)
            )
            assert stored.scalar() == {"retrievalRecall": interval, "temporalAccuracy": None}
        from sqlalchemy import inspect

        with store.engine.connect() as conn:
            migrated = inspect(conn)
            for table in schema.metadata.sorted_tables:
                assert {c["name"] for c in migrated.get_columns(table.name)} == set(table.c.keys()), table.name


def test_rejudge_recomputes_the_confidence_intervals(store: HistoryStore) -> None:
    records = [_data.citation(f"c{i}", [_data.paragraph(0), _data.paragraph(1)]) for i in range(6)]
    run_id = store.open_run({**_data.config(floors={"citationSupportedRate": 0.5}), "confidenceLevel": 0.9,
                             "gateOn": "lower-bound"})  # fmt: skip
    store.add_items(run_id, records)
    store.finish_run(
        run_id, metrics=compute_metrics(_outcomes(records)).to_wire(), gate={"passed": False, "checks": []}
    )
    verdicts = {f"c{i}": "supported" if i < 4 else "unsupported" for i in range(6)}
    result = rejudge_run(store, run_id, _judge("judge-b", verdicts))
    assert result.complete and result.confidence is not None
    supported = result.confidence["citationSupportedRate"]
    # 8 of 12 paragraphs, 4 of 6 items all supported: a cluster bootstrap over the items, at the run's 0.9.
    assert supported["method"] == "bootstrap" and supported["low"] < 8 / 12 < supported["high"]
    detail = show_run(store, run_id)
    assert detail.confidence == result.confidence
    # The run gated on the intervals' ends, as it recorded: the floor 0.5 compared with the low end.
    check = next(c for c in detail.gate["checks"] if c["metric"] == "citationSupportedRate")
    assert detail.gate["gateOn"] == "lower-bound" and check["gatedOn"] == "low"
    assert (check["outcome"] == "PASS") == (supported["low"] >= 0.5)
