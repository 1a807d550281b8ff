"""The walker: what a learn reads, in what order, and what it reports as skipped."""

from __future__ import annotations

import base64
import inspect
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbdb.errors import InvalidArgumentError
from kbdb.ingest import (
    BinaryFileError,
    FileEntry,
    InvalidUtf8Error,
    LoadedFile,
    Skipped,
    count_files,
    load,
    read_text,
    walk,
)


def make(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")


def rels(root: Path, **kwargs: int) -> list[str]:
    out = []
    for item in walk(root, **kwargs):
        assert isinstance(item, FileEntry), item
        out.append(item.rel)
    return out


def test_entries_types_sizes(tmp_path: Path) -> None:
    make(tmp_path, {"a.md": "# A\n", "b.TXT": "bee", "c.html": "<p>", "d.json": "{}"})
    (tmp_path / "e.png").write_bytes(b"\x89PNG")
    items = list(walk(tmp_path))
    assert items == [
        FileEntry(tmp_path / "a.md", "a.md", "text/markdown", 4),
        FileEntry(tmp_path / "b.TXT", "b.TXT", "text/plain", 3),
        FileEntry(tmp_path / "c.html", "c.html", "text/html", 3),
        FileEntry(tmp_path / "d.json", "d.json", "application/json", 2),
        FileEntry(tmp_path / "e.png", "e.png", "image/png", 4),
    ]


def test_unsupported_extensions_are_silently_ignored(tmp_path: Path) -> None:
    make(tmp_path, {"a.md": "", "b.xyz": "", "c.odt": "", "README": "", "d.markdown": ""})
    assert rels(tmp_path) == ["a.md", "d.markdown"]


def test_order_is_sorted_depth_first(tmp_path: Path) -> None:
    for rel in ["z.md", "b/2.md", "a.md", "b/1.md", "B.md", "c/d/e.md", "c.md", "b/a/x.md"]:
        make(tmp_path, {rel: "x"})
    expected = ["B.md", "a.md", "b/1.md", "b/2.md", "b/a/x.md", "c/d/e.md", "c.md", "z.md"]
    assert rels(tmp_path) == expected
    assert rels(tmp_path) == expected  # and again: deterministic


def test_hidden_kbdb_and_node_modules_skipped(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            ".hidden.md": "",
            ".git/notes.md": "",
            ".kbdb/x.md": "",
            "node_modules/pkg/README.md": "",
            "sub/node_modules/y.md": "",
            "sub/.cache/z.md": "",
            "sub/ok.md": "",
        },
    )
    assert rels(tmp_path) == ["sub/ok.md"]


def test_gitignore_patterns_negation_and_directories(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            ".gitignore": "# comment\n*.txt\n!keep.txt\nbuild/\n/top.md\nnotes.md/\n",
            "a.txt": "",
            "keep.txt": "",
            "build/out.md": "",
            "sub/build/out.md": "",
            "top.md": "",
            "sub/top.md": "",
            "notes.md": "",  # a file: the pattern `notes.md/` only matches folders
            "sub/notes.md/inner.md": "",
            "sub/keep.txt": "",
            "sub/x.txt": "",
        },
    )
    assert rels(tmp_path) == ["keep.txt", "notes.md", "sub/keep.txt", "sub/top.md"]


def test_nested_gitignore_applies_to_its_subtree_and_overrides(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            ".gitignore": "*.json\n",
            "a.json": "",
            "a.md": "",
            "docs/.gitignore": "!*.json\ndraft.md\n/local.md\n",
            "docs/b.json": "",
            "docs/draft.md": "",
            "docs/local.md": "",
            "docs/deep/draft.md": "",
            "docs/deep/local.md": "",
            "other/draft.md": "",
            "other/c.json": "",
        },
    )
    assert rels(tmp_path) == ["a.md", "docs/b.json", "docs/deep/local.md", "other/draft.md"]


def test_cannot_reinclude_inside_ignored_folder(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            ".gitignore": "gone/\n!gone/keep.md\nsome/*\n!some/keep.md\n",
            "gone/keep.md": "",
            "some/keep.md": "",
            "some/drop.md": "",
        },
    )
    assert rels(tmp_path) == ["some/keep.md"]


def test_kbdbignore_and_its_precedence_over_gitignore(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            ".gitignore": "generated/\n",
            ".kbdbignore": "private/\n!generated/\n*.html\n",
            "generated/api.md": "",
            "private/secret.md": "",
            "page.html": "",
            "sub/.kbdbignore": "x.md\n",
            "sub/x.md": "",
            "x.md": "",
        },
    )
    assert rels(tmp_path) == ["generated/api.md", "x.md"]


def test_bad_ignore_pattern_is_dropped_not_fatal(tmp_path: Path) -> None:
    make(tmp_path, {".gitignore": "!\n*.txt\n\\\n", "a.txt": "", "b.md": ""})
    assert rels(tmp_path) == ["b.md"]


def test_size_limit(tmp_path: Path) -> None:
    make(tmp_path, {"big.md": "x" * 101, "edge.md": "x" * 100})
    items = list(walk(tmp_path, max_file_bytes=100))
    assert items[0] == Skipped(
        tmp_path / "big.md",
        "big.md",
        "file is 101 bytes, over learn.max_file_bytes (100)",
        "CONTENT_TOO_LARGE",
    )
    assert isinstance(items[1], FileEntry) and items[1].rel == "edge.md"


def test_single_file_root(tmp_path: Path) -> None:
    make(tmp_path, {"sub/.hidden.md": "hi", "sub/.gitignore": "*.md\n", "tool.xyz": ""})
    assert list(walk(tmp_path / "sub" / ".hidden.md")) == [
        FileEntry(tmp_path / "sub" / ".hidden.md", ".hidden.md", "text/markdown", 2)
    ]
    (skipped,) = list(walk(tmp_path / "tool.xyz"))
    assert isinstance(skipped, Skipped) and skipped.code == "UNSUPPORTED_TYPE"
    assert count_files(tmp_path / "tool.xyz") == 1


def test_missing_root_fails_at_call_time(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="no such file or folder"):
        walk(tmp_path / "nope")
    with pytest.raises(InvalidArgumentError):
        count_files(tmp_path / "nope")
    with pytest.raises(InvalidArgumentError):
        walk(tmp_path, max_file_bytes=-1)


def test_symlinks(tmp_path: Path) -> None:
    make(tmp_path, {"real/a.md": "aaa", "outside/b.md": ""})
    root = tmp_path / "real"
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "linked-dir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "linked.md").symlink_to(root / "a.md")
    (root / "broken.md").symlink_to(tmp_path / "missing.md")
    items = list(walk(root))
    assert [(type(i).__name__, i.rel) for i in items] == [
        ("FileEntry", "a.md"),
        ("Skipped", "broken.md"),
        ("FileEntry", "linked.md"),
    ]
    assert isinstance(items[1], Skipped) and items[1].code == "UNREADABLE"
    assert isinstance(items[2], FileEntry) and items[2].size == 3


def test_fifo_is_not_read(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(tmp_path / "pipe.md")
    (item,) = list(walk(tmp_path))
    assert isinstance(item, Skipped)
    assert (item.code, item.reason) == ("UNREADABLE", "not a regular file")


def test_unreadable_file_and_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make(tmp_path, {"a.md": "", "locked.md": "", "shut/x.md": "", "z.md": ""})
    real_access, real_scandir = os.access, os.scandir

    def access(path: object, mode: int) -> bool:
        return not str(path).endswith("locked.md") and real_access(path, mode)  # type: ignore[arg-type]

    def scandir(path: object) -> object:
        if str(path).endswith("shut"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(os, "scandir", scandir)
    items = list(walk(tmp_path))
    assert [(type(i).__name__, i.rel) for i in items] == [
        ("FileEntry", "a.md"),
        ("Skipped", "locked.md"),
        ("Skipped", "shut"),
        ("FileEntry", "z.md"),
    ]
    assert [i.code for i in items if isinstance(i, Skipped)] == ["UNREADABLE", "UNREADABLE"]
    assert items[2].reason == "cannot read folder: permission denied"  # type: ignore[union-attr]
    assert count_files(tmp_path) == len(items)


def test_walk_streams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make(tmp_path, {"a/1.md": "", "b/2.md": "", "c/3.md": ""})
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path: object) -> object:
        listed.append(Path(str(path)).name)
        return real_scandir(path)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "scandir", scandir)
    items: Iterator[FileEntry | Skipped] = walk(tmp_path)
    assert listed == []
    first = next(items)
    assert first.rel == "a/1.md"
    assert listed == [tmp_path.name, "a"]
    assert [i.rel for i in items] == ["b/2.md", "c/3.md"]


def test_deep_tree_does_not_recurse(tmp_path: Path) -> None:
    # A tree deeper than the recursion budget left to the walker. (A tree deeper than
    # the default limit would break pytest's own temp-dir clean-up on Python 3.11.)
    depth = 150
    deep = tmp_path.joinpath(*["d"] * depth)
    deep.mkdir(parents=True)
    (deep / "bottom.md").write_text("x", encoding="utf-8")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 60)
    try:
        found = rels(tmp_path)
    finally:
        sys.setrecursionlimit(limit)
    assert found == ["d/" * depth + "bottom.md"]


def test_count_files_matches_walk(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            ".gitignore": "ignored/\n",
            "ignored/a.md": "",
            "a.md": "",
            "big.md": "x" * 50,
            "sub/b.txt": "",
            "sub/c.xyz": "",
            ".hidden/d.md": "",
        },
    )
    assert count_files(tmp_path) == len(list(walk(tmp_path, max_file_bytes=10))) == 3


def entry(path: Path, rel: str, type: str = "text/markdown") -> FileEntry:
    return FileEntry(path, rel, type, path.stat().st_size)


def test_read_text_strips_bom_and_keeps_text(tmp_path: Path) -> None:
    make(tmp_path, {"a.md": b"\xef\xbb\xbf# Caf\xc3\xa9\r\n"})
    e = entry(tmp_path / "a.md", "a.md")
    assert read_text(e) == "# Caf\u00e9\r\n"
    assert load(e) == LoadedFile(e, "# Caf\u00e9\r\n")


def test_invalid_utf8_names_file_and_offset(tmp_path: Path) -> None:
    make(tmp_path, {"bad.md": b"ok\n\xff\xfe rest", "bom.md": b"\xef\xbb\xbfab\xc3"})
    bad = entry(tmp_path / "bad.md", "bad.md")
    with pytest.raises(InvalidUtf8Error) as info:
        read_text(bad)
    assert str(tmp_path / "bad.md") in info.value.message
    assert "offset 3" in info.value.message
    assert isinstance(info.value, InvalidArgumentError)
    assert load(bad) == Skipped(
        bad.path, "bad.md", "not valid UTF-8 (bad byte at offset 3)", "INVALID_UTF8"
    )
    skipped = load(entry(tmp_path / "bom.md", "bom.md"))
    assert isinstance(skipped, Skipped) and skipped.reason.endswith("offset 5)")


def test_nul_bytes_are_binary(tmp_path: Path) -> None:
    make(tmp_path, {"bin.txt": b"abc\x00def"})
    e = entry(tmp_path / "bin.txt", "bin.txt", "text/plain")
    with pytest.raises(BinaryFileError, match="NUL byte at offset 3"):
        read_text(e)
    skipped = load(e)
    assert isinstance(skipped, Skipped) and skipped.code == "BINARY_FILE"


def test_load_image_is_base64(tmp_path: Path) -> None:
    data = b"\x89PNG\r\n\x1a\n\x00\x00binary"
    make(tmp_path, {"i.png": data})
    e = entry(tmp_path / "i.png", "i.png", "image/png")
    loaded = load(e)
    assert isinstance(loaded, LoadedFile)
    assert base64.b64decode(loaded.content) == data


def test_load_vanished_file_is_unreadable(tmp_path: Path) -> None:
    make(tmp_path, {"a.md": "x"})
    e = entry(tmp_path / "a.md", "a.md")
    (tmp_path / "a.md").unlink()
    skipped = load(e)
    assert isinstance(skipped, Skipped)
    assert skipped.code == "UNREADABLE"
    assert skipped.reason.startswith("cannot read:")
