"""PDF text in kbdb against ``pdftotext`` (poppler), and the PDF libraries compared.

For each PDF of a corpus folder: its pages; the pages with text in kbdb (every line
PDFium finds on the page is in a section that starts on or before it) and in pdftotext;
the non-blank characters kbdb learns against pdftotext's; kbdb's time to split the file.
Then the libraries kbdb could use, each extracting the whole text: pypdfium2 (chosen),
pypdf and pdfplumber, in characters and seconds. ``pdftotext`` is only a comparator
(``apt-get install poppler-utils``); pypdf and pdfplumber are only needed here.

The corpus measured in docs/formats.md is the PDFs of two public test corpora: the
``resources/`` of github.com/py-pdf/pypdf (BSD-3-Clause) and seven files of
``test/pdfs/`` of github.com/mozilla/pdf.js (Apache-2.0); the commits are in the result.

    python benches/bench_documents.py --corpus DIR [--label TEXT]
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_table, write_result  # noqa: E402
from kbdb.ingest.documents import pdf as kbdb_pdf  # noqa: E402
from kbdb.ingest.formats import FormatRejectedError  # noqa: E402


def nonblank(text: str) -> int:
    return len("".join(text.split()))


def pdftotext_pages(path: Path) -> tuple[list[int], float]:
    start = time.perf_counter()
    out = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True, check=False
    ).stdout.decode("utf-8", "replace")
    pages = out.split("\f")
    if pages and not pages[-1].strip():
        pages = pages[:-1]
    return [nonblank(p) for p in pages], time.perf_counter() - start


def pdfium_lines(path: Path) -> list[list[str]]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(path)
    try:
        out = []
        for i in range(len(doc)):
            # cleaned as kbdb cleans (control characters out): a font whose glyphs map to
            # control codes (pdfjs TAMReview.pdf) has no text to lose
            text = doc[i].get_textpage().get_text_range()
            lines = (kbdb_pdf._clean(ln) for ln in text.splitlines())
            out.append([ln for ln in lines if ln])
        return out
    finally:
        doc.close()


def library(name: str, path: Path) -> tuple[int | None, float]:
    start = time.perf_counter()
    try:
        if name == "pypdfium2":
            import pypdfium2 as pdfium

            doc = pdfium.PdfDocument(path)
            chars = sum(nonblank(doc[i].get_textpage().get_text_range()) for i in range(len(doc)))
            doc.close()
        elif name == "pypdf":
            import pypdf

            chars = sum(nonblank(p.extract_text() or "") for p in pypdf.PdfReader(path).pages)
        else:
            import pdfplumber

            with pdfplumber.open(path) as doc:
                chars = sum(nonblank(p.extract_text() or "") for p in doc.pages)
    except Exception:  # noqa: BLE001 - an encrypted or broken file: no text
        return None, time.perf_counter() - start
    return chars, time.perf_counter() - start


def measure(path: Path) -> dict[str, Any]:
    ptt, ptt_s = pdftotext_pages(path)
    row: dict[str, Any] = {
        "file": path.name,
        "pdftotext_pages": len(ptt),
        "pdftotext_pages_with_text": sum(1 for c in ptt if c),
        "pdftotext_chars": sum(ptt),
        "pdftotext_s": round(ptt_s, 4),
    }
    start = time.perf_counter()
    try:
        doc = kbdb_pdf.split(path.read_bytes(), name=path.name)
    except FormatRejectedError as exc:
        row.update(kbdb_skip=exc.skip_code, kbdb_s=round(time.perf_counter() - start, 4))
        doc = None
    if doc is not None:
        row["kbdb_s"] = round(time.perf_counter() - start, 4)
        row["kbdb_sections"] = len(doc.sections)
        # a heading taken from the page counts; a "Page N" kbdb made up does not
        row["kbdb_chars"] = sum(
            nonblank(s.content) + (0 if s.heading == f"Page {s.page}" else nonblank(s.heading))
            for s in doc.sections
        )
        lines = pdfium_lines(path)
        row["pages"] = len(lines)
        with_text = learned = 0
        for number, page in enumerate(lines, start=1):
            if not page:
                continue
            with_text += 1
            before = "\n".join(
                f"{s.heading}\n{s.content}" for s in doc.sections if (s.page or 0) <= number
            )
            learned += all(ln in before for ln in page)
        row["pages_with_text"] = with_text
        row["kbdb_pages_with_text_learned"] = learned
        if row["pdftotext_chars"]:
            row["chars_ratio_vs_pdftotext"] = round(row["kbdb_chars"] / row["pdftotext_chars"], 3)
    for name in ("pypdfium2", "pypdf", "pdfplumber"):
        chars, seconds = library(name, path)
        row[f"{name}_chars"] = chars
        row[f"{name}_s"] = round(seconds, 4)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="a folder of PDF files")
    parser.add_argument("--label", default="", help="where the corpus came from")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # pypdf and pdfminer log every oddity they meet
    warnings.simplefilter("ignore")
    files = sorted(args.corpus.glob("*.pdf"))
    rows = [measure(p) for p in files]
    learned = [r for r in rows if "kbdb_chars" in r]
    totals: dict[str, Any] = {
        "files": len(rows),
        "files_learned": len(learned),
        "skipped": {r["file"]: r["kbdb_skip"] for r in rows if "kbdb_skip" in r},
        "pages": sum(r["pages"] for r in learned),
        "pages_with_text": sum(r["pages_with_text"] for r in learned),
        "pages_with_text_learned": sum(r["kbdb_pages_with_text_learned"] for r in learned),
        "pdftotext_pages_with_text": sum(r["pdftotext_pages_with_text"] for r in learned),
        "kbdb_chars": sum(r["kbdb_chars"] for r in learned),
        "pdftotext_chars": sum(r["pdftotext_chars"] for r in learned),
        "kbdb_s": round(sum(r["kbdb_s"] for r in learned), 3),
        "pdftotext_s": round(sum(r["pdftotext_s"] for r in learned), 3),
    }
    totals["chars_ratio_vs_pdftotext"] = round(totals["kbdb_chars"] / totals["pdftotext_chars"], 3)
    ratios = sorted(
        r["chars_ratio_vs_pdftotext"] for r in learned if "chars_ratio_vs_pdftotext" in r
    )
    totals["median_file_chars_ratio"] = ratios[len(ratios) // 2] if ratios else None
    for name in ("pypdfium2", "pypdf", "pdfplumber"):
        totals[f"{name}_chars"] = sum(r[f"{name}_chars"] or 0 for r in learned)
        totals[f"{name}_s"] = round(sum(r[f"{name}_s"] for r in learned), 3)
    print_table(
        "PDF text: kbdb against pdftotext",
        ["file", "pages", "text pages kbdb/ptt", "chars kbdb", "chars ptt", "ratio", "kbdb s"],
        [
            [
                r["file"][:40],
                r.get("pages", r["pdftotext_pages"]),
                f"{r.get('kbdb_pages_with_text_learned', '-')}/{r['pdftotext_pages_with_text']}",
                r.get("kbdb_chars", r.get("kbdb_skip")),
                r["pdftotext_chars"],
                r.get("chars_ratio_vs_pdftotext"),
                r["kbdb_s"],
            ]
            for r in rows
        ],
    )
    print_table(
        "Libraries, over the files kbdb learns",
        ["library", "chars", "seconds"],
        [[n, totals[f"{n}_chars"], totals[f"{n}_s"]] for n in ("pypdfium2", "pypdf", "pdfplumber")]
        + [["pdftotext", totals["pdftotext_chars"], totals["pdftotext_s"]]],
    )
    print({k: v for k, v in totals.items() if k != "skipped"})
    path = write_result("documents", {"corpus": args.label, "totals": totals, "files": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
