"""kbdb.evaluation (run, metrics, beir): metrics against hand-computed values, the BEIR loader, and
run_eval end to end on a tiny dataset."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from kbdb.config import Config
from kbdb.errors import ConfigInvalidError, InvalidArgumentError
from kbdb.evaluation import load_beir, mrr_at_k, ndcg_at_k, percentile, recall_at_k
from kbdb.evaluation.metrics import dcg
from kbdb.evaluation.run import override_config, run_eval, score_rankings, to_beir_ids

LOG2_3 = math.log2(3)  # the discount at rank 2

# -- metrics ---------------------------------------------------------------------------------


def test_dcg_discounts_by_log2_of_rank_plus_one() -> None:
    # 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.2618595071429148 + 0.5
    assert dcg([3, 2, 1]) == pytest.approx(4.761859507142915, abs=1e-12)
    assert dcg([]) == 0.0


def test_ndcg_graded_gains_and_ideal_from_qrels() -> None:
    qrels = {"a": 1, "c": 2, "e": 1}  # "e" is relevant but never retrieved
    # DCG = 1/1 + 0 + 2/log2(4) = 2; IDCG = 2/1 + 1/log2(3) + 1/log2(4) = 3.1309297535714575
    assert ndcg_at_k(["a", "b", "c", "d"], qrels, 10) == pytest.approx(0.6387878864795979)
    assert ndcg_at_k(["c", "a", "e"], qrels, 10) == pytest.approx(1.0)
    assert ndcg_at_k([], qrels, 10) == 0.0


def test_ndcg_cuts_at_k_in_the_ranking_and_the_ideal() -> None:
    qrels = {"a": 1, "b": 1, "c": 1}
    # k=2: DCG = 0 + 1/log2(3); IDCG@2 = 1 + 1/log2(3)
    assert ndcg_at_k(["x", "a", "b", "c"], qrels, 2) == pytest.approx(LOG2_3**-1 / (1 + 1 / LOG2_3))


def test_ndcg_zero_judgements_are_not_relevant() -> None:
    assert ndcg_at_k(["a", "b"], {"a": 0, "b": 1}, 10) == pytest.approx(1 / LOG2_3)
    assert ndcg_at_k(["a"], {"a": 0}, 10) == 0.0  # no relevant document at all


def test_recall_counts_relevant_in_top_k() -> None:
    qrels = {"a": 1, "c": 2, "e": 1, "z": 0}
    assert recall_at_k(["a", "b", "c", "d"], qrels, 100) == pytest.approx(2 / 3)
    assert recall_at_k(["a", "b", "c", "d"], qrels, 2) == pytest.approx(1 / 3)
    assert recall_at_k(["z"], {"z": 0}, 100) == 0.0


def test_mrr_is_reciprocal_rank_of_first_relevant_within_k() -> None:
    qrels = {"a": 1, "b": 0}
    assert mrr_at_k(["a", "b"], qrels, 10) == 1.0
    assert mrr_at_k(["b", "x", "a"], qrels, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["b", "x", "a"], qrels, 2) == 0.0


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == pytest.approx(2.5)
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) == 0.0


def test_score_rankings_averages_over_judged_queries() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 2}}
    # q1 finds a at rank 2; q2 has no ranking at all and scores 0.
    scores = score_rankings({"q1": ["x", "a"], "q3": ["b"]}, qrels)
    assert scores["ndcg@10"] == pytest.approx((1 / LOG2_3) / 2)
    assert scores["recall@100"] == pytest.approx(0.5)
    assert scores["mrr@10"] == pytest.approx(0.25)


def test_to_beir_ids_flattens_shared_sections_and_drops_unknown() -> None:
    hits = [("d2",), ("other", "d1", "d2"), ("d3",)]
    assert to_beir_ids(hits, {"d1", "d2", "d3"}) == ["d2", "d1", "d3"]


# -- loader ----------------------------------------------------------------------------------


def _write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _dataset(tmp: Path) -> tuple[Path, Path, Path]:
    corpus = _write_jsonl(
        tmp / "corpus.jsonl",
        [
            {
                "_id": "d1",
                "title": "Solar panels",
                "text": "Photovoltaic cells convert sunlight into electricity.",
            },
            {
                "_id": "d2",
                "title": "Wind turbines",
                "text": "Turbines convert moving air into electricity.",
            },
            {
                "_id": "d3",
                "title": "Sourdough",
                "text": "The dough rises with wild yeast and bread flour.",
            },
            {
                "_id": "d4",
                "title": "Bread machines",
                "text": "A machine that kneads and bakes bread.",
            },
            # A heading-like line in the text: still one section (learned as text/plain).
            {
                "_id": "d5",
                "title": "Tides",
                "text": "Tidal power.\n# Moon\nThe moon pulls the sea.",
            },
            {"_id": "d6", "title": "", "text": ""},  # nothing to find: skipped
        ],
    )
    queries = _write_jsonl(
        tmp / "queries.jsonl",
        [
            {"_id": "q1", "text": "sunlight electricity"},
            {"_id": "q2", "text": "wild yeast bread"},
            {"_id": "q3", "text": "not judged, never run"},
        ],
    )
    (tmp / "qrels").mkdir()
    qrels = tmp / "qrels" / "test.tsv"
    qrels.write_text(
        "query-id\tcorpus-id\tscore\n"
        "q1\td1\t1\nq1\td2\t1\nq1\tgone\t1\n"  # "gone" is not in the corpus
        "q2\td3\t0\nq2\td4\t1\n",
        encoding="utf-8",
    )
    return corpus, queries, qrels


def test_load_beir_keeps_judged_queries_and_skips_header(tmp_path: Path) -> None:
    corpus, queries, qrels = _dataset(tmp_path)
    ds = load_beir(corpus, queries, tmp_path / "qrels", split="test")
    assert [q for q, _ in ds.queries] == ["q1", "q2"]
    assert ds.qrels["q2"] == {"d3": 0, "d4": 1}
    assert len(ds.corpus) == 6 and ds.corpus[0].title == "Solar panels"
    assert set(ds.checksums) == {"corpus", "queries", "qrels"} and ds.split == "test"


def test_load_beir_rejects_judged_query_without_text(tmp_path: Path) -> None:
    corpus, queries, qrels = _dataset(tmp_path)
    qrels.write_text("q9\td1\t1\n", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match="q9"):
        load_beir(corpus, queries, qrels)


def test_load_beir_names_bad_line(tmp_path: Path) -> None:
    corpus, queries, qrels = _dataset(tmp_path)
    corpus.write_text('{"_id": "d1", "title": "x", "text": "y"}\n{oops\n', encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=r"corpus.jsonl:2"):
        load_beir(corpus, queries, qrels)


# -- settings --------------------------------------------------------------------------------


def test_override_config_parses_and_validates() -> None:
    cfg = override_config(Config(), {"search.k1": "0.9", "search.b_body": "0.4"})
    assert cfg.search.k1 == 0.9 and cfg.search.b_body == 0.4
    with pytest.raises(ConfigInvalidError):
        override_config(Config(), {"search.nope": "1"})
    with pytest.raises(ConfigInvalidError):
        override_config(Config(), {"search.b_body": "2"})


# -- end to end ------------------------------------------------------------------------------


def test_run_eval_end_to_end(tmp_path: Path) -> None:
    corpus, queries, qrels = _dataset(tmp_path)
    report = run_eval(corpus, queries, qrels, settings={"search.k1": "0.9"})
    # q1 "sunlight electricity": strict match d1, then relaxed d2 (electricity only).
    #   DCG = 1 + 1/log2(3); IDCG = 1 + 1/log2(3) + 1/2 ("gone" is judged relevant).
    # q2 "wild yeast bread": strict match d3 (judged 0), then d4 at rank 2.
    #   nDCG = (1/log2(3)) / 1; MRR = 1/2.
    ndcg_q1 = (1 + 1 / LOG2_3) / (1.5 + 1 / LOG2_3)
    assert report.ndcg_at_10 == pytest.approx((ndcg_q1 + 1 / LOG2_3) / 2)
    assert report.recall_at_100 == pytest.approx((2 / 3 + 1) / 2)
    assert report.mrr_at_10 == pytest.approx((1 + 0.5) / 2)
    assert report.queries == 2
    assert report.documents == 5 and report.sections == 5
    assert report.params["search"]["k1"] == 0.9
    assert report.qps > 0 and report.p95_ms >= report.p50_ms > 0
    d = report.to_dict()
    assert d["ndcg@10"] == round(report.ndcg_at_10, 6)
    assert d["settings"] == {"search.k1": "0.9"} and d["db"] is None
    json.dumps(d)


def test_run_eval_into_db_reuses_learned_documents(tmp_path: Path) -> None:
    corpus, queries, qrels = _dataset(tmp_path)
    db = tmp_path / "kb"
    first = run_eval(corpus, queries, qrels, db=db)
    second = run_eval(corpus, queries, qrels, db=db, settings={"search.k1": "2.0"})
    assert first.ndcg_at_10 == pytest.approx(second.ndcg_at_10)
    assert second.sections == 5 and second.db is not None
    # The user's worker.toml is not edited by --set.
    assert "k1 = 2.0" not in (db / ".kbdb" / "worker.toml").read_text(encoding="utf-8")


def test_run_eval_rejects_bad_mode_and_limit(tmp_path: Path) -> None:
    corpus, queries, qrels = _dataset(tmp_path)
    with pytest.raises(InvalidArgumentError):
        run_eval(corpus, queries, qrels, mode="fuzzy")
    with pytest.raises(InvalidArgumentError):
        run_eval(corpus, queries, qrels, limit=0)


# -- the per-query file ----------------------------------------------------------------------


def _read_jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_run_eval_per_query_file_lists_metrics_ranks_and_hits(tmp_path: Path) -> None:
    corpus, queries, qrels = _dataset(tmp_path)
    # q1 has one relevant document, found first; q2 has d4 (found at rank 2, after the judged
    # non-relevant d3) and "gone" (relevant, never retrievable).
    qrels.write_text("q1\td1\t1\nq2\td3\t0\nq2\td4\t2\nq2\tgone\t1\n", encoding="utf-8")
    out = tmp_path / "per-query.jsonl"
    out.write_text("stale content\n", encoding="utf-8")  # replaced, not appended to
    report = run_eval(corpus, queries, qrels, per_query=out)

    q1, q2 = _read_jsonl(out)
    assert (q1["query_id"], q1["query"]) == ("q1", "sunlight electricity")
    assert q1["ndcg@10"] == 1.0 and q1["recall@100"] == 1.0 and q1["mrr@10"] == 1.0
    assert q1["relevant"] == [{"doc_id": "d1", "gain": 1, "rank": 1}]
    top = q1["hits"][0]
    assert (top["rank"], top["doc_id"], top["relevant"], top["gain"]) == (1, "d1", True, 1)
    # d2 matches "electricity" only: retrieved, but not judged for q1.
    assert [(h["doc_id"], h["relevant"], h["gain"]) for h in q1["hits"][1:]] == [
        ("d2", False, None)
    ]
    assert q1["retrieved"] == 2

    assert q2["query_id"] == "q2"
    assert q2["relevant"] == [
        {"doc_id": "d4", "gain": 2, "rank": 2},
        {"doc_id": "gone", "gain": 1, "rank": None},
    ]
    assert [(h["rank"], h["doc_id"], h["relevant"], h["gain"]) for h in q2["hits"]] == [
        (1, "d3", False, 0),
        (2, "d4", True, 2),
    ]
    # DCG = 2/log2(3); IDCG = 2 + 1/log2(3).
    assert q2["ndcg@10"] == pytest.approx((2 / LOG2_3) / (2 + 1 / LOG2_3), abs=1e-6)
    assert q2["recall@100"] == pytest.approx(0.5) and q2["mrr@10"] == pytest.approx(0.5)
    # Scores are the search's, best first; the per-query metrics average to the report's.
    for q in (q1, q2):
        scores = [h["score"] for h in q["hits"]]
        assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
        assert q["latency_ms"] > 0
    assert report.ndcg_at_10 == pytest.approx((q1["ndcg@10"] + q2["ndcg@10"]) / 2, abs=1e-6)
    assert report.mrr_at_10 == pytest.approx((1 + 0.5) / 2)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == [
        "corpus.jsonl",
        "per-query.jsonl",
        "queries.jsonl",
    ]  # no temporary file left behind


def test_run_eval_per_query_lists_only_the_top_ten_hits(tmp_path: Path) -> None:
    docs: list[dict[str, object]] = [
        {"_id": f"d{i:02}", "title": f"Bread {i}", "text": "bread " * (i + 1)} for i in range(15)
    ]
    corpus = _write_jsonl(tmp_path / "corpus.jsonl", docs)
    queries = _write_jsonl(tmp_path / "queries.jsonl", [{"_id": "q", "text": "bread"}])
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q\td00\t1\n", encoding="utf-8")
    out = tmp_path / "pq.jsonl"
    run_eval(corpus, queries, qrels, per_query=out)
    (q,) = _read_jsonl(out)
    assert q["retrieved"] == 15 and len(q["hits"]) == 10
    assert [h["rank"] for h in q["hits"]] == list(range(1, 11))
    rank = q["relevant"][0]["rank"]
    assert isinstance(rank, int) and 1 <= rank <= 15
    assert any(h["doc_id"] == "d00" for h in q["hits"]) == (rank <= 10)


def test_run_eval_per_query_path_is_checked_before_the_run(tmp_path: Path) -> None:
    corpus, queries, qrels = _dataset(tmp_path)
    with pytest.raises(InvalidArgumentError, match="does not exist") as missing:
        run_eval(corpus, queries, qrels, per_query=tmp_path / "no-such-folder" / "pq.jsonl")
    assert missing.value.hint and "create the folder" in missing.value.hint
    with pytest.raises(InvalidArgumentError, match="is a folder"):
        run_eval(corpus, queries, qrels, per_query=tmp_path)


# -- Recall@10 and categories ----------------------------------------------------------------


def test_score_rankings_reports_recall_at_10() -> None:
    qrels = {"q1": {"a": 1, "b": 1}}
    ranking = [f"x{i}" for i in range(9)] + ["a"] + [f"y{i}" for i in range(5)] + ["b"]
    scores = score_rankings({"q1": ranking}, qrels)
    assert scores["recall@10"] == pytest.approx(0.5)  # "a" at rank 10, "b" at rank 16
    assert scores["recall@100"] == pytest.approx(1.0)


def _q1_q2_metrics() -> tuple[dict[str, float], dict[str, float]]:
    """The metrics of q1 and q2 of ``_dataset`` (see test_run_eval_end_to_end)."""
    q1 = {
        "ndcg@10": (1 + 1 / LOG2_3) / (1.5 + 1 / LOG2_3),
        "recall@10": 2 / 3,
        "mrr@10": 1.0,
    }
    q2 = {"ndcg@10": 1 / LOG2_3, "recall@10": 1.0, "mrr@10": 0.5}
    return q1, q2


def test_run_eval_reports_recall_at_10(tmp_path: Path) -> None:
    corpus, queries, qrels = _dataset(tmp_path)
    report = run_eval(corpus, queries, qrels)
    assert report.recall_at_10 == pytest.approx((2 / 3 + 1) / 2)
    d = report.to_dict()
    assert list(d)[:4] == ["ndcg@10", "recall@10", "recall@100", "mrr@10"]
    assert d["recall@10"] == round(report.recall_at_10, 6)
    assert report.categories == () and d["categories"] == []  # no query has a category


def test_run_eval_per_category_from_the_query_records(tmp_path: Path) -> None:
    corpus, _, qrels = _dataset(tmp_path)
    queries = _write_jsonl(
        tmp_path / "queries.jsonl",
        [
            {"_id": "q1", "text": "sunlight electricity", "category": "energy"},
            {"_id": "q2", "text": "wild yeast bread", "metadata": {"category": "food"}},
        ],
    )
    report = run_eval(corpus, queries, qrels)
    q1, q2 = _q1_q2_metrics()
    assert [(c.category, c.name, c.queries) for c in report.categories] == [
        ("energy", None, 1),
        ("food", None, 1),
    ]
    energy, food = report.categories
    assert energy.ndcg_at_10 == pytest.approx(q1["ndcg@10"])
    assert energy.recall_at_10 == pytest.approx(q1["recall@10"])
    assert energy.mrr_at_10 == pytest.approx(q1["mrr@10"])
    assert food.ndcg_at_10 == pytest.approx(q2["ndcg@10"])
    assert (food.recall_at_10, food.mrr_at_10) == (pytest.approx(1.0), pytest.approx(0.5))
    assert report.to_dict()["categories"][0] == {
        "category": "energy",
        "name": None,
        "queries": 1,
        "ndcg@10": round(q1["ndcg@10"], 6),
        "recall@10": round(2 / 3, 6),
        "mrr@10": 1.0,
    }


def test_run_eval_categories_file_numbers_stay_unnamed_without_a_naming(tmp_path: Path) -> None:
    corpus, queries, qrels = _dataset(tmp_path)
    cats = tmp_path / "cats.json"
    cats.write_text(json.dumps({"q1": 2, "q2": 2, "q3": 1, "elsewhere": 4}), encoding="utf-8")
    report = run_eval(corpus, queries, qrels, categories=cats)
    # q3 is not judged, so category 1 has no query; both judged queries are in category 2.
    (only,) = report.categories
    assert (only.category, only.name, only.queries) == ("2", None, 2)
    assert only.ndcg_at_10 == pytest.approx(report.ndcg_at_10)
    assert only.recall_at_10 == pytest.approx(report.recall_at_10)
    assert only.mrr_at_10 == pytest.approx(report.mrr_at_10)


def test_run_eval_locomo_names_and_uncategorized_queries(tmp_path: Path) -> None:
    corpus, _, qrels = _dataset(tmp_path)
    queries = _write_jsonl(
        tmp_path / "queries.jsonl",
        [
            {"_id": "q1", "text": "sunlight electricity", "category": "multi"},
            {"_id": "q2", "text": "wild yeast bread"},
        ],
    )
    cats = tmp_path / "queries_by_category.json"
    cats.write_text(json.dumps({"q1": 4}), encoding="utf-8")  # the file wins over the record
    out = tmp_path / "pq.jsonl"
    report = run_eval(
        corpus, queries, qrels, categories=cats, category_names="locomo", per_query=out
    )
    assert [(c.category, c.name, c.queries) for c in report.categories] == [
        ("4", "single-hop", 1),
        (None, None, 1),  # q2 has no category
    ]
    q1, q2 = _read_jsonl(out)
    assert q1["category"] == "4" and "category" not in q2
    assert q1["recall@10"] == pytest.approx(2 / 3, abs=1e-6) and q2["recall@10"] == 1.0


def test_run_eval_rejects_bad_categories(tmp_path: Path) -> None:
    corpus, queries, qrels = _dataset(tmp_path)
    cats = tmp_path / "cats.json"
    cases = [
        ("[1, 2]", "expected a JSON object"),
        ("{oops", "invalid JSON"),
        ('{"q1": true}', "'q1' must be a number or a string"),
        ('{"nobody": 1}', "names none of the 2 judged queries"),
    ]
    for text, message in cases:
        cats.write_text(text, encoding="utf-8")
        with pytest.raises(InvalidArgumentError, match=message):
            run_eval(corpus, queries, qrels, categories=cats)
    # A category the LoCoMo numbering does not have: not LoCoMo, so it is not labelled.
    cats.write_text('{"q1": 1, "q2": 7}', encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match="category '7' has no locomo name"):
        run_eval(corpus, queries, qrels, categories=cats, category_names="locomo")
    with pytest.raises(InvalidArgumentError, match="unknown category naming"):
        run_eval(corpus, queries, qrels, categories=cats, category_names="trec")
    with pytest.raises(InvalidArgumentError, match="no such file"):
        run_eval(corpus, queries, qrels, categories=tmp_path / "missing.json")
