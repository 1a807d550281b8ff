"""``benches/update_readme.py``: the README's benchmark table from the result files."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCHES = Path(__file__).resolve().parents[1] / "benches"
sys.path.insert(0, str(BENCHES))

import update_readme  # noqa: E402


def _result(platform: str, what: str) -> dict[str, Any]:
    return {
        "date": "2026-12-03T05:00:00Z",
        "machine": {"cpu": "AMD EPYC", "cores": 2, "python": "3.11.7", "platform": platform},
        "headline": [{"what": what, "kbdb": "1", "peers": "2"}],
    }


def test_rows_follow_the_order_of_the_scripts() -> None:
    block = update_readme.render(
        {"neardup": _result("host-a", "second"), "quality": _result("host-a", "first")}
    )
    assert block.index("| first | 1 | 2 |") < block.index("| second | 1 | 2 |")
    assert "hosts of this machine class" not in block


def test_results_from_several_hosts_are_said_to_be() -> None:
    block = update_readme.render(
        {
            "quality": _result("host-a", "q"),
            "lexical_speed": _result("host-b", "l"),
            "neardup": _result("host-b", "n"),
        }
    )
    assert "The results come from 2 hosts of this machine class" in block
    assert "host-a: `benches/bench_quality.py`" in block
    assert "host-b: `benches/bench_lexical_speed.py`, `benches/bench_neardup.py`" in block


def test_one_platform_string_with_two_cpu_families_is_two_hosts() -> None:
    zen4, zen5 = _result("host-a", "e"), _result("host-a", "q")
    zen4["machine"]["cpu_id"] = {"cpu_family": 25, "model": 17, "avx512f": True}
    zen5["machine"]["cpu_id"] = {"cpu_family": 26, "model": 2, "avx512f": True}
    block = update_readme.render({"quality": zen5, "embed": zen4})
    assert "The results come from 2 hosts of this machine class" in block
    assert "host-a (CPU family 25, model 17): `benches/bench_embed.py`" in block
    assert "host-a (CPU family 26, model 2): `benches/bench_quality.py`" in block


def test_the_block_replaces_only_the_text_between_the_markers() -> None:
    text = f"before\n{update_readme.START}\nold\n{update_readme.END}\nafter\n"
    new = update_readme.update(text, "\nnew\n")
    assert new == f"before\n{update_readme.START}\nnew\n{update_readme.END}\nafter\n"
    assert update_readme.update("no markers", "x") is None


def test_the_ranking_table_in_the_readme_and_search_docs_is_current() -> None:
    import ranking_table

    table = ranking_table.render()
    assert "| SciFact |" in table and "| paraphrase (agent memories) |" in table
    for path in ranking_table.TARGETS:
        text = path.read_text(encoding="utf-8")
        assert ranking_table.apply(text, table) == text, (
            f"{path.name}: run python benches/ranking_table.py"
        )
