"""What ``check`` says of the links between notes (docs/maintenance.md, Links between
notes): warnings, never errors, since a link to a note not written yet is how a vault
grows.

Each link that is not plainly resolved is one warning of its status (``link_dangling``,
``link_outside``, ``link_ambiguous``, ``link_missing_heading``), naming the linking
document, section and line and the target as written; a live Markdown or HTML document
that no other document links to is a ``note_orphan``, once the knowledge base has links
at all. Links to attachments (a target with a file extension that is not a note's:
``diagram.png``, ``paper.pdf``) that resolve to nothing are a vault's normal state, since
kbdb learns notes, not images: they make one ``link_attachments`` warning with their
count and the first of them.

At most ``LISTED_PER_CODE`` warnings of each code are listed, then one ``truncated``
warning counts the rest: a vault with 10,000 dangling links yields a report that can be
read. The links are streamed from one read snapshot, so memory does not grow with them.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Protocol

from kbdb.store import check as sql
from kbdb.store.links import NOTE_SUFFIXES

LISTED_PER_CODE = 100
"""Link and orphan warnings listed per code; the rest are counted."""

CODES = (
    "link_dangling",
    "link_outside",
    "link_ambiguous",
    "link_missing_heading",
    "link_attachments",
    "note_orphan",
)

SHOWN_CHARS = 120
"""A target longer than this is cut in a warning's text (a line can hold any)."""

_EXTENSION = re.compile(r"[^.]\.([A-Za-z0-9]{1,8})$")


class AddFn(Protocol):
    def __call__(
        self,
        code: str,
        detail: str,
        *,
        kbid: str | None = None,
        docid: str | None = None,
        line: int | None = None,
        warning: bool = False,
    ) -> None: ...


def is_attachment(target: str) -> bool:
    """Whether a link target names a file that is not a note: its last path component
    ends in an extension of up to 8 letters and digits, not all digits (``Release 1.2``
    is a note's name), other than ``.md``, ``.markdown``, ``.html``, ``.htm``."""
    name = target.replace("\\", "/").rstrip("/").rpartition("/")[2].strip()
    m = _EXTENSION.search(name)
    if m is None or m.group(1).isdigit():
        return False
    return "." + m.group(1).casefold() not in NOTE_SUFFIXES


def check_links(conn: sqlite3.Connection, add: AddFn) -> int:
    """Add the link warnings of the snapshot ``conn`` reads; returns the links checked."""
    if not sql.has_link_tables(conn):
        return 0
    attachments = 0
    first: tuple[str, str, str, int | None] | None = None  # written, docid, kbid, line
    ambiguous = 0
    problems = sql.iter_link_problems(conn)
    for status, docid, kbid, line, kind, target, fragment, name, to_docid in problems:
        written = _written(kind, target, fragment)
        if status in ("dangling", "outside") and is_attachment(target):
            attachments += 1
            if first is None:
                first = (written, docid, kbid, line)
            continue
        if status == "dangling":
            code, detail = "link_dangling", f"{written} names no learned note"
        elif status == "outside":
            code = "link_outside"
            detail = f"{written} leads outside the learned folders; it is not followed"
        elif status == "ambiguous":
            ambiguous += 1  # the notes of the name are looked up for the listed ones only
            listed = ambiguous <= LISTED_PER_CODE
            others = _namesakes(conn, name, target, to_docid) if listed else ""
            code = "link_ambiguous"
            detail = f"{written} goes to {to_docid} (same folder first, then shortest path){others}"
        elif status == "missing_heading":
            frag = fragment or ""
            what = f"block {frag}" if frag.startswith("^") else f"heading {_shown(frag)!r}"
            code = "link_missing_heading"
            detail = f"{written}: {to_docid} has no {what}; the link goes to the note"
        else:
            continue
        add(code, detail, kbid=kbid, docid=docid, line=line, warning=True)
    if first is not None:
        written, docid, kbid, line = first
        add(
            "link_attachments",
            f"{attachments} link(s) to files that are not notes (images, PDFs, …) lead to"
            f" nothing learned; counted, not listed; the first: {written}",
            kbid=kbid,
            docid=docid,
            line=line,
            warning=True,
        )
    for docid in sql.iter_orphan_notes(conn):
        add("note_orphan", "no other document links to this note", docid=docid, warning=True)
    return sql.link_count(conn)


def _namesakes(conn: sqlite3.Connection, name: str, target: str, chosen: str | None) -> str:
    """``; also so named: a.md, b.md``: the other live notes the target could mean."""
    found = sql.live_named(conn, name, "file", 6)
    if len(found) < 2:
        found = sql.live_named(conn, target.strip().casefold(), "alias", 6)
    others = [d for d in found if d != chosen]
    if not others:
        return ""
    more = ", …" if len(found) == 6 else ""
    return f"; also so named: {', '.join(others[:5])}{more}"


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def _written(kind: str, target: str, fragment: str | None) -> str:
    """The link much as it was written: ``[[Note#Heading]]``, ``[…](path.md#anchor)``,
    ``<a href="page.html">``, ``embed "img.png"`` (``![[…]]`` and ``![…](…)`` are both
    stored as embeds)."""
    dest = _shown(target + (f"#{fragment}" if fragment is not None else ""))
    if kind == "wikilink":
        return f"[[{dest}]]"
    if kind == "embed":
        return f'embed "{dest}"'
    if kind == "html":
        return f'<a href="{dest}">'
    return f"[…]({dest})"
