"""The concurrency soak (SPEC §13): writers through the API and the CLI, readers
through the API, the CLI and an MCP server, all on one knowledge base for a bounded time.

- Writers may wait for the lock or get ``KB_LOCKED`` after ``KBDB_LOCK_TIMEOUT`` and retry;
  no other error is allowed.
- Readers never see a partly learned document: every document's sections carry its marker
  word, and a search for it returns all of them or none.
- At the end the knowledge base is the union of the acknowledged writes: every learned
  document whole, every forgotten one gone, and ``check`` ok.

``make test`` runs it for a few seconds; ``make test-slow`` for two minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.reliability.soak_worker import SECTIONS, announced

from kbdb import KnowledgeBase

REPO = Path(__file__).resolve().parents[2]
ROLES = ("api-writer", "api-writer", "cli-writer", "api-reader", "cli-reader", "mcp-reader")


def soak(tmp_path: Path, seconds: float, lock_timeout: float) -> dict[str, Any]:
    root = tmp_path / "kb"
    KnowledgeBase.init(root).close()
    env = {k: v for k, v in os.environ.items() if k not in ("KBDB_DB", "KBDB_FAILPOINT")}
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{REPO / 'python'}"
    env["KBDB_LOCK_TIMEOUT"] = str(lock_timeout)
    procs = []
    logs: dict[str, Path] = {}
    for i, role in enumerate(ROLES):
        log = tmp_path / f"{role}-{i}.jsonl"
        logs[f"{role}-{i}"] = log
        cmd = [sys.executable, "-m", "tests.reliability.soak_worker", role, str(root)]
        cmd += [str(log), str(seconds), str(100 + i)]
        procs.append(subprocess.Popen(cmd, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=seconds + 300)
        assert p.returncode == 0, err[-3000:]

    writer_logs = [log for name, log in logs.items() if "writer" in name]
    _, learned, forgotten = announced(writer_logs)
    errors: dict[str, int] = {}
    for log in writer_logs:
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            if "error" in entry:
                errors[entry["error"]] = errors.get(entry["error"], 0) + 1
    reads = partial = 0
    per_reader: dict[str, int] = {}
    for name, log in logs.items():
        if "reader" in name:
            summary = json.loads(log.read_text().splitlines()[-1])
            reads += summary["checks"]
            per_reader[name] = summary["checks"]
            partial += len(summary["partial"])
            for code, count in summary["errors"].items():
                errors[f"read:{code}"] = errors.get(f"read:{code}", 0) + count
    assert set(errors) <= {"KB_LOCKED"}, errors
    assert partial == 0

    kb = KnowledgeBase.open(root)
    try:
        report = kb.check()
        assert report.ok, [e.to_dict() for e in report.errors]
        for word in sorted(learned - forgotten):
            assert len(kb.search(word, limit=20).items) == SECTIONS, word
        for word in sorted(forgotten):
            assert not kb.search(word, limit=20).items, word
        live_docs: set[str] = set()
        while True:
            page = kb.documents(limit=1000, offset=len(live_docs))
            live_docs |= {d.docid for d in page.items}
            if not page.has_more:
                break
        assert learned - forgotten <= live_docs
    finally:
        kb.close()
    return {
        "seconds": seconds,
        "learned": len(learned),
        "forgotten": len(forgotten),
        "reads": reads,
        "per_reader": per_reader,
        "errors": errors,
    }


def test_quick_soak_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    stats = soak(tmp_path, seconds=8, lock_timeout=0.5)
    assert stats["learned"] >= 3 and stats["reads"] >= 5, stats


@pytest.mark.slow
def test_soak_two_minutes(tmp_path: Path) -> None:
    stats = soak(tmp_path, seconds=120, lock_timeout=0.5)
    print("soak:", stats)
    assert stats["learned"] >= 50, stats
    assert all(n > 0 for n in stats["per_reader"].values()), stats
