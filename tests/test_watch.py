"""``kbdb watch`` and the Watcher service, with real file-system events (watchfiles over
inotify) in temporary folders: nothing here mocks the watcher."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.conftest import cli_env

import kbdb
from kbdb.ingest import FileEntry, TreeRules, walk
from kbdb.types import WatchBatch

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TIMESTAMPS = ("created_at", "updated_at", "retired_at")


def wait_for(check: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    """Poll ``check`` until it returns something true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.05)


def hits(kb: kbdb.KnowledgeBase, query: str) -> set[str]:
    """The docids of the sections a search finds."""
    return {d for item in kb.search(query).items for d in item.docids}


def live_docids(kb: kbdb.KnowledgeBase) -> set[str]:
    return {d.docid for d in kb.documents(limit=1_000).items}


class Running:
    """A ``kb.watch`` on a thread of this process, and the batches it committed."""

    def __init__(self, kb: kbdb.KnowledgeBase, *folders: Path, tags: tuple[str, ...] = ()):
        self.batches: list[WatchBatch] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None

        def run() -> None:
            try:
                kb.watch(*folders, tags=tags, stop=self.stop, on_batch=self.batches.append)
            except BaseException as exc:  # surfaced by the test through .error
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        wait_for(lambda: self.batches or self.error or not self.thread.is_alive(), what="sync")

    def alive(self) -> bool:
        return self.thread.is_alive() and self.error is None

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[kbdb.KnowledgeBase]:
    k = kbdb.KnowledgeBase.init(tmp_path)
    yield k
    k.close()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "alpha.md").write_text("# Alpha\n\nThe zebra grazes.\n\n## More\n\nStripes.\n")
    (d / "sub").mkdir()
    (d / "sub" / "beta.md").write_text("# Beta\n\nThe okapi hides.\n")
    return d


def test_learns_then_follows_create_modify_delete_rename(kb: Any, docs: Path) -> None:
    w = Running(kb, docs)
    try:
        assert w.batches[0].kind == "sync" and w.batches[0].files_learned == 2
        assert live_docids(kb) == {"alpha.md", "sub/beta.md"}

        (docs / "gamma.md").write_text("# Gamma\n\nThe narwhal swims.\n")
        wait_for(lambda: "gamma.md" in hits(kb, "narwhal"), what="created file")

        (docs / "alpha.md").write_text("# Alpha\n\nThe giraffe grazes.\n\n## More\n\nStripes.\n")
        wait_for(lambda: "alpha.md" in hits(kb, "giraffe"), what="modified file")
        assert hits(kb, "zebra") == set()
        # the edited section is a new version of the old one, not a second section
        wait_for(lambda: any(b.sections_superseded == 1 for b in w.batches), what="~1")

        (docs / "sub" / "beta.md").unlink()
        wait_for(lambda: "sub/beta.md" not in live_docids(kb), what="deleted file")
        assert hits(kb, "okapi") == set()

        os.rename(docs / "gamma.md", docs / "delta.md")
        wait_for(lambda: "delta.md" in hits(kb, "narwhal"), what="renamed file")
        wait_for(lambda: "gamma.md" not in live_docids(kb), what="old name forgotten")
        assert w.alive()
    finally:
        w.close()


def test_an_atomic_save_replaces_the_document(kb: Any, docs: Path) -> None:
    w = Running(kb, docs)
    try:
        words = ["lynx", "ocelot", "serval", "caracal", "margay"]
        for i, word in enumerate(words):  # as editors save: a temporary file, then os.replace
            tmp = docs / f".alpha.md.{i}.tmp"
            tmp.write_text(f"# Alpha\n\nRevision {word} here.\n")
            os.replace(tmp, docs / "alpha.md")
        wait_for(lambda: "alpha.md" in hits(kb, "margay"), what="last save")
        assert all(hits(kb, word) == set() for word in words[:-1])
        assert live_docids(kb) == {"alpha.md", "sub/beta.md"}
        assert w.alive()
    finally:
        w.close()


def test_honours_gitignore_and_kbdbignore_as_learn_does(kb: Any, docs: Path) -> None:
    (docs / ".gitignore").write_text("drafts/\n*.log.md\nkeep.md\n")
    (docs / ".kbdbignore").write_text("!keep.md\n")
    w = Running(kb, docs)
    try:
        (docs / "drafts").mkdir()
        (docs / "drafts" / "d.md").write_text("# Draft\n\nThe pangolin waits.\n")
        (docs / "x.log.md").write_text("# Log\n\nThe pangolin logs.\n")
        (docs / ".hidden.md").write_text("# Hidden\n\nThe pangolin hides.\n")
        (docs / "keep.md").write_text("# Keep\n\nThe pangolin stays.\n")
        wait_for(lambda: "keep.md" in hits(kb, "pangolin"), what="re-included file")
        time.sleep(0.5)  # let any wrong batch land
        assert hits(kb, "pangolin") == {"keep.md"}

        # New rules: a file they now ignore leaves, as a fresh learn would not read it.
        (docs / ".kbdbignore").write_text("!keep.md\nalpha.md\n")
        wait_for(lambda: "alpha.md" not in live_docids(kb), what="newly ignored file")
        assert live_docids(kb) == {"keep.md", "sub/beta.md"}
    finally:
        w.close()


def test_tree_rules_keep_what_walk_keeps(tmp_path: Path) -> None:
    root = tmp_path / "t"
    for rel in [
        "a.md", "b.txt", "c.bin", ".h.md", "node_modules/n.md", "drafts/d.md",
        "sub/keep.md", "sub/x.log.md", "sub/deep/y.md", "sub/deep/z.md", "img.png",
    ]:  # fmt: skip
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("# T\n\nx\n")
    (root / ".gitignore").write_text("drafts/\n*.log.md\n")
    (root / "sub" / ".kbdbignore").write_text("deep/z.md\n")
    walked = {e.rel for e in walk(root) if isinstance(e, FileEntry)}
    rules = TreeRules(root)
    all_files = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    asked = {rel for rel in all_files if isinstance(rules.entry(rel), FileEntry)}
    assert walked == asked == {"a.md", "b.txt", "sub/keep.md", "sub/deep/y.md", "img.png"}
    assert {e.rel for e in rules.walk("sub") if isinstance(e, FileEntry)} == {
        "sub/keep.md",
        "sub/deep/y.md",
    }
    assert list(rules.walk("drafts")) == []
    assert rules.rel(root / "sub" / "keep.md") == "sub/keep.md"
    assert rules.rel(tmp_path / "elsewhere.md") is None


def test_tree_rules_treat_links_as_walk_does(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "real").mkdir(parents=True)
    (root / "real" / "in.md").write_text("# In\n\nx\n")
    (tmp_path / "secret.md").write_text("# Secret\n\nx\n")
    (root / "out.md").symlink_to(tmp_path / "secret.md")
    (root / "inside.md").symlink_to(root / "real" / "in.md")
    (root / "linked").symlink_to(root / "real", target_is_directory=True)
    walked = {e.rel: type(e).__name__ + getattr(e, "code", "") for e in walk(root)}
    rules = TreeRules(root)
    asked = {}
    for rel in ("out.md", "inside.md", "real/in.md", "linked/in.md"):
        e = rules.entry(rel)
        if e is not None:
            asked[rel] = type(e).__name__ + getattr(e, "code", "")
    assert (
        walked
        == asked
        == {
            "out.md": "SkippedOUTSIDE_ROOT",
            "inside.md": "FileEntry",
            "real/in.md": "FileEntry",
        }
    )


def test_survives_files_that_vanish_before_they_are_read(kb: Any, docs: Path) -> None:
    w = Running(kb, docs)
    try:
        for i in range(300):  # most of them are gone by the time their batch reads them
            p = docs / f"flash{i}.md"
            p.write_text(f"# Flash\n\nThe quokka {i}.\n")
            p.unlink()
        (docs / "last.md").write_text("# Last\n\nThe quokka stays.\n")
        wait_for(lambda: "last.md" in hits(kb, "quokka"), what="file after the churn")
        time.sleep(0.3)
        assert hits(kb, "quokka") == {"last.md"}
        assert w.alive()
    finally:
        w.close()


def test_a_file_deleted_between_the_walk_and_the_read_is_forgotten(
    kb: Any, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbdb.learn.learner import Learner

    w = Running(kb, docs)
    real = Learner.load_file

    def vanish_first(self: Learner, entry: FileEntry, *args: Any) -> Any:
        if entry.rel == "alpha.md":  # the watcher found it; it is gone before it is read
            entry.path.unlink(missing_ok=True)
        return real(self, entry, *args)

    monkeypatch.setattr(Learner, "load_file", vanish_first)
    try:
        (docs / "alpha.md").write_text("# Alpha\n\nThe ibex climbs.\n")
        wait_for(lambda: "alpha.md" not in live_docids(kb), what="the vanished file forgotten")
        wait_for(lambda: any(b.files_deleted for b in w.batches), what="its report")
        assert all(not b.files_skipped for b in w.batches)  # gone, not unreadable
        assert w.alive()
    finally:
        w.close()


def test_a_folder_deleted_and_made_again(kb: Any, docs: Path) -> None:
    w = Running(kb, docs)
    try:
        shutil.rmtree(docs)
        wait_for(lambda: not live_docids(kb), what="documents of the deleted folder forgotten")
        wait_for(lambda: kb.stats().watching[0].present is False, what="the folder seen gone")
        docs.mkdir()
        (docs / "again.md").write_text("# Again\n\nThe axolotl returns.\n")
        wait_for(lambda: "again.md" in hits(kb, "axolotl"), what="file in the new folder")
        (docs / "later.md").write_text("# Later\n\nThe axolotl follows.\n")
        wait_for(lambda: "later.md" in hits(kb, "axolotl"), what="a change after it came back")
        assert kb.stats().watching[0].present is True
        assert w.alive()
    finally:
        w.close()


def test_a_folder_moved_away_takes_its_files_along(kb: Any, docs: Path, tmp_path: Path) -> None:
    w = Running(kb, docs)
    try:
        os.rename(docs / "sub", tmp_path / "moved")
        wait_for(lambda: "sub/beta.md" not in live_docids(kb), what="moved-away folder")
        os.rename(tmp_path / "moved", docs / "back")
        wait_for(lambda: "back/beta.md" in hits(kb, "okapi"), what="moved-in folder")
    finally:
        w.close()


def test_a_stale_document_is_forgotten_at_start(kb: Any, docs: Path) -> None:
    kb.learn_path(docs)
    (docs / "sub" / "beta.md").unlink()  # deleted while nobody watched
    w = Running(kb, docs)
    try:
        assert live_docids(kb) == {"alpha.md"}
        assert w.batches[0].files_deleted == 1
    finally:
        w.close()


def test_stats_reports_the_watched_folders(kb: Any, docs: Path) -> None:
    assert "watching" not in kb.stats().to_dict()
    w = Running(kb, docs)
    try:
        folder = kb.stats().to_dict()["watching"][0]
        assert folder["path"] == str(docs) and folder["present"] is True
        assert folder["documents"] == 2 and folder["batches"] >= 1
        assert folder["last_synced_at"] is not None
    finally:
        w.close()
    assert "watching" not in kb.stats().to_dict()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: [tmp / "missing"], "no such folder"),
        (lambda tmp: [tmp / "docs" / "alpha.md"], "not a folder"),
        (lambda tmp: [tmp / "docs", tmp / "docs" / "sub"], "overlap"),
    ],
)
def test_bad_folders_are_refused_before_anything_is_learned(
    kb: Any, docs: Path, tmp_path: Path, make: Any, message: str
) -> None:
    with pytest.raises(kbdb.errors.InvalidArgumentError, match=message):
        kb.watch(*make(tmp_path), stop=threading.Event())
    assert live_docids(kb) == set()


# -- a burst: the result equals a fresh learn ----------------------------------------------


def export_view(folder: Path, *, live_only: bool = False) -> dict[str, Any]:
    """An export as data, timestamps left out; ``live_only`` keeps only live sections and
    live document entries (a watched knowledge base also keeps the versions it saw)."""
    out: dict[str, Any] = {}
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.name == "kbdb-export.toml":
            continue
        text = p.read_text(encoding="utf-8")
        if p.suffix == ".md":
            data = tomllib.loads(text.split("+++\n")[1])
            if live_only and "retired_at" in data:
                continue
            body = text.split("+++\n", 2)[2]
            data["body"] = body
        else:
            data = tomllib.loads(text)
            if live_only:
                data["entries"] = [e for e in data.get("entries", []) if e["live"]]
                if not data["entries"]:
                    continue
                data.pop("checksum", None)
        for key in TIMESTAMPS:
            data.pop(key, None)
        out[p.relative_to(folder).as_posix()] = data
    return out


def test_a_burst_ends_equal_to_a_fresh_learn(tmp_path: Path) -> None:
    watched = kbdb.KnowledgeBase.init(tmp_path / "watched")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "old.md").write_text("# Old\n\nTo be replaced.\n")
    w = Running(watched, tree)
    try:
        # A checkout: rewrite, create (in new folders) and delete at once.
        (tree / "old.md").write_text("# Old\n\nReplaced by the checkout.\n")
        for i in range(300):
            p = tree / f"d{i % 7}" / f"n{i}.md"
            p.parent.mkdir(exist_ok=True)
            p.write_text(f"# Note {i}\n\nWord{i} and the tapir.\n\n## Part\n\nPart {i % 13}.\n")
        for i in range(0, 300, 10):
            (tree / f"d{i % 7}" / f"n{i}.md").unlink()
        wait_for(lambda: len(live_docids(watched)) == 271, what="the burst to land")
        time.sleep(0.5)
    finally:
        w.close()
    fresh = kbdb.KnowledgeBase.init(tmp_path / "fresh")
    fresh.learn_path(tree)
    watched.export(tmp_path / "e1")
    fresh.export(tmp_path / "e2")
    a = export_view(tmp_path / "e1", live_only=True)
    b = export_view(tmp_path / "e2", live_only=True)
    assert a.keys() == b.keys()
    assert a == b
    watched.close()
    fresh.close()


@pytest.mark.slow
def test_a_burst_of_ten_thousand_changes(tmp_path: Path) -> None:
    kb = kbdb.KnowledgeBase.init(tmp_path / "kb")
    tree = tmp_path / "tree"
    tree.mkdir()
    w = Running(kb, tree)
    try:
        for i in range(10_000):
            p = tree / f"d{i % 100}" / f"n{i}.md"
            p.parent.mkdir(exist_ok=True)
            p.write_text(f"# Note {i}\n\nWord{i}.\n")
        wait_for(lambda: kb.stats().live_sections == 10_000, timeout=300, what="10,000 files")
        # (the batch is reported just after it commits)
        wait_for(lambda: sum(b.files_learned for b in w.batches) >= 10_000, what="reports")
        assert all(b.kind == "change" for b in w.batches[1:])
        assert w.alive()
    finally:
        w.close()
    kb.close()


# -- the command, in real processes ---------------------------------------------------------


def start_watch(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kbdb.cli", "watch", "--json", *args],
        cwd=cwd,
        env=cli_env(**(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_batch(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return dict(json.loads(line))


def test_sigterm_stops_between_batches(tmp_path: Path) -> None:
    kbdb.KnowledgeBase.init(tmp_path).close()
    tree = tmp_path / "tree"
    for i in range(3_000):  # a sync of several batches, so the signal lands during one
        p = tree / f"d{i % 30}" / f"n{i}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# Note {i}\n\nWord{i}.\n")
    proc = start_watch(tmp_path, "tree")
    try:
        first = read_batch(proc)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    batches = [first, *(json.loads(line) for line in out.splitlines())]
    with kbdb.KnowledgeBase.open(tmp_path) as kb:
        stored = kb.stats().documents
    # Every batch printed was committed whole, and nothing else was: no half batch.
    assert stored == sum(b["files_learned"] for b in batches)
    assert stored < 3_000  # it stopped before the end of the sync


def test_ctrl_c_stops_the_command_cleanly(tmp_path: Path) -> None:
    kbdb.KnowledgeBase.init(tmp_path).close()
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.md").write_text("# A\n\nThe ibis.\n")
    proc = start_watch(tmp_path, "tree")
    try:
        assert read_batch(proc)["files_learned"] == 1
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err


def test_other_writers_interleave_with_a_running_watch(tmp_path: Path) -> None:
    kbdb.KnowledgeBase.init(tmp_path).close()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.md").write_text("# A\n\nThe heron.\n")
    # A short lock timeout: a watcher that held the lock while idle would fail the learn.
    env = {"KBDB_LOCK_TIMEOUT": "3"}
    proc = start_watch(tmp_path, "tree", env=env)
    try:
        read_batch(proc)
        other = subprocess.run(
            [sys.executable, "-m", "kbdb.cli", "learn", "-", "--docid", "note"],
            input="# Note\n\nThe egret.\n",
            cwd=tmp_path,
            env=cli_env(**env),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert other.returncode == 0, other.stderr
        (tree / "b.md").write_text("# B\n\nThe stork.\n")
        assert read_batch(proc)["files_learned"] == 1  # the watch goes on after it
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    with kbdb.KnowledgeBase.open(tmp_path) as kb:
        assert hits(kb, "egret") == {"note"} and hits(kb, "stork") == {"b.md"}


def test_the_text_output_is_one_line_per_batch(tmp_path: Path) -> None:
    kbdb.KnowledgeBase.init(tmp_path).close()
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.md").write_text("# A\n\nOne.\n\n## B\n\nTwo.\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbdb.cli", "watch", "tree"],
        cwd=tmp_path,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("+2 ~0 \u22120 sections in ") and line.endswith(" ms\n")
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    finally:
        proc.kill()


def test_the_command_names_a_bad_folder(tmp_path: Path) -> None:
    kbdb.KnowledgeBase.init(tmp_path).close()
    run = subprocess.run(
        [sys.executable, "-m", "kbdb.cli", "watch", "nowhere"],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "no such folder: nowhere" in run.stderr


def test_output_redirected_into_the_watched_folder_is_refused(tmp_path: Path) -> None:
    # Each batch line would change the file, and the next batch would learn it again.
    kbdb.KnowledgeBase.init(tmp_path).close()
    (tmp_path / "tree").mkdir()
    with (tmp_path / "tree" / "out.txt").open("w") as out:
        run = subprocess.run(
            [sys.executable, "-m", "kbdb.cli", "watch", "tree"],
            cwd=tmp_path,
            env=cli_env(),
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert run.returncode == 2
    assert "inside the watched folder tree" in run.stderr
