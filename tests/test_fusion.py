"""RRF and linear fusion (SPEC §4.2), checked against hand-computed values."""

from __future__ import annotations

import pytest

from kbdb.search.fusion import linear, rrf


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
    single = linear([("only", 4.2)], [], weight=0.5)
    assert single[0].score == pytest.approx(0.5)


def test_ties_break_by_kbid() -> None:
    fused = rrf([("b", 1.0)], [("a", 1.0)], k=60)
    assert [f.kbid for f in fused] == ["a", "b"]
