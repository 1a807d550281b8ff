"""``learn_path(notable_only=True)``, what ``kbdb learn`` without ``--json`` asks for: only
the section reports with something to say are kept, the counts cover every section, and
the CLI prints the same as with every report kept."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from tests.conftest import write

import kbdb
from kbdb.cli.app import cli
from kbdb.cli.render import render_learn

PARA = (
    "Rotate the signing keys every ninety days, keep the previous key for verification "
    "until every token signed with it has expired, and record the rotation in the log."
)


def tree(root: Path) -> Path:
    for i in range(30):
        write(root, f"notes/n{i}.md", f"# Note {i}\n\nPlain text number {i} about topic {i * 7}.\n")
    write(root, "notes/empty.md", "# Empty\n")  # warning: empty_content
    write(root, "notes/a.md", f"# Keys\n\n{PARA}\n")
    write(root, "notes/b.md", f"# Keys\n\n{PARA} Also.\n")  # near-duplicate of a
    return root / "notes"


def test_notable_only_keeps_warned_and_near_duplicate_sections(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    src = tree(tmp_path / "src")
    full = kb.learn_path(src)
    kb2 = kbdb.KnowledgeBase.init(tmp_path / "kb2")
    try:
        slim = kb2.learn_path(src, notable_only=True)
    finally:
        kb2.close()
    assert slim.sections_added == full.sections_added == len(full.sections)
    notable = [s for s in full.sections if s.warnings or s.near_duplicates]
    assert 0 < len(slim.sections) == len(notable) < len(full.sections)
    assert [s.kbid for s in slim.sections] == [s.kbid for s in notable]
    assert any(s.near_duplicates for s in slim.sections)
    assert any("empty_content" in s.warnings for s in slim.sections)


def test_cli_text_output_is_unchanged(tmp_path: Path) -> None:
    src = tree(tmp_path / "src")
    kbdb.KnowledgeBase.init(tmp_path / "kb").close()
    out = CliRunner().invoke(cli, ["learn", "--db", str(tmp_path / "kb"), str(src)])
    assert out.exit_code == 0, out.output
    kb = kbdb.KnowledgeBase.init(tmp_path / "kb_full")
    try:
        full = kb.learn_path(src)
    finally:
        kb.close()
    runner = CliRunner()
    with runner.isolation() as streams:
        render_learn(full)
        expected = streams[0].getvalue().decode()
    # Same lines but the elapsed time in the summary.
    strip = lambda text: [line for line in text.splitlines() if not line.startswith("learned ")]  # noqa: E731
    assert strip(out.output) == strip(expected)
    assert "near duplicates: " in out.output and "warning empty_content: 1 section:" in out.output
