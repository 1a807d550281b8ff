"""``kbdb links`` and ``kbdb backlinks``: the links between notes (docs/knowledge.md,
Links between notes).

Each calls one ``KnowledgeBase`` method; ``--json`` prints its ``to_dict()``, otherwise a
rich table: a link's line, kind, text as written, status and target; a backlink's file
and line, section and label.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING

import click

from kbdb.cli.options import global_options, state
from kbdb.cli.render import console, emit_json

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from kbdb.types import LinkItem, LinksResult

STATUS_STYLE = {
    "resolved": "green",
    "ambiguous": "yellow",
    "missing_heading": "yellow",
    "dangling": "red",
    "outside": "dim",
}


def _text(value: str, style: str = "") -> Text:
    """Learned text as printed: no markup read into it, no control characters."""
    from rich.text import Text

    from kbdb.cli.table import clean

    return Text(clean(value), style=style)


def _section(docid: str | None, heading: str | None) -> Text:
    """``docid › heading``; the heading left out when the section has none."""
    if docid is None:
        return _text("—", "dim")
    out = _text(docid, "cyan")
    if heading:
        out.append(" › ")
        out.append_text(_text(heading))
    return out


def _where(item: LinkItem) -> str:
    """The linking file and line, ``path:55``: the path relative to the working folder
    when it is inside it, as search results show it; the docid when there is no file."""
    line = "" if item.line is None else f":{item.line}"
    if item.from_path is None:
        return item.from_docid + line
    rel = os.path.relpath(item.from_path) if os.path.isabs(item.from_path) else item.from_path
    return (item.from_path if rel.startswith("..") else rel) + line


def _table() -> Table:
    from rich import box
    from rich.table import Table

    return Table(box=box.SIMPLE_HEAD, show_edge=False, expand=True)


def _summary(res: LinksResult, noun: str) -> str:
    counts = Counter(i.status for i in res.items)
    parts = ", ".join(f"{n} {s}" for s, n in counts.most_common())
    return f"{len(res.items)} {noun}" + (f": {parts}" if res.direction == "out" else "")


def _named(res: LinksResult) -> str:
    return res.docid if res.docid is not None else f"section {res.kbid}"


def _render_links(res: LinksResult) -> None:
    out = console()
    if not res.items:
        out.print(f"No links in {_named(res)}.", markup=False)
        return
    several = len({i.from_docid for i in res.items}) > 1  # --kbid alone: each document's
    table = _table()
    table.add_column("line", justify="right", no_wrap=True, style="dim")
    table.add_column("kind", no_wrap=True)
    table.add_column("link", ratio=2, overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("goes to", ratio=3, overflow="fold")
    for i in res.items:
        line = "" if i.line is None else str(i.line)
        table.add_row(
            _text(f"{i.from_docid}:{line}" if several else line),
            _text(i.kind),
            _text(i.written()),
            _text(i.status, STATUS_STYLE.get(i.status, "")),
            _section(i.to_docid, i.to_heading),
        )
    out.print(table)
    out.print(_summary(res, "link(s)"), style="dim", markup=False)


def _render_backlinks(res: LinksResult) -> None:
    out = console()
    if not res.items:
        out.print(f"Nothing links to {_named(res)}.", markup=False)
        return
    table = _table()
    table.add_column("from", ratio=3, overflow="fold", style="cyan")
    table.add_column("heading", ratio=2)
    table.add_column("label", ratio=2)
    to_heading = res.kbid is None  # which of the document's sections each one names
    if to_heading:
        table.add_column("to", ratio=2)
    for i in res.items:
        row = [
            _text(_where(i)),
            _text(i.from_heading) if i.from_heading else _text("(no heading)", "dim"),
            _text(i.label) if i.label else _text("—", "dim"),
        ]
        if to_heading:  # the heading the link names; a link to the note names none
            named = i.to_heading if i.fragment else None
            row.append(_text(named) if named else _text("(note)", "dim"))
        table.add_row(*row)
    out.print(table)
    out.print(_summary(res, "backlink(s)"), style="dim", markup=False)


def _need_one(docid: str | None, kbid: str | None) -> None:
    if docid is None and kbid is None:
        raise click.UsageError("give a DOCID, or --kbid KBID")


@click.command(short_help="The links a document makes.")
@click.argument("docid", required=False)
@click.option(
    "--kbid",
    metavar="KBID",
    help="Only this section's links (alone: in each document that holds it).",
)
@global_options
def links(docid: str | None, kbid: str | None) -> int:
    """The links DOCID makes, in document order: wikilinks, embeds and relative Markdown
    and HTML links, each with its line in the file, its kind, the link as written
    (target#heading|label), its status (resolved, ambiguous, missing_heading, dangling,
    outside) and the section it goes to."""
    _need_one(docid, kbid)
    st = state()
    with st.open() as kb:
        res = kb.links(docid, kbid=kbid)
    if st.json:
        emit_json(res.to_dict())
    else:
        _render_links(res)
    return 0


@click.command(short_help="The notes that link to a document.")
@click.argument("docid", required=False)
@click.option("--kbid", metavar="KBID", help="Only the links to this section.")
@global_options
def backlinks(docid: str | None, kbid: str | None) -> int:
    """The links of other notes that resolve to DOCID (or to one of its sections, --kbid),
    each with the linking file and line, its section, its label and the section of DOCID
    it names."""
    _need_one(docid, kbid)
    st = state()
    with st.open() as kb:
        res = kb.backlinks(docid, kbid=kbid)
    if st.json:
        emit_json(res.to_dict())
    else:
        _render_backlinks(res)
    return 0
