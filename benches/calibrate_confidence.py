"""Fit the per-mode confidence models and verdict thresholds of ``kbdb.search.confidence``
on every dev set (SPEC §4.3: confidence "must be calibrated on the benchmark, so that it is
comparable across queries").

Each dev set (SciFact, Cranfield, MEDLINE, LISA, TIME, LoCoMo and the paraphrase set) is
opened as ``benches/tune_fusion.py`` opens it: learned once into ``CACHE/<set>`` with the
local ONNX model (a re-run finds it learned and embedded). For each judged query this
bench takes, as the product does, the lexical list (``LexicalSearcher.rank`` with the
shipped ``SearchConfig``, 100 candidates: strict-then-relaxed fill and sibling boost), the
vector list (100) and the fused list (``fusion.adaptive`` with ``hybrid.arm_signals`` and
the shipped ``params_of``), and the raw features of the top-10 hits of each mode:

- lexical: saturation (BM25F score without boosts over the sum of the clause bounds, at
  most 1), coverage of the required words (``hybrid.coverage``), the score over the best
  hit's (at most 1), and whether it is the best hit;
- vector: the cosine, the cosine minus the best, the list's gap (``cosine_gap``), first;
- hybrid: the log-odds of the hit's lexical and vector confidence, each in its own list
  (0 and a "missing" flag when it is not in that list), the lists' agreement, first.

A hit is relevant when one of its documents is judged relevant (qrel > 0).

Fit: per mode, a logistic regression (IRLS, a tiny L2, ``L2``) over the top-10 hits of
every judged query, each set weighing 1 in total; lexical and vector first, then hybrid on
their fitted confidences. The fitted weights, rounded to 3 decimals, are compared with the
constants shipped in ``confidence.py``.

Thresholds (answered at or above A, unanswered below U, on the top hit's fitted
confidence): A on 0.3..0.95 and U on 0.05..A, steps of 0.025; the goal is, on every set,
at least 70 % of answered top hits relevant and at most 25 % of unanswered ones. The pair
chosen minimizes the worst violation of the goal over the sets, then maximizes the
smallest share of a set's queries that get a clear verdict (answered or unanswered), then
the mean share (ties: the smallest A, then U). The search looks at the confidence alone:
the relaxed rule below is not applied.

Report, per set and mode, under the SHIPPED constants and thresholds (through the
product's own ``confidence``, ``vector_confidence``, ``hybrid_confidence`` and
``verdict``, with its rule that a relaxed lexical top hit is at most partial): the expected
calibration error (10 bins) of the top-1 and of the top-10 confidences, P@1, and per
verdict the number of queries and the share whose top hit is relevant, with the goal check.
A query without any hit is ``unanswered`` (its top hit counts as not relevant). Then leave
one set out: the three models fitted on the other sets, the held-out set's top-1 ECE. The
product's own confidences (``LexicalSearcher.hydrate``, ``hybrid._hit``) are compared with
those computed here from the raw features, as a check that the features are the product's.

    python benches/calibrate_confidence.py [--model DIR] [--cache DIR] [--sets scifact,...]

Writes ``benches/results/calibrate_confidence.json``. Paste new weights and thresholds into
``python/kbdb/search/confidence.py`` when they differ.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import tune_fusion  # noqa: E402
from common import print_table, write_result  # noqa: E402
from kbdb.config import SearchConfig, config_to_dict  # noqa: E402
from kbdb.evaluation.beir import BeirDataset  # noqa: E402
from kbdb.search import confidence as shipped  # noqa: E402
from kbdb.search import fusion  # noqa: E402
from kbdb.search.confidence import (  # noqa: E402
    Mode,
    confidence,
    cosine_gap,
    hybrid_confidence,
    vector_confidence,
    verdict,
)
from kbdb.search.hybrid import (  # noqa: E402
    FUSION_CANDIDATES,
    _hit,
    _Lists,
    arm_signals,
    coverage,
    params_of,
)
from kbdb.search.lexical import LexicalSearcher  # noqa: E402

MODES: tuple[Mode, ...] = ("lexical", "vector", "hybrid")
FEATURES = {
    "lexical": ("1", "saturation", "coverage", "relative", "first"),
    "vector": ("1", "cosine", "cosine - best", "gap", "first"),
    "hybrid": (
        "1",
        "lexical log-odds",
        "not in lexical",
        "vector log-odds",
        "not in vector",
        "agreement",
        "first",
    ),
}
SHIPPED_WEIGHTS = {"lexical": shipped.LEXICAL, "vector": shipped.VECTOR, "hybrid": shipped.HYBRID}
TOP = 10  # hits per query that the models are fitted and judged on
L2 = 1e-6  # ridge on the weights; the sets' weights sum to 1 each
IRLS_STEPS = 50
DIGITS = 3  # the constants in confidence.py
BINS = 10  # ECE bins
ANSWERED_GRID = (0.3, 0.95)
UNANSWERED_FROM = 0.05
GRID_STEP = 0.025
ANSWERED_MIN = 0.70  # goal: answered top hits relevant, at least
UNANSWERED_MAX = 0.25  # goal: unanswered top hits relevant, at most
VERDICTS = ("answered", "partial", "unanswered")

# Raw features: lexical (score without boosts, bound, coverage, relative, first), the
# arguments of ``confidence``; vector (cosine, best cosine, gap, first), those of
# ``vector_confidence``.
LexRaw = tuple[float, float, float, float, bool]
VecRaw = tuple[float, float, float, bool]
# A query's top hit: (confidence, None without a hit; relevant; relaxed lexical match).
Top = tuple[float | None, float, bool]


@dataclass(frozen=True)
class Query:
    qid: str
    lexical: list[LexRaw]  # every lexical candidate, best first
    lexical_rel: list[float]
    relaxed: bool  # the lexical top hit is a relaxed match (or the whole ranking is)
    vector: list[VecRaw]
    vector_rel: list[float]
    # The fused top 10: (index in the lexical list, index in the vector list, relevant).
    fused: list[tuple[int | None, int | None, float]]
    agreement: float


@dataclass(frozen=True)
class DevSet:
    name: str
    dataset: BeirDataset
    queries: list[Query]
    search: dict[str, Any]
    mismatches: dict[str, int]  # product confidences that differ from ours, per mode
    compared: dict[str, int]


@dataclass(frozen=True)
class Rows:
    """The top-10 hits of one mode over all sets: features, label, set, rank, and the
    confidence under the shipped constants (and, lexical, whether the query's top hit is
    a relaxed match)."""

    x: np.ndarray
    y: np.ndarray
    sets: np.ndarray
    rank: np.ndarray
    shipped: np.ndarray
    relaxed: np.ndarray


def open_set(name: str, folder: Path, model: Path, cache: Path) -> DevSet:
    """Open (learn on the first run) the set's knowledge base as ``tune_fusion`` does, and
    collect each judged query's three lists with their raw features."""
    from kbdb.store import queries as q

    t0 = time.perf_counter()
    with tune_fusion.learned_set(name, folder, model, cache) as (kb, ds):
        ctx = kb.context
        cfg = SearchConfig()
        lex = LexicalSearcher(ctx.index.core, ctx.db, ctx.index.analyzer, ctx.synonyms(), cfg)
        params = params_of(cfg)
        mismatches: dict[str, int] = {m: 0 for m in MODES}
        compared: dict[str, int] = {m: 0 for m in MODES}
        raw = []
        for qid, text in ds.queries:
            if qid not in ds.qrels:
                continue
            parsed, hits, vec = tune_fusion.arm_lists(lex, ctx.vectors, text)
            signals = arm_signals(parsed, hits, vec)
            fused = fusion.adaptive(
                [(h.kbid, h.score) for h in hits], vec, signals, params, k=kb.config.embedding.rrf_k
            )
            best = hits[0].score if hits else 0.0
            lex_raw: list[LexRaw] = [
                (
                    h.score / h.boost,
                    h.bound,
                    coverage(h.matched, parsed),
                    h.score / best if best > 0 else 1.0,
                    best <= 0 or h.score >= best,
                )
                for h in hits
            ]
            cos_best = vec[0][1] if vec else 0.0
            gap = cosine_gap([c for _, c in vec])
            vec_raw: list[VecRaw] = [(c, cos_best, gap, i == 0) for i, (_, c) in enumerate(vec)]
            # The product's own confidences, to check that the raw features are its own.
            items = lex.hydrate(parsed, hits[:TOP], content=False, explain=False, best=best)
            ours = [confidence(*r) for r in lex_raw[:TOP]]
            differ = [a.confidence != b for a, b in zip(items, ours, strict=False)]
            mismatches["lexical"] += sum(differ)
            compared["lexical"] += len(items)
            lists = _Lists(best, cos_best, gap, signals.agreement)
            by_kbid = {h.kbid: h for h in hits}
            vector_only = fusion.rrf([], vec, k=kb.config.embedding.rrf_k)
            for mode, ranked in (("vector", vector_only), ("hybrid", fused)):
                for rank, f in enumerate(ranked[:TOP]):
                    h = by_kbid.get(f.kbid) if mode == "hybrid" else None
                    first = rank == 0
                    product = _hit(f, h, parsed, mode, "adaptive", signals, lists, first).confidence
                    li = None if f.lexical_rank is None else f.lexical_rank - 1
                    vi = None if f.vector_rank is None else f.vector_rank - 1
                    if mode == "vector":
                        mine = vector_confidence(*vec_raw[vi]) if vi is not None else 0.0
                    else:
                        mine = hybrid_confidence(
                            None if li is None else confidence(*lex_raw[li]),
                            None if vi is None else vector_confidence(*vec_raw[vi]),
                            signals.agreement,
                            rank == 0,
                        )
                    mismatches[mode] += product != mine
                    compared[mode] += 1
            # No strict hit at all: the whole ranking is relaxed (``Ranking.relaxed``).
            all_relaxed = bool(hits) and all(h.relaxed for h in hits)
            raw.append((qid, hits, vec, lex_raw, vec_raw, fused, signals.agreement, all_relaxed))
        kbids = {h.kbid for x in raw for h in x[1]} | {k for x in raw for k, _ in x[2]}
        with ctx.db.read() as conn:
            docids = {k: tuple(v) for k, v in q.docids_of(conn, list(kbids)).items()}
        search = config_to_dict(kb.config)["search"]

    def relevant(qid: str, kbid: str) -> float:
        qrels = ds.qrels[qid]
        return 1.0 if any(qrels.get(d, 0) > 0 for d in docids.get(kbid, ())) else 0.0

    queries = []
    for qid, hits, vec, lex_raw, vec_raw, fused, agree, all_relaxed in raw:
        lex_rel = [relevant(qid, h.kbid) for h in hits]
        vec_rel = [relevant(qid, k) for k, _ in vec]
        top = [
            (
                None if f.lexical_rank is None else f.lexical_rank - 1,
                None if f.vector_rank is None else f.vector_rank - 1,
                relevant(qid, f.kbid),
            )
            for f in fused[:TOP]
        ]
        relaxed = all_relaxed or bool(hits and hits[0].relaxed)
        queries.append(Query(qid, lex_raw, lex_rel, relaxed, vec_raw, vec_rel, top, agree))
    print(f"{name}: {len(queries)} judged queries in {time.perf_counter() - t0:.1f} s", flush=True)
    return DevSet(name, ds, queries, search, mismatches, compared)


# Features, as ``confidence.py`` computes them.


def lexical_features(r: LexRaw) -> list[float]:
    score, bound, cov, relative, first = r
    saturation = min(score / bound, 1.0) if bound > 0 else 0.0
    return [saturation, cov, min(relative, 1.0), float(first)]


def vector_features(r: VecRaw) -> list[float]:
    cosine, best, gap, first = r
    return [cosine, cosine - best, gap, float(first)]


def log_odds(p: float) -> float:
    p = min(max(p, 1e-4), 1.0 - 1e-4)
    return math.log(p / (1.0 - p))


def hybrid_features(lex: float | None, vec: float | None, agree: float, first: bool) -> list[float]:
    return [
        0.0 if lex is None else log_odds(lex),
        float(lex is None),
        0.0 if vec is None else log_odds(vec),
        float(vec is None),
        agree,
        float(first),
    ]


# Logistic regression.


def sigmoid(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-z))
    return out


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted logistic regression by IRLS (Newton) with an L2 ridge; x gets a bias column."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    beta = np.zeros(xb.shape[1])
    ridge = L2 * np.eye(len(beta))
    for _ in range(IRLS_STEPS):
        p = sigmoid(xb @ beta)
        hess = xb.T @ (xb * (w * p * (1 - p))[:, None]) + ridge
        grad = xb.T @ (w * (y - p)) - L2 * beta
        beta = beta + np.linalg.solve(hess, grad)
    return beta


def predict(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    return sigmoid(np.hstack([np.ones((len(x), 1)), x]) @ beta)


def set_weights(rows: Rows, fitted_on: Sequence[str]) -> np.ndarray:
    """Each set in ``fitted_on`` weighs 1 in total; the others 0."""
    w = np.zeros(len(rows.y))
    for n in fitted_on:
        m = rows.sets == n
        w[m] = 1.0 / m.sum()
    return w


def ece(p: np.ndarray, y: np.ndarray) -> float:
    """Expected calibration error over ``BINS`` equal-width bins (the last one closed)."""
    if not len(p):
        return float("nan")
    err = 0.0
    for b in range(BINS):
        lo, hi = b / BINS, (b + 1) / BINS
        m = (p >= lo) & ((p < hi) if b < BINS - 1 else (p <= hi))
        if m.any():
            err += m.sum() / len(p) * abs(p[m].mean() - y[m].mean())
    return float(err)


# Rows of each mode.

ArmModel = Callable[[Any], float]


def make_rows(
    mode: str, devs: dict[str, DevSet], lex_arm: ArmModel | None, vec_arm: ArmModel | None
) -> Rows:
    """The top-10 hits of ``mode``; hybrid features use ``lex_arm`` and ``vec_arm`` (raw
    features to confidence: the fitted models), the shipped confidence the shipped ones."""
    x, y, sets, rank, ship, relaxed = [], [], [], [], [], []
    for name, dev in devs.items():
        for q in dev.queries:
            if mode == "lexical":
                items = [
                    (lexical_features(r), rel, confidence(*r))
                    for r, rel in zip(q.lexical[:TOP], q.lexical_rel, strict=False)
                ]
            elif mode == "vector":
                items = [
                    (vector_features(r), rel, vector_confidence(*r))
                    for r, rel in zip(q.vector[:TOP], q.vector_rel, strict=False)
                ]
            else:
                assert lex_arm is not None and vec_arm is not None
                items = []
                for i, (li, vi, rel) in enumerate(q.fused):
                    lr = None if li is None else q.lexical[li]
                    vr = None if vi is None else q.vector[vi]
                    feats = hybrid_features(
                        None if lr is None else lex_arm(lr),
                        None if vr is None else vec_arm(vr),
                        q.agreement,
                        i == 0,
                    )
                    conf = hybrid_confidence(
                        None if lr is None else confidence(*lr),
                        None if vr is None else vector_confidence(*vr),
                        q.agreement,
                        i == 0,
                    )
                    items.append((feats, rel, conf))
            for i, (feats, rel, conf) in enumerate(items):
                x.append(feats)
                y.append(rel)
                sets.append(name)
                rank.append(i)
                ship.append(conf)
                relaxed.append(mode == "lexical" and q.relaxed)
    return Rows(
        np.array(x, dtype=float).reshape(len(x), len(FEATURES[mode]) - 1),
        np.array(y),
        np.array(sets),
        np.array(rank),
        np.array(ship),
        np.array(relaxed),
    )


def fit_modes(devs: dict[str, DevSet], fitted_on: Sequence[str]) -> dict[str, Any]:
    """The three models fitted on ``fitted_on``: {mode: (beta, rows, fitted confidences)}."""
    out: dict[str, Any] = {}
    for mode in ("lexical", "vector"):
        rows = make_rows(mode, devs, None, None)
        beta = fit(rows.x, rows.y, set_weights(rows, fitted_on))
        out[mode] = (beta, rows, predict(beta, rows.x))
    bl, bv = out["lexical"][0], out["vector"][0]

    def lex_arm(r: LexRaw) -> float:
        return float(predict(bl, np.array([lexical_features(r)]))[0])

    def vec_arm(r: VecRaw) -> float:
        return float(predict(bv, np.array([vector_features(r)]))[0])

    rows = make_rows("hybrid", devs, lex_arm, vec_arm)
    beta = fit(rows.x, rows.y, set_weights(rows, fitted_on))
    out["hybrid"] = (beta, rows, predict(beta, rows.x))
    return out


# Thresholds.


def grid(lo: float, hi: float) -> list[float]:
    n = round((hi - lo) / GRID_STEP)
    return [round(lo + i * GRID_STEP, 3) for i in range(n + 1)]


def tops(rows: Rows, conf: np.ndarray, n_queries: dict[str, int]) -> dict[str, list[Top]]:
    """Per set, each query's (top confidence, top relevant, relaxed); a query without a hit
    is (None, 0, False)."""
    out: dict[str, list[Top]] = {}
    for name, n in n_queries.items():
        m = (rows.sets == name) & (rows.rank == 0)
        t: list[Top] = list(
            zip(conf[m].tolist(), rows.y[m].tolist(), rows.relaxed[m].tolist(), strict=True)
        )
        out[name] = t + [(None, 0.0, False)] * (n - len(t))
    return out


def split(
    top: list[Top], answered_at: float, unanswered_below: float
) -> tuple[list[float], list[float], list[float]]:
    """The top hits' labels of the answered, partial and unanswered queries, by the
    confidence alone (the relaxed rule is not applied)."""
    a: list[float] = []
    p: list[float] = []
    u: list[float] = []
    for c, y, _ in top:
        if c is None or c < unanswered_below:
            u.append(y)
        elif c >= answered_at:
            a.append(y)
        else:
            p.append(y)
    return a, p, u


def choose_thresholds(by_set: dict[str, list[Top]]) -> dict[str, Any]:
    best: tuple[tuple[float, float, float], float, float] | None = None
    for a_at in grid(*ANSWERED_GRID):
        for u_below in grid(UNANSWERED_FROM, a_at - GRID_STEP):
            violation = 0.0
            covered = []
            for top in by_set.values():
                a, _, u = split(top, a_at, u_below)
                share_a = mean(a) if a else 1.0
                share_u = mean(u) if u else 0.0
                violation = max(violation, ANSWERED_MIN - share_a, share_u - UNANSWERED_MAX)
                covered.append((len(a) + len(u)) / len(top))
            key = (-round(max(violation, 0.0), 3), min(covered), mean(covered))
            if best is None or key > best[0]:
                best = (key, a_at, u_below)
    assert best is not None
    key, a_at, u_below = best
    return {
        "answered_at": a_at,
        "unanswered_below": u_below,
        "worst_violation": -key[0],
        "min_clear_share": round(key[1], 4),
        "mean_clear_share": round(key[2], 4),
    }


def verdict_report(top: list[Top], mode: Mode) -> dict[str, Any]:
    """Per verdict (the product's ``verdict`` with the shipped thresholds), the queries and
    the share whose top hit is relevant; the goal check."""
    groups: dict[str, list[float]] = {v: [] for v in VERDICTS}
    for c, y, relaxed in top:
        groups[verdict(c, relaxed, mode)].append(y)
    out: dict[str, Any] = {
        v: {"queries": len(g), "relevant": round(mean(g), 4) if g else None}
        for v, g in groups.items()
    }
    a, u = groups["answered"], groups["unanswered"]
    out["goal_met"] = (not a or mean(a) >= ANSWERED_MIN) and (not u or mean(u) <= UNANSWERED_MAX)
    return out


def pct(g: dict[str, Any]) -> str:
    return f"{g['queries']} / {g['relevant'] * 100:.0f}%" if g["queries"] else "0 / —"


def weights_str(w: Sequence[float]) -> str:
    return "(" + ", ".join(f"{x:.3f}" for x in w) + ")"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=tune_fusion.MODEL, help="folder, model.onnx")
    ap.add_argument("--cache", type=Path, default=tune_fusion.CACHE, help="one KB per set")
    ap.add_argument("--sets", default=",".join(tune_fusion.DEV_SETS), help="comma-separated")
    args = ap.parse_args()
    names = [s for s in args.sets.split(",") if s]
    unknown = [s for s in names if s not in tune_fusion.DEV_SETS]
    if unknown:
        ap.error(f"unknown set(s) {unknown}; known: {', '.join(tune_fusion.DEV_SETS)}")
    args.cache.mkdir(parents=True, exist_ok=True)
    devs = {n: open_set(n, tune_fusion.DEV_SETS[n], args.model, args.cache) for n in names}
    n_queries = {n: len(d.queries) for n, d in devs.items()}

    t0 = time.perf_counter()
    fits = fit_modes(devs, names)
    weights: dict[str, Any] = {}
    thresholds: dict[str, Any] = {}
    for mode in MODES:
        beta, rows, p = fits[mode]
        fitted = [round(float(b), DIGITS) for b in beta]
        ship = list(SHIPPED_WEIGHTS[mode])
        weights[mode] = {
            "features": FEATURES[mode],
            "fitted": fitted,
            "shipped": ship,
            "max_abs_difference": round(
                max(abs(a - b) for a, b in zip(fitted, ship, strict=True)), DIGITS
            ),
            "equal": fitted == ship,
        }
        thresholds[mode] = {
            "fitted": choose_thresholds(tops(rows, p, n_queries)),
            "shipped": list(shipped.THRESHOLDS[mode]),
        }
    print_table(
        "confidence weights per mode, in confidence.py's order: fitted on every set (rounded)"
        " vs shipped",
        ("mode", "fitted", "shipped", "max |diff|", "equal"),
        [
            (
                m,
                weights_str(w["fitted"]),
                weights_str(w["shipped"]),
                w["max_abs_difference"],
                "yes" if w["equal"] else "NO",
            )
            for m, w in weights.items()
        ],
    )
    print_table(
        "verdict thresholds (answered at or above A, unanswered below U; fitted confidences):"
        f" goal >= {ANSWERED_MIN:.0%} answered relevant, <= {UNANSWERED_MAX:.0%} unanswered"
        " relevant on every set",
        ("mode", "A", "U", "worst violation", "min clear", "mean clear", "shipped A, U"),
        [
            (
                m,
                t["fitted"]["answered_at"],
                t["fitted"]["unanswered_below"],
                t["fitted"]["worst_violation"],
                t["fitted"]["min_clear_share"],
                t["fitted"]["mean_clear_share"],
                ", ".join(f"{x:g}" for x in t["shipped"]),
            )
            for m, t in thresholds.items()
        ],
    )

    # The shipped constants, per set and mode.
    report: dict[str, dict[str, Any]] = {n: {} for n in names}
    for mode in MODES:
        _, rows, _ = fits[mode]
        top_by_set = tops(rows, rows.shipped, n_queries)
        for n in names:
            m = rows.sets == n
            first = m & (rows.rank == 0)
            top = top_by_set[n]
            report[n][mode] = {
                "ece_top1": round(ece(rows.shipped[first], rows.y[first]), 4),
                "ece_top10": round(ece(rows.shipped[m], rows.y[m]), 4),
                "p@1": round(mean(y for _, y, _ in top), 4),
                "mean_confidence_top1": round(float(rows.shipped[first].mean()), 4)
                if first.any()
                else None,
                "queries_without_hits": sum(c is None for c, _, _ in top),
                "relaxed_top_hits": sum(bool(r) for _, _, r in top),
                "verdicts": verdict_report(top, mode),
            }
    print_table(
        "per set and mode, shipped constants and thresholds: ECE (10 bins) of the top-1 and"
        " top-10 confidences, P@1, mean top-1 confidence; per verdict: queries / share whose"
        " top hit is relevant",
        (
            "set",
            "mode",
            "ECE@1",
            "ECE@10",
            "P@1",
            "conf@1",
            "answered",
            "partial",
            "unanswered",
            "goal",
        ),
        [
            (
                n,
                mode,
                r["ece_top1"],
                r["ece_top10"],
                r["p@1"],
                r["mean_confidence_top1"],
                pct(r["verdicts"]["answered"]),
                pct(r["verdicts"]["partial"]),
                pct(r["verdicts"]["unanswered"]),
                "met" if r["verdicts"]["goal_met"] else "NOT met",
            )
            for n in names
            for mode, r in report[n].items()
        ],
    )

    # Leave one set out: fitted on the others, the held-out set's calibration.
    loso: dict[str, dict[str, Any]] = {}
    if len(names) > 1:
        for held in names:
            rest = [n for n in names if n != held]
            f = fit_modes(devs, rest)
            loso[held] = {}
            for mode in MODES:
                beta, rows, p = f[mode]
                m = rows.sets == held
                first = m & (rows.rank == 0)
                loso[held][mode] = {
                    "ece_top1": round(ece(p[first], rows.y[first]), 4),
                    "ece_top10": round(ece(p[m], rows.y[m]), 4),
                    "weights": [round(float(b), DIGITS) for b in beta],
                }
        print_table(
            "leave one set out: the three models fitted on the other sets; the held-out set's"
            " top-1 ECE (and, in brackets, under the shipped constants)",
            ("held out", *MODES),
            [
                (
                    h,
                    *(
                        f"{r[mode]['ece_top1']:.3f} ({report[h][mode]['ece_top1']:.3f})"
                        for mode in MODES
                    ),
                )
                for h, r in loso.items()
            ],
        )
    print(f"fitted and reported in {time.perf_counter() - t0:.1f} s")
    checks = {
        mode: {
            "compared": sum(d.compared[mode] for d in devs.values()),
            "differ": sum(d.mismatches[mode] for d in devs.values()),
        }
        for mode in MODES
    }
    print(
        "the product's confidences (hydrate, hybrid._hit) vs ours from the raw features: "
        + ", ".join(f"{m} {c['differ']} of {c['compared']} differ" for m, c in checks.items())
    )
    same = all(w["equal"] for w in weights.values())
    print("fitted weights " + ("equal the shipped ones" if same else "DIFFER from the shipped"))
    for m, w in weights.items():
        if not w["equal"]:
            new, old = weights_str(w["fitted"]), weights_str(w["shipped"])
            print(f"  {m.upper()} = {new}  # shipped {old}")

    write_result(
        "calibrate_confidence",
        {
            "model": str(args.model),
            "cache": str(args.cache),
            "candidates_per_list": FUSION_CANDIDATES,
            "top_hits": TOP,
            "fit": {"method": "IRLS", "steps": IRLS_STEPS, "l2": L2, "set_weight": 1.0},
            "threshold_grid": {
                "answered": ANSWERED_GRID,
                "unanswered_from": UNANSWERED_FROM,
                "step": GRID_STEP,
                "goal": {"answered_min": ANSWERED_MIN, "unanswered_max": UNANSWERED_MAX},
            },
            "datasets": {
                n: {
                    "path": str(tune_fusion.DEV_SETS[n]),
                    "judged_queries": len(d.queries),
                    "checksums": d.dataset.checksums,
                    "search": d.search,
                }
                for n, d in devs.items()
            },
            "weights": weights,
            "thresholds": thresholds,
            "shipped_per_set": report,
            "leave_one_set_out": loso,
            "product_check": checks,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
