"""The export snapshot format (SPEC §8.4; docs/maintenance.md describes it for users).

```
<target>/
  kbdb-export.toml                       the catalog: format, version, counts, documents
  documents/<safe docid>-<sha16>.toml    one per document: fields, tags, aliases, entries
  sections/<kbid[:2]>/<kbid>.md          one per section: TOML front matter (its links as
                                         [[links]] tables), then content
```

Version 2 added the links of a section and the aliases of a document; a version 1
snapshot, which has neither, still imports.

Every byte is a function of the data: keys in a fixed order, strings in one escaped
single-line form, files sorted, no time of export. So export → import → export gives the
same tree, and a re-export of an unchanged knowledge base rewrites nothing. File names
come only from kbids (checked to be hex) and from docids reduced to ``[A-Za-z0-9_-]`` plus
a hash of the exact docid, so no stored value can steer a path.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]

from kbdb.errors import InvalidArgumentError, KbdbError
from kbdb.ingest.kbid import compute_kbid

FORMAT = "kbdb-export"
VERSION = 2
READABLE_VERSIONS = (1, 2)
CATALOG = "kbdb-export.toml"
SECTIONS = "sections"
DOCUMENTS = "documents"
FENCE = "+++\n"

KBID_RE = re.compile(r"[0-9a-f]{32}")
DOC_FILE_RE = re.compile(r"[A-Za-z0-9_-]{1,64}-[0-9a-f]{16}\.toml")
MIME_RE = re.compile(r"(text/[a-z0-9.+-]+|application/json|image/[a-z0-9.+-]+)")

# Front-matter keys in file order; (key, type, required).
SECTION_KEYS: tuple[tuple[str, type, bool], ...] = (
    ("kbid", str, True),
    ("heading", str, True),
    ("level", int, True),
    ("parent", str, False),
    ("type", str, True),
    ("section_type", str, True),
    ("title", str, False),
    ("description", str, False),
    ("tags", list, True),
    ("docids", list, True),
    ("source_key", str, False),
    ("created_at", str, True),
    ("retired_at", str, False),
    ("superseded_by", str, False),
    ("retire_reason", str, False),
    ("speaker", str, False),
    ("spoken_at", str, False),
)
DOCUMENT_KEYS: tuple[tuple[str, type, bool], ...] = (
    ("docid", str, True),
    ("title", str, False),
    ("description", str, False),
    ("source_path", str, False),
    ("type", str, True),
    ("checksum", str, True),
    ("created_at", str, True),
    ("updated_at", str, True),
    ("tags", list, True),
    ("aliases", list, False),
)
ENTRY_KEYS: tuple[tuple[str, type, bool], ...] = (
    ("kbid", str, True),
    ("ord", int, True),
    ("live", bool, True),
    ("start_line", int, False),
    ("end_line", int, False),
    ("page", int, False),
)

# A section's links as written (``kbdb.ingest.links.Link``), in the order stored.
LINK_KEYS: tuple[tuple[str, type, bool], ...] = (
    ("kind", str, True),
    ("target", str, True),
    ("fragment", str, False),
    ("label", str, False),
    ("line", int, True),
)
LINK_KINDS = ("wikilink", "embed", "markdown", "html")

Entry = tuple[str, int, bool, int | None, int | None, int | None]
"""A document's entry: (kbid, ord, live, start_line, end_line, page); the last three are
where the section is in the document's source, None when unknown."""


class SnapshotError(InvalidArgumentError):
    """The snapshot is not a valid kbdb export; nothing was imported."""


# -- names -----------------------------------------------------------------------------------


def document_file(docid: str) -> str:
    """``<safe>-<sha16>.toml``: readable where the docid allows, unique by its hash."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", docid).strip("_")[:64] or "document"
    digest = hashlib.sha256(docid.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{safe}-{digest}.toml"


def section_parts(kbid: str) -> tuple[str, str, str]:
    if not KBID_RE.fullmatch(kbid):
        raise InvalidArgumentError(
            f"kbid {kbid!r} is not 32 lower-case hex characters; it cannot name a file",
            hint="run 'kbdb check' to find the damaged section",
        )
    return SECTIONS, kbid[:2], f"{kbid}.md"


# -- encoding --------------------------------------------------------------------------------


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        # JSON's escaped string is a TOML basic string, except that TOML also escapes DEL.
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to a snapshot")


def _table(values: Mapping[str, Any], keys: Sequence[tuple[str, type, bool]]) -> str:
    return "".join(
        f"{k} = {_value(values[k])}\n" for k, _t, _r in keys if values.get(k) is not None
    )


def encode_section(s: Mapping[str, Any]) -> bytes:
    """A section file: front matter between ``+++`` lines (its links last, one
    ``[[links]]`` table each), then the content verbatim."""
    content: str = s["content"]
    links = "".join(f"\n[[links]]\n{_table(k, LINK_KEYS)}" for k in s.get("links", ()))
    return (FENCE + _table(s, SECTION_KEYS) + links + FENCE + content).encode("utf-8")


def encode_document(d: Mapping[str, Any], entries: Sequence[Entry]) -> bytes:
    out = [_table(d, DOCUMENT_KEYS)]
    for entry in entries:
        values = dict(zip((k for k, _t, _r in ENTRY_KEYS), entry, strict=True))
        out.append(f"\n[[entries]]\n{_table(values, ENTRY_KEYS)}")
    return "".join(out).encode("utf-8")


def encode_catalog(sections: int, documents: Sequence[str]) -> bytes:
    out = [
        f"format = {_value(FORMAT)}\n",
        f"version = {VERSION}\n",
        f"sections = {sections}\n",
        f"documents = {len(documents)}\n",
    ]
    for docid in documents:
        out.append(
            f"\n[[document]]\ndocid = {_value(docid)}\n"
            f"file = {_value(DOCUMENTS + '/' + document_file(docid))}\n"
        )
    return "".join(out).encode("utf-8")


# -- decoding and validation -------------------------------------------------------------------


def _bad(where: Path | str, what: str) -> SnapshotError:
    return SnapshotError(
        f"invalid snapshot file {where}: {what}",
        hint="import a folder written by 'kbdb export', unmodified",
    )


def _fields(
    data: Mapping[str, Any], keys: Sequence[tuple[str, type, bool]], where: Path | str
) -> dict[str, Any]:
    known = {k for k, _t, _r in keys}
    extra = sorted(set(data) - known)
    if extra:
        raise _bad(where, f"unknown field {extra[0]!r}")
    out: dict[str, Any] = {}
    for key, typ, required in keys:
        v = data.get(key)
        if v is None:
            if required:
                raise _bad(where, f"missing field {key!r}")
            out[key] = None
            continue
        if typ is int and (isinstance(v, bool) or not isinstance(v, int)):
            raise _bad(where, f"{key} must be an integer")
        if not isinstance(v, typ):
            raise _bad(where, f"{key} must be a {typ.__name__}")
        if isinstance(v, list) and not all(isinstance(x, str) for x in v):
            raise _bad(where, f"{key} must be a list of strings")
        out[key] = v
    return out


_LINE = re.compile(r"([a-z_]+) = (.+)")
_ARRAY_TABLE = re.compile(r"\[\[([a-z_]+)\]\]")


def _fast_table(text: str) -> dict[str, Any] | None:
    """The TOML this module writes, read line by line: ``key = value`` lines whose values
    are JSON-compatible (strings, integers, booleans, string arrays), blank lines, and
    ``[[name]]`` array-of-tables headers. About 5x faster than ``tomllib``. None when the
    text is anything else, which ``tomllib`` then judges."""
    out: dict[str, Any] = {}
    current = out
    for line in text.splitlines():
        if not line:
            continue
        m = _LINE.fullmatch(line)
        if m is None:
            t = _ARRAY_TABLE.fullmatch(line)
            if t is None or not isinstance(out.setdefault(t.group(1), []), list):
                return None
            current = {}
            out[t.group(1)].append(current)
            continue
        if m.group(1) in current:
            return None
        try:
            v = json.loads(m.group(2))
        except ValueError:
            return None
        if v is None or isinstance(v, (float, dict)):
            return None
        if isinstance(v, list) and not all(isinstance(x, str) for x in v):
            return None
        current[m.group(1)] = v
    return out


def _toml(text: str, where: Path | str) -> dict[str, Any]:
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _bad(where, f"not valid TOML ({e})") from None
    return data


def read_utf8(path: Path) -> str:
    if path.is_symlink() or not path.is_file():
        raise _bad(path, "not a regular file")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise _bad(path, f"not UTF-8 (byte {e.start})") from None


def parse_catalog(root: Path) -> tuple[int, list[str]]:
    """(sections, docids) of a snapshot's catalog."""
    path = root / CATALOG
    if not path.is_file():
        raise SnapshotError(
            f"{root} is not a kbdb export (no {CATALOG})",
            hint="give the folder that 'kbdb export' wrote",
        )
    data = _toml(read_utf8(path), path)
    if data.get("format") != FORMAT or data.get("version") not in READABLE_VERSIONS:
        versions = " or ".join(str(v) for v in READABLE_VERSIONS)
        raise _bad(path, f"format must be {FORMAT!r} version {versions}")
    sections, docs = data.get("sections"), data.get("document", [])
    if not isinstance(sections, int) or not isinstance(docs, list):
        raise _bad(path, "sections must be an integer and document a list of tables")
    docids: list[str] = []
    for d in docs:
        if not isinstance(d, dict) or not isinstance(d.get("docid"), str):
            raise _bad(path, "each [[document]] needs a docid")
        if d.get("file") != f"{DOCUMENTS}/{document_file(d['docid'])}":
            raise _bad(path, f"document {d['docid']!r} has the wrong file name")
        docids.append(d["docid"])
    if data.get("documents") != len(docids):
        raise _bad(path, "documents does not match the [[document]] list")
    if docids != sorted(set(docids)):
        raise _bad(path, "documents must be unique and sorted")
    return sections, docids


def parse_section(path: Path) -> dict[str, Any]:
    """A section file's fields and content; its kbid must name the file and re-hash from
    the content."""
    text = read_utf8(path)
    end = text.find("\n" + FENCE, len(FENCE) - 1)
    if not text.startswith(FENCE) or end < 0:
        raise _bad(path, "no +++ front matter")
    front = text[len(FENCE) : end + 1]
    table = _fast_table(front)
    data = _toml(front, path) if table is None else table
    raw_links = data.pop("links", [])
    s = _fields(data, SECTION_KEYS, path)
    s["links"] = _links(raw_links, path)
    s["content"] = text[end + 1 + len(FENCE) :]
    kbid = s["kbid"]
    if path.name != f"{kbid}.md" or path.parent.name != kbid[:2]:
        raise _bad(path, f"file name does not match kbid {kbid!r}")
    if not 0 <= s["level"] <= 6:
        raise _bad(path, "level must be 0-6")
    if not MIME_RE.fullmatch(s["type"]):
        raise _bad(path, f"type {s['type']!r} is not a supported MIME type")
    for key in ("parent", "superseded_by"):
        if s[key] is not None and not KBID_RE.fullmatch(s[key]):
            raise _bad(path, f"{key} is not a kbid")
    try:
        actual = compute_kbid(s["type"], s["heading"], s["content"])
    except KbdbError as e:
        raise _bad(path, e.message) from None
    if actual != kbid:
        raise _bad(path, f"content hashes to {actual}, not to its kbid (edited?)")
    return s


def _links(raw: Any, path: Path) -> list[dict[str, Any]]:
    """A section's ``[[links]]`` tables, checked."""
    if not isinstance(raw, list) or not all(isinstance(k, dict) for k in raw):
        raise _bad(path, "links must be a list of tables")
    out = []
    for k in raw:
        f = _fields(k, LINK_KEYS, path)
        if f["kind"] not in LINK_KINDS:
            raise _bad(path, f"link kind {f['kind']!r} is not one of {', '.join(LINK_KINDS)}")
        if f["line"] < 0:
            raise _bad(path, "link line must be 0 or more")
        out.append(f)
    return out


def parse_document(path: Path) -> tuple[dict[str, Any], list[Entry]]:
    text = read_utf8(path)
    data = _fast_table(text)
    if data is None:
        data = _toml(text, path)
    raw_entries = data.pop("entries", [])
    d = _fields(data, DOCUMENT_KEYS, path)
    if path.name != document_file(d["docid"]):
        raise _bad(path, f"file name does not match docid {d['docid']!r}")
    if not isinstance(raw_entries, list):
        raise _bad(path, "entries must be a list of tables")
    entries = []
    for e in raw_entries:
        if not isinstance(e, dict):
            raise _bad(path, "entries must be tables")
        f = _fields(e, ENTRY_KEYS, path)
        if not KBID_RE.fullmatch(f["kbid"]):
            raise _bad(path, f"entry kbid {f['kbid']!r} is not a kbid")
        for key in ("start_line", "end_line", "page"):
            if f[key] is not None and f[key] < 1:
                raise _bad(path, f"entry {key} must be 1 or more")
        entries.append((f["kbid"], f["ord"], f["live"], f["start_line"], f["end_line"], f["page"]))
    return d, entries


def section_files(root: Path) -> list[Path]:
    """Every file under ``sections/``, sorted; anything but ``<2 hex>/<kbid>.md`` regular
    files is an error (a snapshot is never partly trusted)."""
    base = root / SECTIONS
    if not base.exists():
        return []
    if base.is_symlink() or not base.is_dir():
        raise _bad(base, "not a folder")
    out: list[Path] = []
    for shard in sorted(base.iterdir()):
        if shard.is_symlink() or not shard.is_dir() or not re.fullmatch(r"[0-9a-f]{2}", shard.name):
            raise _bad(shard, "unexpected entry in sections/")
        for f in sorted(shard.iterdir()):
            if not re.fullmatch(r"[0-9a-f]{32}\.md", f.name) or f.is_symlink() or not f.is_file():
                raise _bad(f, "unexpected entry in sections/")
            out.append(f)
    return out


def document_files(root: Path) -> list[Path]:
    base = root / DOCUMENTS
    if not base.exists():
        return []
    if base.is_symlink() or not base.is_dir():
        raise _bad(base, "not a folder")
    out = sorted(base.iterdir())
    for f in out:
        if not DOC_FILE_RE.fullmatch(f.name) or f.is_symlink() or not f.is_file():
            raise _bad(f, "unexpected entry in documents/")
    return out
