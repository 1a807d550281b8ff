"""What runs on the Ray workers: reading and splitting files (CPU tasks) and embedding
section texts (actors, one ONNX session each).

Rows cross between the stages and back to the driver as Ray Data blocks of plain columns:
``ord`` (the row's place, so the driver stores files in walk order), ``payload`` and
``texts`` (pickles: a ``ParsedFile`` and the ``(text SHA-256, text)`` pairs still to embed),
``vectors`` (a pickle of ``(text SHA-256, float32 bytes)`` pairs) and ``embed_seconds``
(the time an actor spent in the model for the block, on its first row).

Every function here runs with the same kbdb on each node, and the files and the model
must be at the same paths there (a shared file system, or the same checkout).
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any

from kbdb import failpoints
from kbdb.embedding.files import ModelFiles
from kbdb.errors import EmbeddingFailedError
from kbdb.index.vectors import embedding_text, text_sha
from kbdb.learn import parse_file

Batch = dict[str, Any]
"""A Ray Data batch in the ``numpy`` format: column name -> array."""


def sha_key(sha: str) -> int:
    """The first 64 bits of a hex SHA-256: the key of the cached-text filter."""
    return int(sha[:16], 16)


def parse_files(batch: Batch, *, tags: list[str], docid: str | None, cached: Any) -> Batch:
    """Read and split each walked file of ``batch`` as a local learn does
    (:func:`kbdb.learn.parse_file`), and list its section texts to embed: those whose SHA
    is not in ``cached`` (the sorted 64-bit keys of the texts the driver's embedding cache
    holds). A key that matches by chance only leaves a text to the driver's catch-up,
    which looks the full SHA up and embeds what is missing."""
    import numpy as np

    payloads: list[bytes] = []
    texts: list[bytes] = []
    for raw, single in zip(batch["entry"], batch["single_file"], strict=True):
        parsed = parse_file(pickle.loads(raw), tags=tags, docid=docid, single_file=bool(single))
        todo: dict[str, str] = {}
        if parsed.pending is not None:
            for s in parsed.pending.doc.sections:
                text = embedding_text(s.heading, s.content, s.type, s.title, s.description)
                if text is None:
                    continue
                sha = text_sha(text)
                if sha not in todo and not _cached(cached, sha_key(sha)):
                    todo[sha] = text
        payloads.append(pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL))
        texts.append(pickle.dumps(list(todo.items()), protocol=pickle.HIGHEST_PROTOCOL))
    return {
        "ord": batch["ord"],
        "payload": np.array(payloads, dtype=object),
        "texts": np.array(texts, dtype=object),
    }


def _cached(keys: Any, key: int) -> bool:
    import numpy as np

    if len(keys) == 0:
        return False
    i = int(np.searchsorted(keys, np.uint64(key)))
    return i < len(keys) and int(keys[i]) == key


class Embedder:
    """A Ray Data actor holding one ONNX Runtime session: it embeds the texts of a block
    of rows in one provider call, which sorts them by length and cuts model calls by the
    token budget exactly as a local learn does (``OnnxEmbeddingProvider.embed``).

    Args:
        model: the ``.onnx`` file (already the int8 one when the knowledge base is
            quantized).
        tokenizer: ``tokenizer.json``.
        model_name: the configured model, named in errors.
        dimensions: the vector length.
        threads: intra-op threads of the session (one per core the actor reserves).
        batch_size: texts per model call, at most 64.
    """

    def __init__(
        self,
        model: str,
        tokenizer: str,
        *,
        model_name: str,
        dimensions: int,
        threads: int,
        batch_size: int,
    ) -> None:
        from kbdb.embedding.local import OnnxEmbeddingProvider

        self.provider = OnnxEmbeddingProvider(
            ModelFiles(model=Path(model), tokenizer=Path(tokenizer)),
            model_name=model_name,
            dimensions=dimensions,
            threads=threads,
            batch_size=batch_size,
        )
        self.provider.load()

    def __call__(self, batch: Batch) -> Batch:
        import numpy as np

        failpoints.hit("distributed.embed")
        rows = [pickle.loads(raw) for raw in batch["texts"]]
        flat = [text for row in rows for _, text in row]
        started = time.perf_counter()
        try:
            vecs = self.provider.embed(flat)
        except EmbeddingFailedError:
            # As in a local learn, a failed embedding never loses the learn: the rows go
            # on without vectors and the driver's catch-up tries them once more (and
            # reports the sections it cannot embed).
            vecs = None
        seconds = time.perf_counter() - started
        out: list[bytes] = []
        at = 0
        for row in rows:
            pairs: list[tuple[str, bytes]] = []
            if vecs is not None:
                for sha, _ in row:
                    pairs.append((sha, np.ascontiguousarray(vecs[at], dtype=np.float32).tobytes()))
                    at += 1
            out.append(pickle.dumps(pairs, protocol=pickle.HIGHEST_PROTOCOL))
        timing = np.zeros(len(rows), dtype=np.float64)
        if len(rows):
            timing[0] = seconds
        return {
            "ord": batch["ord"],
            "payload": batch["payload"],
            "vectors": np.array(out, dtype=object),
            "embed_seconds": timing,
        }
