"""Measure a PDF's streams before PDFium parses it, so a decompression bomb is refused
instead of exhausting memory.

PDFium inflates a page's content stream whole and keeps about 200 bytes per character
of the text it finds (measured: a 400 KB file whose one page draws 200 MB of text took
12 GiB and 42 s). So before a page is parsed, every stream that is not an image is
inflated here, a chunk at a time and without keeping the output, and two things are
counted: its inflated size and the bytes inside its string operands (an upper bound on
the characters it can show). Streams are found by their ``stream`` keyword, which also
finds those an object stream or a broken cross-reference table would hide.

Filters measured: FlateDecode (also chained), LZWDecode, RunLengthDecode, ASCIIHexDecode
and ASCII85Decode. A stream with another filter (DCT, JPX, JBIG2, CCITT: image codecs)
is left to PDFium, which decodes those only to render.
"""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from kbdb.ingest.documents.common import too_large

MAX_STREAM_BYTES = 64 * 1024 * 1024
"""Inflated size of one non-image stream (the largest page in the benchmark corpus, a
CAD drawing, is 1.2 MiB)."""

MAX_TOTAL_STREAM_BYTES = 512 * 1024 * 1024
"""Inflated size of all non-image streams of a file together (this bounds the time)."""

MAX_STREAM_TEXT_BYTES = 1024 * 1024
"""Bytes of strings one stream may show: about a million characters, ~200 MiB inside
PDFium for one page (a dense page of text shows about 5,000)."""

_CHUNK = 1 << 20
_STREAM = re.compile(rb"\bstream(?:\r\n|\n|\r)")
_FILTER = re.compile(rb"/Filter\s*(\[[^\]]*\]|/[A-Za-z0-9]+)")
_IMAGE = re.compile(rb"/Subtype\s*/Image\b")
_NAME = re.compile(rb"/([A-Za-z0-9]+)")
_STRINGS = re.compile(rb"\((?:[^()\\]|\\.)*\)|<[0-9A-Fa-f\s]*>", re.S)
_ALIASES = {
    b"Fl": b"FlateDecode",
    b"LZW": b"LZWDecode",
    b"RL": b"RunLengthDecode",
    b"AHx": b"ASCIIHexDecode",
    b"A85": b"ASCII85Decode",
}
_DICT_WINDOW = 4096  # how far before ``stream`` its dictionary is looked for


@dataclass
class _Totals:
    inflated: int = 0


def check_streams(data: bytes) -> None:
    """Raise ``CONTENT_TOO_LARGE`` when a stream of ``data`` inflates past the limits.

    Raises:
        FormatRejectedError: a stream or the file is over a limit.
    """
    totals = _Totals()
    for start, filters in _streams(data):
        size, text = _measure(data, start, filters)
        totals.inflated += size
        if size > MAX_STREAM_BYTES:
            raise too_large(f"pdf stream inflates to more than {MAX_STREAM_BYTES} bytes")
        if text > MAX_STREAM_TEXT_BYTES:
            raise too_large(
                f"pdf page draws more than {MAX_STREAM_TEXT_BYTES} bytes of text in one stream"
            )
        if totals.inflated > MAX_TOTAL_STREAM_BYTES:
            raise too_large(f"pdf streams inflate to more than {MAX_TOTAL_STREAM_BYTES} bytes")


def _streams(data: bytes) -> Iterator[tuple[int, list[bytes]]]:
    """(offset of the data, filter names) of each compressed non-image stream."""
    for m in _STREAM.finditer(data):
        head = data[max(0, m.start() - _DICT_WINDOW) : m.start()]
        head = head[head.rfind(b"obj") + 3 :] if b"obj" in head else head
        if _IMAGE.search(head):
            continue
        found = _FILTER.search(head)
        if found is None:
            continue  # raw data: no larger than the file
        names = [_ALIASES.get(n, n) for n in _NAME.findall(found.group(1))]
        if names:
            yield m.end(), names


def _measure(data: bytes, start: int, filters: list[bytes]) -> tuple[int, int]:
    """Inflated size and string bytes of the stream at ``start``; (0, 0) when a filter is
    not one measured here. Every filter stops at its own end-of-data marker, so the
    stream's length need not be known."""
    raw: bytes | memoryview = memoryview(data)[start:]
    for i, name in enumerate(filters):
        last = i == len(filters) - 1
        if name == b"FlateDecode":
            if last:
                return _count_flate(raw)
            raw = _inflate(raw)
        elif name == b"ASCIIHexDecode":
            raw = _hex(raw)
        elif name == b"ASCII85Decode":
            raw = _a85(raw)
        elif name == b"LZWDecode":
            raw = _lzw(raw)
        elif name == b"RunLengthDecode":
            raw = _run_length(raw)
        else:
            return 0, 0
        if len(raw) > MAX_STREAM_BYTES:
            return len(raw), 0
    return len(raw), _text_bytes(bytes(raw))


def _count_flate(raw: bytes | memoryview) -> tuple[int, int]:
    inflater = zlib.decompressobj()
    size = text = 0
    pos = 0
    carry = b""  # an open string at the end of the last chunk
    while size <= MAX_STREAM_BYTES and not inflater.eof:
        if inflater.unconsumed_tail:
            chunk = inflater.unconsumed_tail
        elif pos < len(raw):
            chunk = bytes(raw[pos : pos + _CHUNK])
            pos += _CHUNK
        else:
            break
        try:
            out = inflater.decompress(chunk, _CHUNK)
        except zlib.error:
            break  # a damaged stream: PDFium reads what it can, as much as inflated here
        size += len(out)
        found, carry = _open_text(carry + out)
        text += found
        if text + len(carry) > MAX_STREAM_TEXT_BYTES:
            return size, text + len(carry)
    return size, text


def _inflate(raw: bytes | memoryview) -> bytes:
    inflater = zlib.decompressobj()
    try:
        return inflater.decompress(bytes(raw), MAX_STREAM_BYTES + 1)
    except zlib.error:
        return b""


def _open_text(content: bytes) -> tuple[int, bytes]:
    """String bytes of the strings closed in ``content``, and the string left open at its
    end (counted with the next chunk, so one long string cannot hide across chunks)."""
    total = 0
    end = 0
    for m in _STRINGS.finditer(content):
        s = m.group()
        total += len(s) - 2 if s[:1] == b"(" else (len(s) - 2) // 2
        end = m.end()
    tail = content[end:]
    opened = max(tail.rfind(b"("), tail.rfind(b"<"))
    return total, tail[opened:] if opened >= 0 else b""


def _text_bytes(content: bytes) -> int:
    total = 0
    for m in _STRINGS.finditer(content):
        s = m.group()
        total += len(s) - 2 if s[:1] == b"(" else (len(s) - 2) // 2
    return total


def _hex(raw: bytes | memoryview) -> bytes:
    data = bytes(raw[: MAX_STREAM_BYTES * 2])
    end = data.find(b">")
    digits = re.sub(rb"\s+", b"", data if end < 0 else data[:end])
    return bytes.fromhex((digits + b"0" * (len(digits) % 2)).decode("ascii", "replace"))


def _a85(raw: bytes | memoryview) -> bytes:
    data = bytes(raw[: MAX_STREAM_BYTES * 2])
    end = data.find(b"~>")
    try:
        return base64.a85decode(data[: end + 2] if end >= 0 else data, adobe=False)
    except ValueError:
        return b""


def _run_length(raw: bytes | memoryview) -> bytes:
    out = bytearray()
    i = 0
    while i < len(raw) and len(out) <= MAX_STREAM_BYTES:
        n = raw[i]
        if n == 128:
            break
        if n < 128:
            out += raw[i + 1 : i + 2 + n]
            i += n + 2
        else:
            out += bytes(raw[i + 1 : i + 2]) * (257 - n)
            i += 2
    return bytes(out)


def _lzw(raw: bytes | memoryview) -> bytes:
    """LZW with the PDF defaults (early change), stopping past ``MAX_STREAM_BYTES``."""
    table = [bytes([i]) for i in range(256)] + [b"", b""]
    out = bytearray()
    width, buffer, bits = 9, 0, 0
    previous: bytes | None = None
    for byte in bytes(raw[:MAX_STREAM_BYTES]):
        buffer = (buffer << 8) | byte
        bits += 8
        while bits >= width:
            bits -= width
            code = (buffer >> bits) & ((1 << width) - 1)
            if code == 256:
                table, width, previous = table[:258], 9, None
                continue
            if code == 257 or len(out) > MAX_STREAM_BYTES:
                return bytes(out)
            if code < len(table):
                entry = table[code]
            elif previous is not None and code == len(table):
                entry = previous + previous[:1]
            else:
                return bytes(out)
            out += entry
            if previous is not None and len(table) < 4096:
                table.append(previous + entry[:1])
            previous = entry
            if len(table) + 1 >= (1 << width) and width < 12:
                width += 1
    return bytes(out)
