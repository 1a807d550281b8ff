"""Maintenance commands (SPEC §8): ``check``, ``gc``, ``rebuild``, ``export``, ``import``.

Each prints exactly the API's result with ``--json``; otherwise a short rich summary.
``check`` exits 1 when it found errors (warnings alone keep 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kbdb.cli.options import global_options, ray_option, state
from kbdb.cli.render import console, count_progress, emit_json, human_bytes

if TYPE_CHECKING:
    from kbdb.types import CheckReport, GcReport


def _render_check(res: CheckReport) -> None:
    from rich import box
    from rich.table import Table

    out = console()
    issues = [("error", i) for i in res.errors] + [("warning", i) for i in res.warnings]
    if issues:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, expand=True)
        table.add_column("", no_wrap=True)
        table.add_column("code", no_wrap=True)
        table.add_column("kbid / docid", overflow="fold")
        table.add_column("detail", ratio=1)
        for level, i in issues:
            doc = i.docid if i.docid is None or i.line is None else f"{i.docid}:{i.line}"
            where = " ".join(x for x in (i.kbid, doc) if x)
            style = "red" if level == "error" else "yellow"
            table.add_row(f"[{style}]{level}[/]", i.code, where, i.detail)
        out.print(table)
    checked = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in res.checked.items())
    verdict = "ok" if res.ok else f"{len(res.errors)} error(s)"
    out.print(f"check: {verdict}, {len(res.warnings)} warning(s); checked {checked}", markup=False)
    if not res.ok:
        out.print("fixes: docs/maintenance.md; 'kbdb gc' removes orphans", style="dim")


@click.command(short_help="Verify the database and the index files.")
@global_options
def check() -> int:
    """Verify the knowledge base: every section's content against its kbid, references
    between sections and documents, field types, cycles, divergent versions, and the index
    files against their checksums.

    Warns when an index is behind the database or the vector index is stale, of links
    between notes that lead nowhere, out of the tree, to one of several notes or to a
    missing heading, and of notes nothing links to. Exits 1 when any error is found.
    """
    st = state()
    with st.open() as kb, count_progress(st.interactive, "checking", "sections") as progress:
        res = kb.check(progress=progress)
    if st.json:
        emit_json(res.to_dict())
    elif not st.quiet:
        _render_check(res)
    return 0 if res.ok else 1


def _render_gc(res: GcReport) -> None:
    out = console()
    verb = "would remove" if res.dry_run else "removed"
    for item in res.removed:
        out.print(f"{verb} {item}", markup=False)
    freed = ("about " if res.dry_run else "") + human_bytes(res.bytes_freed)
    out.print(
        f"gc{' (dry run)' if res.dry_run else ''}: {verb} {res.sections_removed} section(s),"
        f" {res.documents_removed} document(s), {res.index_entries_removed} index"
        f" entr{'y' if res.index_entries_removed == 1 else 'ies'},"
        f" {res.links_removed} dead link(s), {res.cache_entries_removed} cached"
        f" embedding(s); {freed} {'to free' if res.dry_run else 'freed'}"
        f" in {res.elapsed_ms / 1000:.2f} s",
        markup=False,
    )


@click.command(short_help="Remove orphans and dead entries; compact and vacuum.")
@click.option("--dry-run", is_flag=True, help="List what would be removed; change nothing.")
@click.option(
    "--prune-retired",
    is_flag=True,
    help="Also remove retired sections (history). Default: keep them.",
)
@click.option(
    "--older-than",
    "older_than",
    type=click.FloatRange(min=0),
    metavar="DAYS",
    help="With --prune-retired: only sections retired more than DAYS ago.",
)
@global_options
def gc(dry_run: bool, prune_retired: bool, older_than: float | None) -> int:
    """Remove orphan sections and documents and dead index entries, merge the index
    segments, compact the vector side files and vacuum the database.

    Retired sections are history and stay, unless --prune-retired (optionally only those
    retired more than --older-than DAYS ago).
    """
    if older_than is not None and not prune_retired:
        raise click.UsageError("--older-than applies only with --prune-retired")
    st = state()
    with st.open() as kb:
        res = kb.gc(dry_run=dry_run, prune_retired=prune_retired, older_than_days=older_than)
    if st.json:
        emit_json(res.to_dict())
    elif not st.quiet:
        _render_gc(res)
    return 0


@click.command(short_help="Regenerate the indexes from kb.sqlite.")
@click.option("--lexical-only", is_flag=True, help="Rebuild only the lexical index.")
@click.option("--vectors-only", is_flag=True, help="Rebuild only the vector index.")
@click.option(
    "--reembed", is_flag=True, help="Embed every section again instead of using the cache."
)
@ray_option("Embed the sections")
@global_options
def rebuild(lexical_only: bool, vectors_only: bool, reembed: bool, ray: str | None) -> int:
    """Regenerate every index from the database (kb.sqlite, the source of truth).

    Repairs missing or corrupt index files (INDEX_CORRUPT) and clears a stale vector index.
    Sections are re-embedded in batches of 64, reusing cached embeddings of unchanged text
    unless --reembed. The previous indexes keep serving other processes until the new ones
    are published by an atomic rename.

    With --ray, the texts to embed (all of them with --reembed) are embedded by Ray actors
    into the embedding cache first, then the vector index is written from it.
    """
    if lexical_only and vectors_only:
        raise click.UsageError("--lexical-only and --vectors-only exclude each other")
    if lexical_only and ray is not None:
        raise click.UsageError("--ray embeds sections; --lexical-only embeds none")
    st = state()
    with (
        st.open(model=not lexical_only) as kb,
        count_progress(st.interactive, "rebuilding", "sections") as progress,
    ):
        res = kb.rebuild(
            lexical=not vectors_only,
            vectors=not lexical_only,
            reembed=reembed,
            progress=progress,
            ray=ray,
        )
    if st.json:
        emit_json(res.to_dict())
    elif not st.quiet:
        console().print(
            f"rebuilt: {res.sections} sections indexed, {res.vectors} embedded, "
            f"in {res.elapsed_ms / 1000:.1f} s"
        )
    return 0


@click.command(short_help="Write a Markdown snapshot folder (no indexes).")
@click.argument("path", default="kbdb-export", required=False, metavar="[PATH]")
@global_options
def export(path: str) -> int:
    """Write the knowledge base to PATH (default ./kbdb-export): one Markdown file per
    section with TOML front matter, one file per document, and a catalog. No indexes.

    PATH must be empty, new, or an earlier export (which is updated in place; files that
    did not change are not rewritten, so the folder diffs well under git).
    """
    st = state()
    with st.open() as kb, count_progress(st.interactive, "exporting", "sections") as progress:
        res = kb.export(path, progress=progress)
    if st.json:
        emit_json(res.to_dict())
    elif not st.quiet:
        console().print(
            f"exported {res.sections_exported} section(s) and {res.documents_exported}"
            f" document(s) to {res.path} in {res.elapsed_ms / 1000:.2f} s",
            markup=False,
        )
    return 0


@click.command(name="import", short_help="Restore or merge a snapshot written by export.")
@click.argument("path", metavar="PATH")
@click.option(
    "--merge/--no-merge",
    default=None,
    help="Merge into a non-empty knowledge base (--no-merge: refuse one). "
    "Default: restore into an empty one, merge into a non-empty one.",
)
@global_options
def import_(path: str, merge: bool | None) -> int:
    """Import a snapshot folder written by 'kbdb export'.

    The whole snapshot is validated first (every file, every kbid re-hashed); a bad one
    changes nothing. Sections already stored (same kbid) are kept as they are; documents
    gain the snapshot's entries and tags. The indexes catch up afterwards.
    """
    st = state()
    with st.open(model=True) as kb:
        res = kb.import_snapshot(path, merge=merge)
    if st.json:
        emit_json(res.to_dict())
    elif not st.quiet:
        console().print(
            f"imported {res.sections_imported} section(s) and {res.documents_imported} new"
            f" document(s) from {res.path}; {res.sections_skipped} already stored"
            f" in {res.elapsed_ms / 1000:.2f} s",
            markup=False,
        )
    return 0
