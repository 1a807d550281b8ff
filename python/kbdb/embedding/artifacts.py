"""Files that kbdb derives from a model and caches: content hashes, atomic writes, and
the lock that makes two processes build a file once.

The int8 model (:mod:`~kbdb.embedding.quantize`) and the ONNX graph built from
safetensors weights (:mod:`~kbdb.embedding.bert_onnx`) are both cached by *content*: a
file's key hashes its sources' SHA-256 and the recipe, a manifest beside it records its
own SHA-256 and size, and every load checks them, so a truncated or damaged file is
rebuilt, never loaded.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MANIFEST_FORMAT = 1


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and an atomic rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def source_sha256(path: Path, cache_dir: Path) -> str:
    """``path``'s sha256, remembered in ``cache_dir`` per (path, size, mtime): hashing a
    90 MB model costs ~60 ms, reading the memo a stat and a small file."""
    st = path.stat()
    stamp = f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"
    memo = cache_dir / f".src-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.sha256"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        known = memo.read_text(encoding="utf-8").strip()
        if len(known) == 64 and all(c in "0123456789abcdef" for c in known):
            return known
    digest = file_sha256(path)
    with contextlib.suppress(OSError):  # a read-only cache only costs the rehash next time
        cache_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(memo, digest + "\n")
    return digest


def manifest_path(target: Path) -> Path:
    """The manifest beside a built file: ``<stem>.json``."""
    return target.with_suffix(".json")


def cache_problem(target: Path, expected: dict[str, Any]) -> str | None:
    """Why the built ``target`` cannot be used (``None``: it is intact and current).

    ``expected`` holds the manifest fields that name the build's sources and recipe; the
    manifest's ``sha256`` and ``size`` are checked against the file itself."""
    if not target.is_file():
        return "missing"
    try:
        manifest: Any = json.loads(manifest_path(target).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return "its manifest is missing or unreadable"
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        return "its manifest has an unknown format"
    if any(manifest.get(k) != v for k, v in expected.items()):
        return "it was built from another model or recipe"
    if target.stat().st_size != manifest.get("size"):
        return f"its size is {target.stat().st_size}, the manifest says {manifest.get('size')}"
    if file_sha256(target) != manifest.get("sha256"):
        return "its sha256 differs from the manifest"
    return None


def land(tmp: Path, target: Path, fields: dict[str, Any]) -> None:
    """Move the finished ``tmp`` to ``target`` and write its manifest (``fields`` plus the
    file's sha256 and size). The old manifest goes first, so a new file never sits beside
    an old manifest."""
    manifest = {"format": MANIFEST_FORMAT, **fields}
    manifest["sha256"] = file_sha256(tmp)
    manifest["size"] = tmp.stat().st_size
    manifest_path(target).unlink(missing_ok=True)
    os.replace(tmp, target)
    atomic_write_text(manifest_path(target), json.dumps(manifest, indent=2) + "\n")


@contextlib.contextmanager
def process_lock(folder: Path, name: str) -> Iterator[None]:
    """Exclusive ``flock`` on ``folder/name`` (released if the holder dies). A build takes
    seconds, so waiting for the other process is right."""
    fd = os.open(folder / name, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def remove_stale(folder: Path, pattern: str) -> None:
    """Delete the temporary files a killed build left (builds run under the lock, so
    nobody else owns one)."""
    for stale in folder.glob(pattern):
        with contextlib.suppress(OSError):
            stale.unlink()
