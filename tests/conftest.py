"""Shared fixtures: a fresh knowledge base in a temporary folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import kbdb


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[kbdb.KnowledgeBase]:
    monkeypatch.delenv("KBDB_DB", raising=False)
    base = kbdb.KnowledgeBase.init(tmp_path / "kb")
    yield base
    base.close()


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p
