"""``benches/bench_calibration.py``: its core on a tiny dataset written here (lexical only),
and its ECE and summary against hand-computed values."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHES = Path(__file__).resolve().parents[1] / "benches"
sys.path.insert(0, str(BENCHES))

import bench_calibration as calib  # noqa: E402
from kbdb.evaluation.beir import dataset_paths, load_beir  # noqa: E402


def test_ece_bins_by_confidence() -> None:
    # Bin [0.9, 1]: confidences 0.95 and 1.0 (1 falls in the last bin), one relevant:
    #   |1.95 - 1| = 0.95. Bin [0.1, 0.2): 0.1 and 0.15, none relevant: 0.25. Over 4: 0.3.
    pairs = [(0.95, True), (1.0, False), (0.1, False), (0.15, False)]
    assert calib.ece(pairs) == pytest.approx((0.95 + 0.25) / 4)
    assert calib.ece([(0.7, True)] * 7 + [(0.7, False)] * 3) == pytest.approx(0.0)
    assert calib.ece([]) is None


def test_summary_counts_verdicts_and_checks_the_goal() -> None:
    outcomes = [
        calib.Outcome("a", "answered", ((0.9, True), (0.4, False))),
        calib.Outcome("b", "answered", ((0.8, False),)),
        calib.Outcome("c", "unanswered", ()),  # no hit: no relevant top hit
        calib.Outcome("d", "unanswered", ((0.1, False), (0.05, True))),
    ]
    s = calib.summarize(outcomes)
    assert s["queries"] == 4
    assert s["verdicts"] == {
        "answered": {"queries": 2, "relevant": 0.5},
        "partial": {"queries": 0, "relevant": None},
        "unanswered": {"queries": 2, "relevant": 0.0},
    }
    assert s["p_at_1"] == pytest.approx(0.25)
    assert s["mean_top_confidence"] == pytest.approx((0.9 + 0.8 + 0.1) / 3)
    # Top hits: 0.9 relevant (|0.9 - 1|), 0.8 not (0.8), 0.1 not (0.1), each its own bin.
    assert s["ece_top"] == pytest.approx((0.1 + 0.8 + 0.1) / 3)
    assert s["answered_ok"] is False and s["unanswered_ok"] is True
    row = calib.table_rows([{"set": "x", "mode": "lexical", "summary": s}])[0]
    assert row[:6] == ["x", "lexical", 4, "2 / 50 %", "0 / —", "2 / 0 %"]
    assert row[-1] == "NO / yes"


def _write(folder: Path) -> Path:
    docs = [
        {"_id": "d1", "title": "Connection pools", "text": "A pool keeps database connections."},
        {"_id": "d2", "title": "Tokens", "text": "Refresh tokens expire after one hour."},
        {"_id": "d3", "title": "Kayaks", "text": "Sea kayaks are long and narrow boats."},
        {"_id": "d4", "title": "Canoes", "text": "Canoes are open boats paddled on rivers."},
    ]
    queries = [
        {"_id": "q1", "text": "database connection pool"},
        {"_id": "q2", "text": "sea kayak boats"},
        {"_id": "q3", "text": "violin lessons"},  # nothing matches
    ]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td4\t1\nq3\td2\t1\n"
    )
    return folder


def test_open_set_and_judge_on_a_tiny_dataset(tmp_path: Path) -> None:
    folder = _write(tmp_path / "tiny")
    ds = load_beir(*dataset_paths(folder))
    kb = calib.open_set("tiny", folder, tmp_path / "cache", None)
    try:
        assert kb.stats().sections == 4
        outcomes = calib.judge(kb, ds, "lexical")
        assert [o.qid for o in calib.judge(kb, ds, "lexical", limit_queries=1)] == ["q1"]
    finally:
        kb.close()
    # The cached knowledge base is opened again, not learned twice.
    again = calib.open_set("tiny", folder, tmp_path / "cache", None)
    assert again.stats().sections == 4 and again.stats().documents == 4
    again.close()

    by_id = {o.qid: o for o in outcomes}
    assert list(by_id) == ["q1", "q2", "q3"]
    assert by_id["q1"].top_relevant  # d1 first
    assert by_id["q2"].hits and not by_id["q2"].top_relevant  # d3 (kayaks) before d4
    assert any(rel for _, rel in by_id["q2"].hits)  # d4 is among the hits
    assert by_id["q3"].hits == () and by_id["q3"].verdict == "unanswered"
    for o in outcomes:
        assert o.verdict in calib.VERDICTS
        assert all(0.0 <= conf <= 1.0 for conf, _ in o.hits)
    s = calib.summarize(outcomes)
    assert sum(v["queries"] for v in s["verdicts"].values()) == 3
    assert s["p_at_1"] == pytest.approx(1 / 3)
