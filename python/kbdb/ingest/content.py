"""Content types (SPEC §3): which MIME types can be learned, how each is checked and split.

- ``text/markdown``: split at headings; ``text/html``: split at ``<h1>``–``<h6>``;
- any other ``text/*``: one section;
- ``application/json``: one section, which must parse (the index sees its keys and
  values, see ``kbdb.search.fields``);
- ``image/*``: one section whose content is base64 data that must decode, headed by the
  required ``title``; only the title and description are indexed.

A bad value raises before anything is stored, naming what is wrong.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from kbdb.errors import InvalidArgumentError, UnsupportedTypeError
from kbdb.ingest.htmlsplit import split_html
from kbdb.ingest.markdown import split_markdown, split_text
from kbdb.ingest.section import ParsedDocument, ParsedSection

_MIME = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")
_B64_SPACE = re.compile(r"\s+")
_SUPPORTED = "text/markdown (default), text/html, another text/*, application/json or image/*"


def normalize_type(type: str) -> str:
    """The bare MIME type, lower case, without parameters (``; charset=utf-8``).

    Raises:
        InvalidArgumentError: ``type`` is not a string.
        UnsupportedTypeError: ``type`` is malformed or a type kbdb cannot learn.
    """
    if not isinstance(type, str):
        raise InvalidArgumentError("type must be a string such as 'text/markdown'")
    mime = type.split(";", 1)[0].strip().lower()
    if not _MIME.match(mime) or not (
        mime.startswith(("text/", "image/")) or mime == "application/json"
    ):
        raise UnsupportedTypeError(
            f"content type {type!r} is not supported", hint=f"use {_SUPPORTED}"
        )
    return mime


def is_image(type: str) -> bool:
    return type.startswith("image/")


def decode_image(content: str, type: str) -> bytes:
    """The bytes of base64 image content (whitespace and line breaks allowed).

    Raises:
        InvalidArgumentError: the content is empty or not valid base64.
    """
    data = _B64_SPACE.sub("", content)
    if not data:
        raise InvalidArgumentError(
            f"{type} content is empty", hint="send the image bytes base64-encoded"
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidArgumentError(
            f"{type} content is not valid base64 ({exc})",
            hint="send the image bytes base64-encoded (RFC 4648, standard alphabet)",
        ) from None
    if not raw:
        raise InvalidArgumentError(f"{type} content decodes to no bytes")
    return raw


def check_json(content: str) -> None:
    """Raises InvalidArgumentError naming the line and column where ``content`` stops
    being JSON."""
    try:
        json.loads(content)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(
            f"application/json content does not parse: {exc.msg} at line {exc.lineno}"
            f" column {exc.colno}",
            hint="fix the JSON, or learn it as text/plain",
        ) from None


def split_content(
    text: str, type: str, *, title: str | None, description: str | None, links: bool = True
) -> ParsedDocument:
    """Check ``text`` against its (normalized) ``type`` and split it into sections;
    ``links``: find the links of Markdown and HTML."""
    if type == "text/markdown":
        return split_markdown(text, links=links)
    if type == "text/html":
        return split_html(text, links=links)
    if type == "application/json":
        check_json(text)
        return split_text(text)
    if type.startswith("text/"):
        return split_text(text)
    if is_image(type):
        if title is None or not title.strip():
            raise InvalidArgumentError(
                f"an {type} section needs a title", hint="give title=... (--title)"
            )
        decode_image(text, type)
        section = ParsedSection(
            heading=title.strip(),
            level=0,
            parent=None,
            content=text,
            body="",
            code="",
            heading_path=(),
        )
        return ParsedDocument(title.strip(), description, (), (section,), ())
    raise UnsupportedTypeError(  # normalize_type lets nothing else through
        f"content type {type!r} is not supported", hint=f"use {_SUPPORTED}"
    )


def json_index_text(content: str) -> str:
    """The keys and scalar values of a JSON document, one per line, for the index. The
    raw text would do for most tokens, but keys like ``maxConnections`` read better split
    apart from their punctuation, and escapes (``\\u00e9``) must be decoded."""
    try:
        value = json.loads(content)
    except (json.JSONDecodeError, RecursionError):
        return content
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, child in reversed(list(v.items())):
                stack.append(child)
                stack.append(_Key(k))
        elif isinstance(v, list):
            stack.extend(reversed(v))
        elif isinstance(v, _Key):
            out.append(_split_camel(v.name))
        elif v is not None and not isinstance(v, bool):
            out.append(str(v))
        elif isinstance(v, bool):
            out.append("true" if v else "false")
    return "\n".join(out)


class _Key:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _split_camel(name: str) -> str:
    """``maxConnections`` → ``maxConnections max Connections`` (both forms searchable)."""
    parts = _CAMEL.sub(" ", name)
    return name if parts == name else f"{name} {parts}"
