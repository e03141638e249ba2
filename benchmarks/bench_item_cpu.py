"""Issue 24: the plugin's CPU per extra item at ``--eval-concurrency 16``, against the floor.

Run: ``python benchmarks/bench_item_cpu.py [--small 500] [--large 2500] [--rounds 3] [--before REV]``
(a few minutes; a third more with ``--before``).

Per extra item, for each side, is the CPU (user + system) of a fresh subprocess at ``--large``
items minus that at ``--small`` items, over the difference: what start-up, collection set-up and
ingest cost is the same at both sizes and drops out. Rounds are interleaved; medians (the
verdict), and the same slope from each side's fastest run at each size, less swayed by a busy
neighbour on a shared machine.

- *plugin*: ``pytest --eval-dataset=D --eval-url=URL --eval-api-key=k --eval-concurrency=16
  -p no:xdist`` on a synthetic qa dataset (``synthetic.py``) against ``instant_target.py``
  (no added latency), every item passing;
- *trivial pytest*: a module of one parametrised test that does nothing, over as many items
  (``-p no:groundeval``): pytest's own per-item protocol;
- *bare aiohttp*: the same ``POST /v1/generate`` calls outside pytest, 16 in flight on one
  ``aiohttp.ClientSession``, each reply decoded: the HTTP work an item cannot avoid.

The floor is *trivial pytest* + *bare aiohttp* per item; the goal is plugin ≤ 1.3× the floor.
The target server's CPU is not counted: it is the same for every side that calls it.

``--before REV`` adds a side, *plugin before*: the plugin side with that commit's
``pytest_groundeval`` (``_harness.export_rev``, first on the child's ``PYTHONPATH``),
interleaved with the others, so before → after comes from one invocation.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import _harness as h
from synthetic import write_dataset

GOAL = 1.3

TRIVIAL_TEST = """\
import pytest

@pytest.mark.parametrize("i", range({items}))
def test_item(i):
    pass
"""

BARE_AIOHTTP = """\
import asyncio, json, sys

import aiohttp

manifest, base_url = sys.argv[1], sys.argv[2]
items = json.load(open(manifest, encoding="utf-8"))["items"]


async def main():
    headers = {"Authorization": "Bearer k"}
    async with aiohttp.ClientSession(base_url, headers=headers, connector=aiohttp.TCPConnector(limit=16)) as session:
        queue = iter(items)

        async def worker():
            for item in queue:
                async with session.post("/v1/generate", json={"question": item["question"], "find": item.get("find")}) as r:
                    r.raise_for_status()
                    await r.json()

        await asyncio.gather(*(worker() for _ in range(16)))


asyncio.run(main())
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--large", type=int, default=2500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", metavar="REV", help="also measure this commit's package, interleaved")
    args = parser.parse_args(argv)
    before_source = h.export_rev(args.before) if args.before else None
    plugin_sides = ["plugin"] + ([f"plugin before ({args.before})"] if args.before else [])
    sizes = (args.small, args.large)
    print(h.machine_note())
    cpu: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-item-cpu-") as tmp, h.instant_target() as url:
        root = Path(tmp)
        work = h.write_ini(root / "work")
        (root / "bare.py").write_text(BARE_AIOHTTP, encoding="utf-8")
        commands: dict[tuple[str, int], list[str]] = {}
        for n in sizes:
            write_dataset(work / f"d{n}", n)
            (work / f"test_trivial_{n}.py").write_text(TRIVIAL_TEST.format(items=n), encoding="utf-8")
            for side in plugin_sides:
                commands[(side, n)] = [
                    h.PYTHON, "-m", "pytest", *h.QUIET_PLUGINS, "-p", "no:xdist", "-q", f"--eval-dataset=d{n}",
                    f"--eval-url={url}", "--eval-api-key=k", "--eval-concurrency=16",
                ]  # fmt: skip
            commands[("trivial pytest", n)] = [
                h.PYTHON, "-m", "pytest", *h.QUIET_PLUGINS, "-p", "no:xdist", "-p", "no:groundeval", "-q",
                f"test_trivial_{n}.py",
            ]  # fmt: skip
            commands[("bare aiohttp", n)] = [
                h.PYTHON,
                str(root / "bare.py"),
                str(work / f"d{n}" / "manifest.json"),
                url,
            ]
        for round_ in range(args.rounds):
            for (side, n), argv_ in commands.items():
                env = h.pytest_env(path=[before_source] if side.startswith("plugin before") else [])
                measured = h.check(h.run_measured(argv_, cwd=work, env=env), f"{side} at {n}")
                if side != "bare aiohttp" and f"{n} passed" not in measured.output:
                    raise RuntimeError(f"{side} at {n}: not every item passed:\n" + measured.output[-1500:])
                cpu.setdefault((side, n), []).append(measured.cpu_s)
            print(f"  round {round_ + 1}: " + ", ".join(f"{s} {n}: {cpu[(s, n)][-1]:.2f} s" for s, n in commands))
    per_item = {
        side: (h.median(cpu[(side, sizes[1])]) - h.median(cpu[(side, sizes[0])])) / (sizes[1] - sizes[0]) * 1000
        for side in (*plugin_sides, "trivial pytest", "bare aiohttp")
    }
    # The same slope from each side's fastest run at each size: on a shared machine a busy
    # neighbour inflates CPU time (contention, a colder cache), least so in the fastest run.
    fastest = {
        side: (min(cpu[(side, sizes[1])]) - min(cpu[(side, sizes[0])])) / (sizes[1] - sizes[0]) * 1000
        for side in per_item
    }
    floor = per_item["trivial pytest"] + per_item["bare aiohttp"]
    floor_fastest = fastest["trivial pytest"] + fastest["bare aiohttp"]
    rows = [
        [
            side,
            f"{h.median(cpu[(side, sizes[0])]):.2f}",
            f"{h.median(cpu[(side, sizes[1])]):.2f}",
            f"{ms:.3f}",
            f"{fastest[side]:.3f}",
        ]
        for side, ms in per_item.items()
    ]
    rows.append(["floor (trivial + aiohttp)", "", "", f"{floor:.3f}", f"{floor_fastest:.3f}"])
    headers = ["side", f"CPU s at {sizes[0]}", f"CPU s at {sizes[1]}", "CPU ms per extra item", "same, fastest runs"]
    print(h.table(headers, rows))
    for side in plugin_sides:
        ratio = per_item[side] / floor
        print(f"{side} / floor, CPU per extra item: {ratio:.2f}x ({h.verdict(ratio, GOAL, at_most=True)})")
        print(f"  by the fastest runs: {fastest[side] / floor_fastest:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
