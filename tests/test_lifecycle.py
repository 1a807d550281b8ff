"""Keeping knowledge current and navigable (SPEC §3 supersession, §5): replace, revise,
history, forget, documents, outline, tags and related."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import write
from tests.embedding.conftest import find_test_model

import kbdb
from kbdb import _core
from kbdb.config import set_value
from kbdb.errors import InvalidArgumentError, NotFoundError
from kbdb.ingest.section import RawSection, build_sections
from kbdb.knowledge.lifecycle import heading_tree
from kbdb.types import OutlineNode

GUIDE = (
    "# Guide\n\nIntro to the guide.\n\n"
    "## Install\n\nRun pip install kbdb.\n\n"
    "## Usage\n\nCall kbdb search with a query.\n\n"
    "### Flags\n\nUse --json for machines.\n\n"
    "## Old\n\nGone soon.\n"
)


def _by_heading(kb: kbdb.KnowledgeBase, docid: str) -> dict[str, str]:
    return {s.heading: s.kbid for s in kb.recall(docid=docid).sections}


def _seq(kb: kbdb.KnowledgeBase) -> int:
    return kb.stats().changelog_seq


# -- supersession by re-learning and by replace ----------------------------------------------


def test_relearn_after_edits_changed_added_removed(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    f = write(tmp_path / "src", "guide.md", GUIDE)
    kb.learn_path(f)
    v1 = _by_heading(kb, "guide.md")
    edited = GUIDE.replace("pip install", "pipx install").replace("## Old\n\nGone soon.\n", "")
    f.write_text(edited + "## Upgrade\n\nRun pipx upgrade kbdb.\n")
    rep = kb.learn_path(f)
    status = {s.heading: s for s in rep.sections}
    assert status["Install"].status == "added" and status["Install"].superseded == v1["Install"]
    assert status["Upgrade"].status == "added" and status["Upgrade"].superseded is None
    for same in ("Guide", "Usage", "Flags"):
        assert status[same].status == "unchanged" and status[same].kbid == v1[same]
    assert rep.sections_added == 2 and rep.sections_retired == 2  # Install changed, Old gone
    old = kb.recall(v1["Old"]).sections[0]
    assert old.retired and old.superseded_by is None
    assert kb.history(v1["Old"]).versions[-1].reason == "removed"
    assert [s.heading for s in kb.recall(docid="guide.md").sections] == [
        "Guide",
        "Install",
        "Usage",
        "Flags",
        "Upgrade",
    ]
    assert kb.search("gone soon").total == 0 and kb.search("upgrade").total == 1


def test_three_versions_of_a_file_form_one_chain(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    f = write(tmp_path, "note.md", "# Note\n\nversion one\n")
    kbids = [kb.learn_path(f).sections[0].kbid]
    for text in ("version two", "version three"):
        f.write_text(f"# Note\n\n{text}\n")
        kbids.append(kb.learn_path(f).sections[0].kbid)
    for k in kbids:  # from the oldest, the middle and the newest: the same chain
        h = kb.history(k)
        assert h.kbid == k
        assert [v.kbid for v in h.versions] == kbids
    versions = kb.history(kbids[0]).versions
    assert [v.reason for v in versions] == ["superseded", "superseded", None]
    assert versions[0].retired_at is not None and versions[2].retired_at is None
    assert kb.recall(kbids[0]).sections[0].superseded_by == kbids[1]


def test_replace_true_supersedes_by_source_key_false_keeps_both(kb: kbdb.KnowledgeBase) -> None:
    first = kb.learn(
        "# Runbook\n\n## Restart\n\nsystemctl restart api\n\n## Logs\n\njournalctl -u api\n",
        docid="runbook",
    )
    v1 = {s.heading: s.kbid for s in first.sections}
    # replace=False (the default): the new Restart is added, the old one stays live.
    kept = kb.learn("# Runbook\n\n## Restart\n\nkubectl rollout restart api\n", docid="runbook")
    restart_kept = next(s for s in kept.sections if s.heading == "Restart")
    assert restart_kept.superseded is None and kept.sections_retired == 0
    assert kb.search("systemctl").total == 1 and kb.search("kubectl").total == 1
    # replace=True: same source key, different content -> the old one is retired.
    rep = kb.learn(
        "# Runbook\n\n## Restart\n\nnomad job restart api\n", docid="runbook", replace=True
    )
    restart = next(s for s in rep.sections if s.heading == "Restart")
    assert restart.superseded in {v1["Restart"], restart_kept.kbid}
    assert kb.search("nomad").total == 1
    assert kb.search("systemctl").total == 0 and kb.search("kubectl").total == 0
    # Sections whose source key is not in the new content are untouched by replace.
    assert kb.search("journalctl").items[0].kbid == v1["Logs"]
    old = kb.recall(v1["Restart"]).sections[0]
    assert old.retired and old.superseded_by is not None


def test_replace_with_identical_content_changes_nothing(kb: kbdb.KnowledgeBase) -> None:
    a = kb.learn("Cache TTL is one hour.", title="Cache TTL")
    seq = _seq(kb)
    b = kb.learn("Cache TTL is one hour.", title="Cache TTL", replace=True)
    assert b.sections[0].kbid == a.sections[0].kbid and b.sections[0].superseded is None
    assert b.sections_retired == 0 and kb.stats().live_sections == 1
    assert _seq(kb) == seq


# -- revise ----------------------------------------------------------------------------------


def test_revise_creates_a_new_version_and_keeps_fields(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(
        GUIDE,
        docid="guide",
        tags=["docs"],
        section_type="procedure",
        description="how to use kbdb",
    )
    v1 = _by_heading(kb, "guide")
    old = kb.recall(v1["Install"]).sections[0]
    res = kb.revise(v1["Install"], "Run uv tool install kbdb.\n")
    assert res.previous == v1["Install"] and res.kbid != res.previous
    new = kb.recall(res.kbid).sections[0]
    for name in ("heading", "level", "parent", "type", "section_type", "title", "description"):
        assert getattr(new, name) == getattr(old, name), name
    assert new.tags == ("docs",) and new.docids == ("guide",) and new.source_key == old.source_key
    assert new.content == "Run uv tool install kbdb.\n" and not new.retired
    was = kb.recall(v1["Install"]).sections[0]
    assert was.retired and was.superseded_by == res.kbid and was.docids == ("guide",)
    assert kb.search("pip").total == 0
    assert [i.kbid for i in kb.search("uv tool").items] == [res.kbid]
    # The document keeps its order, with the new version in the old one's place.
    assert [s.kbid for s in kb.recall(docid="guide").sections] == [
        v1["Guide"],
        res.kbid,
        v1["Usage"],
        v1["Flags"],
        v1["Old"],
    ]
    h = kb.history(res.kbid).versions
    assert [(v.kbid, v.reason) for v in h] == [(v1["Install"], "revised"), (res.kbid, None)]


def test_revise_given_fields_change_and_tags_are_replaced(kb: kbdb.KnowledgeBase) -> None:
    r = kb.learn("Postgres is the primary store.", title="DB", tags=["adr", "db"])
    res = kb.revise(
        r.sections[0].kbid,
        "Postgres 16 is the primary store.",
        title="Database choice",
        description="ADR 7",
        tags=["adr"],
        section_type="decision",
    )
    s = kb.recall(res.kbid).sections[0]
    assert (s.title, s.description, s.tags, s.section_type) == (
        "Database choice",
        "ADR 7",
        ("adr",),
        "decision",
    )
    assert kb.search("choice").items[0].kbid == res.kbid
    assert kb.search("postgres", section_type="decision").total == 1
    assert kb.search("postgres", tags=["db"]).total == 0


def test_revise_only_metadata_updates_in_place_and_reindexes(kb: kbdb.KnowledgeBase) -> None:
    r = kb.learn("The cache holds sessions.", title="Cache")
    kbid = r.sections[0].kbid
    assert kb.search("memcached").total == 0
    res = kb.revise(kbid, "The cache holds sessions.", title="Memcached cache", tags=["infra"])
    assert res.kbid == res.previous == kbid
    assert kb.search("memcached").items[0].kbid == kbid
    assert kb.recall(kbid).sections[0].tags == ("infra",)
    assert kb.tags().tags[0].tag == "infra"
    assert len(kb.history(kbid).versions) == 1


def test_revising_a_heading_section_keeps_its_children(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(GUIDE, docid="guide")
    v1 = _by_heading(kb, "guide")
    res = kb.revise(v1["Usage"], "Call kbdb search QUERY.\n")
    assert kb.recall(v1["Flags"]).sections[0].parent == res.kbid
    usage = next(n for n in kb.outline("guide").nodes[0].children if n.heading == "Usage")
    assert usage.kbid == res.kbid and [c.heading for c in usage.children] == ["Flags"]


def test_revise_errors_change_nothing(kb: kbdb.KnowledgeBase) -> None:
    r = kb.learn("# Fact\n\nfirst", docid="f")
    kbid = r.sections[0].kbid
    new = kb.revise(kbid, "second").kbid
    seq = _seq(kb)
    with pytest.raises(NotFoundError):
        kb.revise("0" * 32, "x")
    with pytest.raises(InvalidArgumentError, match="retired") as err:
        kb.revise(kbid, "third")
    assert new in str(err.value)  # the hint names the live version
    with pytest.raises(InvalidArgumentError, match="empty"):
        kb.revise(new, "  \n")
    assert _seq(kb) == seq
    assert kb.recall(new).sections[0].content == "second"


def test_revise_json_and_image_are_validated(kb: kbdb.KnowledgeBase) -> None:
    j = kb.learn('{"a": 1}', type="application/json", docid="j").sections[0].kbid
    with pytest.raises(InvalidArgumentError, match="does not parse"):
        kb.revise(j, "{a: 1}")
    assert kb.recall(kb.revise(j, '{"a": 2}').kbid).sections[0].content == '{"a": 2}'
    img = kb.learn("iVBORw0KGgo=", type="image/png", title="logo", docid="i").sections[0].kbid
    with pytest.raises(InvalidArgumentError, match="base64"):
        kb.revise(img, "%%%")
    res = kb.revise(img, "R0lGODlh", title="new logo")
    s = kb.recall(res.kbid).sections[0]
    assert s.heading == s.title == "new logo" and s.content == "R0lGODlh"


def test_relearning_a_file_after_revise(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    f = write(tmp_path, "guide.md", GUIDE)
    kb.learn_path(f)
    v1 = _by_heading(kb, "guide.md")
    res = kb.revise(v1["Install"], "Run uv tool install kbdb.\n")
    # The unchanged file: the correction stands.
    assert kb.learn_path(f).documents_unchanged == 1
    assert kb.search("uv tool").total == 1
    # An edited file wins: the file's sections are the document again.
    f.write_text(GUIDE.replace("Gone soon.", "Still here."))
    rep = kb.learn_path(f)
    assert kb.search("uv tool").total == 0 and kb.search("pip").total == 1
    revised = kb.recall(res.kbid).sections[0]
    assert revised.retired and revised.superseded_by == v1["Install"]
    assert [v.kbid for v in kb.history(v1["Install"]).versions] == [res.kbid, v1["Install"]]
    assert any(s.heading == "Install" and s.kbid == v1["Install"] for s in rep.sections)


# -- forget ----------------------------------------------------------------------------------


def test_forget_kbids_leave_search_and_stay_recallable(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(GUIDE, docid="guide", tags=["docs"])
    v1 = _by_heading(kb, "guide")
    res = kb.forget(v1["Install"], v1["Old"])
    assert set(res.retired) == {v1["Install"], v1["Old"]} and res.already_retired == ()
    assert kb.search("pip").total == 0 and kb.search("gone soon").total == 0
    s = kb.recall(v1["Install"]).sections[0]
    assert s.retired and s.superseded_by is None and s.docids == ("guide",)
    assert kb.history(v1["Install"]).versions[0].reason == "forgotten"
    assert v1["Install"] not in [s.kbid for s in kb.recall(docid="guide").sections]
    again = kb.forget(v1["Install"], v1["Usage"])
    assert again.retired == (v1["Usage"],) and again.already_retired == (v1["Install"],)
    assert kb.tags().tags[0].count == 2  # Guide and Flags remain


def test_forget_unknown_kbid_changes_nothing(kb: kbdb.KnowledgeBase) -> None:
    r = kb.learn("# A\n\nalpha", docid="a")
    seq = _seq(kb)
    with pytest.raises(NotFoundError):
        kb.forget(r.sections[0].kbid, "f" * 32)
    with pytest.raises(NotFoundError):
        kb.forget(docid="nope")
    with pytest.raises(InvalidArgumentError):
        kb.forget()
    assert _seq(kb) == seq and kb.search("alpha").total == 1


def test_forget_docid_keeps_sections_other_documents_hold(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    shared = "## Shared\n\nCommon paragraph about llamas.\n"
    f1 = write(tmp_path / "d", "one.md", "# One\n\nocelots live here\n\n" + shared)
    write(tmp_path / "d", "two.md", "# Two\n\npumas live here\n\n" + shared)
    kb.learn_path(tmp_path / "d")
    res = kb.forget(docid="one.md")
    assert len(res.retired) == 1  # "One"; "Shared" lives on in two.md
    assert kb.search("llamas").items[0].docids == ("two.md",)
    assert kb.search("ocelots").total == 0
    assert [d.docid for d in kb.documents().items] == ["two.md"]
    # Learning the same, unchanged file again brings it back.
    back = kb.learn_path(f1, docid="one.md")
    assert back.documents_updated == 1
    assert kb.search("ocelots").total == 1
    assert {d.docid for d in kb.documents().items} == {"one.md", "two.md"}


@pytest.fixture
def vkb(tmp_path: Path) -> Iterator[kbdb.KnowledgeBase]:
    model = find_test_model()
    kb = kbdb.KnowledgeBase.init(tmp_path / "vkb")
    cfg = kb.path / "worker.toml"
    set_value(cfg, "embedding.provider", "onnx")
    set_value(cfg, "embedding.model_path", str(model))
    kb.close()
    kb = kbdb.KnowledgeBase.open(tmp_path / "vkb")
    yield kb
    kb.close()


FACTS = {
    "db": "We chose Postgres because of its JSONB support.",
    "cache": "Redis holds the session cache with a one hour expiry.",
    "deploy": "Deployments roll out through a blue green switch at the load balancer.",
    "team": "The platform team meets every Tuesday to review incidents.",
}


def _vector_count(kb: kbdb.KnowledgeBase) -> int:
    return _core.VectorIndex.open(str(kb.path / "indexes")).count


def test_forget_and_revise_reach_the_vector_index(vkb: kbdb.KnowledgeBase) -> None:
    vkb.learn_many(kbdb.LearnItem(text, docid=name) for name, text in FACTS.items())
    db = vkb.recall(docid="db").sections[0].kbid
    assert vkb.search("database rationale", mode="vector", limit=1).items[0].kbid == db
    assert _vector_count(vkb) == 4
    vkb.forget(db)
    assert _vector_count(vkb) == 3  # deleted from vectors.idx, not just hidden at hydration
    assert db not in [i.kbid for i in vkb.search("database rationale", mode="vector").items]
    assert db not in [i.kbid for i in vkb.search("postgres jsonb", mode="hybrid").items]
    assert vkb.search("postgres").total == 0
    cache = vkb.recall(docid="cache").sections[0].kbid
    new = vkb.revise(cache, "Memcached holds the session cache for thirty minutes.").kbid
    hits = [i.kbid for i in vkb.search("session cache store", mode="vector").items]
    assert new in hits and cache not in hits
    assert _vector_count(vkb) == 3
    assert vkb.stats().vector_index_stale is False


def test_related_uses_vectors_when_fresh(vkb: kbdb.KnowledgeBase) -> None:
    vkb.learn_many(kbdb.LearnItem(text, docid=name) for name, text in FACTS.items())
    vkb.learn("We picked MySQL at first, then moved to another relational database.", docid="db2")
    db = vkb.recall(docid="db").sections[0].kbid
    res = vkb.related(db, limit=3)
    assert res.method == "vector"
    assert [i.relation for i in res.items] == ["vector"] * 3
    assert res.items[0].docids == ("db2",)
    assert db not in [i.kbid for i in res.items]
    scores = [i.score for i in res.items]
    assert all(s is not None for s in scores) and scores == sorted(scores, reverse=True)  # type: ignore[type-var]


# -- navigation ------------------------------------------------------------------------------


def test_documents_filter_and_paging(kb: kbdb.KnowledgeBase) -> None:
    for i in range(5):
        kb.learn(f"# Doc {i}\n\nbody {i}\n\n## Part\n\npart {i}", docid=f"d{i}", tags=["all"])
    kb.learn("# Odd\n\nodd one", docid="odd", tags=["all", "odd"], description="the odd one")
    page = kb.documents(limit=2)
    assert page.total == 6 and page.has_more and [d.docid for d in page.items] == ["d0", "d1"]
    last = kb.documents(limit=4, offset=4)
    assert [d.docid for d in last.items] == ["d4", "odd"] and not last.has_more
    odd = kb.documents(tags=["odd"])
    assert odd.total == 1
    info = odd.items[0]
    assert (info.docid, info.title, info.description, info.sections) == (
        "odd",
        "Odd",
        "the odd one",
        1,
    )
    assert info.tags == ("all", "odd") and info.type == "text/markdown"
    assert kb.documents(tags=["all", "odd", "missing"]).total == 0
    assert kb.documents().items[0].sections == 2
    for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}):
        with pytest.raises(InvalidArgumentError):
            kb.documents(**bad)  # type: ignore[arg-type]


def _shape(nodes: tuple[OutlineNode, ...]) -> list[object]:
    return [(n.heading, n.level, _shape(n.children)) for n in nodes]


def test_outline_is_the_heading_tree(kb: kbdb.KnowledgeBase) -> None:
    kb.learn("preamble text\n\n" + GUIDE + "\n# Appendix\n\nmore\n", docid="guide")
    out = kb.outline("guide")
    assert out.docid == "guide" and out.title == "Guide"
    assert _shape(out.nodes) == [
        ("", 0, []),
        (
            "Guide",
            1,
            [
                ("Install", 2, []),
                ("Usage", 2, [("Flags", 3, [])]),
                ("Old", 2, []),
            ],
        ),
        ("Appendix", 1, []),
    ]
    assert out.nodes[1].kbid == _by_heading(kb, "guide")["Guide"]
    d = out.to_dict()
    assert d["nodes"][1]["children"][1]["children"][0]["heading"] == "Flags"
    with pytest.raises(NotFoundError):
        kb.outline("missing")


def test_tags_count_live_sections(kb: kbdb.KnowledgeBase) -> None:
    kb.learn("# A\n\na\n\n## B\n\nb", docid="ab", tags=["x", "y"])
    kb.learn("# C\n\nc", docid="c", tags=["x"])
    assert [(t.tag, t.count) for t in kb.tags().tags] == [("x", 3), ("y", 2)]
    kb.forget(docid="ab")
    assert [(t.tag, t.count) for t in kb.tags().tags] == [("x", 1)]
    assert kb.tags().to_dict() == {"tags": [{"tag": "x", "count": 1}]}


def test_related_siblings_first_then_lexical(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(GUIDE, docid="guide")
    kb.learn("# Packaging\n\nHow pip install works with wheels for kbdb.", docid="pkg")
    kb.learn("# Cooking\n\nSimmer the onions slowly.", docid="food")
    v1 = _by_heading(kb, "guide")
    res = kb.related(v1["Install"], limit=10)
    assert res.method == "lexical"
    relations = [i.relation for i in res.items]
    assert relations[:2] == ["sibling", "sibling"]
    assert [i.kbid for i in res.items[:2]] == [v1["Usage"], v1["Old"]]
    assert all(i.score is None for i in res.items[:2])
    lexical = [i for i in res.items if i.relation == "lexical"]
    assert lexical and lexical[0].docids == ("pkg",)
    assert v1["Install"] not in [i.kbid for i in res.items]
    assert "food" not in {d for i in res.items for d in i.docids}
    assert len(kb.related(v1["Install"], limit=1).items) == 1
    with pytest.raises(NotFoundError):
        kb.related("0" * 32)
    with pytest.raises(InvalidArgumentError):
        kb.related(v1["Install"], limit=0)


def test_related_of_a_single_section_document_has_no_siblings(kb: kbdb.KnowledgeBase) -> None:
    a = kb.learn("Kafka carries audit events.", title="Audit events").sections[0].kbid
    b = kb.learn("Audit events are kept for a year.", title="Retention").sections[0].kbid
    res = kb.related(a)
    assert [(i.kbid, i.relation) for i in res.items] == [(b, "lexical")]


def test_forgotten_section_of_a_file_and_relearning(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    f = write(tmp_path, "guide.md", GUIDE)
    kb.learn_path(f)
    install = _by_heading(kb, "guide.md")["Install"]
    kb.forget(install)
    assert kb.learn_path(f).documents_unchanged == 1
    assert kb.search("pip").total == 0
    f.write_text(GUIDE.replace("Gone soon.", "Still here."))
    kb.learn_path(f)
    assert [i.kbid for i in kb.search("pip").items] == [install]
    assert not kb.recall(install).sections[0].retired


def test_image_is_embedded_from_title_and_description(vkb: kbdb.KnowledgeBase) -> None:
    vkb.learn_many(kbdb.LearnItem(text, docid=name) for name, text in FACTS.items())
    img = vkb.learn(
        "iVBORw0KGgo=",
        type="image/png",
        title="Network topology",
        description="routers, switches and firewalls of the office network",
    )
    assert img.sections[0].vector_embedding_failed is False
    hits = vkb.search("diagram of the LAN hardware", mode="vector", limit=1).items
    assert hits[0].kbid == img.sections[0].kbid


@given(st.lists(st.integers(min_value=0, max_value=6), max_size=30))
def test_outline_tree_matches_the_splitter_parents(levels: list[int]) -> None:
    raw = [RawSection(f"h{i}", lvl, "", "", "") for i, lvl in enumerate(levels)]
    parsed = build_sections(raw)
    parent_of: dict[str, str | None] = {}

    def visit(nodes: tuple[OutlineNode, ...], parent: str | None) -> None:
        for n in nodes:
            parent_of[n.kbid] = parent
            visit(n.children, n.kbid)

    tree = heading_tree([(f"h{i}", f"h{i}", lvl) for i, lvl in enumerate(levels)])
    visit(tuple(n.freeze() for n in tree), None)
    assert parent_of == {
        f"h{i}": (None if p.parent is None else f"h{p.parent}") for i, p in enumerate(parsed)
    }
