"""``Watcher``: keeps folders fresh. It learns them as ``kbdb learn`` does, then follows
their changes with ``watchfiles`` (the Rust ``notify`` crate) and commits them in batches
(docs/watch.md).

Events only say where to look. What a batch commits comes from the tree as it is when the
batch is read, through the walker's own rules (``TreeRules``): a file that exists and
``walk`` would yield is learned, a known file that no longer would is forgotten. So the
order of events, an editor's temporary files, a save by atomic rename and a file that
vanishes before it is read need no special cases, and the result of any burst is what a
fresh learn of the tree gives.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from watchfiles._rust_notify import RustNotify

from kbdb.errors import InvalidArgumentError, KbLockedError
from kbdb.ingest import FileEntry, Skipped, TreeRules
from kbdb.ingest.ignore import IGNORE_FILES
from kbdb.learn.items import Pending, utc_now
from kbdb.learn.learner import (
    BATCH_CHARS,
    BATCH_FILES,
    BATCH_SECTIONS,
    BATCH_SECTIONS_EMBEDDED,
)
from kbdb.store.lifecycle import live_source_paths
from kbdb.types import SkippedFile, WatchBatch, WatchedFolder

if TYPE_CHECKING:
    from kbdb.context import Context
    from kbdb.learn import Learner

log = logging.getLogger("kbdb.watch")

# The notifier returns a set of changes once no new event came for STEP_MS, or at the
# latest DEBOUNCE_MS after the first one. One save is then searchable about STEP_MS plus
# the commit after it; a burst (a git checkout, a build) is read in few batches instead
# of one per file, and a steady stream of changes waits at most DEBOUNCE_MS.
DEBOUNCE_MS = 800
STEP_MS = 50
# A quiet watcher wakes this often to check that its folders still exist (a deleted
# folder sends nothing once its inotify watch is gone).
TIMEOUT_MS = 1_000

BatchFn = Callable[[WatchBatch], None]


@dataclass
class _Folder:
    """One watched folder and what the watcher knows of it."""

    path: Path  # as given: learn records source paths from it
    abs: str
    known: dict[str, str] = field(default_factory=dict)  # rel -> docid of its document
    present: bool = False
    identity: tuple[int, int] | None = None  # (st_dev, st_ino) when the notifier started
    needs_sync: bool = True
    from_store: bool = False  # known holds the documents stored before the watch began
    last_synced_at: str | None = None
    batches: int = 0


def check_folders(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The folders to watch, checked: each exists and is a folder, and none lies inside
    another (its files would be learned twice, under two document ids)."""
    out: list[Path] = []
    seen: dict[str, Path] = {}
    for raw in paths:
        p = Path(raw).expanduser()
        try:
            st = p.stat()
        except FileNotFoundError:
            raise InvalidArgumentError(
                f"no such folder: {p}", hint="check the path; watch follows existing folders"
            ) from None
        except OSError as exc:
            raise InvalidArgumentError(f"cannot access {p}: {exc.strerror or exc}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise InvalidArgumentError(
                f"not a folder: {p}",
                hint="watch follows folders; give the folder that holds the file, "
                "or learn a single file with 'kbdb learn'",
            )
        real = os.path.realpath(p)
        if real in seen:
            continue
        for other_real, other in seen.items():
            if real.startswith(other_real.rstrip(os.sep) + os.sep) or other_real.startswith(
                real.rstrip(os.sep) + os.sep
            ):
                raise InvalidArgumentError(
                    f"{p} and {other} overlap: one is inside the other",
                    hint="watch only the outer folder",
                )
        seen[real] = p
        out.append(p)
    if not out:
        raise InvalidArgumentError("watch needs at least one folder")
    return out


class Watcher:
    """Learns folders, then follows their changes until stopped. ``status`` may be read
    from any thread while ``run`` works."""

    def __init__(
        self, ctx: Context, learner: Learner, folders: Sequence[Path], tags: Sequence[str]
    ) -> None:
        self._ctx = ctx
        self._learner = learner
        self._tags = tuple(tags)
        self._folders = [_Folder(p, os.path.abspath(p)) for p in check_folders(folders)]
        self._status_lock = threading.Lock()
        self._max_sections = BATCH_SECTIONS_EMBEDDED if ctx.vectors.enabled else BATCH_SECTIONS

    def status(self) -> tuple[WatchedFolder, ...]:
        with self._status_lock:
            return tuple(
                WatchedFolder(
                    path=str(f.path),
                    present=f.present,
                    last_synced_at=f.last_synced_at,
                    batches=f.batches,
                    documents=len(f.known),
                )
                for f in self._folders
            )

    def run(self, stop: threading.Event, on_batch: BatchFn) -> None:
        """Learn the folders, then commit their changes batch by batch until ``stop`` is
        set. ``stop`` is looked at between batches only: a batch once read is committed
        whole. ``on_batch`` is called after each commit."""
        while not stop.is_set():
            self._check_presence(on_batch)
            live = [f for f in self._folders if f.present]
            if not live:
                stop.wait(TIMEOUT_MS / 1000)
                continue
            try:
                # Started before the sync, so that what changes during it is heard.
                notify = RustNotify([f.abs for f in live], False, False, 300, True, True)
            except FileNotFoundError:  # a folder left in between: look again
                continue
            with notify:
                for f in live:
                    f.identity = _identity(f.abs)
                self._follow(notify, stop, on_batch)

    def _follow(self, notify: RustNotify, stop: threading.Event, on_batch: BatchFn) -> None:
        """Sync what needs it, then commit changes until stopped or until the set of
        folders changed (the caller then starts a new notifier)."""
        while not stop.is_set():
            for f in self._folders:
                if f.present and f.needs_sync and not stop.is_set():
                    self._sync(f, stop, on_batch)
            if stop.is_set():
                return
            raw = notify.watch(DEBOUNCE_MS, STEP_MS, TIMEOUT_MS, stop)
            if raw == "signal":  # a signal handler raised: let it propagate
                raise KeyboardInterrupt
            if raw == "stop":
                return
            if raw != "timeout":
                self._apply({path for _change, path in raw}, stop, on_batch)
            if self._folders_moved():
                return

    # -- reading the tree ---------------------------------------------------------------

    def _apply(self, paths: set[str], stop: threading.Event, on_batch: BatchFn) -> None:
        """Commit what the tree now holds at the paths events named."""
        for f in self._folders:
            if not f.present:
                continue
            rules = TreeRules(f.path, max_file_bytes=self._ctx.config.learn.max_file_bytes)
            rels = sorted({r for p in paths if (r := rules.rel(p))})
            if not rels:
                continue
            if any(r.rpartition("/")[2] in IGNORE_FILES for r in rels):
                # The rules changed: only a walk of the whole tree knows what they now keep.
                f.needs_sync = True
                continue
            entries: dict[str, FileEntry] = {}
            skipped: list[SkippedFile] = []
            gone: set[str] = set()
            for rel in rels:
                path = f.path / rel
                if _is_folder(path):
                    for e in rules.walk(rel):
                        _sort(e, entries, skipped)
                    continue
                found = rules.entry(rel)
                if found is not None:
                    _sort(found, entries, skipped)
                    continue
                if rel in f.known:
                    gone.add(rel)
                if not os.path.lexists(path):  # a folder that left takes its files along
                    gone.update(k for k in f.known if k.startswith(rel + "/"))
            self._commit(f, "change", entries.values(), gone, skipped, stop, on_batch)
            if stop.is_set():
                return

    def _sync(self, f: _Folder, stop: threading.Event, on_batch: BatchFn) -> None:
        """Learn the whole folder as ``kbdb learn`` does and forget the documents of files
        it no longer holds."""
        f.needs_sync = False
        if not f.from_store:
            # Files learned before (by learn or an earlier watch) that were deleted while
            # nobody watched must leave too.
            with self._ctx.db.read() as conn:
                stored = live_source_paths(conn)
            prefix = f.abs.rstrip(os.sep) + os.sep
            for docid, source in stored:
                p = os.path.abspath(source)
                if p.startswith(prefix):
                    f.known.setdefault(Path(os.path.relpath(p, f.abs)).as_posix(), docid)
            f.from_store = True
        rules = TreeRules(f.path, max_file_bytes=self._ctx.config.learn.max_file_bytes)
        entries: dict[str, FileEntry] = {}
        skipped: list[SkippedFile] = []
        present: set[str] = set()
        for e in rules.walk(""):
            present.add(e.rel)
            _sort(e, entries, skipped)
        gone = {rel for rel in f.known if rel not in present}
        self._commit(f, "sync", entries.values(), gone, skipped, stop, on_batch)

    # -- committing ---------------------------------------------------------------------

    def _commit(
        self,
        f: _Folder,
        kind: Literal["sync", "change"],
        entries: Iterable[FileEntry],
        gone: set[str],
        skipped: list[SkippedFile],
        stop: threading.Event,
        on_batch: BatchFn,
    ) -> None:
        """Read the files and commit them in batches of at most ``learn``'s size, the
        forgotten documents with the first; ``stop`` is looked at between batches."""
        batch: list[tuple[str, Pending]] = []
        sections = chars = 0
        committed = False
        started = time.perf_counter()
        for entry in entries:
            before = len(skipped)
            pending = self._learner.load_file(entry, self._tags, skipped)
            if pending is None:
                if not os.path.lexists(entry.path):  # vanished between the walk and the read
                    del skipped[before:]
                    if entry.rel in f.known:
                        gone.add(entry.rel)
                continue
            batch.append((entry.rel, pending))
            sections += len(pending.doc.sections)
            chars += sum(len(s.content) for s in pending.doc.sections)
            if len(batch) >= BATCH_FILES or sections >= self._max_sections or chars >= BATCH_CHARS:
                self._commit_batch(f, kind, batch, gone, skipped, started, on_batch)
                committed = True
                batch, sections, chars, skipped, gone = [], 0, 0, [], set()
                started = time.perf_counter()
                if stop.is_set():
                    return
        # A walk always reports, even of an empty folder: it is when the folder synced.
        if batch or gone or skipped or (kind == "sync" and not committed):
            self._commit_batch(f, kind, batch, gone, skipped, started, on_batch)

    def _commit_batch(
        self,
        f: _Folder,
        kind: Literal["sync", "change"],
        batch: list[tuple[str, Pending]],
        gone: set[str],
        skipped: list[SkippedFile],
        started: float,
        on_batch: BatchFn,
    ) -> None:
        forget = sorted(gone)
        try:
            reports, totals = self._learner.learn_pending(
                [p for _, p in batch], forget=[f.known[rel] for rel in forget]
            )
        except KbLockedError as exc:
            # Another writer held the lock past its timeout: nothing of this batch was
            # stored. A walk of the whole folder later catches up with it.
            log.warning("%s; %s will be synced again", exc, f.path)
            f.needs_sync = True
            return
        for rel, p in batch:
            f.known[rel] = p.doc.docid
        for rel in forget:
            f.known.pop(rel, None)
        superseded = sum(1 for r in reports if r.status == "added" and r.superseded)
        added = sum(1 for r in reports if r.status == "added") - superseded
        committed = utc_now()
        with self._status_lock:
            f.last_synced_at = committed
            f.batches += 1
        on_batch(
            WatchBatch(
                kind=kind,
                folder=str(f.path),
                files_learned=len(batch),
                files_deleted=len(forget),
                sections_added=added,
                sections_superseded=superseded,
                sections_retired=totals["sections_retired"] - superseded,
                files_skipped=tuple(skipped),
                elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
                committed_at=committed,
            )
        )

    # -- the folders themselves ---------------------------------------------------------

    def _check_presence(self, on_batch: BatchFn) -> None:
        """Note which folders exist. A folder that left takes its documents along; one
        that is back is synced once a notifier follows it."""
        for f in self._folders:
            now = _identity(f.abs) is not None
            if now == f.present:
                continue
            with self._status_lock:
                f.present = now
            if now:
                f.needs_sync = True
                log.info("%s is back: syncing it", f.path)
                continue
            log.info("%s is gone: forgetting its documents until it is back", f.path)
            if f.known:
                self._commit(f, "change", (), set(f.known), [], threading.Event(), on_batch)

    def _folders_moved(self) -> bool:
        """Whether a folder left, came back, or was replaced by another (deleted and made
        again): its notifier no longer follows it."""
        for f in self._folders:
            ident = _identity(f.abs)
            if (ident is not None) != f.present or (f.present and ident != f.identity):
                if f.present and ident is not None:
                    f.needs_sync = True  # replaced: what it holds now is unknown
                    f.present = False  # seen again by _check_presence, then synced
                return True
        return False


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _sort(
    e: FileEntry | Skipped, entries: dict[str, FileEntry], skipped: list[SkippedFile]
) -> None:
    if isinstance(e, FileEntry):
        entries[e.rel] = e
    else:
        skipped.append(SkippedFile(str(e.path), e.reason, e.code))
