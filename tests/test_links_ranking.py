"""How links rank: a note's aliases name it, the labels of the links to a note are its
anchor text, and both follow the notes as they change (docs/knowledge.md, Links)."""

from __future__ import annotations

from pathlib import Path

import kbdb
from kbdb.config import Config, SearchConfig

VAULT = {
    "Planning.md": "---\naliases: [Roadmap, Old notes/Quarter plan]\n---\n# Planning\n\n"
    "We meet on Mondays and set goals for the next weeks.\n",
    "Team.md": "# Team\n\nSee [[Planning|quarterly objectives review]] before the offsite.\n",
    "Budget.md": "# Budget\n\nCosts follow [the objectives review](Planning.md) each month.\n",
    "Goals.md": "# Goals\n\nGoals and objectives: a review of what we set out to do, and "
    "an objectives review template.\n",
}


def _vault(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "vault"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _top(kb: kbdb.KnowledgeBase, query: str) -> str | None:
    res = kb.search(query, mode="lexical", limit=3)
    return res.items[0].docids[0] if res.items else None


def test_an_alias_names_its_note(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    kb.learn_path(_vault(tmp_path, VAULT))
    assert _top(kb, "roadmap") == "Planning.md"
    # An alias that is an old path names its note by its last part, too.
    assert _top(kb, "quarter plan") == "Planning.md"
    item = kb.search("roadmap", explain=True).items[0]
    assert item.explain is not None and item.explain["name_boost"] > 1


def test_link_labels_rank_their_target(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    root = _vault(tmp_path, VAULT)
    kb.learn_path(root)
    # "objectives review" is in Goals' own text and only in the labels of links to
    # Planning: the anchor text puts Planning first.
    res = kb.search("objectives review", explain=True)
    assert res.items[0].docids == ("Planning.md",)
    assert res.items[0].explain is not None
    assert {p["field"] for p in res.items[0].explain["bm25f"]} == {"anchor"}
    off = kbdb.KnowledgeBase.open(kb.path, config=Config(search=SearchConfig(w_anchor=0.0)))
    try:
        assert _top(off, "objectives review") == "Goals.md"
    finally:
        off.close()
    # The labels leave with the notes that wrote them.
    kb.forget(docid="Team.md")
    kb.forget(docid="Budget.md")
    assert _top(kb, "objectives review") == "Goals.md"


def test_a_new_link_reindexes_its_target(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    root = _vault(tmp_path, {k: v for k, v in VAULT.items() if k != "Team.md"})
    kb.learn_path(root)
    assert kb.search("offsite", mode="lexical").items == ()
    (root / "Team.md").write_text("# Team\n\n[[Planning|offsite agenda]]\n", encoding="utf-8")
    kb.learn_path(root)
    assert _top(kb, "offsite agenda") == "Planning.md"


def test_without_links_the_anchor_field_changes_nothing(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    plain = {
        "a.md": "# Alpha\n\nThe review of objectives.\n",
        "b.md": "# Beta\n\nObjectives, goals and plans for the review.\n",
        "c.txt": "A plain review.\n",
    }
    kb.learn_path(_vault(tmp_path, plain))
    want = [(i.kbid, i.score) for i in kb.search("objectives review").items]
    for w in (0.0, 50.0):
        other = kbdb.KnowledgeBase.open(kb.path, config=Config(search=SearchConfig(w_anchor=w)))
        try:
            assert [(i.kbid, i.score) for i in other.search("objectives review").items] == want
        finally:
            other.close()


def test_learn_links_false_keeps_no_links(tmp_path: Path) -> None:
    path = tmp_path / "kb"
    kbdb.KnowledgeBase.init(path).close()
    (path / ".kbdb" / "worker.toml").write_text("[learn]\nlinks = false\n", encoding="utf-8")
    with kbdb.KnowledgeBase.open(path) as kb:
        kb.learn_path(_vault(tmp_path, VAULT))
        assert kb.links("Team.md").items == ()
        assert kb.backlinks("Planning.md").items == ()
        # Aliases are the note's own names, links or not.
        assert _top(kb, "roadmap") == "Planning.md"
