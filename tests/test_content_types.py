"""Every content type of SPEC §3, through ``learn`` and ``learn_path``, and its validation."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from tests.conftest import write

import kbdb
from kbdb.errors import InvalidArgumentError, UnsupportedTypeError
from kbdb.index.vectors import embedding_text

# A real 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
PNG_B64 = base64.b64encode(PNG).decode("ascii")
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect/></svg>'


def _changes(kb: kbdb.KnowledgeBase) -> int:
    return kb.stats().changelog_seq


def test_markdown_splits_at_headings(kb: kbdb.KnowledgeBase) -> None:
    rep = kb.learn("# A\n\nalpha\n\n## B\n\nbeta\n", docid="md")
    assert [s.heading for s in rep.sections] == ["A", "B"]
    assert all(s.indexed_terms_count > 0 for s in rep.sections)


def test_other_text_is_one_section_and_headings_stay_text(kb: kbdb.KnowledgeBase) -> None:
    text = "# not a heading in plain text\n\nline two about walruses\n"
    rep = kb.learn(text, type="text/plain; charset=utf-8", docid="plain")
    assert len(rep.sections) == 1 and rep.sections[0].indexed_terms_count > 0
    sec = kb.recall(rep.sections[0].kbid).sections[0]
    assert sec.type == "text/plain" and sec.content == text
    assert kb.search("walruses").items[0].kbid == sec.kbid
    csv = kb.learn("name,age\nada,36\n", type="text/csv", docid="csv")
    assert len(csv.sections) == 1


def test_html_splits_on_visible_text(kb: kbdb.KnowledgeBase) -> None:
    html = (
        "<html><head><title>Ops</title><script>var hidden = 'zanzibar';</script></head>"
        "<body><p>intro</p><h1>Deploy</h1><p>roll out with blue green</p>"
        "<h2>Rollback</h2><p>flip the switch back</p></body></html>"
    )
    rep = kb.learn(html, type="text/html", docid="ops")
    assert [s.heading for s in rep.sections] == ["", "Deploy", "Rollback"]
    assert kb.search("zanzibar").total == 0
    assert kb.search("rollback switch").items[0].heading == "Rollback"
    outline = kb.outline("ops")
    assert [n.heading for n in outline.nodes] == ["", "Deploy"]
    assert [c.heading for c in outline.nodes[1].children] == ["Rollback"]


def test_json_is_one_section_with_keys_and_values_indexed(kb: kbdb.KnowledgeBase) -> None:
    doc = {"database": {"maxConnections": 20, "host": "db.internal"}, "regions": ["eu-west"]}
    text = json.dumps(doc, indent=2)
    rep = kb.learn(text, type="application/json", title="Service config")
    assert len(rep.sections) == 1 and rep.sections[0].indexed_terms_count > 0
    kbid = rep.sections[0].kbid
    for query in ("maxConnections", "connections", "database host", "internal", "west"):
        assert [i.kbid for i in kb.search(query).items] == [kbid], query
    assert kb.recall(kbid).sections[0].content == text  # stored as given


def test_invalid_json_names_the_problem_and_stores_nothing(kb: kbdb.KnowledgeBase) -> None:
    before = _changes(kb)
    with pytest.raises(InvalidArgumentError, match="line 2 column"):
        kb.learn('{"a": 1,\n  oops}', type="application/json", docid="bad")
    assert _changes(kb) == before and kb.stats().documents == 0


@pytest.mark.parametrize("mime", ["application/pdf", "video/mp4", "nonsense", "text", ""])
def test_unsupported_types(kb: kbdb.KnowledgeBase, mime: str) -> None:
    with pytest.raises(UnsupportedTypeError) as err:
        kb.learn("x", type=mime, docid="u")
    assert err.value.code == "UNSUPPORTED_TYPE"
    assert kb.stats().documents == 0


def test_image_is_searchable_by_title_and_description_only(kb: kbdb.KnowledgeBase) -> None:
    rep = kb.learn(
        PNG_B64,
        type="image/png",
        title="Ingest architecture",
        description="boxes and arrows of the pipeline",
        tags=["diagram"],
    )
    s = rep.sections[0]
    assert s.indexed_terms_count == 0 and s.warnings == ()
    assert kb.search("architecture").items[0].kbid == s.kbid
    assert kb.search("pipeline arrows").items[0].kbid == s.kbid
    assert kb.search(PNG_B64[:12]).total == 0  # the base64 is not indexed
    sec = kb.recall(s.kbid).sections[0]
    assert sec.content == PNG_B64 and sec.type == "image/png"
    assert sec.title == "Ingest architecture" and sec.heading == "Ingest architecture"
    assert base64.b64decode(sec.content) == PNG
    # Learn-time embedding of an image uses its title and description, never the data.
    assert embedding_text(sec.heading, sec.content, sec.type, sec.title, sec.description) == (
        "Ingest architecture\nboxes and arrows of the pipeline"
    )


def test_image_base64_may_be_wrapped(kb: kbdb.KnowledgeBase) -> None:
    wrapped = "\n".join(PNG_B64[i : i + 20] for i in range(0, len(PNG_B64), 20))
    rep = kb.learn(wrapped, type="image/png", title="wrapped")
    assert kb.recall(rep.sections[0].kbid).sections[0].content == wrapped


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": PNG_B64}, "needs a title"),
        ({"content": PNG_B64, "title": "  "}, "needs a title"),
        ({"content": "not base64 at all!", "title": "x"}, "not valid base64"),
        ({"content": PNG_B64[:-3], "title": "x"}, "not valid base64"),
        ({"content": "", "title": "x"}, "empty"),
        ({"content": "\n  \n", "title": "x"}, "empty"),
    ],
)
def test_image_validation(kb: kbdb.KnowledgeBase, kwargs: dict[str, str], message: str) -> None:
    before = _changes(kb)
    with pytest.raises(InvalidArgumentError, match=message) as err:
        kb.learn(type="image/png", docid="img", **kwargs)
    assert err.value.code == "INVALID_ARGUMENT"
    assert _changes(kb) == before


def test_files_of_every_extension_get_their_type(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    d = tmp_path / "all"
    write(d, "a.md", "# Md\n\nmarkdown words\n")
    write(d, "b.markdown", "# Mdown\n\nmore markdown\n")
    write(d, "c.txt", "plain text words\n")
    write(d, "d.html", "<h1>Html</h1><p>hypertext words</p>")
    write(d, "e.htm", "<h2>Htm</h2><p>short hypertext</p>")
    write(d, "f.json", '{"kind": "json words"}')
    write(d, "g.svg", SVG)
    for name in ("h.png", "i.jpg", "j.jpeg", "k.gif", "l.webp"):
        (d / name).write_bytes(PNG)
    rep = kb.learn_path(d)
    assert rep.files_skipped == ()
    types = {}
    for docid in (f"{c}" for c in sorted(p.name for p in d.iterdir())):
        secs = kb.recall(docid=docid).sections
        types[docid] = {s.type for s in secs}
    assert types == {
        "a.md": {"text/markdown"},
        "b.markdown": {"text/markdown"},
        "c.txt": {"text/plain"},
        "d.html": {"text/html"},
        "e.htm": {"text/html"},
        "f.json": {"application/json"},
        "g.svg": {"image/svg+xml"},
        "h.png": {"image/png"},
        "i.jpg": {"image/jpeg"},
        "j.jpeg": {"image/jpeg"},
        "k.gif": {"image/gif"},
        "l.webp": {"image/webp"},
    }
    svg = kb.recall(docid="g.svg").sections[0]
    assert svg.title == "g.svg" and base64.b64decode(svg.content).decode() == SVG
    img = next(s for s in rep.sections if s.docid == "h.png")
    assert img.indexed_terms_count == 0
    assert kb.search("webp").items[0].docids == ("l.webp",)  # found by its file name


def test_relearning_an_unchanged_image_file_is_unchanged(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    f = tmp_path / "logo.png"
    f.write_bytes(PNG)
    kb.learn_path(f)
    again = kb.learn_path(f)
    assert again.documents_unchanged == 1 and again.sections_added == 0
    f.write_bytes(PNG + b"\x00")
    changed = kb.learn_path(f)
    assert changed.sections_retired == 1
    assert changed.sections[0].superseded is not None


def test_bad_json_and_empty_image_files_are_skipped_not_fatal(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    d = tmp_path / "mixed"
    write(d, "good.md", "# Good\n\nfine text\n")
    write(d, "bad.json", "{not json")
    (d / "empty.png").write_bytes(b"")
    rep = kb.learn_path(d)
    assert rep.documents_added == 1
    skipped = {Path(s.path).name: s for s in rep.files_skipped}
    assert set(skipped) == {"bad.json", "empty.png"}
    assert "does not parse" in skipped["bad.json"].reason
    assert skipped["bad.json"].code == "INVALID_ARGUMENT"
    assert kb.search("fine").total == 1
