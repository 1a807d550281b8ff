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
    VECTOR_FLOOR,
    AdaptiveParams,
    Signals,
    adaptive,
    arm_weights,
    convex,
    cosine_gap,
    linear,
    ramp,
    rrf,
)
from kbdb.search.hybrid import arm_signals, coverage, params_of

PARAMS = AdaptiveParams(coverage_low=0.45, coverage_high=0.55, gap_low=0.03, gap_high=0.18)


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


def test_cosine_gap_is_the_top_minus_the_mean_of_ranks_2_to_10() -> None:
    assert cosine_gap([0.5, 0.9, 0.6, 0.7]) == pytest.approx(0.9 - (0.7 + 0.6 + 0.5) / 3)
    twelve = [0.9] + [0.5] * 9 + [0.0, 0.0]  # ranks 11 and 12 are not counted
    assert cosine_gap(twelve) == pytest.approx(0.4)
    assert cosine_gap([0.8]) == 0.0 and cosine_gap([]) == 0.0


def test_arm_weights_follow_the_signals() -> None:
    def weights(cov: float, gap: float) -> tuple[float, float]:
        return arm_weights(Signals(coverage=cov, top_cosine=0.5, gap=gap), PARAMS)

    strong = weights(1.0, 0.3)
    assert strong == (1.0, 1.0)
    # A weak lexical arm (a relaxed scatter matching a fifth of the query) has no say.
    assert weights(0.2, 0.3) == (0.0, 1.0)
    assert weights(0.5, 0.3)[0] == pytest.approx(0.5)
    # A weak vector arm (no hit stands out) keeps only the floor.
    assert weights(1.0, 0.01) == (1.0, VECTOR_FLOOR)
    assert weights(1.0, 0.105)[1] == pytest.approx(VECTOR_FLOOR + (1 - VECTOR_FLOOR) * 0.5)
    # The shipped defaults are the ones in worker.toml.
    assert params_of(SearchConfig()) == PARAMS


def test_adaptive_order_on_hand_built_lists() -> None:
    lex = [("n1", 12.0), ("n2", 11.0), ("v2", 3.0)]
    vec = [("v1", 0.62), ("v2", 0.40), ("v3", 0.38), ("n1", 0.30)]
    gap = cosine_gap([c for _, c in vec])
    # Weak lexical arm: the vector order, untouched by the lexical noise; plain RRF instead
    # lifts n1 (in both lists) above the vector's best.
    weak = adaptive(lex, vec, Signals(0.2, 0.62, gap), PARAMS, k=60)
    assert [f.kbid for f in weak][:4] == ["v1", "v2", "v3", "n1"]
    assert [f.kbid for f in rrf(lex, vec, k=60)][0] == "n1"
    # Strong lexical arm and a vector arm without a standout: the lexical order leads.
    flat = [("v1", 0.41), ("v2", 0.40), ("v3", 0.40), ("n1", 0.39)]
    strong = adaptive(
        lex, flat, Signals(1.0, 0.41, cosine_gap([0.41, 0.40, 0.40, 0.39])), PARAMS, k=60
    )
    assert [f.kbid for f in strong][:3] == ["n1", "v2", "n2"]
    assert strong[0].score == pytest.approx(1 / 61 + VECTOR_FLOOR / 64)


def test_signals_from_a_real_lexical_ranking(kb: kbdb.KnowledgeBase) -> None:
    kb.learn_many(kbdb.LearnItem(text, docid=name) for name, text in FACTS.items())
    lexical = kb.context.searcher()

    def signals(query: str) -> tuple[Signals, list[bool]]:
        parsed = lexical.parse(query)
        hits = lexical.rank(parsed, want=100, page_end=100, allow=None, explain=False).hits
        return arm_signals(parsed, hits, []), [h.relaxed for h in hits]

    strict, relaxed = signals("redis session cache")
    assert strict.coverage == 1.0 and relaxed[0] is False
    assert strict.top_cosine is None and strict.gap == 0.0
    # Six required words, one of which ("team") matches: a relaxed scatter.
    weak, relaxed = signals("why did the team pick that storage engine")
    assert relaxed == [True]
    assert weak.coverage == pytest.approx(1 / 6)
    assert arm_weights(weak, PARAMS)[0] == 0.0
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
    assert ex["lexical_weight"] == 1.0  # a strict hit: every query word matched
    expected_vec = VECTOR_FLOOR + (1 - VECTOR_FLOOR) * ramp(signals["gap"], 0.03, 0.18)
    assert ex["vector_weight"] == pytest.approx(expected_vec, abs=1e-6)
    assert ex["lexical_part"] == pytest.approx(1 / 61, abs=1e-6)
    assert ex["vector_part"] == pytest.approx(ex["vector_weight"] / 61, abs=1e-6)
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
