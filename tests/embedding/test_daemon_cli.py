"""``kbdb search`` through the embedding daemon, as a user runs it: separate processes,
the real model, a real socket. The results must be those of in-process embedding."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.conftest import cli_env

from kbdb.embedding.daemon import ENV_DAEMON, ENV_RUNTIME_DIR, list_sockets, pid_alive, reap

QUERIES = ("database rationale", "redis session cache", "where do tokens expire")


@pytest.fixture
def rundir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="kbdbc-", dir="/tmp"))
    try:
        yield folder
    finally:
        reap(folder)
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()


@pytest.fixture
def facts(tmp_path: Path, model_dir: Path) -> Path:
    from tests.test_hybrid import facts_kb

    kb = facts_kb(tmp_path / "kb", model_dir)
    kb.close()
    return tmp_path / "kb"


def kbdb(kb: Path, rundir: Path, *args: str, **env: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "kbdb.cli", "--db", str(kb), "--json", *args],
        capture_output=True,
        text=True,
        env=cli_env(**{ENV_RUNTIME_DIR: str(rundir), **env}),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_search_through_the_daemon_equals_in_process(facts: Path, rundir: Path) -> None:
    for query in QUERIES:
        for mode in ("hybrid", "vector"):
            args = ("search", query, "--mode", mode, "--explain")
            warm = kbdb(facts, rundir, *args)
            cold = kbdb(facts, rundir, *args, **{ENV_DAEMON: "0"})
            assert warm == cold, (query, mode)  # scores and cosines included
            assert warm["retrieval_method"] == mode
    (daemon,) = kbdb(facts, rundir, "embed-daemon", "status")["daemons"]
    assert daemon["running"] and daemon["requests"] == len(QUERIES) * 2
    stopped = kbdb(facts, rundir, "embed-daemon", "stop")["stopped"]
    assert stopped == [daemon["pid"]] and not pid_alive(daemon["pid"])
    assert kbdb(facts, rundir, "embed-daemon", "status") == {"daemons": []}


def test_a_lexical_search_starts_no_daemon(facts: Path, rundir: Path) -> None:
    res = kbdb(facts, rundir, "search", "redis")
    assert res["retrieval_method"] == "lexical"
    assert not list_sockets(rundir)


def test_daemon_false_in_worker_toml_embeds_in_process(facts: Path, rundir: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "kbdb.cli", "--db", str(facts), "config", "set"]
        + ["embedding.daemon", "false"],
        check=True,
        capture_output=True,
        env=cli_env(),
    )
    res = kbdb(facts, rundir, "search", "database rationale", "--mode", "hybrid")
    assert res["items"][0]["docids"] == ["db"]
    assert not list_sockets(rundir)


def test_embed_daemon_start_then_stop(facts: Path, rundir: Path) -> None:
    started = kbdb(facts, rundir, "embed-daemon", "start")
    assert pid_alive(started["pid"]) and Path(started["socket"]).parent == rundir
    again = kbdb(facts, rundir, "embed-daemon", "start")
    assert again["pid"] == started["pid"]  # already running: not started twice
    kbdb(facts, rundir, "search", "database rationale", "--mode", "vector")
    (daemon,) = kbdb(facts, rundir, "embed-daemon", "status")["daemons"]
    assert daemon["pid"] == started["pid"] and daemon["requests"] == 1
    assert kbdb(facts, rundir, "embed-daemon", "stop")["stopped"] == [started["pid"]]


PROBE = """
import sys
from kbdb.cli import main
code = main(sys.argv[1:])
sys.stderr.write("\\nMODULES=" + ",".join(sorted(sys.modules)) + "\\n")
sys.exit(code)
"""


def test_a_search_served_by_the_daemon_loads_no_model_code(facts: Path, rundir: Path) -> None:
    """What keeps a warm hybrid search cheap: neither ONNX Runtime, tokenizers nor numpy
    (55 ms of imports on its own) is loaded by the kbdb process."""
    args = ["--db", str(facts), "--json", "search", "database rationale", "--mode", "hybrid"]
    kbdb(facts, rundir, *args[3:])  # starts the daemon
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env=cli_env(**{ENV_RUNTIME_DIR: str(rundir)}),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["retrieval_method"] == "hybrid"
    modules = proc.stderr.strip().splitlines()[-1].removeprefix("MODULES=").split(",")
    roots = {m.split(".")[0] for m in modules}
    assert not roots & {"numpy", "onnxruntime", "tokenizers", "httpx"}, roots
    assert "kbdb.embedding.daemon" in modules and "kbdb.embedding.api" not in modules
