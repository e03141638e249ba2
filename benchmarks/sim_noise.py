"""Seeded noisy runs of a dataset, as report JSONs in a directory, for the compare simulation (issue 21).

    python benchmarks/sim_noise.py OUT --runs N [--noise 0.1] [--seed-start 0] [--dataset datasets/v1]
        [--mode full | resample] [--calibration K]

Writes ``OUT/run-<seed>.json``, one report per seed ``seed-start … seed-start + N - 1``, each a
valid report (``groundeval gate --report`` and ``groundeval compare`` read it) with the items'
drill-down (``extra``) emptied, as ``scripts/build_v1.py --trim-baseline`` does: no figure
depends on it, and it is most of a report's bytes.

Two modes:

- ``full``: each run is a real run of the dataset, pytest in this process against one reference
  server and one mock provider started once, the mock's noise set to ``NoiseSettings(P, seed)``
  before each run (docs/mock.md, "Noise"). Exact, and as slow as the real thing: one run of
  datasets/v1 took 45–51 s on the shared 2-core machine under load (about 45 s of it items).
- ``resample`` (default): ``K + 1`` real runs calibrate it once (noise off, then ``K`` runs with
  every generation noised, ``P = 1``, seeds 0 … K - 1); each of the N runs is then assembled from
  them without a target, in under a second each: item ``i`` of the run with seed ``s`` is noised when
  ``noise_for(P, s, "item:" + id)`` draws it (the mock's own draw, keyed by the item's id instead of
  its prompt) and then takes its outcome from calibration run ``pick mod K``; otherwise its
  noise-free outcome. Metrics and gate are recomputed through ``core.finalize.finalize_run`` with
  the floors and baseline the noise-free run recorded. Why this is faithful: in a real run a noised
  item's change is a fresh, independent draw (drop or number, which candidate), and each ``P = 1``
  calibration run gives every item exactly such a draw, so the K outcomes are a sample of what
  noise does to that item; the items noised in a run are chosen with probability P each, as the
  mock chooses them. What it does not reproduce: the very draws of a real run with that seed (the
  key differs), and the variety of one item's outcomes beyond its K samples (a few candidates per
  answer in v1, so K = 20 covers most).

The simulation itself (compare's false-alarm rate and power, the fixed-margin rule beside it) is
``benchmarks/sim_compare.py``: it assembles its runs in memory with ``assembled`` and ``refinalized``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import pytest  # noqa: E402

from pytest_groundeval.core.finalize import RunOutcomes, finalize_run  # noqa: E402
from pytest_groundeval.core.outcome import ItemOutcome  # noqa: E402
from pytest_groundeval.core.report import Report, read_report, write_report  # noqa: E402
from pytest_groundeval.mock import NoiseSettings, ThreadedMockProvider, noise_for  # noqa: E402
from pytest_groundeval.mock.noise import NO_NOISE  # noqa: E402
from pytest_groundeval.targets import SpawnConfig, SpawnedTarget, reference_command  # noqa: E402

PYTEST_ARGS = ("-q", "-n", "0", "-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:hypothesispytest")
"""Each real run: no xdist, no cache, none of the third-party plugins the suite leaves out."""


@contextmanager
def reference_target(work: Path) -> Iterator[tuple[ThreadedMockProvider, SpawnedTarget]]:
    """One mock and one reference server for every real run; yields ``(mock, target)``."""
    with ThreadedMockProvider(log_limit=0) as mock:
        config = SpawnConfig(command=reference_command(), llm_url=mock.base_url, embed_url=mock.base_url, base_dir=work)
        with SpawnedTarget(config) as target:
            yield mock, target


def real_run(
    mock: ThreadedMockProvider, target: SpawnedTarget, dataset: Path, noise: NoiseSettings, report: Path
) -> Report:
    """One pytest run of ``dataset`` against ``target`` with the mock's noise set to ``noise``; its report.

    Raises:
        SystemExit: pytest wrote no report (a usage error, the target down).
    """
    ini = report.parent / "pytest.ini"
    if not ini.is_file():
        # An ini of its own: the repository's (filterwarnings = error, addopts) must not apply to
        # these runs, or a run started from the repository fails on a warning about anyio.
        ini.write_text("[pytest]\n", encoding="utf-8")
    mock.noise = noise
    try:
        pytest.main(
            [
                *PYTEST_ARGS,
                "-c",
                str(ini),
                "--rootdir",
                str(report.parent),
                f"--eval-dataset={dataset}",
                f"--eval-url={target.base_url}",
                f"--eval-api-key={target.api_key}",
                f"--eval-report={report}",
                "--eval-no-step-summary",
            ]
        )
    finally:
        mock.noise = NO_NOISE
    if not report.is_file():
        raise SystemExit(f"sim_noise: the run with {noise} wrote no report {report}")
    return read_report(report)


def trimmed(report: Report) -> Report:
    """``report`` with every item's drill-down (``extra``) emptied; no figure depends on it."""
    return report.model_copy(update={"items": [item.model_copy(update={"extra": {}}) for item in report.items]})


def assembled(base: Report, calibration: list[Report], probability: float, seed: int) -> Report:
    """The run with ``seed`` assembled from the calibration runs (module docstring, ``resample``).

    Args:
        base: The noise-free run.
        calibration: The ``P = 1`` runs, each with every item of ``base``.
        probability: The noise P of the simulated run.
        seed: Its seed.

    Returns:
        A report whose items are ``base``'s or a calibration run's, its metrics and gate recomputed.
    """
    noisy = [{item.id: item for item in run.items} for run in calibration]
    items = []
    for item in base.items:
        draw = noise_for(probability, seed, "item:" + item.id)
        items.append(item if draw is None else noisy[draw.pick % len(noisy)][item.id])
    return refinalized(base, items)


def refinalized(base: Report, items: list[ItemOutcome]) -> Report:
    """``base`` with ``items`` instead of its own, its metrics and gate recomputed with the floors and baseline it recorded."""
    outcomes = RunOutcomes.of(items)
    finalized = finalize_run(
        outcomes,
        dataset_version=base.dataset_version,
        models=base.models,
        floors=base.floors,
        baseline=base.baseline,
        baseline_ids=outcomes.baseline_ids,
    )
    return base.model_copy(update={"items": items, "metrics": finalized.metrics, "gate": finalized.gate})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="Directory the reports are written to (created)")
    parser.add_argument("--runs", type=int, required=True, help="Number of runs (seeds)")
    parser.add_argument("--noise", type=float, default=0.1, help="Noise P of every run (default 0.1)")
    parser.add_argument("--seed-start", type=int, default=0, help="Seed of the first run (default 0)")
    parser.add_argument("--dataset", type=Path, default=REPO / "datasets" / "v1", help="Dataset directory")
    parser.add_argument("--mode", choices=("full", "resample"), default="resample")
    parser.add_argument("--calibration", type=int, default=20, metavar="K", help="resample: P = 1 runs (default 20)")
    args = parser.parse_args(argv)
    NoiseSettings(args.noise, args.seed_start)  # refuses a P outside [0, 1]
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = range(args.seed_start, args.seed_start + args.runs)
    dataset = args.dataset.resolve()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sim-noise-") as tmp, reference_target(Path(tmp)) as (mock, target):
        work = Path(tmp)

        def run(name: str, noise: NoiseSettings) -> Report:
            t0 = time.perf_counter()
            report = trimmed(real_run(mock, target, dataset, noise, work / f"{name}.json"))
            print(f"sim_noise: real run {name} ({noise}): {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            return report

        def write(seed: int, report: Report) -> None:
            write_report(args.out / f"run-{seed}.json", report)

        if args.mode == "full":
            for seed in seeds:
                write(seed, run(f"seed-{seed}", NoiseSettings(args.noise, seed)))
        else:
            base = run("base", NO_NOISE)
            calibration = [run(f"calibration-{k}", NoiseSettings(1.0, k)) for k in range(args.calibration)]
            for seed in seeds:
                write(seed, assembled(base, calibration, args.noise, seed))
    print(f"sim_noise: {args.runs} runs in {args.out} ({args.mode}), {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
