"""One process of the concurrency soak (``test_soak.py``).

    python -m tests.reliability.soak_worker ROLE KB LOG SECONDS SEED

Roles:
- ``api-writer``: learns documents through the Python API (and forgets some of its own);
- ``cli-writer``: learns documents by running ``kbdb learn -`` once per document;
- ``api-reader`` / ``cli-reader`` / ``mcp-reader``: search the documents the writers
  announced, through the API, ``kbdb --json search`` or the ``search`` tool of ``kbdb mcp``
  (a real MCP client over stdio), and check that each is seen whole or not at all.

Every document has ``SECTIONS`` sections that all carry the document's marker word, so a
search for the marker must return 0 or ``SECTIONS`` hits, never some. Writers log
``{"intent": docid, "op": ...}`` before and ``{"ack": docid}`` after each write (fsync'd),
and ``{"error": code}`` for each failure; readers log their counts at the end.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SECTIONS = 4


def marker(role_seed: int, n: int) -> str:
    """A unique letters-only word (the analyzer keeps it whole) ending in ``q``."""
    code = ""
    for value in (role_seed, n):
        for _ in range(4):
            value, r = divmod(value, 20)
            code += "bcdfghjklmnpqstvwxyz"[r]
    return f"sk{code}q"


def document(word: str) -> str:
    parts = ["# Soak document\n"]  # the marker only in the SECTIONS sections below
    for i in range(SECTIONS):
        parts.append(f"## Part {i}\n\nSection {i} of the soak document marked {word}.\n")
    return "\n".join(parts)


class Log:
    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, entry: dict[str, Any]) -> None:
        os.write(self._fd, (json.dumps(entry) + "\n").encode())
        os.fsync(self._fd)


def announced(logs: list[Path]) -> tuple[list[str], set[str], set[str]]:
    """(every announced marker, the acknowledged learns, the acknowledged forgets)."""
    words: list[str] = []
    learned: set[str] = set()
    forgotten: set[str] = set()
    for path in logs:
        if not path.exists():
            continue
        ops: dict[str, str] = {}
        for line in path.read_text().splitlines():
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "intent" in e:
                ops[e["intent"]] = e["op"]
                if e["op"] == "learn":
                    words.append(e["intent"])
            elif "ack" in e:
                (learned if ops.get(e["ack"]) == "learn" else forgotten).add(e["ack"])
    return words, learned, forgotten


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kbdb.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def error_code(done: subprocess.CompletedProcess[str]) -> str:
    """The ``code`` of the ``{error, code}`` body that ``--json`` prints on failure."""
    try:
        return str(json.loads(done.stdout)["code"])
    except (json.JSONDecodeError, KeyError, TypeError):
        return "OTHER: " + (done.stderr.strip() or done.stdout.strip())[-300:]


def writer(role: str, kb_path: Path, log: Log, deadline: float, seed: int) -> None:
    from kbdb import KnowledgeBase
    from kbdb.errors import KbdbError

    rng = random.Random(seed)
    kb = KnowledgeBase.open(kb_path) if role == "api-writer" else None
    mine: list[str] = []
    n = 0
    while time.monotonic() < deadline:
        if kb is not None and mine and rng.random() < 0.2:
            word = mine.pop(rng.randrange(len(mine)))
            log.write({"intent": word, "op": "forget"})
            while True:
                try:
                    kb.forget(docid=word)
                    break
                except KbdbError as e:
                    log.write({"error": e.code})
                    if e.code != "KB_LOCKED":
                        return
            log.write({"ack": word})
            continue
        word = marker(seed, n)
        n += 1
        log.write({"intent": word, "op": "learn"})
        while True:
            if kb is not None:
                try:
                    kb.learn(document(word), docid=word)
                    break
                except KbdbError as e:
                    log.write({"error": e.code})
                    if e.code != "KB_LOCKED":
                        return
            else:
                done = cli(
                    "--db",
                    str(kb_path),
                    "--json",
                    "learn",
                    "-",
                    "--docid",
                    word,
                    stdin=document(word),
                )
                if done.returncode == 0:
                    break
                code = error_code(done)
                log.write({"error": code})
                if code != "KB_LOCKED":
                    return
        log.write({"ack": word})
        mine.append(word)


def reader(
    role: str, kb_path: Path, log: Log, deadline: float, seed: int, logs: list[Path]
) -> None:
    from kbdb import KnowledgeBase
    from kbdb.errors import KbdbError

    rng = random.Random(seed)
    kb = KnowledgeBase.open(kb_path) if role == "api-reader" else None
    checks = 0
    partial: list[dict[str, Any]] = []
    errors: dict[str, int] = {}
    while time.monotonic() < deadline:
        words, _, _ = announced(logs)
        if not words:
            time.sleep(0.05)
            continue
        word = rng.choice(words[-20:]) if rng.random() < 0.7 else rng.choice(words)
        if kb is not None:
            try:
                hits = len(kb.search(word, limit=20).items)
            except KbdbError as e:
                errors[e.code] = errors.get(e.code, 0) + 1
                continue
        else:
            done = cli("--db", str(kb_path), "--json", "search", word, "--limit", "20")
            if done.returncode != 0:
                code = error_code(done)
                errors[code] = errors.get(code, 0) + 1
                continue
            hits = len(json.loads(done.stdout)["items"])
        checks += 1
        if hits not in (0, SECTIONS):
            partial.append({"word": word, "hits": hits})
    log.write({"checks": checks, "partial": partial, "errors": errors})


def mcp_reader(kb_path: Path, log: Log, deadline: float, seed: int, logs: list[Path]) -> None:
    """The reader through a real MCP client: ``kbdb mcp`` in a subprocess, over stdio."""
    import asyncio

    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def run() -> None:
        rng = random.Random(seed)
        checks = 0
        partial: list[dict[str, Any]] = []
        errors: dict[str, int] = {}
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "kbdb.cli", "mcp", "--db", str(kb_path)],
            env=dict(os.environ),
        )
        with open(os.devnull, "w") as devnull:
            async with (
                stdio_client(params, errlog=devnull) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                while time.monotonic() < deadline:
                    words, _, _ = announced(logs)
                    if not words:
                        await asyncio.sleep(0.05)
                        continue
                    word = rng.choice(words[-20:]) if rng.random() < 0.7 else rng.choice(words)
                    res = await session.call_tool("search", {"query": word, "limit": 20})
                    body = res.structured_content or {}
                    if res.is_error:
                        code = str(body.get("code", "OTHER"))
                        errors[code] = errors.get(code, 0) + 1
                        continue
                    checks += 1
                    hits = len(body["items"])
                    if hits not in (0, SECTIONS):
                        partial.append({"word": word, "hits": hits})
        log.write({"checks": checks, "partial": partial, "errors": errors})

    asyncio.run(run())


def main() -> int:
    role, kb, log_path, seconds, seed = sys.argv[1:6]
    deadline = time.monotonic() + float(seconds)
    log = Log(Path(log_path))
    if role.endswith("writer"):
        writer(role, Path(kb), log, deadline, int(seed))
    else:
        logs = sorted(Path(log_path).parent.glob("*-writer-*.jsonl"))
        if role == "mcp-reader":
            mcp_reader(Path(kb), log, deadline, int(seed), logs)
        else:
            reader(role, Path(kb), log, deadline, int(seed), logs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
