"""``benches/bench_vault.py``: the vault parser that judges link features, and how its
queries are built (no kbdb, no timing, a vault written in a temporary folder)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHES = Path(__file__).resolve().parents[1] / "benches"
sys.path.insert(0, str(BENCHES))

import bench_vault as vb  # noqa: E402

NOTE_ONE = """---
aliases:
  - First
  - How to/Note 1
  - How to/Note one
---
Text [[Two|the second]] and `[[Two|in code]]` and [lbl](../B.md#x) and ![[img.png|100]]
| [[Two\\|table label]] |
```
[[Two|fenced]]
```
> ```md
> [[Two|quoted fence]]
> ```
%%[[Two|comment]]%%
[[#Local|self]] [[Missing|gone]] [[Two|second]]
"""


def vault(tmp_path: Path) -> tuple[dict[str, vb.Note], list[vb.Link]]:
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "Note one.md").write_text(NOTE_ONE, encoding="utf-8")
    (tmp_path / "Two.md").write_text(
        "[[note ONE|the first note]] [[A/Note one#H|heading link]] [[First|by alias]]\n"
        "[the first note](A/Note%20one.md) [[B|the second]] [[Two|two]] [[First| NOTE one ]]\n",
        encoding="utf-8",
    )
    (tmp_path / "B.md").write_text("---\naliases: second\n---\nb\n", encoding="utf-8")
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "hidden.md").write_text("[[Two|hidden]]", encoding="utf-8")
    return vb.read_vault(tmp_path)


def test_links_in_code_comments_and_hidden_folders_are_not_links(tmp_path: Path) -> None:
    notes, links = vault(tmp_path)
    assert sorted(notes) == ["A/Note one.md", "B.md", "Two.md"]
    labels = {lk.label for lk in links}
    assert {"the second", "table label", "lbl", "100", "self", "gone"} <= labels
    assert not labels & {"in code", "fenced", "quoted fence", "comment", "hidden"}


def test_targets_resolve_by_path_then_name_then_alias(tmp_path: Path) -> None:
    notes, links = vault(tmp_path)
    resolver = vb.Resolver(notes)
    got = {lk.label: resolver.resolve(lk) for lk in links if lk.source == "Two.md"}
    assert got["the first note"] == ("A/Note one.md", "ok")  # name, any case; Markdown path
    assert got["heading link"] == ("A/Note one.md", "ok")
    assert got["by alias"] == ("A/Note one.md", "ok")
    one = {lk.label: resolver.resolve(lk) for lk in links if lk.source == "A/Note one.md"}
    assert one["lbl"] == ("B.md", "ok")  # relative to the linking note's folder
    assert one["gone"] == (None, "missing target")
    assert one["100"][1].startswith("not a note")
    assert one["self"] == ("A/Note one.md", "ok")


def test_name_queries_keep_old_names_apart_and_drop_shared_names(tmp_path: Path) -> None:
    notes, _ = vault(tmp_path)
    names, dropped, _ = vb.name_queries(notes)
    got = {(q.set, q.text, q.target) for q in names}
    assert ("name", "Note one", "A/Note one.md") in got
    assert ("alias", "First", "A/Note one.md") in got
    assert ("old name", "Note 1", "A/Note one.md") in got
    assert dropped["old name: the note's name or another of its aliases"] == 1  # Note one
    assert ("alias", "second", "B.md") in got


def test_anchor_queries_leave_out_own_names_sizes_self_links_and_split_labels(
    tmp_path: Path,
) -> None:
    notes, links = vault(tmp_path)
    _, _, owners = vb.name_queries(notes)
    anchors, dropped = vb.anchor_queries(notes, links, owners)
    got = {(q.text, q.target): q.uses for q in anchors}
    assert got[("the first note", "A/Note one.md")] == 2  # wikilink and Markdown link
    assert ("heading link", "A/Note one.md") in got
    assert ("table label", "Two.md") in got
    assert ("lbl", "B.md") in got
    # "the second" points at Two.md and B.md; "second" is B.md's alias and names it
    assert not any(text in ("the second", "second", "two", "100") for text, _ in got)
    assert dropped["label of two targets (label, target pairs)"] == 2
    assert dropped["the target's own name, title or alias"] == 1  # NOTE one
    assert dropped["names another note"] == 1  # "second", from Note one to Two
    assert dropped["link to itself"] == 2  # [[#Local|self]], [[Two|two]] from Two.md
    assert "one character, digits or a size" not in dropped  # img.png is no note first


def test_queries_are_compared_as_their_words() -> None:
    assert vb._words("graph-view") == vb._words("Graph  View") == "graph view"
    assert vb._words("Customize+your+site") == "customize your site"
