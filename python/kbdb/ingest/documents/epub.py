"""Split an EPUB book with the standard library: ``zipfile`` and the HTML splitter.

The package document (found through ``META-INF/container.xml``) gives the reading order
(the spine); each XHTML file in it is split at its ``<h1>``–``<h6>`` like any HTML page,
and the sections follow one another in spine order. A file with no heading is headed by
its ``<title>``. The EPUB 3 navigation document (the table of contents) is left out. The
title is the package's ``dc:title``. No extra library is needed, so EPUB files are read
without the ``documents`` extra.
"""

from __future__ import annotations

import posixpath
import zipfile
from urllib.parse import unquote
from xml.etree import ElementTree

from kbdb.ingest.documents.common import MAX_SECTION_CHARS, CharBudget, bounded, finish, open_zip
from kbdb.ingest.formats import FormatRejectedError
from kbdb.ingest.htmlsplit import split_html
from kbdb.ingest.section import ParsedDocument, RawSection

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_XHTML = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}


def split(data: bytes, *, name: str) -> ParsedDocument:
    """Split an .epub file's bytes.

    Raises:
        FormatRejectedError: ``CONTENT_TOO_LARGE``, ``NO_TEXT``, or
            ``UNREADABLE_DOCUMENT`` when the package document is missing.
    """
    with open_zip(data, kind="epub") as archive:
        opf_path = _package_path(archive)
        package = ElementTree.fromstring(archive.read(opf_path))
        base = posixpath.dirname(opf_path)
        budget = CharBudget("epub")
        raw: list[RawSection] = []
        for path in _spine(package, base):
            try:
                markup = archive.read(path)
            except KeyError:
                continue  # a spine entry the book does not hold
            raw.extend(_chapter(budget.take(_decode(markup))))
        title_node = package.find(f"{_OPF}metadata/{_DC}title")
        title = (title_node.text or "").strip() or None if title_node is not None else None
    return finish(raw, title=title, kind="epub")


def _package_path(archive: zipfile.ZipFile) -> str:
    try:
        container = ElementTree.fromstring(archive.read("META-INF/container.xml"))
    except KeyError:
        container = None
    if container is not None:
        rootfile = container.find(f"{_CONTAINER}rootfiles/{_CONTAINER}rootfile")
        if rootfile is not None and rootfile.get("full-path"):
            return str(rootfile.get("full-path"))
    opfs = [n for n in archive.namelist() if n.lower().endswith(".opf")]
    if not opfs:
        raise FormatRejectedError(
            "epub file has no package document (.opf)",
            skip_code="UNREADABLE_DOCUMENT",
            hint="check that the file opens in an e-book reader",
        )
    return opfs[0]


def _spine(package: ElementTree.Element, base: str) -> list[str]:
    """The archive paths of the spine's XHTML files, in reading order."""
    manifest: dict[str, tuple[str, str, str]] = {}
    for item in package.iterfind(f"{_OPF}manifest/{_OPF}item"):
        href = unquote((item.get("href") or "").split("#", 1)[0])
        manifest[item.get("id") or ""] = (
            posixpath.normpath(posixpath.join(base, href)) if href else "",
            item.get("media-type") or "",
            item.get("properties") or "",
        )
    paths: list[str] = []
    for ref in package.iterfind(f"{_OPF}spine/{_OPF}itemref"):
        path, media, properties = manifest.get(ref.get("idref") or "", ("", "", ""))
        if path and media in _XHTML and "nav" not in properties.split() and path not in paths:
            paths.append(path)
    return paths


def _decode(markup: bytes) -> str:
    if markup.startswith((b"\xff\xfe", b"\xfe\xff")):
        return markup.decode("utf-16", "replace")
    return markup.decode("utf-8", "replace")


def _chapter(markup: str) -> list[RawSection]:
    doc = split_html(markup)
    raw = [RawSection(s.heading, s.level, s.content, s.body, s.code) for s in doc.sections]
    if raw and raw[0].level == 0 and doc.title and not any(s.level for s in raw):
        first = raw[0]
        raw[0] = RawSection(doc.title, 1, first.content, first.body, first.code)
    out: list[RawSection] = []
    for s in raw:  # a long chapter without headings is cut as other formats are
        long = len(s.content) > MAX_SECTION_CHARS
        out.extend(bounded(s.heading, s.level, [s.content]) if long else [s])
    return out
