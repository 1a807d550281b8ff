"""Ranking that generalizes: query term frequency, the path field (a section's place in its
document), bodiless title sections, and an index written in an older format."""

from __future__ import annotations

import struct
import zlib
from dataclasses import replace
from pathlib import Path

import pytest

import kbdb
from kbdb import _core
from kbdb.errors import IndexFormatError
from kbdb.search.fields import path_field
from kbdb.search.lexical import Filters
from kbdb.search.query import parse_query, query_tf_weight


def _kb(tmp_path: Path, name: str = "kb") -> kbdb.KnowledgeBase:
    return kbdb.KnowledgeBase.init(tmp_path / name)


# -- query term frequency ----------------------------------------------------------------


def test_query_tf_weight_saturates() -> None:
    assert query_tf_weight(1, 8.0) == 1.0
    assert query_tf_weight(3, 0.0) == 1.0  # counted once
    assert query_tf_weight(2, 8.0) == pytest.approx(9 * 2 / 10)
    assert 1.0 < query_tf_weight(2, 8.0) < query_tf_weight(5, 8.0) < 9.0
    assert query_tf_weight(4, 1e9) == pytest.approx(4.0)  # plain counts


def test_a_repeated_query_word_weighs_more_in_the_clause() -> None:
    analyzer = _core.Analyzer()
    once = parse_query("cache lock", analyzer, None, 8.0)
    twice = parse_query("cache lock cache", analyzer, None, 8.0)
    assert [c for c in once.clauses] == [(((("cach", 1.0),), True)), ((("lock", 1.0),), True)]
    (cache_alts, cache_required), (lock_alts, _) = twice.clauses
    assert cache_required and cache_alts[0][1] == pytest.approx(query_tf_weight(2, 8.0))
    assert lock_alts[0][1] == 1.0
    assert parse_query("cache lock cache", analyzer, None, 0.0).clauses == once.clauses


def test_a_repeated_query_word_ranks_the_section_that_holds_it_higher(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    try:
        # Same length, each word twice: only the query's repetition can break the tie.
        a = kb.learn("The cache holds rows. The cache evicts. A lock guards it.", title="A")
        b = kb.learn("The lock holds rows. The lock evicts. A cache guards it.", title="B")
        ka, kb_ = a.sections[0].kbid, b.sections[0].kbid
        tie = kb.search("cache lock", explain=True)
        assert {i.kbid for i in tie.items} == {ka, kb_}
        first = kb.search("cache lock cache")
        assert [i.kbid for i in first.items] == [ka, kb_]
        assert first.items[0].score > first.items[1].score
        second = kb.search("lock cache lock")
        assert [i.kbid for i in second.items] == [kb_, ka]
    finally:
        kb.close()


# -- the path field -----------------------------------------------------------------------


def test_path_field_holds_file_name_title_and_headings_above() -> None:
    key = "commandline/container_ls.md#ps/Examples/Show both running"
    assert path_field("Show both running", key, "ps", "/x/commandline/container_ls.md") == (
        "container_ls ps Examples"
    )
    # The title section: its own heading is the heading field, not the path.
    assert path_field("ps", "commandline/container_ls.md#ps", "ps", "/x/c.md") == "container_ls"
    # Learned through the API (no source file): no file name; a repeated path's suffix.
    assert path_field("Usage", "note-1#Intro/Usage (2)", "My note", None) == "My note Intro"
    assert path_field("", None, None, None) == ""


REFERENCE = {
    "get-process.md": (
        "# Get-Process\n\n"
        "## SYNOPSIS\n\nGets the processes that are running on the local computer.\n\n"
        "## DESCRIPTION\n\nThe cmdlet lists every running program with its identifier.\n\n"
        "## PARAMETERS\n\n### -Name\n\nSpecifies one or more names by their image name.\n"
    ),
    "stop-process.md": (
        "# Stop-Process\n\n## SYNOPSIS\n\nStops one or more running processes.\n\n"
        "## DESCRIPTION\n\nUse it to get rid of a hung process.\n"
    ),
    "get-service.md": (
        "# Get-Service\n\n## SYNOPSIS\n\nGets the services on a computer.\n\n"
        "## DESCRIPTION\n\nIt can get every service, or a process host's services.\n"
    ),
    "guide.md": (
        "# Troubleshooting\n\n## Slow machines\n\n"
        "To get a process list, get the process tree, then get each process id and get the "
        "process owner: get, process, get, process.\n"
    ),
}


def _learned_tree(tmp_path: Path, files: dict[str, str]) -> kbdb.KnowledgeBase:
    """A knowledge base that has learned ``files`` (name -> Markdown) as a folder."""
    tree = tmp_path / "ref"
    tree.mkdir()
    for name, text in files.items():
        (tree / name).write_text(text, encoding="utf-8")
    kb = _kb(tmp_path)
    kb.learn_path(tree)
    return kb


def test_a_reference_page_is_found_by_its_identifier_title(tmp_path: Path) -> None:
    kb = _learned_tree(tmp_path, REFERENCE)
    try:
        res = kb.search("Get-Process", limit=10)
        top = res.items[0]
        assert top.docids == ("get-process.md",), [(i.heading, i.docids) for i in res.items]
        # The page stands for itself through a section with content, not its bodiless title.
        assert top.heading != "Get-Process"
        assert "path" in top.matched_fields
        pages = [i.docids for i in res.items]
        assert pages.index(("guide.md",)) > 0
        # Without the path field (nor the name boost: the file is get-process.md) only the
        # bodiless title section names the page, and it gives way to its siblings, none of
        # which says "Get-Process": the page falls.
        searcher = kb.context.searcher()
        searcher.cfg = replace(searcher.cfg, w_path=0.0, name_boost=0.0)
        flat = searcher.search(
            "Get-Process", limit=5, offset=0, filters=Filters(), content=False, explain=False
        )
        assert flat.items[0].docids != ("get-process.md",)
    finally:
        kb.close()


def test_a_bodiless_title_section_gives_way_to_its_page_content(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    try:
        kb.learn(
            "# Get-Process\n\n## SYNOPSIS\n\nGets the processes on the computer.\n",
            docid="ref/get-process",
            type="text/markdown",
        )
        res = kb.search("Get-Process")
        headings = [i.heading for i in res.items]
        assert headings[0] == "SYNOPSIS"
        assert "Get-Process" not in headings
        # Alone (no sibling among the candidates), a bodiless section is still a result.
        alone = kb.search('"Get-Process" computer')
        assert alone.items and alone.items[0].heading == "SYNOPSIS"
        title_only = kb.search("get", docid="ref/get-process")
        assert title_only.items
    finally:
        kb.close()


# -- an index written in the previous format ------------------------------------------------


def _set_footer_version(path: Path, version: int) -> None:
    data = bytearray(path.read_bytes())
    footer = len(data) - 24
    struct.pack_into("<I", data, footer + 4, version)
    crc = zlib.crc32(bytes(data[: footer + 16])) & 0xFFFFFFFF
    struct.pack_into("<I", data, footer + 16, crc)
    path.write_bytes(bytes(data))


def test_an_index_in_the_old_format_is_named_and_rebuilt(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    kb.learn("Writers serialize on the lock file.", title="Locking")
    want = [i.kbid for i in kb.search('"writers serialize"').items]
    assert len(want) == 1
    index_dir = kb.path / "indexes"
    kb.close()
    segments = sorted(index_dir.glob("seg-*.seg"))
    assert segments
    for seg in segments:
        _set_footer_version(seg, 3)

    old = kbdb.KnowledgeBase.open(tmp_path / "kb")
    try:
        with pytest.raises(IndexFormatError) as err:
            old.search("lock writers")
        assert err.value.code == "INDEX_CORRUPT"
        assert "format version 3" in err.value.message and "rebuild" in str(err.value)
        report = old.check()
        codes = [e.code for e in report.errors]
        assert "index_format_old" in codes, report
        detail = next(e.detail for e in report.errors if e.code == "index_format_old")
        assert "kbdb rebuild" in detail
        # A learn keeps what it stored in kb.sqlite, says how to fix the index, and the
        # rebuild indexes it.
        with pytest.raises(IndexFormatError):
            old.learn("Readers take no lock at all.", title="Reading")
        old.rebuild()
        assert [i.kbid for i in old.search('"writers serialize"').items] == want
        found = old.search("readers").items
        assert len(found) == 1 and "Readers take no lock" in found[0].snippet
        assert old.check().ok
    finally:
        old.close()


# -- common words in strict matching ----------------------------------------------------------


def test_a_word_in_most_sections_is_not_required_for_a_strict_match(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    try:
        for i, topic in enumerate(("install", "upgrade", "logs", "backup", "restore")):
            kb.learn(f"Acme {topic}: run acme {topic} from the console.", title=f"Acme {i}")
        mixed = (
            kb.learn(
                "Acme reference: the acme console lists every part, one of which is a widget,"
                " and many other parts that have nothing to do with it at all.",
                title="Acme parts",
            )
            .sections[0]
            .kbid
        )
        page = kb.learn("The widget: what a widget is and how widgets fit.", title="Widget")
        widget = page.sections[0].kbid
        res = kb.search("acme widget")
        assert [i.kbid for i in res.items[:2]] == [widget, mixed]
        assert not res.relaxed and not res.items[0].relaxed
        # With every query word required, the page without "acme" falls to the relaxed tier.
        searcher = kb.context.searcher()
        searcher.cfg = replace(searcher.cfg, common_cutoff=0.0)
        strict_all = searcher.search(
            "acme widget", limit=5, offset=0, filters=Filters(), content=False, explain=False
        )
        assert strict_all.items[0].kbid == mixed
        assert [i.relaxed for i in strict_all.items if i.kbid == widget] == [True]
    finally:
        kb.close()


# -- a page the query names ---------------------------------------------------------------

GROUP = {
    "network.md": "# network\n\nManage networks.\n\n## Subcommands\n\nconnect, create, rm.\n",
    "network_rm.md": (
        "# network rm\n\nRemove one or more networks.\n\n## Aliases\n\n"
        "`docker network rm`, `docker network remove`\n"
    ),
    "network_create.md": (
        "# network create\n\nCreate a network.\n\n## Aliases\n\n`docker network create`\n"
    ),
    "run.md": "# run\n\nRun a container with docker: docker run.\n",
    "ps.md": "# ps\n\nList containers with docker: docker ps.\n",
    "pull.md": "# pull\n\nDownload an image with docker: docker pull.\n",
    "push.md": "# push\n\nUpload an image with docker: docker push.\n",
    "images.md": "# images\n\nList images with docker: docker images.\n",
    "stop.md": "# stop\n\nStop a container with docker: docker stop.\n",
    "start.md": "# start\n\nStart a container with docker: docker start.\n",
    "logs.md": "# logs\n\nShow a container's logs with docker: docker logs.\n",
}


def test_a_query_that_is_a_page_name_finds_that_page_first(tmp_path: Path) -> None:
    kb = _learned_tree(tmp_path, GROUP)
    try:
        res = kb.search("docker network", explain=True)
        assert res.items[0].docids == ("network.md",), [i.docids for i in res.items]
        assert res.items[0].explain["name_boost"] == 1.5
        assert "name_boost" not in res.items[-1].explain
        named = kb.search("docker network rm")
        assert named.items[0].docids == ("network_rm.md",)
        # "docker" is in more than half of the sections: not required, so network.md,
        # which never says it, is a strict hit. Without the name boost the subcommand
        # pages, which also say "docker", come first.
        searcher = kb.context.searcher()
        searcher.cfg = replace(searcher.cfg, name_boost=0.0)
        plain = searcher.search(
            "docker network", limit=5, offset=0, filters=Filters(), content=False, explain=False
        )
        assert plain.items[0].docids != ("network.md",)
    finally:
        kb.close()
