"""The client side of the embedding daemon: a warm ONNX model shared by ``kbdb`` commands.

A cold ``kbdb search --mode hybrid`` that loads the model itself spends 0.3 to 0.5 s
more than a lexical one before it can embed the query: importing numpy, ONNX Runtime and
``tokenizers``, loading ``tokenizer.json`` and building the session for the 90 MB model
(docs/embeddings.md, "The embedding daemon"), every time. Saving a pre-optimized model
does not help: graph optimization is not where that time goes. So the ``kbdb`` command
sends the query to a small per-user process that keeps the session loaded, and does the
search itself.

- **One daemon per model.** A daemon serves one :class:`DaemonSpec`: the model and
  tokenizer files (path, size, mtime, inode), threads, batch settings, int8 or not, the
  Python interpreter and the kbdb and ONNX Runtime it runs. Its socket is named after a
  hash of the spec, and every request carries the whole spec, which the daemon compares
  with its own. Another model, a replaced file or an upgraded kbdb gets another daemon.
- **Same vectors.** The daemon runs :class:`~kbdb.embedding.local.OnnxEmbeddingProvider`
  with the caller's settings, so its vectors are those the caller would compute itself,
  bit for bit (tests/embedding/test_daemon.py).
- **Private.** The socket lives in ``$KBDB_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/kbdb``,
  else ``$TMPDIR/kbdb-<uid>`` (``/tmp``): a folder of mode 0700 that the user owns, or the
  client refuses it. The socket file must be the user's too, and the daemon checks each
  peer's uid (``SO_PEERCRED``) where the system gives it.
- **Started on need, gone when idle.** The first client that finds no daemon starts one
  (``python -m kbdb.embedding.server``, detached), under a lock file so that two clients
  start one daemon. It exits after ``embedding.daemon_idle`` seconds without a request.
- **Never in the way.** A stale socket (a killed daemon) is replaced; a daemon that dies
  mid-request is restarted once; anything else (no private folder, a start that fails or
  takes too long, a spec mismatch) and the client embeds in its own process, with the
  same result. Calls of more than :data:`DAEMON_MAX_TEXTS` texts embed in-process.

Only the ``kbdb`` command uses it (:func:`kbdb.embedding.provider.prefer_daemon`): the
Python API and the MCP server live long enough to keep their own session.

Wire format (one connection may carry several requests): each message is a 4-byte
big-endian length and that many bytes. A request is JSON, ``{"v": 1, "op": "embed",
"spec": {...}, "texts": [...]}``, or ``"op": "ping"`` / ``"stop"``. The answer is JSON;
for ``embed`` with ``"ok": true`` a second message follows with ``rows x dims`` float32
values in native byte order.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import struct
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdb._log import log
from kbdb.embedding.base import empty_vectors
from kbdb.embedding.files import ModelFiles
from kbdb.embedding.local import OnnxEmbeddingProvider

if TYPE_CHECKING:
    from kbdb.config import EmbeddingConfig
    from kbdb.embedding.base import ProgressCallback, Vectors

PROTOCOL = 1
ENV_DAEMON = "KBDB_EMBED_DAEMON"  # "0", "false", "no" or "off": embed in-process
ENV_RUNTIME_DIR = "KBDB_RUNTIME_DIR"  # where the sockets live
DEFAULT_IDLE_S = 600
DAEMON_MAX_TEXTS = 64  # a larger call amortizes the model load; no socket copy for it
START_TIMEOUT_S = 30.0  # covers an int8 build on first use (~3 s) on a busy machine
REQUEST_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 2.0
MAX_MESSAGE = 256 << 20
SOCKET_PREFIX = "emb-"
_FALSE = ("0", "false", "no", "off")


class DaemonUnavailable(Exception):
    """The daemon cannot serve this call; the caller embeds in-process. The text says why."""


class _NotRunning(DaemonUnavailable):
    """No daemon answers on the socket (none yet, a stale socket, or one that just died)."""


def env_allows_daemon() -> bool:
    """False when ``KBDB_EMBED_DAEMON`` turns the daemon off."""
    return os.environ.get(ENV_DAEMON, "").strip().lower() not in _FALSE


# -- the private folder ---------------------------------------------------------------------


def runtime_dir(*, create: bool = True) -> Path:
    """The folder of this user's daemon sockets, created (mode 0700) when missing.

    Raises:
        DaemonUnavailable: it is not a folder of this user's that only they can enter.
    """
    env = os.environ.get(ENV_RUNTIME_DIR)
    if env:
        folder = Path(env)
    else:
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        if xdg and os.path.isdir(xdg):
            folder = Path(xdg) / "kbdb"
        else:
            folder = Path(os.environ.get("TMPDIR") or "/tmp") / f"kbdb-{os.getuid()}"
    if create:
        with contextlib.suppress(FileExistsError):
            folder.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(folder, 0o700)
    check_private(folder)
    return folder


def check_private(folder: Path) -> None:
    """Raise :class:`DaemonUnavailable` unless ``folder`` is a real folder (not a link) of
    this user's with no access for group or others: a socket there is reachable by this
    user alone, and nobody else can plant one."""
    try:
        st = os.lstat(folder)
    except OSError as e:
        raise DaemonUnavailable(f"{folder}: {e.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise DaemonUnavailable(f"{folder} is not a folder")
    if st.st_uid != os.getuid():
        raise DaemonUnavailable(f"{folder} belongs to uid {st.st_uid}, not {os.getuid()}")
    if st.st_mode & 0o077:
        raise DaemonUnavailable(
            f"{folder} has mode {stat.S_IMODE(st.st_mode):04o}; it must be 0700 (private)"
        )


# -- what a daemon serves -------------------------------------------------------------------


def file_identity(path: Path) -> list[int]:
    """Size, modification time, inode and device: a file replaced or rewritten differs."""
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev]


def _runtime_identity() -> dict[str, Any]:
    """The code that computes the vectors: the interpreter, kbdb, ONNX Runtime. A daemon
    started before an upgrade of any of them is not asked again."""
    import importlib.machinery

    import kbdb

    here = Path(__file__)
    ort = importlib.machinery.PathFinder.find_spec("onnxruntime")
    ort_file = ort.origin if ort is not None and ort.origin else ""
    return {
        "python": sys.executable,
        "kbdb": [kbdb.__version__, str(here.parent), here.with_name("local.py").stat().st_mtime_ns],
        "onnxruntime": [ort_file, os.stat(ort_file).st_mtime_ns if ort_file else 0],
    }


@dataclass(frozen=True)
class DaemonSpec:
    """Everything that decides a daemon's vectors; two clients share a daemon only when
    their specs are equal."""

    model: str
    tokenizer: str
    model_identity: tuple[int, ...]
    tokenizer_identity: tuple[int, ...]
    model_name: str
    dimensions: int
    threads: int
    batch_size: int
    batch_tokens: int
    quantized: bool
    quantized_dir: str | None
    settings: str  # JSON of the model's ModelSettings: pooling, length, lower-casing
    device: str
    runtime: str  # JSON of _runtime_identity()

    @classmethod
    def of(cls, provider: OnnxEmbeddingProvider, files: ModelFiles) -> DaemonSpec:
        quantized_dir = provider.quantized_dir
        return cls(
            model=str(files.model.resolve()),
            tokenizer=str(files.tokenizer.resolve()),
            model_identity=tuple(file_identity(files.model)),
            tokenizer_identity=tuple(file_identity(files.tokenizer)),
            model_name=provider.model_name(),
            dimensions=provider.dimensions(),
            threads=provider.threads,
            batch_size=provider.batch_size,
            batch_tokens=provider.batch_tokens,
            quantized=provider.quantized,
            quantized_dir=None if quantized_dir is None else str(quantized_dir),
            settings=json.dumps(files.settings.as_dict(), sort_keys=True),
            device=provider.device,
            runtime=json.dumps(_runtime_identity(), sort_keys=True),
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> DaemonSpec:
        raw = json.loads(text)
        raw["model_identity"] = tuple(raw["model_identity"])
        raw["tokenizer_identity"] = tuple(raw["tokenizer_identity"])
        return cls(**raw)

    def socket_name(self) -> str:
        """``emb-<16 hex>.sock``: short, so that the path fits ``sun_path`` (108 bytes)."""
        key = self.to_json().encode()
        return f"{SOCKET_PREFIX}{zlib.crc32(key):08x}{zlib.adler32(key):08x}.sock"


# -- messages -------------------------------------------------------------------------------


def send_message(sock: socket.socket, payload: bytes | memoryview) -> None:
    sock.sendall(struct.pack(">I", len(payload)))
    sock.sendall(payload)


def recv_exact(sock: socket.socket, size: int) -> bytearray:
    """``size`` bytes, or ``EOFError`` when the peer closes first."""
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            raise EOFError(f"connection closed after {got} of {size} bytes")
        got += n
    return buf


def recv_message(sock: socket.socket) -> bytearray:
    (size,) = struct.unpack(">I", recv_exact(sock, 4))
    if size > MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes is larger than {MAX_MESSAGE}")
    return recv_exact(sock, size)


def send_json(sock: socket.socket, obj: dict[str, Any]) -> None:
    send_message(sock, json.dumps(obj, ensure_ascii=False).encode())


def recv_json(sock: socket.socket) -> dict[str, Any]:
    obj = json.loads(recv_message(sock))
    if not isinstance(obj, dict):
        raise ValueError("message is not a JSON object")
    return obj


# -- talking to a daemon --------------------------------------------------------------------


def connect(path: Path, timeout: float = CONNECT_TIMEOUT_S) -> socket.socket:
    """A connection to the daemon socket at ``path``.

    Raises:
        _NotRunning: no socket, or nobody listening on it (stale).
        DaemonUnavailable: the file is not this user's socket.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise _NotRunning(f"no daemon socket {path}") from None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        raise DaemonUnavailable(f"{path} is not a socket of uid {os.getuid()}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        raise _NotRunning(f"nobody listens on {path} (stale socket)") from None
    except OSError as e:
        sock.close()
        raise DaemonUnavailable(f"cannot connect to {path}: {e}") from None
    return sock


def request(path: Path, msg: dict[str, Any], *, timeout: float = REQUEST_TIMEOUT_S) -> Any:
    """Send one request; return the JSON answer (and the vector bytes for ``embed``)."""
    with connect(path) as sock:
        sock.settimeout(timeout)
        try:
            send_json(sock, {"v": PROTOCOL, **msg})
            answer = recv_json(sock)
            if msg.get("op") == "embed" and answer.get("ok"):
                return answer, recv_message(sock)
            return answer
        except (EOFError, ConnectionResetError, BrokenPipeError) as e:
            # The daemon died, or exited idle as we connected: starting one may help.
            raise _NotRunning(f"the daemon closed the connection: {e}") from None
        except (OSError, ValueError) as e:  # timeout, malformed answer
            raise DaemonUnavailable(f"the daemon did not answer properly: {e}") from None


@contextlib.contextmanager
def _flock(path: Path, deadline: float) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``, waited for until ``deadline``."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise DaemonUnavailable(f"{path} stayed locked") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)


def _server_env() -> dict[str, str]:
    """The environment of a daemon: this one, with this kbdb first on the module path."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])  # the folder that holds kbdb/
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = here if not path else here + os.pathsep + path
    env.pop(ENV_DAEMON, None)
    return env


class DaemonClient:
    """Embeds through the daemon serving ``spec``, starting it when none answers.

    Args:
        spec: what the daemon must serve.
        idle_s: a daemon started by this client exits after this many idle seconds.
        directory: the socket folder (default :func:`runtime_dir`).
        server_command: the command that runs a daemon (tests replace it to make a
            start fail); the socket path, idle time and spec are appended as options.
    """

    def __init__(
        self,
        spec: DaemonSpec,
        *,
        idle_s: int = DEFAULT_IDLE_S,
        directory: Path | None = None,
        server_command: Sequence[str] | None = None,
        start_timeout: float = START_TIMEOUT_S,
    ) -> None:
        if not hasattr(socket, "AF_UNIX") or sys.platform == "win32":
            raise DaemonUnavailable("this system has no Unix sockets (or no flock)")
        self.spec = spec
        self.idle_s = idle_s
        self.directory = directory if directory is not None else runtime_dir()
        if directory is not None:
            check_private(directory)
        self.socket = self.directory / spec.socket_name()
        if len(os.fsencode(self.socket)) >= 104:  # sun_path: 108 on Linux, 104 on macOS
            raise DaemonUnavailable(f"socket path too long: {self.socket}")
        self.server_command = list(
            server_command or [sys.executable, "-m", "kbdb.embedding.server", "--detach"]
        )
        self.start_timeout = start_timeout
        self._spec_obj = json.loads(spec.to_json())

    def embed(self, texts: Sequence[str]) -> Vectors:
        """``[len(texts), dims]`` float32 vectors from the daemon.

        Raises:
            DaemonUnavailable: no daemon could serve; embed in-process instead.
        """
        import numpy as np

        rows, dims, data = self.embed_raw(texts)
        return np.frombuffer(data, dtype=np.float32).reshape(rows, dims)

    def embed_raw(self, texts: Sequence[str]) -> tuple[int, int, bytearray]:
        """(rows, dims, the vectors as native float32 bytes, row after row).

        Raises:
            DaemonUnavailable: no daemon could serve; embed in-process instead.
        """
        msg = {"op": "embed", "spec": self._spec_obj, "texts": list(texts)}
        try:
            answer = request(self.socket, msg)
        except _NotRunning as e:
            log.debug("embedding daemon: %s; starting one", e)
            self.start()
            answer = request(self.socket, msg)
        if not isinstance(answer, tuple):
            raise DaemonUnavailable(f"the daemon refused: {answer.get('error', answer)}")
        header, data = answer
        rows, dims = header.get("rows"), header.get("dims")
        if rows != len(texts) or dims != self.spec.dimensions or len(data) != rows * dims * 4:
            raise DaemonUnavailable(f"the daemon answered {rows} x {dims} for {len(texts)} texts")
        return rows, dims, data

    def ping(self) -> dict[str, Any]:
        answer = request(self.socket, {"op": "ping"}, timeout=CONNECT_TIMEOUT_S)
        assert isinstance(answer, dict)
        answer.pop("ok", None)
        return answer

    def running(self) -> bool:
        """Whether a daemon accepts connections on this spec's socket."""
        try:
            connect(self.socket).close()
        except DaemonUnavailable:
            return False
        return True

    def start(self) -> None:
        """Start the daemon unless one runs; return once it accepts connections.

        Two clients that start at once take turns on ``<socket>.start``: the second finds
        the first one's daemon and starts none.

        Raises:
            DaemonUnavailable: it did not come up within ``start_timeout`` (the reason
                the daemon gave, when it gave one).
        """
        deadline = time.monotonic() + self.start_timeout
        with _flock(self.socket.with_suffix(".start"), deadline):
            if self.running():
                return
            self._spawn(deadline)

    def _spawn(self, deadline: float) -> None:
        import select
        import subprocess

        cmd = [
            *self.server_command,
            "--socket",
            str(self.socket),
            "--idle",
            str(self.idle_s),
            "--spec",
            self.spec.to_json(),
        ]
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env=_server_env(),
                start_new_session=True,  # a Ctrl-C at the terminal is not meant for it
            )
        except OSError as e:
            raise DaemonUnavailable(f"cannot start the daemon: {e}") from None
        assert proc.stdout is not None
        line = b""
        try:
            # The daemon writes one line, "ready" or "error: why", then lets go of the pipe.
            fd = proc.stdout.fileno()
            while not line.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise DaemonUnavailable(f"the daemon did not start in {self.start_timeout} s")
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                line += chunk
        finally:
            proc.stdout.close()
            # With --detach the process we started forks the daemon and exits at once;
            # without it (tests) it is the daemon, still running: not waited for then.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        text = line.decode(errors="replace").strip()
        if text != "ready":
            raise DaemonUnavailable(text or "the daemon exited before it was ready")
        log.debug("embedding daemon started in %.0f ms", 1000 * (time.perf_counter() - t0))


# -- the provider the kbdb command uses -----------------------------------------------------


class DaemonEmbeddingProvider(OnnxEmbeddingProvider):
    """``OnnxEmbeddingProvider`` whose small calls go to the warm daemon.

    ``load()`` only resolves (and on first use downloads) the model: the session lives in
    the daemon, and in this process only when the daemon cannot serve. The first call
    that the daemon cannot serve turns the daemon off for the rest of this provider's
    life (one failed start is enough waiting).
    """

    def __init__(
        self,
        files: ModelFiles | Callable[[], ModelFiles],
        *,
        idle_s: int = DEFAULT_IDLE_S,
        directory: Path | None = None,
        server_command: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(files, **kwargs)
        self._idle_s = idle_s
        self._directory = directory
        self._server_command = server_command
        self._client: DaemonClient | None = None
        self._daemon_off = False
        self.last_route = ""  # "daemon" or "in-process": where the last call embedded

    @classmethod
    def from_config(
        cls,
        cfg: EmbeddingConfig,
        *,
        kbdir: Path | None = None,
        cache_dir: Path | None = None,
        progress: ProgressCallback | None = None,
    ) -> DaemonEmbeddingProvider:
        kwargs = cls.config_kwargs(cfg, kbdir=kbdir, cache_dir=cache_dir, progress=progress)
        return cls(idle_s=cfg.daemon_idle, **kwargs)

    def load(self) -> ModelFiles:
        """Resolve the model files (downloading them on first use); the daemon, or the
        first in-process call, loads the session."""
        return self.files()

    def client(self) -> DaemonClient:
        """The client for this provider's daemon (built on first use)."""
        if self._client is None:
            self._client = DaemonClient(
                DaemonSpec.of(self, self.files()),
                idle_s=self._idle_s,
                directory=self._directory,
                server_command=self._server_command,
            )
        return self._client

    def embed_raw(self, texts: Sequence[str]) -> Vectors:
        """As :meth:`OnnxEmbeddingProvider.embed_raw`, through the daemon for up to
        :data:`DAEMON_MAX_TEXTS` texts (``embed`` and ``embed_query`` put the prompts on
        here, in the client)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        if len(texts) == 0:
            return empty_vectors(self.dimensions())
        client = self._usable_client(len(texts))
        if client is not None:
            try:
                out = client.embed(texts)
                self.last_route = "daemon"
                return out
            except (DaemonUnavailable, OSError) as e:  # OSError: a folder or file we cannot use
                self._give_up(e)
        self.last_route = "in-process"
        return super().embed_raw(texts)

    def embed_query(self, text: str) -> Any:
        """One query's vector (after the query prompt) as a float32 buffer: a
        ``memoryview`` from the daemon (numpy is not imported for it), else a row of the
        in-process ``embed_raw``."""
        text = self.settings().query_prompt + text
        client = self._usable_client(1)
        if client is not None:
            try:
                _rows, _dims, data = client.embed_raw([text])
                self.last_route = "daemon"
                return memoryview(data).cast("f")
            except (DaemonUnavailable, OSError) as e:  # OSError: a folder or file we cannot use
                self._give_up(e)
        self.last_route = "in-process"
        return super().embed_raw([text])[0]

    def _usable_client(self, count: int) -> DaemonClient | None:
        if count > DAEMON_MAX_TEXTS or self._daemon_off:
            return None
        try:
            return self.client()
        except (DaemonUnavailable, OSError) as e:
            self._give_up(e)
            return None

    def _give_up(self, why: Exception) -> None:
        log.debug("embedding daemon unavailable, embedding in this process: %s", why)
        self._daemon_off = True

    def __repr__(self) -> str:
        return "Daemon" + super().__repr__()


# -- every daemon of this user --------------------------------------------------------------


def list_sockets(directory: Path | None = None) -> list[Path]:
    """The daemon sockets in the runtime folder (running or stale)."""
    try:
        folder = directory if directory is not None else runtime_dir(create=False)
    except DaemonUnavailable:
        return []
    return sorted(folder.glob(f"{SOCKET_PREFIX}*.sock"))


def status(directory: Path | None = None) -> list[dict[str, Any]]:
    """One entry per socket: the daemon's own report, or ``{"socket", "running": False}``."""
    out: list[dict[str, Any]] = []
    for path in list_sockets(directory):
        try:
            answer = request(path, {"op": "ping"}, timeout=CONNECT_TIMEOUT_S)
        except DaemonUnavailable as e:
            out.append({"socket": str(path), "running": False, "error": str(e)})
            continue
        answer.pop("ok", None)
        out.append({"socket": str(path), "running": True, **answer})
    return out


def stop_all(directory: Path | None = None, *, wait_s: float = 5.0) -> list[int]:
    """Ask every daemon in the runtime folder to exit, wait for them, and remove stale
    sockets. Returns the pids of the daemons that were stopped."""
    pids: list[int] = []
    for path in list_sockets(directory):
        try:
            answer = request(path, {"op": "stop"}, timeout=CONNECT_TIMEOUT_S)
            if isinstance(answer, dict) and isinstance(answer.get("pid"), int):
                pids.append(answer["pid"])
        except _NotRunning:
            with contextlib.suppress(OSError):
                path.unlink()
        except DaemonUnavailable as e:
            log.debug("embedding daemon %s: %s", path, e)
    deadline = time.monotonic() + wait_s
    for pid in pids:
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.01)
    return pids


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return True  # no /proc: kill(0) said it exists


def reap(directory: Path, *, wait_s: float = 5.0) -> list[int]:
    """Stop every daemon in ``directory`` and kill (SIGKILL) any that has not exited after
    ``wait_s``: for tests and benchmarks, which must leave nothing running. Returns the
    pids that were running."""
    import signal

    pids = [d["pid"] for d in status(directory) if d.get("running")]
    stop_all(directory, wait_s=wait_s)
    for pid in pids:
        if pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return pids
