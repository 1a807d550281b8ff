"""The paraphrased agent-memories retrieval set (benches/data/paraphrase) is well formed,
and every query shares no analyzed term with its relevant memories, so it can only be
answered by meaning, never by word overlap."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from kbdb._core import Analyzer

DATA = Path(__file__).resolve().parent.parent / "benches" / "data" / "paraphrase"

Rows = dict[str, dict[str, str]]
Data = tuple[Rows, Rows, list[tuple[str, str, int]]]


def _jsonl(name: str) -> Rows:
    rows: Rows = {}
    with (DATA / name).open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                assert row["_id"] not in rows, f"duplicate id {row['_id']} in {name}"
                rows[row["_id"]] = row
    return rows


@pytest.fixture(scope="module")
def data() -> Data:
    corpus = _jsonl("corpus.jsonl")
    queries = _jsonl("queries.jsonl")
    with (DATA / "qrels" / "test.tsv").open(encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        assert next(reader) == ["query-id", "corpus-id", "score"]
        qrels = [(q, d, int(s)) for q, d, s in reader]
    return corpus, queries, qrels


def test_counts_and_shape(data: Data) -> None:
    corpus, queries, qrels = data
    assert len(corpus) >= 100
    assert len(queries) >= 100
    for row in corpus.values():
        assert row["title"].strip() and row["text"].strip()
    for row in queries.values():
        assert row["text"].strip()
    assert all(score > 0 for _, _, score in qrels)


def test_qrels_refer_to_existing_ids_and_judge_every_query(data: Data) -> None:
    corpus, queries, qrels = data
    for q, d, _ in qrels:
        assert q in queries, f"qrel for unknown query {q}"
        assert d in corpus, f"qrel {q} -> unknown memory {d}"
    judged = {q for q, _, _ in qrels}
    assert judged == set(queries), f"unjudged queries: {sorted(set(queries) - judged)}"
    assert len(judged) >= 100


def test_no_query_shares_an_analyzed_term_with_its_memories(data: Data) -> None:
    corpus, queries, qrels = data
    analyzer = Analyzer()
    shared = []
    for q, d, _ in qrels:
        memory = corpus[d]
        q_terms = set(analyzer.terms(queries[q]["text"]))
        m_terms = set(analyzer.terms(memory["title"] + "\n" + memory["text"]))
        assert q_terms, f"{q} has no terms"
        if common := q_terms & m_terms:
            shared.append((q, d, sorted(common)))
    assert not shared, shared
