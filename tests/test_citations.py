"""Citations: every section records where it is in its file, and results carry it as
``source: {path, start_line, end_line, page}`` (SPEC §4.3)."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest
from tests.shared_data import CORPORA

from kbdb import KnowledgeBase
from kbdb.cli.render import numbered_lines
from kbdb.ingest import split_html, split_markdown, split_text
from kbdb.mcp.render import render
from kbdb.store.db import DatabaseError
from kbdb.types import SourceRef

NOTE = (
    "---\ntitle: Pools\n---\n"  # 1-3
    "\n"  # 4
    "Intro line.\n"  # 5
    "\n"  # 6
    "# Database\n"  # 7
    "\n"  # 8
    "We chose Postgres.\n"  # 9
    "\n"  # 10
    "Connection pool\n"  # 11
    "---------------\n"  # 12
    "The pool has 10 slots.\n"  # 13
    "```\n"  # 14
    "# not a heading\n"  # 15
    "```\n"  # 16
    "\n"  # 17
    "\n"  # 18
    "## Last\n"  # 19
)


def spans(doc: object) -> list[tuple[str, int | None, int | None]]:
    return [(s.heading, s.start_line, s.end_line) for s in doc.sections]  # type: ignore[attr-defined]


def test_markdown_sections_span_their_lines() -> None:
    # The preamble starts at its first text (front matter belongs to no section); a headed
    # section starts at its heading line (a setext heading's text line); trailing blank
    # lines are left out; a heading inside a fence does not split.
    assert spans(split_markdown(NOTE)) == [
        ("", 5, 5),
        ("Database", 7, 9),
        ("Connection pool", 11, 16),
        ("Last", 19, 19),
    ]


def test_crlf_and_bom_count_lines_as_lf() -> None:
    text = "\ufeff# A\r\n\r\nx\r\n# B\r\ny\r\n"
    assert spans(split_markdown(text)) == [("A", 1, 3), ("B", 4, 5)]


def test_plain_text_spans_its_text() -> None:
    assert spans(split_text("\n\nhello\nworld\n\n\n")) == [("", 3, 4)]


def test_html_sections_span_their_source_lines() -> None:
    html = (
        "<html><head><title>t</title></head>\n"  # 1
        "<body>\n"  # 2
        "<p>before</p>\n"  # 3
        "<h1>One</h1>\n"  # 4
        "<p>a\nb</p>\n"  # 5-6
        "\n"  # 7
        "<h2>Two</h2><p>c</p>\n"  # 8
        "<pre>x\ny</pre>\n"  # 9-10
        "</body></html>\n"
    )
    assert spans(split_html(html)) == [("", 3, 3), ("One", 4, 6), ("Two", 8, 10)]


def test_every_section_of_a_real_corpus_cites_its_own_lines(tmp_path: Path) -> None:
    """For each section of real Markdown books, the lines ``recall --lines`` numbers are the
    file's lines with those numbers, and the cited span starts at the heading."""
    root = CORPORA / "rust-book"
    files = sorted(root.rglob("*.md"))[:60]
    assert files, f"no corpus at {root}"
    checked = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        lines = text.replace("\r\n", "\n").split("\n")
        for s in split_markdown(text).sections:
            assert s.start_line is not None and s.end_line is not None
            assert 1 <= s.start_line <= s.end_line <= len(lines)
            if s.level:
                assert (
                    s.heading.lstrip("#").strip()[:10]
                    in lines[s.start_line - 1] + lines[s.start_line]
                ), (path, s.heading, s.start_line)
            source = SourceRef(str(path), s.start_line, s.end_line, None)
            numbered = numbered_lines(s.content, "text/markdown", source)
            if not s.content.strip():
                continue
            assert numbered is not None, (path, s.heading)
            for n, row in numbered:
                assert lines[n - 1] == row, (path, n)
            checked += 1
    assert checked > 200


def learn_note(tmp_path: Path) -> tuple[KnowledgeBase, Path]:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "pools.md").write_text(NOTE, encoding="utf-8")
    (notes / "page.html").write_text(
        "<html><body>\n<h1>Cache</h1>\n<p>Redis keeps\nsessions.</p>\n</body></html>\n",
        encoding="utf-8",
    )
    kb = KnowledgeBase.init(tmp_path / "kb")
    kb.learn_path(notes)
    return kb, notes


def test_search_and_recall_carry_the_source(tmp_path: Path) -> None:
    kb, notes = learn_note(tmp_path)
    with kb:
        hit = kb.search("pool slots").items[0]
        assert hit.heading == "Connection pool"
        assert hit.to_dict()["source"] == {
            "path": str(notes / "pools.md"),
            "start_line": 11,
            "end_line": 16,
            "page": None,
        }
        assert hit.source.cite() == f"{notes / 'pools.md'}:11-16"
        (section,) = kb.recall(hit.kbid).sections
        assert section.source == hit.source
        html = kb.search("redis sessions").items[0]
        assert (html.source.start_line, html.source.end_line) == (2, 4)
        # Text given in a call has no file: nothing to cite, and it says so with nulls.
        kb.learn("Kafka topics hold events.\nSecond line.", docid="given")
        given = kb.search("kafka topics").items[0]
        assert given.to_dict()["source"] == {
            "path": None,
            "start_line": None,
            "end_line": None,
            "page": None,
        }


def test_same_content_in_two_files_cites_each_by_docid(tmp_path: Path) -> None:
    a = tmp_path / "t" / "a.md"
    b = tmp_path / "t" / "b.md"
    a.parent.mkdir()
    a.write_text("# Shared\n\nThe same words.\n", encoding="utf-8")
    b.write_text("intro\n\n\n# Shared\n\nThe same words.\n", encoding="utf-8")
    with KnowledgeBase.init(tmp_path / "kb") as kb:
        kb.learn_path(a.parent)
        hit = kb.search("same words").items[0]
        assert hit.docids == ("a.md", "b.md")
        assert (hit.source.path, hit.source.start_line) == (str(a), 1)  # the first docid
        by_doc = {s.kbid: s.source for s in kb.recall(docid="b.md").sections}
        assert (by_doc[hit.kbid].path, by_doc[hit.kbid].start_line) == (str(b), 4)


def test_jsonl_turns_cite_their_lines(tmp_path: Path) -> None:
    chat = tmp_path / "c" / "chat.jsonl"
    chat.parent.mkdir()
    records = [
        {"speaker": "Ana", "text": "Where is the deploy key?"},
        {"speaker": "Bo", "text": "In the vault under ops."},
    ]
    chat.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    with KnowledgeBase.init(tmp_path / "kb") as kb:
        kb.learn_path(chat.parent)
        hit = kb.search("vault ops").items[0]
        assert (hit.source.start_line, hit.source.end_line) == (2, 2)


def test_mcp_text_names_the_source() -> None:
    item = {
        "kbid": "k" * 32,
        "heading": "Connection pool",
        "docids": ["pools.md"],
        "tags": [],
        "confidence": 0.8,
        "snippet": "The pool has 10 slots.",
        "source": {"path": "/n/pools.md", "start_line": 11, "end_line": 16, "page": None},
    }
    page = {"path": "/n/manual.pdf", "start_line": None, "end_line": None, "page": 3}
    d = {
        "items": [item, {**item, "source": page}, {**item, "source": {"path": None}}],
        "total": 3,
        "offset": 0,
        "limit": 10,
        "has_more": False,
        "relaxed": False,
        "vector_index_stale": False,
        "retrieval_method": "lexical",
        "retrieval_verdict": "answered",
    }
    text = render("search", d).splitlines()
    assert "source /n/pools.md:11-16" in text[1]
    assert "source /n/manual.pdf p.3" in text[3]
    assert "source" not in text[5]


def test_export_import_keeps_lines(tmp_path: Path) -> None:
    kb, notes = learn_note(tmp_path)
    with kb:
        before = kb.search("pool slots").items[0].source
        kb.export(tmp_path / "snap")
    with KnowledgeBase.init(tmp_path / "kb2") as kb2:
        kb2.import_snapshot(tmp_path / "snap")
        assert kb2.search("pool slots").items[0].source == before


def downgrade(db: Path) -> None:
    """Make ``db`` what a kbdb of schema version 1 wrote: no citation columns."""
    conn = sqlite3.connect(db)
    for col in ("start_line", "end_line", "page"):
        conn.execute(f"ALTER TABLE document_sections DROP COLUMN {col}")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def test_an_older_knowledge_base_is_migrated_and_says_unknown(tmp_path: Path) -> None:
    kb, notes = learn_note(tmp_path)
    kb.close()
    db = tmp_path / "kb" / ".kbdb" / "kb.sqlite"
    downgrade(db)
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        hit = kb.search("pool slots").items[0]
        # Learned before lines were recorded: unknown, not guessed.
        assert hit.source.path == str(notes / "pools.md")
        assert (hit.source.start_line, hit.source.end_line) == (None, None)
        # Learning the unchanged folder again fills them in.
        report = kb.learn_path(notes)
        assert report.documents_unchanged == 2
        assert kb.search("pool slots").items[0].source.start_line == 11
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("2",)
    conn.close()


def _open_and_search(root: str) -> int:
    with KnowledgeBase.open(Path(root)) as kb:
        return kb.search("pool slots").items[0].source.end_line or 0


def test_two_processes_migrating_at_once_both_open(tmp_path: Path) -> None:
    kb, _notes = learn_note(tmp_path)
    kb.close()
    downgrade(tmp_path / "kb" / ".kbdb" / "kb.sqlite")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        assert pool.map(_open_and_search, [str(tmp_path / "kb")] * 2) == [
            0,
            0,
        ]  # both open; lines unknown until learned


def test_a_read_only_older_knowledge_base_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb, _notes = learn_note(tmp_path)
    kb.close()
    downgrade(tmp_path / "kb" / ".kbdb" / "kb.sqlite")
    # SQLite's own read-only mode (file permissions do not stop root, who runs CI).
    connect = sqlite3.connect

    def read_only(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)  # type: ignore[arg-type]
        conn.execute("PRAGMA query_only = ON")
        return conn

    monkeypatch.setattr("kbdb.store.db.sqlite3.connect", read_only)
    with pytest.raises(DatabaseError) as err:
        KnowledgeBase.open(tmp_path / "kb")
    assert "needs an upgrade to schema version 2" in err.value.message
    assert "read-only" in err.value.message
    monkeypatch.undo()
    with KnowledgeBase.open(tmp_path / "kb") as kb:  # nothing was half-done
        assert kb.search("pool slots").items


def test_a_newer_knowledge_base_asks_for_a_newer_kbdb(tmp_path: Path) -> None:
    kb, _notes = learn_note(tmp_path)
    kb.close()
    conn = sqlite3.connect(tmp_path / "kb" / ".kbdb" / "kb.sqlite")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(DatabaseError) as err:
        KnowledgeBase.open(tmp_path / "kb")
    assert "schema version 3" in err.value.message and "upgrade kbdb" in (err.value.hint or "")
