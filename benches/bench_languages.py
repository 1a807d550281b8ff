"""Navigation in other languages: heading queries on translations of The Rust Programming
Language, kbdb with the book's language against bm25s with the same language.

Corpora (``benches/data/rust-book-<code>/``, the Markdown ``src/`` of a translation; their
README names the repository, commit and license):

- ``de``: the German translation (rust-lang-de/rustbook-de), ``index.language = german``;
- ``es``: the Spanish translation (RustLangES/rust-book-es), ``index.language = spanish``;
- ``zh``: the simplified Chinese translation (KaiserY/trpl-zh-cn), the default language:
  Chinese is indexed as character bigrams in every language;
- ``en``: the English original (``corpora/rust-book``, the shared corpora), as the
  reference: the same queries and systems in the default language.

Queries: every H1, H2 and H3 heading of the book outside fenced code, reduced to its text
(links to their text, HTML tags and backticks removed, whitespace squashed), that names
exactly one section of the book: a heading that recurs ("Zusammenfassung") is not a
known item and is left out. The answer is the section that the heading opens, in its file;
kbdb splits Markdown at those headings, so the answer is one kbdb section.

Systems, over the same sections (the knowledge base's live sections):

- **kbdb**: the book learned by ``KnowledgeBase.learn_path`` into a fresh knowledge base of
  the book's language; ``kb.search(query, mode="lexical", limit=10)``.
- **bm25s**: ``peers.Bm25s`` with the book's language: bm25s's stop words of that language
  (NLTK's lists) and the PyStemmer Snowball stemmer of that language; method lucene,
  k1=1.5, b=0.75; one document per section, ``heading + " " + content`` (the text a kbdb
  section holds; kbdb also indexes the file name and the headings above in its path field).
  For Chinese, ``peers.Bm25sCjk``: the same bm25s over Lucene ``CJKAnalyzer`` tokens
  (character bigrams), since bm25s's own tokenizer keeps a whole run of Chinese as one
  token.

Metrics: **success@1** (the first result is the answer; the headline), MRR@10 (1/rank of
the answer among the first 10 results), and file success@1 (the first result lies in the
answer's file).

Diagnosis (secondary rows): kbdb again with ``search.w_path = 0``, the path field (file
name, document title, the headings above a section) weighing nothing. A chapter's heading
is also in the path field of every section below it, so with the default weight those
sections compete with the chapter's own section for the chapter's title; this row shows
how much of the misses that accounts for. And kbdb with ``search.heading_boost = 0``: the
ranking without the boost of a section whose whole heading the query is, which answers
those misses without weakening the path field.

    python benches/bench_languages.py [--book de --book es --book zh --book en] [--show 20]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_navigation import Tally, code_state, corpus_checksum  # noqa: E402
from common import CORPORA, ROOT, print_table, write_result  # noqa: E402

DATA = ROOT / "benches" / "data"
K = 10
# Book code -> (its src/ folder, kbdb index.language, the peer's language: PyStemmer and
# bm25s stop words, or "cjk" for bigrams).
BOOKS = {
    "de": (DATA / "rust-book-de" / "src", "german", "german"),
    "es": (DATA / "rust-book-es" / "src", "spanish", "spanish"),
    "zh": (DATA / "rust-book-zh" / "src", "english", "cjk"),
    "en": (CORPORA / "rust-book" / "src", "english", "english"),
}

# The diagnosis rows: result key -> the [search] settings kbdb runs with.
DIAGNOSIS: dict[str, dict[str, float]] = {
    "kbdb_w_path_0": {"w_path": 0.0},
    "kbdb_heading_boost_0": {"heading_boost": 0.0},
}

_HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*#*\s*$")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"<[^>]*>")


def reduce(heading: str) -> str:
    """A heading as a query: links to their text, tags and backticks removed, spaces
    squashed."""
    text = _TAG.sub(" ", _LINK.sub(r"\1", heading)).replace("`", "")
    return " ".join(text.split())


@dataclass(frozen=True)
class Query:
    text: str
    file: str  # the file holding the heading (the section's docid)


def heading_queries(src: Path) -> tuple[list[Query], int]:
    """The headings (H1–H3, outside fenced code) that occur once in the book, in file
    order; and how many distinct recurring ones were left out."""
    found: list[Query] = []
    for path in sorted(src.rglob("*.md")):
        fence = False
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith(("```", "~~~")):
                fence = not fence
                continue
            m = None if fence else _HEADING.match(line)
            if m is not None and (text := reduce(m.group(2))):
                found.append(Query(text, path.relative_to(src).as_posix()))
    counts = Counter(q.text for q in found)
    return [q for q in found if counts[q.text] == 1], sum(n > 1 for n in counts.values())


@dataclass
class Book:
    """A book learned into a fresh knowledge base, its sections and its answers."""

    kb: Any
    sections: list[tuple[str, str, str]]  # kbid, heading, content
    files: dict[str, tuple[str, ...]]  # kbid -> docids
    answers: dict[Query, str]  # query -> kbid
    learn_s: float


def learn_book(src: Path, language: str, queries: list[Query], tmp: Path) -> Book:
    from kbdb import KnowledgeBase
    from kbdb.store import queries as q

    t0 = time.perf_counter()
    kb = KnowledgeBase.init(tmp, language=language)
    kb.learn_path(src, notable_only=True)
    learn_s = time.perf_counter() - t0
    with kb.context.db.read() as conn:
        rows = [r for batch in q.iter_live_index_rows(conn) for r in batch]
        links = conn.execute("SELECT kbid, docid FROM document_sections WHERE live").fetchall()
    files: dict[str, list[str]] = {}
    for kbid, docid in links:
        files.setdefault(kbid, []).append(docid)
    by_place = {(reduce(r[1]), d): r[0] for r in rows for d in files.get(r[0], ())}
    answers = {qu: by_place[(qu.text, qu.file)] for qu in queries if (qu.text, qu.file) in by_place}
    return Book(
        kb,
        [(r[0], r[1], r[2]) for r in rows],
        {k: tuple(v) for k, v in files.items()},
        answers,
        learn_s,
    )


def search_all(kb: Any, queries: Iterable[Query]) -> dict[Query, list[str]]:
    """The kbids of ``kb.search(query, mode="lexical", limit=K)`` per query."""
    return {
        qu: [it.kbid for it in kb.search(qu.text, mode="lexical", limit=K).items] for qu in queries
    }


def with_search(kbdir: Path, language: str, **settings: float) -> Any:
    """The knowledge base in ``kbdir`` opened with other ``[search]`` settings (the
    diagnosis rows)."""
    from kbdb import KnowledgeBase
    from kbdb.config import Config, IndexConfig, SearchConfig

    config = Config(search=SearchConfig(**settings), index=IndexConfig(language=language))
    return KnowledgeBase.open(kbdir, config=config)


def score(
    book: Book, ranked: dict[Query, list[str]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """success@1, MRR@10 and file success@1 of ranked kbids per query; the misses."""
    section, in_file = Tally(), Tally()
    misses: list[dict[str, Any]] = []
    for qu, answer in book.answers.items():
        kbids = ranked[qu][:K]
        rank = kbids.index(answer) + 1 if answer in kbids else None
        section.add(rank)
        in_file.add(1 if kbids and qu.file in book.files.get(kbids[0], ()) else None)
        if rank != 1:
            misses.append({"query": qu.text, "file": qu.file, "rank": rank, "first": kbids[:1]})
    out = {**section.summary(), "file_success@1": in_file.summary()["success@1"]}
    return out, misses


def run_book(code: str) -> dict[str, Any]:
    from peers import Bm25s, Bm25sCjk, NotInstalled

    src, language, stem_language = BOOKS[code]
    queries, recurring = heading_queries(src)
    with tempfile.TemporaryDirectory(prefix=f"bench-lang-{code}-") as tmp:
        book = learn_book(src, language, queries, Path(tmp))
        heading_of = {k: h for k, h, _ in book.sections}
        t0 = time.perf_counter()
        kbdb_ranked = search_all(book.kb, book.answers)
        kbdb_s = time.perf_counter() - t0
        kb_scores, kb_misses = score(book, kbdb_ranked)
        diagnosis: dict[str, dict[str, Any]] = {}
        for label, settings in DIAGNOSIS.items():
            other = with_search(Path(tmp), language, **settings)
            diagnosis[label], _ = score(book, search_all(other, book.answers))
            other.close()
        try:
            peer = Bm25sCjk() if stem_language == "cjk" else Bm25s(language=stem_language)
        except NotInstalled as e:
            bm: dict[str, Any] = {"status": f"not installed ({e})"}
            bm_misses: list[dict[str, Any]] = []
        else:
            ids = [k for k, _, _ in book.sections]
            peer._ids = ids
            peer.index_tokens(peer.tokenize([f"{h} {c}".strip() for _, h, c in book.sections]))
            bm_ranked = {qu: peer.search(qu.text, K) for qu in book.answers}
            bm, bm_misses = score(book, bm_ranked)
        analyzer = book.kb.stats().analyzer
        book.kb.close()
    both = {m["query"] for m in kb_misses} & {m["query"] for m in bm_misses}
    for m in kb_misses:
        m["first_heading"] = heading_of.get(m["first"][0]) if m["first"] else None
        m["bm25s_also_missed"] = m["query"] in both
    return {
        "book": src.relative_to(src.parents[1]).as_posix(),
        "language": language,
        "analyzer": analyzer,
        "files": len(list(src.rglob("*.md"))),
        "file_list_sha256": corpus_checksum(src, sorted(src.rglob("*.md"))),
        "sections": len(book.sections),
        "queries": len(book.answers),
        "recurring_headings_left_out": recurring,
        "kbdb": {**kb_scores, "learn_s": book.learn_s, "search_s": kbdb_s},
        **diagnosis,
        "bm25s": bm,
        "kbdb_misses": kb_misses,
        "bm25s_misses": bm_misses,
    }


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--book", action="append", choices=sorted(BOOKS), help="default: all")
    ap.add_argument("--show", type=int, default=20, help="kbdb misses to print per book")
    args = ap.parse_args()
    t_start = time.perf_counter()
    runs = {code: run_book(code) for code in args.book or ("de", "es", "zh", "en")}
    rows = []
    for code, r in runs.items():
        a, b = r["kbdb"], r["bm25s"]
        rows.append(
            [
                f"{code} ({r['language']})",
                r["queries"],
                a["success@1"],
                b.get("success@1", b.get("status")),
                a["mrr@10"],
                b.get("mrr@10"),
                a["file_success@1"],
                b.get("file_success@1"),
                r["kbdb_w_path_0"]["success@1"],
                r["kbdb_heading_boost_0"]["success@1"],
            ]
        )
    print_table(
        "Rust book translations: heading queries, the section that the heading opens",
        [
            "book",
            "n",
            "kbdb S@1",
            "bm25s S@1",
            "kbdb MRR@10",
            "bm25s MRR@10",
            "kbdb file S@1",
            "bm25s file S@1",
            "kbdb S@1, w_path 0",
            "kbdb S@1, heading_boost 0",
        ],
        rows,
    )
    for code, r in runs.items():
        misses = r["kbdb_misses"]
        print(f"\n{code}: kbdb misses {len(misses)} (showing {min(len(misses), args.show)})")
        for m in misses[: args.show]:
            rank = m["rank"] if m["rank"] is not None else ">10"
            also = " (bm25s missed too)" if m["bm25s_also_missed"] else ""
            print(f"  {m['query']!r:60} at {rank}; first: {m['first_heading']!r}{also}")
    write_result(
        "languages",
        {
            "books": runs,
            "metrics": {
                "k": K,
                "success@1": "the first result is the section that the heading opens",
                "mrr@10": "1/rank of that section among the first 10 results; 0 if absent",
                "file_success@1": "the first result is a section of the heading's file",
                "kbdb_w_path_0": "kbdb with search.w_path = 0 (diagnosis: the path field)",
                "kbdb_heading_boost_0": "kbdb with search.heading_boost = 0 (without the"
                " boost of a section whose whole heading the query is)",
            },
            "code": code_state(),
            "wall_s": time.perf_counter() - t_start,
            "headline": [
                {
                    "what": f"Rust book ({r['language']}), {r['queries']} heading queries: "
                    "success@1 / MRR@10",
                    "kbdb": f"{_f(r['kbdb']['success@1'])} / {_f(r['kbdb']['mrr@10'])}",
                    "peers": (
                        f"bm25s {_f(r['bm25s']['success@1'])} / {_f(r['bm25s']['mrr@10'])}"
                        if "status" not in r["bm25s"]
                        else f"bm25s {r['bm25s']['status']}"
                    ),
                }
                for r in runs.values()
            ],
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
