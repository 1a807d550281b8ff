"""Conversation transcripts (SPEC §18; docs/conversations.md): chat logs read into
sessions of turns.

Two record shapes are accepted, one per JSONL line or as the elements of a JSON list:

- the OpenAI messages shape: ``role``, ``content`` (a string, or a list of parts whose
  ``{"type": "text", "text": ...}`` parts are kept), optional ``name`` (the speaker when
  given, else the role);
- plain turns: ``speaker``, ``text`` (or ``content``).

Either may carry a time (``time``, ``timestamp``, ``created_at``, ``date``) and a
``session``, which splits one file into several sessions. A JSON file is a transcript when
its top level is a list of objects that each have ``role`` or ``speaker``, or an object
whose ``messages`` is such a list; any other JSON stays one ``application/json`` section.

A record that cannot be a turn is a ``Problem`` with a stable code, and the others are
kept: the file is never all-or-nothing because of one record. A JSONL line longer than
the record limit is skipped without being held in memory.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kbdb.ingest.section import ParsedDocument, ParsedSection

CHAT_INVALID_JSON = "CHAT_INVALID_JSON"
"""Skip code: a JSONL line that is not JSON (or not UTF-8)."""
CHAT_NOT_A_RECORD = "CHAT_NOT_A_RECORD"
"""Skip code: a line or list element that is not a JSON object."""
CHAT_SPEAKER_MISSING = "CHAT_SPEAKER_MISSING"
"""Skip code: a record with neither ``speaker`` nor ``role`` (nor ``name``)."""
CHAT_TEXT_MISSING = "CHAT_TEXT_MISSING"
"""Skip code: a record without text (no ``text``/``content``, or only non-text parts)."""
CHAT_TIME_INVALID = "CHAT_TIME_INVALID"
"""Skip code: a record whose time does not parse."""
CHAT_RECORD_TOO_LARGE = "CHAT_RECORD_TOO_LARGE"
"""Skip code: a JSONL line over ``learn.max_file_bytes``."""
CHAT_NO_TURNS = "CHAT_NO_TURNS"
"""Skip code: a transcript file in which no record is a turn."""

SKIP_CODES = (
    CHAT_INVALID_JSON,
    CHAT_NOT_A_RECORD,
    CHAT_SPEAKER_MISSING,
    CHAT_TEXT_MISSING,
    CHAT_TIME_INVALID,
    CHAT_RECORD_TOO_LARGE,
    CHAT_NO_TURNS,
)

TURN_SECTION_TYPE = "turn"
"""The ``section_type`` of every turn, so ``--section-type turn`` keeps conversations."""

TURN_TYPE = "text/markdown"
"""The MIME type of a turn's section: agents write Markdown."""

TIME_KEYS = ("time", "timestamp", "created_at", "date")
"""Record keys read as the turn's time, the first present wins."""

_STORE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# Human forms seen in chat exports, besides ISO 8601 (LoCoMo writes "1:56 pm on 8 May, 2023").
_HUMAN_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%d %B %Y", "%B %d, %Y")
# Epoch numbers at or above this are milliseconds (1e11 s is the year 5138).
_EPOCH_MS = 1e11
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Turn:
    """One utterance.

    Attributes:
        speaker: Who spoke: ``speaker``, else ``name``, else ``role``.
        text: What was said, stripped.
        time: When, in the store's UTC form ``YYYY-MM-DDTHH:MM:SSZ``; None when the record
            has no time (the turn then takes the moment it is learned).
        where: The 1-based line (JSONL) or element (JSON list) it came from.
    """

    speaker: str
    text: str
    time: str | None
    where: int


@dataclass(frozen=True)
class ChatSession:
    """A conversation: one document. ``key`` is the records' ``session`` value (None for
    a file without one); ``title`` the document's title, if known."""

    key: str | None
    title: str | None
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Problem:
    """A record that is not learned: its line or element, a stable code and why."""

    where: int
    code: str
    reason: str


@dataclass(frozen=True)
class Transcript:
    """A transcript file's sessions, in order of first appearance, and its bad records."""

    sessions: tuple[ChatSession, ...]
    problems: tuple[Problem, ...]


def is_transcript(value: object) -> bool:
    """Whether a parsed JSON document has a transcript's shape (module docstring)."""
    if isinstance(value, dict):
        messages = value.get("messages")
        return isinstance(messages, list) and _records(messages)
    return isinstance(value, list) and _records(value)


def _records(items: list[Any]) -> bool:
    return bool(items) and all(
        isinstance(r, dict) and ("role" in r or "speaker" in r) for r in items
    )


def from_json(value: object) -> Transcript:
    """The sessions of a parsed JSON transcript (``is_transcript(value)`` holds)."""
    title: str | None = None
    items: list[Any]
    if isinstance(value, dict):
        items = list(value.get("messages") or [])
        raw_title = value.get("title")
        title = raw_title.strip() if isinstance(raw_title, str) and raw_title.strip() else None
    else:
        items = list(value) if isinstance(value, list) else []
    return _collect(((i, r) for i, r in enumerate(items, 1)), title)


def read_jsonl(path: Path, *, max_record_bytes: int) -> Transcript:
    """The sessions of a JSONL transcript, read a line at a time: a line over
    ``max_record_bytes`` is skipped unread (``CHAT_RECORD_TOO_LARGE``).

    Raises:
        OSError: the file cannot be opened or read.
    """
    problems: list[Problem] = []

    def records() -> Iterator[tuple[int, object]]:
        for n, line in _lines(path, max_record_bytes):
            if line is None:
                problems.append(
                    Problem(
                        n,
                        CHAT_RECORD_TOO_LARGE,
                        f"line is over learn.max_file_bytes ({max_record_bytes} bytes)",
                    )
                )
                continue
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except (ValueError, RecursionError) as exc:
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                problems.append(Problem(n, CHAT_INVALID_JSON, f"not JSON: {reason}"))

    out = _collect(records(), None)
    merged = sorted((*problems, *out.problems), key=lambda p: p.where)
    return Transcript(out.sessions, tuple(merged))


def _lines(path: Path, limit: int) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` of each line, None for a line over ``limit`` bytes (read
    past in chunks, never whole)."""
    with path.open("rb") as f:
        n = 0
        while True:
            line = f.readline(limit + 1)
            if not line:
                return
            n += 1
            if n == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            body = line.rstrip(b"\r\n")
            if len(body) <= limit:
                yield n, body
                continue
            while not line.endswith(b"\n"):
                line = f.readline(_CHUNK)
                if not line:
                    break
            yield n, None


def _collect(records: Iterable[tuple[int, object]], title: str | None) -> Transcript:
    sessions: dict[str | None, list[Turn]] = {}
    problems: list[Problem] = []
    for where, record in records:
        got = turn_of(record, where)
        if isinstance(got, Problem):
            problems.append(got)
            continue
        turn, key = got
        sessions.setdefault(key, []).append(turn)
    out = tuple(
        ChatSession(key, key if key is not None else title, tuple(turns))
        for key, turns in sessions.items()
    )
    return Transcript(out, tuple(problems))


def turn_of(record: object, where: int) -> tuple[Turn, str | None] | Problem:
    """A record as a turn and its session key, or the problem that keeps it out."""
    if not isinstance(record, dict):
        return Problem(where, CHAT_NOT_A_RECORD, "not a JSON object")
    speaker = _name(record.get("speaker")) or _name(record.get("name"))
    speaker = speaker or _name(record.get("role"))
    if speaker is None:
        return Problem(where, CHAT_SPEAKER_MISSING, "no speaker, name or role")
    raw = record.get("text") if "text" in record else record.get("content")
    text = _text(raw)
    if not text:
        return Problem(where, CHAT_TEXT_MISSING, f"no text in {speaker}'s record")
    time: str | None = None
    for key in TIME_KEYS:
        if record.get(key) is not None:
            try:
                time = parse_time(record[key])
            except ValueError:
                return Problem(
                    where, CHAT_TIME_INVALID, f"{key} {str(record[key])[:80]!r} does not parse"
                )
            break
    session = record.get("session")
    named = None if session is None or isinstance(session, (dict, list)) else str(session)
    return Turn(speaker, text, time, where), named


def _name(value: object) -> str | None:
    if value is None or isinstance(value, (dict, list, bool)):
        return None
    name = " ".join(str(value).split())
    return name or None


def _text(value: object) -> str:
    """A record's text: a string, or the text parts of a content list."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        parts = [
            p["text"]
            for p in value
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        return "\n\n".join(p.strip() for p in parts if p.strip())
    return ""


def parse_time(value: object) -> str:
    """A turn's time in the store's UTC form. Accepted: ISO 8601 (without a zone: UTC), a
    date, epoch seconds or milliseconds, and ``1:56 pm on 8 May, 2023``.

    Raises:
        ValueError: anything else.
    """
    if isinstance(value, bool):
        raise ValueError("a boolean is not a time")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError("not a finite number")
        seconds = value / 1000 if abs(value) >= _EPOCH_MS else value
        try:
            moment = datetime.fromtimestamp(seconds, timezone.utc)
        except (OverflowError, OSError) as exc:
            raise ValueError(str(exc)) from None
    elif isinstance(value, str):
        moment = _parse_text(value.strip())
    else:
        raise ValueError("not a string or a number")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime(_STORE_FORMAT)


def _parse_text(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        pass
    for fmt in _HUMAN_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise ValueError(f"unknown time form {text!r}")


_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def turn_heading(speaker: str, time: str | None) -> str:
    """A turn's heading: the speaker, then its time as words, to the minute (to the second
    when the seconds are not zero): ``Caroline · 8 May 2023 13:56``.

    The time is in the heading so that the same words said at two moments are two
    sections (the kbid hashes the heading), each with its own time; and in words, so that
    "May 2023" finds it. The words also keep the heading from being the bare name: a
    name alone as the heading outweighs the body for every turn of that speaker
    (docs/conversations.md, LoCoMo).

    The heading is hashed into every turn's kbid: changing this form changes the kbids of
    conversations learned before, so it is a stored format like ``kbid.canonical_form``."""
    if time is None:
        return speaker
    year, month, day = time[:4], int(time[5:7]), int(time[8:10])
    clock = time[11:19]
    clock = clock[:5] if clock.endswith(":00") else clock
    return f"{speaker} · {day} {_MONTHS[month - 1]} {year} {clock}"


def split_session(session: ChatSession, *, lines: bool = False) -> ParsedDocument:
    """A session as a parsed document: one level-1 section a turn, in order. Each turn
    after the first carries the one before it as its context (:func:`turn_context`).
    ``lines``: the turns' ``where`` are lines of the file (JSONL), so they are cited."""
    sections: list[ParsedSection] = []
    seen: dict[str, int] = {}
    previous = None
    for turn in session.turns:
        heading = unicodedata.normalize("NFC", turn_heading(turn.speaker, turn.time))
        n = seen.get(heading, 0) + 1
        seen[heading] = n
        path = heading if n == 1 else f"{heading} ({n})"
        sections.append(
            ParsedSection(
                heading=heading,
                level=1,
                parent=None,
                content=turn.text + "\n",
                body=turn.text + "\n",
                code="",
                heading_path=(path,),
                speaker=turn.speaker,
                time=turn.time,
                context=None if previous is None else turn_context(previous),
                start_line=turn.where if lines else None,
                end_line=turn.where if lines else None,
            )
        )
        previous = turn
    return ParsedDocument(session.title, None, (), tuple(sections), ())


# The most of the previous turn a turn's context holds, in characters.
CONTEXT_CHARS = 1_000


def turn_context(previous: Turn) -> str:
    """What a turn is indexed with besides its own text: the text of the turn before it in
    the session, whose words an answer often leaves out ("What are you researching?" /
    "Adoption agencies."). Stored as the section's description, it adds to the ``body``
    field's matches but not to the content, the snippet or the embedding. The previous
    speaker's name is left out: it would make every reply to Caroline match "Caroline"
    (measured on LoCoMo: nDCG@10 0.489 with "Before this, Caroline said: …", 0.531
    without)."""
    text = previous.text
    if len(text) > CONTEXT_CHARS:
        text = text[:CONTEXT_CHARS].rsplit(" ", 1)[0] + " …"
    return text


def session_text(session: ChatSession) -> str:
    """A canonical text of a session, for the document's checksum."""
    rows: Sequence[tuple[str, str | None, str]] = [
        (t.speaker, t.time, t.text) for t in session.turns
    ]
    return json.dumps([session.key, session.title, rows], ensure_ascii=False)
