"""Skills (SPEC §9): learn, replace with history, list, get, search, kebab-case names,
and SKILL.md folders with front matter."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import write

import kbdb
from kbdb.errors import InvalidArgumentError, NotFoundError

STEPS = "# Steps\n\n1. Build the image.\n2. Push it to the registry.\n3. Roll out.\n"


def test_learn_get_list_and_search(kb: kbdb.KnowledgeBase) -> None:
    res = kb.skill_learn("deploy-app", "Deploy the web app", STEPS, tags=["ops"])
    assert res.name == "deploy-app" and res.previous is None
    skill = kb.skill_get("deploy-app")
    assert skill.content == STEPS  # kept whole: its own headings are not split off
    assert (skill.description, skill.tags, skill.kbid) == ("Deploy the web app", ("ops",), res.kbid)
    listed = kb.skill_list().skills
    assert [(s.name, s.kbid, s.tags) for s in listed] == [("deploy-app", res.kbid, ("ops",))]
    hits = kb.search("registry image", section_type="skill")
    assert [h.kbid for h in hits.items] == [res.kbid]
    assert hits.items[0].section_type == "skill"
    assert kb.search("registry image", section_type="note").total == 0


def test_replace_keeps_history(kb: kbdb.KnowledgeBase) -> None:
    first = kb.skill_learn("deploy-app", "Deploy", STEPS)
    second = kb.skill_learn("deploy-app", "Deploy", STEPS + "4. Watch the dashboards.\n")
    assert second.previous == first.kbid and second.kbid != first.kbid
    assert kb.skill_get("deploy-app").kbid == second.kbid
    old = kb.recall(first.kbid).sections[0]
    assert old.retired and old.superseded_by == second.kbid
    assert [v.kbid for v in kb.history(second.kbid).versions] == [first.kbid, second.kbid]
    assert [s.kbid for s in kb.skill_list().skills] == [second.kbid]
    assert kb.search("dashboards", section_type="skill").items[0].kbid == second.kbid
    assert kb.search("Roll out", section_type="skill").total == 1  # the old one left search


def test_same_content_is_unchanged_and_metadata_updates(kb: kbdb.KnowledgeBase) -> None:
    first = kb.skill_learn("deploy-app", "Deploy", STEPS, tags=["ops"])
    again = kb.skill_learn("deploy-app", "Deploy", STEPS, tags=["ops"])
    assert again.kbid == first.kbid and again.previous is None
    kb.skill_learn("deploy-app", "Ship the web app to production", STEPS, tags=["prod"])
    skill = kb.skill_get("deploy-app")
    assert (skill.description, skill.tags) == ("Ship the web app to production", ("prod",))
    assert kb.search("production", section_type="skill").items[0].kbid == first.kbid


@pytest.mark.parametrize(
    "name", ["Deploy", "deploy app", "deploy_app", "-deploy", "deploy-", "a--b", "", "x" * 65]
)
def test_names_must_be_kebab_case(kb: kbdb.KnowledgeBase, name: str) -> None:
    with pytest.raises(InvalidArgumentError, match="kebab-case") as err:
        kb.skill_learn(name, "d", STEPS)
    assert err.value.code == "INVALID_ARGUMENT"
    assert kb.skill_list().skills == ()


@pytest.mark.parametrize("name", ["a", "deploy-app", "k8s-rollout-v2"])
def test_good_names(kb: kbdb.KnowledgeBase, name: str) -> None:
    assert kb.skill_learn(name, "d", STEPS).name == name


def test_description_and_content_are_required(kb: kbdb.KnowledgeBase) -> None:
    with pytest.raises(InvalidArgumentError, match="description"):
        kb.skill_learn("x", "  ", STEPS)
    with pytest.raises(InvalidArgumentError, match="content"):
        kb.skill_learn("x", "d", "\n")


def test_get_unknown_is_not_found(kb: kbdb.KnowledgeBase) -> None:
    with pytest.raises(NotFoundError) as err:
        kb.skill_get("nope")
    assert err.value.code == "NOT_FOUND"


def test_forgotten_skill_is_gone(kb: kbdb.KnowledgeBase) -> None:
    k = kb.skill_learn("deploy-app", "Deploy", STEPS).kbid
    kb.forget(k)
    assert kb.skill_list().skills == ()
    with pytest.raises(NotFoundError):
        kb.skill_get("deploy-app")


def test_learn_path_reads_skill_md(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "deploy-app"
    write(
        folder,
        "SKILL.md",
        "---\nname: deploy-app\ndescription: Deploy the web app\ntags: [ops, web]\n---\n\n" + STEPS,
    )
    res = kb.skill_learn_path(folder)
    skill = kb.skill_get("deploy-app")
    assert skill.kbid == res.kbid and skill.content == STEPS
    assert skill.tags == ("ops", "web") and skill.description == "Deploy the web app"
    # The file itself works too; the name falls back to the folder's name.
    other = tmp_path / "rotate-keys"
    write(other, "SKILL.md", "---\ndescription: Rotate the API keys\n---\nRun the script.\n")
    assert kb.skill_learn_path(other / "SKILL.md").name == "rotate-keys"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("no front matter\n", "no front matter"),
        ("---\nname: x\n", "not closed"),
        ("---\nname: x\n---\nbody\n", "no description"),
        ("---\n- a\n---\nbody\n", "mapping"),
        ("---\nname: Bad Name\ndescription: d\n---\nbody\n", "kebab-case"),
        ("---\ndescription: d\ntags: 3\n---\nbody\n", "tags"),
    ],
)
def test_bad_skill_md(kb: kbdb.KnowledgeBase, tmp_path: Path, text: str, match: str) -> None:
    write(tmp_path / "s", "SKILL.md", text)
    with pytest.raises(InvalidArgumentError, match=match):
        kb.skill_learn_path(tmp_path / "s")
    assert kb.skill_list().skills == ()


def test_missing_skill_md(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="no SKILL.md"):
        kb.skill_learn_path(tmp_path)
