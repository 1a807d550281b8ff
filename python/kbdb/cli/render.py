"""Turning result objects into output: JSON, rich tables, highlighted snippets, progress.

``rich`` is imported inside the functions that draw, never at module import: ``--json`` and
error paths do not load it at all. Results go to stdout; progress, warnings and errors go to
stderr, so that ``kbdb search x > out`` captures only results.
"""

from __future__ import annotations

import json
import os
import re
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from kbdb.learn import LearnProgress
    from kbdb.types import (
        LearnReport,
        RecallResult,
        SearchItem,
        SearchResult,
        SourceRef,
        Stats,
    )

MATCH_STYLE = "bold yellow"
KBID_WIDTH = 32
# Highlighting guesses the engine's stemming: a word matches a term when it starts with the
# term minus up to _SUFFIX trailing letters, keeping at least _MIN_STEM ("pooling" → "pool").
_MIN_STEM = 4
_SUFFIX = 3


def emit_json(data: Any) -> None:
    """Print ``data`` (a ``to_dict()``) exactly, as indented UTF-8 JSON."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def print_error(text: str, payload: dict[str, Any] | None) -> None:
    """``kbdb: <text>`` on stderr; under ``--json`` also ``payload`` on stdout."""
    click.echo(f"kbdb: {text}", err=True)
    if payload is not None:
        emit_json(payload)


def console(stderr: bool = False) -> Console:
    """A rich console; colors only on a terminal (rich decides, NO_COLOR is honoured).

    No emoji codes: user text such as a query ``:fire:`` is printed as written, and rich
    does not load its emoji table (a few ms of every cold ``kbdb search``)."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False, emoji=False)


def _is_cjk(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


def match_spans(text: str, terms: Sequence[str]) -> list[tuple[int, int]]:
    """Character spans of ``text`` to highlight for the matched query ``terms``.

    The engine stems, so a term matches any word that starts with its stem-ish prefix
    (``pooling`` lights up ``pool`` and ``pools``). CJK terms match as plain substrings.
    """
    spans: list[tuple[int, int]] = []
    for term in terms:
        word = term.strip().lower()
        if not word:
            continue
        if any(_is_cjk(ch) for ch in word):
            pattern = re.escape(word)
        else:
            stem = word[: max(_MIN_STEM, len(word) - _SUFFIX)]
            pattern = rf"(?<!\w){re.escape(stem)}\w*"
        spans += [(m.start(), m.end()) for m in re.finditer(pattern, text, re.IGNORECASE)]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def highlight(text: str, terms: Sequence[str]) -> Text:
    """``text`` as rich Text with the matched terms styled (no markup is interpreted)."""
    from rich.text import Text

    out = Text(text)
    for start, end in match_spans(text, terms):
        out.stylize(MATCH_STYLE, start, end)
    return out


def place(source: SourceRef, docids: Sequence[str]) -> str:
    """Where a hit is, as a table shows it: ``path:12-40`` (the path relative to the
    working folder when it is inside it), else its documents."""
    from kbdb.types import SourceRef

    if source.path is None:
        return ", ".join(docids)
    rel = os.path.relpath(source.path) if os.path.isabs(source.path) else source.path
    shown = SourceRef(
        source.path if rel.startswith("..") else rel,
        source.start_line,
        source.end_line,
        source.page,
    )
    return shown.cite() or ""


def _section_cell(item: SearchItem, *, with_heading: bool = True) -> Text:
    from rich.text import Text

    cell = Text()
    if with_heading:
        cell.append(item.heading or "(no heading)", style="bold" if item.heading else "dim")
        cell.append("\n")
    cell.append(item.kbid, style="dim")
    where = place(item.source, item.docids)
    if where:
        cell.append("\n" + where, style="cyan")
    if item.tags:
        cell.append("  " + " ".join(f"#{t}" for t in item.tags), style="magenta")
    if item.section_type != "section":
        cell.append(f"  [{item.section_type}]", style="green")
    return cell


def render_search(res: SearchResult, query: str, *, show_content: bool) -> None:
    """A table of hits with highlighted snippets, then a one-line summary. The table is
    drawn by ``kbdb.cli.table``, not rich: a cold ``kbdb search`` does not load rich at all
    (``--content`` prints through rich)."""
    if res.vector_index_stale:
        click.echo(
            "kbdb: the vector index is stale, lexical results only (run 'kbdb rebuild')", err=True
        )
    if show_content and res.items:
        _render_search_rich(res, show_content=True)
        return
    from kbdb.cli import table as tb

    color = tb.color_enabled(sys.stdout)
    width = tb.console_width()
    ascii_only = not (sys.stdout.encoding or "utf-8").lower().replace("-", "").startswith("utf")
    if not res.items:
        line = f"No results for {json.dumps(query, ensure_ascii=False)} ({res.retrieval_verdict})."
        tb.write(_plain_lines(tb.clean(line), width, color, ""))
        return
    text = tb.draw(
        _search_columns(),
        [search_row(n, item) for n, item in enumerate(res.items, res.offset + 1)],
        width=width,
        color=color,
        rule="-" if ascii_only else "─",
    )
    if text is None:  # a terminal too narrow for the snippet: rich shrinks the columns
        _render_search_rich(res)
        return
    for n, item in enumerate(res.items, res.offset + 1):
        if item.explain is not None:
            text += tb.styled([(f"explain #{n} {item.kbid}:", "dim")], color) + "\n"
            text += json.dumps(item.explain, ensure_ascii=False, indent=2) + "\n"
    text += _plain_lines(_summary(res), width, color, "dim")
    tb.write(text)


def _plain_lines(text: str, width: int, color: bool, style: str) -> str:
    from kbdb.cli import table as tb

    return "".join(tb.styled(line, color) + "\n" for line in tb.wrap([(text, style)], width))


def _search_columns() -> tuple[Any, ...]:
    from kbdb.cli.table import Column

    return (
        Column("#", justify="right", no_wrap=True, style="dim"),
        Column("section", width=KBID_WIDTH, fold=True),
        Column("snippet", flexible=True),
        Column("score", justify="right", no_wrap=True),
    )


def search_row(n: int, item: SearchItem) -> list[list[tuple[str, str]]]:
    """One table row: rank, section (heading, kbid, documents, tags, kind), snippet with
    the matched words highlighted, score and confidence."""
    from kbdb.cli.table import clean

    section: list[tuple[str, str]] = [
        (
            clean(item.heading) if item.heading else "(no heading)",
            "bold" if item.heading else "dim",
        ),
        ("\n", ""),
        (item.kbid, "dim"),
    ]
    where = place(item.source, item.docids)
    if where:
        section.append(("\n" + clean(where), "cyan"))
    if item.tags:
        section.append(("  " + clean(" ".join(f"#{t}" for t in item.tags)), "magenta"))
    if item.section_type != "section":
        section.append((f"  [{clean(item.section_type)}]", "green"))
    snippet = clean(item.snippet)
    spans: list[tuple[str, str]] = []
    pos = 0
    for start, end in match_spans(snippet, item.matched_terms):
        spans += [(snippet[pos:start], ""), (snippet[start:end], MATCH_STYLE)]
        pos = end
    spans.append((snippet[pos:], ""))
    score = f"{item.score:.2f}\n{item.confidence:.0%}" + ("\nrelaxed" if item.relaxed else "")
    return [[(str(n), "")], section, [s for s in spans if s[0]], [(score, "")]]


def _render_search_rich(res: SearchResult, *, show_content: bool = False) -> None:
    """``--content`` (each hit in full under a rule), and the table on a terminal too
    narrow for ``kbdb.cli.table``: through rich."""
    out = console()
    if show_content:
        from rich.rule import Rule

        for n, item in enumerate(res.items, res.offset + 1):
            out.print(Rule(f"{n}. {item.heading or '(no heading)'}", align="left"))
            out.print(_section_cell(item, with_heading=False))
            out.print(highlight(item.content or "", item.matched_terms))
    else:
        from rich import box
        from rich.table import Table

        table = Table(box=box.SIMPLE_HEAD, expand=True, show_lines=True, show_edge=False)
        table.add_column("#", justify="right", style="dim", no_wrap=True)
        table.add_column("section", width=KBID_WIDTH, overflow="fold")
        table.add_column("snippet", ratio=1)
        table.add_column("score", justify="right", no_wrap=True)
        for n, item in enumerate(res.items, res.offset + 1):
            score = f"{item.score:.2f}\n{item.confidence:.0%}" + (
                "\nrelaxed" if item.relaxed else ""
            )
            table.add_row(
                str(n), _section_cell(item), highlight(item.snippet, item.matched_terms), score
            )
        out.print(table)
    for n, item in enumerate(res.items, res.offset + 1):
        if item.explain is not None:
            out.print(f"explain #{n} {item.kbid}:", style="dim", markup=False)
            out.print(json.dumps(item.explain, ensure_ascii=False, indent=2), markup=False)
    out.print(_summary(res), style="dim", markup=False)


def _summary(res: SearchResult) -> str:
    first, last = res.offset + 1, res.offset + len(res.items)
    parts = [f"{first}-{last} of {res.total}", f"mode {res.search_mode}"]
    if res.retrieval_method != res.search_mode:
        parts.append(f"retrieved {res.retrieval_method}")
    parts.append(res.retrieval_verdict)
    if res.relaxed:
        parts.append("relaxed: not every term matched")
    if res.has_more:
        parts.append(f"next page: --offset {last}")
    return " · ".join(parts)


def render_recall(res: RecallResult, *, lines: bool = False) -> None:
    """Each section: a rule with its heading, its fields, then its content; with
    ``lines``, each line of content numbered as in its source file."""
    from rich.rule import Rule
    from rich.text import Text

    out = console()
    for s in res.sections:
        out.print(Rule(s.heading or "(no heading)", align="left"))
        meta = Text(s.kbid, style="dim")
        meta.append(f"  level {s.level}  {s.type}  {s.section_type}", style="dim")
        if s.title:
            meta.append(f"\ntitle: {s.title}")
        if s.description:
            meta.append(f"\ndescription: {s.description}")
        if s.docids:
            meta.append("\ndocids: " + ", ".join(s.docids), style="cyan")
        cite = place(s.source, ()) if s.source.path else None
        meta.append(f"\nsource: {cite or 'unknown'}", style="cyan" if cite else "dim")
        if s.tags:
            meta.append("\ntags: " + ", ".join(s.tags), style="magenta")
        meta.append(f"\ncreated {s.created_at}", style="dim")
        if s.valid_from and s.valid_from != s.created_at:
            meta.append(f"\nlive again from {s.valid_from}", style="dim")
        if s.retired:
            meta.append(f"\nretired {s.retired_at}", style="red")
            if s.superseded_by:
                meta.append(f", superseded by {s.superseded_by}", style="red")
        out.print(meta)
        out.print()
        if s.type.startswith("image/"):
            out.print(
                f"[{s.type}, {len(s.content)} characters of base64; use --json for the data]",
                style="dim",
                markup=False,
            )
        elif lines:
            numbered = numbered_lines(s.content, s.type, s.source)
            if numbered is None:
                out.print(
                    "(line numbers unknown: the section was learned from text given in a"
                    " call, from a format without lines, or before kbdb recorded them)",
                    style="dim",
                    markup=False,
                )
                out.print(Text(s.content.strip("\n")))
            else:
                width = len(str(numbered[-1][0]))
                for n, line in numbered:
                    row = Text(f"{n:>{width}}  ", style="dim")
                    row.append(line)
                    out.print(row)
        else:
            out.print(Text(s.content.strip("\n")))


def numbered_lines(content: str, type: str, source: SourceRef) -> list[tuple[int, str]] | None:
    """The content's lines with their numbers in the source file, or None when they are
    not known: no lines recorded, a format whose content is not the file's text (HTML,
    PDF), or content that does not fit the recorded span.

    When the file is still there, each line of content is found in the file's span, in
    order: that numbers content with gaps right (a class without its methods, which are
    sections of their own). Without the file, a span whose length is the content's is
    numbered from ``start_line``; otherwise a text section's content is the end of its
    span (a heading line comes before it) and is counted back from ``end_line``, and a
    code section's lines are not known (its gaps are not)."""
    if source.start_line is None or source.end_line is None or source.page is not None:
        return None
    if type == "text/html" or type.startswith("image/"):
        return None
    rows = content.split("\n")
    while rows and not rows[-1].strip():
        rows.pop()
    while rows and not rows[0].strip():
        rows.pop(0)
    if not rows:
        return None
    aligned = _aligned(rows, source)
    if aligned is not None:
        return aligned
    from kbdb.search.codefields import CODE_TYPES

    span = source.end_line - source.start_line + 1
    if span == len(rows):
        first = source.start_line
    elif type in CODE_TYPES:
        return None
    else:
        first = source.end_line - len(rows) + 1
    if first < source.start_line:
        return None
    return [(first + i, row) for i, row in enumerate(rows)]


def _aligned(rows: list[str], source: SourceRef) -> list[tuple[int, str]] | None:
    """``rows`` matched in order to the lines of ``source``'s span in its file; None when
    the file cannot be read or no longer holds them (it changed since it was learned)."""
    assert source.start_line is not None and source.end_line is not None
    if source.path is None:
        return None
    try:
        with open(source.path, encoding="utf-8", errors="replace") as f:
            lines = f.read().removeprefix("\ufeff").split("\n")
    except OSError:
        return None
    span = lines[source.start_line - 1 : source.end_line]
    out: list[tuple[int, str]] = []
    at = 0
    for row in rows:
        while at < len(span) and span[at].rstrip("\r") != row:
            at += 1
        if at == len(span):
            return None
        out.append((source.start_line + at, row))
        at += 1
    return out


def human_bytes(n: int) -> str:
    """``1536`` → ``1.5 KiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns


def render_stats(st: Stats) -> None:
    """Two columns: what and how much."""
    from rich.table import Table

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    rows: list[tuple[str, Any]] = [
        ("knowledge base", st.path),
        ("documents", st.documents),
        ("sections", f"{st.sections} ({st.live_sections} live, {st.retired_sections} retired)"),
        ("tags", st.tags),
        ("database", human_bytes(st.db_bytes)),
        (
            "indexes",
            f"{human_bytes(st.index_bytes)} in {st.index_segments} segment(s), "
            f"generation {st.index_generation}",
        ),
        ("analyzer", st.analyzer),
        (
            "embedding",
            st.embedding_provider + (f" ({st.embedding_model})" if st.embedding_model else ""),
        ),
        ("vectors stale", "yes" if st.vector_index_stale else "no"),
    ]
    rows += [(k, v) for k, v in st.extra.items()]
    for key, value in rows:
        table.add_row(key, str(value))
    console().print(table)


def render_learn(report: LearnReport, *, verbose: bool = False) -> None:
    """The summary line, then the warnings, near duplicates and failed embeddings grouped
    by code: a count and the first few of each, or every one when ``verbose``
    (``kbdb.cli.notices``). Skipped files are left to ``render_skipped``."""
    from kbdb.cli import notices

    notices.render_sections(report, notices.example_limit(report, verbose=verbose))


def render_skipped(report: LearnReport, *, verbose: bool = False) -> None:
    """The skipped files on stderr, grouped by skip code like ``render_learn``."""
    from kbdb.cli import notices

    notices.render_skipped(report, notices.example_limit(report, verbose=verbose))


@contextmanager
def _bar(label: str, *fields: str) -> Iterator[Any]:
    """A transient rich progress bar on stderr: ``label``, the bar, done/total, then one
    text column per ``fields`` template, then the time left."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        *(TextColumn(f) for f in fields),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console(stderr=True), transient=True) as bar:
        yield bar


def _rate(bar: Any) -> str:
    speed = bar.tasks[0].speed
    return f"{speed:.0f}" if speed else "-"


@contextmanager
def learn_progress(enabled: bool) -> Iterator[Any]:
    """A progress callback for ``learn_path``: a bar with files/s and time left on stderr when
    ``enabled`` (a terminal, no --quiet/--json), else None (no counting pass either)."""
    if not enabled:
        yield None
        return
    with _bar("learning", "{task.fields[rate]} files/s", "{task.fields[sections]} sections") as bar:
        task = bar.add_task("learn", total=None, rate="-", sections=0)

        def update(p: LearnProgress) -> None:
            bar.update(
                task,
                completed=p.files_done,
                total=p.files_total,
                sections=p.sections,
                rate=_rate(bar),
            )

        yield update


@contextmanager
def count_progress(enabled: bool, label: str, unit: str) -> Iterator[Any]:
    """A ``(done, total)`` progress callback drawing a bar with ``unit``/s and time left on
    stderr when ``enabled``, else None."""
    if not enabled:
        yield None
        return
    with _bar(label, "{task.fields[rate]} " + unit + "/s") as bar:
        task = bar.add_task(label, total=None, rate="-")

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, rate=_rate(bar))

        yield update


@contextmanager
def download_progress(enabled: bool) -> Iterator[Any]:
    """A ``(file name, bytes so far, total)`` callback drawing one byte bar per downloaded
    file on stderr when ``enabled``, else None. Nothing is drawn unless bytes arrive."""
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (
        TextColumn("downloading {task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console(stderr=True), transient=True) as bar:
        tasks: dict[str, Any] = {}

        def update(name: str, done: int, total: int | None) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done, total=total)

        yield update
