"""File formats read through an optional extra: documents (PDF, Office, EPUB) and source
code (docs/formats.md).

Each ``Format`` names its file extensions, the MIME type its documents are stored under,
the pip extra that brings the libraries it needs and the module that splits it. The
module has a function ``split(data, *, name)`` taking the file's bytes (a binary format)
or its UTF-8 text (source code) and returning a ``ParsedDocument`` whose sections carry
their lines or page. A file it cannot read raises ``FormatRejectedError`` with a skip
code, so a batch learn reports that file and goes on.

Without the extra, a document file is skipped as ``UNSUPPORTED_TYPE`` with a hint that
names the extra. A source file is left out of a folder learn silently, as before kbdb read
code (a notes folder with a few scripts does not report each one), and is reported the
same way when named on its own.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Protocol, cast

from kbdb.errors import InvalidArgumentError
from kbdb.ingest.section import ParsedDocument


class FormatRejectedError(InvalidArgumentError):
    """A file of an extra's format cannot be read: encrypted, truncated, a decompression
    bomb, over a limit. ``skip_code`` is the code its ``Skipped`` report carries."""

    def __init__(self, reason: str, *, skip_code: str, hint: str | None = None) -> None:
        super().__init__(reason, hint=hint)
        self.reason = reason
        self.skip_code = skip_code


class _Splitter(Protocol):
    def __call__(self, data: bytes | str, *, name: str) -> ParsedDocument: ...


@dataclass(frozen=True)
class Format:
    """One format an extra reads.

    Attributes:
        name: Short name for messages and docs (``pdf``, ``python``).
        mime: The document's MIME type.
        extensions: File extensions, lower case with the dot.
        extra: The pip extra that installs ``requires`` (``documents`` or ``code``).
        requires: Top-level modules that must import for the format to be read.
        module: The module whose ``split`` reads it.
        binary: The splitter takes bytes; else UTF-8 text checked as any text file is.
        section_type: The MIME type of the sections it makes, when it differs from the
            document's (a PDF's pages are stored as ``text/markdown``).
    """

    name: str
    mime: str
    extensions: tuple[str, ...]
    extra: str
    requires: tuple[str, ...]
    module: str
    binary: bool
    section_type: str | None = None

    @property
    def quiet_without_extra(self) -> bool:
        """Whether a folder learn leaves the file out silently when the extra is missing."""
        return self.extra == "code"

    def available(self) -> bool:
        """Whether the libraries of the extra are installed."""
        return all(_importable(m) for m in self.requires)

    def missing_reason(self) -> str:
        return (
            f"reading {self.name} files needs the {self.extra} extra:"
            f" pip install 'kbdb[{self.extra}]'"
        )

    def splitter(self) -> _Splitter:
        return cast(_Splitter, importlib.import_module(self.module).split)


def _code(name: str, mime: str, extensions: tuple[str, ...], grammar: str) -> Format:
    """A source-code format: UTF-8 text split by definition (docs/code.md)."""
    return Format(
        name=name,
        mime=mime,
        extensions=extensions,
        extra="code",
        requires=("tree_sitter", grammar),
        module="kbdb.ingest.code",
        binary=False,
    )


CODE_FORMATS: tuple[Format, ...] = (
    _code("python", "text/x-python", (".py", ".pyi"), "tree_sitter_python"),
    _code("rust", "text/x-rust", (".rs",), "tree_sitter_rust"),
    _code("go", "text/x-go", (".go",), "tree_sitter_go"),
    _code(
        "javascript", "text/javascript", (".js", ".mjs", ".cjs", ".jsx"), "tree_sitter_javascript"
    ),
    _code(
        "typescript", "text/typescript", (".ts", ".mts", ".cts", ".tsx"), "tree_sitter_typescript"
    ),
    _code("java", "text/x-java", (".java",), "tree_sitter_java"),
    _code("c", "text/x-c", (".c",), "tree_sitter_c"),
    # ``.h`` is read with the C++ grammar, which reads C headers too (kbdb.ingest.codelang).
    _code(
        "c++",
        "text/x-c++",
        (".h", ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++"),
        "tree_sitter_cpp",
    ),
)
"""The source-code formats of the ``code`` extra."""


def _document(
    name: str, mime: str, extensions: tuple[str, ...], requires: tuple[str, ...], module: str
) -> Format:
    """A document format: bytes whose text is stored as Markdown (docs/formats.md)."""
    return Format(
        name=name,
        mime=mime,
        extensions=extensions,
        extra="documents",
        requires=requires,
        module=f"kbdb.ingest.documents.{module}",
        binary=True,
        section_type="text/markdown",
    )


_OOXML = "application/vnd.openxmlformats-officedocument"

DOCUMENT_FORMATS: tuple[Format, ...] = (
    _document("pdf", "application/pdf", (".pdf",), ("pypdfium2",), "pdf"),
    _document("docx", f"{_OOXML}.wordprocessingml.document", (".docx",), ("docx",), "word"),
    _document("pptx", f"{_OOXML}.presentationml.presentation", (".pptx",), ("pptx",), "slides"),
    _document("xlsx", f"{_OOXML}.spreadsheetml.sheet", (".xlsx",), ("openpyxl",), "sheet"),
    # EPUB is read with the standard library (zipfile and the HTML splitter).
    _document("epub", "application/epub+zip", (".epub",), (), "epub"),
)
"""The document formats of the ``documents`` extra (EPUB needs no library)."""

FORMATS: tuple[Format, ...] = (*DOCUMENT_FORMATS, *CODE_FORMATS)
"""Every format an extra reads, in the order the docs list them."""

_BY_MIME: dict[str, Format] = {f.mime: f for f in FORMATS}
EXTENSIONS: dict[str, str] = {ext: f.mime for f in FORMATS for ext in f.extensions}
"""Extension → MIME type of every extra's format (merged into the walk's table)."""


def format_of(mime: str) -> Format | None:
    """The extra's format of a MIME type, or None for a type kbdb reads itself."""
    return _BY_MIME.get(mime)


@cache
def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def split_with(fmt: Format, data: bytes | str, *, name: str) -> ParsedDocument:
    """Split ``data`` with ``fmt``'s module. A library that raises anything but a
    ``FormatRejectedError`` on a malformed file is reported as ``UNREADABLE_DOCUMENT``:
    one bad file never stops a batch."""
    split: Callable[..., ParsedDocument] = fmt.splitter()
    try:
        return split(data, name=name)
    except FormatRejectedError:
        raise
    except (MemoryError, RecursionError) as exc:
        raise FormatRejectedError(
            f"{fmt.name} file is too large or too deeply nested to read ({type(exc).__name__})",
            skip_code="CONTENT_TOO_LARGE",
        ) from None
    except Exception as exc:  # noqa: BLE001 - third-party readers raise anything on bad files
        raise FormatRejectedError(
            f"{fmt.name} file cannot be read: {exc}".rstrip(": "),
            skip_code="UNREADABLE_DOCUMENT",
            hint="check that the file opens in its own application",
        ) from None
