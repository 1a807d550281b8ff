"""``kbdb revise|history|forget|docs|outline|tags|related``: correct and navigate (SPEC §5).

Each command calls one ``KnowledgeBase`` method; ``--json`` prints its ``to_dict()``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from kbdb.cli.options import global_options, state, tags_option
from kbdb.cli.render import KBID_WIDTH, console, emit_json
from kbdb.errors import InvalidArgumentError

if TYPE_CHECKING:
    from rich.tree import Tree

    from kbdb.types import OutlineNode


def _read_content(content: str | None) -> str:
    if content is None:
        raise click.UsageError("give the new content with --content TEXT, or --content - (stdin)")
    if content != "-":
        return content
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"stdin is not valid UTF-8 (at byte {exc.start})",
            hint="pipe UTF-8 text; an image's new content is its base64 text",
        ) from None


@click.command(short_help="Correct a section: a new version replaces it.")
@click.argument("kbid")
@click.option(
    "--content",
    metavar="TEXT|-",
    help="The corrected content (the section body, without its heading); '-' reads stdin.",
)
@click.option("--title", help="A new title (default: keep).")
@click.option("--description", help="A new description (default: keep).")
@tags_option("Replace the section's tags (default: keep).")
@click.option("--section-type", metavar="KIND", help="A new section type (default: keep).")
@global_options
def revise(
    kbid: str,
    content: str | None,
    title: str | None,
    description: str | None,
    tags: tuple[str, ...],
    section_type: str | None,
) -> int:
    """Correct one live section. The new version gets a new kbid; the old one is retired
    (superseded_by the new one): it leaves search but stays readable with 'kbdb recall'
    and 'kbdb history'. Fields not given keep their values.
    """
    st = state()
    text = _read_content(content)
    with st.open() as kb:
        res = kb.revise(
            kbid,
            text,
            title=title,
            description=description,
            tags=tags or None,
            section_type=section_type,
        )
    if st.json:
        emit_json(res.to_dict())
    elif res.kbid == res.previous:
        click.echo(f"updated {res.kbid} in place (same content, new fields)")
    else:
        click.echo(f"revised {res.previous} -> {res.kbid}")
    return 0


@click.command(short_help="The versions of a section, oldest first.")
@click.argument("kbid")
@global_options
def history(kbid: str) -> int:
    """The chain of versions KBID belongs to, oldest first, with when each was created and
    retired and why (superseded, revised, removed, forgotten), and the interval it was
    live (valid from, valid until; a version learned again after retirement shows its
    latest)."""
    from rich import box
    from rich.table import Table

    st = state()
    with st.open() as kb:
        res = kb.history(kbid)
    if st.json:
        emit_json(res.to_dict())
        return 0
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("kbid", no_wrap=True, min_width=KBID_WIDTH + 2)
    for name in ("created", "retired", "reason", "valid from", "valid until"):
        table.add_column(name, overflow="fold")
    for n, v in enumerate(res.versions, 1):
        mark = " *" if v.kbid == res.kbid else ""
        table.add_row(
            str(n),
            v.kbid + mark,
            v.created_at,
            v.retired_at or "live",
            v.reason or "",
            v.valid_from or "",
            v.valid_until or ("live" if v.valid_from else ""),
        )
    out = console()
    out.print(table)
    out.print("* the kbid asked about", style="dim", markup=False)
    return 0


@click.command(short_help="Retire sections by kbid or --docid.")
@click.argument("kbids", nargs=-1, metavar="KBID...")
@click.option("--docid", metavar="ID", help="Retire every section of this document.")
@global_options
def forget(kbids: tuple[str, ...], docid: str | None) -> int:
    """Retire sections: they leave search and stay readable by kbid until 'kbdb gc'
    removes them. With --docid, a section another document also holds stays live there."""
    if not kbids and docid is None:
        raise click.UsageError("give one or more KBIDs, or --docid ID")
    st = state()
    with st.open() as kb:
        res = kb.forget(*kbids, docid=docid)
    if st.json:
        emit_json(res.to_dict())
    elif not st.quiet:
        click.echo(f"forgot {len(res.retired)} section(s)")
        for k in res.already_retired:
            click.echo(f"already retired: {k}")
    return 0


@click.command(short_help="List documents.")
@tags_option("Only documents with all of these tags.")
@click.option("--limit", type=int, default=50, show_default=True, help="Documents per page.")
@click.option("--offset", type=int, default=0, show_default=True, help="Documents to skip.")
@global_options
def docs(tags: tuple[str, ...], limit: int, offset: int) -> int:
    """List the documents that have live sections, by docid."""
    from rich import box
    from rich.table import Table

    st = state()
    with st.open() as kb:
        res = kb.documents(tags=tags, limit=limit, offset=offset)
    if st.json:
        emit_json(res.to_dict())
        return 0
    out = console()
    if not res.items:
        out.print("No documents.", markup=False)
        return 0
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, expand=True)
    table.add_column("docid", overflow="fold")
    table.add_column("title", ratio=1)
    table.add_column("sections", justify="right")
    table.add_column("tags", style="magenta")
    table.add_column("updated", no_wrap=True, style="dim")
    for d in res.items:
        table.add_row(d.docid, d.title or "", str(d.sections), ", ".join(d.tags), d.updated_at)
    out.print(table)
    first, last = res.offset + 1, res.offset + len(res.items)
    more = f" · next page: --offset {last}" if res.has_more else ""
    out.print(f"{first}-{last} of {res.total}{more}", style="dim", markup=False)
    return 0


def _branch(tree: Tree, node: OutlineNode) -> None:
    from rich.text import Text

    label = Text(node.heading or "(no heading)", style="bold" if node.heading else "dim")
    label.append(f"  {node.kbid}", style="dim")
    sub = tree.add(label)
    for child in node.children:
        _branch(sub, child)


@click.command(short_help="A document's heading tree.")
@click.argument("docid")
@global_options
def outline(docid: str) -> int:
    """Print the heading tree of a document (its live sections), with kbids."""
    from rich.tree import Tree

    st = state()
    with st.open() as kb:
        res = kb.outline(docid)
    if st.json:
        emit_json(res.to_dict())
        return 0
    tree = Tree(f"{res.docid}" + (f" — {res.title}" if res.title else ""))
    for node in res.nodes:
        _branch(tree, node)
    console().print(tree)
    return 0


@click.command(short_help="Every tag, with its count.")
@global_options
def tags() -> int:
    """Every tag on a live section, with how many sections carry it, most used first."""
    from rich import box
    from rich.table import Table

    st = state()
    with st.open() as kb:
        res = kb.tags()
    if st.json:
        emit_json(res.to_dict())
        return 0
    out = console()
    if not res.tags:
        out.print("No tags.", markup=False)
        return 0
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("tag", style="magenta")
    table.add_column("sections", justify="right")
    for t in res.tags:
        table.add_row(t.tag, str(t.count))
    out.print(table)
    return 0


@click.command(short_help="Sections close to a section.")
@click.argument("kbid")
@click.option("--limit", type=int, default=10, show_default=True, help="At most this many.")
@global_options
def related(kbid: str, limit: int) -> int:
    """Sections close to KBID: its siblings (same document, same parent heading) first,
    then the sections one link away (where it and its document link, and what links to
    them), then its nearest neighbours by vector when the vector index is fresh, else by
    a lexical search on its heading and salient words."""
    from rich import box
    from rich.table import Table

    st = state()
    with st.open() as kb:
        res = kb.related(kbid, limit=limit)
    if st.json:
        emit_json(res.to_dict())
        return 0
    out = console()
    if not res.items:
        out.print("Nothing related.", markup=False)
        return 0
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, expand=True)
    table.add_column("#", justify="right", style="dim")
    table.add_column("heading", ratio=1)
    table.add_column("kbid", no_wrap=True, style="dim")
    table.add_column("docids", style="cyan")
    table.add_column("relation")
    table.add_column("score", justify="right")
    for n, i in enumerate(res.items, 1):
        score = "" if i.score is None else f"{i.score:.3f}"
        table.add_row(
            str(n), i.heading or "(no heading)", i.kbid, ", ".join(i.docids), i.relation, score
        )
    out.print(table)
    out.print(f"neighbours by {res.method}", style="dim", markup=False)
    return 0
