"""Progress bars: on a terminal only, never when piped or under --quiet/--json (SPEC §11)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli.conftest import Kbdb, cli_env, write

pty = pytest.importorskip("pty")


def learn_with_tty_stderr(cwd: Path, *args: str) -> tuple[int, str]:
    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "kbdb.cli", *args],
            stdout=subprocess.PIPE,
            stderr=slave,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=cli_env(TERM="xterm"),
            timeout=120,
            check=False,
        )
    finally:
        os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other end is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")


def test_progress_on_a_terminal_and_not_when_quiet(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    for i in range(40):
        write(tmp_path, f"notes/n{i:02}.md", f"# Note {i}\n\nSome words about item {i}.\n")
    code, err = learn_with_tty_stderr(tmp_path, "learn", "notes")
    assert code == 0
    assert "learning" in err and "files/s" in err
    write(tmp_path, "more/m.md", "# More\n\nText.\n")
    for flag in ("--quiet", "--json"):
        code, err = learn_with_tty_stderr(tmp_path, flag, "learn", "more")
        assert code == 0 and "learning" not in err, flag
