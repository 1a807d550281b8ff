"""Fusion (SPEC §4.2): RRF, weighted RRF, linear, convex and the adaptive weights, checked
against hand-computed values; the adaptive signals from a real lexical ranking; and hybrid
search through the facade with the real all-MiniLM-L6-v2 model."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.test_hybrid import FACTS, _onnx_kb

import kbdb
from kbdb.config import SearchConfig
from kbdb.evaluation.run import override_config
from kbdb.search.fusion import (
    VECTOR_MIN,
    AdaptiveParams,
    Signals,
    adaptive,
    agreement,
    arm_weights,
    convex,
    linear,
    ramp,
    rrf,
)
from kbdb.search.hybrid import arm_signals, coverage, params_of

PARAMS = AdaptiveParams(
    gate_low=0.6, gate_high=0.75, vector_weight=0.35, agreement_slope=0.5, rank_mix=0.5
)


def test_rrf_matches_the_formula() -> None:
    lex = [("a", 9.0), ("b", 5.0), ("c", 1.0)]
    vec = [("c", 0.9), ("a", 0.8), ("d", 0.1)]
    fused = {f.kbid: f for f in rrf(lex, vec, k=60)}
    assert fused["a"].score == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"].score == pytest.approx(1 / 63 + 1 / 61)
    assert fused["b"].score == pytest.approx(1 / 62)  # missing from vector: contributes 0
    assert fused["d"].score == pytest.approx(1 / 63)
    assert fused["b"].vector_rank is None and fused["b"].lexical_rank == 2
    order = [f.kbid for f in rrf(lex, vec, k=60)]
    assert order == ["a", "c", "b", "d"]


def test_rrf_k60_is_the_seeds_unweighted_fusion() -> None:
    lex = [("a", 9.0), ("b", 5.0), ("c", 1.0)]
    vec = [("c", 0.9), ("a", 0.8), ("d", 0.1)]
    plain = rrf(lex, vec, k=60)
    assert plain == rrf(lex, vec, k=60, weights=(1.0, 1.0))
    assert {(f.lexical_weight, f.vector_weight) for f in plain} == {(1.0, 1.0)}


def test_weighted_rrf_multiplies_each_list() -> None:
    lex = [("a", 9.0), ("b", 5.0)]
    vec = [("b", 0.9), ("c", 0.8)]
    fused = {f.kbid: f for f in rrf(lex, vec, k=60, weights=(0.25, 1.0))}
    assert fused["a"].score == pytest.approx(0.25 / 61)
    assert fused["b"].score == pytest.approx(0.25 / 62 + 1 / 61)
    assert fused["b"].lexical_part == pytest.approx(0.25 / 62)
    assert fused["c"].score == pytest.approx(1 / 62)
    assert (fused["a"].lexical_weight, fused["a"].vector_weight) == (0.25, 1.0)
    # A lexical list with weight 0 cannot move the vector order.
    mute = rrf([("z", 30.0), ("c", 20.0)], vec, k=60, weights=(0.0, 1.0))
    assert [f.kbid for f in mute] == ["b", "c", "z"]


def test_rrf_one_empty_list_keeps_the_other_order() -> None:
    lex = [("x", 3.0), ("y", 2.0)]
    assert [f.kbid for f in rrf(lex, [], k=60)] == ["x", "y"]
    assert [f.kbid for f in rrf([], lex, k=60)] == ["x", "y"]


def test_linear_min_max_normalizes_each_list() -> None:
    lex = [("a", 10.0), ("b", 6.0), ("c", 2.0)]
    vec = [("b", 0.9), ("c", 0.5)]
    fused = {f.kbid: f for f in linear(lex, vec, weight=0.25)}
    assert fused["a"].score == pytest.approx(0.75 * 1.0)
    assert fused["b"].score == pytest.approx(0.75 * 0.5 + 0.25 * 1.0)
    assert fused["c"].score == pytest.approx(0.75 * 0.0 + 0.25 * 0.0)
    assert (fused["a"].lexical_weight, fused["a"].vector_weight) == (0.75, 0.25)
    single = linear([("only", 4.2)], [], weight=0.5)
    assert single[0].score == pytest.approx(0.5)


def test_convex_divides_each_list_by_its_best_score() -> None:
    lex = [("a", 10.0), ("b", 5.0)]
    vec = [("b", 0.8), ("c", 0.4), ("d", -0.2)]
    fused = {f.kbid: f for f in convex(lex, vec, weights=(0.5, 1.0))}
    assert fused["a"].score == pytest.approx(0.5 * 1.0)
    assert fused["b"].score == pytest.approx(0.5 * 0.5 + 1.0 * 1.0)
    assert fused["c"].score == pytest.approx(0.5)
    assert fused["d"].score == 0.0  # a negative cosine counts as 0
    assert [f.kbid for f in convex(lex, vec, weights=(0.5, 1.0))] == ["b", "a", "c", "d"]


def test_ties_break_by_kbid() -> None:
    fused = rrf([("b", 1.0)], [("a", 1.0)], k=60)
    assert [f.kbid for f in fused] == ["a", "b"]


def test_ramp() -> None:
    assert ramp(0.2, 0.45, 0.55) == 0.0
    assert ramp(0.45, 0.45, 0.55) == 0.0
    assert ramp(0.5, 0.45, 0.55) == pytest.approx(0.5)
    assert ramp(0.9, 0.45, 0.55) == 1.0
    assert ramp(0.5, 0.5, 0.5) == 0.0 and ramp(0.51, 0.5, 0.5) == 1.0  # a step


def test_agreement_is_the_share_of_the_vector_top_10_among_lexical_candidates() -> None:
    vec = [f"v{i}" for i in range(12)]
    assert agreement(["v0", "v3", "x", "v11"], vec) == pytest.approx(0.2)  # v11: rank 12
    assert agreement(["v0"], ["v0", "v1"]) == 0.5  # fewer than 10 vector hits
    assert agreement([], vec) == 0.0 and agreement(["v0"], []) == 0.0


def test_arm_weights_follow_the_signals() -> None:
    def weights(cov: float, agree: float) -> tuple[float, float]:
        return arm_weights(Signals(coverage=cov, agreement=agree, top_cosine=0.5), PARAMS)

    # Half the vector top 10 among the lexical candidates: the base vector share.
    assert weights(1.0, 0.5) == pytest.approx((0.65, 0.35))
    # Lists that agree give the vector list more say; lists that disagree, less.
    assert weights(1.0, 1.0) == pytest.approx((0.4, 0.6))
    assert weights(1.0, 0.0) == pytest.approx((0.9, 0.1))
    # A paraphrase: the lexical list matched little and shares nothing with the vector
    # list, so the gate closes it.
    assert weights(0.2, 0.1) == (0.0, pytest.approx(0.15))
    # Half way up the gate (coverage + agreement = 0.675).
    lex, vec = weights(0.375, 0.3)
    assert vec == pytest.approx(0.25) and lex == pytest.approx(0.75 * 0.5)
    # The vector share stays within [VECTOR_MIN, 1 - VECTOR_MIN].
    steep = AdaptiveParams(0.6, 0.75, 0.35, 2.0, 0.5)
    assert arm_weights(Signals(1.0, 1.0, 0.5), steep)[1] == 1 - VECTOR_MIN
    assert arm_weights(Signals(1.0, 0.0, 0.5), steep)[1] == VECTOR_MIN
    # The shipped defaults are the ones in worker.toml.
    assert params_of(SearchConfig()) == PARAMS


def test_adaptive_scores_on_hand_built_lists() -> None:
    lex = [("n1", 12.0), ("n2", 11.0), ("v2", 3.0)]
    vec = [("v1", 0.62), ("v2", 0.40), ("v3", 0.38), ("n1", 0.30)]
    signals = Signals(coverage=1.0, agreement=0.5, top_cosine=0.62)
    fused = {f.kbid: f for f in adaptive(lex, vec, signals, PARAMS, k=60)}
    w_lex, w_vec = 0.65, 0.35

    def part(w: float, norm: float, rank: int) -> float:
        return w * (0.5 * norm + 0.5 * 61 / (60 + rank))

    assert fused["n1"].score == pytest.approx(part(w_lex, 1.0, 1) + part(w_vec, 0.0, 4))
    assert fused["v2"].score == pytest.approx(
        part(w_lex, 0.0, 3) + part(w_vec, (0.40 - 0.30) / 0.32, 2)
    )
    assert fused["v1"].score == pytest.approx(part(w_vec, 1.0, 1))
    assert fused["n2"].lexical_weight == pytest.approx(w_lex)
    # A closed gate: the vector order, untouched by the lexical noise, which plain RRF
    # lifts above the vector's best (n1 is in both lists).
    weak = adaptive(lex, vec, Signals(0.2, 0.25, 0.62), PARAMS, k=60)
    assert [f.kbid for f in weak][:4] == ["v1", "v2", "v3", "n1"]
    assert [f.kbid for f in rrf(lex, vec, k=60)][0] == "n1"
    # Lexical-only hits that the closed gate scores 0 keep their lexical order below.
    assert [f.kbid for f in weak][4:] == ["n2"]


@pytest.mark.parametrize("seed", range(200))
def test_a_hit_both_lists_rank_above_another_is_fused_above_it(seed: int) -> None:
    import random

    rnd = random.Random(seed)
    pool = [f"k{i:02d}" for i in range(30)]
    lex_ids = rnd.sample(pool, rnd.randint(0, 25))
    vec_ids = rnd.sample(pool, rnd.randint(0, 25))
    lex_scores = sorted((rnd.uniform(0, 20) for _ in lex_ids), reverse=True)
    vec_scores = sorted((rnd.uniform(-0.2, 1) for _ in vec_ids), reverse=True)
    lex = list(zip(lex_ids, lex_scores, strict=True))
    vec = list(zip(vec_ids, vec_scores, strict=True))
    signals = Signals(rnd.random(), rnd.random(), None)
    params = AdaptiveParams(
        rnd.uniform(0, 1), rnd.uniform(0.5, 2), rnd.random(), rnd.uniform(0, 2), rnd.random()
    )
    lex_rank = {k: i for i, (k, _) in enumerate(lex)}
    vec_rank = {k: i for i, (k, _) in enumerate(vec)}
    miss = 1 << 20
    for fused in (
        adaptive(lex, vec, signals, params, k=60),
        rrf(lex, vec, k=rnd.choice([1, 60])),
        linear(lex, vec, weight=rnd.random()),
    ):
        pos = {f.kbid: i for i, f in enumerate(fused)}
        for a in pos:
            for b in pos:
                la, lb = lex_rank.get(a, miss), lex_rank.get(b, miss)
                va, vb = vec_rank.get(a, miss), vec_rank.get(b, miss)
                # a is at or above b in both lists, strictly in one of them.
                if la <= lb and va <= vb and (la, va) != (lb, vb):
                    assert pos[a] < pos[b], (a, b, la, lb, va, vb)


def test_signals_from_a_real_lexical_ranking(kb: kbdb.KnowledgeBase) -> None:
    kb.learn_many(kbdb.LearnItem(text, docid=name) for name, text in FACTS.items())
    lexical = kb.context.searcher()

    def signals(query: str) -> tuple[Signals, list[bool]]:
        parsed = lexical.parse(query)
        hits = lexical.rank(parsed, want=100, page_end=100, allow=None, explain=False).hits
        return arm_signals(parsed, hits, []), [h.relaxed for h in hits]

    strict, relaxed = signals("redis session cache")
    assert strict.coverage == 1.0 and relaxed[0] is False
    assert strict.top_cosine is None and strict.agreement == 0.0
    # Six required words, one of which ("team") matches: a relaxed scatter.
    weak, relaxed = signals("why did the team pick that storage engine")
    assert relaxed == [True]
    assert weak.coverage == pytest.approx(1 / 6)
    assert arm_weights(weak, PARAMS)[0] == 0.0  # and no agreement with an empty vector list
    parsed = lexical.parse("postgres jsonb redis")
    hit = lexical.rank(parsed, want=10, page_end=10, allow=None, explain=False).hits[0]
    assert coverage(hit.matched, parsed) == pytest.approx(2 / 3)
    assert signals("zebra quokka")[0].coverage == 0.0  # no lexical candidate


def test_weak_lexical_arm_cannot_push_the_vector_hits_down(hkb: kbdb.KnowledgeBase) -> None:
    # Only "team" matches lexically (a sixth of the query), and in the wrong section.
    q = "why did the team pick that storage engine"
    vector = [i.docids for i in hkb.search(q, mode="vector").items]
    hybrid = hkb.search(q, mode="hybrid", explain=True)
    assert [i.docids for i in hybrid.items] == vector
    team = next(i for i in hybrid.items if i.docids == ("team",))
    assert team.explain is not None
    assert team.explain["lexical_rank"] == 1 and team.explain["lexical_weight"] == 0.0
    assert team.explain["lexical_part"] == 0.0
    # The seed's plain RRF lets that one lexical match jump to the top.
    cfg = override_config(hkb.config, {"search.fusion": "rrf"})
    plain = kbdb.KnowledgeBase.open(hkb.path.parent, config=cfg)
    try:
        first = plain.search(q, mode="hybrid").items[0]
        assert first.docids == ("team",) != tuple(vector[0])
    finally:
        plain.close()


def test_explain_shows_each_arms_rank_score_and_weight(hkb: kbdb.KnowledgeBase) -> None:
    item = hkb.search("redis session cache", mode="hybrid", explain=True).items[0]
    assert item.docids == ("cache",)
    ex = item.explain
    assert ex is not None
    assert ex["fusion"] == "adaptive"
    assert ex["lexical_rank"] == 1 and ex["vector_rank"] == 1
    assert ex["lexical_score"] > 0 and 0.0 < ex["cosine"] <= 1.0
    signals = ex["signals"]
    assert signals["coverage"] == 1.0 and signals["top_cosine"] == ex["cosine"]
    expected_vec = min(max(0.35 + 0.5 * (signals["agreement"] - 0.5), 0.05), 0.95)
    assert ex["vector_weight"] == pytest.approx(expected_vec, abs=1e-6)
    # A strict hit (every query word matched): the gate is open.
    assert ex["lexical_weight"] == pytest.approx(1 - expected_vec, abs=1e-6)
    # Rank 1 of both lists, with each list's best score: each part is its whole weight.
    assert ex["lexical_part"] == pytest.approx(ex["lexical_weight"], abs=1e-6)
    assert ex["vector_part"] == pytest.approx(ex["vector_weight"], abs=1e-6)
    assert item.score == pytest.approx(ex["lexical_part"] + ex["vector_part"], abs=1e-6)


def test_rrf_and_linear_stay_selectable(tmp_path: Path, model: Path) -> None:
    kb = _onnx_kb(tmp_path / "kb", model)
    kb.learn_many(kbdb.LearnItem(text, docid=name) for name, text in FACTS.items())
    kb.close()
    for fusion, lex_w in (("rrf", 1.0), ("linear", 0.5)):
        cfg = override_config(kb.config, {"search.fusion": fusion})
        other = kbdb.KnowledgeBase.open(tmp_path / "kb", config=cfg)
        try:
            ex = other.search("redis session cache", mode="hybrid", explain=True).items[0].explain
        finally:
            other.close()
        assert ex is not None
        assert ex["fusion"] == fusion and "signals" not in ex
        assert ex["lexical_weight"] == lex_w
        if fusion == "rrf":
            assert ex["lexical_part"] == pytest.approx(1 / 61, abs=1e-6)
            assert ex["vector_part"] == pytest.approx(1 / 61, abs=1e-6)
