"""``kbdb contradictions`` and ``kbdb skill learn|list|get`` through the real CLI."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Kbdb, write

import kbdb as kbdb_api

BASE = (
    "The staging cluster runs three replicas of the api service behind the internal load "
    "balancer, and deploys happen from the main branch after the integration tests pass on "
    "the build server. Rollbacks use the previous image tag."
)
CLAIM = BASE.replace("three replicas", "five replicas").replace(
    "from the main branch after the integration tests pass",
    "from release branches once the smoke tests are green",
)
STEPS = "# Steps\n\n1. Build the image.\n2. Push it.\n"


def test_contradictions_json_is_the_api_result(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    assert kbdb("learn", "-", "--docid", "runbook", "--tags", "ops", input=BASE).code == 0
    assert kbdb("learn", "-", "--docid", "wiki", "--tags", "ops", input=CLAIM).code == 0
    res = kbdb("--json", "contradictions", "--limit", "5", "--tags", "ops")
    assert res.code == 0, res.err
    with kbdb_api.KnowledgeBase.open(tmp_path) as kb:
        assert res.json() == kb.contradictions(limit=5, tags=["ops"]).to_dict()
    data = res.json()
    assert data["method"] == "lexical" and len(data["groups"]) == 1
    assert {d for m in data["groups"][0]["sections"] for d in m["docids"]} == {"runbook", "wiki"}
    human = kbdb("contradictions")
    assert human.code == 0 and "group 1: similarity" in human.out and "runbook" in human.out
    assert "no contradictions" in kbdb("contradictions", "--tags", "other").out


def test_contradictions_bad_threshold_exits_2(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    res = kbdb("--json", "contradictions", "--threshold", "0.9")
    assert res.code == 2
    assert res.json()["code"] == "INVALID_ARGUMENT" and "threshold" in res.err


def test_skill_learn_list_get(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    write(
        tmp_path,
        "skills/deploy-app/SKILL.md",
        f"---\nname: deploy-app\ndescription: Deploy the web app\ntags: [ops]\n---\n{STEPS}",
    )
    first = kbdb("--json", "skill", "learn", "skills/deploy-app")
    assert first.code == 0, first.err
    assert first.json()["name"] == "deploy-app" and first.json()["previous"] is None
    second = kbdb(
        "--json",
        "skill",
        "learn",
        "--name",
        "deploy-app",
        "--description",
        "Deploy the web app",
        "--content",
        "-",
        "--tags",
        "ops",
        input=STEPS + "3. Watch the dashboards.\n",
    )
    assert second.code == 0, second.err
    assert second.json()["previous"] == first.json()["kbid"]
    listed = kbdb("--json", "skill", "list").json()["skills"]
    assert [(s["name"], s["kbid"]) for s in listed] == [("deploy-app", second.json()["kbid"])]
    got = kbdb("--json", "skill", "get", "deploy-app").json()
    assert got["content"].endswith("Watch the dashboards.\n") and got["tags"] == ["ops"]
    assert "deploy-app" in kbdb("skill", "list").out
    human = kbdb("skill", "get", "deploy-app")
    assert human.code == 0 and "Watch the dashboards." in human.out
    hits = kbdb("--json", "search", "dashboards").json()["items"]
    assert hits[0]["section_type"] == "skill"


def test_skill_errors(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    missing = kbdb("--json", "skill", "get", "nope")
    assert missing.code == 1 and missing.json()["code"] == "NOT_FOUND"
    bad = kbdb("skill", "learn", "--name", "Bad Name", "--description", "d", "--content", "x")
    assert bad.code == 2 and "kebab-case" in bad.err
    assert kbdb("skill", "learn").code == 2
    both = kbdb("skill", "learn", "dir", "--name", "x")
    assert both.code == 2 and "not both" in both.err
    assert kbdb("--json", "skill", "list").json() == {"skills": []}
