"""The ``kbdb search`` table (kbdb.cli.table) draws what rich's Table drew before it,
character for character, so that the cold start can skip rich without changing the output."""

from __future__ import annotations

import dataclasses
import io
import random

import pytest

from kbdb.cli import render
from kbdb.cli import table as tb
from kbdb.types import SearchItem

WORDS = [
    "pool",
    "connection",
    "ownership",
    "borrow",
    "the",
    "a",
    "of",
    "Rust",
    "`String`",
    "values::clone()",
    "Postgres",
    "JSONB",
    "tokens",
    "x",
    "y",
    "z",
    "α",
    "β",
    "naïve",
    "café",
    "東京",
    "データベース",
    "接続",
    "ok—fine",
    "https://example.com/a/very/long/path/that/does/not/fit/anywhere/in/a/narrow/column",
    "supercalifragilisticexpialidocious_and_then_some_more_letters_to_be_long",
]


def item(rng: random.Random, n: int) -> SearchItem:
    words = [rng.choice(WORDS) for _ in range(rng.randint(0, 45))]
    heading = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 9)))
    return SearchItem(
        kbid=f"{rng.getrandbits(128):032x}",
        heading=heading,
        level=2,
        parent=None,
        type="text/markdown",
        section_type=rng.choice(["section", "section", "fact", "decision"]),
        docids=tuple(f"docs/{rng.choice(WORDS)}.md" for _ in range(rng.randint(0, 2))),
        tags=tuple(rng.choice(["design", "backend", "東京"]) for _ in range(rng.randint(0, 2))),
        snippet=("…" if rng.random() < 0.5 else "") + " ".join(words),
        matched_terms=tuple(rng.choice(WORDS).lower() for _ in range(rng.randint(0, 3))),
        matched_fields=("body",),
        score=rng.uniform(0, 30),
        confidence=rng.random(),
        created_at="2026-01-01T00:00:00Z",
        relaxed=rng.random() < 0.3,
    )


def rich_table(items: list[SearchItem], width: int) -> str:
    """The table as rich drew it (the code kbdb used before kbdb.cli.table)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        no_color=True,
        color_system=None,
        highlight=False,
        soft_wrap=False,
        emoji=False,
        legacy_windows=False,
    )
    table = Table(box=box.SIMPLE_HEAD, expand=True, show_lines=True, show_edge=False)
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    table.add_column("section", width=render.KBID_WIDTH, overflow="fold")
    table.add_column("snippet", ratio=1)
    table.add_column("score", justify="right", no_wrap=True)
    for n, it in enumerate(items, 1):
        score = f"{it.score:.2f}\n{it.confidence:.0%}" + ("\nrelaxed" if it.relaxed else "")
        table.add_row(
            str(n), render._section_cell(it), render.highlight(it.snippet, it.matched_terms), score
        )
    console.print(table)
    return out.getvalue()


def plain_table(items: list[SearchItem], width: int) -> str | None:
    rows = [render.search_row(n, it) for n, it in enumerate(items, 1)]
    return tb.draw(render._search_columns(), rows, width=width, color=False)


@pytest.mark.parametrize("seed", range(40))
def test_the_table_is_what_rich_drew(seed: int) -> None:
    rng = random.Random(seed)
    items = [item(rng, n) for n in range(rng.randint(1, 10))]
    for width in (53, 58, 60, 80, 100, 133, 160, 250):
        assert plain_table(items, width) == rich_table(items, width), (seed, width)


def test_a_terminal_too_narrow_is_left_to_rich() -> None:
    """Below ~52 columns the snippet has no room and rich shrinks the other columns;
    draw() says so (None) rather than drawing something else."""
    rng = random.Random(3)
    items = [item(rng, n) for n in range(3)]
    assert plain_table(items, 40) is None
    assert plain_table(items, 200) is not None


def test_colour_styles_the_matches_and_fields() -> None:
    rng = random.Random(1)
    it = item(rng, 1)
    it = dataclasses.replace(it, snippet="a connection pool", matched_terms=("pool",))
    rows = [render.search_row(1, it)]
    coloured = tb.draw(render._search_columns(), rows, width=100, color=True)
    assert "\x1b[1;33mpool\x1b[0m" in coloured  # MATCH_STYLE, bold yellow
    assert f"\x1b[2m{it.kbid}\x1b[0m" in coloured
    plain = tb.draw(render._search_columns(), rows, width=100, color=False)
    assert "\x1b[" not in plain and "pool" in plain


def test_control_characters_never_reach_the_terminal() -> None:
    assert tb.clean("a\x1b[31mred\x07\tb\r\nc") == "a[31mred        b\nc"


def test_width_and_colour_follow_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "97")
    assert tb.console_width() == 97
    monkeypatch.delenv("COLUMNS")
    assert tb.console_width() >= 1
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert tb.color_enabled(io.StringIO()) is False
    monkeypatch.delenv("NO_COLOR")
    assert tb.color_enabled(io.StringIO()) is True
    monkeypatch.delenv("FORCE_COLOR")
    assert tb.color_enabled(io.StringIO()) is False  # not a terminal
