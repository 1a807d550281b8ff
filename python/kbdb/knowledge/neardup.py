"""Near-duplicate detection at learn time, and candidate pairs for ``contradictions``
(SPEC §3 result table, §8.5). The algorithm and its parameters are documented, with the
S-curve and measured precision and recall, in docs/knowledge.md.

- **Shingles**: a section's text (heading, then content) is lower-cased and cut into word
  tokens (``\\w+``); its shingles are the runs of ``SHINGLE`` consecutive tokens, hashed to
  64 bits. A section with fewer tokens than ``SHINGLE`` has one shingle, all its tokens, so
  it is a near-duplicate only of a section with the very same words. A section without
  tokens (empty, or an image) has no shingles and is never compared.
- **MinHash + LSH**: ``PERMS = BANDS * ROWS`` MinHash values, cut into ``BANDS`` bands of
  ``ROWS``; each band is hashed to one signed 64-bit key and stored in
  ``neardup_bands(key, id)``. Two sections are candidates when they share a band key; the
  probability is ``1 - (1 - J**ROWS)**BANDS`` for Jaccard ``J`` (``lsh_recall``).
- **Verification**: candidates are re-shingled from their stored content and kept when the
  exact Jaccard of the shingle sets reaches the threshold. The band table never decides a
  result alone.
- **Maintenance**: the tables follow the store's change log through a watermark in
  ``meta`` (``neardup_watermark``), like the lexical and vector indexes. A learn catches up
  inside its own write transaction, so its sections are in the table when it reports;
  anything else that writes the change log (revise, forget, import) is caught up by the
  next learn or ``contradictions``. A knowledge base made before these tables existed, or
  with other parameters (``neardup_params``), is backfilled from its live sections on
  first use.

**Where the hashing runs**: tokens, shingles, MinHash and band keys are computed in Rust
(``kbdb._core.neardup_*``, rust/src/neardup/), a batch per call, in parallel and without
the GIL: 20-30x the numpy code it replaced, on one thread (SciFact: 0.095 s against
2.0-2.8 s). Its values are bit-identical to that code (kept as
``tests/neardup_reference.py`` and checked on corpus text and every code point), so
``PARAMS`` is unchanged and stored bands stay valid. The SQL side batches too: a learn's
band rows go in with two ``executemany``, and the buckets of a whole batch are read in a
few statements.

numpy is imported inside the functions that need it (Jaccard, verification sets), never
at module import: ``kbdb search`` in lexical mode must not pay for it (SPEC §11).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kbdb.ingest.formats import CODE_FORMATS
from kbdb.store import Database
from kbdb.store import queries as q
from kbdb.store import signatures as sig
from kbdb.types import NearDuplicate

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from kbdb.index.vectors import VectorStore

    U64 = npt.NDArray[np.uint64]

SHINGLE = 2
"""Tokens per shingle. Chosen on the corpus test (docs/knowledge.md): with 2, one or two
small edits (a word swapped, a number changed, a short sentence deleted) keep 94% of
sections of 50+ tokens at J >= 0.85, against 87% with 3, and no unrelated section or 20%
rewrite was reported with either."""

BANDS = 20
ROWS = 5
PERMS = BANDS * ROWS
"""20 bands of 5 rows: a pair at J = 0.85 becomes a candidate with probability
1 - (1 - 0.85**5)**20 = 0.999992; at J = 0.5 with 0.47, at J = 0.3 with 0.047, at
J = 0.2 with 0.0064 (docs/knowledge.md has the whole curve)."""

SEED = 0x6B626462  # "kbdb"
PARAMS = f"shingle={SHINGLE};bands={BANDS};rows={ROWS};seed={SEED};v=2"
MAX_REPORTED = 10
"""Near-duplicates reported per section, the most similar first."""
MAX_CANDIDATES = 100
"""Candidates verified per section at most, those sharing the most bands first (a large
learn of near-identical sections must not verify every pair)."""
MAX_BUCKET = 64
"""``contradictions`` skips a band bucket with more members than this: such a bucket is
boilerplate shared by many sections (a licence footer), and pairing all of it would be the
all-pairs comparison the band table exists to avoid."""

# -- shingles and signatures ------------------------------------------------------------


CODE_TYPES = frozenset(f.mime for f in CODE_FORMATS)


def section_text(heading: str, content: str, type: str) -> str | None:
    """What a section is compared on: heading and content. None for images (base64) and
    for source code, which repeats itself by design (overloads, tests, generated code):
    a learn of a repository would report thousands of near-duplicates, and signing its
    tens of thousands of definitions cost a fifth of the learn."""
    if type.startswith("image/") or type in CODE_TYPES:
        return None
    return f"{heading}\n{content}"


def tokens(text: str) -> list[str]:
    """The lower-cased word tokens the signer sees (Python's ``\\w+`` on ``str.lower``)."""
    from kbdb import _core

    return _core.neardup_tokens(text)


def shingles_many(texts: Sequence[str]) -> list[U64]:
    """The sorted, distinct 64-bit shingle hashes of each text (empty: no tokens). Rust,
    in parallel, without the GIL."""
    import numpy as np

    from kbdb import _core

    return [np.frombuffer(b, dtype="<u8") for b in _core.neardup_shingles(list(texts))]


def shingles(text: str) -> U64:
    """The sorted, distinct 64-bit hashes of ``text``'s word shingles (empty: no tokens)."""
    return shingles_many([text])[0]


def batch_band_keys(texts: Sequence[str]) -> list[bytes | None]:
    """The ``BANDS`` band keys of each text, as little-endian uint64 bytes (the stored
    ``neardup_sections.bands``), None for a text without tokens. Tokens, shingles, MinHash
    and keys are computed in Rust (``kbdb._core.neardup_band_keys``), in parallel and
    without the GIL; the values are bit-identical to the numpy implementation that made
    the keys of earlier knowledge bases (``tests/neardup_reference.py``), so ``PARAMS`` is
    unchanged."""
    from kbdb import _core

    return _core.neardup_band_keys(list(texts))


def jaccard(a: U64, b: U64) -> float:
    """Exact Jaccard of two sorted distinct shingle-hash arrays."""
    import numpy as np

    if len(a) == 0 or len(b) == 0:
        return 0.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)


def lsh_recall(j: float, bands: int = BANDS, rows: int = ROWS) -> float:
    """The probability that a pair at Jaccard ``j`` shares at least one band."""
    return float(1.0 - (1.0 - j**rows) ** bands)


# -- the tables (SQL in kbdb.store.signatures) --------------------------------------------


def is_behind(conn: sqlite3.Connection) -> bool:
    """True when the tables miss change-log rows (or do not exist yet)."""
    if not sig.has_tables(conn) or sig.get_meta(conn, sig.PARAMS_KEY) != PARAMS:
        return True
    mark = sig.get_meta(conn, sig.WATERMARK_KEY)
    return mark is None or int(mark) < q.max_seq(conn)


def catch_up(conn: sqlite3.Connection) -> int:
    """Bring the tables up to the change log, inside the caller's write transaction (the
    caller holds the writer lock). Returns the number of sections (re)signed."""
    sig.ensure_tables(conn)
    head = q.max_seq(conn)
    mark = sig.get_meta(conn, sig.WATERMARK_KEY)
    if sig.get_meta(conn, sig.PARAMS_KEY) != PARAMS or mark is None or int(mark) > head:
        return rebuild(conn)
    if int(mark) == head:
        return 0
    changed = q.changed_kbids(conn, int(mark))
    sig.forget(conn, changed)
    rows = q.index_rows(conn, changed)
    n = _insert(conn, ((r[0], r[1], r[2], r[3]) for r in rows if r[6]))
    sig.set_meta(conn, sig.WATERMARK_KEY, str(head))
    return n


def rebuild(conn: sqlite3.Connection) -> int:
    """Sign every live section afresh (backfill, or new parameters), inside a write."""
    sig.ensure_tables(conn)
    head = q.max_seq(conn)
    sig.clear(conn)
    n = 0
    for batch in q.iter_live_index_rows(conn):
        n += _insert(conn, ((r[0], r[1], r[2], r[3]) for r in batch))
    sig.set_meta(conn, sig.PARAMS_KEY, PARAMS)
    sig.set_meta(conn, sig.WATERMARK_KEY, str(head))
    return n


def forget_signatures(conn: sqlite3.Connection, kbids: Sequence[str]) -> int:
    """Drop the rows of ``kbids`` (for ``gc``, which deletes sections), inside a write.
    Unknown kbids are ignored. Returns the number of sections dropped."""
    return sig.forget(conn, kbids)


def _insert(conn: sqlite3.Connection, rows: Iterable[tuple[str, str, str, str]]) -> int:
    todo = [
        (kbid, text)
        for kbid, heading, content, type_ in rows
        if (text := section_text(heading, content, type_)) is not None
    ]
    keys = batch_band_keys([t for _, t in todo])
    signed = [(kbid, k) for (kbid, _), k in zip(todo, keys, strict=True) if k is not None]
    sig.insert_many(conn, signed)
    return len(signed)


# -- queries ------------------------------------------------------------------------------


class ShingleCache:
    """Shingle sets of stored sections, computed once per call from their content."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._sets: dict[str, U64] = {}

    def get(self, kbids: Sequence[str]) -> dict[str, U64]:
        """One read and one Rust call for all the sets not computed yet."""
        todo = [k for k in dict.fromkeys(kbids) if k not in self._sets]
        rows = q.index_rows(self._conn, todo)
        texts = [section_text(r[1], r[2], r[3]) or "" for r in rows]
        for r, sh in zip(rows, shingles_many(texts), strict=True):
            self._sets[r[0]] = sh
        return {k: self._sets[k] for k in kbids if k in self._sets}


def lexical_near_duplicates(
    conn: sqlite3.Connection, kbids: Sequence[str], threshold: float
) -> dict[str, dict[str, float]]:
    """For each of ``kbids``: live sections at exact shingle Jaccard >= ``threshold``.
    The candidates of all ``kbids`` are read first, then every shingle set they need is
    computed in one batch."""
    cands = sig.live_candidates_many(conn, kbids, per_band=MAX_BUCKET, limit=MAX_CANDIDATES)
    if not cands:
        return {}
    sets = ShingleCache(conn).get(
        list(dict.fromkeys(k for kbid, cs in cands.items() for k in (kbid, *cs)))
    )
    out: dict[str, dict[str, float]] = {}
    for kbid in kbids:
        mine = sets.get(kbid)
        if mine is None or kbid not in cands:
            continue
        found = {}
        for c in cands[kbid]:
            other = sets.get(c)
            if other is None:
                continue
            j = jaccard(mine, other)
            if j >= threshold:
                found[c] = round(j, 4)
        if found:
            out[kbid] = found
    return out


def candidate_pairs(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Pairs of live sections that share a band, each once. One pass over the band table,
    so the cost grows with the table and the bucket sizes, never with its square; buckets
    larger than ``MAX_BUCKET`` are skipped."""
    seen: set[tuple[int, int]] = set()
    for bucket in sig.buckets(conn):
        if len(bucket) > MAX_BUCKET:
            continue
        for i, a in enumerate(bucket):
            for b in bucket[i + 1 :]:
                seen.add((a, b) if a < b else (b, a))
    if not seen:
        return []
    names = sig.live_kbids_of_ids(conn, sorted({i for p in seen for i in p}))
    return [(names[a], names[b]) for a, b in sorted(seen) if a in names and b in names]


# -- learn time ---------------------------------------------------------------------------


def cached_vectors(
    conn: sqlite3.Connection, vectors: VectorStore, rows: Sequence[q.IndexRow]
) -> dict[str, bytes]:
    """The cached embeddings (float32 bytes) of ``rows`` under the configured model."""
    from kbdb.index.vectors import embedding_text, text_sha

    shas: dict[str, str] = {}
    for kbid, heading, content, type_, title, description, *_ in rows:
        text = embedding_text(heading, content, type_, title, description)
        if text is not None:
            shas[kbid] = text_sha(text)
    cached = q.cached_embeddings(conn, vectors.model_name, list(set(shas.values())))
    return {k: cached[s] for k, s in shas.items() if s in cached}


def vector_near_duplicates(
    db: Database, vectors: VectorStore, kbids: Sequence[str], threshold: float
) -> dict[str, dict[str, float]]:
    """For each of ``kbids``: live sections at embedding cosine >= ``threshold``, by an
    exact top-k scan of the vector index (Rust, SIMD) with the section's own vector. One
    scan serves all of ``kbids`` (``VectorIndex.search_many``: every stored vector is read
    once and scored against each new section's), so a learn of several sections costs
    about one pass over the index, not one per section: at 1M sections x 384 dimensions a
    pass reads 1.5 GB (docs/knowledge.md)."""
    if not vectors.enabled or vectors.stale():
        return {}
    index = vectors.index()
    if index is None:
        return {}
    with db.read() as conn:
        vecs = cached_vectors(conn, vectors, q.index_rows(conn, kbids))
    asked = [k for k in kbids if k in vecs]
    if not asked:
        return {}
    results = index.search_many(b"".join(vecs[k] for k in asked), limit=MAX_REPORTED + 1)
    out: dict[str, dict[str, float]] = {}
    for kbid, (found, scores) in zip(asked, results, strict=True):
        hits = {
            k: round(float(s), 4)
            for k, s in zip(found, scores, strict=True)
            if k != kbid and s >= threshold
        }
        if hits:
            out[kbid] = hits
    return out


class NearDuplicateFinder:
    """What a learn asks for its new sections (SPEC §3, ``near_duplicates``)."""

    def __init__(
        self, db: Database, vectors: VectorStore, *, jaccard: float, cosine: float
    ) -> None:
        self._db = db
        self._vectors = vectors
        self.jaccard = jaccard
        self.cosine = cosine

    def catch_up(self, conn: sqlite3.Connection) -> None:
        """Inside the learn's write transaction."""
        catch_up(conn)

    def find(self, kbids: Sequence[str]) -> dict[str, tuple[NearDuplicate, ...]]:
        """Near-duplicates of each of ``kbids``: Jaccard when it passes (the similarity
        reported), else cosine; the most similar first, at most ``MAX_REPORTED``."""
        if not kbids:
            return {}
        with self._db.read() as conn:
            if not sig.has_tables(conn):
                return {}
            lex = lexical_near_duplicates(conn, kbids, self.jaccard)
        cos = vector_near_duplicates(self._db, self._vectors, kbids, self.cosine)
        out: dict[str, tuple[NearDuplicate, ...]] = {}
        for kbid in kbids:
            merged = {**cos.get(kbid, {}), **lex.get(kbid, {})}
            if merged:
                best = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_REPORTED]
                out[kbid] = tuple(NearDuplicate(k, s) for k, s in best)
        return out
