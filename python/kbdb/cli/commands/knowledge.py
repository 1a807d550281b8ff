"""``kbdb contradictions`` (SPEC §8.5) and ``kbdb skill learn|list|get`` (SPEC §9).

Each prints exactly the API's result with ``--json``, otherwise a rich table.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from kbdb.cli.options import global_options, state, tags_option
from kbdb.cli.render import console, emit_json

if TYPE_CHECKING:
    from kbdb.types import ContradictionsResult, Skill, SkillList


def _render_contradictions(res: ContradictionsResult) -> None:
    from rich import box
    from rich.table import Table

    out = console()
    if not res.groups:
        out.print(
            f"no contradictions: no sections of different documents at {res.method}"
            f" similarity >= {res.threshold} below the near-duplicate threshold",
            markup=False,
        )
        return
    for n, group in enumerate(res.groups, 1):
        table = Table(
            title=f"group {n}: similarity {group.similarity:.2f}",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            expand=True,
        )
        table.add_column("kbid", no_wrap=True, style="dim")
        table.add_column("heading", ratio=1)
        table.add_column("docids", style="cyan", ratio=1)
        table.add_column("snippet", ratio=3)
        for m in group.sections:
            table.add_row(m.kbid, m.heading, ", ".join(m.docids), m.snippet)
        out.print(table)
    out.print(
        f"{len(res.groups)} group(s) by {res.method} similarity >= {res.threshold}",
        style="dim",
        markup=False,
    )


@click.command(short_help="Sections of different documents that cover the same ground.")
@click.option(
    "--threshold",
    type=float,
    metavar="X",
    help="Lowest similarity of a pair: cosine (default 0.75) with an embedding provider, "
    "else shingle Jaccard (default 0.5). Must be below the near-duplicate threshold.",
)
@click.option(
    "--limit", type=click.IntRange(1, 1000), default=20, show_default=True, help="Groups."
)
@tags_option("Only sections with all.", metavar="a,b")
@global_options
def contradictions(threshold: float | None, limit: int, tags: tuple[str, ...]) -> int:
    """List groups of live sections from different documents that cover the same ground
    but are not near-duplicates, most similar first, so that they can be read together
    and reconciled (kbdb revise, kbdb forget).

    Similarity is by embedding when a provider is configured and the vector index is
    current, else by lexical overlap. See docs/knowledge.md.
    """
    st = state()
    with st.open() as kb:
        res = kb.contradictions(threshold=threshold, limit=limit, tags=tags or None)
    if st.json:
        emit_json(res.to_dict())
    else:
        _render_contradictions(res)
    return 0


@click.group(short_help="Named, reusable procedures: learn, list, get.")
def skill() -> None:
    """Skills: named procedures (kebab-case names) with a description, Markdown
    instructions and tags, like a SKILL.md with front matter. Learning a skill again
    replaces it and keeps the old version in its history."""


@skill.command(name="learn", short_help="Create or replace a skill.")
@click.argument("path", required=False, metavar="[DIR]")
@click.option("--name", metavar="NAME", help="Kebab-case name (instead of DIR).")
@click.option("--description", metavar="TEXT", help="When to use the skill.")
@click.option("--content", metavar="TEXT|-", help="Markdown instructions; - reads stdin.")
@tags_option("Tags.", metavar="a,b")
@global_options
def skill_learn(
    path: str | None,
    name: str | None,
    description: str | None,
    content: str | None,
    tags: tuple[str, ...],
) -> int:
    """Learn a skill from DIR/SKILL.md (or a SKILL.md file), whose YAML front matter gives
    name, description and tags; or from --name, --description and --content (- for
    stdin)."""
    given = [o for o, v in (("--name", name), ("--description", description)) if v is not None]
    if content is not None:
        given.append("--content")
    if path is not None:
        if given or tags:
            raise click.UsageError("give DIR or --name/--description/--content, not both")
    elif name is None or description is None or content is None:
        raise click.UsageError("give DIR, or all of --name, --description and --content")
    st = state()
    with st.open() as kb:
        if path is not None:
            res = kb.skill_learn_path(path)
        else:
            assert name is not None and description is not None and content is not None
            text = sys.stdin.read() if content == "-" else content
            res = kb.skill_learn(name, description, text, tags=tags)
    if st.json:
        emit_json(res.to_dict())
    elif not st.quiet:
        replaced = f", replacing {res.previous}" if res.previous else ""
        console().print(f"learned skill {res.name}: {res.kbid}{replaced}", markup=False)
    return 0


def _render_list(res: SkillList) -> None:
    from rich import box
    from rich.table import Table

    if not res.skills:
        console().print("no skills yet: 'kbdb skill learn DIR'", markup=False)
        return
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, expand=True)
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("description", ratio=3)
    table.add_column("tags", style="magenta", ratio=1)
    table.add_column("updated", style="dim", no_wrap=True)
    for s in res.skills:
        table.add_row(s.name, s.description, ", ".join(s.tags), s.updated_at)
    console().print(table)


@skill.command(name="list", short_help="Every skill, by name.")
@global_options
def skill_list() -> int:
    """List the skills: name, description, tags and when each was last learned."""
    st = state()
    with st.open() as kb:
        res = kb.skill_list()
    if st.json:
        emit_json(res.to_dict())
    else:
        _render_list(res)
    return 0


def _render_skill(s: Skill) -> None:
    from rich.rule import Rule
    from rich.text import Text

    out = console()
    out.print(Rule(s.name, align="left"))
    meta = Text(s.description)
    meta.append(f"\n{s.kbid}  created {s.created_at}", style="dim")
    if s.tags:
        meta.append("\ntags: " + ", ".join(s.tags), style="magenta")
    out.print(meta)
    out.print()
    out.print(Text(s.content.strip("\n")))


@skill.command(name="get", short_help="One skill in full.")
@click.argument("name", metavar="NAME")
@global_options
def skill_get(name: str) -> int:
    """Print the skill NAME in full: description, tags and instructions."""
    st = state()
    with st.open() as kb:
        res = kb.skill_get(name)
    if st.json:
        emit_json(res.to_dict())
    else:
        _render_skill(res)
    return 0
