"""Benchmark: start-up of a one-item run with the embedded reference server (issue 24).

Run: ``python benchmarks/bench_startup.py [--rounds 7] [--cold-bytecode]`` (about a minute).

Two fresh subprocesses per round, interleaved, in a temp dir with an empty ``pytest.ini``:

- *embedded*: ``pytest --eval-dataset=one`` over one qa item of ``datasets/smoke`` (its
  corpus, its first item): the plugin loads the manifest, starts the mock provider, spawns
  the embedded reference server (and its watchdog), waits for ``/readyz``, ingests the
  corpus, runs the item, gates it and tears everything down; it must print ``1 passed``
  and ``gate: PASS``;
- *one-test*: ``pytest -p no:groundeval test_one.py``, a hand-written file with one
  trivial test: what pytest itself costs to start, run one test and stop.

Both get ``-p no:cacheprovider -p no:hypothesispytest``. Reported per side: wall time,
CPU time (user + system of the pytest process and its whole process tree: the reference
server, the watchdog, and anything they left behind, such as a multiprocessing forkserver
and resource tracker nobody reaps; ``_harness.run_measured_tree``) and peak RSS of the pytest process;
then embedded / one-test as ratios of medians. The issue's goal is 0.9 s for the embedded
run where the one-test file takes 0.33 s, i.e. a wall ratio of at most 2.7x (the absolute
figures depend on the machine; the ratio travels). On a loaded machine the CPU ratio is
the steadier figure: wall time also counts the turns the processes wait for a core.

Bytecode: the children write and read their bytecode caches (and pytest's
assertion-rewritten plugin modules) in a private ``PYTHONPYCACHEPREFIX`` under the temp
dir, warmed by one unmeasured round, as on a developer's machine where they are cached
after the first run. ``--cold-bytecode`` keeps the environment's setting instead (with
``PYTHONDONTWRITEBYTECODE=1`` every run compiles and rewrites every module it imports).

``BENCH_REV=<rev>`` measures that commit's package (``_harness.py``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import _harness as h

WALL_GOAL = 0.9 / 0.33
"""The issue's 0.9 s for the embedded run over its 0.33 s for the one-test file."""

ONE_TEST = """\
def test_one():
    assert 1 + 1 == 2
"""

SMOKE = h.REPO / "datasets" / "smoke"


def write_one_item_dataset(directory: Path) -> Path:
    """``datasets/smoke`` cut to its first item (a qa item), corpus and hashes unchanged."""
    manifest = json.loads((SMOKE / "manifest.json").read_text(encoding="utf-8"))
    manifest["items"] = manifest["items"][:1]
    assert manifest["items"][0]["kind"] == "qa", "the smoke dataset's first item is no longer a qa item"
    shutil.copytree(SMOKE / "corpus", directory / "corpus")
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    return directory


def child_env(pycache: Path | None) -> dict[str, str]:
    """The children's environment; with ``pycache``, bytecode caches written there (see the module docstring)."""
    env = h.pytest_env()
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def expect(name: str, output: str) -> None:
    wanted = ["1 passed"] + (["gate: PASS"] if name == "embedded" else [])
    h.expect_output(name, output, wanted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved measured rounds")
    parser.add_argument("--cold-bytecode", action="store_true", help="keep the environment's bytecode setting")
    args = parser.parse_args(argv)

    print(f"start-up: one-item embedded run vs a one-test file, {args.rounds} rounds; {h.machine_note()}")
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = h.write_ini(Path(tmp) / "run")
        write_one_item_dataset(work / "one")
        (work / "test_one.py").write_text(ONE_TEST, encoding="utf-8")
        env = child_env(None if args.cold_bytecode else Path(tmp) / "pycache")
        pytest = [h.PYTHON, "-m", "pytest", *h.QUIET_PLUGINS, "-q"]
        sides = {
            "embedded": pytest + ["--eval-dataset=one"],
            "one-test": pytest + ["-p", "no:groundeval", "test_one.py"],
        }
        wall: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        rss: dict[str, list[float]] = {name: [] for name in sides}
        for round_ in range(args.rounds + 1):
            for name, cmd in sides.items():
                measured = h.check(h.run_measured_tree(cmd, cwd=work, env=env), name)
                expect(name, measured.output)
                if round_ == 0:
                    continue  # the warm-up round: caches written, not measured
                wall[name].append(measured.wall_s)
                cpu[name].append(measured.cpu_s)
                rss[name].append(measured.max_rss_mib)
            if round_:
                print(
                    f"  round {round_}: "
                    + ", ".join(f"{n} {wall[n][-1]:.2f} s wall, {cpu[n][-1]:.2f} s CPU" for n in sides)
                )
    rows = [[name, h.spread(wall[name]), h.spread(cpu[name]), h.spread(rss[name], "{:.0f}")] for name in sides]
    print(h.table(["side", "wall s, median (min–max)", "CPU s, median (min–max)", "peak RSS MiB"], rows))
    wall_ratio = h.median(wall["embedded"]) / h.median(wall["one-test"])
    cpu_ratio = h.median(cpu["embedded"]) / h.median(cpu["one-test"])
    print(
        f"embedded / one-test wall: {wall_ratio:.2f}x "
        f"(goal <= {WALL_GOAL:.1f}x: {h.verdict(wall_ratio, WALL_GOAL, True)})"
    )
    print(f"embedded / one-test CPU: {cpu_ratio:.2f}x")
    print(f"embedded run, median wall: {h.median(wall['embedded']):.2f} s (the issue's goal: 0.9 s on its machine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
