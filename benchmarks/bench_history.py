"""Benchmark: the cost of recording run history (docs/history.md): the writer alone, and real plugin sessions.

Run: ``python benchmarks/bench_history.py [--items 2000] [--rounds 5] [--batch 100]
[--postgres URL] [--session-rounds 5]`` (about a minute by default).

Two sides, in this process, interleaved round by round, each over the same
``--items`` item records (qa items with a compact trace, two tool-trace entries
and tags; every tenth a citation item with three paragraphs):

- *without*: what the controller does per item today: validate the outcome
  (``ItemOutcome.model_validate``), fold it into a ``MetricsAccumulator``, stream
  it to a ``ReportWriter``;
- *with*: the same, plus ``RunRecorder.add`` into a fresh SQLite history (WAL,
  batches of ``--batch``), with ``open_run`` before and ``finish_run`` after.
  With ``--postgres URL`` a third side writes to that PostgreSQL database.

Reported: the wall time of each side, the ratio with/without, and the history's
own cost per item. That ratio is against the aggregation work alone, which is
tiny; the figure with a goal (≤ 1.05×) is against a whole run. So, unless
``--session-rounds 0``, the script also times real plugin sessions of
``--items`` qa items against ``instant_target.py`` (as benchmark 1 does),
alternately without history and with ``--eval-history=sqlite:///…`` (the
controller recording every outcome), and reports their ratio.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import _harness as h

from pytest_groundeval.core.metrics import MetricsAccumulator
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.report import ReportWriter
from pytest_groundeval.history import HistoryStore, HistoryWriter, RunRecorder
from pytest_groundeval.history.records import ITEM_CONTEXT_KEYS

GOAL = 1.05


def records(count: int) -> list[dict]:
    """``count`` item records shaped as the controller will hand them over."""
    out = []
    for n in range(count):
        base = {
            "id": f"item-{n:05d}",
            "pass": n % 9 != 0,
            "error": None,
            "traceId": f"t{n}",
            "detail": "2/2 evidence found; 2/2 supported claims true",
            "latencyMs": 3.0 + n % 17,
            "promptTokens": 420,
            "completionTokens": 60,
            "extra": {},
            "question": f"What does record {n} say about the harbour fees in 2019?",
            "answer": "The harbour fee rose to 40 crowns [1]. It was cut in 2021 [2]. " * 3,
            "tags": ["harbour", f"batch-{n % 5}"],
            "sources": {"1": {"document": "fees.json"}, "2": {"document": "minutes.md"}},
            "trace": {
                "evidence": [
                    {
                        "marker": str(i),
                        "document": "fees.json",
                        "start": i * 80,
                        "end": i * 80 + 60,
                        "text": "Record text of about sixty characters, give or take a few.",
                    }
                    for i in range(1, 4)
                ],
                "claims": [{"text": "The harbour fee rose to 40 crowns.", "verdict": "supported", "markers": ["1"]}]
                * 3,
            },
            "toolTrace": [{"tool": "search", "hits": ["d1", "d7", "d9"]}, {"tool": "sql", "hits": ["r12"]}],
            "iterations": 1 + n % 3,
        }
        if n % 10 == 9:
            paragraphs = [
                {
                    "index": i,
                    "text": f"Paragraph {i}: Anna Berg said so [S{i + 1}].",
                    "markers": [f"S{i + 1}"],
                    "metadataMismatch": [],
                    "missingMarkers": [],
                    "deterministicPass": True,
                }
                for i in range(3)
            ]
            base.update(
                kind="citation",
                extra={
                    "citationParagraphsJudged": 3,
                    "citationParagraphsMismatched": 0,
                    "citationParagraphsDropped": 0,
                    "citationParagraphs": paragraphs,
                },
            )
        else:
            base.update(
                kind="qa",
                evidenceExpected=2,
                evidenceFound=2,
                claimsReturned=3,
                claimsSupported=3,
                claimsSupportedTrue=3,
                claimsTrueCited=3,
                claimsTrueCitedSupported=3,
            )
        out.append(base)
    return out


def controller_pass(batch: list[dict], work: Path, recorder: RunRecorder | None) -> None:
    """One run's per-item controller work; with a recorder, each record is also written to history."""
    accumulator = MetricsAccumulator()
    with ReportWriter(work / "report.json") as writer:
        for record in batch:
            wire = {k: v for k, v in record.items() if k not in ITEM_CONTEXT_KEYS}
            outcome = ItemOutcome.model_validate(wire)
            accumulator.add(outcome)
            writer.add_item(outcome)
            if recorder is not None:
                recorder.add(record)
        metrics = accumulator.result()
    if recorder is not None:
        recorder.finish(metrics=metrics.to_wire(), gate={"passed": True, "checks": []})


def timed_side(batch: list[dict], work: Path, url: str | None, batch_size: int) -> float:
    store = HistoryStore.open(url) if url is not None else None
    try:
        started = time.perf_counter()
        recorder = RunRecorder(store, {"dataset": {"version": "bench"}}, batch_size=batch_size) if store else None
        controller_pass(batch, work, recorder)
        return time.perf_counter() - started
    finally:
        if store is not None:
            store.close()


def session_seconds(items: int, rounds: int, batch: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall time of plugin sessions over ``items`` qa items against the instant target, without and with history.

    The *with* side passes ``--eval-history`` (a SQLite history that exists already, as
    for every run but a project's first); sides alternate round by round.
    """
    from synthetic import write_dataset

    walls: dict[str, list[float]] = {"session without history": [], "session with sqlite history": []}
    cpus: dict[str, list[float]] = {side: [] for side in walls}
    with tempfile.TemporaryDirectory(prefix="bench-history-session-") as tmp, h.instant_target() as url:
        work = h.write_ini(Path(tmp) / "plugin")
        write_dataset(work / "dataset", items)
        cmd = [
            h.PYTHON,
            "-m",
            "pytest",
            *h.QUIET_PLUGINS,
            "-q",
            "--eval-dataset=dataset",
            f"--eval-url={url}",
            "--eval-api-key=k",
        ]
        for round_ in range(rounds):
            for side in walls:
                if "with sqlite" in side:
                    db = Path(tmp) / f"history-{round_}.db"
                    # A history that exists already, as for every run but a project's first:
                    # creating the schema (which loads SQLAlchemy) is a one-time cost.
                    HistoryWriter.open(f"sqlite:///{db}").close()
                    env, argv = h.pytest_env(), [*cmd, f"--eval-history=sqlite:///{db}"]
                else:
                    env, argv = h.pytest_env(), cmd
                measured = h.check(h.run_measured(argv, cwd=work, env=env), side)
                if f"{items} passed" not in measured.output:
                    raise RuntimeError(f"{side}: not every item passed:\n" + measured.output[-1500:])
                if "with sqlite" in side:
                    with HistoryStore.open(f"sqlite:///{db}") as store, store.engine.connect() as conn:
                        recorded = conn.exec_driver_sql("SELECT count(*) FROM items").scalar()
                    if recorded != items:
                        raise RuntimeError(f"{side}: the history recorded {recorded} of {items} items")
                walls[side].append(measured.wall_s)
                cpus[side].append(measured.cpu_s)
            print(
                f"  session round {round_ + 1}: "
                + ", ".join(f"{k} {walls[k][-1]:.2f} s wall / {cpus[k][-1]:.2f} s CPU" for k in walls)
            )
    return walls, cpus


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=100, help="items per history commit (in process; the plugin: 100)")
    parser.add_argument("--postgres", help="also write to this PostgreSQL database (postgresql://…)")
    parser.add_argument("--session-rounds", type=int, default=5, help="plugin sessions to time (0: skip)")
    args = parser.parse_args(argv)

    print(f"history benchmark: {args.items} items, batches of {args.batch}, {args.rounds} rounds; {h.machine_note()}")
    batch = records(args.items)
    times: dict[str, list[float]] = {"without": [], "sqlite": []}
    if args.postgres:
        times["postgresql"] = []
    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
        for round_ in range(args.rounds):
            work = Path(tmp) / f"r{round_}"
            work.mkdir()
            times["without"].append(timed_side(batch, work, None, args.batch))
            times["sqlite"].append(timed_side(batch, work, f"sqlite:///{work / 'history.db'}", args.batch))
            if args.postgres:
                times["postgresql"].append(timed_side(batch, work, args.postgres, args.batch))
            print("  round", round_ + 1, ", ".join(f"{k} {v[-1] * 1e3:.0f} ms" for k, v in times.items()))
    base = h.median(times["without"])
    rows = [
        [
            side,
            h.spread([t * 1e3 for t in ts], "{:.0f}"),
            f"{h.median(ts) / base:.2f}",
            f"{(h.median(ts) - base) / args.items * 1e6:.0f}" if side != "without" else "-",
        ]
        for side, ts in times.items()
    ]
    print(h.table(["side", "wall ms, median (min–max)", "ratio to without", "history µs/item"], rows))
    if args.session_rounds > 0:
        walls, cpus = session_seconds(args.items, args.session_rounds, args.batch)
        base_s = h.median(walls["session without history"])
        base_cpu = h.median(cpus["session without history"])
        print(
            h.table(
                ["side", "wall s, median (min–max)", "CPU s, median (min–max)", "wall ratio", "CPU ratio"],
                [
                    [
                        side,
                        h.spread(walls[side]),
                        h.spread(cpus[side]),
                        f"{h.median(walls[side]) / base_s:.3f}",
                        f"{h.median(cpus[side]) / base_cpu:.3f}",
                    ]
                    for side in walls
                ],
            )
        )
        ratio = h.median(walls["session with sqlite history"]) / base_s
        cpu_ratio = h.median(cpus["session with sqlite history"]) / base_cpu
        print(
            f"session with history / without: {ratio:.3f}x wall, {cpu_ratio:.3f}x CPU "
            f"(goal <= {GOAL}x: {h.verdict(ratio, GOAL, at_most=True)} on wall time, "
            f"{h.verdict(cpu_ratio, GOAL, at_most=True)} on CPU)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
