"""``groundeval init``: a new project that passes its gate at once, and a CI workflow that runs (docs/byo.md, "Init")."""

from __future__ import annotations

import glob
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml  # the test extra's PyYAML (pyproject.toml): the workflow must be YAML GitHub can read

# In-process pytest runs load the plugin and the history package; imported once here first, as
# tests/plugin/conftest.py explains, so SQLAlchemy's modules are never imported twice.
import pytest_groundeval.history.migrations  # noqa: F401
from pytest_groundeval.byo.init import PROJECT_FILES, SHARDS
from pytest_groundeval.cli import main as groundeval
from pytest_groundeval.core.dataset import load_dataset
from pytest_groundeval.core.sharding import shard_of
from tests._support.pytest_args import NO_THIRD_PARTY_PLUGINS

WORKFLOW = ".github/workflows/groundeval.yml"


def init(where: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert groundeval(["init", str(where)]) == 0
    return capsys.readouterr().out


def test_pytest_passes_at_once_in_the_new_project(pytester, capsys):
    printed = init(pytester.path, capsys)
    assert [line.removeprefix("wrote ") for line in printed.splitlines()[:-1]] == [
        str(pytester.path / name) for name in PROJECT_FILES
    ]
    dataset = load_dataset(pytester.path / "groundeval")  # manifest, floors, corpus and its hash
    assert dataset.manifest.floors == {"citationMetadataAccuracy": 0.9} and len(dataset.items) == 5
    result = pytester.runpytest(
        *NO_THIRD_PARTY_PLUGINS, "-p", "no:cacheprovider"
    )  # pytest.ini names the dataset, conftest.py the target
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(
        [
            "*lineage generate=handbook-keywords-1 embed=none*",
            "citationMetadataAccuracy*1.0000 [[]*] >= 0.9000*PASS*",
            # The example target reports no usage: its tokens are unknown, not a measured zero.
            "target tokens: unknown (5 generate calls, none reported usage)",
            "gate: PASS",
        ]
    )
    assert result.ret == pytest.ExitCode.OK


QUOTED = """"answer": f"{record['title']}: {record['text']} [S1]","""
"""The example target's answer line, which the broken variants below replace."""


@pytest.mark.parametrize(
    ("broken", "outcomes", "lines"),
    [
        # Always the first passage: a wrong section, quoted under its own title.
        (('key=lambda p: len(asked & words(p[2]["text"]))', "key=lambda p: 0"), {"passed": 1, "failed": 4},
         ["*metadataMismatch: title 'Vacation' (cited [[]S1]) but source [[]S1] has title 'Equipment'*",
          "citationMetadataAccuracy*0.2000 [[]*] >= 0.9000*FAIL*"]),
        # A citation with no mention proves nothing: "I do not know. [S1]" must not pass as agreeing.
        ((QUOTED, '"answer": "I do not know. [S1]",'), {"failed": 5},
         ["*expectedSource: [[]S1] (title 'Vacation'): nothing confirms its title: no paragraph citing [[]S1]*",
          "citationMetadataAccuracy*0.0000 [[]*] >= 0.9000*FAIL*"]),
        # Uncited answers are counted, not left out of the gate: one cited answer of five must not pass it.
        ((QUOTED, """"answer": f"{record['title']}: {record['text']}" + (" [S1]" if "vacation" in question else ""),"""),
         {"passed": 1, "failed": 4},
         ["citationMetadataAccuracy*1.0000 [[]*] >= 0.9000*PASS*",  # the one cited paragraph is right
          "citationUncitedAnswers*4 <= 0*FAIL  4 > 0 (armed by the citationMetadataAccuracy bound)"]),
    ],
    ids=["wrong-passage", "citations-that-show-nothing", "answers-that-cite-nothing"],
)  # fmt: skip
def test_the_example_gate_fails_a_broken_target(pytester, capsys, broken, outcomes, lines):
    init(pytester.path, capsys)
    conftest = pytester.path / "conftest.py"
    source = conftest.read_text(encoding="utf-8")
    old, new = broken
    assert old in source
    conftest.write_text(source.replace(old, new), encoding="utf-8")
    result = pytester.runpytest(*NO_THIRD_PARTY_PLUGINS, "-p", "no:cacheprovider")
    result.assert_outcomes(**outcomes)
    result.stdout.fnmatch_lines([*lines, "gate: FAIL"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def _steps(job: dict) -> dict[str, dict]:
    return {step.get("name") or step.get("uses") or step["run"]: step for step in job["steps"]}


def test_the_workflow_parses_and_its_shard_and_merge_commands_gate_the_run(pytester, capsys):
    init(pytester.path, capsys)
    workflow = yaml.safe_load((pytester.path / WORKFLOW).read_text(encoding="utf-8"))
    assert set(workflow[True]) == {"push", "pull_request"}  # YAML 1.1 reads the key `on` as true
    assert workflow["permissions"] == {"contents": "read"}
    shards, merge = workflow["jobs"]["shards"], workflow["jobs"]["merge"]

    # A matrix of shards, each running its part and uploading its report.
    assert shards["strategy"]["matrix"]["shard"] == list(range(1, SHARDS + 1)) and "permissions" not in shards
    shard_steps = _steps(shards)
    run = shard_steps["Run the shard"]["run"]
    assert f"--eval-shard=${{{{ matrix.shard }}}}/{SHARDS}" in run
    upload = shard_steps["Upload the shard's report"]
    assert (
        upload["uses"].startswith("actions/upload-artifact@")
        and "report-${{ matrix.shard }}.json" in upload["with"]["path"]
    )

    # The merge job: gate, job summary, one pull-request comment; only it may write, and only to pull requests.
    assert merge["needs"] == "shards" and merge["permissions"] == {"contents": "read", "pull-requests": "write"}
    merge_steps = _steps(merge)
    merge_run = merge_steps["Merge the shards and gate"]["run"]
    assert merge_run.startswith("groundeval merge shards/report-*.json")
    assert "$GITHUB_STEP_SUMMARY" in merge_steps["Write the job summary"]["run"]
    comment = merge_steps["Comment on the pull request"]
    assert "gh pr comment" in comment["run"] and "--method PATCH" in comment["run"]  # update the one comment, or add it
    assert comment["env"]["GH_TOKEN"] == "${{ github.token }}"
    text = (pytester.path / WORKFLOW).read_text(encoding="utf-8")
    assert "secrets." not in text and "GH_TOKEN" not in comment["run"]  # the token is only ever in the environment

    # Run what the jobs run: each shard's pytest (in process), then the merge, as the artifacts land.
    (pytester.path / "shards").mkdir()
    for shard in range(1, SHARDS + 1):
        args = shlex.split(run.replace("${{ matrix.shard }}", str(shard)))
        assert args[0] == "pytest"
        result = pytester.runpytest(*NO_THIRD_PARTY_PLUGINS, "-p", "no:cacheprovider", *args[1:])
        ids = [item.id for item in load_dataset(pytester.path / "groundeval").items]
        result.assert_outcomes(passed=sum(1 for i in ids if shard_of(i, SHARDS) == shard))
        shutil.move(pytester.path / f"report-{shard}.json", pytester.path / "shards")
    merge_args = []
    for arg in shlex.split(merge_run)[1:]:
        merge_args.extend(sorted(glob.glob(arg, root_dir=pytester.path)) if "*" in arg else [arg])
    assert merge_args[:3] == ["merge", "shards/report-1.json", "shards/report-2.json"]
    assert groundeval(merge_args) == 0
    merged = capsys.readouterr().out
    assert re.search(r"citationMetadataAccuracy +1\.0000 \[[0-9.]+, 1\.0000\] >= 0\.9000 +PASS", merged)
    assert "gate: PASS" in merged
    assert "| citationMetadataAccuracy |" in (pytester.path / "groundeval.md").read_text(encoding="utf-8")


def test_existing_files_are_never_overwritten(tmp_path, capsys):
    (tmp_path / "conftest.py").write_text("# mine\n")
    assert groundeval(["init", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"groundeval init: {tmp_path / 'conftest.py'}: exists;") and "nothing written" in err
    assert [p.name for p in tmp_path.iterdir()] == ["conftest.py"]
    assert (tmp_path / "conftest.py").read_text() == "# mine\n"


def test_a_pytest_configuration_in_the_directory_is_not_shadowed(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n')
    assert groundeval(["init", str(tmp_path)]) == 2
    assert f"{tmp_path / 'pyproject.toml'}: holds a pytest configuration" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["pyproject.toml"]
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no pytest section: nothing to shadow
    assert groundeval(["init", str(tmp_path)]) == 0


def test_init_without_a_directory_writes_here(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert groundeval(["init"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("next: pytest")
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == sorted(PROJECT_FILES)
