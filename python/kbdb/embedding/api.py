"""``ApiEmbeddingProvider``: an OpenAI-compatible HTTP embedding service.

The contract (the seed's, SPEC §6.1)::

    POST {api_url}[/embeddings]
    Authorization: Bearer <value of $api_key_env>      (omitted when the variable is unset)
    {"input": ["text", ...], "model": "<model>"}
    -> 200 {"data": [{"embedding": [float, ...], "index": 0}, ...]}

Rows are put in ``index`` order when the service gives indexes, else taken in list order.
Vectors are L2-normalized on arrival so that the vector index can rank by dot product.

Failures: 429, 5xx, timeouts and connection errors are retried with exponential backoff
and full jitter, capped per wait and honouring ``Retry-After``; other 4xx fail at once.
After the last try the error is :class:`~kbdb.errors.EmbeddingFailedError`.

The key is read from the environment when the provider is built, kept in memory only,
sent only in the ``Authorization`` header, never logged, and scrubbed from every error
message (a service that echoes it back in an error body cannot leak it through us).
"""

from __future__ import annotations

import email.utils
import logging
import os
import random
import threading
import time
import weakref
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from kbdb.embedding.base import MAX_BATCH, batches, empty_vectors, finish_vectors
from kbdb.errors import EmbeddingFailedError

if TYPE_CHECKING:
    import httpx

    from kbdb.config import EmbeddingConfig
    from kbdb.embedding.base import Vectors

log = logging.getLogger("kbdb")

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504}) | frozenset(range(520, 530))
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRIES = 4
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 20.0  # no single wait is longer, whatever Retry-After says
BODY_EXCERPT = 200
SCRUBBED = "[redacted]"


def embeddings_url(api_url: str) -> str:
    """``api_url`` with ``/embeddings`` appended unless it already ends with it."""
    url = api_url.rstrip("/")
    return url if url.endswith("/embeddings") else url + "/embeddings"


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    current = datetime.now(timezone.utc).timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)


class ApiEmbeddingProvider:
    """Embeddings from an OpenAI-compatible HTTP service (``provider = "api"``).

    Args:
        api_url: the endpoint; ``/embeddings`` is appended when missing.
        model: the ``model`` field of each request, and :meth:`model_name`.
        dimensions: the expected vector length; other lengths are an error.
        api_key_env: the environment variable holding the key (read once, here).
        batch_size: texts per request, 1 to 64.
        timeout: seconds per request (connect, read, write, pool).
        max_retries: extra tries after a retryable failure.
        backoff_base: the first wait; it doubles per try, with full jitter.
        backoff_max: the cap of any single wait, ``Retry-After`` included.
    """

    def __init__(
        self,
        api_url: str,
        *,
        model: str,
        dimensions: int,
        api_key_env: str = "KBDB_API_KEY",
        batch_size: int = MAX_BATCH,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_RETRIES,
        backoff_base: float = BACKOFF_BASE_S,
        backoff_max: float = BACKOFF_MAX_S,
    ) -> None:
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be from 1 to {MAX_BATCH} (got {batch_size})")
        self._url = embeddings_url(api_url)
        self._model = model
        self._dimensions = dimensions
        self._key_env = api_key_env
        self._key = os.environ.get(api_key_env) or None
        self._batch_size = batch_size
        self._timeout = timeout
        self._max_retries = max(0, max_retries)
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, cfg: EmbeddingConfig) -> ApiEmbeddingProvider:
        """The provider ``[embedding]`` describes (``api_url``, ``model``, ``api_key_env``)."""
        return cls(
            cfg.api_url,
            model=cfg.model,
            dimensions=cfg.dimensions,
            api_key_env=cfg.api_key_env,
            batch_size=cfg.batch_size,
        )

    @property
    def url(self) -> str:
        """The full endpoint requests go to."""
        return self._url

    def dimensions(self) -> int:
        """The configured vector length."""
        return self._dimensions

    def model_name(self) -> str:
        """The configured model name."""
        return self._model

    def close(self) -> None:
        """Close the HTTP connections (the provider reopens them if used again)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> ApiEmbeddingProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:  # never shows the key
        return f"ApiEmbeddingProvider(url={self._url!r}, model={self._model!r})"

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in requests of at most ``batch_size``; rows in input order.

        Raises:
            EmbeddingFailedError: a request failed after its retries, the answer was not the
                expected JSON, or vectors had the wrong length. The key is never in the text.
        """
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        if len(texts) == 0:
            return empty_vectors(self._dimensions)
        out = np.empty((len(texts), self._dimensions), dtype=np.float32)
        for start in batches(len(texts), self._batch_size):
            chunk = list(texts[start : start + self._batch_size])
            rows = self._parse(self._post(chunk), len(chunk))
            out[start : start + len(chunk)] = finish_vectors(
                rows, provider="api", model=self._model, dimensions=self._dimensions
            )
        return out

    def _http(self) -> httpx.Client:
        import httpx

        with self._lock:
            if self._client is None:
                headers = {"Accept": "application/json"}
                if self._key:
                    headers["Authorization"] = f"Bearer {self._key}"
                client = httpx.Client(
                    timeout=httpx.Timeout(self._timeout), headers=headers, follow_redirects=False
                )
                # Connections close when the provider is collected, even without close().
                weakref.finalize(self, client.close)
                self._client = client
            return self._client

    def _scrub(self, text: str) -> str:
        """``text`` without the key (errors may quote bodies that echo it back)."""
        if self._key:
            text = text.replace(self._key, SCRUBBED)
        return text

    def _fail(self, what: str) -> EmbeddingFailedError:
        return EmbeddingFailedError(
            self._scrub(f"api embedding provider: {what}"),
            hint=f"check embedding.api_url and the key in ${self._key_env}",
        )

    def _wait(self, attempt: int, retry_after: float | None) -> float:
        """The pause before try ``attempt + 1``: Retry-After if given, else capped
        exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff
        And Jitter", 2015)."""
        if retry_after is not None:
            return min(retry_after, self._backoff_max)
        ceiling = min(self._backoff_max, self._backoff_base * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)

    def _post(self, chunk: list[str]) -> Any:
        """POST one batch with retries; the decoded JSON body of the 200 answer."""
        import httpx

        client = self._http()
        body = {"input": chunk, "model": self._model}
        last = ""
        for attempt in range(self._max_retries + 1):
            retry_after: float | None = None
            try:
                response = client.post(self._url, json=body)
            except httpx.TimeoutException:
                last = f"request to {self._url} timed out after {self._timeout:g} s"
            except httpx.HTTPError as exc:
                last = f"request to {self._url} failed: {type(exc).__name__}: {exc}"
            else:
                if response.status_code == 200:
                    try:
                        return response.json()
                    except ValueError:
                        raise self._fail(
                            f"{self._url} answered 200 with a body that is not JSON"
                        ) from None
                excerpt = response.text[:BODY_EXCERPT].strip()
                last = f"{self._url} answered HTTP {response.status_code}: {excerpt}"
                if response.status_code not in RETRY_STATUSES:
                    raise self._fail(last)
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
            if attempt == self._max_retries:
                break
            pause = self._wait(attempt, retry_after)
            log.info(
                "embedding api: %s; retry %d of %d in %.2f s",
                self._scrub(last),
                attempt + 1,
                self._max_retries,
                pause,
            )
            time.sleep(pause)
        tries = self._max_retries + 1
        raise self._fail(f"gave up after {tries} {'try' if tries == 1 else 'tries'}: {last}")

    def _parse(self, payload: Any, count: int) -> Any:
        """``[count, d]`` float32 rows from ``{"data": [{"embedding": [...]}, ...]}``."""
        import numpy as np

        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != count:
            got = len(data) if isinstance(data, list) else "no"
            raise self._fail(f"expected {count} embeddings in 'data', got {got}")
        items = [item for item in data if isinstance(item, dict) and "embedding" in item]
        if len(items) != count:
            raise self._fail("an item of 'data' has no 'embedding'")
        if all(isinstance(item.get("index"), int) for item in items):
            items.sort(key=lambda item: item["index"])
            if [item["index"] for item in items] != list(range(count)):
                raise self._fail(f"the 'index' fields are not 0 to {count - 1}")
        vectors = [item["embedding"] for item in items]
        lengths = {len(v) if isinstance(v, list) else -1 for v in vectors}
        if -1 in lengths:
            raise self._fail("an 'embedding' is not a list of numbers")
        if len(lengths) != 1:
            raise self._fail(
                f"vectors of different lengths {sorted(lengths)}, expected {self._dimensions}"
            )
        try:
            return np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError):
            raise self._fail("an 'embedding' is not a list of numbers") from None
