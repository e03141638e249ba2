"""Shared fixtures for the project's own tests."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

# Bytecode caches are written even under PYTHONDONTWRITEBYTECODE=1 (or ``python -B``), into the
# usual ``__pycache__`` directories (git ignores them), by this process and the processes it starts.
# The suite starts well over a hundred Python processes (xdist workers, ``-n 2`` runs under test,
# subprocess runs, servers); without caches each one compiles the package's modules again, and
# assertion-rewrites every module of every installed pytest plugin and, in a worker, every test
# module (about 7 s of CPU of a worker's 10, and 0.35 s of each child's start). Set first, so that
# the imports below are cached too; the environment's setting is dropped for the children, which
# then behave as on a default Python install.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# The openai SDK and its HTTP stack (httpx2, httpcore2) are imported here, before any in-process
# pytester run. A module first imported inside such a run is dropped from sys.modules when the run
# ends, and a later import makes a second copy: then httpx2 maps the old copy's httpcore2
# exceptions while the new copy raises its own, so a refused connection escapes the SDK as a raw
# httpcore2.ConnectError instead of openai.APIConnectionError (as tests/plugin/conftest.py says of
# SQLAlchemy). Which test imported them first depended on how xdist shared out the tests. httpx
# imports its httpcore only when a client is first made, so the transports are imported by name.
import openai  # noqa: E402, F401
import pytest  # noqa: E402

for _stack in ("httpcore", "httpcore2", "httpx._transports.default", "httpx2._transports.default"):
    with contextlib.suppress(ImportError):
        importlib.import_module(_stack)

# Every module of the package, and the libraries it imports only on some paths, imported once here
# for the same reason: what an in-process run imports is dropped when it ends, so each run would
# import the controller, the runners, the kinds, pydantic's models and the report again (about 0.8 s
# of CPU per run, some 700 runs in the suite), and the history's schema modules imported inside a run
# and again after it would mix two copies of SQLAlchemy's. Start-up laziness is tested in fresh processes
# (tests/test_package.py, tests/plugin/test_session.py), which this does not reach.
import pytest_groundeval  # noqa: E402

for _module in pkgutil.walk_packages(pytest_groundeval.__path__, "pytest_groundeval."):
    if _module.name.rsplit(".", 1)[-1] != "__main__":
        importlib.import_module(_module.name)
for _library in ("jmespath", "psycopg", "yaml"):
    with contextlib.suppress(ImportError):
        importlib.import_module(_library)

# Fixtures shared across test directories, defined once (tests/_support/__init__.py says why).
pytest_plugins = ["tests._support.postgres", "tests._support.saved_reports", "tests._support.datasets"]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """pytest's ``pytester``, whose ``parseconfigure`` configs skip pytest's garbage collection at unconfigure.

    pytest collects garbage five times when a configured config is cleaned up, to catch
    unraisable exceptions (``_pytest.unraisableexception.cleanup``). ``Pytester.inline_run``
    turns that off for the configs it makes (it sets the same stash key to 0); ``parseconfigure``
    does not, and in an xdist worker whose heap holds the whole suite the five passes cost
    seconds per config. The configs here are only inspected, never run.
    """
    from _pytest.unraisableexception import gc_collect_iterations_key

    parseconfigure = pytester.parseconfigure

    def parseconfigure_without_gc(*args: str | Path) -> pytest.Config:
        config = parseconfigure(*args)
        config.stash[gc_collect_iterations_key] = 0
        return config

    pytester.parseconfigure = parseconfigure_without_gc  # type: ignore[method-assign]
    return pytester


@pytest.fixture(scope="session")
def load_script() -> Callable[[str], ModuleType]:
    """Import ``scripts/<name>.py`` by path (``scripts/`` is not a package), once per session."""

    def load(name: str) -> ModuleType:
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        # dataclasses resolve annotations through sys.modules, so the module must be registered to execute.
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture(scope="session")
def one_dataset_build(load_script) -> Iterator[ModuleType]:
    """``scripts/build_v1.py`` with ``build_datasets`` memoized for the session, per data directory.

    v1 and the hard dataset come out of one ``build_datasets`` call (both split the same
    sources), and each has a test that runs its command line (``build_v1.main``,
    ``build_hard.main``) and compares every byte: with this, the two share one build of
    the shared data instead of building both datasets twice. Both tests are in the
    ``dataset_build`` xdist group, so they run on the same worker.
    """
    module = load_script("build_v1")
    original = module.build_datasets
    built: dict[Path, dict[str, dict[str, bytes]]] = {}

    def build_datasets(data: Path) -> dict[str, dict[str, bytes]]:
        key = Path(data).resolve()
        if key not in built:
            built[key] = original(data)
        return built[key]

    module.build_datasets = build_datasets
    yield module
    module.build_datasets = original


@pytest.fixture(scope="session")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The main job, run once for the whole session as CI runs it: ``pytest --eval-dataset=datasets/v1``.

    A subprocess against the mock and the reference target the plugin starts, with
    ``--eval-report`` and ``--eval-html``; several tests read what it wrote.

    Returns:
        ``{"result": CompletedProcess, "report": Path, "html": Path}``.
    """
    import subprocess

    out = tmp_path_factory.mktemp("main-job")
    report, html = out / "report.json", out / "report.html"
    command = [
        sys.executable, "-m", "pytest", "--rootdir", str(REPO), "-p", "no:cacheprovider", "-p", "no:benchmark", "-q",
        "-p", "no:hypothesispytest", "-p", "no:anyio", "-p", "no:platformdirs",  # see NO_THIRD_PARTY_PLUGINS in tests/plugin/conftest.py
        f"--eval-dataset={REPO / 'datasets' / 'v1'}", f"--eval-report={report}", f"--eval-html={html}",
        "--eval-no-step-summary",
    ]  # fmt: skip
    result = subprocess.run(command, cwd=out, capture_output=True, text=True, timeout=300)
    return {"result": result, "report": report, "html": html}


@pytest.fixture
def plain_endpoint() -> Iterator[Callable[[str, bytes], str]]:
    """``serve(content_type, body) -> base URL``: a loopback server answering every request HTTP 200 with ``body``.

    Stands in for a judge behind a proxy that answers an HTML page or plain text with
    status 200. The URL ends in ``/v1`` (an OpenAI-style base URL); requests are counted
    in ``serve.requests``. Each server binds port 0 on 127.0.0.1 and is shut down after the test.
    """
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    servers: list[ThreadingHTTPServer] = []

    def serve(content_type: str, body: bytes) -> str:
        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                serve.requests += 1
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    serve.requests = 0
    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()
