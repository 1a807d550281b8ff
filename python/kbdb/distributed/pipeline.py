"""Distributed learn and re-embedding on Ray Data, with one writer: the driver.

A learn (``kbdb learn PATH --ray``):

1. the driver walks the paths with the walker of a local learn (same ignore rules, same
   order) and reads the text SHAs its embedding cache holds;
2. CPU tasks read and split the files (:func:`workers.parse_files`, the local learn's
   parser) and list the section texts the cache lacks;
3. an actor pool embeds those texts, one ONNX session per actor (:class:`workers.Embedder`);
4. the rows stream back in walk order to the driver, whose ``Learner`` stores them in
   batches as a local learn does; each batch's vectors enter the embedding cache in the
   batch's own transaction, so the vector catch-up finds them there.

SQLite stays the truth with one writer. What was committed stays committed if the run
dies; run it again and the files already stored are unchanged and their texts, cached,
are not sent to Ray again. Ray retries a task or actor whose worker dies.

A re-embedding (``kbdb rebuild --ray``) sends the live sections' texts (all of them with
``--reembed``, otherwise those the cache lacks) through the same actors and caches the
vectors in batches; the rebuild then writes ``vectors.idx`` from the cache.
"""

from __future__ import annotations

import math
import os
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdb.distributed.cluster import connect
from kbdb.distributed.workers import Embedder, parse_files, sha_key
from kbdb.ingest import walk
from kbdb.learn import ParsedFile, check_paths

if TYPE_CHECKING:
    from kbdb.context import Context
    from kbdb.learn import Learner, ProgressFn
    from kbdb.types import LearnReport

FILES_PER_BLOCK = 64
"""Files per Ray Data block: one task's parse and one actor call's embedding. Ray's cost
is about 0.1 s a block in a learn: at 16 files it was a tenth of the block, and a Ray
learn on two cores came out 0.96x a local one; at 64, 1.03x (benches/bench_ray_embed.py)."""
TEXTS_PER_BLOCK = 256
"""Section texts per block of a re-embedding (four model calls of 64 short texts)."""
CACHE_COMMIT_TEXTS = 2_048
"""A re-embedding caches its vectors in transactions of this many texts."""
PARSE_CPUS = 0
"""Cores a parse task reserves. The embedding actors reserve a core each, every core of
the cluster by default; a parse task that reserved any would wait for a core no actor
gives back (a deadlock, seen with Ray 2.60 on two cores). Reading and splitting costs a
few per cent of embedding, so the tasks run beside the actors, at most one per core."""


@dataclass
class RunStats:
    """What a distributed run measured (the benchmark reads it)."""

    blocks: int = 0
    rows: int = 0
    texts: int = 0
    embed_seconds: list[float] = field(default_factory=list)
    wall_seconds: float = 0.0


def learn_paths(
    ctx: Context,
    learner: Learner,
    paths: Sequence[Path],
    *,
    tags: Sequence[str],
    docid: str | None,
    progress: ProgressFn | None,
    notable_only: bool,
    address: str,
    actors: int | None = None,
    stats: RunStats | None = None,
) -> LearnReport:
    """``KnowledgeBase.learn_path(..., ray=address)``: parse and embed on Ray, store here.

    Args:
        actors: embedding actors (one core each); default: the cluster's cores.
        stats: filled with the run's block count and the actors' model time.
    """
    started = time.perf_counter()
    paths = check_paths(paths)
    max_file_bytes = ctx.config.learn.max_file_bytes
    rows = [
        {"ord": 0, "entry": pickle.dumps(entry), "single_file": root.is_file()}
        for root in paths
        for entry in walk(root, max_file_bytes=max_file_bytes)
    ]
    for i, row in enumerate(rows):
        row["ord"] = i
    embedder = _embedder_args(ctx)
    stats = stats if stats is not None else RunStats()
    with connect(address) as ray:
        cached = _cached_keys(ctx) if embedder is not None else _no_keys()
        blocks = _blocks(len(rows), FILES_PER_BLOCK)
        ds = _dataset(ray, rows, blocks)
        ds = ds.map_batches(
            parse_files,
            batch_size=None,
            batch_format="numpy",
            fn_kwargs={"tags": list(tags), "docid": docid, "cached": cached},
            num_cpus=PARSE_CPUS,
            compute=ray.data.TaskPoolStrategy(size=min(blocks, _cores(ray))),
        )
        if embedder is not None:
            ds = _embed(ds, ray, embedder, min(blocks, actors or _cores(ray)))
        parsed = _stream(ds, stats, embedded=embedder is not None)
        return learner.store_files(
            parsed,
            total=len(rows),
            progress=progress,
            notable_only=notable_only,
            started=started,
            embedded=embedder is not None,
        )


def embed_sections(
    ctx: Context,
    *,
    reembed: bool,
    address: str,
    progress: Callable[[int, int], None] | None,
    actors: int | None = None,
    stats: RunStats | None = None,
) -> int:
    """Embed the live sections' texts on Ray into the embedding cache (all of them when
    ``reembed``, otherwise those it lacks); the number of texts embedded. Nothing when
    the knowledge base does not embed with the ONNX provider."""
    embedder = _embedder_args(ctx)
    if embedder is None:
        return 0
    todo = ctx.vectors.texts_to_embed(reembed=reembed)
    if progress:
        progress(0, len(todo))
    if not todo:
        return 0
    stats = stats if stats is not None else RunStats()
    chunks = [todo[i : i + TEXTS_PER_BLOCK] for i in range(0, len(todo), TEXTS_PER_BLOCK)]
    rows = [{"ord": i, "payload": b"", "texts": pickle.dumps(c)} for i, c in enumerate(chunks)]
    done = 0
    with connect(address) as ray:
        ds = _dataset(ray, rows, len(rows))
        ds = _embed(ds, ray, embedder, min(len(rows), actors or _cores(ray)))
        waiting: list[tuple[str, bytes]] = []
        for item in _stream(ds, stats, embedded=True, files=False):
            waiting.extend(item.embeddings)
            if len(waiting) >= CACHE_COMMIT_TEXTS:
                done += _cache(ctx, waiting)
                waiting = []
                if progress:
                    progress(done, len(todo))
        done += _cache(ctx, waiting)
    if progress:
        progress(done, len(todo))
    return done


def _dataset(ray: Any, rows: list[dict[str, Any]], blocks: int) -> Any:
    """``rows`` as a dataset of ``blocks`` blocks whose results come back in order (a
    dataset keeps the Ray Data context of its creation)."""
    data = ray.data.DataContext.get_current()
    before = data.execution_options.preserve_order
    data.execution_options.preserve_order = True  # files are stored in walk order
    try:
        return ray.data.from_items(rows, override_num_blocks=blocks)
    finally:
        data.execution_options.preserve_order = before


def _cache(ctx: Context, rows: list[tuple[str, bytes]]) -> int:
    if rows:
        with ctx.lock.hold():
            ctx.vectors.store_embeddings(rows)
    return len(rows)


@dataclass(frozen=True)
class _EmbedderArgs:
    model: str
    tokenizer: str
    model_name: str
    dimensions: int
    batch_size: int


def _embedder_args(ctx: Context) -> _EmbedderArgs | None:
    """What an actor needs to load the model, or None when texts are not embedded here
    (no provider; an API provider embeds on the driver, in the learn's catch-up)."""
    cfg = ctx.config.embedding
    if cfg.provider != "onnx":
        return None
    from kbdb.embedding.local import OnnxEmbeddingProvider

    provider = ctx.vectors.provider
    assert isinstance(provider, OnnxEmbeddingProvider)
    # The int8 model is built (or found) here once; the actors load the file it gives.
    files = provider.load() if provider.quantized else provider.files()
    return _EmbedderArgs(
        model=str(files.model),
        tokenizer=str(files.tokenizer),
        model_name=cfg.model,
        dimensions=cfg.dimensions,
        batch_size=cfg.batch_size,
    )


def _embed(ds: Any, ray: Any, args: _EmbedderArgs, actors: int) -> Any:
    """``ds`` through a pool of ``actors`` single-core embedding actors (no more than
    there are blocks: an actor without a block would only load the model)."""
    return ds.map_batches(
        Embedder,
        batch_size=None,
        batch_format="numpy",
        fn_constructor_args=(args.model, args.tokenizer),
        fn_constructor_kwargs={
            "model_name": args.model_name,
            "dimensions": args.dimensions,
            "threads": 1,
            "batch_size": args.batch_size,
        },
        # Ray Data restarts an actor whose process died and runs its batch again
        # (max_restarts and max_task_retries default to -1 for actor pools, and Ray 2.60
        # deprecates setting them here); a task whose worker died runs again up to three
        # times (Ray's max_retries), and an exception in our code is not retried.
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=1,
        runtime_env=_failpoint_env(),
    )


def _failpoint_env() -> dict[str, Any] | None:
    """The crash harness's fail point, passed on to the actors (tests only set it)."""
    spec = os.environ.get("KBDB_FAILPOINT", "")
    if not spec.startswith("distributed."):
        return None
    return {"env_vars": {"KBDB_FAILPOINT": spec}}


def _stream(
    ds: Any, stats: RunStats, *, embedded: bool, files: bool = True
) -> Iterator[ParsedFile]:
    """The rows of ``ds``, in order, as parsed files carrying their vectors."""
    started = time.perf_counter()
    try:
        for batch in ds.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=2):
            stats.blocks += 1
            stats.rows += len(batch["ord"])
            if embedded:
                stats.embed_seconds.append(float(batch["embed_seconds"].sum()))
            for i in range(len(batch["ord"])):
                vectors: list[tuple[str, bytes]] = (
                    pickle.loads(batch["vectors"][i]) if embedded else []
                )
                stats.texts += len(vectors)
                if files:
                    item: ParsedFile = pickle.loads(batch["payload"][i])
                    yield ParsedFile(item.path, item.pending, item.skipped, tuple(vectors))
                else:
                    yield ParsedFile("", None, None, tuple(vectors))
    finally:
        stats.wall_seconds = time.perf_counter() - started


def _cached_keys(ctx: Context) -> Any:
    """The sorted 64-bit keys of the texts the embedding cache holds for the model."""
    import numpy as np

    keys = np.array([sha_key(s) for s in ctx.vectors.cached_shas()], dtype=np.uint64)
    keys.sort()
    return keys


def _no_keys() -> Any:
    import numpy as np

    return np.zeros(0, dtype=np.uint64)


def _cores(ray: Any) -> int:
    """The cluster's cores: the default number of embedding actors, one core each."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _blocks(rows: int, per_block: int) -> int:
    return max(1, math.ceil(rows / per_block))
