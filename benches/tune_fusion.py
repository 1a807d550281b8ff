"""Choose the hybrid fusion on every dev set: RRF, linear, and the adaptive fusion's variants.

For each dev set (SciFact, Cranfield, MEDLINE and the paraphrase set, where lexical search
finds nothing relevant by construction) the corpus is learned once into
``CACHE/<set>`` with the local ONNX model (the embedding cache in ``kb.sqlite`` makes a
re-run cheap: it only embeds the queries). Each judged query then runs both arms once,
exactly as ``kb.search(mode="hybrid")`` does (the lexical ranking with its strict-then-
relaxed fill and sibling boost, and the vector scan, 100 candidates each), and every
variant fuses those two lists offline with the facade's own functions
(``kbdb.search.fusion``; the shipped adaptive signals come from
``kbdb.search.hybrid.arm_signals``).

Variants: lexical alone, vector alone, RRF (k = 60 is the seed's), linear (min-max), and
the adaptive family: per-query arm weights from a lexical signal (the best coverage of the
query's required words, or the best lexical confidence) and a vector signal (none, the top
cosine, or the gap between the top cosine and the mean of ranks 2–10), each a linear ramp
``ramp(x; low, low + width)``, combined either by weighted RRF (k = 60, what
``search.fusion = "adaptive"`` does) or convexly (each list divided by its best score).
The vector weight never drops below ``fusion.VECTOR_FLOOR``. The shipped defaults run
through the facade's own ``fusion.adaptive`` and must reproduce their grid variant.

Choice: a variant's margin on a set is its nDCG@10 minus max(lexical, vector) there. On
the paraphrase set no fusion can beat the vector arm (lexical hits are never relevant
there, so they can only push relevant ones down), so its best margin is 0. Variants are
compared by their margins sorted ascending (worst set first, then the next worst: leximin),
each margin taken as the worst over the variant and its grid neighbours (one step along
one axis), so that a lone peak does not win. Leave-one-set-out: the same choice made on
three sets, scored on the fourth.

    python benches/tune_fusion.py [--model DIR] [--cache DIR] [--sets scifact,medline,...]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from statistics import mean
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, SHARED, print_table, write_result  # noqa: E402
from kbdb.config import SearchConfig, load_config  # noqa: E402
from kbdb.evaluation.beir import BeirDataset, dataset_paths, load_beir  # noqa: E402
from kbdb.evaluation.metrics import ndcg_at_k  # noqa: E402
from kbdb.evaluation.run import NDCG_K, learn_corpus, override_config, to_beir_ids  # noqa: E402
from kbdb.search import fusion  # noqa: E402
from kbdb.search.confidence import confidence  # noqa: E402
from kbdb.search.hybrid import (  # noqa: E402
    FUSION_CANDIDATES,
    arm_signals,
    coverage,
    params_of,
)

DEV_SETS = {
    "scifact": SHARED / "datasets" / "scifact",
    "cranfield": SHARED / "datasets" / "cranfield",
    "medline": SHARED / "datasets" / "medline",
    "lisa": SHARED / "datasets" / "lisa",
    "time": SHARED / "datasets" / "time",
    "locomo": SHARED / "datasets" / "locomo",
    "paraphrase": ROOT / "benches" / "data" / "paraphrase",
}
# Where lexical finds nothing relevant by construction: hybrid can at best equal vector.
LEXICAL_BLIND = {"paraphrase"}
MODEL = SHARED / "models" / "all-MiniLM-L6-v2"
CACHE = Path("/tmp/kbdb-fusion-cache")

RRF_K = (20, 60)
LINEAR_W = (0.3, 0.5)
ADAPTIVE_RRF_K = 60
COVERAGE_LOW = (0.35, 0.4, 0.45, 0.5, 0.55)
COVERAGE_WIDTH = (0.05, 0.1, 0.2, 0.3)
CONFIDENCE_LOW = (0.02, 0.05, 0.1, 0.2)
CONFIDENCE_WIDTH = (0.1, 0.2, 0.4)
COSINE_LOW = (0.3, 0.4, 0.5, 0.6)
COSINE_WIDTH = (0.2, 0.3, 0.4)
GAP_LOW = (0.0, 0.03, 0.06, 0.09)
GAP_WIDTH = (0.05, 0.1, 0.15)
KEEP_BEST = 40  # adaptive variants written to the result file, best first
SHIPPED = "adaptive, as shipped (search.fusion defaults)"
GOAL_MARGIN = 0.01
PARAPHRASE_OVER_LEXICAL = 0.15

Ranked = list[tuple[str, float]]


@dataclass(frozen=True)
class Query:
    qid: str
    lexical: Ranked
    vector: Ranked
    signals: fusion.Signals  # what the facade computes
    confidence: float  # the best lexical hit's confidence (an alternative lexical signal)


@dataclass(frozen=True)
class DevSet:
    name: str
    dataset: BeirDataset
    queries: list[Query]
    docids: dict[str, tuple[str, ...]]
    known: set[str]
    search: dict[str, Any]


@dataclass(frozen=True)
class Variant:
    name: str
    fuse: Callable[[Query], list[str]]
    # Adaptive variants: (family, axis values); neighbours share the family and differ by
    # one step along one axis.
    family: tuple[str, ...] = ()
    axes: tuple[int, ...] = ()
    params: dict[str, Any] | None = None


def open_set(name: str, folder: Path, model: Path, cache: Path) -> DevSet:
    from kbdb import KnowledgeBase
    from kbdb.config import config_to_dict
    from kbdb.store import queries as q

    ds = load_beir(*dataset_paths(folder))
    root = cache / name
    KnowledgeBase.init(root).close()
    settings = {"embedding.provider": "onnx", "embedding.model_path": str(model)}
    config = override_config(load_config(root / ".kbdb" / "worker.toml"), settings)
    kb = KnowledgeBase.open(root, config=config)
    try:
        t0 = time.perf_counter()
        learn_corpus(kb, ds.corpus)
        if kb.stats().vector_index_stale:
            kb.rebuild(lexical=False)
        print(f"{name}: learned and embedded in {time.perf_counter() - t0:.1f} s", flush=True)
        kb.context.index.refresh()
        kb.context.refresh_vectors()
        lexical = kb.context.searcher()
        out = []
        for qid, text in ds.queries:
            if qid not in ds.qrels:
                continue
            parsed = lexical.parse(text)
            ranking = lexical.rank(
                parsed,
                want=FUSION_CANDIDATES,
                page_end=FUSION_CANDIDATES,
                allow=None,
                explain=False,
            )
            hits = ranking.hits[:FUSION_CANDIDATES]
            vec = list(kb.context.vectors.search(text, limit=FUSION_CANDIDATES, allow=None))
            conf = max(
                (
                    confidence(h.score / h.boost, h.bound, min(coverage(h.matched, parsed), 1.0))
                    for h in hits
                ),
                default=0.0,
            )
            out.append(
                Query(
                    qid,
                    [(h.kbid, h.score) for h in hits],
                    vec,
                    arm_signals(parsed, hits, vec),
                    conf,
                )
            )
        kbids = {k for x in out for k, _ in x.lexical + x.vector}
        with kb.context.db.read() as conn:
            docids = {k: tuple(v) for k, v in q.docids_of(conn, list(kbids)).items()}
        search = config_to_dict(kb.config)["search"]
    finally:
        kb.close()
    return DevSet(name, ds, out, docids, {d.id for d in ds.corpus}, search)


def per_query(dev: DevSet, variant: Variant) -> list[float]:
    qrels = dev.dataset.qrels
    return [
        ndcg_at_k(_top_ids(dev, variant.fuse(x)), qrels.get(x.qid, {}), NDCG_K) for x in dev.queries
    ]


def _top_ids(dev: DevSet, kbids: Sequence[str]) -> list[str]:
    """``to_beir_ids`` of the ranking, cut once it holds the ``NDCG_K`` ids nDCG reads."""
    out: list[str] = []
    for start in range(0, len(kbids), NDCG_K):
        out = to_beir_ids((dev.docids.get(k, ()) for k in kbids[: start + NDCG_K]), dev.known)
        if len(out) >= NDCG_K:
            break
    return out


def _kbids(fused: Sequence[fusion.Fused]) -> list[str]:
    return [f.kbid for f in fused]


def baselines() -> list[Variant]:
    out = [
        Variant("lexical", lambda x: [k for k, _ in x.lexical]),
        Variant("vector", lambda x: [k for k, _ in x.vector]),
    ]
    for k in RRF_K:
        out.append(Variant(f"rrf k={k}", partial(_rrf, k=k)))
    for w in LINEAR_W:
        out.append(Variant(f"linear w={w}", partial(_linear, weight=w)))
    return out


def _rrf(x: Query, k: int) -> list[str]:
    return _kbids(fusion.rrf(x.lexical, x.vector, k=k))


def _linear(x: Query, weight: float) -> list[str]:
    return _kbids(fusion.linear(x.lexical, x.vector, weight=weight))


def _combine(how: str) -> Callable[[Query, tuple[float, float]], list[str]]:
    if how == "convex":
        return lambda x, w: _kbids(fusion.convex(x.lexical, x.vector, weights=w))
    return lambda x, w: _kbids(fusion.rrf(x.lexical, x.vector, k=ADAPTIVE_RRF_K, weights=w))


def adaptive_variants() -> list[Variant]:
    """The shipped family (coverage and top cosine, through ``fusion.arm_weights``) and
    the alternatives, each on its grid."""
    out: list[Variant] = []
    floor = fusion.VECTOR_FLOOR

    def vec_weight(kind: str, x: Query, lo: float, width: float) -> float:
        if kind == "none":
            return 1.0
        value = x.signals.gap if kind == "gap" else (x.signals.top_cosine or 0.0)
        return floor + (1.0 - floor) * fusion.ramp(value, lo, lo + width)

    vec_grids: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
        "none": ((0.0,), (0.0,)),
        "cosine": (COSINE_LOW, COSINE_WIDTH),
        "gap": (GAP_LOW, GAP_WIDTH),
    }
    lex_grids = {
        "coverage": (COVERAGE_LOW, COVERAGE_WIDTH),
        "confidence": (CONFIDENCE_LOW, CONFIDENCE_WIDTH),
    }
    plan = [
        ("convex", "coverage", ("none", "cosine", "gap")),
        ("convex", "confidence", ("none",)),
        ("rrf", "coverage", ("none", "cosine", "gap")),
        ("rrf", "confidence", ("none",)),
    ]
    for how, lex_kind, vec_kinds in plan:
        combine = _combine(how)
        lex_lows, lex_widths = lex_grids[lex_kind]
        for vec_kind in vec_kinds:
            vec_lows, vec_widths = vec_grids[vec_kind]
            for a, lo in enumerate(lex_lows):
                for b, width in enumerate(lex_widths):
                    for c, vlo in enumerate(vec_lows):
                        for d, vwidth in enumerate(vec_widths):
                            name = f"adaptive {how} {lex_kind} {lo:g}+{width:g}"
                            if vec_kind != "none":
                                name += f" {vec_kind} {vlo:g}+{vwidth:g}"
                            params = {
                                "combine": how,
                                "lexical_signal": lex_kind,
                                "lexical_low": lo,
                                "lexical_high": round(lo + width, 6),
                                "vector_signal": vec_kind,
                            }
                            if vec_kind != "none":
                                params |= {"vector_low": vlo, "vector_high": round(vlo + vwidth, 6)}

                            def fuse(
                                x: Query,
                                lk: str = lex_kind,
                                vk: str = vec_kind,
                                lo: float = lo,
                                hi: float = lo + width,
                                vlo: float = vlo,
                                vw: float = vwidth,
                                combine: Callable[..., list[str]] = combine,
                            ) -> list[str]:
                                value = x.signals.coverage if lk == "coverage" else x.confidence
                                w = (fusion.ramp(value, lo, hi), vec_weight(vk, x, vlo, vw))
                                return combine(x, w)

                            out.append(
                                Variant(
                                    name,
                                    fuse,
                                    family=(how, lex_kind, vec_kind),
                                    axes=(a, b, c, d),
                                    params=params,
                                )
                            )
    return out


_WORK: tuple[Sequence[Variant], dict[str, DevSet]] = ((), {})


def _score_one(i: int) -> dict[str, float]:
    variants, devs = _WORK
    return {n: mean(per_query(d, variants[i])) for n, d in devs.items()}


def score_all(
    variants: Sequence[Variant], devs: dict[str, DevSet], jobs: int
) -> dict[str, dict[str, float]]:
    """Mean nDCG@10 per variant and set; ``jobs`` forked processes share the lists."""
    global _WORK
    _WORK = (variants, devs)
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return {v.name: _score_one(i) for i, v in enumerate(variants)}
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        got = pool.map(_score_one, range(len(variants)), chunksize=8)
    return {v.name: g for v, g in zip(variants, got, strict=True)}


def margins(
    scores: dict[str, dict[str, float]], variant: str, sets: Sequence[str]
) -> dict[str, float]:
    """nDCG@10 minus max(lexical, vector), per set."""
    return {s: scores[variant][s] - max(scores["lexical"][s], scores["vector"][s]) for s in sets}


def plateau(
    variants: Sequence[Variant], scores: dict[str, dict[str, float]], sets: Sequence[str]
) -> dict[str, dict[str, float]]:
    """Per adaptive variant and set, the worst margin over it and its grid neighbours."""
    by_key = {(v.family, v.axes): v.name for v in variants if v.family}
    out = {}
    for v in variants:
        if not v.family:
            continue
        names = [v.name]
        for i in range(len(v.axes)):
            for step in (-1, 1):
                axes = v.axes[:i] + (v.axes[i] + step,) + v.axes[i + 1 :]
                other = by_key.get((v.family, axes))
                if other:
                    names.append(other)
        m = [margins(scores, n, sets) for n in names]
        out[v.name] = {s: min(x[s] for x in m) for s in sets}
    return out


def leximin_key(m: dict[str, float]) -> tuple[float, ...]:
    # Rounded so that differences below 0.0001 nDCG (a float-summation artefact) tie.
    return tuple(round(x, 4) for x in sorted(m.values()))


def rank_key(
    name: str,
    flat: dict[str, dict[str, float]],
    scores: dict[str, dict[str, float]],
    sets: Sequence[str],
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Leximin of the plateau margins, then of the variant's own margins."""
    return leximin_key(flat[name]), leximin_key(margins(scores, name, sets))


def choose(
    variants: Sequence[Variant], scores: dict[str, dict[str, float]], sets: Sequence[str]
) -> str:
    flat = plateau(variants, scores, sets)
    return max(flat, key=lambda n: rank_key(n, flat, scores, sets))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=MODEL, help="folder with model.onnx")
    ap.add_argument("--cache", type=Path, default=CACHE, help="knowledge bases, one per set")
    ap.add_argument("--sets", default=",".join(DEV_SETS), help="comma-separated dev sets")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="scoring processes")
    args = ap.parse_args()
    names = [s for s in args.sets.split(",") if s]
    unknown = [s for s in names if s not in DEV_SETS]
    if unknown:
        ap.error(f"unknown set(s) {unknown}; known: {', '.join(DEV_SETS)}")
    args.cache.mkdir(parents=True, exist_ok=True)
    devs = {n: open_set(n, DEV_SETS[n], args.model, args.cache) for n in names}

    t0 = time.perf_counter()
    variants = baselines() + adaptive_variants()
    shipped_params = params_of(SearchConfig())
    shipped = Variant(
        SHIPPED,
        lambda x: _kbids(
            fusion.adaptive(x.lexical, x.vector, x.signals, shipped_params, k=ADAPTIVE_RRF_K)
        ),
    )
    variants.append(shipped)
    scores = score_all(variants, devs, args.jobs)
    print(f"{len(variants)} variants scored in {time.perf_counter() - t0:.1f} s", flush=True)
    # The shipped defaults, named as their grid variant (when they are on the grid).
    sp = shipped_params
    shipped_name = (
        f"adaptive rrf coverage {sp.coverage_low:g}+{sp.coverage_high - sp.coverage_low:g}"
        f" gap {sp.gap_low:g}+{sp.gap_high - sp.gap_low:g}"
    )
    on_grid = shipped_name in scores
    if on_grid and any(abs(scores[shipped_name][n] - scores[SHIPPED][n]) > 1e-9 for n in names):
        print(f"the facade's adaptive fusion does not reproduce {shipped_name}", file=sys.stderr)
        return 1
    if not on_grid:
        shipped_name = SHIPPED
    variants = [v for v in variants if v.name != SHIPPED or not on_grid]
    scores = {n: v for n, v in scores.items() if n != SHIPPED or not on_grid}

    chosen = choose(variants, scores, names)
    flat = plateau(variants, scores, names)
    loo = {}
    if len(names) > 1:
        for held in names:
            rest = [n for n in names if n != held]
            pick = choose(variants, scores, rest)
            loo[held] = {"chosen_on_the_others": pick, **_margin_row(scores, pick, [held])}

    # The table: the baselines, the best variant of each adaptive family, the shipped one.
    best_of: dict[tuple[str, ...], str] = {}
    for v in variants:
        if v.family:
            cur = best_of.get(v.family)
            if cur is None or rank_key(v.name, flat, scores, names) > rank_key(
                cur, flat, scores, names
            ):
                best_of[v.family] = v.name
    shown = [v.name for v in variants if not v.family]
    shown += [n for n in best_of.values() if n not in shown]
    for extra in (shipped_name, chosen):
        if extra in scores and extra not in shown:
            shown.append(extra)
    rows = []
    for n in shown:
        m = margins(scores, n, names)
        tag = " (chosen)" if n == chosen else ""
        tag += " (shipped)" if n == shipped_name else ""
        cells = [f"{scores[n][s]:.4f}" for s in names]
        rows.append((n + tag, *cells, f"{min(m.values()):+.4f}"))
    print_table(
        "hybrid fusion, nDCG@10 per dev set (worst margin: min over sets of nDCG − max(lex, vec));"
        " adaptive rows: the best of each family by the choice rule, the chosen, the shipped",
        ("variant", *names, "worst margin"),
        rows,
    )
    if loo:
        print_table(
            "leave one set out: chosen on the other sets, margin on the held-out one",
            ("held out", "chosen on the others", "margin"),
            [(h, r["chosen_on_the_others"], f"{r['margins'][h]:+.4f}") for h, r in loo.items()],
        )

    goals = {}
    for n in (chosen, shipped_name):
        if n not in scores:
            continue
        m = margins(scores, n, names)
        g: dict[str, Any] = {
            s: {"margin": round(m[s], 6), f"met (>= +{GOAL_MARGIN})": m[s] >= GOAL_MARGIN}
            for s in names
        }
        if "paraphrase" in names:
            p = scores[n]["paraphrase"]
            g["paraphrase >= vector"] = p >= scores["vector"]["paraphrase"]
            g[f"paraphrase >= lexical + {PARAPHRASE_OVER_LEXICAL}"] = (
                p >= scores["lexical"]["paraphrase"] + PARAPHRASE_OVER_LEXICAL
            )
        goals[n] = g
    print(f"chosen: {chosen}")
    print(f"shipped default: {shipped_name}" + (" (the same)" if shipped_name == chosen else ""))
    for n, g in goals.items():
        print(f"goals, {n}: {g}")

    best = sorted(flat, key=lambda n: rank_key(n, flat, scores, names), reverse=True)
    kept = list(dict.fromkeys([*shown, *best[:KEEP_BEST]]))
    write_result(
        "tune_fusion",
        {
            "model": str(args.model),
            "cache": str(args.cache),
            "candidates_per_arm": FUSION_CANDIDATES,
            "vector_floor": fusion.VECTOR_FLOOR,
            "adaptive_rrf_k": ADAPTIVE_RRF_K,
            "datasets": {
                n: {
                    "path": str(DEV_SETS[n]),
                    "judged_queries": len(d.queries),
                    "checksums": d.dataset.checksums,
                    "search": d.search,
                }
                for n, d in devs.items()
            },
            "grid": {
                "coverage": {"low": COVERAGE_LOW, "width": COVERAGE_WIDTH},
                "confidence": {"low": CONFIDENCE_LOW, "width": CONFIDENCE_WIDTH},
                "cosine": {"low": COSINE_LOW, "width": COSINE_WIDTH},
                "gap": {"low": GAP_LOW, "width": GAP_WIDTH},
                "variants_scored": len(variants),
            },
            "kept": f"the baselines, the best of each adaptive family and the {KEEP_BEST} best"
            " adaptive variants by the choice rule",
            "ndcg@10": {n: {s: round(v, 6) for s, v in scores[n].items()} for n in kept},
            "params": {v.name: v.params for v in variants if v.params and v.name in kept},
            "plateau_margins": {
                n: {s: round(x, 6) for s, x in flat[n].items()} for n in kept if n in flat
            },
            "chosen": chosen,
            "shipped": shipped_name,
            "goals": goals,
            "leave_one_set_out": loo,
        },
    )
    return 0


def _margin_row(
    scores: dict[str, dict[str, float]], name: str, sets: Sequence[str]
) -> dict[str, Any]:
    return {"margins": {s: round(x, 6) for s, x in margins(scores, name, sets).items()}}


if __name__ == "__main__":
    raise SystemExit(main())
