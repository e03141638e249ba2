"""``groundeval merge`` (docs/ci.md) on the real v1 report's shards: the merged report, and what it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_groundeval.cli import main as groundeval
from tests._support.saved_reports import regate


def _write(tmp_path, shards):
    paths = []
    for shard in shards:
        path = tmp_path / f"shard-{shard['shard']['index']}.json"
        path.write_text(json.dumps(shard), encoding="utf-8")
        paths.append(str(path))
    return paths


def test_groundeval_merge_writes_a_report_that_groundeval_gate_passes(
    v1_report, make_shards, v1_baseline_path, tmp_path, capsys
):
    paths = _write(tmp_path, make_shards(v1_report, 3))
    out, html, md = tmp_path / "merged.json", tmp_path / "r.html", tmp_path / "r.md"
    status = groundeval(
        [
            "merge",
            *paths,
            "-o",
            str(out),
            "--baseline",
            str(v1_baseline_path),
            "--html",
            str(html),
            "--markdown",
            str(md),
        ]
    )
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert printed.rstrip().endswith("gate: PASS")
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert "gate: ✅ PASS" in md.read_text(encoding="utf-8")
    assert groundeval(["gate", "--report", str(out), "--baseline", str(v1_baseline_path)]) == 0


def test_groundeval_merge_with_unreadable_trends_writes_nothing(v1_report, make_shards, tmp_path, capsys):
    # Before: the merged report was written, then the bad trends file failed the HTML page (exit 2).
    paths = _write(tmp_path, make_shards(v1_report, 3))
    trends = tmp_path / "runs.json"
    trends.write_text("[{not json", encoding="utf-8")
    out, html = tmp_path / "merged.json", tmp_path / "r.html"
    assert groundeval(["merge", *paths, "-o", str(out), "--html", str(html), "--trends", str(trends)]) == 2
    assert "runs.json" in capsys.readouterr().err
    assert not out.exists() and not html.exists()


def test_groundeval_merge_with_a_missing_shard_exits_1_and_gate_agrees(v1_report, make_shards, tmp_path, capsys):
    paths = _write(tmp_path, make_shards(v1_report, 3)[:2])
    out = tmp_path / "merged.json"
    assert groundeval(["merge", *paths, "-o", str(out)]) == 1
    assert "shard(s) 3/3 not given" in capsys.readouterr().out
    assert groundeval(["gate", "--report", str(out)]) == 1
    assert "dataset items missing from the merged shards" in capsys.readouterr().out


def test_groundeval_merge_refusal_exits_2_and_writes_nothing(v1_report, make_shards, tmp_path, capsys):
    shards = make_shards(v1_report, 2)
    shards[1]["datasetVersion"] = "v9"
    regate(shards[1])
    paths = _write(tmp_path, shards)
    out = tmp_path / "merged.json"
    assert groundeval(["merge", *paths, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("groundeval merge: cannot merge:")
        and "shard-1.json has dataset version 'v1' but" in err
        and "shard-2.json has 'v9'" in err
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (["-o", "{s1}"], "-o names the input report"),
        (["-o", "{out}", "--html", "{s1}"], "--html names the input report"),
        (["-o", "{out}", "--markdown", "./{s2name}"], "--markdown names the input report"),
        (["-o", "{out}", "--html", "{out}"], "-o and --html name the same file"),
    ],
)
def test_groundeval_merge_never_overwrites_an_input_or_another_output(
    v1_report, make_shards, tmp_path, monkeypatch, capsys, outputs, message
):
    monkeypatch.chdir(tmp_path)
    paths = _write(tmp_path, make_shards(v1_report, 2))
    before = {path: Path(path).read_bytes() for path in paths}
    out = tmp_path / "merged.json"
    argv = [arg.format(s1=paths[0], out=out, s2name=Path(paths[1]).name) for arg in outputs]
    assert groundeval(["merge", *paths, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("groundeval merge: ") and message in err
    assert {path: Path(path).read_bytes() for path in paths} == before and not out.exists()


def test_groundeval_merge_refuses_a_baseline_of_another_dataset_version(
    v1_report, make_shards, v1_baseline_path, tmp_path, capsys
):
    paths = _write(tmp_path, make_shards(v1_report, 2))
    other = tmp_path / "baseline-v0.json"
    other.write_text(json.dumps({**json.loads(v1_baseline_path.read_text()), "datasetVersion": "v0"}))
    out = tmp_path / "merged.json"
    assert groundeval(["merge", *paths, "-o", str(out), "--baseline", str(other)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"groundeval merge: baseline {other} is a report of dataset 'v0', but this run is dataset 'v1'"
    )
    assert not out.exists()
    assert groundeval(["gate", "--report", paths[0], "--baseline", str(other)]) == 2  # as gate does
    assert "is a report of dataset 'v0'" in capsys.readouterr().err
