"""The embedding daemon: one warm ONNX model served on a Unix socket (see
:mod:`kbdb.embedding.daemon` for why, and for the client).

``python -m kbdb.embedding.server --socket PATH --idle SECONDS --spec JSON [--detach]``

Start-up, in this order, so that a client only ever connects to a daemon that can answer:

1. With ``--detach``, fork and let the parent exit (the client waits for it), and start a
   new session: the daemon is nobody's child and no terminal's.
2. Take ``<socket>.lock`` (``flock``) for the whole life of the process. Whoever holds it
   is the one daemon of this spec; a socket file found without the lock held is stale
   and removed. A daemon that finds another one serving says "ready" and leaves.
3. Load the model and embed one text, so that the first query pays nothing extra.
4. Bind the socket (mode 0600, in the private folder), listen, and write ``ready`` (or
   ``error: why`` at any earlier failure) on stdout, which is then closed.

It exits after ``--idle`` seconds without a request, on ``stop``, on SIGTERM or SIGINT, or
when its socket file is removed or replaced; it removes its own socket file on the way out.
Each connection is served by its own thread (ONNX Runtime sessions are thread-safe).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbdb.embedding.daemon import (
    PROTOCOL,
    DaemonSpec,
    DaemonUnavailable,
    check_private,
    connect,
    recv_json,
    send_json,
    send_message,
)

CHECK_S = 30.0  # how often an idle daemon looks at its socket file
LOCK_WAIT_S = 10.0  # for a predecessor that is on its way out


class Server:
    """Serves one spec on one socket until idle, stopped or displaced."""

    def __init__(self, spec: DaemonSpec, socket_path: Path, idle_s: float) -> None:
        self.spec = spec
        self.spec_obj = json.loads(spec.to_json())
        self.path = socket_path
        self.idle_s = idle_s
        self.started = time.time()
        self.requests = 0
        self.last_activity = time.monotonic()
        self.active = 0
        self._mutex = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._stop = False
        self._listener: socket.socket | None = None
        self._inode = 0
        self._provider: Any = None

    # -- start-up ----------------------------------------------------------------------

    def load(self) -> None:
        """The provider the spec describes, loaded and run once. The files must still be
        those the client saw (same size, mtime and inode), or the vectors could differ."""
        from kbdb.embedding.daemon import file_identity
        from kbdb.embedding.files import ModelFiles
        from kbdb.embedding.local import OnnxEmbeddingProvider
        from kbdb.embedding.sbert import ModelSettings

        s = self.spec
        settings = ModelSettings(**json.loads(s.settings))
        files = ModelFiles(model=Path(s.model), tokenizer=Path(s.tokenizer), settings=settings)
        if (tuple(file_identity(files.model)), tuple(file_identity(files.tokenizer))) != (
            s.model_identity,
            s.tokenizer_identity,
        ):
            raise DaemonUnavailable("the model files changed since the client looked at them")
        provider = OnnxEmbeddingProvider(
            files,
            model_name=s.model_name.removesuffix("+int8") if s.quantized else s.model_name,
            dimensions=s.dimensions,
            threads=s.threads,
            batch_size=s.batch_size,
            batch_tokens=s.batch_tokens,
            quantized=s.quantized,
            quantized_dir=None if s.quantized_dir is None else Path(s.quantized_dir),
            device=s.device,
        )
        provider.load()
        provider.embed(["warm up"])  # the first run allocates; do it before a query waits
        self._provider = provider

    def bind(self) -> None:
        """Listen on the socket path (replacing a stale file), readable by this user only."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # we hold the lock: no live daemon owns this file
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            listener.bind(str(self.path))
        finally:
            os.umask(old)
        listener.listen(64)
        self._inode = os.lstat(self.path).st_ino
        self._listener = listener

    # -- serving -----------------------------------------------------------------------

    def serve(self) -> None:
        assert self._listener is not None
        listener = self._listener
        sel = selectors.DefaultSelector()
        sel.register(listener, selectors.EVENT_READ)
        sel.register(self._wake_r, selectors.EVENT_READ)
        try:
            while not self._stop:
                with self._mutex:
                    busy = self.active > 0
                    idle_left = self.idle_s - (time.monotonic() - self.last_activity)
                if idle_left <= 0 and not busy:
                    break
                events = sel.select(timeout=min(max(idle_left, 0.05), CHECK_S))
                if not events and not self._socket_is_ours():
                    break  # removed or replaced: nobody can reach us any more
                for key, _ in events:
                    if key.fileobj is listener:
                        self._accept(listener)
                    else:
                        with contextlib.suppress(BlockingIOError):
                            os.read(self._wake_r, 512)
        finally:
            sel.close()
            self.close()

    def _accept(self, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        if not _peer_is_us(conn):
            conn.close()
            return
        with self._mutex:
            self.active += 1
            self.last_activity = time.monotonic()
        threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.settimeout(CHECK_S)
                while True:
                    try:
                        msg = recv_json(conn)
                    except (EOFError, OSError, ValueError):
                        return
                    if not self._answer(conn, msg):
                        return
        finally:
            with self._mutex:
                self.active -= 1
                self.last_activity = time.monotonic()

    def _answer(self, conn: socket.socket, msg: dict[str, Any]) -> bool:
        """Answer one request; False ends the connection."""
        op = msg.get("op")
        if msg.get("v") != PROTOCOL:
            send_json(conn, {"ok": False, "error": f"protocol {msg.get('v')} is not {PROTOCOL}"})
            return False
        if op == "ping":
            send_json(conn, {"ok": True, **self.describe()})
            return True
        if op == "stop":
            send_json(conn, {"ok": True, "pid": os.getpid()})
            self.stop()
            return False
        if op != "embed":
            send_json(conn, {"ok": False, "error": f"unknown op {op!r}"})
            return False
        if msg.get("spec") != self.spec_obj:
            send_json(conn, {"ok": False, "error": "this daemon serves another model spec"})
            return False
        texts = msg.get("texts")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            send_json(conn, {"ok": False, "error": "texts must be a list of strings"})
            return False
        try:
            vectors = self._provider.embed_raw(texts)  # the client put the prompts on
        except Exception as e:  # the client embeds in-process and reports it there
            send_json(conn, {"ok": False, "error": f"{type(e).__name__}: {e}"})
            return False
        with self._mutex:
            self.requests += 1
        send_json(conn, {"ok": True, "rows": int(vectors.shape[0]), "dims": int(vectors.shape[1])})
        send_message(conn, memoryview(vectors).cast("B"))
        return True

    def describe(self) -> dict[str, Any]:
        with self._mutex:
            idle = time.monotonic() - self.last_activity
            requests = self.requests
        return {
            "pid": os.getpid(),
            "model": self.spec.model,
            "model_name": self.spec.model_name,
            "threads": self.spec.threads,
            "uptime_s": round(time.time() - self.started, 3),
            "idle_s": round(idle, 3),
            "idle_timeout_s": self.idle_s,
            "requests": requests,
        }

    def stop(self) -> None:
        """Leave the serve loop (from any thread or a signal handler)."""
        self._stop = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def _socket_is_ours(self) -> bool:
        try:
            return os.lstat(self.path).st_ino == self._inode
        except OSError:
            return False

    def close(self) -> None:
        """Remove the socket file (if it is still ours), then stop listening: a client
        that comes now finds no socket and starts a new daemon."""
        if self._listener is None:
            return
        if self._socket_is_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        self._listener.close()
        self._listener = None


def _peer_is_us(conn: socket.socket) -> bool:
    """Whether the connecting process runs as this user (Linux ``SO_PEERCRED``; elsewhere
    the private folder is the only way in)."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return True
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return False
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _report(line: str) -> None:
    """Tell the starting client how the start went, then let go of its pipe."""
    with contextlib.suppress(OSError):
        os.write(1, (line.replace("\n", " ") + "\n").encode())
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)


def _another_serves(path: Path) -> bool:
    try:
        connect(path, timeout=1.0).close()
    except DaemonUnavailable:
        return False
    return True


def run(socket_path: Path, idle_s: float, spec: DaemonSpec) -> int:
    """Start (steps 2 to 4 of the module's list), then serve. Returns the exit code."""
    check_private(socket_path.parent)
    lock = socket_path.with_suffix(".lock")
    deadline = time.monotonic() + LOCK_WAIT_S
    import fcntl

    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if _another_serves(socket_path):
                _report("ready")
                return 0
            if time.monotonic() > deadline:
                raise DaemonUnavailable(
                    f"{lock} is held by a daemon that does not answer"
                ) from None
            time.sleep(0.02)
    # fd stays open (and locked) until the process exits.
    server = Server(spec, socket_path, idle_s)
    server.load()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: server.stop())
    server.bind()
    _report("ready")
    server.serve()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kbdb.embedding.server")
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("--idle", required=True, type=float)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--detach", action="store_true")
    args = parser.parse_args(argv)
    if args.detach:
        if os.fork():
            os._exit(0)  # the client waits for this parent; the daemon carries on
        os.setsid()
    try:
        return run(args.socket, args.idle, DaemonSpec.from_json(args.spec))
    except BaseException as e:  # noqa: BLE001 - every failure is told to the client
        _report(f"error: {type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
