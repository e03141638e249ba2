"""``groundeval hash-corpus`` (docs/dataset.md): pasteable corpus hashes, and its refusals."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import xxhash

from pytest_groundeval import cli
from pytest_groundeval.core.dataset import DatasetError, load_dataset
from tests._support.datasets import write_dataset


def pasted(output: str) -> dict[str, str]:
    """What the output becomes when pasted between the braces of corpusHashes."""
    return json.loads("{" + output + "}")


def test_hash_corpus_prints_sorted_pasteable_lines(dataset_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["hash-corpus", "--dataset", str(dataset_dir)]) == 0
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ['"log.txt"', '"notes.json"']
    assert lines[0].endswith(",") and not lines[-1].endswith(",")
    assert pasted(out) == {
        name: xxhash.xxh3_64_hexdigest((dataset_dir / "corpus" / name).read_bytes())
        for name in ("log.txt", "notes.json")
    }


def test_hash_corpus_fixes_wrong_hashes(dataset_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (dataset_dir / "corpus" / "log.txt").write_bytes("ändrad\n".encode())
    with pytest.raises(DatasetError, match="hash mismatch"):
        load_dataset(dataset_dir)
    assert cli.main(["hash-corpus", "--dataset", str(dataset_dir / "manifest.json")]) == 0
    captured = capsys.readouterr()
    assert "changed or new since manifest.json: log.txt" in captured.err
    manifest = json.loads((dataset_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["corpusHashes"] = pasted(captured.out)
    (dataset_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert load_dataset(dataset_dir).documents["eval/log.txt"].canonical == "ändrad\n"


def test_hash_corpus_falls_back_to_every_corpus_file(dataset_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (dataset_dir / "manifest.json").write_text("{ not json", encoding="utf-8")
    (dataset_dir / "corpus" / "sub").mkdir()
    (dataset_dir / "corpus" / "sub" / "extra.txt").write_bytes(b"extra")
    assert cli.main(["hash-corpus", "--dataset", str(dataset_dir)]) == 0
    hashes = pasted(capsys.readouterr().out)
    assert list(hashes) == ["log.txt", "notes.json", "sub/extra.txt"]
    assert hashes["sub/extra.txt"] == xxhash.xxh3_64_hexdigest(b"extra")


def test_hash_corpus_of_a_dataset_with_no_manifest_yet_says_so(dataset_dir: Path, capsys) -> None:
    # A new-user trial: "changed or new since manifest.json" read wrong for a manifest not written yet.
    (dataset_dir / "manifest.json").unlink()
    assert cli.main(["hash-corpus", "--dataset", str(dataset_dir)]) == 0
    captured = capsys.readouterr()
    assert list(pasted(captured.out)) == ["log.txt", "notes.json"]
    assert captured.err == f"no manifest.json in {dataset_dir} yet: paste these as its corpusHashes\n"


def test_hash_corpus_unreadable_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["hash-corpus", "--dataset", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "groundeval hash-corpus:" in err and "not a dataset directory" in err
    root = write_dataset(tmp_path / "ds")
    (root / "corpus" / "log.txt").unlink()
    assert cli.main(["hash-corpus", "--dataset", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "log.txt" in err and "No such file" in err


def test_hash_corpus_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["hash-corpus"]) == 2
    assert "--dataset" in capsys.readouterr().err


def test_groundeval_script_runs_hash_corpus(dataset_dir: Path) -> None:
    script = shutil.which("groundeval", path=str(Path(sys.executable).parent)) or shutil.which("groundeval")
    assert script is not None, "the groundeval console script is not installed"
    result = subprocess.run(
        [script, "hash-corpus", "--dataset", str(dataset_dir)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert (
        pasted(result.stdout) == json.loads((dataset_dir / "manifest.json").read_text(encoding="utf-8"))["corpusHashes"]
    )


def test_hash_corpus_refuses_paths_outside_corpus(dataset_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = json.loads((dataset_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["corpus"][0]["file"] = "../manifest.json"
    (dataset_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert cli.main(["hash-corpus", "--dataset", str(dataset_dir)]) == 2
    assert "corpus file '../manifest.json' is not a path inside corpus/" in capsys.readouterr().err


def test_hash_corpus_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["hash-corpus", "--help"]) == 0
    assert "corpusHashes" in capsys.readouterr().out
