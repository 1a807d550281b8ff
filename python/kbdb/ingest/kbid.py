"""Content addresses (kbids) and logical section identities (source keys).

A kbid names a section by what it says, so identical content learned twice is stored
once. The canonical form hashed here is a stable, on-disk format: every kbid already
written into a knowledge base (and the ``kbid_hash`` in ``vectors.idx``) depends on it.
Changing any rule below is a format change and needs a migration.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Sequence

from kbdb.errors import InvalidArgumentError

KBID_HEX_LEN = 32
"""Length of a kbid: 16 bytes of SHA-256, hex-encoded."""

_KBID_BYTES = KBID_HEX_LEN // 2


def canonical_content(content: str) -> str:
    """Normalize section content so that cosmetic edits do not change its kbid.

    The rules, applied in this order:

    1. line endings: ``\\r\\n`` and lone ``\\r`` become ``\\n``;
    2. Unicode normalization form NFC;
    3. trailing whitespace is stripped from every line (the characters for which
       ``str.isspace()`` is true);
    4. leading and trailing blank lines are removed (a line is blank when nothing is
       left after step 3). The result has no trailing newline.

    Interior blank lines and leading indentation are kept: they carry meaning in
    Markdown (paragraphs, code blocks).

    Args:
        content: Section text as learned.

    Returns:
        The canonical text, possibly empty.
    """
    text = content.replace("\r\n", "\n").replace("\r", "\n")
    text = unicodedata.normalize("NFC", text)
    lines = [line.rstrip() for line in text.split("\n")]
    start = 0
    end = len(lines)
    while start < end and not lines[start]:
        start += 1
    while end > start and not lines[end - 1]:
        end -= 1
    return "\n".join(lines[start:end])


def canonical_form(type: str, heading: str, content: str) -> str:
    """The exact string whose hash is the kbid (see ``compute_kbid``).

    Args:
        type: MIME type of the section, e.g. ``text/markdown``.
        heading: Section heading, possibly empty.
        content: Section content.

    Returns:
        ``type + "\\x00" + heading + "\\x00" + content`` after normalizing each part.
    """
    norm_type = type.strip().lower()
    norm_heading = unicodedata.normalize("NFC", heading.strip())
    return f"{norm_type}\x00{norm_heading}\x00{canonical_content(content)}"


def compute_kbid(type: str, heading: str, content: str) -> str:
    """Compute a section's kbid, its content address.

    Stable format (SPEC §2): the kbid is the first 16 bytes of SHA-256 over the UTF-8
    encoding of the canonical form

        ``type.strip().lower() + "\\x00" + NFC(heading.strip()) + "\\x00"
        + canonical_content(content)``

    written as 32 lowercase hexadecimal characters. ``canonical_content`` normalizes
    line endings, applies NFC, strips trailing whitespace per line and drops leading and
    trailing blank lines. So CRLF versus LF, trailing spaces or an extra blank line at
    the end give the same kbid; any change to the heading, the type or a visible
    character gives a different one. The same 16 bytes are the ``kbid_hash`` of
    ``vectors.idx``.

    Args:
        type: MIME type, e.g. ``text/markdown`` or ``image/png``.
        heading: Section heading (may be empty).
        content: Section content (base64 data for images).

    Returns:
        32 lowercase hex characters.

    Raises:
        InvalidArgumentError: The text holds a lone surrogate and cannot be UTF-8.
    """
    form = canonical_form(type, heading, content)
    try:
        data = form.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"section text is not valid Unicode (lone surrogate at character {exc.start})",
            hint="send the content as UTF-8 text",
        ) from None
    return hashlib.sha256(data).digest()[:_KBID_BYTES].hex()


def kbid_hash(kbid: str) -> bytes:
    """The 16 raw bytes of a kbid, as stored in ``vectors.idx``.

    Args:
        kbid: A kbid as returned by ``compute_kbid``.

    Returns:
        16 bytes.

    Raises:
        InvalidArgumentError: ``kbid`` is not 32 hex characters.
    """
    if len(kbid) != KBID_HEX_LEN:
        raise InvalidArgumentError(f"kbid must be {KBID_HEX_LEN} hex characters: {kbid!s}")
    try:
        return bytes.fromhex(kbid)
    except ValueError:
        raise InvalidArgumentError(f"kbid is not hexadecimal: {kbid!s}") from None


def source_key(source: str, heading_path: Sequence[str]) -> str:
    """The logical identity of a section, used for supersession (SPEC §2).

    Args:
        source: The file path relative to the learn root, in POSIX form, or the docid
            for content given through the API.
        heading_path: Headings from the top of the document down to the section, as in
            ``ParsedSection.heading_path``. Empty for a preamble or headless section.

    Returns:
        ``"{source}#{'/'.join(heading_path)}"``, e.g. ``"guide/setup.md#Install/Linux"``.
    """
    return f"{source}#{'/'.join(heading_path)}"
