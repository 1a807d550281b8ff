"""Choose the hybrid fusion on every dev set: RRF, linear, convex and the adaptive fusion.

For each dev set (SciFact, Cranfield, MEDLINE, LISA, TIME, LoCoMo, and the paraphrase set,
where lexical search finds nothing relevant by construction) the corpus is learned once
into ``CACHE/<set>`` with the local ONNX model (the embedding cache in ``kb.sqlite`` makes
a re-run cheap: it only embeds the queries). Each judged query then runs both arms once,
exactly as ``kb.search(mode="hybrid")`` does (the lexical ranking with its strict-then-
relaxed fill and boosts, and the vector scan, 100 candidates each), and every variant fuses
those two lists offline with the facade's own functions (``kbdb.search.fusion``; the
signals come from ``kbdb.search.hybrid.arm_signals``).

Variants: lexical alone, vector alone, RRF (k = 20, and 60, the seed's), linear (min-max),
convex (each list over its best score), the previous default (RRF weighted by a coverage
ramp and the vector list's cosine gap), and the adaptive fusion's grid: the gate on
coverage + agreement (``gate_low``, its width), the vector share at agreement 1/2
(``vector_weight``), its slope in the agreement, and the share of the rank part
(``rank_mix``). The shipped defaults run through ``fusion.adaptive`` with
``params_of(SearchConfig())`` and must reproduce their grid variant.

Choice: on a set, a variant's margin is the smaller of its nDCG@10 minus
(max(lexical, vector) − 0.005) and its nDCG@10 minus RRF k = 60's: the goal is to stay at or
above the better arm (within 0.005) and at or above plain RRF. The real collections decide
what may be chosen: only variants whose own margins hold on all six of them. Among those,
the paraphrase set (questions that share no word with their answer, where the lexical arm
finds nothing by construction) picks the one that keeps most of the vector arm's quality
there (to 0.001); then the margins on the real sets, sorted ascending (worst set first:
leximin), each taken as the worst over the variant and its grid neighbours (one step along
one axis), so that a lone peak does not win. The paraphrase set is not a goal to hold: a
fusion that matched the vector arm there would be pulled toward it on real collections,
where questions are carried by names, dates and events.
Leave-one-set-out: the same choice made on five real sets, scored on the sixth.

``--set search.KEY=VALUE`` (repeatable) runs the arms under other search settings, in
memory (the cached ``worker.toml`` is not edited): how a lexical ranking change moves the
fusion.

    python benches/tune_fusion.py [--model DIR] [--cache DIR] [--sets scifact,medline,...]
        [--set search.heading_boost=0]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, SHARED, print_table, write_result  # noqa: E402
from kbdb.config import SearchConfig, load_config  # noqa: E402
from kbdb.evaluation.beir import BeirDataset, dataset_paths, load_beir  # noqa: E402
from kbdb.evaluation.metrics import ndcg_at_k  # noqa: E402
from kbdb.evaluation.run import NDCG_K, learn_corpus, override_config, to_beir_ids  # noqa: E402
from kbdb.search import fusion  # noqa: E402
from kbdb.search.confidence import cosine_gap  # noqa: E402
from kbdb.search.hybrid import (  # noqa: E402
    FUSION_CANDIDATES,
    arm_signals,
    params_of,
)
from kbdb.search.lexical import Hit, LexicalSearcher  # noqa: E402
from kbdb.search.query import ParsedQuery  # noqa: E402

if TYPE_CHECKING:
    from kbdb import KnowledgeBase

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
LINEAR_W = (0.3, 0.4, 0.5)
CONVEX_W = (0.3, 0.5)
ADAPTIVE_RRF_K = 60
GATE_LOW = (0.5, 0.6, 0.7)
GATE_WIDTH = (0.1, 0.15, 0.2)
VECTOR_WEIGHT = (0.3, 0.35, 0.4)
AGREEMENT_SLOPE = (0.4, 0.5, 0.6)
RANK_MIX = (0.25, 0.5, 0.75)
# The previous default: RRF weighted by ramp(coverage; 0.45, 0.55) and, for the vector
# list, 0.1 + 0.9 · ramp(gap; 0.03, 0.18).
PREVIOUS = {"coverage": (0.45, 0.55), "gap": (0.03, 0.18), "floor": 0.1}
KEEP_BEST = 40  # adaptive variants written to the result file, best first
SHIPPED = "adaptive, as shipped (search.fusion defaults)"
TOLERANCE = 0.005  # below the better arm that still counts as holding
ARM_SETS_EXCLUDED = {"paraphrase"}  # reported, not in the leximin (see the docstring)

Ranked = list[tuple[str, float]]


@dataclass(frozen=True)
class Query:
    qid: str
    lexical: Ranked
    vector: Ranked
    signals: fusion.Signals  # what the facade computes
    gap: float  # the vector list's best cosine minus the mean of ranks 2-10 (previous default)


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


@contextmanager
def learned_set(
    name: str, folder: Path, model: Path, cache: Path, overrides: dict[str, str] | None = None
) -> Iterator[tuple[KnowledgeBase, BeirDataset]]:
    """The dev set's knowledge base in ``cache/name``, with the local model, learned and
    embedded on the first run (the embedding cache makes a later one cheap), and its
    indexes current; closed on exit. ``overrides`` are further settings, in memory."""
    from kbdb import KnowledgeBase

    ds = load_beir(*dataset_paths(folder))
    root = cache / name
    KnowledgeBase.init(root).close()
    settings = {"embedding.provider": "onnx", "embedding.model_path": str(model)}
    settings.update(overrides or {})
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
        yield kb, ds
    finally:
        kb.close()


def arm_lists(
    lexical: LexicalSearcher, vectors: Any, text: str
) -> tuple[ParsedQuery, list[Hit], Ranked]:
    """One query's two candidate lists, as ``kb.search(mode="hybrid")`` makes them: the
    lexical ranking (strict, then relaxed fill and boosts) and the vector scan, each
    ``FUSION_CANDIDATES`` long."""
    parsed = lexical.parse(text)
    ranking = lexical.rank(
        parsed,
        want=FUSION_CANDIDATES,
        page_end=FUSION_CANDIDATES,
        allow=None,
        explain=False,
    )
    hits = ranking.hits[:FUSION_CANDIDATES]
    return parsed, hits, list(vectors.search(text, limit=FUSION_CANDIDATES, allow=None))


def open_set(
    name: str, folder: Path, model: Path, cache: Path, overrides: dict[str, str] | None = None
) -> DevSet:
    from kbdb.config import config_to_dict
    from kbdb.store import queries as q

    with learned_set(name, folder, model, cache, overrides) as (kb, ds):
        lexical = kb.context.searcher()
        out = []
        for qid, text in ds.queries:
            if qid not in ds.qrels:
                continue
            parsed, hits, vec = arm_lists(lexical, kb.context.vectors, text)
            out.append(
                Query(
                    qid,
                    [(h.kbid, h.score) for h in hits],
                    vec,
                    arm_signals(parsed, hits, vec),
                    cosine_gap([c for _, c in vec]),
                )
            )
        kbids = {k for x in out for k, _ in x.lexical + x.vector}
        with kb.context.db.read() as conn:
            docids = {k: tuple(v) for k, v in q.docids_of(conn, list(kbids)).items()}
        search = config_to_dict(kb.config)["search"]
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
    for w in CONVEX_W:
        out.append(Variant(f"convex w={w}", partial(_convex, weight=w)))
    out.append(Variant("previous default (rrf, coverage and gap ramps)", _previous))
    return out


def _rrf(x: Query, k: int) -> list[str]:
    return _kbids(fusion.rrf(x.lexical, x.vector, k=k))


def _linear(x: Query, weight: float) -> list[str]:
    return _kbids(fusion.linear(x.lexical, x.vector, weight=weight))


def _convex(x: Query, weight: float) -> list[str]:
    return _kbids(fusion.convex(x.lexical, x.vector, weights=(1.0 - weight, weight)))


def _previous(x: Query) -> list[str]:
    lo, hi = PREVIOUS["coverage"]
    glo, ghi = PREVIOUS["gap"]
    floor = PREVIOUS["floor"]
    w = (
        fusion.ramp(x.signals.coverage, lo, hi),
        floor + (1.0 - floor) * fusion.ramp(x.gap, glo, ghi),
    )
    return _kbids(fusion.rrf(x.lexical, x.vector, k=ADAPTIVE_RRF_K, weights=w))


def adaptive_name(p: fusion.AdaptiveParams) -> str:
    return (
        f"adaptive gate {p.gate_low:g}+{p.gate_high - p.gate_low:g} vector {p.vector_weight:g}"
        f" slope {p.agreement_slope:g} mix {p.rank_mix:g}"
    )


def adaptive_variants() -> list[Variant]:
    """The adaptive fusion over its grid, through the facade's ``fusion.adaptive``."""
    out: list[Variant] = []
    axes = (GATE_LOW, GATE_WIDTH, VECTOR_WEIGHT, AGREEMENT_SLOPE, RANK_MIX)
    for idx in itertools.product(*(range(len(a)) for a in axes)):
        lo, width, vw, slope, mix = (a[i] for a, i in zip(axes, idx, strict=True))
        params = fusion.AdaptiveParams(
            gate_low=lo,
            gate_high=round(lo + width, 6),
            vector_weight=vw,
            agreement_slope=slope,
            rank_mix=mix,
        )

        def fuse(x: Query, params: fusion.AdaptiveParams = params) -> list[str]:
            return _kbids(fusion.adaptive(x.lexical, x.vector, x.signals, params, k=ADAPTIVE_RRF_K))

        out.append(
            Variant(
                adaptive_name(params),
                fuse,
                family=("adaptive",),
                axes=idx,
                params=dataclasses.asdict(params),
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
    """Per set, the smaller of nDCG@10 − (max(lexical, vector) − TOLERANCE) and
    nDCG@10 − RRF k=60: at or above 0 where the variant holds both goals."""
    row = scores[variant]
    return {
        s: min(
            row[s] - max(scores["lexical"][s], scores["vector"][s]) + TOLERANCE,
            row[s] - scores["rrf k=60"][s],
        )
        for s in sets
    }


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
    """Among the variants that hold both goals on every set of ``sets`` (all of them when
    none does), the one with the best nDCG@10 on the paraphrase set (when measured), then
    by the leximin of the plateau margins, then of the variant's own margins."""
    flat = plateau(variants, scores, sets)

    def key(n: str) -> tuple[Any, ...]:
        holds = min(margins(scores, n, sets).values()) >= 0
        return (holds, round(scores[n].get("paraphrase", 0), 3), *rank_key(n, flat, scores, sets))

    return max(flat, key=key)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=MODEL, help="folder with model.onnx")
    ap.add_argument("--cache", type=Path, default=CACHE, help="knowledge bases, one per set")
    ap.add_argument("--sets", default=",".join(DEV_SETS), help="comma-separated dev sets")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="scoring processes")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="search.KEY=VALUE",
        help="a search setting for both arms, in memory (repeatable)",
    )
    args = ap.parse_args()
    overrides = dict(item.split("=", 1) for item in args.set if "=" in item)
    if len(overrides) != len(args.set) or any(not k.startswith("search.") for k in overrides):
        ap.error("--set takes search.KEY=VALUE")
    names = [s for s in args.sets.split(",") if s]
    unknown = [s for s in names if s not in DEV_SETS]
    if unknown:
        ap.error(f"unknown set(s) {unknown}; known: {', '.join(DEV_SETS)}")
    args.cache.mkdir(parents=True, exist_ok=True)
    devs = {n: open_set(n, DEV_SETS[n], args.model, args.cache, overrides) for n in names}
    real = [n for n in names if n not in ARM_SETS_EXCLUDED]

    t0 = time.perf_counter()
    variants = baselines() + adaptive_variants()
    shipped_params = params_of(SearchConfig())
    variants.append(
        Variant(
            SHIPPED,
            lambda x: _kbids(
                fusion.adaptive(x.lexical, x.vector, x.signals, shipped_params, k=ADAPTIVE_RRF_K)
            ),
        )
    )
    scores = score_all(variants, devs, args.jobs)
    print(f"{len(variants)} variants scored in {time.perf_counter() - t0:.1f} s", flush=True)
    shipped_name = adaptive_name(shipped_params)
    on_grid = shipped_name in scores
    if on_grid and any(abs(scores[shipped_name][n] - scores[SHIPPED][n]) > 1e-9 for n in names):
        print(f"the facade's adaptive fusion does not reproduce {shipped_name}", file=sys.stderr)
        return 1
    if not on_grid:
        shipped_name = SHIPPED
    variants = [v for v in variants if v.name != SHIPPED or not on_grid]
    scores = {n: v for n, v in scores.items() if n != SHIPPED or not on_grid}

    chosen = choose(variants, scores, real)
    flat = plateau(variants, scores, real)
    loo = {}
    if len(real) > 1:
        for held in real:
            rest = [n for n in real if n != held]
            pick = choose(variants, scores, rest)
            loo[held] = {"chosen_on_the_others": pick, **_margin_row(scores, pick, [held])}

    shown = [v.name for v in variants if not v.family]
    for extra in (shipped_name, chosen):
        if extra in scores and extra not in shown:
            shown.append(extra)
    rows = []
    for n in shown:
        m = margins(scores, n, real)
        tag = " (chosen)" if n == chosen else ""
        tag += " (shipped)" if n == shipped_name else ""
        cells = [f"{scores[n][s]:.4f}" for s in names]
        rows.append((n + tag, *cells, f"{min(m.values()):+.4f}"))
    print_table(
        "hybrid fusion, nDCG@10 per dev set (worst margin over the real sets: min of"
        f" nDCG − (max(lexical, vector) − {TOLERANCE}) and nDCG − RRF k=60)",
        ("variant", *names, "worst margin"),
        rows,
    )
    if loo:
        print_table(
            "leave one set out: chosen on the other real sets, margin on the held-out one",
            ("held out", "chosen on the others", "margin"),
            [(h, r["chosen_on_the_others"], f"{r['margins'][h]:+.4f}") for h, r in loo.items()],
        )

    goals = {}
    for n in dict.fromkeys((chosen, shipped_name)):
        if n not in scores:
            continue
        row = scores[n]
        g: dict[str, Any] = {}
        for s in names:
            best_arm = max(scores["lexical"][s], scores["vector"][s])
            g[s] = {
                "ndcg@10": round(row[s], 6),
                "over best arm": round(row[s] - best_arm, 6),
                "over rrf k=60": round(row[s] - scores["rrf k=60"][s], 6),
                f"met (>= best arm - {TOLERANCE} and >= rrf k=60)": row[s] >= best_arm - TOLERANCE
                and row[s] >= scores["rrf k=60"][s],
            }
        goals[n] = g
    print(f"chosen: {chosen}")
    print(f"shipped default: {shipped_name}" + (" (the same)" if shipped_name == chosen else ""))
    for n, g in goals.items():
        missed = [s for s, v in g.items() if not list(v.values())[-1]]
        print(f"goals, {n}: missed on {missed or 'none'}")

    best = sorted(flat, key=lambda n: rank_key(n, flat, scores, real), reverse=True)
    kept = list(dict.fromkeys([*shown, *best[:KEEP_BEST]]))
    write_result(
        "tune_fusion",
        {
            "model": str(args.model),
            "cache": str(args.cache),
            "settings": overrides,
            "candidates_per_arm": FUSION_CANDIDATES,
            "adaptive_rrf_k": ADAPTIVE_RRF_K,
            "tolerance": TOLERANCE,
            "real_sets": real,
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
                "gate_low": GATE_LOW,
                "gate_width": GATE_WIDTH,
                "vector_weight": VECTOR_WEIGHT,
                "agreement_slope": AGREEMENT_SLOPE,
                "rank_mix": RANK_MIX,
                "variants_scored": len(variants),
            },
            "kept": f"the baselines, the chosen and shipped variants and the {KEEP_BEST} best"
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
