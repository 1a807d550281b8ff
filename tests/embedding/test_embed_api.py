"""ApiEmbeddingProvider against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

import numpy as np
import pytest
from tests.embedding.conftest import Loopback, closed_port_url, send

from kbdb.config import EmbeddingConfig
from kbdb.embedding import ApiEmbeddingProvider, make_provider
from kbdb.embedding.api import embeddings_url, retry_after_seconds
from kbdb.errors import EmbeddingFailedError

KEY = "sk-test-5f3c9a1e7d2b4c6a8e0f1a2b3c4d5e6f"
DIM = 8

Start = Callable[[Callable[[BaseHTTPRequestHandler], None]], Loopback]


def vector(text: str, dim: int = DIM) -> list[float]:
    """A deterministic, unnormalized vector per text."""
    digest = hashlib.sha256(text.encode()).digest()
    return [b - 127.5 for b in digest[:dim]]


def answer(handler: BaseHTTPRequestHandler, dim: int = DIM, *, shuffle: bool = True) -> None:
    """An OpenAI-style answer, items in reverse order with their ``index``."""
    texts = json.loads(handler.body)["input"]  # type: ignore[attr-defined]
    data = [
        {"object": "embedding", "index": i, "embedding": vector(t, dim)}
        for i, t in enumerate(texts)
    ]
    if shuffle:
        data.reverse()
    send(
        handler,
        200,
        json.dumps({"object": "list", "data": data}).encode(),
        Content_Type="application/json",
    )


def scripted(
    *steps: Callable[[BaseHTTPRequestHandler], None],
) -> Callable[[BaseHTTPRequestHandler], None]:
    """Answer request n with steps[n]; the last step repeats."""
    calls = iter(range(10**6))

    def handle(handler: BaseHTTPRequestHandler) -> None:
        steps[min(next(calls), len(steps) - 1)](handler)

    return handle


def status(
    code: int, body: bytes = b'{"error": {"message": "nope"}}', **headers: str
) -> Callable[[BaseHTTPRequestHandler], None]:
    return lambda h: send(h, code, body, **headers)


def provider(url: str, **kw: object) -> ApiEmbeddingProvider:
    opts: dict[str, object] = {
        "model": "test-embed",
        "dimensions": DIM,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
    }
    opts.update(kw)
    return ApiEmbeddingProvider(url, **opts)  # type: ignore[arg-type]


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("KBDB_API_KEY", KEY)
    return KEY


def test_success_batches_orders_by_index_and_normalizes(loopback: Start, keyed: str) -> None:
    server = loopback(answer)
    texts = [f"text number {i}" for i in range(130)]
    with provider(server.url + "/v1") as p:
        got = p.embed(texts)
    assert got.shape == (130, DIM) and got.dtype == np.float32
    want = np.asarray([vector(t) for t in texts], dtype=np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert np.allclose(got, want, atol=1e-6)
    assert [len(json.loads(body)["input"]) for _, _, body in server.requests] == [64, 64, 2]
    path, headers, body = server.requests[0]
    assert path == "/v1/embeddings"
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert json.loads(body)["model"] == "test-embed"


def test_list_order_is_used_when_there_is_no_index(loopback: Start) -> None:
    def plain(h: BaseHTTPRequestHandler) -> None:
        texts = json.loads(h.body)["input"]  # type: ignore[attr-defined]
        send(h, 200, json.dumps({"data": [{"embedding": vector(t)} for t in texts]}).encode())

    server = loopback(plain)
    got = provider(server.url).embed(["a", "b"])
    assert np.argmax(got[0] @ got.T) == 0 and np.argmax(got[1] @ got.T) == 1
    assert "Authorization" not in server.requests[0][1]  # no key in the environment: no header


def test_429_then_success_honours_retry_after(loopback: Start, keyed: str) -> None:
    server = loopback(scripted(status(429, Retry_After="0.3"), answer))
    p = provider(server.url + "/embeddings/", backoff_max=5.0)
    t0 = time.perf_counter()
    got = p.embed(["hello"])
    assert time.perf_counter() - t0 >= 0.3
    assert got.shape == (1, DIM)
    assert len(server.requests) == 2
    assert server.requests[0][0] == "/embeddings"


def test_500_exhausts_the_retries(loopback: Start, keyed: str) -> None:
    server = loopback(status(500, b"internal error"))
    with pytest.raises(EmbeddingFailedError) as err:
        provider(server.url, max_retries=2).embed(["x"])
    assert len(server.requests) == 3
    assert err.value.code == "EMBEDDING_FAILED"
    assert "api embedding provider" in err.value.message
    assert "HTTP 500" in err.value.message and "3 tries" in err.value.message


def test_other_4xx_fail_at_once(loopback: Start, keyed: str) -> None:
    server = loopback(status(400, b'{"error": "bad model"}'))
    with pytest.raises(EmbeddingFailedError, match="HTTP 400"):
        provider(server.url, max_retries=3).embed(["x"])
    assert len(server.requests) == 1


def test_timeout_is_retried_then_reported(loopback: Start) -> None:
    def slow(h: BaseHTTPRequestHandler) -> None:
        time.sleep(0.6)
        answer(h)

    server = loopback(slow)
    with pytest.raises(EmbeddingFailedError, match="timed out after 0.2 s") as err:
        provider(server.url, timeout=0.2, max_retries=1).embed(["x"])
    assert "2 tries" in err.value.message
    assert len(server.requests) == 2


def test_a_timeout_then_an_answer_succeeds(loopback: Start) -> None:
    def slow(h: BaseHTTPRequestHandler) -> None:
        time.sleep(0.6)
        answer(h)

    server = loopback(scripted(slow, answer))
    assert provider(server.url, timeout=0.2, max_retries=2).embed(["x"]).shape == (1, DIM)


def test_connection_refused_is_retried_then_reported() -> None:
    with pytest.raises(EmbeddingFailedError, match="ConnectError") as err:
        provider(closed_port_url(), max_retries=2).embed(["x"])
    assert "3 tries" in err.value.message


def test_wrong_dimensions_name_the_provider(loopback: Start) -> None:
    server = loopback(lambda h: answer(h, dim=3))
    with pytest.raises(EmbeddingFailedError) as err:
        provider(server.url).embed(["x", "y"])
    assert "api embedding provider" in err.value.message
    assert "length 3, expected 8" in err.value.message


@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"data": []}', b'{"data": [{"index": 0}]}', b'{"data": [{"embedding": "x"}]}'],
)
def test_malformed_answers_are_embedding_errors(loopback: Start, body: bytes) -> None:
    server = loopback(status(200, body))
    with pytest.raises(EmbeddingFailedError, match="api embedding provider"):
        provider(server.url).embed(["x"])


def test_the_key_never_appears_in_logs_or_errors(
    loopback: Start, keyed: str, caplog: pytest.LogCaptureFixture
) -> None:
    def echo(h: BaseHTTPRequestHandler) -> None:  # a service that quotes the credential back
        send(h, h.server.code, f"invalid credential: {h.headers['Authorization']}".encode())  # type: ignore[attr-defined]

    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    server = loopback(echo)
    for code, tries in ((401, 1), (503, 3)):
        server.server.code = code  # type: ignore[attr-defined]
        before = len(server.requests)
        p = provider(server.url, max_retries=2)
        with pytest.raises(EmbeddingFailedError) as err:
            p.embed(["x"])
        assert len(server.requests) - before == tries  # 401 at once, 503 retried twice
        assert server.requests[-1][1]["Authorization"] == f"Bearer {KEY}"  # it was sent
        shown = " ".join(
            [
                str(err.value),
                err.value.message,
                repr(err.value),
                repr(p),
                json.dumps(err.value.to_dict()),
            ]
        )
        assert KEY not in shown
        assert "[redacted]" in err.value.message
        assert err.value.__cause__ is None and err.value.__context__ is None
        assert "$KBDB_API_KEY" in str(err.value)  # the variable is named, never its value
    assert caplog.records, "the retries were logged"
    assert KEY not in caplog.text
    assert all(KEY not in str(r.args) for r in caplog.records)


def test_make_provider_builds_the_api_provider_from_config(
    loopback: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", "k-123")
    server = loopback(answer)
    cfg = EmbeddingConfig(
        provider="api", api_url=server.url, model="m", dimensions=DIM, api_key_env="MY_EMBED_KEY"
    )
    p = make_provider(cfg, kbdir=None)
    assert isinstance(p, ApiEmbeddingProvider)
    assert p.model_name() == "m" and p.dimensions() == DIM and p.url == server.url + "/embeddings"
    assert p.embed(["x"]).shape == (1, DIM)
    assert server.requests[0][1]["Authorization"] == "Bearer k-123"
    p.close()


def test_url_and_retry_after_helpers() -> None:
    assert embeddings_url("https://api.example/v1") == "https://api.example/v1/embeddings"
    assert (
        embeddings_url("https://api.example/v1/embeddings/") == "https://api.example/v1/embeddings"
    )
    assert retry_after_seconds("2") == 2.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
