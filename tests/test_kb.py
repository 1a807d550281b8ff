"""The facade end to end: init/open, learn, search, recall, stats (SPEC §1–§5, §12)."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest
from tests.conftest import record_batches, write

import kbdb
import kbdb.learn.learner
from kbdb.errors import (
    EmbeddingProviderNotConfiguredError,
    InvalidArgumentError,
    KbNotFoundError,
    NotFoundError,
)
from kbdb.types import SearchItem, SearchResult, build, search_item

ADR = """# Architecture decisions

## Database choice

We chose Postgres because of JSONB support and mature replication.

## Queue

Messages go through a Redis stream; consumers ack after processing.

```python
def parseHttpRequest(raw):
    return raw
```
"""


def test_init_creates_layout(tmp_path: Path) -> None:
    kb = kbdb.KnowledgeBase.init(tmp_path)
    d = tmp_path / ".kbdb"
    assert kb.path == d.resolve()
    assert (d / "kb.sqlite").is_file()
    assert (d / "worker.toml").is_file()
    assert "indexes/" in (d / ".gitignore").read_text()
    assert (d / "indexes" / "meta.toml").is_file()
    # init is idempotent
    kbdb.KnowledgeBase.init(tmp_path).close()
    kb.close()


def test_open_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBDB_DB", raising=False)
    kbdb.KnowledgeBase.init(tmp_path / "proj").close()
    sub = tmp_path / "proj" / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert kbdb.KnowledgeBase.open().path == (tmp_path / "proj" / ".kbdb").resolve()
    assert kbdb.KnowledgeBase.open(tmp_path / "proj").path.name == ".kbdb"
    assert kbdb.KnowledgeBase.open(tmp_path / "proj" / ".kbdb").path.name == ".kbdb"
    monkeypatch.setenv("KBDB_DB", str(tmp_path / "proj"))
    monkeypatch.chdir(tmp_path)
    assert kbdb.KnowledgeBase.open().path.parent == (tmp_path / "proj").resolve()
    monkeypatch.delenv("KBDB_DB")
    with pytest.raises(KbNotFoundError) as e:
        kbdb.KnowledgeBase.open()
    assert e.value.code == "KB_NOT_FOUND"
    assert "kbdb init" in str(e.value)


def test_learn_path_then_search_and_recall(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    write(tmp_path / "docs", "adr.md", ADR)
    report = kb.learn_path(tmp_path / "docs", tags=["design"])
    assert report.documents_added == 1
    assert report.sections_added == 3
    assert all(s.indexed_terms_count > 0 for s in report.sections)
    res = kb.search("postgres jsonb")
    assert res.total == 1
    item = res.items[0]
    assert item.heading == "Database choice"
    assert item.docids == ("adr.md",)
    assert item.tags == ("design",)
    assert set(item.matched_terms) == {"postgres", "jsonb"}
    assert item.matched_fields == ("body",)
    assert "JSONB" in item.snippet
    assert 0.0 <= item.confidence <= 1.0
    assert res.search_mode == "lexical" and res.retrieval_method == "lexical"
    assert res.retrieval_verdict in ("answered", "partial")
    full = kb.recall(item.kbid).sections[0]
    assert full.content.strip().startswith("We chose Postgres")
    assert full.parent is not None
    assert full.source_key == "adr.md#Architecture decisions/Database choice"
    doc = kb.recall(docid="adr.md").sections
    assert [s.heading for s in doc] == ["Architecture decisions", "Database choice", "Queue"]


def test_search_envelope_has_every_spec_field(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(ADR, docid="adr")
    d = kb.search("redis stream").to_dict()
    assert set(d) == {
        "items",
        "total",
        "offset",
        "limit",
        "has_more",
        "relaxed",
        "search_mode",
        "retrieval_method",
        "vector_index_stale",
        "retrieval_verdict",
    }
    item = d["items"][0]
    for key in (
        "kbid",
        "heading",
        "level",
        "parent",
        "type",
        "section_type",
        "docids",
        "tags",
        "snippet",
        "matched_terms",
        "matched_fields",
        "score",
        "confidence",
        "created_at",
    ):
        assert key in item
    assert "content" not in item
    json.dumps(d)


def test_search_items_equal_the_ones_the_constructor_makes(kb: kbdb.KnowledgeBase) -> None:
    # Searches build results with types.build, not the dataclasses' __init__: the same
    # objects.
    kb.learn(ADR, docid="adr")
    res = kb.search("redis stream", explain=True, content=True)
    assert res.items
    for obj in (res, *res.items):
        cls = type(obj)
        again = cls(**{f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
        assert obj == again and repr(obj) == repr(again) and obj.to_dict() == again.to_dict()
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.limit = 0  # type: ignore[misc,union-attr]
    fields = {f.name: None for f in dataclasses.fields(SearchItem)}
    with pytest.raises(TypeError, match="exactly the fields of SearchItem"):
        build(SearchItem, **{k: v for k, v in fields.items() if k != "snippet"})
    with pytest.raises(TypeError, match="exactly the fields of SearchItem"):
        build(SearchItem, **fields, extra=1)
    with pytest.raises(TypeError, match="exactly the fields of SearchResult"):
        build(SearchResult, **fields)


def test_search_item_takes_the_fields_in_order() -> None:
    # types.search_item builds a page's items positionally: its parameters must be the
    # dataclass's fields, in order, and the object the constructor's.
    names = [f.name for f in dataclasses.fields(SearchItem)]
    assert list(inspect.signature(search_item).parameters) == names
    values = [f"v{i}" for i in range(len(names))]
    made = search_item(*values)
    again = SearchItem(*values)
    assert made == again and repr(made) == repr(again) and made.to_dict() == again.to_dict()
    assert hash(made) == hash(again)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.kbid = "x"  # type: ignore[misc]


def test_code_field_and_identifier_split(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(ADR, docid="adr")
    res = kb.search("http request")
    assert res.items and res.items[0].heading == "Queue"
    assert "code" in res.items[0].matched_fields
    whole = kb.search("parseHttpRequest")
    assert whole.items[0].heading == "Queue"


def test_relaxed_fallback_and_fill(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(ADR, docid="adr")
    res = kb.search("postgres kangaroo")
    assert res.relaxed is True
    assert res.items[0].relaxed is True
    assert res.items[0].heading == "Database choice"
    assert res.retrieval_verdict != "answered"
    # strict hits come first, relaxed fill is marked
    res = kb.search("redis consumers postgres", limit=5)
    assert res.items
    strict_then_relaxed = [i.relaxed for i in res.items]
    assert strict_then_relaxed == sorted(strict_then_relaxed)


def test_phrase_must_be_adjacent(kb: kbdb.KnowledgeBase) -> None:
    kb.learn("# A\n\nthe connection pool is full", docid="a")
    kb.learn("# B\n\npool of every connection", docid="b")
    res = kb.search('"connection pool"')
    assert [i.docids for i in res.items if not i.relaxed] == [("a",)]


def test_synonyms_expand_and_weigh_less(kb: kbdb.KnowledgeBase) -> None:
    kb.learn("# Storage\n\nThe database keeps sessions.", docid="syn")
    kb.learn("# Notes\n\nThe db keeps sessions.", docid="direct")
    res = kb.search("db sessions")
    assert [i.docids[0] for i in res.items] == ["direct", "syn"]
    assert res.items[0].score > res.items[1].score


def test_user_synonyms_file(kb: kbdb.KnowledgeBase) -> None:
    (kb.path / "synonyms.toml").write_text('groups = [["kangaroo", "marsupial"]]\n')
    kb2 = kbdb.KnowledgeBase.open(kb.path)
    kb2.learn("# Zoo\n\nA marsupial lives here.", docid="zoo")
    assert kb2.search("kangaroo").items[0].docids == ("zoo",)
    kb2.close()


def test_filters(kb: kbdb.KnowledgeBase) -> None:
    kb.learn("# One\n\nshared words alpha", docid="d1", tags=["x", "y"])
    kb.learn("# Two\n\nshared words beta", docid="d2", tags=["x"], section_type="fact")
    kb.learn("plain shared words", docid="d3", type="text/plain")
    assert {i.docids[0] for i in kb.search("shared words").items} == {"d1", "d2", "d3"}
    assert [i.docids[0] for i in kb.search("shared", tags=["x", "y"]).items] == ["d1"]
    assert [i.docids[0] for i in kb.search("shared", docid="d2").items] == ["d2"]
    assert [i.docids[0] for i in kb.search("shared", type="text/plain").items] == ["d3"]
    assert [i.docids[0] for i in kb.search("shared", section_type="fact").items] == ["d2"]
    assert kb.search("shared", tags=["nope"]).items == ()


def test_paging(kb: kbdb.KnowledgeBase) -> None:
    for i in range(25):
        kb.learn(f"# Note {i}\n\npaging word " + "extra " * i, docid=f"n{i}")
    first = kb.search("paging", limit=10)
    assert first.total == 25 and first.has_more and len(first.items) == 10
    second = kb.search("paging", limit=10, offset=10)
    third = kb.search("paging", limit=10, offset=20)
    assert not third.has_more and len(third.items) == 5
    seen = [i.kbid for r in (first, second, third) for i in r.items]
    assert len(set(seen)) == 25


def test_explain_and_content(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(ADR, docid="adr")
    item = kb.search("postgres", explain=True, content=True).items[0]
    assert item.content is not None and "Postgres" in item.content
    assert item.explain is not None
    terms = {(e["term"], e["field"]) for e in item.explain["bm25f"]}
    assert ("postgr", "body") in terms or any(t.startswith("postgr") for t, _ in terms)
    assert (
        abs(
            sum(e["score"] for e in item.explain["bm25f"]) * item.explain["sibling_boost"]
            - item.score
        )
        < 1e-3
    )


def test_search_argument_errors(kb: kbdb.KnowledgeBase) -> None:
    with pytest.raises(InvalidArgumentError):
        kb.search("x", limit=0)
    with pytest.raises(InvalidArgumentError):
        kb.search("x", limit=10**6)
    with pytest.raises(InvalidArgumentError):
        kb.search("x", offset=-1)
    with pytest.raises(InvalidArgumentError):
        kb.search("x", mode="fuzzy")
    with pytest.raises(EmbeddingProviderNotConfiguredError) as e:
        kb.search("x", mode="hybrid")
    assert e.value.to_dict() == {
        "error": "Vector search requires a configured embedding provider",
        "code": "EMBEDDING_PROVIDER_NOT_CONFIGURED",
    }


def test_stop_words_only_query_is_unanswered(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(ADR, docid="adr")
    for query in ("the of and", "", "?!...", '"'):
        res = kb.search(query)
        assert res.items == () and res.total == 0
        assert res.retrieval_verdict == "unanswered"


def test_recall_unknown(kb: kbdb.KnowledgeBase) -> None:
    with pytest.raises(NotFoundError):
        kb.recall("0" * 32)
    with pytest.raises(NotFoundError):
        kb.recall(docid="nope")


def test_stats(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(ADR, docid="adr", tags=["t1", "t2"])
    s = kb.stats()
    assert s.documents == 1 and s.sections == 3 and s.live_sections == 3
    assert s.tags == 2
    assert s.index_watermark == s.changelog_seq > 0
    assert s.index_bytes > 0 and s.db_bytes > 0
    assert s.embedding_provider == "none"
    assert s.analyzer


def test_learn_warnings(kb: kbdb.KnowledgeBase) -> None:
    r = kb.learn("just a fact without heading")
    assert "heading_missing" in r.sections[0].warnings
    r = kb.learn("# Empty\n", docid="e")
    assert "empty_content" in r.sections[0].warnings
    r = kb.learn("a titled fact", title="Fact")
    assert r.sections[0].warnings == ()


def test_learn_many_batches(kb: kbdb.KnowledgeBase) -> None:
    items = [
        kbdb.LearnItem(f"fact {i} about otters", docid=f"o{i}", tags=["otter"]) for i in range(50)
    ]
    report = kb.learn_many(items, batch=16)
    assert report.documents_added == 50 and report.sections_added == 50
    assert kb.search("otters", limit=100).total == 50
    again = kb.learn_many(items)
    assert again.sections_added == 0
    with pytest.raises(InvalidArgumentError):
        kb.learn_many([kbdb.LearnItem("x", tags="notalist")])


@pytest.mark.parametrize(
    ("cap", "value", "batches"),
    [
        (None, None, [12]),  # 12 small files: one batch under the default caps
        ("BATCH_FILES", 5, [5, 5, 2]),
        ("BATCH_SECTIONS", 4, [2] * 6),  # two sections per file
        ("BATCH_CHARS", 100, [1] * 12),  # each file holds over 100 characters of content
    ],
)
def test_learn_path_batches_by_files_sections_and_characters(
    kb: kbdb.KnowledgeBase,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cap: str | None,
    value: int | None,
    batches: list[int],
) -> None:
    """A tree is stored in batches (one transaction and one index commit each), cut at
    whichever cap comes first; every file is learned whatever the cut."""
    import kbdb.learn

    if cap is not None:
        monkeypatch.setattr(kbdb.learn.learner, cap, value)
    seen = record_batches(monkeypatch)
    for i in range(12):
        body = f"otter {i} " * 12
        write(tmp_path / "tree", f"n{i:02}.md", f"# A {i}\n\n{body}\n\n## B {i}\n\n{body}\n")
    report = kb.learn_path(tmp_path / "tree")
    assert seen == batches
    assert report.documents_added == 12 and report.sections_added == 24
    assert kb.search("otter", limit=100).total == 24


def test_snippet_comes_from_code_when_only_code_matches(kb: kbdb.KnowledgeBase) -> None:
    body = "Intro words. " * 30
    kb.learn(f"# Tool\n\n{body}\n\n```sh\nrun --frobnicate now\n```\n", docid="tool")
    item = kb.search("frobnicate").items[0]
    assert item.matched_fields == ("code",)
    assert "frobnicate" in item.snippet


def test_an_older_database_gets_the_covering_links_index_on_its_first_write(
    tmp_path: Path,
) -> None:
    # Made before store/schema.py's UPGRADES: document links indexed by kbid alone.
    kb = kbdb.KnowledgeBase.init(tmp_path / "kb")
    kb.learn(ADR, docid="adr")
    conn = kb.context.db.conn()
    conn.execute("DROP INDEX document_sections_links")
    conn.execute("CREATE INDEX document_sections_kbid ON document_sections(kbid)")
    kb.close()

    def indexes(kb: kbdb.KnowledgeBase) -> set[str]:
        rows = kb.context.db.conn().execute(
            "SELECT name FROM sqlite_master WHERE tbl_name = 'document_sections' AND type = 'index'"
        )
        return {r[0] for r in rows}

    def links_plan(kb: kbdb.KnowledgeBase) -> str:
        rows = kb.context.db.conn().execute(
            "EXPLAIN QUERY PLAN SELECT kbid, docid, live FROM document_sections"
            " WHERE kbid IN (?, ?)",
            ("a", "b"),
        )
        return " ".join(r[3] for r in rows)

    kb = kbdb.KnowledgeBase.open(tmp_path / "kb")
    # It opens and searches unchanged (reads never write the schema).
    assert [it.docids for it in kb.search("redis stream").items] == [("adr",)]
    assert "document_sections_kbid" in indexes(kb)
    kb.learn("# Later\n\nthe okapi", docid="later")
    assert "document_sections_links" in indexes(kb)
    assert "document_sections_kbid" not in indexes(kb)
    assert "COVERING INDEX document_sections_links" in links_plan(kb)
    assert [it.docids for it in kb.search("redis stream").items] == [("adr",)]
    assert kb.check().ok
    kb.close()
