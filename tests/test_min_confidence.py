"""``min_confidence`` (SPEC §4): weak hits are dropped after ranking, ``total`` and
``has_more`` count the hits that pass, and a search can honestly return nothing."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.test_shards import _small_collection

import kbdb
from kbdb.errors import InvalidArgumentError
from kbdb.search.confidence import verdict
from kbdb.shard.coordinator import ShardedKnowledgeBase

QUERY = "connection pool sizing"


def _learn(root: Path) -> kbdb.KnowledgeBase:
    """One section per document, so that no sibling boost moves the ranking with the
    number of candidates: strong matches (every word), and weaker ones of one or two."""
    kb = kbdb.KnowledgeBase.init(root)
    items = [
        kbdb.LearnItem(
            f"# Connection pool sizing {i}\n\nSize the connection pool at {i} slots per core.",
            docid=f"strong{i}",
        )
        for i in range(4)
    ]
    items += [
        kbdb.LearnItem(
            f"# Notes {i}\n\nThe connection pool was mentioned once among many other "
            f"words about deployments, {' '.join(['rollout'] * i)} schedules and teams.",
            docid=f"pair{i}",
        )
        for i in range(6)
    ]
    items += [
        kbdb.LearnItem(
            f"# Log {i}\n\nA pool party was held; weather {'sunny ' * i}and warm.",
            docid=f"weak{i}",
        )
        for i in range(8)
    ]
    kb.learn_many(items)
    return kb


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[kbdb.KnowledgeBase]:
    kb = _learn(tmp_path / "kb")
    yield kb
    kb.close()


def _cut(kb: kbdb.KnowledgeBase) -> float:
    """A threshold between the confidences of the ranked hits, so that some pass and some
    do not."""
    confs = sorted({i.confidence for i in kb.search(QUERY, limit=100).items})
    assert len(confs) >= 3, confs
    return confs[len(confs) // 2]


def test_zero_changes_nothing(kb: kbdb.KnowledgeBase) -> None:
    for query in (QUERY, "pool", "weather", "no such words", '"connection pool"'):
        for offset, limit in ((0, 10), (2, 3), (30, 5)):
            plain = kb.search(query, offset=offset, limit=limit)
            zero = kb.search(query, offset=offset, limit=limit, min_confidence=0)
            assert zero.to_dict() == plain.to_dict(), (query, offset, limit)


def test_weak_hits_are_dropped_and_total_counts_those_that_pass(kb: kbdb.KnowledgeBase) -> None:
    everything = kb.search(QUERY, limit=100)
    cut = _cut(kb)
    passing = [i for i in everything.items if i.confidence >= cut]
    assert 0 < len(passing) < len(everything.items)
    res = kb.search(QUERY, limit=100, min_confidence=cut)
    # The same hits, in the same order, with the same scores and confidences.
    assert [i.to_dict() for i in res.items] == [i.to_dict() for i in passing]
    assert res.total == len(passing) and res.has_more is False
    assert all(i.confidence >= cut for i in res.items)


def test_pages_walk_the_hits_that_pass(kb: kbdb.KnowledgeBase) -> None:
    cut = _cut(kb)
    passing = [i.kbid for i in kb.search(QUERY, limit=100).items if i.confidence >= cut]
    seen: list[str] = []
    offset = 0
    while True:
        page = kb.search(QUERY, limit=2, offset=offset, min_confidence=cut)
        assert page.total == len(passing) and (page.offset, page.limit) == (offset, 2)
        seen += [i.kbid for i in page.items]
        assert page.has_more == (offset + 2 < len(passing))
        if not page.has_more:
            break
        offset += 2
    assert seen == passing
    past = kb.search(QUERY, limit=2, offset=len(passing), min_confidence=cut)
    assert past.items == () and past.retrieval_verdict == "unanswered"


def test_a_search_can_honestly_find_nothing(kb: kbdb.KnowledgeBase) -> None:
    plain = kb.search("pool weather")
    assert plain.total > 0 and plain.items
    strict = kb.search("pool weather", min_confidence=1)
    assert strict.items == () and strict.total == 0 and strict.has_more is False
    assert strict.retrieval_verdict == "unanswered"
    assert strict.relaxed == plain.relaxed and strict.search_mode == "lexical"


def test_verdict_is_that_of_the_first_hit_shown(kb: kbdb.KnowledgeBase) -> None:
    cut = _cut(kb)
    res = kb.search(QUERY, min_confidence=cut)
    plain = kb.search(QUERY)
    assert res.items[0].kbid == plain.items[0].kbid
    assert res.retrieval_verdict == plain.retrieval_verdict
    second = kb.search(QUERY, min_confidence=cut, offset=1, limit=1)
    top = second.items[0]
    assert second.retrieval_verdict == verdict(top.confidence, second.relaxed or top.relaxed)


@pytest.mark.parametrize("bad", [-0.1, 1.01, math.nan, math.inf, "0.5", True, None])
def test_out_of_range_is_an_error(kb: kbdb.KnowledgeBase, bad: object) -> None:
    with pytest.raises(InvalidArgumentError, match=r"min_confidence must be a number in \[0, 1\]"):
        kb.search(QUERY, min_confidence=bad)  # type: ignore[arg-type]


def test_bounds_are_accepted(kb: kbdb.KnowledgeBase) -> None:
    assert kb.search(QUERY, min_confidence=1).total <= kb.search(QUERY, min_confidence=0.0).total


def test_sharded_collection_cuts_like_one_knowledge_base(tmp_path: Path) -> None:
    coll_path = _small_collection(tmp_path)
    one = kbdb.KnowledgeBase.open(tmp_path / "one")
    query = "build cache layer 3"
    cut = sorted({i.confidence for i in one.search(query, limit=100).items})[-1]
    with ShardedKnowledgeBase.open(coll_path) as coll:
        for m in (0.0, cut, 1.0):
            a = one.search(query, limit=5, min_confidence=m).to_dict()
            b = coll.search(query, limit=5, min_confidence=m).to_dict()
            assert [i["kbid"] for i in a["items"]] == [i["kbid"] for i in b["items"]], m
            assert (a["total"], a["has_more"], a["retrieval_verdict"]) == (
                b["total"],
                b["has_more"],
                b["retrieval_verdict"],
            )
        assert coll.search(query, min_confidence=1.0).retrieval_verdict == "unanswered"
        with pytest.raises(InvalidArgumentError, match="min_confidence"):
            coll.search(query, min_confidence=2)
    one.close()


def test_hybrid_and_vector(hkb: kbdb.KnowledgeBase) -> None:
    for mode in ("vector", "hybrid"):
        plain = hkb.search("database rationale", mode=mode)
        assert hkb.search("database rationale", mode=mode, min_confidence=0).to_dict() == (
            plain.to_dict()
        )
        confs = [i.confidence for i in plain.items]
        cut = max(confs)
        res = hkb.search("database rationale", mode=mode, min_confidence=cut)
        assert [i.kbid for i in res.items] == [i.kbid for i in plain.items if i.confidence >= cut]
        assert res.total == len(res.items) and res.retrieval_method == mode
        none = hkb.search("database rationale", mode=mode, min_confidence=1)
        if max(confs) < 1:
            assert none.items == () and none.total == 0
            assert none.retrieval_verdict == "unanswered"
