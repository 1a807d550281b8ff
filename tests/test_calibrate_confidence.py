"""``benches/calibrate_confidence.py``: its features against the product's confidence
functions, the weighted fit, the ECE, the threshold choice and the verdict report."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHES = Path(__file__).resolve().parents[1] / "benches"
sys.path.insert(0, str(BENCHES))

import calibrate_confidence as cc  # noqa: E402
from kbdb.search import confidence as shipped  # noqa: E402


def _logistic(weights: tuple[float, ...], feats: list[float]) -> float:
    return 1.0 / (
        1.0 + math.exp(-(weights[0] + sum(w * x for w, x in zip(weights[1:], feats, strict=True))))
    )


@pytest.mark.parametrize(
    "raw",
    [(3.0, 10.0, 0.5, 0.8, False), (12.0, 10.0, 1.0, 1.0, True), (2.0, 0.0, 0.0, 1.7, False)],
)
def test_lexical_features_are_the_products(raw: cc.LexRaw) -> None:
    expected = _logistic(shipped.LEXICAL, cc.lexical_features(raw))
    assert shipped.confidence(*raw) == pytest.approx(expected, abs=1e-4)


def test_vector_and_hybrid_features_are_the_products() -> None:
    cosines = [0.8, 0.6, 0.55, 0.5]
    raw = (0.6, 0.8, shipped.cosine_gap(cosines), False)
    vec = shipped.vector_confidence(*raw)
    assert vec == pytest.approx(_logistic(shipped.VECTOR, cc.vector_features(raw)), abs=1e-4)
    for lex in (None, 0.3):
        for v in (None, vec):
            feats = cc.hybrid_features(lex, v, 0.4, True)
            expected = _logistic(shipped.HYBRID, feats)
            assert shipped.hybrid_confidence(lex, v, 0.4, True) == pytest.approx(expected, abs=1e-4)


def test_fit_recovers_the_weights_and_each_set_weighs_the_same() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 2))
    y = (rng.random(4000) < cc.predict(np.array([-0.5, 2.0, -1.0]), x)).astype(float)
    rows = cc.Rows(
        x, y, np.array(["a"] * 3000 + ["b"] * 1000), np.zeros(4000), np.zeros(4000), np.zeros(4000)
    )
    w = cc.set_weights(rows, ["a", "b"])
    assert w[:3000].sum() == pytest.approx(1.0) and w[3000:].sum() == pytest.approx(1.0)
    assert cc.set_weights(rows, ["a"])[3000:].sum() == 0.0
    assert cc.fit(x, y, w) == pytest.approx([-0.5, 2.0, -1.0], abs=0.2)


def test_ece_bins_by_confidence() -> None:
    # Bin [0.9, 1] (1 falls in the last one): 0.95 and 1.0, one relevant: |0.975 - 0.5| · 2/4.
    # Bin [0.1, 0.2): 0.1 and 0.15, none relevant: 0.125 · 2/4.
    p = np.array([0.95, 1.0, 0.1, 0.15])
    y = np.array([1.0, 0.0, 0.0, 0.0])
    assert cc.ece(p, y) == pytest.approx((0.475 + 0.125) / 2)
    assert math.isnan(cc.ece(np.array([]), np.array([])))


def test_thresholds_meet_the_goal_then_cover_the_most_queries() -> None:
    top = [(0.9, 1.0, False), (0.85, 1.0, False), (0.5, 1.0, False), (0.1, 0.0, False)]
    t = cc.choose_thresholds({"a": top})
    # Every query gets a clear verdict at A = 0.3 with U = 0.125 (the first such pair).
    assert (t["answered_at"], t["unanswered_below"]) == (0.3, 0.125)
    assert t["worst_violation"] == 0.0 and t["min_clear_share"] == 1.0
    # Another set's 0.9 is not relevant: A rises above it (the first A that meets the goal
    # on both sets), U stays at or below A's 0.5 (relevant) and takes both sets' lows.
    t = cc.choose_thresholds({"a": top, "b": [(0.9, 0.0, False), (0.2, 0.0, False)]})
    assert (t["answered_at"], t["unanswered_below"]) == (0.925, 0.225)
    assert t["worst_violation"] == 0.0 and t["min_clear_share"] == 0.25


def test_verdict_report_counts_and_applies_the_relaxed_rule() -> None:
    a, u = shipped.THRESHOLDS["lexical"]
    top = [(a, 1.0, False), (a, 1.0, True), (u / 2, 0.0, False), (None, 0.0, False)]
    r = cc.verdict_report(top, "lexical")
    assert r["answered"] == {"queries": 1, "relevant": 1.0}
    assert r["partial"] == {"queries": 1, "relevant": 1.0}  # relaxed: at most partial
    assert r["unanswered"] == {"queries": 2, "relevant": 0.0}
    assert r["goal_met"] is True
