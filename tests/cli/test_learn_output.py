"""What ``kbdb learn`` prints for a large tree full of warnings: counts per code and the first
few of each, on one screen; ``--verbose`` every notice; ``--json`` the full report."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.cli.conftest import Kbdb, Run, cli_env

from kbdb.cli.notices import MAX_EXAMPLES, SCREEN_LINES, examples_per_group

FILES = 10_000
EMPTY, NO_HEADING, SECRETS, PAIRS, BAD_UTF8, BINARY = 2_000, 1_000, 5, 20, 7, 4
HEADER = re.compile(
    r"^(warning \S+|near duplicates|embedding failed[^:]*): (\d+) \w+(, first (\d+))?:$"
)


def make_tree(root: Path) -> None:
    """``FILES`` files (a fifth with an empty section, a tenth without a heading, the rest
    plain), then possible secrets, near-duplicate pairs and files that are skipped."""
    rng = random.Random(7)
    vocab = [f"w{k}x" for k in range(5000)]

    def words(n: int) -> str:
        return " ".join(rng.choice(vocab) for _ in range(n))

    for i in range(FILES):
        folder = root / f"d{i // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        kind = i % 10
        if kind in (0, 1):
            text = f"# Empty {i}\n"
        elif kind == 2:
            text = words(12) + "\n"
        else:
            text = f"# Topic {i}\n\n{words(25)}\n"
        (folder / f"f{i}.md").write_text(text, encoding="utf-8")
    para = words(60)
    for j in range(SECRETS):
        (root / f"s{j}.md").write_text(f"# Keys {j}\n\nthe key is AKIAQ{j:015d}\n", "utf-8")
    for j in range(PAIRS):
        (root / f"p{j}a.md").write_text(f"# Pair {j}\n\n{para} pair{j}\n", encoding="utf-8")
        (root / f"p{j}b.md").write_text(f"# Pair {j}\n\n{para} pair{j} also\n", encoding="utf-8")
    for j in range(BAD_UTF8):
        (root / f"bad{j}.md").write_bytes(b"# Bad\n\n\xff\xfe not utf-8\n")
    for j in range(BINARY):
        (root / f"bin{j}.md").write_bytes(b"\x00\x01binary\x00" * 10)


def groups(out: str) -> dict[str, tuple[int, int | None, list[str]]]:
    """Each group of the text output: label -> (count in its header, the 'first N' it
    announces or None, its example lines)."""
    found: dict[str, tuple[int, int | None, list[str]]] = {}
    label = ""
    for line in out.splitlines()[1:]:
        m = HEADER.match(line)
        if m:
            label = m.group(1)
            found[label] = (int(m.group(2)), int(m.group(4)) if m.group(4) else None, [])
        elif line.startswith("  "):
            found[label][2].append(line)
    return found


def expected_lines(report: dict[str, Any]) -> dict[str, list[str]]:
    """The line of every notice of a ``--json`` report, by group label."""
    lines: dict[str, list[str]] = {}
    for s in report["sections"]:
        where = f"{s['docid']}: {s['heading'] or '(no heading)'}"
        for code in s["warnings"]:
            lines.setdefault(f"warning {code}", []).append(f"  {s['kbid']}  {where}")
        for d in s["near_duplicates"]:
            near = f"  {s['kbid']} ~ {d['kbid']} ({d['similarity']:.2f})  {where}"
            lines.setdefault("near duplicates", []).append(near)
    return lines


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """The same tree learned three times, into three new knowledge bases: by default, with
    --verbose and with --json."""
    base = tmp_path_factory.mktemp("learn_output")
    make_tree(base / "tree")
    runs: dict[str, Run] = {}
    for name, extra in (("default", []), ("verbose", ["--verbose"]), ("json", ["--json"])):
        db = base / name
        args = [sys.executable, "-m", "kbdb.cli", "--db", str(db)]
        subprocess.run([*args, "init", str(db)], check=True, capture_output=True, env=cli_env())
        proc = subprocess.run(
            [*args, "learn", "tree", *extra],
            capture_output=True,
            cwd=base,
            env=cli_env(),
            timeout=300,
            check=False,
        )
        runs[name] = Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    return runs


def test_json_carries_every_section_warning_and_skipped_file(learned: dict[str, Run]) -> None:
    run = learned["json"]
    assert run.code == 1
    report = run.json()
    total = FILES + SECRETS + 2 * PAIRS
    assert len(report["sections"]) == report["sections_added"] == total
    codes = Counter(code for s in report["sections"] for code in s["warnings"])
    assert codes == {
        "empty_content": EMPTY,
        "heading_missing": NO_HEADING,
        "possible_secret": SECRETS,
    }
    assert sum(len(s["near_duplicates"]) for s in report["sections"]) >= PAIRS
    skipped = Counter(f["code"] for f in report["files_skipped"])
    assert skipped == {"INVALID_UTF8": BAD_UTF8, "BINARY_FILE": BINARY}
    # stdout is the report alone; stderr has the skipped files grouped like the text output.
    assert run.err.startswith(
        f"kbdb: skipped {BAD_UTF8 + BINARY} files (INVALID_UTF8 7, BINARY_FILE 4)"
    )
    assert len(run.err.splitlines()) == 2 + 2 * MAX_EXAMPLES


def test_default_output_fits_one_screen_with_the_counts(learned: dict[str, Run]) -> None:
    run, report = learned["default"], learned["json"].json()
    assert run.code == 1
    lines = run.out.splitlines() + run.err.splitlines()
    assert len(lines) <= SCREEN_LINES, "\n".join(lines)
    assert "\x1b[" not in run.out + run.err  # not a terminal: plain text
    assert run.out.startswith(f"learned {FILES + SECRETS + 2 * PAIRS} new, 0 updated")

    found, expected = groups(run.out), expected_lines(report)
    assert list(found) == [
        "warning possible_secret",  # a possible secret first, then by count
        "warning empty_content",
        "warning heading_missing",
        "near duplicates",
    ]
    assert {k: v[0] for k, v in found.items()} == {k: len(v) for k, v in expected.items()}
    assert found["warning empty_content"][0] == EMPTY
    for label, (count, first, examples) in found.items():
        assert first == MAX_EXAMPLES and len(examples) == MAX_EXAMPLES < count
        assert examples == expected[label][:MAX_EXAMPLES]  # the first ones, in learn order
    notices = sum(len(v) for v in expected.values())
    hint = run.out.splitlines()[-1]
    assert hint.startswith(f"{4 * MAX_EXAMPLES} of {notices} shown; ")
    assert "--verbose" in hint and "--json" in hint

    err = run.err.splitlines()
    assert err[0] == "kbdb: skipped 11 files (INVALID_UTF8 7, BINARY_FILE 4), first 3 of each:"
    shown = [line for line in err if line.startswith("kbdb: skipped tree/")]
    assert len(shown) == 2 * MAX_EXAMPLES
    assert (
        shown[0]
        == "kbdb: skipped tree/bad0.md: not valid UTF-8 (bad byte at offset 7) (INVALID_UTF8)"
    )
    assert err[-1].startswith(f"kbdb: {BAD_UTF8 + BINARY - 2 * MAX_EXAMPLES} more skipped file(s)")


def test_verbose_lists_every_notice(learned: dict[str, Run]) -> None:
    run, report = learned["verbose"], learned["json"].json()
    assert run.code == 1
    found, expected = groups(run.out), expected_lines(report)
    assert set(found) == set(expected)
    for label, (count, first, examples) in found.items():
        assert first is None
        assert examples == expected[label] and count == len(examples)
    assert "shown;" not in run.out
    every = [
        f"kbdb: skipped {f['path']}: {f['reason']} ({f['code']})" for f in report["files_skipped"]
    ]
    assert len(every) == BAD_UTF8 + BINARY
    assert sorted(run.err.splitlines()) == sorted(every)


def test_few_notices_are_all_shown_without_a_hint(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes/a.md").write_text("# A\n\nAlpha.\n\n# Empty\n", encoding="utf-8")
    (tmp_path / "notes/bad.md").write_bytes(b"\xff\n")
    res = kbdb("learn", "notes")
    assert res.code == 1
    out = res.out.splitlines()
    assert out[1:] == ["warning empty_content: 1 section:", out[2]] and out[2].endswith(
        "  a.md: Empty"
    )
    assert res.err.splitlines() == [
        f"kbdb: skipped {Path('notes') / 'bad.md'}: not valid UTF-8 (bad byte at offset 0) "
        "(INVALID_UTF8)"
    ]


@pytest.mark.parametrize("n_groups", range(1, 19))
def test_any_number_of_groups_fits_the_screen(n_groups: int) -> None:
    k = examples_per_group(n_groups)
    assert 1 <= k <= MAX_EXAMPLES
    if n_groups <= 12:  # every warning, notice and skip code there is, at once
        assert 4 + n_groups * (1 + k) <= SCREEN_LINES
