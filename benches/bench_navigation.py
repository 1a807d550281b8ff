"""BENCHMARKS.md §1b, navigation: known-item queries on the docker CLI reference.

The corpus is ``corpora/docker-cli`` (the docker CLI reference: ``commandline/*.md`` plus a
few top-level pages). Every command page under ``commandline/`` gives two known-item
queries whose target is that page (file):

- **name**: the command's name from the file name, ``container_ls.md`` -> ``docker
  container ls``, ``swarm_join-token.md`` -> ``docker swarm join-token``, ``docker.md`` ->
  ``docker`` (the base command). ``index.md`` is the section's landing page, not a command,
  and gives no query.
- **description**: the first sentence of the page's description, the first prose paragraph
  after the H1 (front matter, blank lines and HTML comments such as
  ``<!---MARKER_GEN_START-->`` skipped; Markdown links reduced to their text). A page whose
  first block after the H1 is not prose (a table, a heading, a list, code) has no
  description and gives no description query. Alias pages share their description
  (``ps.md`` and ``container_ls.md`` both say "List containers"): the query is kept once per
  page, and any page with exactly that description counts as a hit.

Systems, both over the same files (every ``*.md`` of the tree):

- **kbdb**: the whole tree learned by ``KnowledgeBase.learn_path`` into a fresh temporary
  knowledge base; ``kb.search(query, mode="lexical", limit=10)``, paged on with ``offset``
  until the results cover 10 distinct pages. A result belongs to every page in its
  ``docids`` (identical sections are stored once and carry the docids of all the pages that
  hold them), so a section shared by two alias pages is a hit for either.
- **bm25s**: ``bm25s.BM25`` (method lucene, k1=1.5, b=0.75, its defaults) over whole files,
  one document per file, tokenized with the 33 Lucene English stop words (bm25s ``"en"``)
  and the PyStemmer Snowball English stemmer (``peers.Bm25s``).

Metrics, per query kind:

- **success@1**: the first result belongs to a target page.
- **MRR@10** (the headline figure): 1/rank of the first target page among the first 10
  *distinct pages* in result order; 0 when it is not among them. kbdb's section ranking is
  turned into a page ranking by giving each page the rank of its first section; the pages
  of one section share that rank (ties counted in the query's favour, as success@1 does).
  bm25s ranks files, so its page rank is its result position.
- **MRR@10 by section position** (kbdb only, secondary): 1/position of the first section of
  a target page among the first 10 results, which is what a reader of ``kbdb search``'s
  default ten rows sees.
- **docid order** (kbdb only, secondary): the pages of one section take consecutive ranks
  in the order of its docids instead of sharing one (``kbdb eval``'s ``to_beir_ids``), so a
  section shared by alias pages is a hit at 1 for the alphabetically first one only.
- **alias-tolerant success@1 / MRR@10** (secondary, both systems): a name query also hits
  every page whose ``Aliases`` line lists the queried command (``docker ps`` is
  documented by ``ps.md`` and ``container_ls.md`` alike).

    python benches/bench_navigation.py [--corpus DIR] [--show 30]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import CORPORA, print_table, write_result  # noqa: E402

CORPUS = CORPORA / "docker-cli"
K = 10
NOT_COMMANDS = frozenset({"index.md"})  # the section's landing page

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])")
_ALIASES = re.compile(r"`(docker(?: [a-z0-9-]+)*)`")
_NOT_PROSE = ("#", "|", "```", "~~~", "- ", "* ", "+ ", ">", "<", "    ", "\t")


@dataclass(frozen=True)
class Query:
    kind: str  # "name" or "description"
    text: str
    page: str  # the page the query was made from (relative path)
    targets: frozenset[str]  # pages that count as a hit
    alias_targets: frozenset[str] = frozenset()  # name queries: pages listing it as an alias


# -- building the queries --------------------------------------------------------------


def command_name(filename: str) -> str:
    """``container_ls.md`` -> ``docker container ls``; ``docker.md`` -> ``docker``."""
    stem = filename.removesuffix(".md")
    if stem == "docker":
        return "docker"
    return "docker " + " ".join(stem.split("_"))


def _strip_front_matter(lines: list[str]) -> list[str]:
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                return lines[i + 1 :]
    return lines


def _without_comments(lines: Iterable[str]) -> list[str]:
    """The lines with HTML comments removed (one-line and multi-line)."""
    out: list[str] = []
    inside = False
    for line in lines:
        if inside:
            if "-->" in line:
                inside = False
                rest = line.split("-->", 1)[1]
                out.append(rest)
            continue
        while "<!--" in line:
            head, tail = line.split("<!--", 1)
            if "-->" in tail:
                line = head + tail.split("-->", 1)[1]
            else:
                line = head
                inside = True
                break
        out.append(line)
    return out


def description(markdown: str) -> str | None:
    """The first sentence of the first prose paragraph after the H1, or None."""
    lines = _strip_front_matter(markdown.splitlines())
    h1 = next((i for i, ln in enumerate(lines) if ln.startswith("#")), None)
    if h1 is None:
        return None
    paragraph: list[str] = []
    for line in _without_comments(lines[h1 + 1 :]):
        text = line.strip()
        if not text:
            if paragraph:
                break
            continue
        if not paragraph and (line.startswith(_NOT_PROSE) or text.startswith(_NOT_PROSE)):
            return None  # the first block is a heading, table, list, code or HTML
        if paragraph and text.startswith(_NOT_PROSE):
            break
        paragraph.append(text)
    if not paragraph:
        return None
    prose = _LINK.sub(r"\1", " ".join(paragraph))
    first = _SENTENCE_END.split(prose, maxsplit=1)[0].strip()
    return first or None


def aliases(markdown: str) -> set[str]:
    """The commands listed under the page's ``### Aliases`` heading."""
    m = re.search(r"^#+\s*Aliases\s*\n+(.+)$", markdown, flags=re.MULTILINE)
    return set(_ALIASES.findall(m.group(1))) if m else set()


def build_queries(corpus: Path) -> tuple[list[Query], list[str]]:
    """The name and description queries of the command pages, and the pages without a
    description."""
    pages = sorted(p for p in (corpus / "commandline").glob("*.md") if p.name not in NOT_COMMANDS)
    texts = {f"commandline/{p.name}": p.read_text(encoding="utf-8") for p in pages}
    descs = {rel: description(t) for rel, t in texts.items()}
    alias_of = {rel: aliases(t) for rel, t in texts.items()}
    by_desc: dict[str, set[str]] = {}
    for rel, d in descs.items():
        if d is not None:
            by_desc.setdefault(d, set()).add(rel)
    queries: list[Query] = []
    for rel in texts:
        name = command_name(rel.split("/", 1)[1])
        listed = frozenset(r for r, al in alias_of.items() if name in al) | {rel}
        queries.append(Query("name", name, rel, frozenset({rel}), listed))
    no_desc: list[str] = []
    for rel, d in descs.items():
        if d is None:
            no_desc.append(rel)
        else:
            same = frozenset(by_desc[d])
            queries.append(Query("description", d, rel, same, same))
    return queries, no_desc


def corpus_files(corpus: Path) -> list[Path]:
    """Every Markdown file of the tree (what ``learn_path`` learns)."""
    return sorted(corpus.rglob("*.md"))


def corpus_checksum(corpus: Path, files: Sequence[Path]) -> str:
    """sha256 over the sorted ``relative path<TAB>sha256 of content`` lines."""
    h = hashlib.sha256()
    for p in files:
        rel = p.relative_to(corpus).as_posix()
        h.update(f"{rel}\t{hashlib.sha256(p.read_bytes()).hexdigest()}\n".encode())
    return h.hexdigest()


# -- scoring ---------------------------------------------------------------------------


def page_ranks(groups: Sequence[Sequence[str]], k: int = K) -> dict[str, int]:
    """Rank of each page among the first ``k`` distinct pages of a ranked list of results,
    each result a group of pages (a kbdb section's docids; one file for bm25s). The pages
    of one group share the rank 1 + the number of distinct pages before the group."""
    ranks: dict[str, int] = {}
    for group in groups:
        new = [p for p in group if p not in ranks]
        if not new:
            continue
        rank = len(ranks) + 1
        if rank > k:
            break
        for p in new:
            ranks[p] = rank
    return ranks


def page_ranks_in_docid_order(groups: Sequence[Sequence[str]], k: int = K) -> dict[str, int]:
    """Ranks of the first ``k`` distinct pages with no shared ranks: a result's pages take
    consecutive ranks in the order of its docids (what ``kbdb eval`` does, ``to_beir_ids``),
    so a section shared by alias pages is a hit at 1 for only one of them."""
    ranks: dict[str, int] = {}
    for group in groups:
        for p in group:
            if p not in ranks:
                if len(ranks) >= k:
                    return ranks
                ranks[p] = len(ranks) + 1
    return ranks


def first_rank(ranks: dict[str, int], targets: frozenset[str]) -> int | None:
    found = [ranks[t] for t in targets if t in ranks]
    return min(found) if found else None


def section_rank(
    groups: Sequence[Sequence[str]], targets: frozenset[str], k: int = K
) -> int | None:
    for i, group in enumerate(groups[:k], start=1):
        if targets.intersection(group):
            return i
    return None


@dataclass
class Tally:
    n: int = 0
    hits1: int = 0
    rr: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)

    def add(self, rank: int | None) -> None:
        self.n += 1
        if rank == 1:
            self.hits1 += 1
        if rank is not None:
            self.rr += 1.0 / rank

    def summary(self) -> dict[str, Any]:
        return {
            "queries": self.n,
            "success@1": self.hits1 / self.n if self.n else None,
            "hits@1": self.hits1,
            "mrr@10": self.rr / self.n if self.n else None,
        }


# -- the systems -----------------------------------------------------------------------


class KbdbNav:
    """The tree learned into a fresh temporary knowledge base."""

    name = "kbdb"

    def __init__(self, corpus: Path) -> None:
        from kbdb import KnowledgeBase

        self._tmp = tempfile.TemporaryDirectory(prefix="bench-nav-kbdb-")
        t0 = time.perf_counter()
        self.kb = KnowledgeBase.init(Path(self._tmp.name))
        self.report = self.kb.learn_path(corpus, notable_only=True)
        self.learn_s = time.perf_counter() - t0

    def search(self, query: str) -> tuple[list[tuple[str, ...]], list[Any]]:
        """Results as docid groups, paged until they cover ``K`` distinct pages (or run
        out); also the first page of items (for the failure list)."""
        groups: list[tuple[str, ...]] = []
        first: list[Any] = []
        offset = 0
        seen: set[str] = set()
        while True:
            res = self.kb.search(query, mode="lexical", limit=K, offset=offset)
            if offset == 0:
                first = list(res.items)
            for it in res.items:
                groups.append(tuple(it.docids))
                seen.update(it.docids)
            offset += len(res.items)
            if len(seen) >= K or not res.has_more or not res.items or offset >= 200:
                return groups, first

    def close(self) -> None:
        self.kb.close()
        self._tmp.cleanup()


def _kbdb_params(kb: Any) -> Any:
    """The BM25F parameters in use (a private call: "unknown" if it has moved)."""
    try:
        return kb.context.searcher().bm25f_params()
    except Exception as e:  # noqa: BLE001 - metadata only
        return f"unknown ({type(e).__name__})"


def run_kbdb(corpus: Path, queries: Sequence[Query]) -> dict[str, Any]:
    kb = KbdbNav(corpus)
    tallies: dict[str, dict[str, Tally]] = {}
    failures: list[dict[str, Any]] = []
    shared_top: dict[str, int] = {}
    t0 = time.perf_counter()
    for q in queries:
        groups, first = kb.search(q.text)
        ranks = page_ranks(groups)
        t = tallies.setdefault(
            q.kind, {m: Tally() for m in ("page", "section", "alias", "docid_order")}
        )
        rank = first_rank(ranks, q.targets)
        t["page"].add(rank)
        t["section"].add(section_rank(groups, q.targets))
        t["alias"].add(first_rank(ranks, q.alias_targets))
        t["docid_order"].add(first_rank(page_ranks_in_docid_order(groups), q.targets))
        if rank == 1 and len(groups[0]) > 1:
            shared_top[q.kind] = shared_top.get(q.kind, 0) + 1
        if rank != 1:
            top = first[0] if first else None
            failures.append(
                {
                    "kind": q.kind,
                    "query": q.text,
                    "target": q.page,
                    "target_rank": rank,
                    "first": list(top.docids) if top else [],
                    "first_heading": top.heading if top else None,
                }
            )
    search_s = time.perf_counter() - t0
    learned = kb.report
    out = {
        "learn_s": kb.learn_s,
        "search_s": search_s,
        "documents": learned.documents_added,
        "sections": learned.sections_added + learned.sections_unchanged,
        "params": _kbdb_params(kb.kb),
        "by_kind": {
            kind: {
                **t["page"].summary(),
                "mrr@10_by_section_position": t["section"].summary()["mrr@10"],
                "docid_order": t["docid_order"].summary(),
                "alias_tolerant": t["alias"].summary(),
                "success@1_from_shared_section": shared_top.get(kind, 0),
            }
            for kind, t in tallies.items()
        },
        "failures": failures,
    }
    kb.close()
    return out


def run_bm25s(corpus: Path, files: Sequence[Path], queries: Sequence[Query]) -> dict[str, Any]:
    from kbdb.evaluation.beir import BeirDoc
    from peers import Bm25s, NotInstalled

    try:
        peer = Bm25s()
    except NotInstalled as e:
        return {"status": f"not installed ({e})"}
    docs = [
        BeirDoc(id=p.relative_to(corpus).as_posix(), title="", text=p.read_text(encoding="utf-8"))
        for p in files
    ]
    t0 = time.perf_counter()
    peer.index(docs)
    index_s = time.perf_counter() - t0
    tallies: dict[str, dict[str, Tally]] = {}
    failures: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for q in queries:
        ids = peer.search(q.text, K)
        groups = [(i,) for i in ids]
        ranks = page_ranks(groups)
        t = tallies.setdefault(q.kind, {m: Tally() for m in ("page", "alias")})
        rank = first_rank(ranks, q.targets)
        t["page"].add(rank)
        t["alias"].add(first_rank(ranks, q.alias_targets))
        if rank != 1:
            failures.append(
                {
                    "kind": q.kind,
                    "query": q.text,
                    "target": q.page,
                    "target_rank": rank,
                    "first": ids[:1],
                }
            )
    return {
        "index_s": index_s,
        "search_s": time.perf_counter() - t0,
        "documents": len(docs),
        "params": {
            "method": "lucene",
            "k1": 1.5,
            "b": 0.75,
            "stopwords": "en (33, Lucene)",
            "stemmer": "PyStemmer english",
        },
        "by_kind": {
            kind: {**t["page"].summary(), "alias_tolerant": t["alias"].summary()}
            for kind, t in tallies.items()
        },
        "failures": failures,
    }


# -- main --------------------------------------------------------------------------------


def code_state() -> dict[str, Any]:
    """The commit and whether the ranking code differs from it (it moves between runs)."""
    from common import ROOT

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    changed = git("status", "--porcelain", "--", "python/kbdb", "rust/src")
    return {
        "commit": git("rev-parse", "HEAD") or None,
        "modified_files_under_python_kbdb_and_rust_src": len(changed.splitlines()),
    }


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--show", type=int, default=30, help="failed kbdb name queries to print")
    args = ap.parse_args()
    corpus: Path = args.corpus
    if not (corpus / "commandline").is_dir():
        print(f"bench_navigation: no corpus at {corpus}")
        return 1
    t_start = time.perf_counter()
    files = corpus_files(corpus)
    queries, no_desc = build_queries(corpus)
    kinds = ("name", "description")

    kb = run_kbdb(corpus, queries)
    bm = run_bm25s(corpus, files, queries)
    bm_ok = "status" not in bm

    rows = []
    for kind in kinds:
        a = kb["by_kind"][kind]
        b = bm["by_kind"][kind] if bm_ok else {}
        rows.append(
            [
                kind,
                a["queries"],
                a["success@1"],
                a["mrr@10"],
                b.get("success@1", bm.get("status")),
                b.get("mrr@10"),
                a["mrr@10_by_section_position"],
                a["alias_tolerant"]["success@1"],
                b.get("alias_tolerant", {}).get("success@1"),
            ]
        )
    print_table(
        f"docker-cli navigation: known-item queries, {len(files)} files",
        [
            "queries",
            "n",
            "kbdb S@1",
            "kbdb MRR@10",
            "bm25s S@1",
            "bm25s MRR@10",
            "kbdb MRR@10 (section pos.)",
            "kbdb S@1 (alias)",
            "bm25s S@1 (alias)",
        ],
        rows,
    )
    name_fail = [f for f in kb["failures"] if f["kind"] == "name"]
    shown = min(len(name_fail), args.show)
    print(f"\nkbdb failed name queries: {len(name_fail)} (showing {shown})")
    for f in name_fail[: args.show]:
        first = ", ".join(f["first"]) or "(nothing)"
        rank = f["target_rank"] if f["target_rank"] is not None else ">10"
        print(
            f"  {f['query']!r:38} target {f['target']} at {rank}; first: {first} "
            f"[{f['first_heading']}]"
        )
    if no_desc:
        print(f"\npages without a description (no description query): {len(no_desc)}")
    for kind in kinds:
        shared = kb["by_kind"][kind]["success@1_from_shared_section"]
        if shared:
            d = kb["by_kind"][kind]["docid_order"]
            print(
                f"kbdb {kind}: {shared} of its hits@1 are a section shared by several pages "
                "(identical text stored once), counted for each of them; ranking a shared "
                f"section's pages one after the other in docid order (as `kbdb eval` does) "
                f"gives success@1 {_f(d['success@1'])}, MRR@10 {_f(d['mrr@10'])}"
            )

    def headline_row(kind: str) -> dict[str, str]:
        a = kb["by_kind"][kind]
        # Name queries: alias pages (ps.md, container_ls.md) hold nearly the same text; the
        # alias-tolerant success@1 is the like-for-like figure (see the docstring).
        alias = kind == "name"
        ours = f"{_f(a['success@1'])} / {_f(a['mrr@10'])}"
        if alias:
            ours += f" (alias-tolerant S@1 {_f(a['alias_tolerant']['success@1'])})"
        if bm_ok:
            b = bm["by_kind"][kind]
            peers = f"bm25s (whole files) {_f(b['success@1'])} / {_f(b['mrr@10'])}"
            if alias:
                peers += f" (alias-tolerant S@1 {_f(b['alias_tolerant']['success@1'])})"
        else:
            peers = f"bm25s {bm['status']}"
        return {
            "what": f"docker-cli navigation, {a['queries']} {kind} queries: success@1 / MRR@10",
            "kbdb": ours,
            "peers": peers,
        }

    write_result(
        "navigation",
        {
            "corpus": {
                "path": str(corpus),
                "files": len(files),
                "file_list_sha256": corpus_checksum(corpus, files),
            },
            "queries": {
                "name": sum(q.kind == "name" for q in queries),
                "description": sum(q.kind == "description" for q in queries),
                "pages_without_description": no_desc,
                "description_shared_by_several_pages": sum(
                    q.kind == "description" and len(q.targets) > 1 for q in queries
                ),
                "list": [
                    {
                        "kind": q.kind,
                        "query": q.text,
                        "page": q.page,
                        "targets": sorted(q.targets),
                        "alias_targets": sorted(q.alias_targets),
                    }
                    for q in queries
                ],
            },
            "metrics": {
                "k": K,
                "success@1": "the first result belongs to a target page (kbdb: a target is "
                "among the first section's docids)",
                "mrr@10": "1/rank of the first target among the first 10 distinct pages in "
                "result order (kbdb: pages of one section share its rank); 0 if absent",
                "docid_order": "kbdb: as success@1 and mrr@10, but a section's pages take "
                "consecutive ranks in docid order (kbdb eval's to_beir_ids)",
                "mrr@10_by_section_position": "kbdb: 1/position of the first section of a "
                "target among the first 10 sections",
                "alias_tolerant": "name queries also hit every page whose Aliases line lists "
                "the command",
                "description_targets": "any page whose description is exactly the query",
            },
            "code": code_state(),
            "systems": {"kbdb": kb, "bm25s": bm},
            "wall_s": time.perf_counter() - t_start,
            "headline": [headline_row(k) for k in kinds],
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
