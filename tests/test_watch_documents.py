"""``kbdb watch`` learns documents dropped into a watched folder, like any other file
(real file-system events, as in test_watch.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.test_watch import Running, hits, live_docids, wait_for

import kbdb

pytest.importorskip("pypdfium2")
pytest.importorskip("docx")

DATA = Path(__file__).parent / "data" / "documents"


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[kbdb.KnowledgeBase]:
    k = kbdb.KnowledgeBase.init(tmp_path)
    yield k
    k.close()


def test_a_pdf_and_a_docx_dropped_in_are_learned(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Notes\n\nNothing about sieges.\n")
    w = Running(kb, docs)
    try:
        assert live_docids(kb) == {"notes.md"}
        shutil.copy(DATA / "vicksburg-ocr.pdf", docs / "siege.pdf")
        wait_for(lambda: "siege.pdf" in hits(kb, "expedite glorious"), what="dropped pdf")
        shutil.copy(DATA / "illustrative-cases.docx", docs / "tax.docx")
        wait_for(lambda: "tax.docx" in hits(kb, "personal tax credit"), what="dropped docx")
        (docs / "siege.pdf").unlink()
        wait_for(lambda: "siege.pdf" not in live_docids(kb), what="deleted pdf")
        assert w.alive()
    finally:
        w.close()
