"""The mock's seeded noise through the real path (docs/mock.md, "Noise"): plugin, HTTP target, reference server, mock.

A slice of datasets/v1 (qa questions, their planted drafts and adversarial items),
written as a dataset of its own, runs in process against one reference server and
one mock whose ``noise`` each test run sets, plus one run that starts its own mock
from ``--eval-mock-noise``.
Every figure is fixed by the seed: the bands below are wide, the equalities exact.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_groundeval.mock import NoiseSettings, ThreadedMockProvider
from pytest_groundeval.mock.noise import NO_NOISE

ROOT = Path(__file__).resolve().parents[2]
V1 = ROOT / "datasets" / "v1"
SLICE = ("halueval-000", "halueval-001", "adv-halueval-018")
"""The items of v1 whose ids hold one of these: 44 items, 20 qa questions, 15 planted drafts, 9 adversarial items
(none temporal)."""

VOLATILE = ("traceId", "latencyMs")
"""Item fields that differ between any two runs, noise or not."""


@pytest.fixture(scope="module")
def v1_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The slice as a dataset: datasets/v1's manifest with only SLICE's items (in order) and its whole corpus.

    The same items, corpus and version as ``--eval-dataset=datasets/v1 -k ...``, so the same
    outcomes (the noise is a function of the seed and each request, docs/mock.md), without each
    of the five runs loading and deselecting v1's other 647 items and reading its baseline of all
    691 (a third of a run's CPU). No ``baseline.json``: these runs do not gate (``--eval-no-gate``).
    """
    dataset = tmp_path_factory.mktemp("v1-slice")
    shutil.copytree(V1 / "corpus", dataset / "corpus")
    manifest = json.loads((V1 / "manifest.json").read_text(encoding="utf-8"))
    manifest["items"] = [item for item in manifest["items"] if any(part in item["id"] for part in SLICE)]
    (dataset / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return dataset


@pytest.fixture(scope="module")
def noisy_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ThreadedMockProvider, object]]:
    """A reference server against a mock whose noise a test sets before each run; yields ``(mock, spawned)``."""
    from pytest_groundeval.targets import SpawnConfig, SpawnedTarget, reference_command

    with ThreadedMockProvider() as mock:
        config = SpawnConfig(
            command=reference_command(),
            llm_url=mock.base_url,
            embed_url=mock.base_url,
            base_dir=tmp_path_factory.mktemp("noisy-target"),
        )
        with SpawnedTarget(config) as spawned:
            yield mock, spawned


def _items(report: Path) -> dict[str, dict]:
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["metrics"]["errors"] == 0
    return {item["id"]: {k: v for k, v in item.items() if k not in VOLATILE} for item in data["items"]}


def _metrics(report: Path) -> dict:
    return json.loads(report.read_text(encoding="utf-8"))["metrics"]


def test_noise_is_seeded_reaches_the_outcomes_and_comes_from_the_options(run, pytester, noisy_target, v1_slice, capsys):
    mock, spawned = noisy_target
    noised_requests: dict[str, list[str]] = {}

    def run_with(name: str, noise: NoiseSettings) -> Path:
        mock.noise = noise
        mock.clear_log()
        report = pytester.path / f"{name}.json"
        target = (f"--eval-url={spawned.base_url}", f"--eval-api-key={spawned.api_key}")
        run(f"--eval-dataset={v1_slice}", *target, f"--eval-report={report}", "--eval-no-gate")
        noised_requests[name] = [r.noise for r in mock.log if r.kind == "chat_stream" and r.noise is not None]
        return report

    try:
        none = run_with("none", NO_NOISE)
        zero = run_with("zero", NoiseSettings(0.0, 7))
        seed0 = run_with("seed0", NoiseSettings(0.5, 0))
        seed1 = run_with("seed1", NoiseSettings(0.5, 1))
    finally:
        mock.noise = NO_NOISE
    # The plugin starts its own mock (and reference server) with the options' noise: seed 0 by default.
    options = pytester.path / "options.json"
    run(
        f"--eval-dataset={v1_slice}",
        "--eval-mock-noise=0.5",
        f"--eval-report={options}",
        "--eval-no-gate",
        spawn=True,
    )

    plain = _items(none)
    assert len(plain) == 44
    generated = [i for i, item in plain.items() if item["kind"] in ("qa", "adversarial")]
    # (a) P = 0 is no noise at all, item by item, answers included.
    assert _items(zero) == plain and noised_requests["zero"] == []
    # (b) The same seed gives the same outcomes: another mock and reference server, started from the options.
    noisy = _items(seed0)
    assert _items(options) == noisy
    # (c) Another seed, other outcomes.
    other = _items(seed1)
    assert other != noisy

    def answered_otherwise(items: dict[str, dict]) -> set[str]:
        return {i for i in generated if items[i]["extra"]["answer"] != plain[i]["extra"]["answer"]}

    # (d) Each noised request changed one item's answer; their number is Binomial(items, P)-plausible
    # (44 generations, P = 0.5: mean 22, sd 3.3, a little less for the few answers with nothing to
    # change; the band is ±3.5 sd, the count itself fixed by the seed).
    changed = answered_otherwise(noisy)
    assert len(changed) == len(noised_requests["seed0"])
    assert 10 <= len(changed) <= 34
    assert len(answered_otherwise(other)) == len(noised_requests["seed1"]) and answered_otherwise(other) != changed

    # The effect reaches the outcomes, only through noised items, and only for the worse.
    differ = {i for i in plain if noisy[i] != plain[i]}
    assert differ == changed
    newly_failed = {i for i in plain if plain[i]["pass"] and not noisy[i]["pass"]}
    assert not {i for i in plain if noisy[i]["pass"] and not plain[i]["pass"]}
    assert len(newly_failed) >= 3
    for i in newly_failed:  # a dropped block: its true sentences now cite a block that does not state them
        assert "true, cited claim(s) not marked supported" in noisy[i]["detail"], noisy[i]["detail"]
    before, after = _metrics(none), _metrics(seed0)
    assert after["claimSupportRecall"] < before["claimSupportRecall"]
    assert after["retrievalRecall"] == before["retrievalRecall"]  # measured before generation
    assert any(n.startswith("drop ") for n in noised_requests["seed0"])
    assert any(n.startswith("number ") for n in noised_requests["seed0"])
    # Two draws of the same noisy configuration are not a regression; the noise against none is
    # (docs/statistics.md, "Paired comparison"): compare reads the two reports, paired on item ids.
    from pytest_groundeval.cli import main as groundeval

    floors = pytester.path / "floors.json"
    floors.write_text(json.dumps({"claimSupportRecall": 0.99}), encoding="utf-8")
    assert groundeval(["compare", str(seed0), str(seed1), "--floors", str(floors)]) == 0
    out = capsys.readouterr().out
    assert "not significant (p=" in out and "REGRESSION" not in out and out.rstrip().endswith("compare: OK")
    assert groundeval(["compare", str(none), str(seed0), "--floors", str(floors)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION claimSupportRecall" in out and "; significant (p=" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--eval-mock-noise=1.5"],
            "'1.5' is not a valid value for --eval-mock-noise: expected a probability in [0, 1]",
        ),
        (["--eval-mock-noise=some"], "'some' is not a valid value for --eval-mock-noise: expected a probability"),
        (
            ["--eval-mock-noise=0.1", "--eval-mock-seed=1.5"],
            "'1.5' is not a valid value for --eval-mock-seed: expected a whole number",
        ),
        (["--eval-mock-seed=3"], "--eval-mock-seed given, but no --eval-mock-noise: the seed would change nothing"),
        (
            ["--eval-mock-noise=0.1", "--eval-url=http://127.0.0.1:1", "--eval-api-key=k"],
            "--eval-mock-noise makes the mock provider's generations noisy, but the --eval-url target answers with its own provider",
        ),
    ],
    ids=["above-one", "not-a-number", "fractional-seed", "seed-alone", "with-url"],
)
def test_bad_noise_options_are_usage_errors(run, pytester, smoke, args, message):
    result = run(f"--eval-dataset={smoke}", *args, spawn=True)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_noise_options_resolve_from_flag_ini_and_env_and_are_in_the_help(pytester, monkeypatch):
    from pytest_groundeval.plugin.options import resolve_settings

    settings = resolve_settings(pytester.parseconfig())
    assert (settings.mock_noise, settings.mock_seed) == (0.0, 0)
    settings = resolve_settings(pytester.parseconfig("--eval-mock-noise=0.25", "--eval-mock-seed=-4"))
    assert (settings.mock_noise, settings.mock_seed) == (0.25, -4)
    monkeypatch.setenv("GROUNDEVAL_MOCK_NOISE", "1")
    monkeypatch.setenv("GROUNDEVAL_MOCK_SEED", "12")
    settings = resolve_settings(pytester.parseconfig())
    assert (settings.mock_noise, settings.mock_seed) == (1.0, 12)
    pytester.makeini("[pytest]\neval_mock_noise = 0\n")
    assert resolve_settings(pytester.parseconfig()).mock_noise == 0.0  # ini beats env
    group = pytester.runpytest("-p", "no:benchmark", "--help").stdout.str().split("groundeval:")[1]
    assert "--eval-mock-noise=NOISE" in group and "--eval-mock-seed=SEED" in group
