"""The corruption matrix's building blocks: a reference knowledge base holding every file
kind, the faults, and the subprocess runner. Shared by tests/reliability/test_corruption.py
and by anyone reproducing one case by hand."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kbdb
from kbdb.config import set_value

PROBE = Path(__file__).with_name("corruption_probe.py")
PAGE = 4096
TIMEOUT_S = 120

NOTES = {
    "pool": "# Connection pool\n\nThe pool keeps 20 connections open for batch jobs.",
    "auth": "# Authentication\n\nTokens expire after one hour; refresh them early.",
    "cache": "# Cache\n\nRedis holds the session cache with a one hour expiry.",
    "deploy": "# Deploy\n\nDeployments roll out through a blue green switch.",
    "db": "# Database\n\nWe chose Postgres because of JSONB support and the pool.",
}

# file kind -> glob under .kbdb/ (exactly one match in the reference knowledge base)
KINDS: dict[str, str] = {
    "kb.sqlite": "kb.sqlite",
    "worker.toml": "worker.toml",
    "meta.toml": "indexes/meta.toml",
    "segment": "indexes/seg-*.seg",
    "tombstones": "indexes/seg-*.del",
    "vectors.idx": "indexes/vectors.idx",
    "vectors-add": "indexes/vectors-add.*.idx",
    "vectors-del": "indexes/vectors-del.*.tomb",
    "vectors-meta.toml": "indexes/vectors-meta.toml",
}


def build_reference(root: Path, model: Path) -> Path:
    """A knowledge base with the onnx provider whose ``indexes/`` holds one of each file:
    a rebuilt base (a segment and a populated ``vectors.idx``), then a replacement (a
    lexical tombstone file and a vector tombstone side file) and a new document (a second
    segment and a vector append side file). Returns the ``.kbdb`` folder."""
    kb = kbdb.KnowledgeBase.init(root)
    set_value(kb.path / "worker.toml", "embedding.provider", "onnx")
    set_value(kb.path / "worker.toml", "embedding.model_path", str(model))
    kb.close()
    kb = kbdb.KnowledgeBase.open(root)
    try:
        kb.learn_many(kbdb.LearnItem(text, docid=docid) for docid, text in NOTES.items())
        kb.rebuild()
        kb.learn(
            "# Cache\n\nRedis holds the session cache; entries expire hourly.",
            docid="cache",
            replace=True,
        )
        kb.learn("# Backups\n\nNightly backups of the pool database go offsite.", docid="backup")
        return kb.path
    finally:
        kb.close()


def kind_file(kbdir: Path, kind: str) -> Path:
    matches = sorted(kbdir.glob(KINDS[kind]))
    if kind == "segment":
        matches = matches[:1]  # the rebuilt base segment, the one the tombstones point into
    assert len(matches) == 1, (kind, matches)
    return matches[0]


# -- faults --------------------------------------------------------------------------------


def _truncate(at: Callable[[int], int]) -> Callable[[Path], None]:
    def fault(f: Path) -> None:
        data = f.read_bytes()
        f.write_bytes(data[: max(0, min(len(data), at(len(data))))])

    return fault


def _flip(f: Path) -> None:
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x10
    f.write_bytes(bytes(data))


def _flip_first(f: Path) -> None:
    data = bytearray(f.read_bytes())
    data[0] ^= 0x01
    f.write_bytes(bytes(data))


def _zero_page(index: int) -> Callable[[Path], None]:
    """Zero the ``index``-th 4 KiB page (the last one when the file is shorter), as a
    lost or torn write of one page would."""

    def fault(f: Path) -> None:
        data = bytearray(f.read_bytes())
        start = min(index * PAGE, max(0, (len(data) - 1) // PAGE * PAGE))
        end = min(len(data), start + PAGE)
        data[start:end] = bytes(end - start)
        f.write_bytes(bytes(data))

    return fault


def _flip_text(f: Path) -> None:
    """Flip one bit inside a stored section's text (the pool note), the kind of silent
    damage SQLite itself cannot see."""
    data = bytearray(f.read_bytes())
    at = data.index(b"connections open")
    data[at] ^= 0x01
    f.write_bytes(bytes(data))


def _delete(f: Path) -> None:
    f.unlink()


def _directory(f: Path) -> None:
    f.unlink()
    f.mkdir()
    (f / "stray").write_text("not an index file", encoding="utf-8")


def _none(f: Path) -> None:
    """No fault: the control case."""


FAULTS: dict[str, Callable[[Path], None]] = {
    "none": _none,
    "truncate-0": _truncate(lambda n: 0),
    "truncate-7": _truncate(lambda n: 7),  # inside any header
    "truncate-half": _truncate(lambda n: n // 2),
    "truncate-footer": _truncate(lambda n: n - 4),  # mid-footer / mid-checksum line
    "truncate-1": _truncate(lambda n: n - 1),
    "bitflip-middle": _flip,
    "bitflip-first": _flip_first,
    "bitflip-text": _flip_text,
    "zero-page-0": _zero_page(0),
    "zero-page-1": _zero_page(1),
    "delete": _delete,
    "directory": _directory,
}


@dataclass(frozen=True)
class Outcome:
    returncode: int
    timed_out: bool
    steps: dict[str, Any]
    stderr: str


def probe(kbdir: Path) -> Outcome:
    """Run the probe on ``kbdir`` in a child process with a timeout."""
    env = {**os.environ, "PYTHONFAULTHANDLER": "1", "RUST_BACKTRACE": "0"}
    try:
        proc = subprocess.run(
            [sys.executable, str(PROBE), str(kbdir)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env=env,
        )
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return Outcome(-1, True, {}, err)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    steps = json.loads(lines[-1]) if lines else {}
    return Outcome(proc.returncode, False, steps, proc.stderr)


def damaged_copy(reference: Path, dest: Path, kind: str, fault: str) -> Path:
    """A copy of the reference knowledge base with ``fault`` applied to its ``kind`` file."""
    shutil.copytree(reference.parent, dest, symlinks=True)
    kbdir = dest / reference.name
    FAULTS[fault](kind_file(kbdir, kind))
    return kbdir
