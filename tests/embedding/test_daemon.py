"""The embedding daemon, started for real on a Unix socket with the real model.

Every test uses a private socket folder of its own (short, under /tmp: a socket path must
fit in 104 bytes) and stops every daemon it started; no test leaves a process behind.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kbdb.config import EmbeddingConfig
from kbdb.embedding import ModelFiles, OnnxEmbeddingProvider, make_provider
from kbdb.embedding.base import embed_query
from kbdb.embedding.daemon import (
    ENV_DAEMON,
    ENV_RUNTIME_DIR,
    DaemonClient,
    DaemonEmbeddingProvider,
    DaemonSpec,
    DaemonUnavailable,
    list_sockets,
    pid_alive,
    reap,
    request,
    runtime_dir,
    status,
    stop_all,
)
from kbdb.embedding.provider import prefer_daemon

LONG = " ".join(["the container runtime restarts a crashed service"] * 60)  # > 256 tokens
TEXTS = [
    "how do I copy files out of a running container",
    "",
    "naïve café — 東京 🚀",
    LONG,
    "prune unused images",
]


@pytest.fixture
def rundir() -> Iterator[Path]:
    """A private socket folder; every daemon in it is stopped at the end of the test."""
    folder = Path(tempfile.mkdtemp(prefix="kbdbd-", dir="/tmp"))
    try:
        yield folder
    finally:
        reap(folder)
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()


def daemon_provider(files: ModelFiles, rundir: Path, **kw: object) -> DaemonEmbeddingProvider:
    return DaemonEmbeddingProvider(files, directory=rundir, threads=1, **kw)  # type: ignore[arg-type]


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_vectors_are_those_of_the_in_process_provider(
    model_files: ModelFiles, rundir: Path
) -> None:
    ref = OnnxEmbeddingProvider(model_files, threads=1)
    provider = daemon_provider(model_files, rundir)
    want = ref.embed(TEXTS)
    got = provider.embed(TEXTS)
    assert provider.last_route == "daemon"
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 384)
    assert np.array_equal(got, want)  # bit for bit, not merely close
    for i, text in enumerate(TEXTS):  # one per call, as a query is embedded
        assert np.array_equal(provider.embed([text])[0], want[i])
        row = embed_query(provider, text)
        assert isinstance(row, memoryview) and row.format == "f"  # no numpy needed for it
        assert np.array_equal(np.frombuffer(row, dtype=np.float32), want[i])
    assert provider.embed([]).shape == (0, 384)
    with pytest.raises(TypeError):
        provider.embed("one string")  # type: ignore[arg-type]
    (info,) = status(rundir)
    assert info["running"] and info["requests"] == 1 + 2 * len(TEXTS)
    assert info["threads"] == 1 and info["model"] == str(model_files.model.resolve())
    # a call over DAEMON_MAX_TEXTS embeds in this process, with the same vectors
    many = [f"sentence number {i}" for i in range(65)]
    assert np.array_equal(provider.embed(many), ref.embed(many))
    assert provider.last_route == "in-process"


def test_the_socket_and_its_folder_are_private(model_files: ModelFiles, rundir: Path) -> None:
    provider = daemon_provider(model_files, rundir)
    provider.embed(["x"])
    (sock,) = list_sockets(rundir)
    st = os.lstat(sock)
    assert stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid()
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(rundir).st_mode) == 0o700


def test_runtime_dir_is_created_private_and_an_open_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_files: ModelFiles
) -> None:
    monkeypatch.setenv(ENV_RUNTIME_DIR, str(tmp_path / "new" / "run"))
    made = runtime_dir()
    assert made == tmp_path / "new" / "run"
    assert stat.S_IMODE(os.lstat(made).st_mode) == 0o700
    for mode in (0o755, 0o770, 0o701):
        made.chmod(mode)
        with pytest.raises(DaemonUnavailable, match="must be 0700"):
            runtime_dir()
    made.chmod(0o700)
    link = tmp_path / "link"
    link.symlink_to(made)
    monkeypatch.setenv(ENV_RUNTIME_DIR, str(link))
    with pytest.raises(DaemonUnavailable, match="not a folder"):
        runtime_dir()
    # the provider refuses the folder and embeds in-process: same vectors, no daemon
    made.chmod(0o755)
    monkeypatch.setenv(ENV_RUNTIME_DIR, str(made))
    provider = DaemonEmbeddingProvider(model_files, threads=1)
    ref = OnnxEmbeddingProvider(model_files, threads=1)
    assert np.array_equal(provider.embed(TEXTS[:2]), ref.embed(TEXTS[:2]))
    assert provider.last_route == "in-process"
    assert not list(made.iterdir())


def test_idle_daemon_exits_and_removes_its_socket(model_files: ModelFiles, rundir: Path) -> None:
    provider = daemon_provider(model_files, rundir, idle_s=1)
    provider.embed(["x"])
    (sock,) = list_sockets(rundir)
    pid = status(rundir)[0]["pid"]
    t0 = time.monotonic()
    assert wait_gone(pid), "the daemon did not exit when idle"
    assert 0.5 < time.monotonic() - t0 < 5
    assert not sock.exists()
    # the next call starts a new one
    provider.embed(["y"])
    assert provider.last_route == "daemon" and status(rundir)[0]["pid"] != pid


def test_a_stale_socket_is_replaced(model_files: ModelFiles, rundir: Path) -> None:
    provider = daemon_provider(model_files, rundir)
    path = provider.client().socket
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # a socket file nobody listens on, as a killed daemon leaves
    dead.close()
    assert path.exists()
    want = OnnxEmbeddingProvider(model_files, threads=1).embed(["stale"])
    assert np.array_equal(provider.embed(["stale"]), want)
    assert provider.last_route == "daemon"


def test_a_killed_daemon_is_restarted(model_files: ModelFiles, rundir: Path) -> None:
    provider = daemon_provider(model_files, rundir)
    provider.embed(["x"])
    pid = status(rundir)[0]["pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_gone(pid)
    assert list_sockets(rundir)  # it could not remove its socket
    again = daemon_provider(model_files, rundir)
    again.embed(["x"])
    assert again.last_route == "daemon"
    (info,) = status(rundir)
    assert info["running"] and info["pid"] != pid


def test_sigterm_exits_cleanly(model_files: ModelFiles, rundir: Path) -> None:
    provider = daemon_provider(model_files, rundir)
    provider.embed(["x"])
    (sock,) = list_sockets(rundir)
    pid = status(rundir)[0]["pid"]
    os.kill(pid, signal.SIGTERM)
    assert wait_gone(pid)
    assert not sock.exists()


def test_a_daemon_that_dies_mid_request_means_in_process(
    model_files: ModelFiles, rundir: Path
) -> None:
    """A socket that accepts and hangs up (a daemon crashing on a request) is retried once,
    then the provider embeds in-process for good: the vectors are the same either way."""
    provider = daemon_provider(model_files, rundir)
    path = provider.client().socket
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    import threading

    def hang_up() -> None:
        for _ in range(3):
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.close()

    thread = threading.Thread(target=hang_up, daemon=True)
    thread.start()
    try:
        got = provider.embed(["crash"])
    finally:
        listener.close()
        thread.join(5)
    assert provider.last_route == "in-process"
    assert np.array_equal(got, OnnxEmbeddingProvider(model_files, threads=1).embed(["crash"]))
    provider.embed(["later"])  # no second wait on a daemon that failed once
    assert provider.last_route == "in-process"


@pytest.mark.parametrize(
    "script",
    [
        "import sys; print('error: no model here'); sys.exit(1)",
        "import sys; sys.exit(3)",  # exits without a word
    ],
)
def test_a_daemon_that_cannot_start_means_in_process(
    model_files: ModelFiles, rundir: Path, script: str
) -> None:
    provider = daemon_provider(model_files, rundir, server_command=[sys.executable, "-c", script])
    with pytest.raises(DaemonUnavailable):
        provider.client().start()
    got = provider.embed(TEXTS[:3])
    assert provider.last_route == "in-process"
    assert np.array_equal(got, OnnxEmbeddingProvider(model_files, threads=1).embed(TEXTS[:3]))
    assert not list_sockets(rundir)


def test_the_daemon_reports_a_model_it_cannot_load(tmp_path: Path, rundir: Path) -> None:
    broken = tmp_path / "model"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not an onnx model")
    (broken / "tokenizer.json").write_text("{}")
    files = ModelFiles(model=broken / "model.onnx", tokenizer=broken / "tokenizer.json")
    client = DaemonClient(DaemonSpec.of(OnnxEmbeddingProvider(files), files), directory=rundir)
    with pytest.raises(DaemonUnavailable, match="error: EmbeddingFailedError"):
        client.start()
    assert not list_sockets(rundir)


def test_another_model_gets_another_daemon(model_files: ModelFiles, rundir: Path) -> None:
    one = daemon_provider(model_files, rundir)
    two = DaemonEmbeddingProvider(model_files, directory=rundir, threads=2)
    for provider, threads in ((one, 1), (two, 2)):
        want = OnnxEmbeddingProvider(model_files, threads=threads).embed(TEXTS)
        assert np.array_equal(provider.embed(TEXTS), want)
    found = status(rundir)
    assert len(found) == 2 and len({d["pid"] for d in found}) == 2
    assert sorted(d["threads"] for d in found) == [1, 2]


def test_a_request_for_another_spec_is_refused(model_files: ModelFiles, rundir: Path) -> None:
    provider = daemon_provider(model_files, rundir)
    provider.embed(["x"])
    spec = json.loads(provider.client().spec.to_json())
    spec["threads"] = 7
    answer = request(provider.client().socket, {"op": "embed", "spec": spec, "texts": ["x"]})
    assert isinstance(answer, dict) and answer["ok"] is False and "another model" in answer["error"]
    bad = request(provider.client().socket, {"op": "launch"})
    assert isinstance(bad, dict) and bad["ok"] is False


def test_two_processes_starting_at_once_share_one_daemon(
    model_files: ModelFiles, rundir: Path
) -> None:
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from kbdb.embedding import ModelFiles\n"
        "from kbdb.embedding.daemon import DaemonEmbeddingProvider\n"
        "files = ModelFiles(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "p = DaemonEmbeddingProvider(files, directory=Path(sys.argv[3]), threads=1)\n"
        "while time.time() < float(sys.argv[4]):\n"
        "    time.sleep(0.001)\n"
        "v = p.embed(['together'])\n"
        "print(p.last_route, p.client().ping()['pid'], v[0, :4].tolist())\n"
    )
    start_at = str(time.time() + 1.5)  # both past their imports, then go at once
    args = [str(model_files.model), str(model_files.tokenizer), str(rundir), start_at]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, env=env
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60)[0].split(maxsplit=2) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert [o[0] for o in outs] == ["daemon", "daemon"]
    assert outs[0][1] == outs[1][1]  # the same daemon pid
    assert outs[0][2] == outs[1][2]
    assert len(list_sockets(rundir)) == 1 and len(status(rundir)) == 1


def test_stop_all_stops_every_daemon(model_files: ModelFiles, rundir: Path) -> None:
    daemon_provider(model_files, rundir).embed(["x"])
    DaemonEmbeddingProvider(model_files, directory=rundir, threads=2).embed(["x"])
    pids = [d["pid"] for d in status(rundir)]
    assert sorted(stop_all(rundir)) == sorted(pids)
    assert not any(pid_alive(p) for p in pids)
    assert not list_sockets(rundir)


def test_make_provider_uses_the_daemon_only_when_asked(
    model_files: ModelFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = EmbeddingConfig(provider="onnx", model_path=str(model_files.model.parent))
    assert type(make_provider(cfg, kbdir=None)) is OnnxEmbeddingProvider  # the Python API
    with prefer_daemon():
        provider = make_provider(cfg, kbdir=None)
        assert isinstance(provider, DaemonEmbeddingProvider)
        assert provider.client().idle_s == cfg.daemon_idle == 600
        off = EmbeddingConfig(provider="onnx", daemon=False)
        assert type(make_provider(off, kbdir=None)) is OnnxEmbeddingProvider
        monkeypatch.setenv(ENV_DAEMON, "0")
        assert type(make_provider(cfg, kbdir=None)) is OnnxEmbeddingProvider
    monkeypatch.delenv(ENV_DAEMON)
    assert type(make_provider(cfg, kbdir=None)) is OnnxEmbeddingProvider  # scope ended


def test_a_runtime_dir_that_cannot_be_made_means_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_files: ModelFiles
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(ENV_RUNTIME_DIR, str(blocker / "run"))
    provider = DaemonEmbeddingProvider(model_files, threads=1)
    got = embed_query(provider, "x")
    assert provider.last_route == "in-process"
    want = OnnxEmbeddingProvider(model_files, threads=1).embed(["x"])[0]
    assert np.array_equal(np.asarray(got), want)


def test_a_replaced_model_file_gets_another_daemon(tmp_path: Path) -> None:
    """The socket name (and the spec each request carries) follows the files' identity:
    a model rewritten in place is served by a new daemon, never by the old session."""
    (tmp_path / "model.onnx").write_bytes(b"one")
    (tmp_path / "tokenizer.json").write_text("{}")
    files = ModelFiles(model=tmp_path / "model.onnx", tokenizer=tmp_path / "tokenizer.json")

    def name(**kw: object) -> str:
        provider = OnnxEmbeddingProvider(files, **kw)  # type: ignore[arg-type]
        return DaemonSpec.of(provider, files).socket_name()

    first = name(threads=1)
    assert name(threads=1) == first  # stable
    assert name(threads=2) != first
    assert name(threads=1, quantized=True) != first
    os.utime(files.model, ns=(1, 1))
    assert name(threads=1) != first
    spec = DaemonSpec.of(OnnxEmbeddingProvider(files, threads=1), files)
    assert DaemonSpec.from_json(spec.to_json()) == spec
