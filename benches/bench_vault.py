"""Vault navigation: note names, aliases and link labels as queries on real Obsidian vaults.

A user of a vault looks a note up by its name, by one of its ``aliases``, or by the words
other notes use when they link to it. This script builds those queries from the vault
itself, with its own small parser (not kbdb's link extraction: the judge stays
independent of the code it judges), and scores kbdb against bm25s over whole files.

**Corpora.** Each ``--vault [LABEL=]DIR`` is a folder of Markdown notes, used for
measurement only and never copied into this repository:

- ``obsidian-help``: the English Obsidian Help vault (173 notes), from
  github.com/obsidianmd/obsidian-help at fa179e91. That repository has no license file,
  so only counts, scores and a few query examples are written here. ``git archive``
  fails on a missing LFS blob, so export the notes one by one::

      R=/work/.mirror/obsidianmd+obsidian-help/repo
      git --git-dir=$R ls-tree -r --name-only HEAD en | grep '\\.md$' | while read -r f; do
          mkdir -p "/tmp/vault/$(dirname "$f")"; git --git-dir=$R show "HEAD:$f" > "/tmp/vault/$f"
      done

- ``foam-docs`` (optional): the ``docs/`` folder of github.com/foambubble/foam (MIT, at
  9f56a235), the documentation of a wikilink note tool, written as a Foam workspace (86
  notes, file names such as ``graph-view``); export its ``*.md`` files the same way
  (``ls-tree … HEAD docs``), with ``docs/`` cut from the written paths.

**Queries**, from every ``*.md`` file outside hidden folders, front matter and code
(fenced blocks, code spans, ``%%comments%%`` and HTML comments) left out:

- **names**: each note's file name without ``.md`` (``Embed files``), answered by it;
- **aliases**: each front-matter ``aliases`` (or ``alias``) entry, a YAML list or a string,
  that is not the note's own name. An alias that is a path (``How to/Embed files``) records
  where the note used to live; nobody types that path, but they may type the old name, so
  its last part (``Embedding files``) is a query of its own set, **old names**, when it
  differs from the note's name and its other aliases;
- **anchors**: the label of every wikilink ``[[Target|label]]`` (also ``[[T#Heading|…]]``,
  ``[[T#^block|…]]``, embeds, and ``\\|`` inside tables) and of every relative Markdown link
  ``[label](target.md#anchor)``, answered by the target note. Targets resolve as Obsidian
  does: by path from the vault root (Markdown links first from the linking note's
  folder), else by unique file name (case-insensitive), else by unique alias. Dropped and
  counted: links to a missing note or to a non-note file, links of a note to itself,
  labels of one character or of digits only or sizes (``100``, ``100x145``: image embeds),
  labels that are the target's own name, title or alias, labels that name another note,
  and labels that point at two different notes. The rest are kept once per (label,
  target).

Queries are compared as their lower-cased words (``graph-view``, ``Graph View`` and
``graph view`` are one query to every tokenizer here). A name, alias or old name that
belongs to two notes is ambiguous and no query.

**Arms**, all over the same files:

- ``kbdb``: the vault learned by ``KnowledgeBase.learn_path`` into a fresh knowledge base
  with the default configuration; ``kb.search(query, mode="lexical")``, paged until the
  results cover 10 distinct notes;
- ``kbdb w_anchor=0``: the same with ``search.w_anchor = 0``, the anchor-text field
  weighing nothing; ``kbdb links off``: with ``learn.links = false``. Each runs only
  when this kbdb's configuration has the key, and is reported as skipped otherwise;
- ``bm25s``: ``peers.Bm25s`` (method lucene, k1=1.5, b=0.75, the 33 Lucene stop words,
  PyStemmer English), one document per file, the file's text as it is (front matter
  included, so a note's aliases are in its text);
- ``bm25s path+file`` (secondary): the same with the note's path (without ``.md``)
  before its text, since kbdb indexes the file name and bm25s over the bare text cannot
  see it.

**Metrics**, per query set: success@1 (the first result belongs to the answer note; for
kbdb a result's ``docids`` are note paths) and MRR@10 (1/rank of the answer among the
first 10 distinct notes; the notes of one kbdb section share its rank). **Learn time**:
``learn_path`` of the vault alone (no open, no configuration), with link extraction on and
off when ``learn.links`` exists, the median of ``--rounds`` rounds, arms alternating,
a fresh knowledge base each time, all in this process.

``--misses`` prints each arm's misses (query, expected note, first note). The misses and
the query lists are not written to the result file (the vault's text stays out of the
repository); the counts and a few examples are.

    python benches/bench_vault.py --vault obsidian-help=/tmp/vault/en \\
        [--vault foam-docs=/tmp/vault/foam] [--rounds 5] [--misses]
"""

from __future__ import annotations

import argparse
import posixpath
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_navigation import (  # noqa: E402
    K,
    Tally,
    code_state,
    corpus_checksum,
    first_rank,
    page_ranks,
)
from common import print_table, write_result  # noqa: E402

SETS = ("name", "alias", "old name", "anchor")
ARMS = ("kbdb", "kbdb w_anchor=0", "kbdb links off", "bm25s", "bm25s path+file")
EXAMPLES = 5
ANCHOR_WEIGHT = "search.w_anchor"
LINKS_ENABLED = "learn.links"

# -- reading a vault ---------------------------------------------------------------------

# A fence at any indent, or in a quote or callout (``> ```css``), as Obsidian renders it.
_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")
_COMMENT = re.compile(r"%%.*?%%|<!--.*?-->", re.DOTALL)
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_MDLINK = re.compile(r"!?\[([^\[\]\n]*)\]\(\s*(<[^>\n]*>|[^)\s]*)(?:\s+\"[^\"\n]*\")?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_SIZE = re.compile(r"^\d+(x\d+)?$")
_WORD = re.compile(r"[^\W_]+")
_H1 = re.compile(r"^# +(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Link:
    source: str  # the linking note's path
    target: str  # as written, without #heading or #^block
    label: str | None  # None: no label
    markdown: bool  # [label](target) rather than [[target|label]]


@dataclass
class Note:
    rel: str  # path from the vault root, with ``.md``
    text: str
    aliases: list[str]
    title: str | None

    @property
    def stem(self) -> str:
        return posixpath.basename(self.rel)[: -len(".md")]

    @property
    def key(self) -> str:
        return self.rel[: -len(".md")].casefold()


def _fold(text: str) -> str:
    """How Obsidian compares names when it resolves a link: case and spacing aside."""
    return " ".join(text.split()).casefold()


def _words(text: str) -> str:
    """How a query is compared with names and other queries: its words, lower-cased.
    ``graph-view``, ``Graph View`` and ``graph view`` are one query to every tokenizer
    compared here."""
    return " ".join(_WORD.findall(text.casefold()))


def _blank(text: str) -> str:
    """Same length, newlines kept, everything else a space: offsets stay valid."""
    return re.sub(r"[^\n]", " ", text)


def split_front_matter(text: str) -> tuple[str, str]:
    """(front matter source, the text with the front matter blanked)."""
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                head = "\n".join(lines[: i + 1])
                return "\n".join(lines[1:i]), _blank(head) + text[len(head) :]
    return "", text


def masked(text: str) -> str:
    """``text`` (front matter already blanked) with fenced code, code spans and comments
    blanked, so that links in them (examples in the help text) are not links."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            out.append(_blank(line))
        elif fence is not None:
            bare = line.lstrip(" \t>").rstrip()
            if bare.startswith(fence) and not bare.strip(fence[0]):
                fence = None
            out.append(_blank(line))
        else:
            out.append(_CODE_SPAN.sub(lambda s: _blank(s.group(0)), line))
    return _COMMENT.sub(lambda s: _blank(s.group(0)), "\n".join(out))


def front_matter_aliases(meta: dict[str, Any]) -> list[str]:
    """``aliases`` or ``alias``: a YAML list, or a string (one alias, or several split by
    commas, as older Obsidian versions read it)."""
    out: list[str] = []
    for key in ("aliases", "alias"):
        value = meta.get(key)
        if isinstance(value, str):
            out += [v.strip() for v in value.split(",")]
        elif isinstance(value, list):
            out += [str(v).strip() for v in value if v is not None]
    return [a for a in out if a]


def read_vault(vault: Path) -> tuple[dict[str, Note], list[Link]]:
    import yaml

    notes: dict[str, Note] = {}
    links: list[Link] = []
    for path in sorted(vault.rglob("*.md")):
        rel = path.relative_to(vault).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        source, body = split_front_matter(text)
        try:
            meta = yaml.safe_load(source) if source else {}
        except yaml.YAMLError:
            meta = {}
        meta = meta if isinstance(meta, dict) else {}
        body = masked(body)
        first = next((ln for ln in body.split("\n") if ln.strip()), "")
        h1 = _H1.match(first)
        title = meta.get("title") if isinstance(meta.get("title"), str) else None
        notes[rel] = Note(rel, text, front_matter_aliases(meta), title or (h1 and h1.group(1)))
        for m in _WIKILINK.finditer(body):
            target, bar, label = text[m.start(1) : m.end(1)].partition("|")
            target = target.rstrip("\\").split("#", 1)[0].strip()
            links.append(Link(rel, target, label if bar else None, markdown=False))
        for m in _MDLINK.finditer(body):
            raw = m.group(2).strip("<>")
            if not raw or _SCHEME.match(raw):
                continue  # no target, or a URL, mailto:, obsidian://
            label = text[m.start(1) : m.end(1)]
            links.append(Link(rel, unquote(raw).split("#", 1)[0].strip(), label, markdown=True))
    return notes, links


# -- resolving links the way Obsidian does ---------------------------------------------------


class Resolver:
    """Path from the vault root, else a unique file name, else a unique alias (all
    case-insensitive); Markdown links first try the path from the linking note's folder."""

    def __init__(self, notes: dict[str, Note]) -> None:
        self.by_path = {n.key: n.rel for n in notes.values()}
        self.by_name: dict[str, set[str]] = {}
        self.by_alias: dict[str, set[str]] = {}
        for n in notes.values():
            self.by_name.setdefault(n.stem.casefold(), set()).add(n.rel)
            for a in n.aliases:
                self.by_alias.setdefault(_fold(a), set()).add(n.rel)

    def resolve(self, link: Link) -> tuple[str | None, str]:
        """(the target note, "ok") or (None, why not)."""
        if not link.target:
            return link.source, "ok"  # [[#Heading]], [label](#anchor)
        key = link.target.casefold().lstrip("/")
        if key.endswith(".md"):
            key = key[: -len(".md")]
        paths = [key]
        if link.markdown or key.startswith("."):
            here = posixpath.dirname(link.source).casefold()
            paths.insert(0, posixpath.normpath(posixpath.join(here, key)))
        for p in paths:
            if p in self.by_path:
                return self.by_path[p], "ok"
        if "/" in key:  # a partial path: the one note whose path ends with it
            found = {rel for k, rel in self.by_path.items() if k.endswith("/" + key)}
        else:
            found = self.by_name.get(_fold(key), set())
        found = found or self.by_alias.get(_fold(key), set())
        if len(found) == 1:
            return next(iter(found)), "ok"
        if found:
            return None, "ambiguous target"
        if re.search(r"\.[a-z0-9]{1,5}$", key):
            return None, "not a note (image, PDF, canvas…)"
        return None, "missing target"


# -- the query sets ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    set: str  # one of SETS
    text: str
    target: str  # the answer note's path
    uses: int = 1  # anchors: links with this label to this target


def name_queries(notes: dict[str, Note]) -> tuple[list[Query], dict[str, int], dict[str, set[str]]]:
    """Names, aliases and old names; the dropped counts; every name's notes."""
    candidates: list[Query] = []
    dropped: Counter[str] = Counter()
    for n in notes.values():
        own = {_words(n.stem)}
        candidates.append(Query("name", n.stem, n.rel))
        for a in n.aliases:
            if "/" in a:
                a, kind = a.rstrip("/").rsplit("/", 1)[-1], "old name"
            else:
                kind = "alias"
            if _words(a) in own:
                dropped[f"{kind}: the note's name or another of its aliases"] += 1
            else:
                own.add(_words(a))
                candidates.append(Query(kind, a.strip(), n.rel))
    owners: dict[str, set[str]] = {}
    for q in candidates:
        owners.setdefault(_words(q.text), set()).add(q.target)
    dropped.update(
        f"{q.set}: shared by notes" for q in candidates if len(owners[_words(q.text)]) > 1
    )
    keep = [q for q in candidates if len(owners[_words(q.text)]) == 1]
    return keep, dict(dropped), owners


def anchor_queries(
    notes: dict[str, Note], links: list[Link], owners: dict[str, set[str]]
) -> tuple[list[Query], dict[str, int]]:
    resolver = Resolver(notes)
    dropped: Counter[str] = Counter()
    uses: Counter[tuple[str, str]] = Counter()
    label_of: dict[tuple[str, str], str] = {}
    for link in links:
        if link.label is None:
            continue
        label = " ".join(link.label.replace("`", "").split()).strip("*_~= ")
        target, why = resolver.resolve(link)
        if target is None:
            dropped[why] += 1
            continue
        if target == link.source:
            dropped["link to itself"] += 1
            continue
        key = _words(label)
        note = notes[target]
        own = {_words(note.stem), *(_words(a) for a in note.aliases)}
        own |= {_words(a.rsplit("/", 1)[-1]) for a in note.aliases}
        if note.title:
            own.add(_words(note.title))
        if len(key) <= 1 or _SIZE.match(key):
            dropped["one character, digits or a size"] += 1
        elif key in own:
            dropped["the target's own name, title or alias"] += 1
        elif key in owners:
            dropped["names another note"] += 1
        else:
            uses[(key, target)] += 1
            label_of.setdefault((key, target), label)
    targets: dict[str, set[str]] = {}
    for key, target in uses:
        targets.setdefault(key, set()).add(target)
    out = []
    for (key, target), n in uses.items():
        if len(targets[key]) > 1:
            dropped["label of two targets (label, target pairs)"] += 1
        else:
            out.append(Query("anchor", label_of[(key, target)], target, n))
    return out, dict(dropped)


# -- the arms -------------------------------------------------------------------------------------


def _learn(vault: Path, settings: dict[str, str]) -> tuple[Any, Any, float]:
    """A fresh knowledge base with ``settings``, the vault learned; and learn_path's time."""
    from kbdb import KnowledgeBase
    from kbdb.config import set_value

    tmp = tempfile.TemporaryDirectory(prefix="bench-vault-kb-")
    kb = KnowledgeBase.init(Path(tmp.name))
    if settings:
        for key, value in settings.items():
            set_value(kb.path / "worker.toml", key, value)
        kb.close()
        kb = KnowledgeBase.open(Path(tmp.name))
    t0 = time.perf_counter()
    kb.learn_path(vault, notable_only=True)
    return kb, tmp, time.perf_counter() - t0


def kbdb_ranking(kb: Any, query: str) -> list[tuple[str, ...]]:
    """Results as docid groups, paged until they cover ``K`` distinct notes."""
    groups: list[tuple[str, ...]] = []
    seen: set[str] = set()
    offset = 0
    while True:
        res = kb.search(query, mode="lexical", limit=K, offset=offset)
        for it in res.items:
            groups.append(tuple(it.docids))
            seen.update(it.docids)
        offset += len(res.items)
        if len(seen) >= K or not res.has_more or not res.items or offset >= 200:
            return groups


def learned_docids(kb: Any) -> set[str]:
    out: set[str] = set()
    offset = 0
    while True:
        page = kb.documents(limit=50, offset=offset)
        out.update(d.docid for d in page.items)
        offset += len(page.items)
        if not page.has_more or not page.items:
            return out


def score(queries: Sequence[Query], rank_of: Any) -> dict[str, Any]:
    tallies = {s: Tally() for s in SETS}
    misses = []
    t0 = time.perf_counter()
    for q in queries:
        groups = rank_of(q.text)
        rank = first_rank(page_ranks(groups), frozenset({q.target}))
        tallies[q.set].add(rank)
        if rank != 1:
            misses.append((q, rank, groups[0] if groups else ()))
    return {
        "by_set": {s: t.summary() for s, t in tallies.items() if t.n},
        "search_s": time.perf_counter() - t0,
        "misses": misses,
    }


def run_kbdb(vault: Path, queries: Sequence[Query], settings: dict[str, str]) -> dict[str, Any]:
    from bench_navigation import _kbdb_params

    kb, tmp, learn_s = _learn(vault, settings)
    try:
        out = score(queries, lambda text: kbdb_ranking(kb, text))
        out.update(learn_s=learn_s, settings=settings, params=_kbdb_params(kb))
        out["notes_not_learned"] = sorted({q.target for q in queries} - learned_docids(kb))
    finally:
        kb.close()
        tmp.cleanup()
    return out


def run_bm25s(notes: dict[str, Note], queries: Sequence[Query], with_path: bool) -> dict[str, Any]:
    from kbdb.evaluation.beir import BeirDoc
    from peers import Bm25s, NotInstalled

    try:
        peer = Bm25s()
    except NotInstalled as e:
        return {"status": f"not installed ({e})"}
    docs = [
        BeirDoc(id=n.rel, title=n.rel[: -len(".md")] if with_path else "", text=n.text)
        for n in notes.values()
    ]
    t0 = time.perf_counter()
    peer.index(docs)
    index_s = time.perf_counter() - t0
    out = score(queries, lambda text: [(i,) for i in peer.search(text, K)])
    out.update(
        index_s=index_s,
        params={
            "method": "lucene",
            "k1": 1.5,
            "b": 0.75,
            "stopwords": "en (33, Lucene)",
            "stemmer": "PyStemmer english",
            "document": ("path without .md + " if with_path else "") + "the whole file",
        },
    )
    return out


def learn_times(vault: Path, rounds: int, variants: dict[str, dict[str, str]]) -> dict[str, Any]:
    """Median and all times of learn_path per variant, variants alternating each round."""
    times: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(rounds):
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for name in order:
            kb, tmp, seconds = _learn(vault, variants[name])
            kb.close()
            tmp.cleanup()
            times[name].append(seconds)
    out: dict[str, Any] = {
        name: {"median_s": statistics.median(t), "rounds_s": t} for name, t in times.items()
    }
    if "links off" in out:
        out["default_over_links_off"] = out["default"]["median_s"] / out["links off"]["median_s"]
    return out


# -- main ----------------------------------------------------------------------------------------


def kbdb_arms() -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The kbdb arms this build has, and the skipped ones with why."""
    from kbdb.config import config_keys

    keys = {k.dotted for k in config_keys()}
    arms: dict[str, dict[str, str]] = {"kbdb": {}}
    skipped: dict[str, str] = {}
    for arm, key, value in (
        ("kbdb w_anchor=0", ANCHOR_WEIGHT, "0"),
        ("kbdb links off", LINKS_ENABLED, "false"),
    ):
        if key in keys:
            arms[arm] = {key: value}
        else:
            skipped[arm] = f"skipped: this kbdb has no {key} setting"
    return arms, skipped


def run_vault(label: str, vault: Path, rounds: int, show_misses: bool) -> dict[str, Any]:
    notes, links = read_vault(vault)
    names, dropped_names, owners = name_queries(notes)
    anchors, dropped_anchors = anchor_queries(notes, links, owners)
    queries = names + anchors
    arms, skipped = kbdb_arms()
    results: dict[str, Any] = {}
    for arm, settings in arms.items():
        results[arm] = run_kbdb(vault, queries, settings)
    results["bm25s"] = run_bm25s(notes, queries, with_path=False)
    results["bm25s path+file"] = run_bm25s(notes, queries, with_path=True)
    variants: dict[str, dict[str, str]] = {"default": {}}
    if "kbdb links off" in arms:
        variants["links off"] = arms["kbdb links off"]
    learn = learn_times(vault, rounds, variants)
    if "links off" not in learn:
        learn["links off"] = skipped["kbdb links off"]
    for arm, res in results.items():
        if res.get("notes_not_learned"):
            print(f"[{label}] {arm}: answers kbdb did not learn: {res['notes_not_learned']}")
        misses = res.pop("misses", [])
        res["misses"] = Counter(q.set for q, _, _ in misses)
        if show_misses:
            print(f"\n[{label}] {arm}: {len(misses)} misses (query -> expected; got)")
            for q, rank, top in misses:
                where = f"at {rank}" if rank else "not in the top 10"
                got = ", ".join(top) or "(nothing)"
                print(f"  {q.set:8} {q.text!r} -> {q.target} ({where}); got {got}")
    counts = Counter(q.set for q in queries)
    return {
        "path": str(vault),
        "files": len(notes),
        "file_list_sha256": corpus_checksum(vault, [vault / rel for rel in notes]),
        "links": {
            "wikilinks": sum(not lk.markdown for lk in links),
            "markdown_links": sum(lk.markdown for lk in links),
            "with_label": sum(lk.label is not None for lk in links),
        },
        "queries": {
            "counts": {s: counts[s] for s in SETS},
            "dropped_names": dropped_names,
            "dropped_anchor_links": dropped_anchors,
            "anchor_label_uses": sum(q.uses for q in anchors),
            "examples": {
                s: [
                    {"query": q.text, "note": q.target, "links": q.uses}
                    if s == "anchor"
                    else {"query": q.text, "note": q.target}
                    for q in sorted(queries, key=lambda q: -q.uses)
                    if q.set == s
                ][:EXAMPLES]
                for s in SETS
            },
        },
        "arms": {arm: results.get(arm) or skipped[arm] for arm in ARMS},
        "learn": {"rounds": rounds, **learn},
    }


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", action="append", required=True, help="[LABEL=]DIR")
    ap.add_argument("--rounds", type=int, default=5, help="learn rounds per variant (median)")
    ap.add_argument("--misses", action="store_true", help="print every arm's misses")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    vaults: dict[str, Any] = {}
    for spec in args.vault:
        label, _, path = spec.rpartition("=")
        vault = Path(path)
        if not vault.is_dir():
            print(f"bench_vault: no vault at {vault}")
            return 1
        vaults[label or vault.name] = run_vault(
            label or vault.name, vault, args.rounds, args.misses
        )
    headline = []
    for label, v in vaults.items():
        arms = v["arms"]
        rows = []
        for s in SETS:
            n = v["queries"]["counts"][s]
            if not n:
                continue
            row: list[Any] = [s, n]
            for res in arms.values():
                if isinstance(res, str) or "status" in res:
                    row.append("skipped" if isinstance(res, str) else res["status"])
                    continue
                m = res["by_set"][s]
                row.append(f"{_f(m['success@1'])} / {_f(m['mrr@10'])}")
            rows.append(row)
        print_table(
            f"{label}: {v['files']} notes, success@1 / MRR@10",
            ["queries", "n", *arms],
            rows,
        )
        for arm, res in arms.items():
            if isinstance(res, str):
                print(f"  {arm}: {res}")
        learn = v["learn"]
        off = learn["links off"]
        print(
            f"  learn_path ({learn['rounds']} rounds, median): default "
            f"{learn['default']['median_s']:.3f} s; links off "
            + (f"{off['median_s']:.3f} s" if isinstance(off, dict) else off)
        )
        kb, bm = arms["kbdb"]["by_set"], arms["bm25s"].get("by_set", {})
        for s in SETS:
            if s in kb:
                peer = f"{_f(bm[s]['success@1'])} / {_f(bm[s]['mrr@10'])}" if s in bm else "—"
                headline.append(
                    {
                        "what": f"{label} vault, {kb[s]['queries']} {s} queries: "
                        "success@1 / MRR@10",
                        "kbdb": f"{_f(kb[s]['success@1'])} / {_f(kb[s]['mrr@10'])}",
                        "peers": f"bm25s (whole files) {peer}",
                    }
                )
    if not args.no_write:
        path = write_result(
            "vault_navigation",
            {
                "vaults": vaults,
                "metrics": {
                    "k": K,
                    "success@1": "the first result belongs to the answer note (kbdb: the "
                    "note is among the first section's docids)",
                    "mrr@10": "1/rank of the answer among the first 10 distinct notes in "
                    "result order (kbdb: the notes of one section share its rank); 0 if absent",
                },
                "code": code_state(),
                "wall_s": time.perf_counter() - t_start,
                "headline": headline,
            },
        )
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
