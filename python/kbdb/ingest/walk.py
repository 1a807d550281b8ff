"""Find the files a learn should read, streaming, and load them (SPEC §3).

``walk`` is a generator over ``os.scandir``: it holds one sorted listing per open folder
on the current path, never the whole tree, so memory stays flat on 100k files. The
order is deterministic: entries sorted by name (code point order) within each folder,
depth first, a subfolder's files at the folder's place among its siblings.

Rules, for a folder root:

- skipped silently: hidden names (starting with ``.``, which covers ``.kbdb`` and
  ``.git``), ``node_modules``, paths matched by ``.gitignore``/``.kbdbignore`` files in
  the tree (``kbdb.ingest.ignore``), and files whose extension (case-insensitive) is not
  in ``SUPPORTED_EXTENSIONS``;
- symlinked folders are not followed (this rules out loops and escapes from the root);
  symlinked files are followed when their target lies inside the root. A link whose
  target is outside the root is ``Skipped(code="OUTSIDE_ROOT")`` and says where it points,
  unless ``follow_symlinks=True``: a document tree must not pull ``~/.ssh/id_rsa.md`` or
  another project's notes into the knowledge base by a link. Broken links, special files
  (FIFOs, sockets) with a supported extension, unreadable files and unreadable folders
  are reported as ``Skipped(code="UNREADABLE")``;
- a file over ``max_file_bytes`` is ``Skipped(code="CONTENT_TOO_LARGE")``, except a
  ``.jsonl`` transcript, whose lines are held to that limit one by one instead.

A file given directly as the root is always considered, hidden or ignored or not; if
its extension is unsupported it is ``Skipped(code="UNSUPPORTED_TYPE")`` rather than
silently dropped, since the user named it.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from kbdb.errors import InvalidArgumentError
from kbdb.ingest.formats import EXTENSIONS as FORMAT_EXTENSIONS
from kbdb.ingest.formats import Format, format_of, split_with
from kbdb.ingest.ignore import IGNORE_FILES, IgnoreLevel, is_ignored, load_level
from kbdb.ingest.section import ParsedDocument

logger = logging.getLogger("kbdb")

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
"""``learn.max_file_bytes`` default: 10 MiB."""

SUPPORTED_EXTENSIONS: dict[str, str] = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    ".json": "application/json",
    ".jsonl": "application/jsonl",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
    **FORMAT_EXTENSIONS,
}
"""Learnable file extensions (lower case, with the dot) and their MIME types. Those of
documents and source code need an extra (``kbdb.ingest.formats``)."""

JSONL_TYPE = "application/jsonl"
"""A ``.jsonl`` file: a conversation transcript, read a line at a time (``ingest.chat``).
Its size limit applies to each line, not to the file."""

_BOM = b"\xef\xbb\xbf"

SKIPPED_NAMES = frozenset({"node_modules", ".kbdb"})
"""Names never walked into, besides hidden names."""


@dataclass(frozen=True)
class FileEntry:
    """A file to learn.

    Attributes:
        path: The file on disk (the root joined with ``rel``).
        rel: POSIX path relative to the learn root; the file name when the root is a
            file. This is the ``source`` of the file's source keys.
        type: MIME type from ``SUPPORTED_EXTENSIONS``.
        size: Size in bytes when walked.
    """

    path: Path
    rel: str
    type: str
    size: int


@dataclass(frozen=True)
class Skipped:
    """A file (or folder) that will not be learned, and why.

    Attributes:
        path: The path on disk.
        rel: POSIX path relative to the learn root.
        reason: A lower-case sentence for people.
        code: A stable code: ``CONTENT_TOO_LARGE``, ``UNREADABLE``, ``UNSUPPORTED_TYPE``,
            ``INVALID_UTF8``, ``BINARY_FILE`` or ``OUTSIDE_ROOT``.
    """

    path: Path
    rel: str
    reason: str
    code: str


@dataclass(frozen=True)
class _Candidate:
    """A walked path before it is stat-ed: what ``count_files`` counts."""

    path: Path
    rel: str
    type: str | None  # None for a folder that could not be listed
    entry: os.DirEntry[str] | None
    error: str | None = None
    code: str = "UNREADABLE"  # the skip code of ``error``


def walk(
    root: str | os.PathLike[str],
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    follow_symlinks: bool = False,
) -> Iterator[FileEntry | Skipped]:
    """Stream the learnable files under ``root`` (see the module docstring for rules).

    The root is checked at once; the tree is read lazily as the iterator is consumed.

    Args:
        root: A folder to walk recursively, or one file.
        max_file_bytes: Files larger than this many bytes are skipped.
        follow_symlinks: Also learn symlinked files whose target is outside the root
            (otherwise they are ``Skipped(code="OUTSIDE_ROOT")``).

    Returns:
        An iterator of ``FileEntry`` and ``Skipped``, in deterministic order.

    Raises:
        InvalidArgumentError: ``root`` does not exist or ``max_file_bytes`` is negative.
    """
    if max_file_bytes < 0:
        raise InvalidArgumentError(f"max_file_bytes must be >= 0, got {max_file_bytes}")
    return (_inspect(c, max_file_bytes) for c in _candidates(Path(root), follow_symlinks))


def count_files(root: str | os.PathLike[str]) -> int:
    """Count what ``walk(root)`` will yield, cheaply (no per-file ``stat``).

    Meant for progress bars: it applies the same skipping rules, so unless the tree
    changes in between it equals the number of items ``walk`` yields.

    Args:
        root: A folder or one file.

    Returns:
        The number of files (and unreadable folders) ``walk`` reports.

    Raises:
        InvalidArgumentError: ``root`` does not exist.
    """
    return sum(1 for _ in _candidates(Path(root)))


def _candidates(root: Path, follow_symlinks: bool = False) -> Iterator[_Candidate]:
    try:
        root_stat = root.stat()
    except FileNotFoundError:
        raise InvalidArgumentError(
            f"no such file or folder: {root}", hint="check the path"
        ) from None
    except OSError as exc:
        raise InvalidArgumentError(f"cannot access {root}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(root_stat.st_mode):
        return _walk_tree(root, follow_symlinks)
    return iter((_Candidate(root, root.name, _type_of(root.name), None),))


def _walk_tree(
    root: Path,
    follow_symlinks: bool,
    folder: Path | None = None,
    base: str = "",
    parent_levels: tuple[IgnoreLevel, ...] = (),
) -> Iterator[_Candidate]:
    """The candidates under ``folder`` (default: the root), whose path relative to the
    root is ``base`` and whose ancestors' rules are ``parent_levels``."""
    real_root = root.resolve()
    folder = root if folder is None else folder
    # One frame per open folder: its remaining sorted entries, its rel and its rules.
    listing = _list(folder, base)
    if isinstance(listing, str):
        yield _Candidate(folder, base or ".", None, None, listing)
        return
    stack = [(iter(listing), base, _levels(parent_levels, folder, base, listing))]
    while stack:
        entries, base, levels = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        name = entry.name
        if name.startswith(".") or name in SKIPPED_NAMES:
            continue
        rel = f"{base}/{name}" if base else name
        if _is_dir(entry):
            if is_ignored(levels, rel, is_dir=True):
                continue
            path = Path(entry.path)
            sub = _list(path, rel)
            if isinstance(sub, str):
                yield _Candidate(path, rel, None, None, sub)
                continue
            stack.append((iter(sub), rel, _levels(levels, path, rel, sub)))
            continue
        kind = _type_of(name)
        if kind is None or _quietly_unread(kind) or is_ignored(levels, rel, is_dir=False):
            continue
        escape = None if follow_symlinks else _escapes(entry, real_root)
        if escape is not None:
            yield _Candidate(Path(entry.path), rel, kind, entry, escape, "OUTSIDE_ROOT")
            continue
        yield _Candidate(Path(entry.path), rel, kind, entry)


def _escapes(entry: os.DirEntry[str] | Path, real_root: Path) -> str | None:
    """Why a symlinked file must not be read (its target is outside the learn root), or
    None for a regular file or a link that stays inside."""
    try:
        if not entry.is_symlink():
            return None
        target = Path(entry).resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop on Python < 3.13
        return None  # a broken or looping link: reported as UNREADABLE by the stat
    if target == real_root or real_root in target.parents:
        return None
    return f"symbolic link to {target}, outside the learn root (not followed)"


def _list(folder: Path, rel: str) -> list[os.DirEntry[str]] | str:
    """A folder's entries sorted by name, or the reason it cannot be listed."""
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError as exc:
        logger.debug("cannot list %s: %s", folder, exc)
        return f"cannot read folder: {(exc.strerror or str(exc)).lower()}"


def _levels(
    parent: tuple[IgnoreLevel, ...], folder: Path, rel: str, entries: list[os.DirEntry[str]]
) -> tuple[IgnoreLevel, ...]:
    names = [e.name for e in entries if e.name in IGNORE_FILES]
    if not names:
        return parent
    level = load_level(folder, rel, names)
    return parent if level is None else parent + (level,)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _type_of(name: str) -> str | None:
    return SUPPORTED_EXTENSIONS.get(os.path.splitext(name)[1].lower())


def _quietly_unread(kind: str) -> bool:
    """A format a folder learn leaves out without a word: source code without the code
    extra."""
    fmt = format_of(kind)
    return fmt is not None and fmt.quiet_without_extra and not fmt.available()


def _inspect(candidate: _Candidate, max_file_bytes: int) -> FileEntry | Skipped:
    path, rel = candidate.path, candidate.rel
    if candidate.error is not None:
        return Skipped(path, rel, candidate.error, candidate.code)
    if candidate.type is None:
        ext = os.path.splitext(path.name)[1] or path.name
        return Skipped(path, rel, f"unsupported file type '{ext}'", "UNSUPPORTED_TYPE")
    fmt = format_of(candidate.type)
    if fmt is not None and not fmt.available():
        return Skipped(path, rel, fmt.missing_reason(), "UNSUPPORTED_TYPE")
    try:
        st = candidate.entry.stat() if candidate.entry is not None else path.stat()
    except FileNotFoundError:
        return Skipped(path, rel, "broken symbolic link or file vanished", "UNREADABLE")
    except OSError as exc:
        return Skipped(
            path, rel, f"cannot stat: {(exc.strerror or str(exc)).lower()}", "UNREADABLE"
        )
    if not stat.S_ISREG(st.st_mode):
        return Skipped(path, rel, "not a regular file", "UNREADABLE")
    if st.st_size > max_file_bytes and candidate.type != JSONL_TYPE:
        reason = f"file is {st.st_size} bytes, over learn.max_file_bytes ({max_file_bytes})"
        return Skipped(path, rel, reason, "CONTENT_TOO_LARGE")
    if not os.access(path, os.R_OK):
        return Skipped(path, rel, "permission denied", "UNREADABLE")
    return FileEntry(path, rel, candidate.type, st.st_size)


class TreeRules:
    """``walk``'s rules asked one path at a time: what ``walk(root)`` would yield for a
    path under ``root`` as the tree is now. A watcher hears of single paths and must
    keep exactly what a learn of the whole folder would keep.

    Each folder's ignore rules are read once and kept: make a new ``TreeRules`` when an
    ignore file may have changed.
    """

    def __init__(
        self, root: str | os.PathLike[str], *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    ) -> None:
        self.root = Path(root)
        self._abs_root = os.path.abspath(self.root)
        self._real_root = self.root.resolve()
        self._max = max_file_bytes
        # folder rel -> the rules in force inside it, or None when walk never enters it
        self._folders: dict[str, tuple[IgnoreLevel, ...] | None] = {}

    def rel(self, path: str | os.PathLike[str]) -> str | None:
        """``path``'s POSIX path relative to the root ("" for the root itself), or None
        when it lies outside."""
        p = os.path.abspath(path)
        if p == self._abs_root:
            return ""
        if not p.startswith(self._abs_root.rstrip(os.sep) + os.sep):
            return None
        return Path(os.path.relpath(p, self._abs_root)).as_posix()

    def entry(self, rel: str) -> FileEntry | Skipped | None:
        """What ``walk(root)`` yields for the file at ``rel`` now, or None when it yields
        nothing there: the path is missing, a folder, hidden, ignored, inside a folder the
        walk does not enter, or of an unsupported type."""
        if not rel:
            return None
        folder, _, name = rel.rpartition("/")
        if _excluded_name(name) or (kind := _type_of(name)) is None or _quietly_unread(kind):
            return None
        levels = self._rules(folder)
        if levels is None or is_ignored(levels, rel, is_dir=False):
            return None
        path = self.root / rel
        try:
            st = path.lstat()
        except OSError:
            return None
        if stat.S_ISDIR(st.st_mode):
            return None
        escape = _escapes(path, self._real_root) if stat.S_ISLNK(st.st_mode) else None
        if escape is not None:
            return Skipped(path, rel, escape, "OUTSIDE_ROOT")
        return _inspect(_Candidate(path, rel, kind, None), self._max)

    def walk(self, rel: str) -> Iterator[FileEntry | Skipped]:
        """What ``walk(root)`` yields under the folder at ``rel`` ("" for the whole
        tree): nothing when the walk does not enter that folder."""
        levels = self._rules(rel)
        if levels is None:
            return iter(())
        folder = self.root / rel if rel else self.root
        parent = self._rules(rel.rpartition("/")[0]) if rel else ()
        if parent is None:  # pragma: no cover - a folder entered has an entered parent
            return iter(())
        candidates = _walk_tree(self.root, False, folder, rel, parent)
        return (_inspect(c, self._max) for c in candidates)

    def _rules(self, rel: str) -> tuple[IgnoreLevel, ...] | None:
        """The rules in force inside the folder at ``rel``; None when the walk does not
        enter it (a hidden or skipped name, an ignored folder, a symlinked folder, or not
        a folder at all)."""
        if rel in self._folders:
            return self._folders[rel]
        levels: tuple[IgnoreLevel, ...] | None
        folder = self.root / rel if rel else self.root
        if rel:
            parent_rel, _, name = rel.rpartition("/")
            parent = self._rules(parent_rel)
            if (
                parent is None
                or _excluded_name(name)
                or not _real_dir(folder)
                or is_ignored(parent, rel, is_dir=True)
            ):
                levels = None
            else:
                levels = _levels_of(parent, folder, rel)
        else:
            levels = _levels_of((), folder, "") if folder.is_dir() else None
        self._folders[rel] = levels
        return levels


def _excluded_name(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_NAMES


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _levels_of(parent: tuple[IgnoreLevel, ...], folder: Path, rel: str) -> tuple[IgnoreLevel, ...]:
    names = [n for n in IGNORE_FILES if (folder / n).is_file()]
    if not names:
        return parent
    level = load_level(folder, rel, names)
    return parent if level is None else parent + (level,)


class FileRejectedError(InvalidArgumentError):
    """A walked file cannot be learned. ``skip_code`` is the ``Skipped.code`` to report."""

    skip_code: ClassVar[str] = "UNREADABLE"

    def __init__(self, path: Path, reason: str, *, hint: str | None = None) -> None:
        super().__init__(f"cannot learn {path}: {reason}", hint=hint)
        self.path = path
        self.reason = reason


class UnreadableFileError(FileRejectedError):
    """The file could not be read (permissions, I/O error, vanished)."""

    skip_code = "UNREADABLE"


class InvalidUtf8Error(FileRejectedError):
    """A text file is not valid UTF-8."""

    skip_code = "INVALID_UTF8"


class BinaryFileError(FileRejectedError):
    """A text file holds NUL bytes, so it is binary."""

    skip_code = "BINARY_FILE"


@dataclass(frozen=True)
class LoadedFile:
    """A walked file's content, ready to split.

    Attributes:
        entry: The walked file.
        content: Decoded text for text types; base64 data for ``image/*`` (the form an
            image section's content takes, SPEC §2).
    """

    entry: FileEntry
    content: str


def read_text(entry: FileEntry) -> str:
    """Read a text file as UTF-8, dropping a leading BOM.

    Args:
        entry: A walked file of a text type.

    Returns:
        The decoded text.

    Raises:
        UnreadableFileError: The file cannot be read.
        BinaryFileError: The file contains a NUL byte.
        InvalidUtf8Error: The bytes are not UTF-8; the message names the byte offset.
        All three are ``InvalidArgumentError``s with a ``skip_code``.
    """
    return _decode(entry, _read_bytes(entry))


def load(entry: FileEntry) -> LoadedFile | Skipped:
    """Read a walked file, turning every per-file failure into a ``Skipped``.

    This is what a learn loop calls: one bad file is reported and the batch goes on.

    Args:
        entry: A walked file.

    Returns:
        The content (text, or base64 for images), or a ``Skipped`` whose ``code`` is
        ``UNREADABLE``, ``INVALID_UTF8`` or ``BINARY_FILE``.
    """
    try:
        data = _read_bytes(entry)
        if entry.type.startswith("image/"):
            return LoadedFile(entry, base64.b64encode(data).decode("ascii"))
        return LoadedFile(entry, _decode(entry, data))
    except FileRejectedError as exc:
        return Skipped(entry.path, entry.rel, exc.reason, exc.skip_code)


def read_format(fmt: Format, entry: FileEntry) -> tuple[ParsedDocument, str]:
    """Read and split a walked file of an extra's format (``kbdb.ingest.formats``): the
    document, and the text that stands for the file in its checksum (a binary file's
    SHA-256, a source file's text).

    Raises:
        FileRejectedError: the file cannot be read, or is binary or not UTF-8 where text
            is due.
        FormatRejectedError: the format's reader rejects it.
    """
    if fmt.binary:
        data = _read_bytes(entry)
        return split_with(fmt, data, name=entry.path.name), hashlib.sha256(data).hexdigest()
    text = read_text(entry)
    return split_with(fmt, text, name=entry.path.name), text


def _read_bytes(entry: FileEntry) -> bytes:
    try:
        return entry.path.read_bytes()
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise UnreadableFileError(entry.path, f"cannot read: {reason}") from None


def _decode(entry: FileEntry, data: bytes) -> str:
    offset = 3 if data.startswith(_BOM) else 0
    nul = data.find(b"\x00")
    if nul >= 0:
        raise BinaryFileError(
            entry.path,
            f"binary content (NUL byte at offset {nul})",
            hint="only UTF-8 text can be learned from a text file",
        )
    try:
        return data[offset:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidUtf8Error(
            entry.path,
            f"not valid UTF-8 (bad byte at offset {exc.start + offset})",
            hint="convert the file to UTF-8",
        ) from None
