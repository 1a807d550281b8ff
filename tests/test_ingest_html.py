"""The HTML splitter: visible text only, split at <h1>–<h6>, <pre> as code."""

from __future__ import annotations

from kbdb.ingest import split_html

PAGE = """<!DOCTYPE html>
<html><head>
  <title>The   Page</title>
  <meta name="description" content="About things">
  <meta name="keywords" content="alpha, beta, alpha">
  <style>h1 { color: red }</style>
  <script>var hidden = "secret";</script>
</head>
<body>
<nav>Home</nav>
<h1>Top <em>level</em></h1>
<p>First
   paragraph &amp; more.</p>
<pre><code>fn main() {
    println!("hi");
}</code></pre>
<h3>Skipped level</h3>
<ul><li>one</li><li>two <code>inline</code></li></ul>
<script>document.write("nope")</script>
<h2>Second</h2>
<p>Second body</p>
</body></html>
"""


def test_sections_levels_and_parents() -> None:
    doc = split_html(PAGE)
    assert [(s.heading, s.level, s.parent) for s in doc.sections] == [
        ("", 0, None),
        ("Top level", 1, None),
        ("Skipped level", 3, 1),
        ("Second", 2, 1),
    ]
    assert doc.sections[2].heading_path == ("Top level", "Skipped level")


def test_metadata() -> None:
    doc = split_html(PAGE)
    assert doc.title == "The Page"
    assert doc.description == "About things"
    assert doc.tags == ("alpha", "beta")
    assert doc.warnings == ()


def test_visible_text_only() -> None:
    doc = split_html(PAGE)
    everything = "".join(s.content for s in doc.sections)
    assert "secret" not in everything
    assert "nope" not in everything
    assert "color" not in everything
    assert "The Page" not in everything
    assert doc.sections[0].content == "Home\n"


def test_pre_goes_to_code_and_stays_fenced_in_content() -> None:
    top = split_html(PAGE).sections[1]
    assert top.body == "First paragraph & more.\n"
    assert top.code == 'fn main() {\n    println!("hi");\n}'
    assert top.content == (
        'First paragraph & more.\n```\nfn main() {\n    println!("hi");\n}\n```\n'
    )


def test_inline_code_stays_in_body() -> None:
    section = split_html(PAGE).sections[2]
    assert section.body == "one\ntwo inline\n"
    assert section.code == ""


def test_pre_holding_backtick_fence_gets_longer_fence() -> None:
    doc = split_html("<h1>A</h1><pre>```\nx\n```</pre>")
    assert doc.sections[0].content == "````\n```\nx\n```\n````\n"
    assert doc.sections[0].code == "```\nx\n```"


def test_title_falls_back_to_first_h1_and_blank_preamble_dropped() -> None:
    doc = split_html("  <div> </div><h2>Sub</h2><h1></h1><h1>Main</h1>text")
    assert doc.title == "Main"
    assert [s.heading for s in doc.sections] == ["Sub", "", "Main"]
    assert doc.sections[2].content == "text\n"


def test_head_without_close_ends_at_body() -> None:
    doc = split_html("<head><title>T</title><body><p>visible</p>")
    assert doc.title == "T"
    assert [s.content for s in doc.sections] == ["visible\n"]


def test_unclosed_heading_and_plain_text() -> None:
    doc = split_html("<h2>Unclosed heading")
    assert [(s.heading, s.level) for s in doc.sections] == [("Unclosed heading", 2)]
    plain = split_html("just text, no tags")
    assert [(s.heading, s.level, s.content) for s in plain.sections] == [
        ("", 0, "just text, no tags\n")
    ]
    assert split_html("").sections == ()


def test_parser_error_keeps_text_so_far() -> None:
    # Python's html.parser raises on some bad marked sections; older or newer versions
    # may not, so only the outcome is pinned: no exception, earlier text kept.
    doc = split_html("<h1>A</h1><p>kept</p><![foo bar")
    assert doc.sections[0].heading == "A"
    assert doc.sections[0].content.startswith("kept\n")
    assert set(doc.warnings) <= {"html_invalid"}
