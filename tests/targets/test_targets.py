"""Tests of pytest_groundeval.targets: spawning, HTTP target errors, temporal substitution.

The spawn tests start tests/targets/servers/fake_target.py as a real child process
through ``SpawnedTarget``; the HTTP tests call it over real loopback HTTP.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_groundeval.core.contract import TEMPORAL_LABEL_SEPARATOR
from pytest_groundeval.core.kinds.temporal import namespace_label, substitute
from pytest_groundeval.targets import (
    MOCK_LLM_API_KEY,
    HttpTarget,
    SpawnConfig,
    SpawnedTarget,
    SpawnError,
    Target,
    TargetError,
    TargetUnavailable,
    connect_url,
    reference_command,
)

PYTHON = shlex.quote(sys.executable)
FAKE_SCRIPT = str(Path(__file__).parent / "servers" / "fake_target.py")
FAKE = f"{PYTHON} {shlex.quote(FAKE_SCRIPT)}"
LLM_URL = "http://127.0.0.1:9/v1"
EMBED_URL = "http://127.0.0.1:10/v1"


def _load_fake_module():
    spec = importlib.util.spec_from_file_location("groundeval_fake_target", FAKE_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GOOD_GENERATE = _load_fake_module().GOOD_GENERATE


def spawn_config(tmp_path: Path, command: str, **overrides) -> SpawnConfig:
    values = dict(
        command=command,
        llm_url=LLM_URL,
        embed_url=EMBED_URL,
        base_dir=tmp_path,
        worker_id="gw7",
        ready_timeout_s=15.0,
        terminate_grace_s=0.5,
    )
    values.update(overrides)
    return SpawnConfig(**values)


def echo(spawned: SpawnedTarget) -> dict:
    import httpx

    return httpx.get(f"{spawned.base_url}/echo", timeout=5).json()


def pid_running(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie (a zombie has already exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state != "Z"
    return True


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory):
    """One fake target shared by the HTTP tests (spawning costs a process start)."""
    config = spawn_config(tmp_path_factory.mktemp("fake"), f"{FAKE} --port {{port}} --api-key {{api_key}}")
    with SpawnedTarget(config) as spawned:
        yield spawned


# ----------------------------------------------------------------------------- spawning


def test_placeholders_are_substituted_and_other_braces_survive(tmp_path: Path) -> None:
    command = (
        f"{FAKE} --port {{port}} --api-key {{api_key}} --data-dir {{data_dir}} "
        f"--llm {{llm_url}} --embed {{embed_url}} --extra '{{\"a\": 1}}' --name {{{{unknown}}}}"
    )
    with SpawnedTarget(spawn_config(tmp_path, command)) as spawned:
        argv = echo(spawned)["argv"]
    assert argv == [
        "--port", str(spawned.port),
        "--api-key", spawned.api_key,
        "--data-dir", str(spawned.data_dir),
        "--llm", LLM_URL,
        "--embed", EMBED_URL,
        "--extra", '{"a": 1}',
        "--name", "{unknown}",
    ]  # fmt: skip
    assert spawned.base_url == f"http://127.0.0.1:{spawned.port}"


def test_child_environment_carries_the_harness_values(tmp_path: Path) -> None:
    config = spawn_config(tmp_path, FAKE, env={"FAKE_EXTRA": "dir={data_dir}"}, run_id="5e55" * 8)
    with SpawnedTarget(config) as spawned:
        env = echo(spawned)["env"]
    assert env["GROUNDEVAL_RUN_ID"] == "5e55" * 8
    assert env["GROUNDEVAL_PORT"] == str(spawned.port)
    assert env["GROUNDEVAL_DATA_DIR"] == str(spawned.data_dir)
    assert env["GROUNDEVAL_LLM_URL"] == LLM_URL
    assert env["GROUNDEVAL_EMBED_URL"] == EMBED_URL
    assert env["GROUNDEVAL_API_KEY"] == spawned.api_key
    assert env["OPENAI_BASE_URL"] == LLM_URL
    assert env["OPENAI_API_KEY"] == MOCK_LLM_API_KEY
    assert env["FAKE_EXTRA"] == f"dir={spawned.data_dir}"


def test_each_spawn_gets_a_fresh_dir_port_and_key(tmp_path: Path) -> None:
    with SpawnedTarget(spawn_config(tmp_path, FAKE)) as first:
        pass
    with SpawnedTarget(spawn_config(tmp_path, FAKE)) as second:
        pass
    assert first.data_dir != second.data_dir
    assert first.api_key != second.api_key
    assert "gw7" in first.data_dir.name
    assert first.data_dir.parent == tmp_path
    assert not first.api_key.startswith("-")


def test_setup_commands_run_in_order_before_the_server(tmp_path: Path) -> None:
    def append(word: str) -> str:
        return f"{PYTHON} -c \"import sys; open(sys.argv[1], 'a').write('{word}\\n')\" {{data_dir}}/order.txt"

    config = spawn_config(
        tmp_path,
        f"{FAKE} --mark {{data_dir}}/order.txt",
        setup=[append("setup-1"), append("setup-2")],
    )
    with SpawnedTarget(config) as spawned:
        order = (spawned.data_dir / "order.txt").read_text().split()
    assert order == ["setup-1", "setup-2", "server"]


def test_failing_setup_stops_the_spawn_with_its_output(tmp_path: Path) -> None:
    bad = f"{PYTHON} -c \"print('cannot migrate'); raise SystemExit(4)\""
    config = spawn_config(tmp_path, f"{FAKE} --mark {{data_dir}}/server-started", setup=[bad, "echo never-run"])
    spawned = SpawnedTarget(config)
    with pytest.raises(SpawnError) as info:
        spawned.start()
    message = str(info.value)
    assert "setup command failed (exit code 4)" in message
    assert bad in message
    assert "cannot migrate" in message
    assert info.value.exit_code == 4
    assert spawned.process is None
    assert not (spawned.data_dir / "server-started").exists()
    assert "never-run" not in spawned.log_path.read_text()


def test_readiness_waits_for_a_slow_listener(tmp_path: Path) -> None:
    config = spawn_config(tmp_path, f"{FAKE} --port {{port}} --delay-listen 1")
    with SpawnedTarget(config) as spawned:
        assert spawned.is_alive()
        assert spawned.target.ready() == 200
        assert "waiting 1.0 s before listening" in spawned.log_tail(5)


def test_launch_returns_before_readiness_and_wait_until_ready_waits(tmp_path: Path) -> None:
    """``launch`` then ``wait_until_ready`` is ``start`` in two steps, with the caller's work between them."""
    spawned = SpawnedTarget(spawn_config(tmp_path, f"{FAKE} --port {{port}} --delay-listen 60"))
    with pytest.raises(RuntimeError, match="before launch"):
        spawned.wait_until_ready()
    try:
        spawned.launch()
        assert spawned.is_alive()
        with pytest.raises(TargetUnavailable):
            HttpTarget(spawned.base_url, spawned.api_key).ready()  # not listening yet: launch did not wait
    finally:
        spawned.stop()
    assert not spawned.is_alive()


def test_the_ready_timeout_counts_from_the_launch(tmp_path: Path) -> None:
    # --eval-ready-timeout is the time a spawned target may take to answer GET /readyz: a caller's
    # work between launch and wait_until_ready (the mock's start, plugin/spawn_ahead.py) counts.
    slow = SpawnedTarget(spawn_config(tmp_path, f"{FAKE} --port {{port}} --delay-listen 2", ready_timeout_s=1.0))
    slow.launch()
    time.sleep(1.5)  # the budget is spent; counted from the wait, it would last until the target listens
    with pytest.raises(SpawnError, match="within 1 s"):
        slow.wait_until_ready()
    # A target that is ready when the wait starts late passes: one poll is made however late.
    ready = SpawnedTarget(spawn_config(tmp_path, f"{FAKE} --port {{port}}", ready_timeout_s=0.3))
    ready.launch()
    time.sleep(0.8)
    try:
        ready.wait_until_ready()
    finally:
        ready.stop()


def test_stop_signals_the_process_group_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A second stop (the fixture's own, after serve_target's) signalled the group id again, which by
    # then another process group may have taken.
    spawned = SpawnedTarget(spawn_config(tmp_path, f"{FAKE} --port {{port}}")).start()
    spawned.stop()
    signalled: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: signalled.append((pgid, sig)))
    spawned.stop()
    assert signalled == []


def test_launch_imports_no_http_library(tmp_path: Path) -> None:
    # The embedded server is launched before the session imports its HTTP stack, so that the two
    # overlap (plugin/spawn_ahead.py): a module-level import of targets.http in spawn undid that.
    code = f"""
import sys
from pathlib import Path
from pytest_groundeval.targets.spawn import SpawnConfig, SpawnedTarget
spawned = SpawnedTarget(SpawnConfig(command={FAKE + " --port {port} --delay-listen 60"!r}, llm_url="http://127.0.0.1:9/v1", embed_url="http://127.0.0.1:9/v1", base_dir=Path({str(tmp_path)!r})))
try:
    spawned.launch()
    print(sorted(m for m in ("aiohttp", "httpx", "httpcore") if m in sys.modules))
finally:
    spawned.stop()
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_wait_until_ready_stops_a_child_that_never_gets_ready(tmp_path: Path) -> None:
    spawned = SpawnedTarget(spawn_config(tmp_path, f"{FAKE} --delay-listen 60", ready_timeout_s=0.5)).launch()
    with pytest.raises(SpawnError, match="not ready after"):
        spawned.wait_until_ready()
    assert spawned.process is not None and spawned.process.poll() is not None


def test_command_that_exits_at_once_reports_code_and_log(tmp_path: Path) -> None:
    command = f"{PYTHON} -c \"import sys; print('boom'); sys.exit(3)\""
    spawned = SpawnedTarget(spawn_config(tmp_path, command))
    with pytest.raises(SpawnError) as info:
        spawned.start()
    message = str(info.value)
    assert command in message
    assert "exit code 3" in message
    assert "boom" in message
    assert info.value.exit_code == 3
    assert not spawned.is_alive()


def test_not_ready_in_time_reports_still_running_and_log_tail(tmp_path: Path) -> None:
    config = spawn_config(tmp_path, f"{FAKE} --delay-listen 60", ready_timeout_s=1.0)
    spawned = SpawnedTarget(config)
    with pytest.raises(SpawnError) as info:
        spawned.start()
    message = str(info.value)
    assert "still running, not ready after 1 s" in message
    assert "waiting 60.0 s before listening" in message
    assert info.value.exit_code is None
    assert spawned.process is not None and spawned.process.poll() is not None


def test_teardown_kills_a_child_that_ignores_sigterm(tmp_path: Path) -> None:
    # exec: the server itself leads the group, so its own exit status is observable
    with SpawnedTarget(spawn_config(tmp_path, f"exec {FAKE} --ignore-sigterm")) as spawned:
        pid = echo(spawned)["pid"]
        assert pid == spawned.process.pid
    assert spawned.process.returncode == -signal.SIGKILL
    assert not pid_running(pid)


def test_teardown_gives_a_server_behind_a_shell_its_grace_period(tmp_path: Path) -> None:
    # Without exec, sh leads the group and dies on SIGTERM at once; the server,
    # its child, must still get to exit on SIGTERM rather than be SIGKILLed.
    command = f"{FAKE} --on-sigterm {{data_dir}}/terminated; true"
    with SpawnedTarget(spawn_config(tmp_path, command, terminate_grace_s=5.0)) as spawned:
        pid = echo(spawned)["pid"]
        assert pid != spawned.process.pid
    assert (spawned.data_dir / "terminated").read_text() == "clean shutdown"
    assert not pid_running(pid)


def test_teardown_kills_grandchildren(tmp_path: Path) -> None:
    command = f"{FAKE} --grandchild {{data_dir}}/grandchild.pid"
    with SpawnedTarget(spawn_config(tmp_path, command)) as spawned:
        grandchild = int((spawned.data_dir / "grandchild.pid").read_text())
        assert pid_running(grandchild)
    deadline = time.monotonic() + 5
    while pid_running(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)  # SIGKILL delivery is asynchronous
    assert not pid_running(grandchild)


def test_a_dead_child_is_reported_with_its_signal(tmp_path: Path) -> None:
    with SpawnedTarget(spawn_config(tmp_path, FAKE)) as spawned:
        spawned.ensure_alive()
        assert spawned.process is not None
        spawned.process.kill()
        spawned.process.wait()
        assert not spawned.is_alive()
        with pytest.raises(SpawnError, match=r"killed by SIGKILL") as info:
            spawned.ensure_alive()
        assert "listening on" in str(info.value)


def test_a_missing_provider_url_is_an_error_not_an_empty_string(tmp_path: Path) -> None:
    config = spawn_config(tmp_path, f"{FAKE} --llm {{llm_url}}", llm_url=None)
    with pytest.raises(ValueError, match=r"\{llm_url\}"):
        SpawnedTarget(config).start()


def test_reference_command_runs_the_reference_module() -> None:
    command = reference_command()
    argv = shlex.split(command)
    assert argv[0] == sys.executable
    assert argv[1:4] == ["-m", "pytest_groundeval.reference", "--port"]
    assert "{port}" in command and "{data_dir}" in command


def test_reference_server_spawns_against_the_mock(tmp_path: Path) -> None:
    """The default path end to end: reference_command() through SpawnedTarget, routed to the mock."""
    from pytest_groundeval.mock.threaded import ThreadedMockProvider

    text = "Project Alpha ships in May 2025.\nThe budget rose to 3 million.\n"
    with ThreadedMockProvider() as mock:
        config = spawn_config(
            tmp_path, reference_command(), llm_url=mock.base_url, embed_url=mock.base_url, ready_timeout_s=60.0
        )
        with SpawnedTarget(config) as spawned:
            target = spawned.target
            document = {
                "name": "eval/a.txt",
                "label": "NOTE",
                "format": "text",
                "contentHash": "0" * 16,
                "content": text,
            }
            first = target.ingest(document)
            assert target.ingest(document)["documentId"] == first["documentId"]
            body, latency_ms = target.timed_generate("When does Project Alpha ship?", "NOTE")
            with HttpTarget(spawned.base_url, "not-the-key") as stranger, pytest.raises(TargetError) as info:
                stranger.generate("When does Project Alpha ship?", "NOTE")
    assert body["evidence"] and body["evidence"][0]["document"] == "eval/a.txt"
    assert latency_ms > 0
    assert info.value.status == 401


# ----------------------------------------------------------------------------- HTTP target


def test_http_target_satisfies_the_protocol(fake: SpawnedTarget) -> None:
    assert isinstance(fake.target, Target)


def test_operations_round_trip(fake: SpawnedTarget) -> None:
    target = fake.target
    assert target.info() == {"models": {"generate": "fake-gen", "embed": "fake-embed"}}
    assert target.ingest(
        {"name": "eval/a.json", "label": "L", "format": "json", "contentHash": "0" * 16, "content": []}
    ) == {
        "documentId": "doc-eval/a.json",
        "txStart": 1000,
    }
    body, latency_ms = target.timed_generate("ok", None)
    assert body["claims"][0]["verdict"] == "supported"
    assert latency_ms > 0
    assert target.generate("ok", "L")["answer"].startswith("Alpha")
    assert target.records({"op": "create", "label": "L"}) == {"id": "rec-1", "txStart": 2000}
    assert target.query({"label": "L__ge_x"})["records"][0]["label"] == "L__ge_x"
    assert target.compare({"label": "L"}) == {"added": [], "removed": [], "changed": []}


def test_info_is_none_when_unsupported(tmp_path: Path) -> None:
    with SpawnedTarget(spawn_config(tmp_path, f"{FAKE} --no-info")) as spawned:
        assert spawned.target.info() is None


def test_wrong_key_is_a_target_error_with_status(fake: SpawnedTarget) -> None:
    with HttpTarget(fake.base_url, "wrong-key") as target, pytest.raises(TargetError) as info:
        target.generate("ok", None)
    assert not isinstance(info.value, TargetUnavailable)
    assert info.value.status == 401
    assert "POST /v1/generate" in str(info.value)
    assert "HTTP 401" in str(info.value)
    assert "missing or wrong API key" in str(info.value)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("no-claims", "missing required field 'claims'"),
        ("bad-verdict", "'claims[0].verdict' is 'probably'"),
        ("bad-json", "not valid JSON"),
        ("not-object", "not an object"),
        ("http-500", "HTTP 500"),
    ],
)
def test_bad_generate_responses_name_the_problem(fake: SpawnedTarget, question: str, expected: str) -> None:
    with pytest.raises(TargetError) as info:
        fake.target.generate(question, None)
    assert expected in str(info.value)
    assert f"{fake.base_url}/v1/generate" in str(info.value)
    assert not isinstance(info.value, TargetUnavailable)


def test_body_excerpt_is_capped() -> None:
    from pytest_groundeval.core.text import shorten
    from pytest_groundeval.targets.http import BODY_EXCERPT_CHARS

    def _excerpt(text: str) -> str:
        return shorten(text, BODY_EXCERPT_CHARS, collapse=False)

    assert len(_excerpt("x" * 5000)) == 500
    assert _excerpt("short") == "short"


def test_read_timeout_is_a_target_error_not_unavailable(fake: SpawnedTarget) -> None:
    with HttpTarget(fake.base_url, fake.api_key, timeout_s=0.3) as target, pytest.raises(TargetError) as info:
        target.generate("slow", None)
    assert not isinstance(info.value, TargetUnavailable)
    assert "no response within" in str(info.value)


def test_connection_refused_is_target_unavailable() -> None:
    with HttpTarget(f"http://127.0.0.1:{free_port()}", "k") as target, pytest.raises(TargetUnavailable) as info:
        target.generate("ok", None)
    assert "cannot connect" in str(info.value)


def test_connect_url_checks_readiness_once(fake: SpawnedTarget) -> None:
    target = connect_url(fake.base_url, fake.api_key, timeout_s=10)
    try:
        assert target.generate("ok", None)["traceId"] == "t-1"
    finally:
        target.close()
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(TargetUnavailable, match=f"the target at {url} is unavailable"):
        connect_url(url, "k")


@pytest.fixture
def not_ready_url():
    """A fake target whose /readyz answers 503, started directly (SpawnedTarget would wait for it)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, FAKE_SCRIPT, "--port", str(port), "--readyz-status", "503"],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", process
    finally:
        process.kill()
        process.wait()


def test_wait_ready_reports_the_last_status(not_ready_url) -> None:
    url, process = not_ready_url
    with HttpTarget(url, "k") as target, pytest.raises(TargetUnavailable) as info:
        target.wait_ready(1.0, process=process)
    assert "did not answer 200 within 1 s (last: HTTP 503)" in str(info.value)
    with pytest.raises(TargetUnavailable, match="is not ready: GET /readyz returned HTTP 503"):
        connect_url(url, "k")


@pytest.fixture
def answers_503_then_stalls():
    """A loopback server whose first ``GET /readyz`` answers 503 and every later one never answers."""
    import http.server
    import threading

    release = threading.Event()
    seen: list[int] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(1)
            if len(seen) > 1:
                release.wait(30)  # stall: the poll times out on the client side
                return
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_wait_ready_keeps_the_last_status_when_a_later_poll_times_out(answers_503_then_stalls) -> None:
    # The polls after the 503 get no answer: "no response within" must not erase what the target said.
    url, seen = answers_503_then_stalls
    with HttpTarget(url, "k") as target, pytest.raises(TargetUnavailable) as info:
        target.wait_ready(1.0)
    assert len(seen) >= 2  # a poll did time out after the 503
    assert "did not answer 200 within 1 s (last: HTTP 503)" in str(info.value)


def test_wait_ready_gives_its_last_poll_time_to_answer(monkeypatch) -> None:
    # Polls right before the deadline used to get a few hundredths of a second, too short under load.
    from pytest_groundeval.targets.http import READY_POLL_MIN_S

    polls: list[float] = []

    def ready(timeout_s: float) -> int:
        polls.append(timeout_s)
        return 503

    with HttpTarget("http://127.0.0.1:9", "k") as target:
        monkeypatch.setattr(target, "ready", ready)
        with pytest.raises(TargetUnavailable, match=r"within 0.5 s \(last: HTTP 503\)"):
            target.wait_ready(0.5, poll_interval_s=0.05)
    assert len(polls) >= 3 and min(polls) >= READY_POLL_MIN_S, polls


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda b: b["evidence"][0].update(start="3"), "'evidence[0].start' must be an integer"),
        (lambda b: b["evidence"][0].update(end=True), "'evidence[0].end' must be an integer"),
        (lambda b: b["evidence"][0].pop("document"), "missing required field 'evidence[0].document'"),
        (lambda b: b["claims"][0].update(markers=[1]), "'claims[0].markers' must be a list of strings"),
        (lambda b: b["claims"][0].pop("end"), "missing required field 'claims[0].end'"),
        (lambda b: b.update(answer=None), "'answer' must be a string"),
        (lambda b: b.update(evidence={}), "'evidence' must be a list"),
        (lambda b: b.update(usage={"promptTokens": "12"}), "'usage.promptTokens' must be an integer"),
    ],
)
def test_generate_shape_violations_name_the_field(change, field: str) -> None:
    from pytest_groundeval.targets import check_generate_response

    body = json.loads(json.dumps(GOOD_GENERATE))
    check_generate_response(body)
    change(body)
    with pytest.raises(ValueError, match=re.escape(field)):
        check_generate_response(body)


def test_in_process_target_satisfies_the_protocol() -> None:
    class Pipeline:
        def info(self):
            return None

        def ingest(self, document):
            return {"documentId": 1, "txStart": 1}

        def generate(self, question, find):
            return {}

        def records(self, step):
            return {"id": 1, "txStart": 1}

        def query(self, body):
            return {"records": []}

        def compare(self, body):
            return {"added": [], "removed": [], "changed": []}

        def close(self): return None  # fmt: skip

    class Incomplete:
        def generate(self, question, find): return {}  # fmt: skip

    assert isinstance(Pipeline(), Target)
    assert not isinstance(Incomplete(), Target)


# ----------------------------------------------------------------------------- temporal helpers

SAVES = {"v1": {"id": "r-1", "txStart": 1_700_000_000_000}, "v_2": {"id": "r-2", "txStart": 50}}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("$tx:v1", 1_700_000_000_000),
        ("$tx:v1+5", 1_700_000_000_005),
        ("$tx:v1-1000", 1_699_999_999_000),
        ("$id:v1", "r-1"),
        ("$tx:v_2", 50),  # one grammar: save names hold no '-', so "-N" is always an offset
        ("$tx:v_2+1", 51),
        ("plain", "plain"),
        ("costs $tx:v1", "costs $tx:v1"),
        (7, 7),
        (None, None),
    ],
)
def test_substitute_scalars(value, expected) -> None:
    assert substitute(value, SAVES) == expected


def test_substitute_walks_dicts_and_lists_without_mutating() -> None:
    probe = {"call": "query", "target": "$id:v1", "asOfTx": "$tx:v1-1", "nested": [{"x": "$tx:v_2"}]}
    result = substitute(probe, SAVES)
    assert result == {"call": "query", "target": "r-1", "asOfTx": 1_699_999_999_999, "nested": [{"x": 50}]}
    assert probe["target"] == "$id:v1"


@pytest.mark.parametrize("ref", ["$tx:missing", "$id:missing", "$tx:missing+3"])
def test_substitute_unknown_save_names_it(ref: str) -> None:
    with pytest.raises(ValueError, match="unknown save 'missing'"):
        substitute({"asOfTx": ref}, SAVES)


def test_namespace_label_is_stable_distinct_and_valid() -> None:
    label = namespace_label("TASK", "run-1", "tmp-update")
    prefix, suffix = label.split(TEMPORAL_LABEL_SEPARATOR)
    assert prefix == "TASK"
    assert suffix.isalnum() and suffix.isascii()
    assert namespace_label("TASK", "run-1", "tmp-update") == label
    assert namespace_label("TASK", "run-2", "tmp-update") != label
    assert namespace_label("TASK", "run-1", "tmp-delete") != label
    # the separator between run and item keeps ("ab", "c") and ("a", "bc") apart
    assert namespace_label("L", "ab", "c") != namespace_label("L", "a", "bc")


def test_target_does_not_outlive_a_harness_killed_without_teardown(tmp_path: Path) -> None:
    """SIGKILL of the harness (a cancelled CI job, a crashed xdist worker) still ends the target."""
    harness = tmp_path / "harness.py"
    harness.write_text(
        "import sys, time\n"
        "from pytest_groundeval.targets import SpawnConfig, SpawnedTarget\n"
        f"config = SpawnConfig(command={FAKE + ' --port {port} --api-key {api_key}'!r}, llm_url={LLM_URL!r},\n"
        f"    embed_url={EMBED_URL!r}, base_dir={str(tmp_path)!r}, terminate_grace_s=0.5)\n"
        "spawned = SpawnedTarget(config).start()\n"
        "print(spawned.process.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, str(harness)], stdout=subprocess.PIPE, text=True)
    try:
        child = int(proc.stdout.readline())
        assert pid_running(child)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 15
        while pid_running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_running(child)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_a_claim_that_is_its_slice_is_checked_without_stripping_markers(monkeypatch: pytest.MonkeyPatch) -> None:
    # A well-formed reply's claim text is its slice as it is: no marker stripping is needed (issue 24).
    from pytest_groundeval.targets import check_generate_response, responses

    def refuse(text: str) -> str:
        raise AssertionError("markers stripped")

    monkeypatch.setattr(responses, "strip_markers", refuse)
    check_generate_response(json.loads(json.dumps(GOOD_GENERATE)))


@pytest.mark.parametrize(
    ("text", "fits"),
    [("Alpha  ships in May", True), ("Alpha ships [S1] in May", True), ("Alpha ships in June", False)],
)
def test_a_claim_text_matches_its_slice_up_to_markers_and_spacing(text: str, fits: bool) -> None:
    from pytest_groundeval.targets import check_generate_response

    body = json.loads(json.dumps(GOOD_GENERATE))
    body["claims"][0]["text"] = text
    if fits:
        check_generate_response(body)
    else:
        with pytest.raises(ValueError, match=r"claims\[0\] start/end"):
            check_generate_response(body)
