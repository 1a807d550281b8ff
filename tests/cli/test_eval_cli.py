"""kbdb eval on a tiny BEIR dataset (SPEC §15)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Kbdb, write


def dataset(root: Path) -> list[str]:
    docs = [
        {"_id": "d1", "title": "Connection pools", "text": "A pool keeps database connections."},
        {"_id": "d2", "title": "Tokens", "text": "Refresh tokens expire after one hour."},
        {"_id": "d3", "title": "Kayaks", "text": "Sea kayaks are long and narrow."},
    ]
    queries = [{"_id": "q1", "text": "database pool"}, {"_id": "q2", "text": "kayak"}]
    write(root, "corpus.jsonl", "\n".join(json.dumps(d) for d in docs) + "\n")
    write(root, "queries.jsonl", "\n".join(json.dumps(q) for q in queries) + "\n")
    write(root, "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n")
    return ["--corpus", "corpus.jsonl", "--queries", "queries.jsonl", "--qrels", "qrels.tsv"]


def test_eval_json_report(tmp_path: Path, kbdb: Kbdb) -> None:
    args = dataset(tmp_path)
    res = kbdb("--json", "eval", *args, "--set", "search.k1=0.9")
    assert res.code == 0, res.err
    report = res.json()
    assert report["ndcg@10"] == 1.0 and report["queries"] == 2
    assert report["settings"] == {"search.k1": "0.9"}
    assert not (tmp_path / ".kbdb").exists()  # a temporary knowledge base
    human = kbdb("eval", *args)
    assert human.code == 0 and "ndcg@10" in human.out


def test_eval_errors(tmp_path: Path, kbdb: Kbdb) -> None:
    args = dataset(tmp_path)
    for bad in (("--set", "search.k1=-1"), ("--set", "nonsense"), ("--mode", "hybrid")):
        res = kbdb("eval", *args, *bad)
        assert res.code == 2, bad
        assert res.err.startswith("kbdb: ") and "Traceback" not in res.err
    assert kbdb("eval", "--corpus", "missing.jsonl", "--queries", "q", "--qrels", "r").code == 2


def test_eval_per_query_file(tmp_path: Path, kbdb: Kbdb) -> None:
    args = dataset(tmp_path)
    res = kbdb("eval", *args, "--per-query", "per-query.jsonl")
    assert res.code == 0, res.err
    assert "per-query.jsonl" in res.out
    lines = (tmp_path / "per-query.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["query_id"] for r in rows] == ["q1", "q2"]
    assert [r["relevant"] for r in rows] == [
        [{"doc_id": "d1", "gain": 1, "rank": 1}],
        [{"doc_id": "d3", "gain": 1, "rank": 1}],
    ]
    assert all(r["ndcg@10"] == 1.0 and r["hits"][0]["relevant"] for r in rows)
    missing = kbdb("eval", *args, "--per-query", "nowhere/per-query.jsonl")
    assert missing.code == 2 and "nowhere" in missing.err and "does not exist" in missing.err


def test_eval_recall_at_10_and_categories(tmp_path: Path, kbdb: Kbdb) -> None:
    args = dataset(tmp_path)
    write(tmp_path, "cats.json", json.dumps({"q1": 4, "q2": "2"}))
    res = kbdb("--json", "eval", *args, "--categories", "cats.json", "--category-names", "locomo")
    assert res.code == 0, res.err
    report = res.json()
    assert report["recall@10"] == 1.0
    assert [(c["category"], c["name"], c["queries"]) for c in report["categories"]] == [
        ("2", "temporal", 1),
        ("4", "single-hop", 1),
    ]
    human = kbdb("eval", *args, "--categories", "cats.json", "--category-names", "locomo")
    assert human.code == 0, human.err
    assert "recall@10" in human.out and "2 temporal" in human.out and "4 single-hop" in human.out
    plain = kbdb("eval", *args, "--categories", "cats.json")
    assert plain.code == 0 and "temporal" not in plain.out  # numbers are shown as given
    write(tmp_path, "cats.json", json.dumps({"q1": 9}))
    bad = kbdb("eval", *args, "--categories", "cats.json", "--category-names", "locomo")
    assert bad.code == 2 and "has no locomo name" in bad.err
