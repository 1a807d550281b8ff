"""The heading boost: a query that is a section's whole heading ranks that section above
the sections below it, which carry the heading in their path field (docs/search.md, "A
heading the query is")."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import kbdb
from kbdb.config import Config, SearchConfig, load_config, set_value
from kbdb.errors import ConfigInvalidError
from kbdb.search.lexical import Filters, LexicalSearcher

# A chapter as the Rust book writes one: its own section is a long introduction that never
# repeats its title; the short subsections below carry the title in their path field.
CHAPTER = """# Understanding Ownership

This chapter introduces a feature that has deep implications for the rest of the language.
It enables memory safety guarantees without needing a garbage collector, so it is worth
reading slowly. In this chapter we talk about several related features: borrowing, slices,
and how the language lays data out in memory, with many examples along the way.

## What Is Ownership?

A set of rules that govern how a program manages memory.

## Ownership Rules

Each value has an owner.

## References and Borrowing

A reference is like a pointer.
"""

# The Chinese translation's chapter: CJK text is indexed as character bigrams.
CHAPTER_ZH = """# 认识所有权

这一章介绍一个对语言其余部分影响深远的特性。它让程序无需垃圾回收器就能保证内存安全，
因此值得慢慢阅读。本章还会讨论几个相关的功能：借用、切片，以及语言如何在内存中布局数据。

## 什么是所有权？

一套管理内存的规则。

## 所有权规则

每个值都有一个所有者。
"""


def _learned(tmp_path: Path, files: dict[str, str]) -> kbdb.KnowledgeBase:
    tree = tmp_path / "book"
    tree.mkdir()
    for name, text in files.items():
        (tree / name).write_text(text, encoding="utf-8")
    kb = kbdb.KnowledgeBase.init(tmp_path / "kb")
    kb.learn_path(tree)
    return kb


def _searcher(kb: kbdb.KnowledgeBase, **settings: Any) -> LexicalSearcher:
    searcher = kb.context.searcher()
    searcher.cfg = replace(searcher.cfg, **settings)
    return searcher


def _search(searcher: LexicalSearcher, query: str, *, explain: bool = False) -> Any:
    return searcher.search(
        query, limit=10, offset=0, filters=Filters(), content=False, explain=explain
    )


@pytest.fixture
def chapter_kb(tmp_path: Path) -> Any:
    kb = _learned(tmp_path, {"ch04-00-understanding-ownership.md": CHAPTER})
    try:
        yield kb
    finally:
        kb.close()


def test_the_chapter_section_outranks_its_subsections_with_the_boost(chapter_kb: Any) -> None:
    query = "Understanding Ownership"
    on = chapter_kb.search(query, limit=10)
    assert on.items[0].heading == "Understanding Ownership", [i.heading for i in on.items]
    # Without the boost, a short subsection (the title is in its path) comes first: the
    # failure the boost is for.
    off = _search(_searcher(chapter_kb, heading_boost=0.0), query)
    assert off.items[0].heading != "Understanding Ownership", [i.heading for i in off.items]
    assert {i.kbid for i in on.items} == {i.kbid for i in off.items}


def test_the_default_boost_is_on() -> None:
    assert Config().search.heading_boost > 0


def test_a_chinese_chapter_title_finds_the_chapter(tmp_path: Path) -> None:
    kb = _learned(tmp_path, {"ch04-00-understanding-ownership.md": CHAPTER_ZH})
    try:
        # Bigrams of the title are in the subsections' headings too: a larger boost than
        # the default is needed here; what this checks is that CJK headings compare.
        on = _search(_searcher(kb, heading_boost=0.5), "认识所有权", explain=True)
        assert on.items[0].heading == "认识所有权", [i.heading for i in on.items]
        assert on.items[0].explain["heading_boost"] == 1.5
        assert all("heading_boost" not in i.explain for i in on.items[1:])
        off = _search(_searcher(kb, heading_boost=0.0), "认识所有权")
        assert off.items[0].heading != "认识所有权"
    finally:
        kb.close()


def test_explain_shows_the_heading_boost(chapter_kb: Any) -> None:
    factor = 1.0 + Config().search.heading_boost
    res = chapter_kb.search("Understanding Ownership", limit=10, explain=True)
    top, rest = res.items[0], res.items[1:]
    assert top.explain["heading_boost"] == pytest.approx(factor)
    assert rest and all("heading_boost" not in i.explain for i in rest)
    # The contributions times the boosts add up to the score.
    total = sum(c["score"] for c in top.explain["bm25f"])
    boosts = top.explain["sibling_boost"] * top.explain["heading_boost"]
    assert total * boosts == pytest.approx(top.score, rel=1e-5)


@pytest.mark.parametrize(
    "query",
    [
        "ownership",  # a part of the heading: "understanding" is not asked for
        "understanding ownership memory",  # more than the heading
        "ownership rules memory",  # more than a subsection's heading
        "borrowing slices",  # words of the body
        "pointer",  # a word of one body only
    ],
)
def test_a_query_that_is_not_a_whole_heading_is_unaffected(chapter_kb: Any, query: str) -> None:
    on = _search(_searcher(chapter_kb, heading_boost=5.0), query, explain=True)
    off = _search(_searcher(chapter_kb, heading_boost=0.0), query, explain=True)
    assert on.items, query
    assert [(i.kbid, i.score) for i in on.items] == [(i.kbid, i.score) for i in off.items]
    assert all("heading_boost" not in i.explain for i in on.items)


def test_a_subsection_heading_is_boosted_too(chapter_kb: Any) -> None:
    res = _search(_searcher(chapter_kb, heading_boost=0.5), "Ownership Rules", explain=True)
    assert res.items[0].heading == "Ownership Rules"
    assert res.items[0].explain["heading_boost"] == 1.5


def test_no_row_is_read_when_no_heading_matched_every_word(
    chapter_kb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    searcher = _searcher(chapter_kb, heading_boost=0.5, sibling_boost=0.0)
    reads: list[list[str]] = []
    rows = searcher.source.rows

    def counting(conn: Any, kbids: Any) -> Any:
        reads.append(list(kbids))
        return rows(conn, kbids)

    monkeypatch.setattr(searcher.source, "rows", counting)

    def rank(query: str) -> None:
        searcher.rank(searcher.parse(query), want=30, page_end=10, allow=None, explain=False)

    rank("borrowing slices garbage collector")  # body words only
    assert reads == []
    rank("ownership rules")  # one section's heading: only the sections it matched are read
    assert len(reads) == 1 and len(reads[0]) == 1


def test_relaxed_hits_are_not_boosted(chapter_kb: Any) -> None:
    # No section holds both words: every hit is relaxed, and none gets the boost.
    res = _search(_searcher(chapter_kb, heading_boost=5.0), "ownership zebra", explain=True)
    assert res.relaxed and res.items
    assert all("heading_boost" not in i.explain for i in res.items)


# -- the setting --------------------------------------------------------------------------


@pytest.mark.parametrize("value", [-0.1, 10.5, float("nan")])
def test_the_setting_must_be_a_number_from_0_to_10(value: float) -> None:
    with pytest.raises(ConfigInvalidError, match="search.heading_boost must be a number"):
        SearchConfig(heading_boost=value)


def test_the_setting_is_read_and_set_like_any_other(tmp_path: Path) -> None:
    path = tmp_path / "worker.toml"
    path.write_text("[search]\nheading_boost = 0.5\n", encoding="utf-8")
    assert load_config(path).search.heading_boost == 0.5
    assert set_value(path, "search.heading_boost", "0").search.heading_boost == 0.0
    with pytest.raises(ConfigInvalidError, match="search.heading_boost"):
        set_value(path, "search.heading_boost", "lots")
    path.write_text('[search]\nheading_boost = "high"\n', encoding="utf-8")
    with pytest.raises(ConfigInvalidError, match="search.heading_boost must be a number"):
        load_config(path)
