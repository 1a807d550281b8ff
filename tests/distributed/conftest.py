"""The distributed tests share the session's one local Ray cluster (``ray_cluster`` in
``tests/conftest.py``), a small tree of real documents, and a knowledge base that
learned it locally to compare with."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.shared_data import CORPORA

import kbdb
from kbdb.config import set_value

TLDR_FILES = 24  # one section each
RUST_BOOK_FILES = (  # three or four headings each, at two or three levels
    "ch03-01-variables-and-mutability.md",
    "ch06-03-if-let.md",
    "ch07-02-defining-modules-to-control-scope-and-privacy.md",
    "ch12-01-accepting-command-line-arguments.md",
    "ch12-06-writing-to-stderr-instead-of-stdout.md",
    "appendix-01-keywords.md",
)


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 Markdown files (24 tldr pages, 6 rust-book chapters), a file the walker skips
    (not UTF-8) and one a .gitignore leaves out."""
    root = tmp_path_factory.mktemp("tree")
    pages = sorted((CORPORA / "tldr" / "pages" / "common").glob("*.md"))[:TLDR_FILES]
    assert len(pages) == TLDR_FILES, f"the tldr corpus is missing under {CORPORA}"
    for p in pages:
        shutil.copy(p, root / p.name)
    book = root / "book"
    book.mkdir()
    for name in RUST_BOOK_FILES:
        shutil.copy(CORPORA / "rust-book" / "src" / name, book / name)
    (root / "latin1.md").write_bytes("# Caf\xe9\n".encode("latin-1"))
    (root / ".gitignore").write_text("drafts/\n", encoding="utf-8")
    (root / "drafts").mkdir()
    (root / "drafts" / "wip.md").write_text("# Draft\n\nnot for the base\n", encoding="utf-8")
    return root


def onnx_kb(root: Path, model: Path) -> kbdb.KnowledgeBase:
    """A new knowledge base at ``root`` embedding with the real ONNX model."""
    kb = kbdb.KnowledgeBase.init(root)
    cfg = kb.path / "worker.toml"
    set_value(cfg, "embedding.provider", "onnx")
    set_value(cfg, "embedding.model_path", str(model))
    kb.close()
    return kbdb.KnowledgeBase.open(root)


@pytest.fixture(scope="session")
def session_model() -> Path:
    from tests.embedding.conftest import find_test_model

    return find_test_model()


@pytest.fixture(scope="session")
def local_kb(
    tree: Path, session_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[kbdb.KnowledgeBase]:
    """``tree`` learned without Ray: what every distributed learn must equal."""
    kb = onnx_kb(tmp_path_factory.mktemp("local"), session_model)
    kb.learn_path(tree)
    yield kb
    kb.close()
