"""Benchmark 2 (issues 8 and 24): collecting a 100,000-item manifest.

Run: ``python benchmarks/bench_collect.py [--items 100000] [--rounds 3]`` (about 1–2 minutes).

Two fresh subprocesses per round, interleaved:

- *plugin*: ``pytest --collect-only -q --eval-dataset=D`` (the manifest is read,
  validated item by item with pydantic, the corpus hashed and decoded, and each
  item becomes a ``pytest.Function`` under a per-kind collector);
- *minimal*: ``pytest --collect-only -q manifest.json`` with the plugin disabled
  and a ``conftest.py`` whose ``pytest.File`` does ``json.loads`` and yields one
  trivial ``pytest.Item`` per entry: the least any manifest collector can do.

Reported: wall time and peak RSS (``ru_maxrss`` of the child, from ``os.wait4``)
of each; goals: plugin / minimal ≤ 1.2× in time and in peak memory (issue 24; issue 8 asked
≤ 1.1× in time).
Both get ``-p no:cacheprovider -p no:hypothesispytest``; ``-q`` prints one node
id per item on both sides (sent to a temp file).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import _harness as h
from synthetic import write_dataset

TIME_GOAL = 1.2
MEMORY_GOAL = 1.2

MINIMAL_CONFTEST = '''\
"""The least a manifest collector can do: parse the JSON, one trivial Item per entry."""
import json

import pytest


class ManifestFile(pytest.File):
    def collect(self):
        manifest = json.loads(self.path.read_text(encoding="utf-8"))
        for entry in manifest["items"]:
            yield ManifestItem.from_parent(self, name=entry["id"], entry=entry)


class ManifestItem(pytest.Item):
    def __init__(self, *, entry, **kwargs):
        super().__init__(**kwargs)
        self.entry = entry

    def runtest(self):
        pass


def pytest_collect_file(file_path, parent):
    if file_path.name == "manifest.json":
        return ManifestFile.from_parent(parent, path=file_path)
'''


def sides(work: Path, dataset: Path) -> dict[str, tuple[list[str], Path]]:
    """name -> (argv, cwd)."""
    plugin_dir = h.write_ini(work / "plugin")
    minimal_dir = h.write_ini(work / "minimal")
    (minimal_dir / "conftest.py").write_text(MINIMAL_CONFTEST, encoding="utf-8")
    # A hard link: the same bytes (and page-cache pages) as the plugin's manifest.
    os.link(dataset / "manifest.json", minimal_dir / "manifest.json")
    pytest = [h.PYTHON, "-m", "pytest", *h.QUIET_PLUGINS, "--collect-only", "-q"]
    return {
        "plugin": (pytest + ["--eval-dataset=dataset"], plugin_dir),
        "minimal": (pytest + ["-p", "no:groundeval", "manifest.json"], minimal_dir),
    }


def expect_collected(name: str, output: str, items: int) -> None:
    wanted = [f"{items} tests collected"]
    if name == "plugin":
        wanted.append("dataset/manifest.json::qa::qa-000000")  # node ids as a repository's dataset has them
    h.expect_output(name, output, wanted, tail_lines=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000, help="qa items in the manifest")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    args = parser.parse_args(argv)

    print(f"benchmark 2: --collect-only of {args.items} items, {args.rounds} rounds; {h.machine_note()}")
    with tempfile.TemporaryDirectory(prefix="bench-collect-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        dataset = write_dataset(work / "plugin" / "dataset", args.items).parent
        size = (dataset / "manifest.json").stat().st_size
        print(f"  manifest: {size / 2**20:.1f} MiB, written in {time.perf_counter() - started:.1f} s")
        commands = sides(work, dataset)
        wall: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        rss: dict[str, list[float]] = {name: [] for name in commands}
        for round_ in range(args.rounds):
            for name, (cmd, cwd) in commands.items():
                measured = h.check(h.run_measured(cmd, cwd=cwd, env=h.pytest_env()), name)
                expect_collected(name, measured.output, args.items)
                wall[name].append(measured.wall_s)
                cpu[name].append(measured.cpu_s)
                rss[name].append(measured.max_rss_mib)
            print(
                f"  round {round_ + 1}: "
                + ", ".join(
                    f"{name} {wall[name][-1]:.2f} s ({cpu[name][-1]:.2f} s CPU), {rss[name][-1]:.0f} MiB"
                    for name in commands
                )
            )
    rows = [
        [
            name,
            h.spread(wall[name]),
            h.spread(cpu[name]),
            h.spread(rss[name], "{:.0f}"),
            f"{h.median(wall[name]) / args.items * 1e6:.1f}",
        ]
        for name in commands
    ]
    headers = ["side", "wall s, median (min–max)", "CPU s", "peak RSS MiB, median (min–max)", "µs/item"]
    print(h.table(headers, rows))
    time_ratio = h.median(wall["plugin"]) / h.median(wall["minimal"])
    memory_ratio = h.median(rss["plugin"]) / h.median(rss["minimal"])
    print(f"plugin / minimal time: {time_ratio:.2f}x (goal <= {TIME_GOAL}x: {h.verdict(time_ratio, TIME_GOAL, True)})")
    cpu_ratio = h.median(cpu["plugin"]) / h.median(cpu["minimal"])
    print(f"plugin / minimal CPU time: {cpu_ratio:.2f}x (the steadier figure on a loaded machine)")
    print(
        f"plugin / minimal peak memory: {memory_ratio:.2f}x "
        f"(goal <= {MEMORY_GOAL}x: {h.verdict(memory_ratio, MEMORY_GOAL, True)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
