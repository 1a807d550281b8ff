"""Vector and hybrid search through the facade, with the real all-MiniLM-L6-v2 model
(SPEC §4.2, §6; the seed's fallbacks)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.conftest import record_batches, write

import kbdb
import kbdb.learn.learner
from kbdb.config import set_value

FACTS = {
    "db": "We chose Postgres because of JSONB support.",
    "cache": "Redis holds the session cache with a one hour expiry.",
    "deploy": "Deployments roll out through a blue green switch at the load balancer.",
    "team": "The platform team meets every Tuesday to review incidents.",
}


def _onnx_kb(root: Path, model: Path) -> kbdb.KnowledgeBase:
    kb = kbdb.KnowledgeBase.init(root)
    cfg = kb.path / "worker.toml"
    set_value(cfg, "embedding.provider", "onnx")
    set_value(cfg, "embedding.model_path", str(model))
    kb.close()
    return kbdb.KnowledgeBase.open(root)


def facts_kb(path: Path, model: Path) -> kbdb.KnowledgeBase:
    """A knowledge base with the real ONNX model that has learned ``FACTS``."""
    kb = _onnx_kb(path, model)
    kb.learn_many(kbdb.LearnItem(text, docid=name) for name, text in FACTS.items())
    return kb


def test_hybrid_finds_what_lexical_misses(hkb: kbdb.KnowledgeBase) -> None:
    # The seed's example: no query token overlaps the stored sentence.
    assert hkb.search("database rationale").total == 0
    res = hkb.search("database rationale", mode="hybrid")
    assert res.search_mode == res.retrieval_method == "hybrid"
    assert res.vector_index_stale is False
    assert res.items[0].docids == ("db",)
    vec = hkb.search("database rationale", mode="vector", limit=2)
    assert vec.retrieval_method == "vector" and vec.items[0].docids == ("db",)
    assert vec.items[0].snippet.startswith("We chose Postgres")
    assert vec.items[0].score > vec.items[1].score


def test_hybrid_explain_shows_both_ranks_and_fused_parts(hkb: kbdb.KnowledgeBase) -> None:
    item = hkb.search("redis session cache", mode="hybrid", explain=True).items[0]
    assert item.docids == ("cache",)
    ex = item.explain
    assert ex is not None
    assert ex["lexical_rank"] == 1 and ex["vector_rank"] == 1
    # Rank 1 and the best score of both lists: each part is its list's whole share, and a
    # strict match keeps the gate open, so the shares add up to 1.
    assert ex["lexical_part"] == pytest.approx(ex["lexical_weight"], abs=1e-6)
    assert ex["vector_part"] == pytest.approx(ex["vector_weight"], abs=1e-6)
    assert item.score == pytest.approx(1.0, abs=1e-6)
    assert 0.0 < ex["cosine"] <= 1.0


def test_filters_apply_inside_the_vector_path(hkb: kbdb.KnowledgeBase) -> None:
    res = hkb.search("database rationale", mode="vector", docid="team")
    assert [i.docids for i in res.items] == [("team",)]


def test_learn_embeds_and_retire_removes_vectors(hkb: kbdb.KnowledgeBase) -> None:
    hkb.learn("Kafka carries the audit events to the warehouse.", docid="events")
    assert hkb.search("message streaming pipeline", mode="vector", limit=1).items[0].docids == (
        "events",
    )
    hkb.learn("Nothing about streams here.", docid="events", replace=True)
    stats = hkb.stats()
    assert stats.vector_index_stale is False
    ids = [i.docids for i in hkb.search("audit events kafka", mode="vector", limit=10).items]
    assert all("Kafka" not in str(i) for i in ids)


def test_stale_index_falls_back_to_lexical(tmp_path: Path, model: Path) -> None:
    kb = _onnx_kb(tmp_path / "kb", model)
    kb.learn("We chose Postgres because of JSONB support.", docid="db")
    kb.close()
    set_value(kb.path / "worker.toml", "embedding.model", "some-other-model")
    other = kbdb.KnowledgeBase.open(kb.path)
    res = other.search("postgres", mode="hybrid")
    assert res.search_mode == "hybrid"
    assert res.retrieval_method == "lexical"
    assert res.vector_index_stale is True
    assert res.items[0].docids == ("db",)
    assert other.stats().vector_index_stale is True
    report = other.rebuild()
    assert report.vectors == 1
    fresh = other.search("postgres", mode="hybrid")
    assert fresh.retrieval_method == "hybrid" and fresh.vector_index_stale is False
    other.close()


def test_provider_not_configured_is_the_seed_error(kb: kbdb.KnowledgeBase) -> None:
    with pytest.raises(kbdb.EmbeddingProviderNotConfiguredError) as e:
        kb.search("x", mode="vector")
    assert e.value.to_dict() == {
        "error": "Vector search requires a configured embedding provider",
        "code": "EMBEDDING_PROVIDER_NOT_CONFIGURED",
    }


class _Refuse(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": "bad request"}')

    def log_message(self, *args: object) -> None:
        pass


def test_embedding_failure_keeps_the_section_lexical(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        kb = kbdb.KnowledgeBase.init(tmp_path / "kb")
        cfg = kb.path / "worker.toml"
        set_value(cfg, "embedding.api_url", f"http://127.0.0.1:{server.server_port}/v1")
        set_value(cfg, "embedding.provider", "api")
        kb.close()
        kb = kbdb.KnowledgeBase.open(tmp_path / "kb")
        report = kb.learn("The ferry leaves at noon.", docid="ferry")
        assert report.sections[0].vector_embedding_failed is True
        assert kb.search("ferry").items[0].docids == ("ferry",)
        # The provider is still down, so the query itself cannot be embedded.
        with pytest.raises(kbdb.EmbeddingFailedError) as e:
            kb.search("ferry", mode="vector")
        assert e.value.code == "EMBEDDING_FAILED"
        kb.close()
    finally:
        server.shutdown()
        server.server_close()


def test_rebuild_reuses_the_embedding_cache(hkb: kbdb.KnowledgeBase) -> None:
    before = hkb.search("database rationale", mode="vector", limit=4)
    report = hkb.rebuild()
    assert report.vectors == len(FACTS)
    again = hkb.rebuild(reembed=True)
    assert again.vectors == len(FACTS)
    after = hkb.search("database rationale", mode="vector", limit=4)
    assert [i.kbid for i in after.items] == [i.kbid for i in before.items]
    assert (hkb.path / "indexes" / "vectors.idx").read_bytes()[:4] == b"KBVX"


def test_learn_with_a_provider_cuts_smaller_batches(
    hkb: kbdb.KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an embedding provider the sections of a tree are embedded batch by batch under
    the writer lock, so batches are cut at ``BATCH_SECTIONS_EMBEDDED`` sections (here 4: two
    files of two sections), not at ``BATCH_SECTIONS``; every section is still embedded."""
    import kbdb.learn

    monkeypatch.setattr(kbdb.learn.learner, "BATCH_SECTIONS_EMBEDDED", 4)
    seen = record_batches(monkeypatch)
    for i in range(5):
        text = f"# Otter {i}\n\nriver {i}\n\n## Den {i}\n\nbank {i}\n"
        write(tmp_path / "tree", f"n{i}.md", text)
    report = hkb.learn_path(tmp_path / "tree")
    assert seen == [2, 2, 1]
    assert report.sections_added == 10
    assert hkb.stats().vector_index_stale is False
    found = {i.kbid for i in hkb.search("otter river den bank", mode="vector", limit=100).items}
    assert {s.kbid for s in report.sections} <= found
