"""Conversation transcripts learned from files (docs/conversations.md): each session a
document, each turn a section, each bad record a skip with its code.

The parsing is ``kbdb.ingest.chat``; this module names the documents and turns sessions
into pending ones, as ``learner.parse_file`` does for any other file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from kbdb.ingest import FileEntry
from kbdb.ingest.chat import (
    CHAT_NO_TURNS,
    TURN_SECTION_TYPE,
    TURN_TYPE,
    ChatSession,
    Transcript,
    from_json,
    is_transcript,
    read_jsonl,
    session_text,
    split_session,
)
from kbdb.ingest.walk import JSONL_TYPE
from kbdb.learn.items import Pending, build_parsed
from kbdb.types import SkippedFile


def json_transcript(text: str) -> Transcript | None:
    """The transcript in a ``.json`` file's text, or None when it is not one (not JSON, or
    JSON of another shape: then it is learned as ``application/json``, as before)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return from_json(value) if is_transcript(value) else None


def read_transcript(entry: FileEntry, *, max_record_bytes: int) -> Transcript | None:
    """A ``.jsonl`` file's transcript; None for any other file (a ``.json`` file is read
    as text first, see ``json_transcript``).

    Raises:
        OSError: the file cannot be read.
    """
    if entry.type != JSONL_TYPE:
        return None
    return read_jsonl(entry.path, max_record_bytes=max_record_bytes)


def session_docid(base: str, session: ChatSession) -> str:
    """A session's document id: the file's, with ``#session`` when the records name
    sessions."""
    return base if session.key is None else f"{base}#{session.key}"


def transcript_pendings(
    transcript: Transcript,
    *,
    entry: FileEntry,
    docid: str,
    tags: Sequence[str],
) -> tuple[list[Pending], list[SkippedFile]]:
    """The pending documents of a transcript file whose document id is ``docid``, and its
    skipped records (their path is ``file:line``)."""
    path = str(entry.path)
    skipped = [SkippedFile(f"{path}:{p.where}", p.reason, p.code) for p in transcript.problems]
    pendings: list[Pending] = []
    for session in transcript.sessions:
        doc = session_docid(docid, session)
        pendings.append(
            build_parsed(
                split_session(session, lines=entry.type == JSONL_TYPE),
                docid=doc,
                source=session_docid(entry.rel, session),
                checksum_text=session_text(session),
                type=TURN_TYPE,
                title=None,
                description=None,
                tags=tags,
                section_type=TURN_SECTION_TYPE,
                source_path=os.path.abspath(path),
                mode="document",
            )
        )
    if not pendings and not skipped:
        skipped.append(SkippedFile(path, "no conversation turns", CHAT_NO_TURNS))
    return pendings, skipped
