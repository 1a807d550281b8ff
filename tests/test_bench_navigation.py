"""``benches/bench_navigation.py``: how the known-item queries are built and ranks counted
(no timing, no corpus needed)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHES = Path(__file__).resolve().parents[1] / "benches"
sys.path.insert(0, str(BENCHES))

import bench_navigation as nav  # noqa: E402

PAGE = """# ps

<!---MARKER_GEN_START-->
List containers

### Aliases

`docker container ls`, `docker container list`, `docker ps`

### Options
"""


def test_command_names_come_from_the_file_name() -> None:
    assert nav.command_name("container_ls.md") == "docker container ls"
    assert nav.command_name("build.md") == "docker build"
    assert nav.command_name("swarm_join-token.md") == "docker swarm join-token"
    assert nav.command_name("docker.md") == "docker"


def test_description_skips_comments_and_takes_the_first_sentence() -> None:
    assert nav.description(PAGE) == "List containers"
    two = "# logout\n\n<!---MARKER_GEN_START-->\nLog out from a registry.\nIf no server is given.\n"
    assert nav.description(two) == "Log out from a registry."
    multi = "# x\n<!-- a\ncomment -->\n\nUse [the thing](a.md) here. And more.\n"
    assert nav.description(multi) == "Use the thing here."
    front = "---\ntitle: t\n---\n\n# The commands\n\nThis section. Other.\n"
    assert nav.description(front) == "This section."


def test_a_page_without_prose_after_the_h1_has_no_description() -> None:
    assert nav.description("# x\n\n<!---MARKER_GEN_START-->\n| a | b |\n|---|---|\n") is None
    assert nav.description("# x\n\n### Aliases\n\n`docker x`\n") is None
    assert nav.description("no heading at all\n") is None


def test_aliases_are_read_from_the_aliases_line() -> None:
    assert nav.aliases(PAGE) == {"docker container ls", "docker container list", "docker ps"}
    assert nav.aliases("# x\n\nText\n") == set()


def test_pages_of_one_result_share_its_rank() -> None:
    groups = [("a.md",), ("b.md", "c.md"), ("a.md",), ("d.md",)]
    assert nav.page_ranks(groups) == {"a.md": 1, "b.md": 2, "c.md": 2, "d.md": 4}
    assert nav.page_ranks(groups, k=2) == {"a.md": 1, "b.md": 2, "c.md": 2}
    ranks = nav.page_ranks(groups)
    assert nav.first_rank(ranks, frozenset({"c.md", "d.md"})) == 2
    assert nav.first_rank(ranks, frozenset({"e.md"})) is None
    assert nav.section_rank(groups, frozenset({"d.md"})) == 4
    assert nav.section_rank(groups, frozenset({"d.md"}), k=3) is None


def test_queries_on_a_small_tree(tmp_path: Path) -> None:
    cmd = tmp_path / "commandline"
    cmd.mkdir()
    (cmd / "ps.md").write_text(PAGE.replace("# ps", "# docker ps"))
    (cmd / "container_ls.md").write_text(PAGE)
    (cmd / "index.md").write_text("# The Docker commands\n\nReference.\n")
    (cmd / "image.md").write_text("# image\n\n| a |\n")
    queries, no_desc = nav.build_queries(tmp_path)
    names = {q.text: q for q in queries if q.kind == "name"}
    assert set(names) == {"docker ps", "docker container ls", "docker image"}
    assert names["docker ps"].targets == {"commandline/ps.md"}
    assert names["docker ps"].alias_targets == {"commandline/ps.md", "commandline/container_ls.md"}
    descs = [q for q in queries if q.kind == "description"]
    assert [q.text for q in descs] == ["List containers", "List containers"]
    assert all(q.targets == {"commandline/ps.md", "commandline/container_ls.md"} for q in descs)
    assert no_desc == ["commandline/image.md"]


def test_docid_order_gives_a_shared_section_consecutive_ranks() -> None:
    groups = [("b.md", "c.md"), ("a.md",), ("b.md",)]
    assert nav.page_ranks_in_docid_order(groups) == {"b.md": 1, "c.md": 2, "a.md": 3}
    assert nav.page_ranks_in_docid_order(groups, k=1) == {"b.md": 1}
