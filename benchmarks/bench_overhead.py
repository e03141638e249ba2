"""Benchmark 1 (issue 8): plugin overhead against a target that answers instantly.

Run: ``python benchmarks/bench_overhead.py [--items 2000] [--rounds 3]`` (about a minute).

Three ways to make the same requests against one ``instant_target.py`` process
(ingest the corpus once, then one ``POST /v1/generate`` per qa item of a
synthetic dataset), each a fresh subprocess, interleaved round by round:

- *plugin*: ``pytest --eval-dataset=D --eval-url=URL --eval-api-key=k -q``;
- *hand-written*: what a user would write instead: a test module that loads the
  manifest JSON, parametrises one test over its items, ingests the corpus in a
  session fixture with an ``httpx.Client``, posts ``/v1/generate`` and asserts a
  little (run with the plugin disabled, ``-p no:groundeval``);
- *floor*: a plain ``httpx.Client`` loop over the same items outside pytest.

Reported: wall time and CPU time (user + system) of each child, and the ratios
plugin / hand-written (goal ≤ 1.1×) and plugin / floor. The CPU ratio is the
steadier one on a shared machine: it counts only work the client process did.
Both pytest sides get ``-p no:cacheprovider -p no:hypothesispytest``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import _harness as h
from synthetic import write_dataset

GOAL = 1.1

HAND_WRITTEN_TEST = '''\
"""What a user would write without the plugin: parametrise over the manifest, post, assert."""
import json
import os
from pathlib import Path

import httpx
import pytest

ROOT = Path(os.environ["BENCH_DATASET"])
MANIFEST = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))
ITEMS = [item for item in MANIFEST["items"] if item["kind"] == "qa"]


@pytest.fixture(scope="session")
def client():
    headers = {"Authorization": "Bearer " + os.environ["BENCH_KEY"]}
    with httpx.Client(base_url=os.environ["BENCH_URL"], headers=headers, timeout=60) as client:
        for entry in MANIFEST["corpus"]:
            content = (ROOT / "corpus" / entry["file"]).read_text(encoding="utf-8")
            if entry.get("format", "json") == "json":
                content = json.loads(content)
            document = {
                "name": entry["name"], "label": entry["label"], "format": entry.get("format", "json"),
                "contentHash": MANIFEST["corpusHashes"][entry["file"]], "content": content,
            }
            client.post("/v1/documents", json=document).raise_for_status()
        yield client


@pytest.mark.parametrize("item", ITEMS, ids=[item["id"] for item in ITEMS])
def test_qa(client, item):
    response = client.post("/v1/generate", json={"question": item["question"], "find": item["find"]})
    assert response.status_code == 200
    body = response.json()
    assert body["evidence"], "no evidence retrieved"
    assert item["expectedEvidence"][0] in body["answer"]
    assert all(claim["verdict"] == "supported" for claim in body["claims"])
'''

FLOOR_LOOP = '''\
"""The floor: the same requests from a plain loop, no pytest."""
import json
import sys
from pathlib import Path

import httpx

root, url, key = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
with httpx.Client(base_url=url, headers={"Authorization": "Bearer " + key}, timeout=60) as client:
    for entry in manifest["corpus"]:
        content = (root / "corpus" / entry["file"]).read_text(encoding="utf-8")
        if entry.get("format", "json") == "json":
            content = json.loads(content)
        document = {
            "name": entry["name"], "label": entry["label"], "format": entry.get("format", "json"),
            "contentHash": manifest["corpusHashes"][entry["file"]], "content": content,
        }
        client.post("/v1/documents", json=document).raise_for_status()
    done = 0
    for item in manifest["items"]:
        response = client.post("/v1/generate", json={"question": item["question"], "find": item["find"]})
        response.raise_for_status()
        assert response.json()["evidence"]
        done += 1
print(f"{done} requests")
'''


def commands(work: Path, dataset: Path, url: str) -> dict[str, tuple[list[str], Path, dict]]:
    """The three sides: name -> (argv, cwd, env)."""
    plugin_dir = h.write_ini(work / "plugin")
    hand_dir = h.write_ini(work / "hand")
    (hand_dir / "test_hand.py").write_text(HAND_WRITTEN_TEST, encoding="utf-8")
    floor = work / "floor.py"
    floor.write_text(FLOOR_LOOP, encoding="utf-8")
    pytest = [h.PYTHON, "-m", "pytest", *h.QUIET_PLUGINS, "-q"]
    return {
        "plugin": (
            pytest + ["--eval-dataset=dataset", f"--eval-url={url}", "--eval-api-key=k"],
            plugin_dir,
            h.pytest_env(),
        ),
        "hand-written": (
            pytest + ["-p", "no:groundeval", "test_hand.py"],
            hand_dir,
            h.pytest_env(BENCH_DATASET=str(dataset), BENCH_URL=url, BENCH_KEY="k"),
        ),
        "floor": ([h.PYTHON, str(floor), str(dataset), url, "k"], work, h.pytest_env()),
    }


def expect_all_passed(name: str, output: str, items: int) -> None:
    wanted = [f"{items} requests"] if name == "floor" else [f"{items} passed"]
    if name == "plugin":
        wanted.append("gate: PASS")  # the items were aggregated and gated, not just run
    h.expect_output(name, output, wanted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000, help="qa items in the synthetic dataset")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (each runs all three sides)")
    args = parser.parse_args(argv)

    print(f"benchmark 1: plugin overhead, {args.items} qa items, {args.rounds} rounds; {h.machine_note()}")
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp, h.instant_target() as url:
        work = Path(tmp)
        # Inside the plugin side's rootdir, as a dataset in a repository is (node ids
        # outside the rootdir lose their manifest path, see README).
        dataset = write_dataset(work / "plugin" / "dataset", args.items).parent
        sides = commands(work, dataset, url)
        wall: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        for round_ in range(args.rounds):
            for name, (cmd, cwd, env) in sides.items():
                measured = h.check(h.run_measured(cmd, cwd=cwd, env=env), name)
                expect_all_passed(name, measured.output, args.items)
                wall[name].append(measured.wall_s)
                cpu[name].append(measured.cpu_s)
            print(
                f"  round {round_ + 1}: "
                + ", ".join(f"{name} {wall[name][-1]:.2f} s wall / {cpu[name][-1]:.2f} s CPU" for name in sides)
            )
    rows = [
        [name, h.spread(wall[name]), h.spread(cpu[name]), f"{h.median(wall[name]) / args.items * 1e3:.2f}"]
        for name in sides
    ]
    print(h.table(["side", "wall s, median (min–max)", "CPU s, median (min–max)", "wall ms/item"], rows))
    ratio_wall = h.median(wall["plugin"]) / h.median(wall["hand-written"])
    ratio_cpu = h.median(cpu["plugin"]) / h.median(cpu["hand-written"])
    floor_wall = h.median(wall["plugin"]) / h.median(wall["floor"])
    floor_cpu = h.median(cpu["plugin"]) / h.median(cpu["floor"])
    print(
        f"plugin / hand-written: {ratio_wall:.2f}x wall, {ratio_cpu:.2f}x CPU "
        f"(goal <= {GOAL}x: {h.verdict(ratio_wall, GOAL, at_most=True)} on wall time)"
    )
    print(f"plugin / floor (plain httpx loop): {floor_wall:.2f}x wall, {floor_cpu:.2f}x CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
