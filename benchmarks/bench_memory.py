"""Benchmark: memory per item of a plugin session, plain and with every output on (issue 24).

Run: ``python benchmarks/bench_memory.py [--small 2000] [--large 10000] [--rounds 3] [--before REV]``
(about 3 minutes by default; twice that with ``--before``).

Each run is a real plugin session in a fresh subprocess: ``pytest -p no:xdist
--eval-dataset=D --eval-url=URL --eval-api-key=k`` over ``synthetic.py``'s qa
items against ``instant_target.py`` (every item passes; the run must print
``N passed`` and ``gate: PASS``). Two modes:

- *plain*: no output files;
- *all outputs*: ``--eval-report``, ``--eval-history`` (a SQLite history that
  exists already), ``--junitxml``, ``--eval-markdown`` and ``--eval-html``.

``--modes`` also takes, to tell pytest's share from the plugin's: *all but JUnit* (every
output but ``--junitxml``), *JUnit only* (plain with ``--junitxml``), and two runs with no
plugin (``-p no:groundeval``) of a trivial test parametrised over the same number of items:
*trivial*, and *trivial + JUnit*, which records seven JUnit properties per test (as many as a
qa item's, ``record_property``, two of them strings that differ per item) with
``--junitxml``. The plugin-free modes run once per round whatever ``--before`` says.

Each mode runs at two sizes; the figure is the slope, the peak RSS difference
(``ru_maxrss`` from ``os.wait4``, the child alone) divided by the item
difference, in KiB per item: what an extra item costs, without the fixed cost
of imports and start-up. Rounds interleave the sizes and modes; the slope is
the difference of the medians.

``--before REV`` also measures that commit's ``pytest_groundeval`` (exported
with ``git archive`` and put first on the children's ``PYTHONPATH``),
interleaved with the working tree (or ``BENCH_REV``/``BENCH_SOURCE``), so
before → after comes from one invocation.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import _harness as h
from synthetic import write_dataset

GOALS_KIB = {"plain": 8.0, "all outputs": 12.0}
"""Issue 24's goals: KiB of peak RSS per extra item."""

PLUGIN_FREE = ("trivial", "trivial + JUnit")
"""Modes that run a trivial parametrised test with the plugin disabled: pytest's own share."""

TRIVIAL_TEST = """\
import pytest

N = {items}


@pytest.mark.parametrize("i", range(N))
def test_item(i, record_property):
    for name, value in (("outcome", "pass"), ("latencyMs", f"{{i % 997}}.5"), ("evidenceFound", 1),
                        ("evidenceExpected", 1), ("claimsReturned", 1), ("traceId", f"trace-{{i:08d}}"), ("tokens", 42)):
        record_property(name, value)
"""


def command(url: str, mode: str, out: Path) -> list[str]:
    """The pytest command line of one run in ``mode``; output files go under ``out``."""
    pytest_cmd = [h.PYTHON, "-m", "pytest", *h.QUIET_PLUGINS, "-p", "no:xdist", "-q"]
    if mode in PLUGIN_FREE:
        cmd = [*pytest_cmd, "-p", "no:groundeval", "test_trivial.py"]
        return cmd + ([f"--junitxml={out / 'junit.xml'}"] if mode == "trivial + JUnit" else [])
    cmd = [*pytest_cmd, "--eval-dataset=dataset", f"--eval-url={url}", "--eval-api-key=k"]
    if mode in ("all outputs", "all but JUnit"):
        cmd += [
            f"--eval-report={out / 'report.json'}",
            f"--eval-history=sqlite:///{out / 'history.db'}",
            f"--eval-markdown={out / 'gate.md'}",
            f"--eval-html={out / 'report.html'}",
        ]
    if mode in ("all outputs", "JUnit only"):
        cmd.append(f"--junitxml={out / 'junit.xml'}")
    return cmd


def one_run(work: Path, url: str, mode: str, items: int, source: str | None) -> float:
    """Peak RSS in MiB of one session of ``items`` items in ``mode``."""
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    if mode in ("all outputs", "all but JUnit"):
        # A history that exists already, as for every run but a project's first.
        from pytest_groundeval.history import HistoryWriter

        HistoryWriter.open(f"sqlite:///{out / 'history.db'}").close()
    env = h.pytest_env()
    if source:  # the exported revision goes first, before any pinned source
        env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
    measured = h.check(h.run_measured(command(url, mode, out), cwd=work / f"n{items}", env=env), f"{mode} {items}")
    h.expect_output(
        f"{mode} {items}", measured.output, [f"{items} passed"] + ([] if mode in PLUGIN_FREE else ["gate: PASS"])
    )
    written = {
        "all outputs": ("report.json", "junit.xml", "gate.md", "report.html"),
        "all but JUnit": ("report.json", "gate.md", "report.html"),
        "JUnit only": ("junit.xml",),
        "trivial + JUnit": ("junit.xml",),
    }
    if mode in written:
        missing = [n for n in written[mode] if not (out / n).is_file()]
        if missing:
            raise RuntimeError(f"{mode} {items}: no {', '.join(missing)} written")
    return measured.max_rss_mib


RETAINER_PLUGIN = """
import tracemalloc, pytest

class Retainers:
    def __init__(self, top, items):
        self.top, self.items, self.start = top, items, None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session, config, items):
        pass

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap*>")]
        )
        stats = snapshot.statistics("traceback")
        total = sum(s.size for s in stats)
        print(f"\\nRETAINED {total / 1024 / self.items:.2f} KiB per item over {self.items} items (traced, at session end)")
        for stat in stats[: self.top]:
            frames = " <- ".join(f"{f.filename.split('site-packages/')[-1].split('pytest_groundeval/')[-1]}:{f.lineno}" for f in list(reversed(stat.traceback))[:5])
            print(f"RETAINER {stat.size / 1024 / self.items:7.3f} KiB/item {stat.count / self.items:6.2f} blocks/item  {frames}")
        yield
"""


def retainers(items: int, top: int, frames: int, mode: str) -> None:
    """Run one in-process session of ``items`` items under ``tracemalloc`` and print the top retainers.

    A fresh subprocess runs ``pytest.main`` in-process with a plugin that, first thing at
    ``pytest_sessionfinish`` (before the gate is computed and the outputs written), takes a
    snapshot of every live allocation and prints the allocation sites (``frames`` deep)
    holding the most memory, per item, in ``mode`` (the first of ``--modes``).
    """
    with tempfile.TemporaryDirectory(prefix="bench-memory-retainers-") as tmp, h.instant_target() as url:
        work = h.write_ini(Path(tmp) / f"n{items}")
        write_dataset(work / "dataset", items)
        out = Path(tmp) / "out"
        out.mkdir()
        from pytest_groundeval.history import HistoryWriter

        HistoryWriter.open(f"sqlite:///{out / 'history.db'}").close()
        args = command(url, mode, out)[3:]
        code = (
            f"import tracemalloc, sys; tracemalloc.start({frames})\n"
            + RETAINER_PLUGIN
            + f"\nimport pytest\nsys.exit(pytest.main({args!r}, plugins=[Retainers({top}, {items})]))\n"
        )
        measured = h.run_measured([h.PYTHON, "-c", code], cwd=work, env=h.pytest_env())
        h.expect_output("retainers", measured.output, [f"{items} passed", "gate: PASS"])
        print("\n".join(line for line in measured.output.splitlines() if line.startswith(("RETAINE",))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2000, help="items of the smaller run")
    parser.add_argument("--large", type=int, default=10000, help="items of the larger run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", metavar="REV", help="also measure this commit's package, interleaved")
    parser.add_argument(
        "--modes",
        default="plain,all outputs",
        help="comma-separated: plain, all outputs, all but JUnit, JUnit only, trivial, trivial + JUnit",
    )
    parser.add_argument("--retainers", type=int, metavar="ITEMS", help="instead: where memory is retained, over ITEMS")
    parser.add_argument("--top", type=int, default=25, help="with --retainers: allocation sites shown")
    parser.add_argument("--frames", type=int, default=8, help="with --retainers: traceback depth of a site")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",")]
    if args.retainers:
        retainers(args.retainers, args.top, args.frames, modes[0])
        return 0
    modes = [m.strip() for m in args.modes.split(",")]
    sources: dict[str, str | None] = {"this tree": None}
    if args.before:
        sources = {f"before ({args.before})": h.export_rev(args.before), "after (this tree)": None}
    print(f"memory benchmark: {args.small} and {args.large} items, {args.rounds} rounds; {h.machine_note()}")
    sizes = (args.small, args.large)
    rss: dict[tuple[str, str, int], list[float]] = {(s, m, n): [] for s in sources for m in modes for n in sizes}
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp, h.instant_target() as url:
        work = Path(tmp)
        for n in sizes:
            write_dataset(h.write_ini(work / f"n{n}") / "dataset", n)
            (work / f"n{n}" / "test_trivial.py").write_text(TRIVIAL_TEST.format(items=n), encoding="utf-8")
        first = next(iter(sources))
        for round_ in range(args.rounds):
            for side, source in sources.items():
                for mode in modes:
                    if mode in PLUGIN_FREE and side != first:
                        continue  # no plugin: the same run for every side
                    for n in sizes:
                        rss[side, mode, n].append(one_run(work, url, mode, n, source))
            print(
                f"  round {round_ + 1}: "
                + ", ".join(f"{s}/{m}/{n} {v[-1]:.0f} MiB" for (s, m, n), v in rss.items() if v),
                flush=True,
            )
    rows = []
    for side in sources:
        for mode in modes:
            if mode in PLUGIN_FREE and side != first:
                continue
            small, large = h.median(rss[side, mode, args.small]), h.median(rss[side, mode, args.large])
            slope = (large - small) * 1024 / (args.large - args.small)
            goal = GOALS_KIB.get(mode)
            rows.append(
                [
                    "no plugin" if mode in PLUGIN_FREE else side,
                    mode,
                    h.spread(rss[side, mode, args.small], "{:.0f}"),
                    h.spread(rss[side, mode, args.large], "{:.0f}"),
                    f"{slope:.1f}",
                    f"≤ {goal:.0f}: {h.verdict(slope, goal, at_most=True)}" if goal else "-",
                ]
            )
    headers = [
        "code",
        "outputs",
        f"peak RSS MiB at {args.small}, median (min–max)",
        f"at {args.large}",
        "KiB per item",
        "goal",
    ]
    print(h.table(headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
