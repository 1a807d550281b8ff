"""Bad documents: each is skipped with its code while the rest of the batch is learned,
and memory stays bounded. The bombs are made here, small and compressed."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest
from tests.cli.conftest import cli_env

import kbdb
from kbdb.ingest.documents import common, pdfscan
from kbdb.ingest.documents.sheet import split as split_xlsx
from kbdb.ingest.formats import FormatRejectedError

pytest.importorskip("pypdfium2")
pytest.importorskip("docx")
pytest.importorskip("openpyxl")

DATA = Path(__file__).parent / "data" / "documents"
MIB = 1024 * 1024


def one_page_pdf(content: bytes, filters: str = "/FlateDecode") -> bytes:
    """A valid one-page PDF whose page content stream is ``content`` (already encoded
    with ``filters``)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter %s >>\nstream\n" % (len(content), filters.encode())
        + content
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def deflate(head: bytes, chunk: bytes, times: int, tail: bytes = b"") -> bytes:
    z = zlib.compressobj(1)
    parts = [z.compress(head)]
    parts.extend(z.compress(chunk) for _ in range(times))
    parts.append(z.compress(tail))
    parts.append(z.flush())
    return b"".join(parts)


def pdf_size_bomb() -> bytes:
    """A page whose content inflates to 96 MiB of spaces (a 400 KiB file; PDFium took
    2 GiB for a 1 GiB one)."""
    return one_page_pdf(deflate(b"BT /F1 12 Tf 72 720 Td (hi) Tj ET\n", b" " * MIB, 96))


def pdf_text_bomb() -> bytes:
    """A page that shows 8 million characters: under the size limit, but PDFium would
    hold ~1.6 GiB for it."""
    line = b"(" + b"A" * 1000 + b") Tj\n"
    return one_page_pdf(deflate(b"BT /F1 12 Tf 72 720 Td\n", line * 1000, 8, b"ET\n"))


def pdf_nested_bomb() -> bytes:
    """Two Flate layers: 2 KiB on disk, 96 MiB inflated."""
    inner = deflate(b"", b" " * MIB, 96)
    return one_page_pdf(zlib.compress(inner, 9), "[/FlateDecode /FlateDecode]")


def xlsx_zip_bomb() -> bytes:
    """A real workbook plus a sheet part that inflates to 80 MiB of zeros."""
    source = zipfile.ZipFile(DATA / "two-sheets.xlsx")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            out.writestr(info, source.read(info))
        with out.open("xl/worksheets/sheet9.xml", "w") as member:
            zeros = b"\0" * MIB
            for _ in range(80):
                member.write(zeros)
    return buffer.getvalue()


def truncated_docx() -> bytes:
    docx = (DATA / "illustrative-cases.docx").read_bytes()
    return docx[: len(docx) // 2]


BAD = {
    "encrypted.pdf": (lambda: (DATA / "encrypted-password.pdf").read_bytes(), "ENCRYPTED_DOCUMENT"),
    "bomb.pdf": (pdf_size_bomb, "CONTENT_TOO_LARGE"),
    "text-bomb.pdf": (pdf_text_bomb, "CONTENT_TOO_LARGE"),
    "nested-bomb.pdf": (pdf_nested_bomb, "CONTENT_TOO_LARGE"),
    "truncated.docx": (truncated_docx, "UNREADABLE_DOCUMENT"),
    "bomb.xlsx": (xlsx_zip_bomb, "CONTENT_TOO_LARGE"),
}
"""Each bad file: how to make it, and the skip code it must get."""


def bad_folder(root: Path, names: tuple[str, ...] = tuple(BAD)) -> dict[str, str]:
    """Good documents and the bad ones ``names`` in ``root``; the code of each bad one."""
    root.mkdir()
    for name in ("crazyones.pdf", "sample-ss.xlsx", "lorem.epub"):
        (root / name).write_bytes((DATA / name).read_bytes())
    for name in names:
        (root / name).write_bytes(BAD[name][0]())
    return {name: BAD[name][1] for name in names}


def test_a_batch_learns_the_good_files_and_names_each_bad_one(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    expected = bad_folder(tmp_path / "mixed")
    report = kb.learn_path(tmp_path / "mixed")
    got = {Path(s.path).name: s.code for s in report.files_skipped}
    assert got == expected
    assert report.documents_added == 3
    assert kb.search("crazy ones misfits rebels").items[0].docids == ("crazyones.pdf",)


# The peak is the process's VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss
# across exec, so a child forked from a large pytest process would report the parent's size.
_MEASURE = """
import json, sys
import kbdb
kb = kbdb.KnowledgeBase.init(sys.argv[1])
report = kb.learn_path(sys.argv[2])
with open("/proc/self/status") as f:
    hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(json.dumps({
    "skipped": {s.path.rsplit("/", 1)[-1]: s.code for s in report.files_skipped},
    "peak_rss_mib": hwm / 1024,
}))
"""

PEAK_RSS_MIB = 200
"""Peak RSS of a process that learns one bomb. Measured: 65 MiB for each, as for one
Markdown file; without the checks PDFium took 2 GiB for a 1 GiB page and 3 GiB for a
page showing 16 million characters."""


@pytest.mark.parametrize("bomb", ["bomb.pdf", "text-bomb.pdf", "nested-bomb.pdf", "bomb.xlsx"])
def test_peak_memory_of_learning_a_bomb_is_bounded(tmp_path: Path, bomb: str) -> None:
    only = tmp_path / "one"
    only.mkdir()
    (only / bomb).write_bytes(BAD[bomb][0]())
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(tmp_path / "kb"), str(only)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=120,
        check=True,
    )
    result = json.loads(proc.stdout)
    assert result["skipped"] == {bomb: BAD[bomb][1]}
    assert result["peak_rss_mib"] < PEAK_RSS_MIB, result


def test_zip_member_count_is_read_before_zipfile_builds_its_directory() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        for i in range(common.MAX_ZIP_ENTRIES + 1):
            out.writestr(f"x/{i}", b"")
    with pytest.raises(FormatRejectedError) as info:
        split_xlsx(buffer.getvalue(), name="many.xlsx")
    assert info.value.skip_code == "CONTENT_TOO_LARGE"
    assert "parts" in info.value.reason


@pytest.mark.parametrize(
    ("encode", "filters"),
    [
        (lambda b: zlib.compress(b), b"/FlateDecode"),
        (lambda b: b.hex().encode() + b">", b"/ASCIIHexDecode"),
        (lambda b: zlib.compress(zlib.compress(b)), b"[/Fl /Fl]"),
    ],
)
def test_stream_text_is_measured_through_each_filter(encode: object, filters: bytes) -> None:
    content = b"BT " + b"(" + b"x" * (pdfscan.MAX_STREAM_TEXT_BYTES + 10) + b") Tj ET"
    data = one_page_pdf(encode(content), filters.decode())  # type: ignore[operator]
    with pytest.raises(FormatRejectedError) as info:
        pdfscan.check_streams(data)
    assert info.value.skip_code == "CONTENT_TOO_LARGE"
    small = one_page_pdf(encode(b"BT (hello) Tj ET"), filters.decode())  # type: ignore[operator]
    pdfscan.check_streams(small)  # under the limits: no error


def test_lzw_and_run_length_decoders_measure_real_streams() -> None:
    # "-----A---B" in LZW (PDF spec example): 80 0B 60 50 22 0C 0C 85 01
    assert pdfscan._lzw(bytes.fromhex("800B6050220C0C8501")) == b"-----A---B"
    assert pdfscan._run_length(bytes([2]) + b"abc" + bytes([254]) + b"z" + bytes([128])) == (
        b"abczzz"
    )
