"""The ``kb.sqlite`` schema: the source of truth (DESIGN §3).

Tables:
- ``documents``: one row per learned source; ``document_tags`` its tags.
- ``sections``: content-addressed sections (primary key ``kbid``); ``section_tags``.
- ``document_sections``: the many-to-many links, in document order. ``live = 0`` keeps the
  link of a retired section so that ``recall`` still reports its documents. A link also
  says where the section is in that document's source: ``start_line`` and ``end_line``
  (from 1, inclusive) and ``page``, each NULL when unknown (a citation, SPEC §4.3).
- ``embeddings``: the embedding cache, keyed by (SHA-256 of the embedded text, model
  name); rebuilds reuse it so unchanged sections are not embedded again.
- ``neardup_sections``, ``neardup_bands``: MinHash band keys of the live sections, for
  near-duplicate candidates (``kbdb.knowledge.neardup``; derived, follows the change log).
- ``section_validity``: when each section was live, one row per interval (time travel,
  ``kbdb.store.history``).
- ``section_turns``: the speaker and time of sections that are conversation turns.
- ``section_anchors``: a section's anchor text, the labels of the links in other notes
  that point at it, as the lexical index's ``anchor`` field holds it (derived from the
  links; a change to it is logged as an ``add`` of the section, which re-indexes it).
- ``changelog``: monotonically increasing ``seq`` of (``add`` | ``retire``, kbid). The
  derived indexes record the ``seq`` they have applied (their watermark) and catch up from
  here, so a crash between the database commit and the index update is harmless.
"""

from __future__ import annotations

from kbdb.store.links import TABLES as LINK_TABLES
from kbdb.store.signatures import TABLES as NEARDUP_TABLES

SCHEMA_VERSION = 2
"""Version 2 added the citation columns of ``document_sections`` (``MIGRATIONS``)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    docid       TEXT PRIMARY KEY,
    title       TEXT,
    description TEXT,
    source_path TEXT,
    type        TEXT NOT NULL,
    checksum    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS document_tags (
    docid TEXT NOT NULL REFERENCES documents(docid),
    tag   TEXT NOT NULL,
    PRIMARY KEY (docid, tag)
);
CREATE TABLE IF NOT EXISTS sections (
    kbid          TEXT PRIMARY KEY,
    heading       TEXT NOT NULL,
    level         INTEGER NOT NULL,
    parent        TEXT,
    content       TEXT NOT NULL,
    type          TEXT NOT NULL,
    section_type  TEXT NOT NULL,
    title         TEXT,
    description   TEXT,
    source_key    TEXT,
    created_at    TEXT NOT NULL,
    retired_at    TEXT,
    superseded_by TEXT,
    retire_reason TEXT
);
CREATE INDEX IF NOT EXISTS sections_source_key ON sections(source_key);
CREATE TABLE IF NOT EXISTS section_tags (
    kbid TEXT NOT NULL REFERENCES sections(kbid),
    tag  TEXT NOT NULL,
    PRIMARY KEY (kbid, tag)
);
CREATE INDEX IF NOT EXISTS section_tags_tag ON section_tags(tag);
CREATE TABLE IF NOT EXISTS document_sections (
    id    INTEGER PRIMARY KEY,
    docid TEXT NOT NULL REFERENCES documents(docid),
    kbid  TEXT NOT NULL REFERENCES sections(kbid),
    ord   INTEGER NOT NULL,
    live  INTEGER NOT NULL DEFAULT 1,
    start_line INTEGER,
    end_line   INTEGER,
    page       INTEGER
);
CREATE INDEX IF NOT EXISTS document_sections_doc ON document_sections(docid, live, ord);
CREATE TABLE IF NOT EXISTS embeddings (
    text_sha TEXT NOT NULL,
    model    TEXT NOT NULL,
    vector   BLOB NOT NULL,
    PRIMARY KEY (text_sha, model)
);
CREATE TABLE IF NOT EXISTS changelog (
    seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    op   TEXT NOT NULL CHECK (op IN ('add', 'retire')),
    kbid TEXT NOT NULL
);
"""

# A section's document links by kbid, covering: the search's sibling boost and hydration
# read (docid, live) from the index alone, without a row lookup per link.
LINKS_INDEX = (
    "CREATE INDEX IF NOT EXISTS document_sections_links ON document_sections(kbid, docid, live)"
)
SCHEMA += LINKS_INDEX + ";\n"

# Validity intervals: one row per span during which a section was live (``valid_until``
# NULL while it still is). A section learned, retired and learned again has two. Sections
# stored before the table existed have none: their one interval is ``created_at`` to
# ``retired_at`` (``kbdb.store.history``), copied here when they next change.
VALIDITY_TABLE = (
    "CREATE TABLE IF NOT EXISTS section_validity ("
    "kbid TEXT NOT NULL, valid_from TEXT NOT NULL, valid_until TEXT)"
)
VALIDITY_INDEX = (
    "CREATE INDEX IF NOT EXISTS section_validity_kbid ON section_validity(kbid, valid_from)"
)
SCHEMA += VALIDITY_TABLE + ";\n" + VALIDITY_INDEX + ";\n"

# Conversation turns (``kbdb.ingest.chat``): who said a section and when. The time is the
# section's time for ``since`` / ``until``, ``sort=recent`` and the recency decay, and its
# first validity interval starts there (docs/conversations.md).
TURNS_TABLE = (
    "CREATE TABLE IF NOT EXISTS section_turns ("
    "kbid TEXT PRIMARY KEY, speaker TEXT NOT NULL, spoken_at TEXT)"
)
TURNS_INDEX = (
    "CREATE INDEX IF NOT EXISTS section_turns_speaker ON section_turns(speaker COLLATE NOCASE)"
)
SCHEMA += TURNS_TABLE + ";\n" + TURNS_INDEX + ";\n"

# Anchor text (docs/search.md, "Fields"): per section, the labels of the links in other
# notes that point at it, one text. Whoever changes a row appends a change-log ``add`` of
# its kbid in the same transaction, so the lexical index re-indexes the section. A
# knowledge base without links has no rows: the ``anchor`` field is empty and scores
# nothing.
ANCHORS_TABLE = (
    "CREATE TABLE IF NOT EXISTS section_anchors (kbid TEXT PRIMARY KEY, text TEXT NOT NULL)"
)
SCHEMA += ANCHORS_TABLE + ";\n"

UPGRADES = (
    LINKS_INDEX,
    VALIDITY_TABLE,
    VALIDITY_INDEX,
    TURNS_TABLE,
    TURNS_INDEX,
    ANCHORS_TABLE,
    # Knowledge bases made before the covering index had one on kbid alone.
    "DROP INDEX IF EXISTS document_sections_kbid",
) + LINK_TABLES
"""Additions to the schema that need no new version: the first write transaction of each
``Database`` applies them (``CREATE … IF NOT EXISTS``), so an older knowledge base opens
unchanged and is brought up to date by its next write."""

# The near-duplicate band tables (store/signatures.py). They are also created on first use,
# so a knowledge base made before they existed opens unchanged and is backfilled.
SCHEMA += "".join(f"{stmt};\n" for stmt in NEARDUP_TABLES)
# Links between documents (store/links.py): the tables and the triggers that mark the
# documents whose links need resolving.
SCHEMA += "".join(f"{stmt};\n" for stmt in LINK_TABLES)

MIGRATIONS: tuple[tuple[int, str], ...] = (
    # 1 → 2: where each section is in its source. Links stored before have NULLs: their
    # lines are unknown, and say so, until the file is learned again.
    (1, "ALTER TABLE document_sections ADD COLUMN start_line INTEGER"),
    (1, "ALTER TABLE document_sections ADD COLUMN end_line INTEGER"),
    (1, "ALTER TABLE document_sections ADD COLUMN page INTEGER"),
)
"""``(v, statement)``: the statements that bring a knowledge base of version ``v`` to
``v + 1``, in order, run in one write transaction when a kbdb that reads
``SCHEMA_VERSION`` opens it."""
