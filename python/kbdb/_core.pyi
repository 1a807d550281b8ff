"""Type stubs for the Rust engine, ``kbdb._core``.

This file is the contract between the Python package and the Rust crate. Only
``kbdb.search``, ``kbdb.store`` and ``kbdb.neardup`` (the near-duplicate signer) import
``kbdb._core``.

Errors: engine failures raise the ``kbdb.errors`` classes: ``IndexCorruptError`` (code
``INDEX_CORRUPT``) for a bad magic, version, checksum, size or truncation;
``InvalidArgumentError`` for bad arguments; ``OSError`` for plain I/O failures.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import final

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Buffer

__all__ = [
    "__version__",
    "FIELD_HEADING",
    "FIELD_BODY",
    "FIELD_CODE",
    "FIELD_PATH",
    "FIELD_ANCHOR",
    "languages",
    "Analyzer",
    "Index",
    "Hits",
    "VectorIndex",
    "NEARDUP_PARAMS",
    "NEARDUP_UNICODE",
    "neardup_band_keys",
    "neardup_shingles",
    "neardup_tokens",
]

__version__: str

FIELD_HEADING: int  # bit 1: matched in the heading field
FIELD_BODY: int  # bit 2: matched in the body field
FIELD_CODE: int  # bit 4: matched in the code field
FIELD_PATH: int  # bit 8: matched in the path field (file name, document title, headings above)
FIELD_ANCHOR: int  # bit 16: matched in the anchor field (labels of the links to the section)

def languages() -> list[tuple[str, str]]:
    """The analyzer's languages as ``(English name, ISO 639-1 code)``, by name."""

@final
class Analyzer:
    """The one analyzer used for indexing and for queries (SPEC §4.1), of one language."""

    def __new__(cls, language: str = "english") -> Analyzer:
        """``language``: an English name or ISO 639-1 code, in any case (``"de"``,
        ``"German"``); an unknown one raises ``InvalidArgumentError`` listing the valid
        ones."""
    @property
    def id(self) -> str:
        """A stable id of the analyzer's configuration (language and pipeline version,
        ``en-snowball-v1``), stored in ``meta.toml``."""
    @property
    def language(self) -> str:
        """The language's English name (``"german"``)."""
    def terms(self, text: str) -> list[str]:
        """Index-time terms of ``text``, in order."""
    def tokens(self, text: str) -> list[tuple[str, int, int, int]]:
        """``(term, position, start, end)`` per term; start/end are Python str (char) offsets
        of the source word in ``text``."""
    def query_tokens(self, text: str) -> list[tuple[str, str, int, bool]]:
        """``(term, surface, position, optional)`` per query term. ``surface`` is the word as
        typed; ``optional`` marks the whole form of a split identifier."""
    def snippet(
        self,
        text: str,
        terms: Iterable[str],
        width: int = 200,
        fallback: str | None = None,
    ) -> tuple[str, list[tuple[int, int]]]:
        """The snippet of ``text`` for the analyzed ``terms`` (``kbdb.search.snippet``
        states the rules) and the ``(start, end)`` char spans of the matched words in it,
        sorted, overlaps merged. Without a match in ``text``, a given ``fallback`` text is
        used instead."""
    def snippets(
        self,
        jobs: Sequence[tuple[str, str | None, Sequence[int]]],
        alternatives: Sequence[Sequence[str]],
        *,
        width: int = 200,
    ) -> list[str]:
        """The snippet texts of many ``(text, fallback, clauses)`` jobs in one call: a job's
        terms are the ``alternatives`` of the clauses it lists (indices), and its snippet
        is ``snippet(text, terms, width, fallback)[0]``."""

@final
class Hits:
    """Ranked lexical hits, best first."""

    @property
    def kbids(self) -> list[str]: ...
    @property
    def scores(self) -> list[float]: ...
    @property
    def matched(self) -> list[bytes]:
        """Per hit, per clause (a byte each): the bitmask of fields (FIELD_*) where that
        clause matched (any of its alternatives); 0 when it did not match."""
    @property
    def total(self) -> int:
        """How many live sections matched (before ``limit``)."""
    @property
    def in_path(self) -> list[int]:
        """The positions of the hits in whose ``path`` field (which holds the page's file
        name) every clause strict matching required matched (common words made optional
        excepted)."""
    @property
    def common(self) -> list[bool]:
        """Per clause (in query order): required in the query but made optional in strict
        matching because it is in more than ``common_cutoff`` of the sections."""
    @property
    def bodiless(self) -> list[int]:
        """The positions of the hits with neither body nor code text (a heading alone,
        such as a page's title section whose content sits under sub-headings)."""
    @property
    def clause_bounds(self) -> list[float]:
        """Per clause (in query order): the most it can add to a score, ``max(weight ×
        idf)`` over its alternatives that occur in the index (0.0 when none does), with idf
        from the corpus-wide statistics. BM25F saturates below idf, so a hit's score is
        below the sum of its clauses' bounds; ``score / sum(clause_bounds)`` does not
        depend on the corpus size."""
    @property
    def explain(self) -> list[list[tuple[int, str, str, float]]] | None:
        """With ``explain=True``: per hit, ``(clause, term, field, score)`` for every
        contribution to its score. ``field`` is ``heading``, ``body``, ``code``, ``path`` or
        ``anchor``. A clause contributes through its best alternative only; that term's
        BM25F score is split over the fields in proportion to each field's share of the
        weighted, length-normalized term frequency, so the parts of a hit sum to its
        score."""
    def __len__(self) -> int:
        """The number of hits returned (at most ``limit``)."""

_PerField = tuple[float, float, float, float, float]
"""One value per field, in field order: heading, body, code, path, anchor."""

_Corpus = tuple[int, tuple[int, int, int, int, int], Mapping[str, int]]
"""A collection's BM25F statistics: documents, the five fields' total lengths, and the
document frequency of each query term (``Index.search``'s ``corpus``)."""

_Clause = tuple[Sequence[tuple[str, float]], bool]
"""A query clause: alternatives ``(term, weight)`` (the term and its synonyms; a clause
scores its best-scoring matching alternative times that weight), and ``required``."""

_Phrase = Sequence[tuple[str, int]]
"""A quoted phrase: ``(term, relative_position)``; all terms must occur in one field at
those relative positions."""

@final
class Index:
    """The lexical index: immutable segments under one directory, listed by ``meta.toml``.

    Safe to share between threads. Searches see the snapshot that was current when they
    started. Writers must be serialized by the caller (kbdb's write lock).
    """

    @staticmethod
    def open(
        path: str, *, create: bool = False, reset: bool = False, language: str = "english"
    ) -> Index:
        """Open the index in directory ``path``, to be written by the analyzer of
        ``language``. With ``create``, an empty index is created when ``meta.toml`` is
        missing. Missing without ``create`` raises ``FileNotFoundError``; a damaged
        ``meta.toml`` or segment raises ``IndexCorruptError``. An index that another
        analyzer built opens (``analyzer_id`` names it), and commits to it fail until
        ``rebuild``.

        ``reset=True`` (caller holds the write lock) publishes an empty index over whatever
        is there (missing, corrupt or sound; the generation keeps counting up) and opens it:
        the way to repair an index that cannot be opened, followed by ``rebuild``. Files in
        the directory that are not the engine's (``vectors*``) are never touched."""
    def reload(self) -> bool:
        """Pick up a newer manifest written by another process. True if it changed."""
    @property
    def generation(self) -> int: ...
    @property
    def watermark(self) -> int:
        """The store change-log ``seq`` this index has applied."""
    @property
    def analyzer_id(self) -> str: ...
    @property
    def doc_count(self) -> int:
        """Live (not tombstoned) sections."""
    @property
    def segment_count(self) -> int: ...
    def size_bytes(self) -> int:
        """Bytes of the files of the current snapshot, ``meta.toml`` included."""
    def commit(
        self,
        adds: Sequence[tuple[str, str, str, str, str, str]],
        deletes: Sequence[str],
        *,
        watermark: int,
    ) -> list[int]:
        """Atomically add sections ``(kbid, heading, body, code, path, anchor)`` and
        tombstone ``deletes`` (kbids; unknown ones are ignored; a kbid both deleted and added
        ends up live), then publish a new manifest with ``watermark``. Runs the merge
        policy. Returns the number of indexed terms per add. Releases the GIL.

        An add replaces any live section with the same kbid (upsert). A kbid that is not 32
        lower-case hex characters, a kbid added twice in one call, a ``watermark`` above
        2**63-1, or an index built by a different analyzer (``analyzer_id``; rebuild it)
        raise ``InvalidArgumentError``."""
    def rebuild(
        self, docs: Sequence[tuple[str, str, str, str, str, str]], *, watermark: int
    ) -> list[int]:
        """Replace the whole index with one segment built from ``docs``. Works even when the
        current files are corrupt; adopts this build's analyzer id. Releases the GIL."""
    def merge(self, *, force: bool = False) -> int:
        """Run the merge policy (``force``: merge everything into one segment, dropping
        tombstoned docs). Returns the number of segments merged."""
    def verify(self) -> list[str]:
        """Re-check every file's checksum and decode every posting; returns problems
        (empty when sound). Reads the files on disk, not this object's snapshot."""
    def search(
        self,
        clauses: Sequence[_Clause],
        *,
        phrases: Sequence[_Phrase] = (),
        require_all: bool = True,
        limit: int = 10,
        allow: Sequence[str] | None = None,
        k1: float = 1.2,
        b: _PerField = (0.75, 0.75, 0.75, 0.75, 0.75),
        weights: _PerField = (2.0, 1.0, 1.0, 1.0, 2.0),
        explain: bool = False,
        common_cutoff: float = 0.0,
        corpus: _Corpus | None = None,
    ) -> Hits:
        """BM25F top-``limit``. ``require_all``: every required clause and every phrase
        must match (strict); otherwise any clause matching is enough (relaxed). ``allow``
        restricts to those kbids. Releases the GIL.

        Details: with ``require_all`` but no required clause and no phrase, matching is
        relaxed. Relaxed matching ignores ``phrases``. Non-required clauses only add score.
        Phrase terms need not be clauses. Ties are broken by kbid, so results do not depend
        on segmentation. Corpus statistics (N, df, average field lengths) count tombstoned
        sections until a merge drops them, as Lucene does. ``limit`` < 0, ``k1`` < 0, a
        ``b`` outside [0, 1], a negative weight or a malformed ``allow`` kbid raise
        ``InvalidArgumentError``. ``common_cutoff`` > 0: in strict matching, a required
        clause in more than that share of the sections (its most frequent alternative's
        df) is optional when a rarer required clause remains; it still adds score.
        ``corpus`` ``(docs, field totals, {term: df})``: score with these statistics (a
        whole collection's, summed over its shards' ``term_stats``) instead of this
        index's; every term of the query needs its df."""
    def search_tiers(
        self,
        clauses: Sequence[_Clause],
        *,
        relaxed_below: int,
        phrases: Sequence[_Phrase] = (),
        limit: int = 10,
        allow: Sequence[str] | None = None,
        k1: float = 1.2,
        b: _PerField = (0.75, 0.75, 0.75, 0.75, 0.75),
        weights: _PerField = (2.0, 1.0, 1.0, 1.0, 2.0),
        explain: bool = False,
        common_cutoff: float = 0.0,
        corpus: _Corpus | None = None,
    ) -> tuple[Hits, Hits | None]:
        """``(strict, relaxed)``: exactly ``search(..., require_all=True)`` with the
        phrases, and ``search(..., require_all=False)`` without them when the strict hits
        are fewer than ``relaxed_below`` (else ``None``), in one call. When the strict hits
        cannot reach ``relaxed_below`` (the rarest required clause is in fewer docs), every
        segment is searched term at a time and the query has no phrases and no
        ``explain``, both come from one evaluation of each segment, and the relaxed one is
        returned whatever the strict count. Releases the GIL."""
    def term_stats(
        self, terms: Sequence[str]
    ) -> tuple[int, tuple[int, int, int, int, int], list[int]]:
        """``(docs, field totals, [df of each term])`` of the current snapshot, tombstoned
        sections included as scoring counts them: this index's part of a collection's
        ``corpus`` statistics. Releases the GIL."""

_Float32 = Buffer | NDArray[np.float32]
"""float32 data in native byte order: ``bytes`` (``array.tobytes()``, borrowed without a
copy) or any object with the buffer protocol and format ``'f'`` (a numpy ``float32``
array of any shape, a ``memoryview``; copied once). Raw byte buffers (``bytearray``) are
read as float32 bytes. Other formats (``float64``) raise ``InvalidArgumentError``."""

@final
class VectorIndex:
    """The vector index in one directory (``.kbdb/indexes/``): ``vectors.idx`` in the
    seed's KBVX format, sorted by kbid, plus learn-time side files
    (``vectors-add.<gen>.idx`` appends, ``vectors-del.<gen>.tomb`` tombstones), all
    described and checksummed by ``vectors-meta.toml``.

    Scores are dot products: cosine similarities for L2-normalized vectors, which is what
    callers must store. Safe to share between threads; searches see the snapshot that was
    current when they started. Writers must be serialized by the caller (kbdb's write
    lock). Every call that reads or writes files, or scans, releases the GIL.
    """

    @staticmethod
    def open(
        path: str,
        *,
        create: bool = False,
        reset: bool = False,
        dimensions: int | None = None,
        model_name: str | None = None,
        quantized_scan: bool = False,
    ) -> VectorIndex:
        """Open the vector index in directory ``path``. ``quantized_scan``: as
        ``set_quantized_scan(True)`` right after opening. Missing ``vectors-meta.toml``
        raises ``FileNotFoundError`` unless ``create``, which writes an empty index of
        ``dimensions`` (1-65535) for ``model_name`` (both required). ``reset=True`` (caller
        holds the write lock) publishes an empty index over whatever is there (missing,
        corrupt or sound), the way to repair an index that cannot be opened. A bad magic,
        version, checksum, size, order or truncation of any file raises
        ``IndexCorruptError``."""
    @staticmethod
    def kernel() -> str:
        """The dot-product kernel used on this CPU: ``avx512``, ``avx2``, ``neon`` or
        ``scalar`` (``KBDB_VECTOR_KERNEL`` forces an available one)."""
    @staticmethod
    def q8_kernel() -> str:
        """The int8 kernel of the quantized scan on this CPU: ``avx512vnni`` (four rows
        at a time), ``avx512vnni-row`` (one row at a time, first on AMD Zen 4), ``avx2``,
        ``neon`` or ``scalar`` (``KBDB_Q8_KERNEL`` forces an available one)."""
    @staticmethod
    def q8_candidates(limit: int) -> int:
        """How many candidates a quantized search for ``limit`` results rescores."""
    @property
    def quantized_scan(self) -> bool:
        """Whether searches use ``vectors.q8`` (when current) and writes keep it."""
    def set_quantized_scan(self, on: bool) -> None:
        """Turn the quantized scan on or off for this object. On: a current
        ``vectors.q8`` is used by searches (a damaged one raises ``IndexCorruptError``),
        and every write that replaces ``vectors.idx`` (``write``, compaction) writes a new
        one, as does any side write while it is missing or stale. Off: searches scan
        float32 only, and a write that replaces ``vectors.idx`` removes ``vectors.q8``."""
    @property
    def quantized_ready(self) -> bool:
        """Whether the current snapshot scans ``vectors.q8``."""
    def q8_status(self) -> str:
        """``"current"``, ``"stale"`` (built from another ``vectors.idx``: ignored) or
        ``"missing"``; raises ``IndexCorruptError`` when the file is damaged."""
    def ensure_quantized(self) -> bool:
        """Build ``vectors.q8`` now if the quantized scan is on and it is missing or stale
        (caller holds the write lock). True if it built one."""
    def reload(self) -> bool:
        """Pick up a newer ``vectors-meta.toml`` (or ``vectors.q8``) written by another
        process. True if the snapshot changed."""
    @property
    def dimensions(self) -> int: ...
    @property
    def model_name(self) -> str:
        """The embedding model the vectors came from (stale detection compares it)."""
    @property
    def count(self) -> int:
        """Live vectors (the meta file's ``section_count``)."""
    @property
    def watermark(self) -> int:
        """The store change-log ``seq`` this index has applied."""
    @property
    def last_built(self) -> str:
        """ISO 8601 UTC time of the last full ``write`` (or creation)."""
    @property
    def generation(self) -> int:
        """+1 per publish."""
    @property
    def side_count(self) -> int:
        """Appends + tombstones not yet compacted into ``vectors.idx``."""
    def size_bytes(self) -> int:
        """Bytes of the files of the current snapshot, ``vectors-meta.toml`` included."""
    def append(self, kbids: Sequence[str], vectors: _Float32, *, watermark: int) -> None:
        """Learn-time additions: ``vectors`` holds ``len(kbids) * dimensions`` float32s,
        row by row. An added kbid replaces its older vector. Rewrites the append file,
        then publishes the meta file with ``watermark``; compacts when the side files hold
        more than 10% of ``vectors.idx`` (at least 1024, at most 10 000 records).

        A malformed or repeated kbid, a wrong length, a NaN or infinite component or a
        ``watermark`` above 2**63-1 raise ``InvalidArgumentError`` and change nothing."""
    def delete(self, kbids: Sequence[str], *, watermark: int) -> None:
        """Learn-time removals (retired sections): their vectors stop being live.
        Unknown kbids are ignored. Publishes with ``watermark``; may compact."""
    def write(
        self,
        kbids: Sequence[str],
        vectors: _Float32,
        *,
        model_name: str,
        watermark: int,
        dimensions: int | None = None,
    ) -> None:
        """Replace the whole index (a rebuild, after all embeddings are computed): a new
        sorted ``vectors.idx``, no side files, ``model_name``, ``watermark`` and
        ``last_built`` now. ``dimensions`` defaults to the current ones; give it when the
        model changes. Atomic: readers and a crash see the old index or the new one.
        Works when the current files are corrupt."""
    def compact(self, *, force: bool = False) -> bool:
        """Fold the side files into a new ``vectors.idx`` when past the threshold, or
        whenever there are any with ``force``. True if it compacted. Results do not
        change."""
    def get(self, kbids: Sequence[str]) -> list[bytes | None]:
        """The stored float32 vector (native byte order; ``numpy.frombuffer(b,
        numpy.float32)``) of each kbid, ``None`` when absent or deleted."""
    def kbids(self) -> list[str]:
        """Every live kbid, ascending."""
    def search(
        self,
        query: _Float32,
        *,
        limit: int = 10,
        allow: Sequence[str] | None = None,
        threads: int = 0,
        exact: bool = False,
        candidates: int | None = None,
    ) -> tuple[list[str], list[float]]:
        """Top-``limit`` by dot product over every live vector: ``(kbids,
        scores)``, best first, ties broken by kbid. Exact, except with the quantized scan
        on and ``vectors.q8`` current: then the int8 copy picks ``candidates`` records
        (default ``q8_candidates(limit)``), rescored exactly (returned scores are exact
        float32 ones); ``exact=True`` forces the float32 scan. ``allow`` restricts to those kbids
        (unknown ones are ignored). ``threads``: 0 = all cores (rayon, or
        ``RAYON_NUM_THREADS``), 1 = the calling thread only, n = a pool of n; small
        indexes (< 16 384 vectors) always scan on the calling thread.

        A query of the wrong length raises ``InvalidArgumentError`` (dimension mismatch),
        as do a NaN or infinite component, ``limit`` < 0, ``threads`` < 0 and a malformed
        kbid."""
    def search_many(
        self,
        queries: _Float32,
        *,
        limit: int = 10,
        allow: Sequence[str] | None = None,
        threads: int = 0,
        exact: bool = False,
        candidates: int | None = None,
    ) -> list[tuple[list[str], list[float]]]:
        """``search`` for several queries in one pass: ``queries`` holds whole query vectors
        back to back (a ``(q, dimensions)`` float32 array, or its bytes). Element ``i`` is
        exactly ``search(queries[i], ...)`` (same kbids, bit-identical scores, ties by
        kbid, the quantized path included), but every stored vector is read once for all
        the queries, so a few queries cost about one scan. A length that is not a whole
        number of vectors raises ``InvalidArgumentError``; no queries give ``[]``."""
    def stream_read(self, *, threads: int = 0) -> int:
        """Read every stored byte once (an XOR of all 64-bit words, returned so the reads
        happen), on ``threads`` as in ``search``: a pure streaming read of the same mapped
        pages, the memory-bandwidth yardstick of ``benches/bench_vector_scan.py``."""
    def verify(self) -> list[str]:
        """Re-read every file from disk (not this object's snapshot) and check checksums,
        sizes, order, counts and that every component is finite, and ``vectors.q8`` when
        present; returns the problems (empty when sound)."""

NEARDUP_PARAMS: str  # the kbdb.neardup.PARAMS the signer's seeds and tables were made for
NEARDUP_UNICODE: str  # the Unicode version of its str.lower and \w tables

def neardup_band_keys(texts: Sequence[str]) -> list[bytes | None]:
    """Band keys of each text (lower-cased word 2-shingles, 100 MinHash values, 20 bands):
    ``8 * 20`` bytes of little-endian uint64, ``None`` for a text without word tokens.
    Parallel (rayon), without the GIL. Lone surrogates act as separators, as in Python."""

def neardup_shingles(texts: Sequence[str]) -> list[bytes]:
    """The sorted, distinct shingle hashes of each text, little-endian uint64 bytes."""

def neardup_tokens(text: str) -> list[str]:
    """The tokens the signer hashes: ``re.findall(r"\\w+", text.lower())`` of Python 3.11."""
