"""The systems the benchmarks compare, behind one small interface.

Each system indexes BEIR documents (``title`` + ``text``) and answers a query with BEIR ids,
best first. ``prepare`` does the per-query work that is not search proper (tokenizing,
parsing), so that ``search_prepared`` times the engine call alone.

- ``kbdb``: the knowledge base through :meth:`KnowledgeBase.search` (the product path:
  strict-then-relaxed BM25F, hydration, snippets). Its engine call alone is
  :class:`KbdbEngine`.
- ``bm25s``: ``bm25s.BM25`` (method ``lucene``, k1=1.5, b=0.75, its defaults) over
  ``bm25s.tokenize`` with English stop words and the PyStemmer English stemmer, on
  ``title + " " + text``, as in bm25s's own BEIR benchmark (another ``language``: its
  bm25s stop words and PyStemmer stemmer). ``retrieve`` runs with
  ``n_threads=1`` unless told otherwise; bm25s then starts a one-worker thread pool per
  call (about 1.5 ms a query here), and ``n_threads=0`` is its path on the caller's thread.
- ``tantivy``: tantivy-py, one ``en_stem`` text field holding ``title + " " + text`` (BM25
  flat, k1=1.2, b=0.75 fixed by tantivy), disjunctive query over the query's words.
- ``rank-bm25``: ``BM25Okapi`` (k1=1.5, b=0.75) on the bm25s tokens.

A peer that cannot be imported is reported as ``not installed``, never dropped.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbdb.evaluation.beir import BeirDoc

_WORD = re.compile(r"\w+")


class NotInstalled(Exception):
    """A peer's package is missing."""


def _flat(doc: BeirDoc) -> str:
    return f"{doc.title} {doc.text}".strip()


class Bm25s:
    name = "bm25s"

    def __init__(self, n_threads: int = 1, language: str = "english") -> None:
        try:
            import bm25s
            import Stemmer
        except ImportError as e:
            raise NotInstalled(str(e)) from None
        self.n_threads = n_threads
        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer(language)
        # bm25s names its lists by language ("en" is its 33 Lucene words, as "english").
        self._stopwords = "en" if language == "english" else language
        self._ids: list[str] = []
        self._retriever: Any = None

    def tokenize(self, texts: list[str]) -> Any:
        return self._bm25s.tokenize(
            texts, stopwords=self._stopwords, stemmer=self._stemmer, show_progress=False
        )

    def index(self, docs: Sequence[BeirDoc]) -> None:
        self._ids = [d.id for d in docs]
        self._retriever = self._bm25s.BM25()
        self._retriever.index(self.tokenize([_flat(d) for d in docs]), show_progress=False)

    def index_tokens(self, tokens: Any) -> None:
        """``bm25s.BM25().index`` alone on pre-tokenized text."""
        self._retriever = self._bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)

    def prepare(self, query: str) -> Any:
        return self._bm25s.tokenize(
            query,
            stopwords=self._stopwords,
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )

    def search_prepared(self, prepared: Any, k: int) -> list[str]:
        if not prepared or not prepared[0]:
            return []
        docs, scores = self._retriever.retrieve(
            prepared, k=min(k, len(self._ids)), show_progress=False, n_threads=self.n_threads
        )
        return [self._ids[i] for i, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def search(self, query: str, k: int) -> list[str]:
        return self.search_prepared(self.prepare(query), k)


# A CJK run (Han, kana, Hangul) or a word of other letters and digits.
_CJK_OR_WORD = re.compile(
    r"[\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3041-\u30ff\u3130-\u318f"
    r"\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+|[^\W_]+"
)
_CJK_CHAR = re.compile(
    r"[\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3041-\u30ff\u3130-\u318f"
    r"\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
)


class Bm25sCjk(Bm25s):
    """bm25s over the tokens of Lucene's ``CJKAnalyzer``: a run of CJK characters as its
    overlapping bigrams (one character alone as itself), other words lowercased, without
    the English stop words, stemmed by PyStemmer English. bm25s's own tokenizer keeps a
    whole CJK run as one token, which no query matches unless it is the same run."""

    name = "bm25s-cjk"

    def __init__(self, n_threads: int = 1) -> None:
        super().__init__(n_threads, language="english")
        from bm25s.stopwords import STOPWORDS_EN

        self._stop = frozenset(STOPWORDS_EN)

    def _tokens(self, text: str) -> list[str]:
        out: list[str] = []
        for run in _CJK_OR_WORD.findall(text.lower()):
            if _CJK_CHAR.match(run):
                out.extend(
                    [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
                )
            elif run not in self._stop:
                out.append(self._stemmer.stemWord(run))
        return out

    def tokenize(self, texts: list[str]) -> Any:
        return [self._tokens(t) for t in texts]

    def prepare(self, query: str) -> Any:
        return [self._tokens(query)]


class Tantivy:
    name = "tantivy"

    def __init__(self) -> None:
        try:
            import tantivy
        except ImportError as e:
            raise NotInstalled(str(e)) from None
        self._tantivy = tantivy
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-tantivy-")
        self._index: Any = None
        self._searcher: Any = None

    def index(self, docs: Sequence[BeirDoc]) -> None:
        t = self._tantivy
        sb = t.SchemaBuilder()
        sb.add_text_field("id", stored=True, tokenizer_name="raw")
        sb.add_text_field("text", stored=False, tokenizer_name="en_stem")
        self._index = t.Index(sb.build(), path=self._tmp.name)
        writer = self._index.writer(heap_size=256_000_000, num_threads=1)
        for d in docs:
            writer.add_document(t.Document(id=d.id, text=_flat(d)))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()
        self._searcher = self._index.searcher()

    def prepare(self, query: str) -> Any:
        words = " ".join(_WORD.findall(query))
        if not words:
            return None
        parsed, _errors = self._index.parse_query_lenient(words, ["text"])
        return parsed

    def search_prepared(self, prepared: Any, k: int) -> list[str]:
        if prepared is None:
            return []
        hits = self._searcher.search(prepared, k).hits
        return [self._searcher.doc(addr)["id"][0] for _, addr in hits]

    def search(self, query: str, k: int) -> list[str]:
        return self.search_prepared(self.prepare(query), k)


class RankBm25:
    name = "rank-bm25"

    def __init__(self) -> None:
        try:
            import bm25s
            import numpy as np
            import rank_bm25
            import Stemmer
        except ImportError as e:
            raise NotInstalled(str(e)) from None
        self._np = np
        self._rank_bm25 = rank_bm25
        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self._ids: list[str] = []
        self._model: Any = None

    def _tokens(self, texts: list[str]) -> list[list[str]]:
        out: list[list[str]] = self._bm25s.tokenize(
            texts, stopwords="en", stemmer=self._stemmer, return_ids=False, show_progress=False
        )
        return out

    def index(self, docs: Sequence[BeirDoc]) -> None:
        self._ids = [d.id for d in docs]
        self._model = self._rank_bm25.BM25Okapi(self._tokens([_flat(d) for d in docs]))

    def prepare(self, query: str) -> list[str]:
        return self._tokens([query])[0]

    def search_prepared(self, prepared: list[str], k: int) -> list[str]:
        if not prepared:
            return []
        scores = self._model.get_scores(prepared)
        top = self._np.argsort(-scores, kind="stable")[:k]
        return [self._ids[i] for i in top if scores[i] > 0]

    def search(self, query: str, k: int) -> list[str]:
        return self.search_prepared(self.prepare(query), k)


PEERS = (Bm25s, Tantivy, RankBm25)


def load_peers(names: Sequence[str] | None = None) -> tuple[list[Any], dict[str, str]]:
    """Instantiate the peers; returns ``(available, {name: "not installed (why)"})``."""
    ok: list[Any] = []
    missing: dict[str, str] = {}
    for cls in PEERS:
        if names is not None and cls.name not in names:
            continue
        try:
            ok.append(cls())
        except NotInstalled as e:
            missing[cls.name] = f"not installed ({e})"
    return ok, missing


class Kbdb:
    """kbdb through the facade, in a temporary knowledge base."""

    name = "kbdb"

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        from kbdb import KnowledgeBase
        from kbdb.config import set_value

        self._tmp = tempfile.TemporaryDirectory(prefix="bench-kbdb-")
        kb = KnowledgeBase.init(Path(self._tmp.name))
        for key, value in (settings or {}).items():
            set_value(kb.path / "worker.toml", key, value)
        kb.close()
        self.kb = KnowledgeBase.open(Path(self._tmp.name))
        self._known: set[str] = set()
        self.sections = 0

    def index(self, docs: Sequence[BeirDoc]) -> None:
        from kbdb.evaluation.run import learn_corpus

        self._known = {d.id for d in docs}
        _, self.sections = learn_corpus(self.kb, docs)

    def prepare(self, query: str) -> str:
        return query

    def search_prepared(self, prepared: str, k: int) -> list[str]:
        from kbdb.evaluation.run import to_beir_ids

        res = self.kb.search(prepared, limit=k)
        return to_beir_ids((it.docids for it in res.items), self._known)

    def search(self, query: str, k: int) -> list[str]:
        return self.search_prepared(query, k)

    def close(self) -> None:
        self.kb.close()
        self._tmp.cleanup()


class KbdbEngine:
    """The Rust ``Index.search`` call alone, on clauses parsed beforehand by the same
    ``parse_query`` the facade uses, with the knowledge base's BM25F parameters.

    ``require_all=False`` is one relaxed (any-term) BM25F ranking, the same kind of
    ranking bm25s computes. ``strict_then_relaxed`` mirrors the facade's two calls.
    """

    name = "kbdb engine"

    def __init__(self, kb: Kbdb, *, strict_then_relaxed: bool = False) -> None:
        from kbdb.search.query import parse_query

        self._kb = kb
        self._parse = parse_query
        self._index = kb.kb.context.index.core
        self._analyzer = kb.kb.context.index.analyzer
        self._synonyms = kb.kb.context.synonyms()
        self._params = kb.kb.context.searcher().bm25f_params()
        self._query_tf_k3 = kb.kb.config.search.query_tf_k3
        self.strict_then_relaxed = strict_then_relaxed
        if strict_then_relaxed:
            self.name = "kbdb engine (strict→relaxed)"
        self._docids = self._kbid_docids()

    def _kbid_docids(self) -> dict[str, tuple[str, ...]]:
        from kbdb.store import queries as q

        with self._kb.kb.context.db.read() as conn:
            kbids = [r[0] for batch in q.iter_live_index_rows(conn) for r in batch]
            docids = q.docids_of(conn, kbids)
        return {k: tuple(v) for k, v in docids.items()}

    def prepare(self, query: str) -> Any:
        return self._parse(query, self._analyzer, self._synonyms, self._query_tf_k3)

    def search_prepared(self, parsed: Any, k: int) -> list[str]:
        return self.ranked_kbids(parsed, k)

    def ranked_kbids(self, parsed: Any, k: int) -> list[str]:
        if parsed.empty:
            return []
        if not self.strict_then_relaxed:
            return list(
                self._index.search(parsed.clauses, require_all=False, limit=k, **self._params).kbids
            )
        hits = list(
            self._index.search(
                parsed.clauses, phrases=parsed.phrases, require_all=True, limit=k, **self._params
            ).kbids
        )
        if len(hits) < k:
            seen = set(hits)
            loose = self._index.search(parsed.clauses, require_all=False, limit=k, **self._params)
            hits += [h for h in loose.kbids if h not in seen][: k - len(hits)]
        return hits

    def search(self, query: str, k: int) -> list[str]:
        from kbdb.evaluation.run import to_beir_ids

        kbids = self.ranked_kbids(self.prepare(query), k)
        return to_beir_ids((self._docids.get(h, ()) for h in kbids), self._kb._known)
