"""The notices of a learn, grouped for ``kbdb learn``: each warning code, near duplicates,
failed embeddings (stdout) and each skip code (stderr) as a count and the first few
examples, so that a learn of a large tree fits on one screen whatever its size.
``--verbose`` lists every notice in the same groups; ``--json`` prints the full report.

Groups are ordered by count (largest first, then by name), but a possible secret comes
first whatever its count; examples are in learn order. Each
group shows ``MAX_EXAMPLES`` examples, fewer when there are so many groups that the output
would pass ``SCREEN_LINES``. On a terminal the headers and names are coloured; anywhere
else the lines are plain. Lines are never cut: a near duplicate's line is two kbids wide
before it says where the section is, which a cut to 80 columns would drop.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from kbdb.cli import table as tb

if TYPE_CHECKING:
    from kbdb.cli.table import Span
    from kbdb.types import LearnReport, SectionReport, SkippedFile

MAX_EXAMPLES = 3
SCREEN_LINES = 40
# Lines besides the groups: the summary, the hint, and the skip header and footer.
_FIXED_LINES = 4
VERBOSE_HINT = "'kbdb learn --verbose' lists every one, --json gives the full report"
SECRET = "warning possible_secret"
EMBEDDING_FAILED = "embedding failed, lexical only until 'kbdb rebuild'"


class Group:
    """Notices of one kind: ``label`` (``warning empty_content``), the noun they count
    (``section``), and one line of spans per notice."""

    __slots__ = ("label", "lines", "noun")

    def __init__(self, label: str, noun: str) -> None:
        self.label = label
        self.noun = noun
        self.lines: list[list[Span]] = []

    def header(self, shown: int) -> str:
        n = len(self.lines)
        count = f"{n} {self.noun}{'' if n == 1 else 's'}"
        return f"{self.label}: {count}" + (f", first {shown}:" if shown < n else ":")


def _ordered(groups: dict[str, Group]) -> list[Group]:
    return sorted(groups.values(), key=lambda g: (g.label != SECRET, -len(g.lines), g.label))


def _where(s: SectionReport) -> list[Span]:
    heading = tb.clean(s.heading) if s.heading.strip() else "(no heading)"
    out: list[Span] = [(s.kbid, "dim"), ("  ", "")]
    if s.docid:
        out += [(tb.clean(s.docid), "cyan"), (": ", "")]
    out.append((heading, "bold" if s.heading.strip() else "dim"))
    return out


def section_groups(sections: Sequence[SectionReport]) -> list[Group]:
    """A group per warning code, one for near duplicates (a line per pair) and one for
    failed embeddings."""
    groups: dict[str, Group] = {}

    def add(key: str, label: str, noun: str, line: list[Span]) -> None:
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(label, noun)
        group.lines.append(line)

    for s in sections:
        for code in s.warnings:
            add(code, f"warning {code}", "section", _where(s))
        for d in s.near_duplicates:
            where = _where(s)
            pair: list[Span] = [
                where[0],
                (f" ~ {d.kbid} ({d.similarity:.2f})", ""),
                *where[1:],
            ]
            add("\0near", "near duplicates", "pair", pair)
        if s.vector_embedding_failed:
            add("\0embed", EMBEDDING_FAILED, "section", _where(s))
    return _ordered(groups)


def skip_groups(skipped: Sequence[SkippedFile]) -> list[Group]:
    """A group per skip code, each line the one ``kbdb: skipped PATH: REASON (CODE)``."""
    groups: dict[str, Group] = {}
    for f in skipped:
        group = groups.get(f.code)
        if group is None:
            group = groups[f.code] = Group(f.code, "file")
        group.lines.append([(tb.clean(f"kbdb: skipped {f.path}: {f.reason} ({f.code})"), "")])
    return _ordered(groups)


def examples_per_group(groups: int) -> int:
    """How many notices each group shows by default: ``MAX_EXAMPLES``, fewer when that many
    groups would not fit in ``SCREEN_LINES`` (a group takes its header and its examples)."""
    if groups == 0:
        return MAX_EXAMPLES
    return max(1, min(MAX_EXAMPLES, (SCREEN_LINES - _FIXED_LINES) // groups - 1))


def example_limit(report: LearnReport, *, verbose: bool) -> int | None:
    """The examples per group for this report, None for every one (``--verbose``)."""
    if verbose:
        return None
    n = len(section_groups(report.sections)) + len({f.code for f in report.files_skipped})
    return examples_per_group(n)


class _Out:
    """Lines to stdout or stderr, styled when that stream is a terminal."""

    def __init__(self, *, err: bool) -> None:
        self.err = err
        self.color = tb.color_enabled(sys.stderr if err else sys.stdout)
        self.lines: list[str] = []

    def add(self, spans: Sequence[Span], style: str = "") -> None:
        self.lines.append(tb.styled(spans, self.color, style))

    def flush(self) -> None:
        if self.lines:
            click.echo("\n".join(self.lines), err=self.err)


def render_sections(report: LearnReport, limit: int | None) -> None:
    """The summary line, then each group of section notices (stdout)."""
    r = report
    out = _Out(err=False)
    out.add(
        [
            (
                f"learned {r.documents_added} new, {r.documents_updated} updated, "
                f"{r.documents_unchanged} unchanged document(s): {r.sections_added} "
                f"section(s) added, {r.sections_unchanged} unchanged, {r.sections_retired} "
                f"retired in {r.elapsed_ms / 1000:.2f} s"
                + (f"; {len(r.files_skipped)} file(s) skipped" if r.files_skipped else ""),
                "",
            )
        ]
    )
    groups = section_groups(r.sections)
    shown = total = 0
    for group in groups:
        k = len(group.lines) if limit is None else min(limit, len(group.lines))
        style = "bold red" if group.label == SECRET else "bold yellow"
        out.add([(group.header(k), style)])
        for line in group.lines[:k]:
            out.add([("  ", ""), *line])
        shown += k
        total += len(group.lines)
    if shown < total:
        out.add([(f"{shown} of {total} shown; {VERBOSE_HINT}", "")], "dim")
    out.flush()


def render_skipped(report: LearnReport, limit: int | None) -> None:
    """Skipped files on stderr, one ``kbdb: skipped ...`` line each. When a skip code has
    more than ``limit``, a header with the count per code comes first and a footer says
    how many were left out."""
    groups = skip_groups(report.files_skipped)
    if not groups:
        return
    out = _Out(err=True)
    cut = limit is not None and any(len(g.lines) > limit for g in groups)
    if cut:
        counts = ", ".join(f"{g.label} {len(g.lines)}" for g in groups)
        n = len(report.files_skipped)
        out.add([(f"kbdb: skipped {n} files ({counts}), first {limit} of each:", "")])
    hidden = 0
    for group in groups:
        k = len(group.lines) if limit is None else min(limit, len(group.lines))
        for line in group.lines[:k]:
            out.add(line)
        hidden += len(group.lines) - k
    if cut:
        out.add([(f"kbdb: {hidden} more skipped file(s) not shown; {VERBOSE_HINT}", "")])
    out.flush()
