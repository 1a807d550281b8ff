"""Choose the lexical ranking defaults across every dev set, not on one.

Each dataset (SciFact, Cranfield, MEDLINE by default, and the paraphrase set) is learned
once into a knowledge base. Every candidate setting then re-ranks every judged query
through the facade's own ranking (``LexicalSearcher.rank``: strict then relaxed BM25F and
the sibling boost, the order ``kb.search(limit=100)`` returns, without hydration), and
bm25s ranks the same queries in the same run. The report holds each candidate's nDCG@10
on each set, its margin over bm25s, and two robust summaries:

- ``worst margin``: the smallest (kbdb − bm25s) over the sets;
- ``leave-one-out``: for each set, the candidate with the best mean nDCG@10 on the *other*
  sets is scored on it; the mean of those held-out scores estimates how the choice does on a
  collection it was not chosen on.

    python benches/tune_ranking.py [--grid small|full] [--sets scifact,cranfield,medline]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from statistics import mean
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tune_bm25  # noqa: E402
from common import ROOT, SHARED, print_table, write_result  # noqa: E402
from kbdb.config import Config, SearchConfig  # noqa: E402
from kbdb.evaluation.beir import BeirDataset, dataset_paths, load_beir  # noqa: E402
from kbdb.evaluation.run import RECALL_K, score_rankings, to_beir_ids  # noqa: E402

# The ranking defaults before query term frequency and the path field.
BEFORE: dict[str, Any] = {
    "k1": 1.2,
    "query_tf_k3": 0.0,
    "w_path": 0.0,
    "common_cutoff": 0.0,
    "name_boost": 0.0,
}
NAV_CORPUS = SHARED / "corpora" / "docker-cli"
DEV_SETS = {
    "scifact": SHARED / "datasets" / "scifact",
    "cranfield": SHARED / "datasets" / "cranfield",
    "medline": SHARED / "datasets" / "medline",
    "lisa": SHARED / "datasets" / "lisa",
    "time": SHARED / "datasets" / "time",
    "locomo": SHARED / "datasets" / "locomo",
    "paraphrase": ROOT / "benches" / "data" / "paraphrase",
}


class Ranker(tune_bm25.Ranker):
    """A learned knowledge base that ranks the judged queries under any search settings."""

    def rankings(self, search: SearchConfig) -> dict[str, list[str]]:
        from kbdb.search.lexical import LexicalSearcher
        from kbdb.search.synonyms import Synonyms, load_groups

        index = self.kb.context.index.core
        analyzer = self.kb.context.index.analyzer
        synonyms = Synonyms(load_groups(self.kb.path), analyzer.terms) if search.synonyms else None
        searcher = LexicalSearcher(index, self.kb.context.db, analyzer, synonyms, search)
        out: dict[str, list[str]] = {}
        for qid, text in self.ds.queries:
            ranking = searcher.rank(
                searcher.parse(text), want=RECALL_K, page_end=RECALL_K, allow=None, explain=False
            )
            out[qid] = to_beir_ids(self.docids([h.kbid for h in ranking.hits]), self.known)
        return out

    def score_search(self, search: SearchConfig) -> dict[str, float]:
        return score_rankings(self.rankings(search), self.ds.qrels)


class NavRanker(Ranker):
    """The navigation benchmark's known-item queries over the docker CLI reference
    (``bench_navigation.py``): success@1 and MRR@10 over pages, per query kind."""

    def __init__(self, corpus: Path, root: Path) -> None:
        from bench_navigation import build_queries
        from kbdb import KnowledgeBase

        self.queries, _ = build_queries(corpus)
        self.kb = KnowledgeBase.init(root)
        self.kb.learn_path(corpus, notable_only=True)
        self._docids = {}

    def nav_scores(self, search: SearchConfig) -> dict[str, float]:
        from bench_navigation import Tally, first_rank, page_ranks
        from kbdb.search.lexical import LexicalSearcher
        from kbdb.search.synonyms import Synonyms, load_groups

        analyzer = self.kb.context.index.analyzer
        synonyms = Synonyms(load_groups(self.kb.path), analyzer.terms) if search.synonyms else None
        searcher = LexicalSearcher(
            self.kb.context.index.core, self.kb.context.db, analyzer, synonyms, search
        )
        tallies: dict[str, Tally] = {}
        for q in self.queries:
            ranking = searcher.rank(
                searcher.parse(q.text),
                want=RECALL_K,
                page_end=RECALL_K,
                allow=None,
                explain=False,
            )
            groups = self.docids([h.kbid for h in ranking.hits])
            tallies.setdefault(q.kind, Tally()).add(first_rank(page_ranks(groups), q.targets))
        out: dict[str, float] = {}
        for kind, t in tallies.items():
            summary = t.summary()
            out[f"{kind} s@1"] = summary["success@1"]
            out[f"{kind} mrr"] = summary["mrr@10"]
        return out


def bm25s_scores(ds: BeirDataset) -> dict[str, float] | None:
    from peers import Bm25s, NotInstalled

    try:
        peer = Bm25s()
    except NotInstalled:
        return None
    peer.index(ds.corpus)
    return score_rankings({qid: peer.search(text, RECALL_K) for qid, text in ds.queries}, ds.qrels)


def grid(kind: str) -> list[dict[str, Any]]:
    """Candidate settings (only the keys that differ from the defaults)."""
    if kind == "name":
        axes = {"name_boost": (0.0, 0.1, 0.25, 0.5, 1.0, 2.0)}
        keys = list(axes)
        return [dict(zip(keys, v, strict=True)) for v in itertools.product(*axes.values())]
    if kind == "common":
        axes = {"common_cutoff": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)}
        keys = list(axes)
        return [dict(zip(keys, v, strict=True)) for v in itertools.product(*axes.values())]
    if kind == "path":
        axes = {"w_path": (0.0, 1.0, 2.0, 3.0, 4.0, 6.0), "b_path": (0.5, 0.75, 1.0)}
        keys = list(axes)
        return [dict(zip(keys, v, strict=True)) for v in itertools.product(*axes.values())]
    if kind == "small":
        axes: dict[str, tuple[Any, ...]] = {
            "k1": (0.9, 1.2, 1.5),
            "b_body": (0.75, 0.9),
            "query_tf_k3": (0.0, 8.0, 1000.0),
        }
    else:
        axes = {
            "k1": (1.2, 1.5, 1.8, 2.1),
            "b_body": (0.75, 0.9, 1.0),
            "w_heading": (1.5, 2.0, 3.0),
            "query_tf_k3": (0.0, 1.5, 3.0, 8.0, 1000.0),
        }
    keys = list(axes)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*axes.values())]


def with_settings(base: SearchConfig, settings: dict[str, Any]) -> SearchConfig:
    s = dict(settings)
    if "b_body" in s and "b_code" not in s:
        s["b_code"] = s["b_body"]
    return replace(base, **s)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", choices=("small", "full", "path", "common", "name"), default="small")
    ap.add_argument("--sets", default="scifact,cranfield,medline,paraphrase")
    ap.add_argument("--path-grid", action="store_true", help="sweep the path field's w and b")
    args = ap.parse_args()
    names = [n for n in args.sets.split(",") if n]
    base = Config().search
    rankers: dict[str, Ranker] = {}
    peers: dict[str, dict[str, float] | None] = {}
    tmp = tempfile.TemporaryDirectory(prefix="kbdb-tune-")
    for name in names:
        path = DEV_SETS[name]
        if not (path / "corpus.jsonl").exists():
            print(f"{name}: no dataset at {path}; skipped")
            continue
        ds = load_beir(*dataset_paths(path))
        rankers[name] = Ranker(ds, Path(tmp.name) / name)
        peers[name] = bm25s_scores(ds)
    sets = list(rankers)
    nav = NavRanker(NAV_CORPUS, Path(tmp.name) / "navigation")

    candidates = grid("path" if args.path_grid else args.grid)
    results: list[dict[str, Any]] = []
    for settings in candidates:
        search = with_settings(base, settings)
        scores = {n: rankers[n].score_search(search)["ndcg@10"] for n in sets}
        results.append(
            {"settings": settings, "ndcg@10": scores, "navigation": nav.nav_scores(search)}
        )

    def margin(r: dict[str, Any], n: str) -> float:
        peer = peers[n]
        return r["ndcg@10"][n] - (peer["ndcg@10"] if peer else 0.0)

    lexical_sets = [n for n in sets if n != "paraphrase"]
    for r in results:
        r["worst_margin"] = min(margin(r, n) for n in lexical_sets)
        r["mean"] = mean(r["ndcg@10"][n] for n in lexical_sets)
    held_out: dict[str, dict[str, Any]] = {}
    for n in lexical_sets:
        others = [m for m in lexical_sets if m != n]
        if not others:
            continue
        best = max(results, key=lambda r: mean(r["ndcg@10"][m] for m in others))
        held_out[n] = {"chosen": best["settings"], "ndcg@10": best["ndcg@10"][n]}

    results.sort(key=lambda r: (-round(r["worst_margin"], 3), -r["mean"]))
    # The defaults before query term frequency and the path field, and now.
    before = with_settings(base, BEFORE)
    reference = {
        name: {
            "ndcg@10": {n: rankers[n].score_search(search)["ndcg@10"] for n in sets},
            "navigation": nav.nav_scores(search),
        }
        for name, search in (("before", before), ("after", base))
    }
    nav_cols = list(results[0]["navigation"]) if results else []
    headers = ["settings", *sets, "worst margin", "mean", *nav_cols]
    rows: list[list[Any]] = [
        ["bm25s", *[(peers[n] or {}).get("ndcg@10") for n in sets], None, None]
        + [None] * len(nav_cols)
    ]
    for r in results[:25]:
        label = " ".join(f"{k}={v}" for k, v in r["settings"].items())
        rows.append(
            [label, *[r["ndcg@10"][n] for n in sets], r["worst_margin"], r["mean"]]
            + [r["navigation"][c] for c in nav_cols]
        )
    for name, ref in reference.items():
        rows.append(
            [f"defaults {name}", *[ref["ndcg@10"][n] for n in sets], None, None]
            + [ref["navigation"][c] for c in nav_cols]
        )
    print_table("lexical nDCG@10 across the dev sets (best 25 by worst margin)", headers, rows)
    for n, h in held_out.items():
        print(f"held out {n}: {h['ndcg@10']:.3f} with {h['chosen']}")
    write_result(
        "tune_ranking",
        {
            "sets": {n: {"checksums": rankers[n].ds.checksums} for n in sets},
            "bm25s": peers,
            "defaults": {
                k: getattr(base, k)
                for k in ("k1", "b_body", "w_heading", "query_tf_k3", "w_path", "b_path")
            },
            "before": {"settings": BEFORE, **reference["before"]},
            "after": reference["after"],
            "candidates": results,
            "held_out": held_out,
        },
    )
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
