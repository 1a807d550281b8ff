"""Download a model's files into the user cache, checked and landed atomically.

Each file is streamed into a hidden temporary file in the destination folder while its
SHA-256 is computed. Only when the transfer is complete *and* the sum matches the pinned
one is it fsynced and renamed to its final name (``os.replace``, atomic on one file
system). A checksum mismatch, a connection cut mid-body, a timeout or an interrupt
(Ctrl-C) deletes the temporary file, so a final name only ever holds verified bytes. Two
processes downloading at once each write their own temporary file; the last rename wins
with identical bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from kbdb.embedding.files import (
    MODEL_FILE,
    MODEL_PATH_HINT,
    TOKENIZER_FILE,
    ModelFiles,
    ModelSpec,
    RemoteFile,
    find_model_files,
)
from kbdb.errors import ModelNotAvailableError

if TYPE_CHECKING:
    import httpx

    from kbdb.embedding.base import ProgressCallback

log = logging.getLogger("kbdb")

CHUNK_BYTES = 1 << 20
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0  # between two chunks, not for the whole file


class _TransferError(Exception):
    """One file could not be fetched; the text says why (lower-case, no secrets)."""


def _present(path: Path, f: RemoteFile) -> bool:
    """A file that already landed (sum checked then) and still has its pinned size."""
    try:
        size = path.stat().st_size
    except OSError:
        return False
    return f.size is None or size == f.size


def _stream_to(
    client: httpx.Client, url: str, out: BinaryIO, f: RemoteFile, progress: ProgressCallback | None
) -> str:
    """Stream ``url`` into ``out``; return the hex SHA-256 of the bytes received."""
    import httpx

    digest = hashlib.sha256()
    try:
        with client.stream("GET", url) as response:
            if response.status_code != 200:
                raise _TransferError(f"HTTP {response.status_code} for {url}")
            header = response.headers.get("content-length")
            total = int(header) if header and header.isdigit() else f.size
            done = 0
            if progress is not None:
                progress(f.name, 0, total)
            for chunk in response.iter_bytes(CHUNK_BYTES):
                done += len(chunk)
                if f.size is not None and done > f.size:
                    # A pinned file has a known size: a larger body is not it, and must not
                    # fill the disk on its way to a checksum mismatch.
                    raise _TransferError(
                        f"{url} sent more than the {f.size:,} bytes pinned for {f.name}"
                    )
                out.write(chunk)
                digest.update(chunk)
                if progress is not None:
                    progress(f.name, done, total)
            if header and header.isdigit() and done != int(header):
                raise _TransferError(f"transfer of {url} ended after {done} of {header} bytes")
    except httpx.TimeoutException:
        raise _TransferError(f"timed out fetching {url}") from None
    except httpx.HTTPError as exc:
        # Connection refused, DNS failure, a body cut short (RemoteProtocolError), ...
        raise _TransferError(f"could not fetch {url}: {type(exc).__name__}: {exc}") from None
    return digest.hexdigest()


def _fetch_one(
    client: httpx.Client, url: str, dest: Path, f: RemoteFile, progress: ProgressCallback | None
) -> None:
    """Fetch ``url`` to ``dest/f.name``: temp file, verify, fsync, atomic rename."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{f.name}.", suffix=".part", dir=dest)
    tmp = Path(tmp_name)
    landed = False
    try:
        with os.fdopen(fd, "wb") as out:
            got = _stream_to(client, url, out, f, progress)
            if got != f.sha256:
                raise _TransferError(
                    f"checksum mismatch for {f.name} from {url}: expected sha256 {f.sha256}, "
                    f"got {got}"
                )
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest / f.name)
        landed = True
        log.info("downloaded %s (%s)", dest / f.name, f.sha256[:12])
    finally:
        if not landed:
            with contextlib.suppress(OSError):
                tmp.unlink()


def _fsync_dir(path: Path) -> None:
    """Make the renames durable (POSIX); a no-op where folders cannot be opened."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def download_model(
    spec: ModelSpec,
    dest: Path,
    *,
    base_url: str | None = None,
    progress: ProgressCallback | None = None,
    timeout: float = READ_TIMEOUT_S,
) -> ModelFiles:
    """Download the files of ``spec`` into ``dest`` (created), skipping those already there.

    Args:
        spec: the model, its file URLs and pinned SHA-256 sums.
        dest: the model's cache folder, e.g. ``~/.local/share/kbdb/models/all-MiniLM-L6-v2``.
        base_url: replaces ``spec.base_url`` (``KBDB_MODEL_URL``: a mirror or a test server).
        progress: called with ``(file name, bytes so far, total or None)`` as bytes arrive.
        timeout: seconds to wait for the next bytes (the connect timeout is 10 s).

    Returns:
        The landed model and tokenizer.

    Raises:
        ModelNotAvailableError: a file could not be fetched completely, or its checksum did
            not match; the message names the files, the folder and the ``model_path`` option.
            No file is left at a final name in that case.
    """
    import httpx

    names = ", ".join(f.name for f in spec.files)
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelNotAvailableError(
            f"model {spec.name}: cannot create the cache folder {dest} ({exc.strerror or exc})",
            hint=MODEL_PATH_HINT,
        ) from None
    limits = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout))
    try:
        with httpx.Client(timeout=limits, follow_redirects=True) as client:
            for f in spec.files:
                if _present(dest / f.name, f):
                    continue
                _fetch_one(client, spec.url(f, base_url), dest, f, progress)
    except _TransferError as exc:
        raise ModelNotAvailableError(
            f"model {spec.name}: could not download {names} into {dest}: {exc}",
            hint=MODEL_PATH_HINT + ", or retry when online",
        ) from None
    except OSError as exc:
        raise ModelNotAvailableError(
            f"model {spec.name}: could not write {names} into {dest} ({exc.strerror or exc})",
            hint=MODEL_PATH_HINT,
        ) from None
    _fsync_dir(dest)
    found = find_model_files(dest)
    if found is None:  # a spec without both files: a programming error in KNOWN_MODELS
        raise ModelNotAvailableError(
            f"model {spec.name}: {dest} lacks {MODEL_FILE} or {TOKENIZER_FILE} after download",
            hint=MODEL_PATH_HINT,
        )
    return found
