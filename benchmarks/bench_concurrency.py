"""Benchmarks 4 and 5 (issue 8): concurrent items and xdist against the reference target.

Run: ``python benchmarks/bench_concurrency.py [--items 1000] [--slow-items 250] [--rounds 2]``
(about 3 minutes; ``--items 2000 --slow-items 2000`` for the issue's full 2,000 items
everywhere, about 10 minutes per round).

The target is the reference server (docs/target-contract.md) spawned by the plugin's own spawn
path, its chat model the mock's with 20 ms of added latency per call:

    --eval-spawn "python -m pytest_groundeval.reference --port {port} --data-dir {data_dir}
                  --model-generate 'mock-generate+fault=delay:20'"

Sides, interleaved round by round, each a fresh subprocess over synthetic qa items:

- ``--eval-concurrency 1`` (``--slow-items`` items);
- ``--eval-concurrency 16`` (``--items``);
- a raw asyncio loop: the same mock (in-process, as the plugin runs it), the same
  spawned reference server, the corpus ingested, then aiohttp with 16 requests in
  flight posting ``/v1/generate`` for the same items, nothing judged;
- ``-n 2 --eval-concurrency C`` against ``-n 0 --eval-concurrency C``
  (``--xdist-concurrency``, default 1, so the -n 0 side is the first one above).

Items/s are steady-state rates: (items − 1) / (time from the first finished item
to the last), written by the ``_rate_probe`` plugin (or the raw loop itself), so
interpreter start-up, collection, the mock and the server's spawn and the
corpus ingest are left out and runs of different lengths compare.

Against the reference server the synthetic dataset has one document per record
(``synthetic.write_dataset(per_record=True)``), each item finding only its own
record: in one shared document the mock's answer cites a second, true record the
item's truths do not list, and every item failed. Each side's passed / failed /
error counts are printed per round; a benchmark of failing items measures the
failure path, so the script says so when any item did not pass.
Goals: c16 / c1 ≥ 10×; raw / c16 ≤ 1.5×; (-n 2) / (-n 0) ≥ 1.7×. The raw loop
also reports the reference server's CPU time per generate (its process group's
user + system time from ``/proc``), which bounds what any client can get from
one server process.

If this checkout's plugin has no ``--eval-concurrency`` (checked with
``pytest --help``), the script says so and runs what does not need it.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import _harness as h
from synthetic import write_dataset

DELAY_MS = 20
SPEED_UP_GOAL = 10.0
RAW_GOAL = 1.5
XDIST_GOAL = 1.7

RAW_LOOP = '''\
"""The floor for concurrency: same mock, same spawned reference server, aiohttp, N in flight."""
import asyncio
import json
import os
import sys
import tempfile
import time

import aiohttp

from pytest_groundeval import targets
from pytest_groundeval.core.dataset import load_dataset
from pytest_groundeval.mock import ThreadedMockProvider

dataset_dir, concurrency, command, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
dataset = load_dataset(dataset_dir)


async def drive(base_url, api_key):
    finished = []
    errors = 0
    headers = {"Authorization": f"Bearer {api_key}"}
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(base_url, headers=headers, connector=connector, timeout=timeout) as session:
        for doc in dataset.documents.values():
            body = {"name": doc.name, "label": doc.label, "format": doc.format,
                    "contentHash": doc.content_hash, "content": doc.content}
            async with session.post("/v1/documents", json=body) as response:
                response.raise_for_status()
        queue = iter(dataset.items)

        async def worker():
            nonlocal errors
            for item in queue:
                async with session.post("/v1/generate", json={"question": item.question, "find": item.find}) as response:
                    if response.status != 200:
                        errors += 1
                    await response.json()
                finished.append(time.perf_counter())

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return finished, errors


def group_cpu_s(pgid):
    """CPU seconds (user + system) of every process in the server's process group."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


with ThreadedMockProvider() as mock, tempfile.TemporaryDirectory() as base:
    config = targets.SpawnConfig(command=command, llm_url=mock.base_url, embed_url=mock.base_url, base_dir=base)
    with targets.SpawnedTarget(config) as spawned:
        cpu_before = group_cpu_s(spawned.process.pid)
        finished, errors = asyncio.run(drive(spawned.base_url, spawned.api_key))
        server_cpu = group_cpu_s(spawned.process.pid) - cpu_before
first, last = finished[0], finished[-1]
with open(out, "w") as handle:
    json.dump({"items": len(finished), "rate": (len(finished) - 1) / (last - first), "errors": errors,
               "server_cpu_ms": server_cpu / len(finished) * 1000}, handle)
'''


def spawn_command(target: str, delay_ms: int, top_k: int | None) -> str:
    if target == "instant":
        script = shlex.quote(str(h.BENCH_DIR / "instant_target.py"))
        return f"{shlex.quote(h.PYTHON)} {script} --port {{port}} --api-key {{api_key}} --delay-ms {delay_ms}"
    model = shlex.quote(f"mock-generate+fault=delay:{delay_ms}")
    command = (
        f"{shlex.quote(h.PYTHON)} -m pytest_groundeval.reference --port {{port}} --data-dir {{data_dir}} "
        f"--model-generate {model}"
    )
    return command + (f" --top-k {top_k}" if top_k is not None else "")


def has_concurrency_option(cwd: Path) -> bool:
    result = subprocess.run(
        [h.PYTHON, "-m", "pytest", *h.QUIET_PLUGINS, "--help"],
        cwd=cwd,
        env=h.pytest_env(),
        capture_output=True,
        text=True,
    )
    return "--eval-concurrency" in result.stdout


def summary_counts(output: str) -> dict[str, int]:
    """``{"passed": n, "failed": m, "error": k, ...}`` from pytest's last summary line."""
    lines = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|errors?)", line)]
    found = re.findall(r"(\d+) (passed|failed|errors?|skipped|deselected)", lines[-1]) if lines else []
    return {word.rstrip("s") if word.startswith("error") else word: int(n) for n, word in found}


def tally(counts: dict[str, int]) -> str:
    """``"250 passed, 0 failed, 0 errors"`` (the raw loop judges nothing: only its error count)."""
    if "passed" not in counts and "failed" not in counts:
        return f"{counts.get('error', 0)} errors (nothing judged)"
    return f"{counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, {counts.get('error', 0)} errors"


def run_plugin(run_dir: Path, dataset: str, command: str, extra: list[str], rate_file: Path) -> tuple[float, dict]:
    cmd = [h.PYTHON, "-m", "pytest", *h.QUIET_PLUGINS, "-p", "_rate_probe", "-q"]
    cmd += [f"--eval-dataset={dataset}", f"--eval-spawn={command}", *extra]
    env = h.pytest_env(path=[h.BENCH_DIR], BENCH_RATE_FILE=str(rate_file))
    rate_file.unlink(missing_ok=True)
    measured = h.check(h.run_measured(cmd, cwd=run_dir, env=env), " ".join(extra), ok=(0, 1))
    counts = summary_counts(measured.output)
    return json.loads(rate_file.read_text())["rate"], counts


def run_raw(work: Path, dataset: Path, command: str, concurrency: int) -> tuple[float, dict]:
    script = work / "raw_loop.py"
    script.write_text(RAW_LOOP, encoding="utf-8")
    out = work / "raw.json"
    cmd = [h.PYTHON, str(script), str(dataset), str(concurrency), command, str(out)]
    h.check(h.run_measured(cmd, cwd=work, env=h.pytest_env()), "raw loop")
    result = json.loads(out.read_text())
    return result["rate"], {"error": result["errors"], "server_cpu_ms": result["server_cpu_ms"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000, help="qa items for the concurrent sides")
    parser.add_argument("--slow-items", type=int, default=250, help="qa items for the concurrency-1 sides")
    parser.add_argument("--concurrency", type=int, default=16, help="the concurrent sides' requests in flight")
    parser.add_argument("--xdist-concurrency", type=int, default=1, help="--eval-concurrency of the -n 0 / -n 2 pair")
    parser.add_argument("--delay-ms", type=int, default=DELAY_MS, help="latency added to each mock chat call")
    parser.add_argument(
        "--target",
        choices=("reference", "instant"),
        default="reference",
        help="reference: the reference server on the delayed mock; instant: instant_target.py with --delay-ms",
    )
    parser.add_argument("--top-k", type=int, default=None, help="the reference server's --top-k (default: its own, 4)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds")
    args = parser.parse_args(argv)
    n, xc = args.concurrency, args.xdist_concurrency

    print(
        f"benchmarks 4-5: {args.target} target, +{args.delay_ms} ms, {args.items} items "
        f"({args.slow_items} at concurrency 1), {args.rounds} rounds; {h.machine_note()}"
    )
    command = spawn_command(args.target, args.delay_ms, args.top_k)
    print(f"  spawn: {command}")
    with tempfile.TemporaryDirectory(prefix="bench-concurrency-") as tmp:
        work = Path(tmp)
        run_dir = h.write_ini(work / "run")
        per_record = args.target == "reference"
        write_dataset(run_dir / "dataset", args.items, per_record=per_record)
        write_dataset(run_dir / "slow", args.slow_items, per_record=per_record)
        concurrent = has_concurrency_option(run_dir)
        if not concurrent:
            print(
                "this checkout has no --eval-concurrency yet (not in `pytest --help`): running the raw loop and xdist only"
            )
        sides: dict[str, tuple] = {}
        if concurrent:
            sides["c1"] = ("plugin, --eval-concurrency 1", "slow", ["--eval-concurrency", "1"])
            sides[f"c{n}"] = (f"plugin, --eval-concurrency {n}", "dataset", ["--eval-concurrency", str(n)])
        sides["raw"] = (f"raw aiohttp loop, {n} in flight", None, None)
        xdist_extra = ["--eval-concurrency", str(xc)] if concurrent else []
        if not concurrent or xc != 1:
            sides["n0"] = (f"plugin, -n 0 {' '.join(xdist_extra)}".strip(), "slow", ["-n", "0", *xdist_extra])
        sides["n2"] = (f"plugin, -n 2 {' '.join(xdist_extra)}".strip(), "slow", ["-n", "2", *xdist_extra])
        rates: dict[str, list[float]] = {key: [] for key in sides}
        server_cpu_ms: list[float] = []
        problems: dict[str, dict] = {}
        for round_ in range(args.rounds):
            tallies = []
            for key, (label, data, extra) in sides.items():
                if data is None:
                    rate, counts = run_raw(work, run_dir / "dataset", command, n)
                    server_cpu_ms.append(counts.pop("server_cpu_ms"))
                else:
                    rate, counts = run_plugin(run_dir, data, command, extra, work / "rate.json")
                rates[key].append(rate)
                tallies.append(f"{key} {tally(counts)}")
                if counts.get("error") or counts.get("failed"):
                    problems[label] = counts
            print("  round " + str(round_ + 1) + ": " + ", ".join(f"{k} {v[-1]:.1f}/s" for k, v in rates.items()))
            print("    items: " + "; ".join(tallies))
    rows = [[label, h.spread(rates[key], "{:.1f}")] for key, (label, _, _) in sides.items()]
    print(h.table(["side", "items/s, median (min–max)"], rows))
    capacity = 1000 / max(h.median(server_cpu_ms), 1e-3)
    print(
        f"{args.target} server CPU per generate (raw loop): {h.spread(server_cpu_ms, '{:.1f}')} ms, "
        f"so one server process tops out near {capacity:.0f} items/s on one core"
    )
    for label, counts in problems.items():
        print(f"note: {label} had {counts} (items that errored or failed still count in the rate)")
    m = {key: h.median(values) for key, values in rates.items()}
    if concurrent:
        speed_up = m[f"c{n}"] / m["c1"]
        raw_ratio = m["raw"] / m[f"c{n}"]
        print(f"c{n} / c1: {speed_up:.1f}x (goal >= {SPEED_UP_GOAL:g}x: {h.verdict(speed_up, SPEED_UP_GOAL, False)})")
        print(f"raw / c{n}: {raw_ratio:.2f}x (goal <= {RAW_GOAL}x: {h.verdict(raw_ratio, RAW_GOAL, True)})")
    base = m["n0"] if "n0" in m else m["c1"]
    xdist = m["n2"] / base
    print(f"-n 2 / -n 0: {xdist:.2f}x (goal >= {XDIST_GOAL}x: {h.verdict(xdist, XDIST_GOAL, False)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
