"""Item records and finished runs for the history tests (tests/history, tests/cli), records shaped as ``ItemOutcome.to_wire()`` plus history context."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_groundeval.history import HistoryStore


def qa(
    item_id: str,
    *,
    passed: bool = True,
    latency: float = 10.0,
    tags=("geo",),
    tools=("search",),
    iterations: int | None = 1,
    error: str | None = None,
) -> dict[str, Any]:
    """A qa outcome record with a tool trace, tags and figures."""
    return {
        "id": item_id,
        "kind": "qa",
        "pass": passed and error is None,
        "error": error,
        "traceId": f"trace-{item_id}",
        "detail": "ok" if passed else "2 of 3 expected evidence strings not retrieved",
        "latencyMs": latency,
        "promptTokens": 100,
        "completionTokens": 20,
        "evidenceExpected": 2,
        "evidenceFound": 2 if passed else 1,
        "claimsReturned": 2,
        "claimsSupported": 2,
        "claimsSupportedTrue": 2 if passed else 1,
        "claimsTrueCited": 2,
        "claimsTrueCitedSupported": 2,
        "falsehoodSupported": None,
        "evidenceReview": None,
        "extra": {},
        "question": f"What about {item_id}?",
        "answer": f"An answer to {item_id} [1].",
        "tags": list(tags),
        "sources": {"1": {"document": "doc.md"}},
        "trace": {
            "evidence": [{"marker": "1", "document": "doc.md", "start": 0, "end": 5, "text": "hello"}],
            "claims": [{"text": "hello", "verdict": "supported", "markers": ["1"]}],
        },
        "toolTrace": [{"tool": t, "hits": ["d1", "d2"], "calls": 1} for t in tools],
        "iterations": iterations,
    }


def paragraph(index: int, *, mismatch: list[str] | None = None, verdict: str | None = None) -> dict[str, Any]:
    """A citation paragraph as ``citation.judge_citation`` writes it, optionally with a judge verdict."""
    entry: dict[str, Any] = {
        "index": index,
        "text": f"Paragraph {index} says something [S{index + 1}].",
        "markers": [f"S{index + 1}"],
        "metadataMismatch": list(mismatch or []),
        "missingMarkers": [],
        "deterministicPass": not mismatch,
    }
    if verdict is not None:
        entry.update(verdict=verdict, rationale=f"because {verdict}", judgeModel="judge-a", coverageScore=0.5)
    return entry


def jury_paragraph(index: int, verdicts: list[str | None], jury: str) -> dict[str, Any]:
    """A paragraph a jury of judges ``a``, ``b``, … judged: the jury's verdict ``jury`` and each judge's
    (None: that judge left it unjudged), as ``core.kinds.citation.Jury`` records them (docs/judges.md)."""
    entry = paragraph(index, verdict=jury)
    entry["judgeModel"] = f"jury(majority: {', '.join('abcdefg'[: len(verdicts)])})"
    entry["judges"] = [
        {"judgeModel": model, "verdict": verdict, "rationale": "r" if verdict else "",
         "judgeError": None if verdict else "down", "judgeAttempts": 1, "judgeCached": False, "parseFailures": []}
        for model, verdict in zip("abcdefg", verdicts)
    ]  # fmt: skip
    return entry


def citation(
    item_id: str,
    paragraphs: list[dict[str, Any]],
    *,
    passed: bool = True,
    tags=("speech",),
    latency: float = 20.0,
    tools=("lookup",),
) -> dict[str, Any]:
    """A citation outcome record with its paragraphs in ``extra.citationParagraphs``."""
    mismatched = sum(1 for p in paragraphs if not p["deterministicPass"])
    return {
        "id": item_id,
        "kind": "citation",
        "pass": passed,
        "error": None,
        "traceId": None,
        "detail": "judged",
        "latencyMs": latency,
        "promptTokens": None,
        "completionTokens": None,
        "evidenceExpected": 0,
        "evidenceFound": 0,
        "claimsReturned": 0,
        "claimsSupported": 0,
        "claimsSupportedTrue": 0,
        "claimsTrueCited": 0,
        "claimsTrueCitedSupported": 0,
        "falsehoodSupported": None,
        "evidenceReview": None,
        "extra": {
            "citationParagraphsJudged": len(paragraphs),
            "citationParagraphsMismatched": mismatched,
            "citationParagraphsDropped": 0,
            "citationParagraphs": paragraphs,
        },
        "question": f"Who said {item_id}?",
        "answer": "\n\n".join(p["text"] for p in paragraphs),
        "tags": list(tags),
        "sources": {f"S{p['index'] + 1}": {"speaker": "Anna Berg"} for p in paragraphs},
        "toolTrace": [{"tool": t, "hits": ["s1"]} for t in tools],
        "iterations": 2,
    }


def config(*, floors: dict | None = None, version: str = "2026.1") -> dict[str, Any]:
    """A run config as the controller records it."""
    return {
        "models": {"generate": "gen-1", "embed": "emb-1"},
        "judgeModel": None,
        "scorerModel": None,
        "dataset": {"path": "datasets/demo/manifest.json", "version": version},
        "gitCommit": "0" * 40,
        "pluginVersion": "0.1.0",
        "floors": floors if floors is not None else {"claimSupportPrecision": 0.9, "errors": 0},
        "options": {"concurrency": 4},
    }


def recorded_run(store: HistoryStore, records, *, label: str, started_ms: int) -> str:
    """A finished run of ``records`` stored with fixed figures (no items counted, precision 1.0) and a passing gate:
    not its items' own metrics, so a reader that recomputes them refuses it."""
    run_id = store.open_run(config(), label=label, started_ms=started_ms)
    store.add_items(run_id, records)
    store.finish_run(
        run_id,
        metrics={"errors": 0, "claimSupportPrecision": 1.0},
        gate={
            "passed": True,
            "checks": [{"metric": "errors", "value": 0, "bound": 0, "op": "<=", "outcome": "PASS", "reason": "0 <= 0"}],
        },
        finished_ms=started_ms + 1500,
    )
    return run_id


def measured_run(store: HistoryStore, records, *, started_ms: int) -> str:
    """A finished run whose stored metrics are its items' and whose gate applied its floors."""
    from pytest_groundeval.core.gate import evaluate_gate, parse_floors
    from pytest_groundeval.core.metrics import compute_metrics
    from pytest_groundeval.history.stored_report import stored_outcomes

    floors = parse_floors({"claimSupportPrecision": 0.9}, "test floors")
    run_config = config(floors=floors)
    run_id = store.open_run(run_config, label="main", started_ms=started_ms)
    store.add_items(run_id, records)
    metrics = compute_metrics(stored_outcomes(store, run_id))
    gate = evaluate_gate(metrics, floors=floors, dataset_version="2026.1", models=run_config["models"])
    store.finish_run(run_id, metrics=metrics.to_wire(), gate=gate.to_wire(), finished_ms=started_ms + 1500)
    return run_id
