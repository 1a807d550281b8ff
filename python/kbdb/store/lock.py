"""The writer lock: one exclusive OS file lock (``.kbdb/write.lock``) per write operation.

Writers serialize through it (DESIGN §4). A writer waits up to ``timeout`` seconds and then
fails with ``KB_LOCKED``. Readers never take it. The lock is released by the kernel when the
process dies, so a killed writer never leaves the knowledge base locked.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kbdb.errors import KbLockedError

DEFAULT_TIMEOUT_S = 30.0
_POLL_S = 0.02


class WriteLock:
    """A re-entrant (per thread) exclusive lock on ``path``."""

    def __init__(self, path: Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.path = path
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def hold(self, *, timeout: float | None = None) -> Iterator[None]:
        """Hold the lock for the body of the ``with`` block."""
        wait = self.timeout if timeout is None else timeout
        if not self._thread_lock.acquire(timeout=max(wait, 0.0) if wait >= 0 else -1):
            raise self._locked_error(wait)
        try:
            if self._depth == 0:
                self._fd = self._acquire_file(wait)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
                    os.close(self._fd)
                    self._fd = None
        finally:
            self._thread_lock.release()

    def _acquire_file(self, wait: float) -> int:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise self._locked_error(wait) from None
                time.sleep(_POLL_S)

    def _locked_error(self, wait: float) -> KbLockedError:
        return KbLockedError(
            f"knowledge base is locked by another writer ({self.path}); waited {wait:g}s",
            hint="retry later, or raise the timeout with KBDB_LOCK_TIMEOUT",
        )
