"""``kbdb learn`` on a folder of documents (the documents extra), run as the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.conftest import Kbdb

pytest.importorskip("pypdfium2")
pytest.importorskip("docx")
pytest.importorskip("pptx")

DATA = Path(__file__).parents[1] / "data" / "documents"


def test_cli_learns_a_folder_of_documents(kbdb: Kbdb, tmp_path: Path) -> None:
    assert kbdb("init").code == 0
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("pdflatex-outline.pdf", "heading-styles.docx", "sample-show.pptx"):
        (docs / name).write_bytes((DATA / name).read_bytes())
    (docs / "locked.pdf").write_bytes((DATA / "encrypted-password.pdf").read_bytes())
    run = kbdb("learn", "docs")
    assert run.code == 1, run.err  # a file was skipped
    assert "locked.pdf" in run.out + run.err
    assert "ENCRYPTED_DOCUMENT" in run.out + run.err
    found = kbdb("search", "first slide notes", "--json").json()
    assert found["items"][0]["docids"] == ["sample-show.pptx"]
