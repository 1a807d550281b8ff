"""The 19 MCP tools (SPEC §10): names, titles, annotations, input schemas, descriptions, and
the facade call each one makes.

Descriptions are written for the agent reading them: they say when to use the tool and how
to use it well (the seed's guidance), not how it is implemented. Input schemas are exact:
enums, bounds and defaults are stated, required fields are marked, unknown arguments are
rejected (a typo must not silently change a search).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdb.errors import InvalidArgumentError
from kbdb.types import (
    CheckReport,
    ContradictionsResult,
    DocumentList,
    ExportReport,
    ForgetResult,
    GcReport,
    HistoryResult,
    LearnReport,
    Outline,
    RebuildReport,
    RecallResult,
    RelatedResult,
    ReviseResult,
    SearchResult,
    Skill,
    SkillLearnResult,
    SkillList,
    Stats,
    TagList,
)

if TYPE_CHECKING:
    from kbdb.config import Config
    from kbdb.kb import KnowledgeBase

Args = dict[str, Any]
Call = Callable[["KnowledgeBase", Args], Any]

MODES = ["lexical", "vector", "hybrid"]
MAX_LIMIT = 100
# Set by the server (after validation, so a client cannot pass it) on tools with progress.
PROGRESS = "progress"


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its MCP metadata and the facade call behind it."""

    name: str
    title: str
    read_only: bool
    destructive: bool
    idempotent: bool
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    result: type  # the kbdb.types class of its result (its output schema)
    call: Call
    progress: bool = False  # the facade method takes progress=(done, total)
    # Calls quick enough to run on the event loop: a thread hop costs more than they do
    # (benches/bench_mcp.py). None: always on a worker thread.
    inline: Callable[[Args], bool] | None = None

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": self.properties,
            "additionalProperties": False,
        }
        if self.required:
            schema["required"] = list(self.required)
        return schema


# -- schema fragments ----------------------------------------------------------------------


def _str(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def _bool(description: str, default: bool) -> dict[str, Any]:
    return {"type": "boolean", "description": description, "default": default}


def _int(
    description: str, *, default: int | None, minimum: int, maximum: int | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "description": description, "minimum": minimum}
    if maximum is not None:
        out["maximum"] = maximum
    if default is not None:
        out["default"] = default
    return out


def _strings(description: str, *, min_items: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "description": description,
    }
    if min_items:
        out["minItems"] = min_items
    return out


KBID = _str("A section id (kbid), as search, recall or learn return it.", minLength=1)
TAGS_FILTER = _strings("Only items that have all of these tags.")
TAGS_SET = _strings('Tags for scoping and filtering later searches, e.g. ["adr", "db"].')
SKILL_NAME = _str(
    'The skill\'s name, kebab-case (e.g. "release-checklist").',
    pattern="^[a-z0-9]+(-[a-z0-9]+)*$",
    maxLength=64,
)


# -- calls ---------------------------------------------------------------------------------


def _search(kb: KnowledgeBase, a: Args) -> Any:
    mode, alias = a.get("mode"), a.get("search_mode")
    if mode is not None and alias is not None and mode != alias:
        raise InvalidArgumentError(
            f"argument 'search_mode' ({alias!r}) contradicts 'mode' ({mode!r})",
            hint="give one of them",
        )
    return kb.search(
        a["query"],
        mode=mode or alias,  # None: the knowledge base's search.default_mode
        limit=a.get("limit"),
        offset=a.get("offset", 0),
        tags=a.get("tags") or None,
        docid=a.get("docid"),
        type=a.get("type"),
        section_type=a.get("section_type"),
        content=a.get("content", False),
        explain=a.get("explain", False),
        since=a.get("since"),
        until=a.get("until"),
        sort=a.get("sort"),
        as_of=a.get("as_of"),
        min_confidence=a.get("min_confidence", 0.0),
        speaker=a.get("speaker"),
    )


def _kbids_or_docid(a: Args, tool: str) -> tuple[list[str], str | None]:
    kbids, docid = list(a.get("kbids") or ()), a.get("docid")
    if not kbids and docid is None:
        raise InvalidArgumentError(
            f"{tool} needs 'kbids' or 'docid'", hint="kbids come from search results"
        )
    return kbids, docid


def _recall(kb: KnowledgeBase, a: Args) -> Any:
    kbids, docid = _kbids_or_docid(a, "recall")
    return kb.recall(*kbids, docid=docid)


def _forget(kb: KnowledgeBase, a: Args) -> Any:
    kbids, docid = _kbids_or_docid(a, "forget")
    return kb.forget(*kbids, docid=docid)


def _learn(kb: KnowledgeBase, a: Args) -> Any:
    return kb.learn(
        a["content"],
        type=a.get("type", "text/markdown"),
        title=a.get("title"),
        description=a.get("description"),
        docid=a.get("docid"),
        tags=a.get("tags", ()),
        replace=a.get("replace", False),
        section_type=a.get("section_type"),
    )


def _revise(kb: KnowledgeBase, a: Args) -> Any:
    return kb.revise(
        a["kbid"],
        a["content"],
        title=a.get("title"),
        description=a.get("description"),
        tags=a.get("tags"),
        section_type=a.get("section_type"),
    )


def _export(kb: KnowledgeBase, a: Args) -> Any:
    # A relative path is taken from the folder that holds .kbdb, not from wherever the MCP
    # client happened to start the server (often "/" for desktop apps).
    path = Path(a.get("path", "kbdb-export")).expanduser()
    if not path.is_absolute():
        path = kb.path.parent / path
    return kb.export(str(path), progress=a.get(PROGRESS))


def _skill_learn(kb: KnowledgeBase, a: Args) -> Any:
    return kb.skill_learn(a["name"], a["description"], a["content"], tags=a.get("tags", ()))


def _method(name: str, *keys: str, positional: str | None = None) -> Call:
    """A call that passes ``positional`` first and the other given arguments by keyword."""

    def call(kb: KnowledgeBase, a: Args) -> Any:
        fn = getattr(kb, name)
        kwargs = {k: a[k] for k in keys if k in a}
        return fn(a[positional], **kwargs) if positional else fn(**kwargs)

    return call


# -- the table -----------------------------------------------------------------------------

SEARCH_DESCRIPTION = """Search the knowledge base (your long-term memory). Returns ranked \
sections with headings and short snippets, not full text, so you can \
judge relevance cheaply.

How to use it well:
- Use multiple short keyword queries for best coverage ("postgres jsonb", then "database \
choice") rather than one long question; quote a phrase ("connection pool") to require the words \
side by side.
- Use `recall` with the kbids of the results you need to get their full content.
- Read `retrieval_verdict`: "answered" means the top hit is likely relevant; "partial" means \
check the hits (weak or relaxed matches); "unanswered" means the top hit is probably not \
relevant: investigate (read the code, ask the user), do not guess.
- Narrow with `tags`, `docid`, `section_type`, `speaker` (a conversation's turns); page \
with `offset`. `since` / `until` keep what was learned or changed (a turn: said) in a span \
("7d", "2026-11-01"); `sort: "recent"` puts the newest first; `as_of` answers from what was \
known at a past moment.
- `mode` is "lexical" (keywords, BM25F), "vector" (meaning) or "hybrid" (both); leave it out \
to get this knowledge base's default mode. vector and hybrid need an embedding provider; naming \
them without one fails with EMBEDDING_PROVIDER_NOT_CONFIGURED."""

LEARN_DESCRIPTION = """Store knowledge so that it can be recalled later, in this session or the \
next.

Learn durable facts, decisions (with their rationale) and corrections: things worth knowing next \
time, not transient chatter or what is already in the code. Markdown is split into sections at \
its headings; give a `title` so the section has a good heading.
- Use `replace: true` when updating existing knowledge: the sections of the same document (same \
`docid`, or same title) are superseded instead of duplicated. To correct one section, use \
`revise`.
- Attach `tags` for scoping ("project-x", "adr", "user-prefs").
- Never store secrets: passwords, API keys, tokens, private keys or personal data.
The result lists each section's kbid; check `near_duplicates` (something very similar was \
already known) and `warnings`."""

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search",
        "Search Knowledge",
        True,
        False,
        True,
        SEARCH_DESCRIPTION,
        {
            "query": _str('Short keyword query, e.g. "postgres jsonb rationale".', minLength=1),
            "mode": {
                "type": "string",
                "enum": MODES,
                "default": "lexical",
                "description": "lexical (keywords), vector (meaning) or hybrid (both, fused).",
            },
            "search_mode": {
                "type": "string",
                "enum": MODES,
                "default": "lexical",
                "description": "Alias of `mode` (the seed's name). Give one of the two.",
            },
            "limit": _int(
                "Results per page (default 10).", default=10, minimum=1, maximum=MAX_LIMIT
            ),
            "offset": _int("Skip this many results (paging).", default=0, minimum=0),
            "tags": TAGS_FILTER,
            "docid": _str("Only sections of this document."),
            "type": _str('Only sections of this MIME type, e.g. "text/markdown".'),
            "section_type": _str(
                "Only sections of this kind: section, fact, decision, skill, turn…"
            ),
            "speaker": _str(
                "Only conversation turns of this speaker (learned chat transcripts).",
                minLength=1,
            ),
            "content": _bool("Include each section's full content in the results.", False),
            "explain": _bool("Include each result's score breakdown.", False),
            "since": _str(
                "Only sections learned or changed at or after this time: a duration back "
                'from now ("7d"; also m, h, w), a date ("2026-11-01", midnight UTC) or an '
                "ISO-8601 timestamp.",
                minLength=1,
            ),
            "until": _str(
                "Only sections learned or changed before this time (forms as `since`).",
                minLength=1,
            ),
            "sort": {
                "type": "string",
                "enum": ["relevance", "recent"],
                "default": "relevance",
                "description": "relevance, or recent: newest first, ties by relevance.",
            },
            "as_of": _str(
                "Answer from what was live at this moment (forms as `since`): sections "
                "learned by then and not yet revised, superseded or forgotten.",
                minLength=1,
            ),
            "min_confidence": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 0,
                "description": "Drop results whose confidence is below this (0-1), so that "
                "a search can return nothing rather than weak guesses; total counts those "
                "that pass. E.g. 0.5.",
            },
        },
        ("query",),
        SearchResult,
        _search,
        # An as_of search may first build its snapshot's index: on a worker thread.
        inline=lambda a: (
            (a.get("mode") or a.get("search_mode") or "lexical") == "lexical" and "as_of" not in a
        ),
    ),
    ToolSpec(
        "recall",
        "Recall Sections",
        True,
        False,
        True,
        "Get full sections (content and every field) by kbid, or all sections of a document "
        "in order by docid. Use it after `search` to read the results you need. Retired "
        "sections are still readable by kbid and say so (`retired`, `superseded_by`: follow "
        "it to the current version).",
        {
            "kbids": _strings("Section ids from search results.", min_items=1),
            "docid": _str("A document id: returns its sections in order.", minLength=1),
        },
        (),
        RecallResult,
        _recall,
        inline=lambda a: True,
    ),
    ToolSpec(
        "learn",
        "Learn Content",
        False,
        False,
        False,
        LEARN_DESCRIPTION,
        {
            "content": _str("The text to learn: Markdown (default), other text, or JSON."),
            "type": _str(
                'MIME type of content: "text/markdown" (default), another text/* type, '
                'or "application/json".',
                default="text/markdown",
            ),
            "title": _str("Title; the heading of content that has none."),
            "description": _str("A one-line description of the content."),
            "docid": _str("Group the sections under this document id (default: from the title)."),
            "tags": TAGS_SET,
            "replace": _bool(
                "Supersede the earlier version of this document instead of adding beside it.",
                False,
            ),
            "section_type": _str("The kind of knowledge: section (default), fact, decision, note…"),
        },
        ("content",),
        LearnReport,
        _learn,
    ),
    ToolSpec(
        "revise",
        "Revise Section",
        False,
        True,
        False,
        "Correct one section. The new version gets a new kbid and the old one is retired "
        "(superseded_by points to the new one), so history is kept. Fields you leave out keep "
        "their values. Returns {kbid, previous}.",
        {
            "kbid": KBID,
            "content": _str("The corrected content of the section."),
            "title": _str("A new title (default: unchanged)."),
            "description": _str("A new description (default: unchanged)."),
            "tags": _strings("New tags, replacing the old ones (default: unchanged)."),
            "section_type": _str("A new kind (default: unchanged)."),
        },
        ("kbid", "content"),
        ReviseResult,
        _revise,
    ),
    ToolSpec(
        "history",
        "Section History",
        True,
        False,
        True,
        "The versions of a section, oldest first: each with kbid, created_at, retired_at, "
        "the reason it was retired, and valid_from / valid_until (when it was live; "
        "valid_until is null while it is). Use it to see how a fact changed.",
        {"kbid": KBID},
        ("kbid",),
        HistoryResult,
        _method("history", positional="kbid"),
    ),
    ToolSpec(
        "forget",
        "Forget Sections",
        False,
        True,
        True,
        "Retire sections that are wrong or obsolete, by kbid or a whole document by docid. "
        "Retired sections no longer appear in search; they are removed for good only by `gc`. "
        "Prefer `revise` when the knowledge needs correcting rather than deleting.",
        {
            "kbids": _strings("Section ids to retire.", min_items=1),
            "docid": _str("Retire every section of this document.", minLength=1),
        },
        (),
        ForgetResult,
        _forget,
    ),
    ToolSpec(
        "documents",
        "List Documents",
        True,
        False,
        True,
        "List the documents in the knowledge base (docid, title, tags, section count), "
        "newest first, with paging. Use it to see what is known before searching.",
        {
            "tags": TAGS_FILTER,
            "limit": _int(
                "Documents per page (default 50).", default=50, minimum=1, maximum=MAX_LIMIT
            ),
            "offset": _int("Skip this many documents (paging).", default=0, minimum=0),
        },
        (),
        DocumentList,
        _method("documents", "tags", "limit", "offset"),
    ),
    ToolSpec(
        "outline",
        "Document Outline",
        True,
        False,
        True,
        "A document's heading tree, with the kbid of each section: a map for recalling just "
        "the parts you need.",
        {"docid": _str("The document id.", minLength=1)},
        ("docid",),
        Outline,
        _method("outline", positional="docid"),
    ),
    ToolSpec(
        "tags",
        "List Tags",
        True,
        False,
        True,
        "Every tag in use, with how many sections carry it. Reuse existing tags when you learn.",
        {},
        (),
        TagList,
        _method("tags"),
    ),
    ToolSpec(
        "related",
        "Related Sections",
        True,
        False,
        True,
        "Sections close to a given one: its siblings in the same document first, then by "
        "meaning (vector) where embeddings exist, else by shared keywords.",
        {
            "kbid": KBID,
            "limit": _int(
                "At most this many (default 10).", default=10, minimum=1, maximum=MAX_LIMIT
            ),
        },
        ("kbid",),
        RelatedResult,
        _method("related", "limit", positional="kbid"),
    ),
    ToolSpec(
        "stats",
        "Knowledge Stats",
        True,
        False,
        True,
        "Counts (documents, sections, tags), sizes on disk, the analyzer, the embedding "
        "provider and model, whether the vector index is stale, and the index generation; "
        "when the server keeps folders fresh (--watch), `watching`: each folder and when it "
        "last synced.",
        {},
        (),
        Stats,
        _method("stats"),
    ),
    ToolSpec(
        "check",
        "Integrity Check",
        True,
        False,
        True,
        "Verify the knowledge base: checksums, orphans, broken references, cycles, divergent "
        "content, and indexes behind the database. Returns {ok, errors, warnings, checked}. "
        "After errors, `rebuild` repairs indexes.",
        {},
        (),
        CheckReport,
        _method("check", PROGRESS),
        progress=True,
    ),
    ToolSpec(
        "gc",
        "Garbage Collect",
        False,
        True,
        False,
        "Remove orphan sections and dead index entries, compact the index files and vacuum "
        "the database. Retired sections that belong to a history are kept unless "
        "`prune_retired`. Use `dry_run` first to see what would go.",
        {
            "dry_run": _bool("Only list what would be removed.", False),
            "prune_retired": _bool("Also remove retired sections (and their history).", False),
            "older_than_days": {
                "type": "number",
                "minimum": 0,
                "description": "With prune_retired: only sections retired at least this many "
                "days ago (default: all retired sections).",
            },
        },
        (),
        GcReport,
        _method("gc", "dry_run", "prune_retired", "older_than_days"),
    ),
    ToolSpec(
        "rebuild",
        "Rebuild Indexes",
        False,
        False,
        False,
        "Regenerate the indexes from the database: repairs a missing or corrupt index and "
        "clears a stale vector index (after a model change). Unchanged sections reuse cached "
        "embeddings unless `reembed`.",
        {
            "lexical": _bool("Rebuild the lexical (keyword) index.", True),
            "vectors": _bool("Rebuild the vector index (when a provider is configured).", True),
            "reembed": _bool("Embed every section again instead of reusing the cache.", False),
        },
        (),
        RebuildReport,
        _method("rebuild", "lexical", "vectors", "reembed", PROGRESS),
        progress=True,
    ),
    ToolSpec(
        "export",
        "Export Snapshot",
        False,
        False,
        True,
        "Export the knowledge base as a self-contained folder (one Markdown file per section "
        "with TOML front matter, the documents and a catalog; no indexes) for backup or "
        "versioning. A relative path is taken from the folder that holds .kbdb.",
        {"path": _str("Destination folder.", default="kbdb-export", minLength=1)},
        (),
        ExportReport,
        _export,
        progress=True,
    ),
    ToolSpec(
        "contradictions",
        "Find Contradictions",
        True,
        False,
        True,
        "Groups of live sections from different documents that cover the same ground, most "
        "similar first, so that they can be read together and reconciled (with `revise` or "
        "`forget`).",
        {
            "threshold": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "Minimum similarity, 0..1 (default: the configured one).",
            },
            "limit": _int(
                "At most this many groups (default 20).", default=20, minimum=1, maximum=MAX_LIMIT
            ),
            "tags": TAGS_FILTER,
        },
        (),
        ContradictionsResult,
        _method("contradictions", "threshold", "limit", "tags"),
    ),
    ToolSpec(
        "skill-learn",
        "Create Skill",
        False,
        False,
        True,
        "Store a skill: a named, reusable procedure (Markdown instructions) that you or "
        "another agent can fetch with `skill-get`. Learning a skill with an existing name "
        "replaces it and keeps the history.",
        {
            "name": SKILL_NAME,
            "description": _str("One line: what the skill does and when to use it.", minLength=1),
            "content": _str("The instructions, in Markdown.", minLength=1),
            "tags": TAGS_SET,
        },
        ("name", "description", "content"),
        SkillLearnResult,
        _skill_learn,
    ),
    ToolSpec(
        "skill-list",
        "List Skills",
        True,
        False,
        True,
        "List the stored skills (name, description, tags). Check here before writing a "
        "procedure from scratch.",
        {},
        (),
        SkillList,
        _method("skill_list"),
    ),
    ToolSpec(
        "skill-get",
        "Get Skill",
        True,
        False,
        True,
        "Get a skill in full (its Markdown instructions) by name, then follow it.",
        {"name": SKILL_NAME},
        ("name",),
        Skill,
        _method("skill_get", positional="name"),
    ),
)

BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}


def tools_for(config: Config | None) -> tuple[ToolSpec, ...]:
    """The tools as a knowledge base with ``config`` serves them: the search tool's
    description names the mode a search gets when it names none, its schema gives that mode
    as the default of ``mode`` and ``search_mode``, and a search in it runs on the event
    loop only when it is lexical. ``config`` None (``worker.toml`` does not validate, so
    every call reports CONFIG_INVALID): :data:`TOOLS`, which name no configured mode."""
    if config is None:
        return TOOLS
    configured, mode = config.search.default_mode, config.effective_default_mode
    if configured == mode:
        line = f"Default mode here: {mode} (search.default_mode)."
    else:
        line = (
            f"Default mode here: lexical (search.default_mode is {configured}, but no "
            "embedding provider is configured)."
        )
    spec = BY_NAME["search"]
    properties = {
        **spec.properties,
        "mode": {**spec.properties["mode"], "default": mode},
        "search_mode": {**spec.properties["search_mode"], "default": mode},
    }
    search = replace(
        spec,
        description=f"{spec.description}\n{line}",
        properties=properties,
        inline=lambda a: (
            (a.get("mode") or a.get("search_mode") or mode) == "lexical" and "as_of" not in a
        ),
    )
    return tuple(search if t.name == "search" else t for t in TOOLS)
