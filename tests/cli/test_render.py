"""Pure pieces of the CLI: highlighting, sizes and option parsing (no subprocess)."""

from __future__ import annotations

import click
import pytest

from kbdb.cli.options import split_list
from kbdb.cli.render import highlight, human_bytes, match_spans


def spans_text(text: str, terms: list[str]) -> list[str]:
    return [text[a:b] for a, b in match_spans(text, terms)]


def test_highlight_matches_words_and_their_inflections() -> None:
    text = "Databases and the database pool; pooling connections."
    assert spans_text(text, ["database", "pool"]) == ["Databases", "database", "pool", "pooling"]
    assert spans_text(text, ["connection"]) == ["connections"]


def test_highlight_does_not_match_inside_words() -> None:
    assert spans_text("spool and pool", ["pool"]) == ["pool"]


def test_highlight_cjk_as_substrings() -> None:
    assert spans_text("我们使用数据库存储", ["数据库"]) == ["数据库"]


def test_highlight_merges_overlaps_and_ignores_blank_terms() -> None:
    assert match_spans("authentication", ["auth", "authentication", " "]) == [(0, 14)]


def test_highlight_never_interprets_markup() -> None:
    text = highlight("[bold]not markup[/bold] pool", ["pool"])
    assert text.plain == "[bold]not markup[/bold] pool"
    assert [(s.start, s.end) for s in text.spans] == [(24, 28)]


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (5 * 2**20, "5.0 MiB"),
        (3 * 2**40, "3072.0 GiB"),
    ],
)
def test_human_bytes(n: int, expected: str) -> None:
    assert human_bytes(n) == expected


def test_split_list() -> None:
    ctx = click.Context(click.Command("x"))
    param = click.Option(["--tags"])
    assert split_list(ctx, param, ("a,b", " c ", "a,,")) == ("a", "b", "c")
    assert split_list(ctx, param, ()) == ()
