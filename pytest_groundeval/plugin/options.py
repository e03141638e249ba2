"""Command-line, ini and environment options of the plugin, resolved in one place (docs/options.md).

Every option has a flag ``--eval-x`` (default ``None``), an ini key ``eval_x``
and an environment variable ``GROUNDEVAL_X``; precedence is flag > ini > env.
Invalid values raise ``pytest.UsageError`` saying what was wrong and what is valid.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import pytest

from ..core.cost import PricesError, read_prices
from ..core.intervals import DEFAULT_CONFIDENCE, GATE_ON, GateOn
from ..core.jury import DEFAULT_POLICY, POLICIES, jury_name, mock_judge_model_problem
from ..core.sharding import parse_shard
from ..core.significance import DEFAULT_ALPHA
from ..history.urls import HistoryError, describe_url, resolve_url
from ..judge.judges_file import JudgesFileError, JudgeSpec, load_judges
from ..targets.placeholders import check_placeholders
from ..targets.protocol import DEFAULT_MAX_RESPONSE_BYTES
from .mock_options import mock_noise

if TYPE_CHECKING:
    from ..targets.mapping import TargetMap

GROUP = "groundeval"

# name, help, kind ("str" | "path" | "float" | "bool" | "int" | "list" | "multi": a value that may be repeated,
# each one checked as a "str" is)
OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("dataset", "Dataset directory (or its manifest.json) whose items become tests", "path"),
    ("spawn", "Command that starts the target; placeholders {port} {data_dir} {llm_url} {embed_url} {api_key}", "str"),
    ("setup", "Command run before the spawned target starts (repeatable; same placeholders)", "list"),
    ("url", "Base URL of an already running target (no mock is started)", "str"),
    ("api-key", "API key for the --eval-url target", "str"),
    (
        "target-map",
        "JSON file describing an existing HTTP API as the target: a request template and JMESPath expressions (docs/byo.md)",
        "path",
    ),
    ("report", "Write the JSON report to this path", "path"),
    ("html", "Write the report as one self-contained HTML page to this path (one dataset per run)", "path"),
    ("markdown", "Write the gate as a Markdown table to this path", "path"),
    ("no-step-summary", "Do not append the Markdown gate table to $GITHUB_STEP_SUMMARY", "bool"),
    (
        "shard",
        "Run only shard K of N of the dataset's items (K/N); merge the shards' reports with groundeval merge",
        "str",
    ),
    ("baseline", "Baseline report that arms the retrievalRecall floor", "path"),
    ("floors", "JSON file of gate floors and ceilings by metric name", "path"),
    (
        "alpha",
        "Significance level a retrievalRecall drop beyond the baseline margin must reach to fail the gate "
        "(default 0.05)",
        "float",
    ),
    ("strict", "Fail the session when any eval item fails, not only when the gate fails", "bool"),
    (
        "no-gate",
        "Measure and report without gating: the verdict reads NOT GATED and only errored items fail the run",
        "bool",
    ),
    ("confidence", "Confidence level of the intervals on every rate metric, in (0, 1) (default 0.95)", "float"),
    (
        "gate-on",
        "What floors and ceilings compare with: point (the metric's value, default) or lower-bound "
        "(the interval's end on the failing side)",
        "str",
    ),
    ("timeout", "Seconds one target call may take, from sending to the last byte of the answer (default 60)", "float"),
    (
        "max-response-bytes",
        "Largest target response body accepted, in bytes; KiB, MiB or GiB suffixes allowed (default 16 MiB)",
        "str",
    ),
    ("ready-timeout", "Seconds to wait for a spawned target's /readyz (default 60)", "float"),
    ("model-generate", "Generate model name for the lineage when the target has no /v1/info", "str"),
    ("model-embed", "Embedding model name for the lineage when the target has no /v1/info", "str"),
    (
        "mock-noise",
        "Chance in [0, 1] that a generation of the mock provider is noised: a cited block dropped or a number "
        "changed (docs/mock.md)",
        "float",
    ),
    ("mock-seed", "Seed of the mock provider's noise draws, a whole number (default 0)", "int"),
    ("concurrency", "Items sent to the target at once per process (default 4)", "int"),
    ("repeat", "Attempts per item, run inside its one test; N > 1 adds passAtK and passHatK (default 1)", "int"),
    (
        "history",
        "Record the run in this history database: 'sqlite' (.groundeval/history.db), sqlite:///path or postgresql://… (docs/history.md)",
        "str",
    ),
    ("label", "Label of the run in the history (needs --eval-history)", "str"),
    ("judge", "mock: the session's mock provider judges citation paragraphs (docs/citation.md)", "str"),
    ("judge-url", "OpenAI-compatible base URL of a citation judge, e.g. https://host/v1", "str"),
    (
        "judge-model",
        "Model of the citation judge (with --eval-judge=mock: mock-judge); repeat it for a jury at the same URL",
        "multi",
    ),
    ("judges", "JSON file of a jury's judges, a list of {url, model, apiKeyEnv} (docs/judges.md)", "path"),
    ("judge-policy", "How a jury's verdicts become one: majority (default), unanimous or strictest", "str"),
    (
        "judge-api-key",
        "Refused: the judge's key is read only from env GROUNDEVAL_JUDGE_API_KEY (docs/options.md)",
        "str",
    ),
    ("judge-cache", "Directory of the on-disk judge cache, e.g. .groundeval/judge-cache (default: no cache)", "path"),
    ("judge-concurrency", "Judge requests in flight at once per process, per judge of a jury (default 4)", "int"),
    (
        "judge-max-tokens",
        "Completion-token cap of each judge request, as max_tokens or max_completion_tokens (default: none sent)",
        "int",
    ),
    ("scorer-url", "vLLM score API of the citation coverage scorer (server root, .../v1 or .../score), or mock", "str"),
    ("scorer-model", "Model name sent to the coverage scorer (default: none; with mock: mock-score)", "str"),
    ("scorer-cap", "Characters of the cited sources' texts scored per paragraph (default 28000)", "int"),
    (
        "prices",
        'JSON file of model prices, {"model": {"input": USD, "output": USD}} per 1M tokens: adds judgeCostUsd and '
        "targetCostUsd (docs/gate.md)",
        "path",
    ),
)

MOCK = "mock"
"""The value of ``--eval-judge`` and ``--eval-scorer-url`` that means the session's mock provider."""

MOCK_JUDGE_MODEL = "mock-judge"
"""Judge model used with ``--eval-judge=mock`` unless ``--eval-judge-model`` names another (a fault suffix)."""

MOCK_SCORER_MODEL = "mock-score"
"""Scorer model used with ``--eval-scorer-url=mock`` unless ``--eval-scorer-model`` names another."""

DEFAULT_JUDGE_CONCURRENCY = 4
"""Judge (and scorer) requests in flight per process by default, as ``judge.client.JudgeClient``."""

DEFAULT_SCORER_CAP = 28_000
"""Characters of the cited sources' texts sent to the scorer by default (``judge.scorer.DEFAULT_CAP``)."""

DEFAULT_CONCURRENCY = 4
"""Items in flight per process by default.

Why 4: a real target answers in seconds and the harness's own cost per item is
far below that, so throughput grows almost linearly with items in flight; 4
gives most of that gain while keeping the load a CI run puts on a target (and
on the paid model behind a ``--eval-url`` target, whose rate limits are often a
few requests per second) close to what one user would cause. Raise it with
``--eval-concurrency`` for a target that can take more (benchmarks/README.md).
"""

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_READY_TIMEOUT_S = 60.0

CONFLICT_SPAWN_URL = (
    "--eval-spawn and --eval-url both given (from flags, ini or GROUNDEVAL_* env): "
    "a run has exactly one target; drop one of them"
)


def _dest(name: str) -> str:
    return "eval_" + name.replace("-", "_")


def _env(name: str) -> str:
    return "GROUNDEVAL_" + name.replace("-", "_").upper()


def add_options(parser: pytest.Parser) -> None:
    """Register every option in one ``groundeval`` group, with its ini key."""
    group = parser.getgroup(GROUP, "groundeval: gate grounded-answer quality")
    for name, help_, kind in OPTIONS:
        flag = f"--eval-{name}"
        env_help = f" (ini {_dest(name)}, env {_env(name)})"
        if kind == "bool":
            group.addoption(flag, action="store_true", default=None, dest=_dest(name), help=help_ + env_help)
            # Read as a string and parsed by ``_bool``: pytest's own "bool" ini type raises
            # ValueError (an INTERNALERROR) on a value such as "perhaps" or an empty one.
            parser.addini(_dest(name), help_, type="string", default=None)
        elif kind in ("list", "multi"):
            metavar = "CMD" if kind == "list" else name.split("-")[-1].upper()
            group.addoption(
                flag, action="append", default=None, dest=_dest(name), metavar=metavar, help=help_ + env_help
            )
            parser.addini(_dest(name), help_, type="linelist", default=[])
        else:
            group.addoption(
                flag,
                action="store",
                default=None,
                dest=_dest(name),
                metavar=name.split("-")[-1].upper(),
                help=help_ + env_help,
            )
            parser.addini(_dest(name), help_, type="string", default=None)


@dataclass(frozen=True)
class Settings:
    """The resolved options of one run."""

    dataset: Path | None = None
    """The dataset's manifest.json, when ``--eval-dataset`` is given."""
    spawn: str | None = None
    """Spawn command of the target, or None for the reference target."""
    setup: tuple[str, ...] = ()
    """Setup commands run before the spawned target."""
    url: str | None = None
    """Base URL of a running target."""
    api_key: str | None = None
    """API key for the url target."""
    target_map: TargetMap | None = field(default=None, repr=False, compare=False)
    """The checked target map of ``--eval-target-map`` (docs/byo.md); its ``secrets`` are never printed."""
    report: Path | None = None
    """Where to write the JSON report."""
    html: Path | None = None
    """Where to write the HTML report (docs/ci.md)."""
    markdown: Path | None = None
    """Where to write the Markdown gate table (docs/ci.md)."""
    step_summary: bool = True
    """Append the Markdown gate table to ``$GITHUB_STEP_SUMMARY`` when that is set."""
    shard: tuple[int, int] | None = None
    """``(K, N)`` of ``--eval-shard K/N``: run only the items ``core.sharding.shard_of`` puts in shard K."""
    baseline: Path | None = None
    """Baseline report for the recall floor."""
    floors: Path | None = None
    """Floors file."""
    alpha: float = DEFAULT_ALPHA
    """Significance level of the baseline recall check's paired test (docs/statistics.md)."""
    strict: bool = False
    """Any failed item fails the session."""
    no_gate: bool = False
    """Measure without gating (``--eval-no-gate``): no quality bound is applied, the verdict
    reads ``NOT GATED``, and only errored items fail the session (docs/gate.md)."""
    confidence: float = DEFAULT_CONFIDENCE
    """The level of every rate metric's confidence interval, in (0, 1) (docs/statistics.md)."""
    gate_on: GateOn = "point"
    """What the bounds compare with: each metric's value, or its interval's end on the failing side."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Deadline of one target call, in seconds."""
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    """Largest response body accepted from an HTTP target, in bytes."""
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S
    """How long a spawned target may take to become ready, in seconds."""
    model_generate: str | None = None
    """Lineage fallback for the generate model."""
    model_embed: str | None = None
    """Lineage fallback for the embedding model."""
    mock_noise: float = 0.0
    """Chance that one generation of the session's mock provider is noised (docs/mock.md, "Noise"); 0: none."""
    mock_seed: int = 0
    """Seed of the mock provider's noise draws."""
    concurrency: int = DEFAULT_CONCURRENCY
    """Items in flight per process (see ``DEFAULT_CONCURRENCY``)."""
    repeat: int = 1
    """Attempts per item (``--eval-repeat N``): each item's test runs it N times (docs/gate.md, "Repeats")."""
    history: str | None = None
    """The history database as a canonical URL (``history.urls.resolve_url``), or None: no history."""
    label: str | None = None
    """The run's label in the history (``--eval-label``)."""
    judge: str | None = None
    """``"mock"`` for the session's mock provider as the citation judge, else None."""
    judge_url: str | None = None
    """Base URL of the citation judge (an OpenAI-compatible endpoint), or None."""
    judge_model: str | None = None
    """The judge model (``MOCK_JUDGE_MODEL`` by default with the mock); a jury's name
    (``core.jury.jury_name``: ``jury(majority: a, b)``) with a jury."""
    judges: tuple[JudgeSpec, ...] = ()
    """A jury's judges, two or more (docs/judges.md, "Juries"): from ``--eval-judges FILE``, or one per
    repeated ``--eval-judge-model`` at ``--eval-judge-url`` (``url`` ``"mock"``: the session's mock);
    empty for one judge. Their keys are never printed."""
    judge_policy: str = DEFAULT_POLICY
    """How a jury's verdicts become one (``core.jury.POLICIES``)."""
    judge_api_key: str | None = field(default=None, repr=False)
    """The judge endpoint's key: handed to the judge client only, never printed or stored."""
    judge_cache: Path | None = None
    """Directory of the on-disk judge cache, or None (no cache)."""
    judge_concurrency: int = DEFAULT_JUDGE_CONCURRENCY
    """Judge and scorer requests in flight per process (per judge of a jury)."""
    judge_max_tokens: int | None = None
    """Completion-token cap of each judge request (docs/judges.md), or None: none sent."""
    scorer_url: str | None = None
    """The coverage scorer's URL, ``"mock"``, or None."""
    scorer_model: str | None = None
    """Model name sent to the scorer, or None."""
    scorer_cap: int = DEFAULT_SCORER_CAP
    """Characters of the cited sources' texts scored per paragraph."""
    prices: dict[str, dict[str, float]] | None = None
    """The checked prices of ``--eval-prices`` (``core.cost``): model -> ``{"input", "output"}`` US dollars
    per 1M tokens, or None: no cost is computed (docs/gate.md, "Cost")."""

    @property
    def judging(self) -> bool:
        """Whether citation paragraphs go to a judge or a coverage scorer (docs/citation.md)."""
        return bool(self.judge or self.judge_url or self.judges or self.scorer_url)

    @property
    def uses_mock_for_judging(self) -> bool:
        """Whether the judge or the scorer is the session's mock provider."""
        return self.judge == MOCK or self.scorer_url == MOCK


def _raw(config: pytest.Config, name: str, kind: str):
    """The option's value and where it came from: the flag, else the ini key, else the env var.

    Raises:
        pytest.UsageError: a single-valued option is given but empty (``--eval-dataset=``,
            ``GROUNDEVAL_DATASET=`` or ``eval_dataset =``): most often a CI variable that
            was never set, and a run that silently drops the option could pass as green.
    """
    value = config.getoption(_dest(name))
    if value is not None:
        return _not_empty(value, f"--eval-{name}", kind), f"--eval-{name}"
    ini = config.getini(_dest(name))
    if kind in ("list", "multi"):
        if ini:
            return list(ini), f"ini {_dest(name)}"
    elif kind == "bool" and isinstance(ini, str) and not ini.strip():
        pass  # an empty ini boolean falls through to the environment, as an empty env boolean is unset
    elif ini is not None:
        return _not_empty(ini, f"ini {_dest(name)}", kind), f"ini {_dest(name)}"
    env = os.environ.get(_env(name))
    if env is not None:
        if kind in ("list", "multi"):
            lines = [line for line in env.splitlines() if line.strip()]
            if kind == "multi" and not lines:
                _not_empty(env, f"env {_env(name)}", "str")
            return (lines or None), (f"env {_env(name)}" if lines else None)
        if kind == "bool" and env == "":
            return None, None
        return _not_empty(env, f"env {_env(name)}", kind), f"env {_env(name)}"
    return None, None


def _not_empty(value, source: str, kind: str):
    if kind == "multi" and isinstance(value, list):
        for one in value:
            _not_empty(one, source, "str")
        return value
    if kind not in ("bool", "list") and isinstance(value, str) and not value.strip():
        raise pytest.UsageError(f"{source} is given but empty (an unset CI variable?): give it a value or leave it out")
    return value


def _check_url(value: str, source: str, key_option: str | None = "--eval-api-key (or GROUNDEVAL_API_KEY)") -> str:
    """A target URL: http(s), a host, and no credentials (they would be printed and stored).

    Raises:
        pytest.UsageError: another scheme, no host, or a user or password in the URL; the
            message never repeats the credentials.
    """
    parts = urlsplit(value)
    if parts.username is not None or parts.password is not None:
        shown = urlunsplit(
            parts._replace(netloc=f"***@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else ""))
        )
        raise pytest.UsageError(
            f"the URL given by {source} ({shown}) carries credentials: they would be printed and stored in the "
            "report; "
            + (f"give the key with {key_option} and " if key_option else "")
            + "drop the credentials from the URL"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise pytest.UsageError(f"{value!r} given by {source} is not an http(s) URL with a host")
    return value


def _positive(value, source: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number <= 0:
        raise pytest.UsageError(f"{value!r} is not a valid value for {source}: expected a number of seconds > 0")
    return number


def _level(value, source: str, expected: str) -> float:
    """``value`` as a number strictly between 0 and 1, else a usage error naming ``source`` and ``expected``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not 0.0 < number < 1.0:  # NaN fails too
        raise pytest.UsageError(f"{value!r} is not a valid value for {source}: expected {expected}")
    return number


def _alpha(value, source: str) -> float:
    return _level(value, source, "a significance level, a number in (0, 1)")


def _confidence(value, source: str) -> float:
    return _level(value, source, "a confidence level strictly between 0 and 1, e.g. 0.95")


def _gate_on(value, source: str) -> GateOn:
    text = str(value).strip().lower()
    for choice in GATE_ON:
        if text == choice:
            return choice
    raise pytest.UsageError(
        f"{value!r} is not a valid value for {source}: expected {' or '.join(GATE_ON)} (docs/gate.md)"
    )


def _count(value, source: str) -> int:
    text = str(value).strip()
    if not text.isdigit() or int(text) < 1:
        raise pytest.UsageError(f"{value!r} is not a valid value for {source}: expected a whole number >= 1")
    return int(text)


_SIZE = re.compile(r"\s*(\d+)\s*(B|KiB|MiB|GiB)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def _size(value, source: str) -> int:
    """A byte count: a whole number, optionally with a ``B``, ``KiB``, ``MiB`` or ``GiB`` suffix."""
    match = _SIZE.fullmatch(str(value))
    number = int(match.group(1)) * _UNITS[(match.group(2) or "").lower()] if match else 0
    if number < 1:
        raise pytest.UsageError(
            f"{value!r} is not a valid value for {source}: expected a number of bytes >= 1, "
            "optionally with a KiB, MiB or GiB suffix (e.g. 16MiB)"
        )
    return number


def _check_placeholders(commands: list[str], source: str) -> None:
    """Refuse a spawn or setup command using a ``{word}`` that is not a placeholder, before the run."""
    for command in commands:
        try:
            check_placeholders(command)
        except ValueError as exc:
            raise pytest.UsageError(f"{source}: {exc}") from None


def _bool(value, source: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise pytest.UsageError(f"{value!r} is not a valid value for {source}: expected true or false")


def _manifest_path(value: str, source: str) -> Path:
    path = Path(value)
    if not path.is_absolute():
        path = Path.cwd() / path
    if path.is_dir():
        path = path / "manifest.json"
    elif path.is_file() and path.name != "manifest.json":
        raise pytest.UsageError(
            f"{value!r} given by {source} is a file but not a dataset manifest: expected a directory "
            "holding manifest.json, or the manifest.json itself"
        )
    if not path.is_file():
        raise pytest.UsageError(
            f"{value!r} given by {source} is not a dataset: expected a directory holding manifest.json "
            f"(or the manifest.json itself); no such file {path}"
        )
    return path


def resolve_settings(config: pytest.Config) -> Settings:
    """Resolve every option with precedence flag > ini > env (docs/options.md).

    Raises:
        pytest.UsageError: a value is invalid, or spawn and url are both given.
    """
    values: dict = {}
    sources: dict = {}
    for name, _, kind in OPTIONS:
        values[name], sources[name] = _raw(config, name, kind)
    if values["spawn"] and values["url"]:
        raise pytest.UsageError(CONFLICT_SPAWN_URL)
    target_map = _target_map(values, sources) if values["target-map"] else None
    if values["setup"] and not values["spawn"] and values["url"]:
        raise pytest.UsageError("--eval-setup runs before a spawned target; it cannot be used with --eval-url")
    if values["url"] and not values["api-key"]:
        raise pytest.UsageError("--eval-url needs --eval-api-key (or GROUNDEVAL_API_KEY): the target's bearer key")
    if values["spawn"]:
        _check_placeholders([values["spawn"]], sources["spawn"])
    if values["setup"]:
        _check_placeholders(list(values["setup"]), sources["setup"])
    dataset = _manifest_path(values["dataset"], sources["dataset"]) if values["dataset"] else None

    def path(name: str) -> Path | None:
        return Path(values[name]).resolve() if values[name] else None

    for name in ("baseline", "floors"):
        p = path(name)
        if p is not None and not p.is_file():
            raise pytest.UsageError(f"{values[name]!r} given by {sources[name]} does not exist (expected a JSON file)")
    history = _history_url(values["history"], sources["history"]) if values["history"] else None
    if values["label"] and history is None:
        raise pytest.UsageError(
            f"{sources['label']} labels a run in the history, but no history is given: add --eval-history "
            "(or GROUNDEVAL_HISTORY), or drop the label"
        )
    outputs = {}
    for name, what_file in (("report", "a JSON file"), ("html", "an HTML file"), ("markdown", "a Markdown file")):
        out = outputs[name] = path(name)
        if out is None:
            continue
        if out.is_dir() or not out.parent.is_dir():
            what = "is a directory" if out.is_dir() else f"is in a directory that does not exist ({out.parent})"
            if not out.is_dir() and out.parent.exists():  # a file where a directory should be
                what = f"is under {out.parent}, which is not a directory"
            raise pytest.UsageError(
                f"{values[name]!r} given by {sources[name]} {what}: expected the path of {what_file} to write"
            )
        try:  # a file made and deleted: permissions alone do not tell (read-only mounts, /sys refuse even root)
            tempfile.TemporaryFile(dir=out.parent).close()
        except OSError as exc:
            raise pytest.UsageError(
                f"{values[name]!r} given by {sources[name]} is in a directory this run cannot write "
                f"({out.parent}: {exc.strerror or exc}): expected the path of {what_file} to write"
            ) from None
    written = [(name, out) for name, out in outputs.items() if out is not None]
    for i, (name, out) in enumerate(written):
        for other, other_out in written[i + 1 :]:
            if out == other_out:
                raise pytest.UsageError(
                    f"{sources[name]} and {sources[other]} name the same file ({values[name]!r}): "
                    "each output needs its own path"
                )
    shard = None
    if values["shard"]:
        try:
            shard = parse_shard(values["shard"])
        except ValueError as exc:
            raise pytest.UsageError(f"{sources['shard']}: {exc}") from None
    judging = _judging(values, sources)
    return Settings(
        **judging,
        **mock_noise(values, sources),
        dataset=dataset,
        spawn=values["spawn"],
        setup=tuple(values["setup"] or ()),
        url=_check_url(values["url"], sources["url"]).rstrip("/") if values["url"] else None,
        api_key=values["api-key"],
        target_map=target_map,
        report=outputs["report"],
        html=outputs["html"],
        markdown=outputs["markdown"],
        step_summary=not _bool(values["no-step-summary"], sources["no-step-summary"])
        if values["no-step-summary"] is not None
        else True,
        shard=shard,
        baseline=path("baseline"),
        floors=path("floors"),
        alpha=_alpha(values["alpha"], sources["alpha"]) if values["alpha"] else DEFAULT_ALPHA,
        strict=_bool(values["strict"], sources["strict"]) if values["strict"] is not None else False,
        no_gate=_bool(values["no-gate"], sources["no-gate"]) if values["no-gate"] is not None else False,
        confidence=(
            _confidence(values["confidence"], sources["confidence"]) if values["confidence"] else DEFAULT_CONFIDENCE
        ),
        gate_on=_gate_on(values["gate-on"], sources["gate-on"]) if values["gate-on"] else "point",
        timeout_s=_positive(values["timeout"], sources["timeout"]) if values["timeout"] else DEFAULT_TIMEOUT_S,
        max_response_bytes=(
            _size(values["max-response-bytes"], sources["max-response-bytes"])
            if values["max-response-bytes"]
            else DEFAULT_MAX_RESPONSE_BYTES
        ),
        ready_timeout_s=(
            _positive(values["ready-timeout"], sources["ready-timeout"])
            if values["ready-timeout"]
            else DEFAULT_READY_TIMEOUT_S
        ),
        model_generate=values["model-generate"],
        model_embed=values["model-embed"],
        concurrency=(
            _count(values["concurrency"], sources["concurrency"]) if values["concurrency"] else DEFAULT_CONCURRENCY
        ),
        repeat=_count(values["repeat"], sources["repeat"]) if values["repeat"] else 1,
        history=history,
        label=values["label"].strip() if values["label"] else None,
        prices=_prices(values["prices"], sources["prices"]) if values["prices"] else None,
    )


def _prices(value: str, source: str) -> dict[str, dict[str, float]]:
    """The checked prices file of ``--eval-prices`` (``core.cost.read_prices``, docs/gate.md "Cost").

    Raises:
        pytest.UsageError: the file cannot be read or is not a prices file; the message names the
            file, the model and the field at fault.
    """
    path = Path(value)
    try:
        return read_prices(path if path.is_absolute() else Path.cwd() / path)
    except PricesError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None


def _target_map(values: dict, sources: dict) -> TargetMap:
    """The checked target map of ``--eval-target-map`` (docs/byo.md, "Mapped targets").

    Imported here, when a map is given: reading a map's answers uses the response
    models (pydantic), which loading the plugin must not import (tests/test_package.py).

    Raises:
        pytest.UsageError: another target option is given too (a run has one target), or
            the map cannot be used (``targets.mapping.MapError``: the file and the key path).
    """
    from ..targets.mapping import MapError, load_map

    source = sources["target-map"]
    for other in ("url", "spawn", "setup"):
        if values[other]:
            raise pytest.UsageError(
                f"{source} and {sources[other]} both given: a mapped target is the run's one target; drop one of them"
            )
    path = Path(values["target-map"])
    try:
        return load_map(path if path.is_absolute() else Path.cwd() / path)
    except MapError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None


def _history_url(value: str, source: str) -> str:
    """The canonical history URL (docs/history.md); relative SQLite paths are under the current directory.

    Raises:
        pytest.UsageError: not a history URL; the message lists the valid forms and masks any password.
    """
    try:
        return resolve_url(value)
    except HistoryError as exc:
        raise pytest.UsageError(f"{source}: {exc}".replace(value, describe_url(value))) from None


JUDGE_KEY_NOT_FROM_ENV = (
    "the judge's API key was given by {source}: it is read only from the environment variable "
    "GROUNDEVAL_JUDGE_API_KEY, so that it never appears in the command line (process lists, shell "
    'history, pytest\'s --debug log) or in a committed ini file (docs/options.md, "Keys"); '
    "set GROUNDEVAL_JUDGE_API_KEY and drop {source}"
)


def _judging(values: dict, sources: dict) -> dict:
    """The judge and scorer settings (docs/citation.md), checked.

    Raises:
        pytest.UsageError: ``--eval-judge`` is not ``mock``; it and ``--eval-judge-url`` are both
            given; a judge URL without a model; a judge or scorer URL that is not http(s) or
            carries credentials; a judge or scorer option given without a judge or scorer
            (a run would silently judge nothing); a count that is not a whole number >= 1;
            a judge key given by the flag or an ini key (``JUDGE_KEY_NOT_FROM_ENV``).
    """
    if values["judge-api-key"] is not None and not sources["judge-api-key"].startswith("env "):
        raise pytest.UsageError(JUDGE_KEY_NOT_FROM_ENV.format(source=sources["judge-api-key"]))
    judges, policy = _jury(values, sources)
    judge, url = values["judge"], values["judge-url"]
    if judge is not None and judge.strip().lower() != MOCK:
        raise pytest.UsageError(
            f"{judge!r} given by {sources['judge']} is not a judge: the only value is mock (the session's mock "
            "provider); for a real judge give --eval-judge-url and --eval-judge-model"
        )
    if judge is not None and url:
        raise pytest.UsageError(
            f"{sources['judge']} and {sources['judge-url']} both given: a run has one judge; drop one of them"
        )
    if url and not values["judge-model"]:
        raise pytest.UsageError(f"{sources['judge-url']} needs --eval-judge-model (or GROUNDEVAL_JUDGE_MODEL)")
    if judge is not None:
        for named in values["judge-model"] or ():
            problem = mock_judge_model_problem(named)
            if problem is not None:
                raise pytest.UsageError(f"{sources['judge-model']}: {problem}")
    has_judge = judge is not None or bool(url) or bool(values["judges"])
    for name in ("judge-model", "judge-cache", "judge-concurrency", "judge-max-tokens"):
        if values[name] and not has_judge:
            raise pytest.UsageError(
                f"{sources[name]} given, but no judge: give --eval-judge-url (or --eval-judge=mock), or drop it"
            )
    scorer = values["scorer-url"]
    for name in ("scorer-model", "scorer-cap"):
        if values[name] and not scorer:
            raise pytest.UsageError(f"{sources[name]} given, but no scorer: give --eval-scorer-url, or drop it")
    if scorer is not None and scorer.strip().lower() == MOCK:
        scorer = MOCK
    elif scorer is not None:
        scorer = _check_url(scorer, sources["scorer-url"], None).rstrip("/")
    cache = values["judge-cache"]
    cache_dir = Path(cache).resolve() if cache else None
    if cache_dir is not None and cache_dir.exists() and not cache_dir.is_dir():
        raise pytest.UsageError(f"{cache!r} given by {sources['judge-cache']} is not a directory (the judge cache)")
    one = judges[0] if len(judges) == 1 else None  # a judges file of one judge: as --eval-judge-url gives it
    model: str | None
    if len(judges) > 1:
        model = jury_name([spec.model for spec in judges], policy)
    elif one is not None:
        model = one.model
    else:
        model = (values["judge-model"] or [None])[0] or (MOCK_JUDGE_MODEL if judge is not None else None)
    return dict(
        judge=MOCK if judge is not None else None,
        judge_url=(
            one.url
            if one is not None
            else _check_url(url, sources["judge-url"], "env GROUNDEVAL_JUDGE_API_KEY").rstrip("/")
            if url
            else None
        ),
        judge_model=model,
        judges=tuple(judges) if len(judges) > 1 else (),
        judge_policy=policy,
        judge_api_key=one.api_key if one is not None else values["judge-api-key"] if url else None,
        judge_cache=cache_dir,
        judge_concurrency=(
            _count(values["judge-concurrency"], sources["judge-concurrency"])
            if values["judge-concurrency"]
            else DEFAULT_JUDGE_CONCURRENCY
        ),
        judge_max_tokens=(
            _count(values["judge-max-tokens"], sources["judge-max-tokens"]) if values["judge-max-tokens"] else None
        ),
        scorer_url=scorer,
        scorer_model=values["scorer-model"] or (MOCK_SCORER_MODEL if scorer == MOCK else None),
        scorer_cap=_count(values["scorer-cap"], sources["scorer-cap"]) if values["scorer-cap"] else DEFAULT_SCORER_CAP,
    )


def _jury(values: dict, sources: dict) -> tuple[list[JudgeSpec], str]:
    """A jury's judges and policy (docs/judges.md, "Juries"), checked: the judges of ``--eval-judges FILE``
    (one or more), else one per repeated ``--eval-judge-model`` (two or more), else none.

    Raises:
        pytest.UsageError: ``--eval-judges FILE`` given with ``--eval-judge``, ``--eval-judge-url``
            or ``--eval-judge-model`` (the file names its own); the file cannot be used
            (``judge.judges_file.JudgesFileError``: the file, the entry's index and the field);
            a repeated judge model given twice; a policy that is not one of
            ``core.jury.POLICIES``, or given without a jury (it would change nothing).
    """
    models = values["judge-model"]  # each one not empty (``_raw``)
    judges: list[JudgeSpec] = []
    if values["judges"]:
        for other in ("judge", "judge-url", "judge-model"):
            if values[other]:
                raise pytest.UsageError(
                    f"{sources['judges']} and {sources[other]} both given: the judges file names each judge's URL "
                    "and model; drop one of them"
                )
        path = Path(values["judges"])
        try:
            judges = load_judges(path if path.is_absolute() else Path.cwd() / path)
        except JudgesFileError as exc:
            raise pytest.UsageError(f"{sources['judges']}: {exc}") from None
    elif models and len(models) > 1:
        twice = sorted({m for m in models if models.count(m) > 1})
        if twice:
            raise pytest.UsageError(
                f"{sources['judge-model']} names {twice[0]!r} twice: each judge of a jury needs its own model"
            )
        url = MOCK if values["judge"] is not None else values["judge-url"]
        if url is not None and url != MOCK:
            url = _check_url(url, sources["judge-url"], "env GROUNDEVAL_JUDGE_API_KEY").rstrip("/")
        key = values["judge-api-key"] if url != MOCK else None
        judges = [JudgeSpec(url=url, model=m.strip(), api_key=key) for m in models] if url else []
    policy = values["judge-policy"]
    if policy is not None:
        policy = policy.strip().lower()
        if policy not in POLICIES:
            raise pytest.UsageError(
                f"{values['judge-policy']!r} given by {sources['judge-policy']} is not a jury policy: expected one "
                f"of {', '.join(POLICIES)}"
            )
        if len(judges) < 2:
            raise pytest.UsageError(
                f"{sources['judge-policy']} given, but no jury: a policy makes the verdicts of two judges or more "
                "one; repeat --eval-judge-model, give --eval-judges FILE, or drop it"
            )
    return judges, policy or DEFAULT_POLICY


STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
"""The environment variable naming the CI job summary file the Markdown gate is appended to."""


def step_summary_path(settings: Settings) -> Path | None:
    """The job summary file to append the Markdown gate to: ``GITHUB_STEP_SUMMARY``, unless
    ``--eval-no-step-summary`` (docs/ci.md); None when there is none."""
    summary = os.environ.get(STEP_SUMMARY_ENV, "").strip()
    return Path(summary) if summary and settings.step_summary else None
