"""Run the real ``kbdb`` (``python -m kbdb.cli``) in a subprocess, in a temporary folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PYTHON_SRC = Path(__file__).resolve().parents[2] / "python"


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


Kbdb = Callable[..., Run]


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for a run: no KBDB_DB, the source tree importable, wide output."""
    env = {k: v for k, v in os.environ.items() if k != "KBDB_DB"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(PYTHON_SRC)]))
    env.update(COLUMNS="160", NO_COLOR="1", PYTHONIOENCODING="utf-8", **extra)
    return env


def python_c(
    code: str, *args: str, cwd: Path, launcher: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``python -c CODE ARGS`` in a fresh process, in ``cwd``, with the CLI's environment;
    ``launcher``: a command that execs it (``sh -c 'exec "$0" "$@" >&-'``)."""
    return subprocess.run(
        [*launcher, sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=cli_env(),
        timeout=120,
        check=False,
    )


@pytest.fixture
def kbdb(tmp_path: Path) -> Kbdb:
    """``kbdb(*args, input=None, cwd=tmp_path, env=None)`` → Run(code, out, err)."""

    def run(
        *args: str,
        input: str | bytes | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> Run:
        data = input.encode("utf-8") if isinstance(input, str) else input
        proc = subprocess.run(
            [sys.executable, "-m", "kbdb.cli", *args],
            input=data if data is not None else b"",
            capture_output=True,
            cwd=cwd or tmp_path,
            env=cli_env(**(env or {})),
            timeout=120,
            check=False,
        )
        return Run(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"))

    return run


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


POOL_DOC = """# Database

We chose Postgres because of JSONB support.

## Connection pool

The connection pool keeps 20 connections open; raise it for batch jobs.

```python
pool = create_pool(size=20)
```
"""

AUTH_DOC = """# Authentication

Tokens expire after one hour. Refresh them with the refresh endpoint.
"""


@pytest.fixture
def learned(tmp_path: Path, kbdb: Kbdb) -> Path:
    """A knowledge base in tmp_path with docs/db.md and docs/auth.md learned."""
    assert kbdb("init").code == 0
    write(tmp_path, "docs/db.md", POOL_DOC)
    write(tmp_path, "docs/auth.md", AUTH_DOC)
    res = kbdb("learn", "docs", "--tags", "design,backend")
    assert res.code == 0, res.err
    return tmp_path
