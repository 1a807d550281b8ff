"""Links on the API's navigation: ``related`` lists the sections one link away after the
siblings, and ``search_context`` gives each hit its neighbours by link (the notes it
links to and those linking to it), on a small vault written by the test
(tests/links_vault.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.links_vault import CACHING_TEXT, OPERATIONS_LINK_LINE, write_vault

import kbdb
from kbdb.errors import InvalidArgumentError
from kbdb.knowledge.links import MAX_NEIGHBOURS, SNIPPET_CHARS, start_of


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[kbdb.KnowledgeBase]:
    vault = write_vault(tmp_path)
    kb = kbdb.KnowledgeBase.init(tmp_path)
    kb.learn_path(vault)
    yield kb
    kb.close()


def _kbid(kb: kbdb.KnowledgeBase, docid: str, heading: str) -> str:
    return {s.heading: s.kbid for s in kb.recall(docid=docid).sections}[heading]


def _hit(res: kbdb.types.ContextResult, docid: str, heading: str) -> kbdb.types.ContextItem:
    return next(i for i in res.items if i.heading == heading and docid in i.docids)


# -- related -------------------------------------------------------------------------------


def test_related_lists_linked_sections_after_the_siblings(kb: kbdb.KnowledgeBase) -> None:
    rollback = _kbid(kb, "Runbook.md", "Rollback")
    res = kb.related(rollback, limit=10)
    got = [(i.relation, i.docids, i.heading) for i in res.items[:4]]
    assert got == [
        ("sibling", ("Runbook.md",), "Deploy"),
        ("sibling", ("Runbook.md",), "Checklist"),
        ("link", ("Home.md",), "Home"),  # Rollback links to [[Home]]
        ("link", ("Home.md",), "Operations"),  # which links to [[Runbook#Rollback]]
    ]
    assert all(i.score is None for i in res.items[:4])
    assert all(i.relation in ("vector", "lexical") for i in res.items[4:])
    kbids = [i.kbid for i in res.items]
    assert len(kbids) == len(set(kbids)) and rollback not in kbids


def test_related_links_come_from_the_section_then_its_document(kb: kbdb.KnowledgeBase) -> None:
    pool = _kbid(kb, "Databases.md", "Connection pool")
    res = kb.related(pool, limit=10)
    links = [(i.docids, i.heading) for i in res.items if i.relation == "link"]
    # Its own link first, then what links to its document: Home's [[Databases]] (Caching
    # links to it too, by the alias "DB notes", but it is listed already).
    assert links == [(("Caching.md",), "Caching"), (("Home.md",), "Home")]
    assert [i.relation for i in res.items[:3]] == ["sibling", "link", "link"]


def test_related_keeps_within_the_limit(kb: kbdb.KnowledgeBase) -> None:
    pool = _kbid(kb, "Databases.md", "Connection pool")
    got = [(i.relation, i.heading) for i in kb.related(pool, limit=2).items]
    assert got == [("sibling", "Backups"), ("link", "Caching")]
    rollback = _kbid(kb, "Runbook.md", "Rollback")
    assert [i.relation for i in kb.related(rollback, limit=2).items] == ["sibling", "sibling"]


# -- search_context --------------------------------------------------------------------------


def test_context_gives_each_hit_its_neighbours(kb: kbdb.KnowledgeBase) -> None:
    res = kb.search_context("roll back previous image", limit=3)
    assert res.retrieval_verdict != "unanswered" and res.retrieval_method == "lexical"
    hit = res.items[0]
    assert (hit.docids, hit.heading) == (("Runbook.md",), "Rollback")
    assert [(n.relation, n.docid, n.heading) for n in hit.neighbours] == [
        ("out", "Home.md", "Home"),
        ("in", "Home.md", "Operations"),
    ]
    # Runbook's Checklist links to its own Deploy heading: a document's links to itself
    # are not its neighbours (its outline shows them).
    assert "Runbook.md" not in {n.docid for n in hit.neighbours}
    home = hit.neighbours[0]
    assert home.kbid == _kbid(kb, "Home.md", "Home")
    assert home.snippet == "Start with [[Databases]] and [[Caching|the cache notes]]."


def test_context_follows_aliases_and_labels(kb: kbdb.KnowledgeBase) -> None:
    res = kb.search_context("redis sessions", limit=5)
    caching = _hit(res, "Caching.md", "Caching")
    assert [(n.relation, n.docid, n.heading, n.label) for n in caching.neighbours] == [
        ("out", "Databases.md", "Databases", None),  # [[DB notes]], an alias of Databases
        ("in", "Databases.md", "Connection pool", None),
        ("in", "Home.md", "Home", "the cache notes"),  # [[Caching|the cache notes]]
    ]


def test_context_is_bounded_per_hit(kb: kbdb.KnowledgeBase) -> None:
    res = kb.search_context("start", limit=5, neighbours=2)
    home = _hit(res, "Home.md", "Home")
    # Home links to Databases and Caching, and Runbook's Rollback links to Home: out and
    # in take turns, so a bound keeps both directions.
    assert [(n.relation, n.heading) for n in home.neighbours] == [
        ("out", "Databases"),
        ("in", "Rollback"),
    ]
    assert all(len(i.neighbours) <= 2 for i in res.items)
    unbounded = _hit(kb.search_context("start", limit=5), "Home.md", "Home")
    assert [n.heading for n in unbounded.neighbours] == ["Databases", "Rollback", "Caching"]
    for bad in (0, MAX_NEIGHBOURS + 1, True, "5"):
        with pytest.raises(InvalidArgumentError, match="neighbours"):
            kb.search_context("redis", neighbours=bad)  # type: ignore[arg-type]


def test_context_snippets_are_the_start_of_each_neighbour(kb: kbdb.KnowledgeBase) -> None:
    res = kb.search_context("pool slots", limit=1)
    hit = res.items[0]
    assert hit.heading == "Connection pool"
    caching = hit.neighbours[0]
    assert (caching.relation, caching.docid) == ("out", "Caching.md")
    assert len(caching.snippet) <= SNIPPET_CHARS and caching.snippet.endswith("…")
    assert CACHING_TEXT.startswith(caching.snippet[:-1].rstrip())
    assert caching.snippet[-2] != " "  # cut between words


def test_context_skips_links_that_go_nowhere(kb: kbdb.KnowledgeBase) -> None:
    res = kb.search_context("binary JSON glossary", limit=3)
    glossary = _hit(res, "Glossary.md", "Glossary")
    assert glossary.neighbours == ()  # [[Missing note]] is dangling
    assert kb.links("Glossary.md").items[0].status == "dangling"


def test_context_result_is_the_mcp_and_json_shape(kb: kbdb.KnowledgeBase) -> None:
    d = kb.search_context("roll back", limit=1, neighbours=1).to_dict()
    assert set(d) == {"items", "retrieval_method", "retrieval_verdict"}
    assert set(d["items"][0]) == {
        "kbid",
        "heading",
        "docids",
        "snippet",
        "score",
        "confidence",
        "neighbours",
    }
    assert set(d["items"][0]["neighbours"][0]) == {
        "docid",
        "kbid",
        "heading",
        "relation",
        "label",
        "snippet",
    }


# -- links: the linking file -------------------------------------------------------------------


def test_a_link_names_its_file_and_line(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    (link,) = kb.backlinks(kbid=_kbid(kb, "Runbook.md", "Rollback")).items
    assert link.from_path == str(tmp_path / "vault" / "Home.md")
    assert link.line == OPERATIONS_LINK_LINE and link.written() == "Runbook#Rollback"
    labelled = kb.links("Home.md").items[1]
    assert labelled.written() == "Caching|the cache notes"
    kb.learn("See [[Home]].", docid="typed")  # text given in a call has no file
    assert {i.from_docid: i.from_path for i in kb.backlinks("Home.md").items}["typed"] is None


def test_start_of() -> None:
    assert start_of("  a\n\n b  ") == "a b"
    words = "word " * 100
    cut = start_of(words, 20)
    assert cut == "word word word word…" and len(cut) <= 20
    assert start_of("x" * 50, 20) == "x" * 19 + "…"  # one long word: cut inside it
