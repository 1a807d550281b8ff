"""What a learn stores: content made into a pending document (sections with their kbids,
source keys, parents and warnings), and the items and progress of the learn calls."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kbdb import clock
from kbdb.ingest import ParsedDocument, compute_kbid, source_key
from kbdb.ingest.content import is_image, normalize_type, split_content
from kbdb.learn.secrets import POSSIBLE_SECRET, find_secrets
from kbdb.store import NewDocument, NewSection, ReplaceMode
from kbdb.types import DEFAULT_SECTION_TYPE


@dataclass(frozen=True)
class LearnProgress:
    """Progress of a ``learn_path``: files done so far and the total when known."""

    files_done: int
    files_total: int | None
    sections: int
    path: str


ProgressFn = Callable[[LearnProgress], None]


def utc_now() -> str:
    return clock.utc_now()


def slug(text: str) -> str:
    s = re.sub(r"[^\w]+", "-", text.strip().lower()).strip("-")
    return s[:80] or "note"


def item_docid(item: LearnItem) -> str:
    """The docid a learned item is stored under: its own, or one made from its title (or
    its first eight words)."""
    return item.docid or slug(item.title or " ".join(item.content.split()[:8]))


@dataclass(frozen=True)
class LearnItem:
    """One block of content for ``KnowledgeBase.learn_many`` (the parameters of ``learn``)."""

    content: str
    type: str = "text/markdown"
    title: str | None = None
    description: str | None = None
    docid: str | None = None
    tags: Sequence[str] = ()
    replace: bool = False
    section_type: str | None = None


@dataclass(frozen=True)
class Pending:
    """A parsed document, ready to be stored."""

    doc: NewDocument
    mode: ReplaceMode
    warnings: dict[str, tuple[str, ...]]


def build_document(
    *,
    docid: str,
    source: str,
    text: str,
    type: str,
    title: str | None,
    description: str | None,
    tags: Sequence[str],
    section_type: str | None,
    source_path: str | None,
    mode: ReplaceMode,
    links: bool = True,
) -> Pending:
    """Check and split ``text`` and compute kbids, source keys, parents and warnings;
    ``links``: keep the links of Markdown and HTML (``learn.links``)."""
    type = normalize_type(type)
    parsed = split_content(text, type, title=title, description=description, links=links)
    return build_parsed(
        parsed,
        docid=docid,
        source=source,
        checksum_text=text,
        type=type,
        title=title,
        description=description,
        tags=tags,
        section_type=section_type,
        source_path=source_path,
        mode=mode,
    )


def build_parsed(
    parsed: ParsedDocument,
    *,
    docid: str,
    source: str,
    checksum_text: str,
    type: str,
    title: str | None,
    description: str | None,
    tags: Sequence[str],
    section_type: str | None,
    source_path: str | None,
    mode: ReplaceMode,
    content_type: str | None = None,
) -> Pending:
    """A split document (of the normalized ``type``) as a pending one: kbids, source
    keys, parents and warnings. ``checksum_text`` stands for its source in the document's
    checksum. ``content_type``: the MIME type of the sections when it is not the
    document's (the text taken out of a PDF is stored as Markdown)."""
    stored_type = content_type or type
    # Lines count in a file; content given in a call has none to cite (SPEC §4.3).
    cited = source_path is not None
    doc_tags = tuple(dict.fromkeys([*tags, *parsed.tags]))
    doc_title = title or parsed.title
    stype = section_type or DEFAULT_SECTION_TYPE
    sections: list[NewSection] = []
    warnings: dict[str, tuple[str, ...]] = {}
    kbids: list[str] = []
    seen_keys: dict[str, int] = {}
    single = len(parsed.sections) == 1
    for ps in parsed.sections:
        kbid = compute_kbid(stored_type, ps.heading, ps.content)
        key = source_key(source, ps.heading_path)
        n = seen_keys.get(key, 0) + 1
        seen_keys[key] = n
        if n > 1:
            key = f"{key}[{n}]"
        parent = kbids[ps.parent] if ps.parent is not None else None
        kbids.append(kbid)
        # A single-section learn carries the caller's title and description itself.
        sec_title = title if (single and title) else None
        sec_desc = description if (single and description) else ps.context
        w: list[str] = list(parsed.warnings) if not sections else []
        if not ps.heading.strip() and not sec_title:
            w.append("heading_missing")
        if not ps.content.strip():
            w.append("empty_content")
        if not is_image(stored_type) and find_secrets(ps.heading + "\n" + ps.content):
            w.append(POSSIBLE_SECRET)
        warnings[kbid] = tuple(dict.fromkeys(warnings.get(kbid, ()) + tuple(w)))
        sections.append(
            NewSection(
                kbid=kbid,
                heading=ps.heading,
                level=ps.level,
                parent=parent,
                content=ps.content,
                type=stored_type,
                section_type=stype,
                title=sec_title,
                description=sec_desc,
                source_key=key,
                tags=doc_tags,
                speaker=ps.speaker,
                spoken_at=ps.time,
                start_line=ps.start_line if cited else None,
                end_line=ps.end_line if cited else None,
                page=ps.page if cited else None,
                links=ps.links,
            )
        )
    checksum = hashlib.sha256(
        f"{type}\x00{title or ''}\x00{description or ''}\x00{checksum_text}".encode()
    ).hexdigest()
    doc = NewDocument(
        docid=docid,
        title=doc_title,
        description=description or parsed.description,
        source_path=source_path,
        type=type,
        checksum=checksum,
        tags=doc_tags,
        sections=tuple(sections),
        aliases=parsed.aliases,
    )
    return Pending(doc, mode, warnings)
