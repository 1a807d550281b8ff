"""The MCP tools (the 19 of SPEC §10, with ``links`` and ``context``): names, titles,
annotations, input schemas, descriptions, and the facade call each one makes; and which of
them a server offers (``kbdb mcp --tools``).

Descriptions are written for the agent reading them: they say when to use the tool and how
to use it well (the seed's guidance), not how it is implemented. Every client receives the
whole list at the start of every session, so they are short: what the names, types, enums
and defaults already say is not repeated. Input schemas are exact: enums, bounds and
defaults are stated, required fields are marked, unknown arguments are rejected (a typo must
not silently change a search).
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
    ContextResult,
    ContradictionsResult,
    DocumentList,
    ExportReport,
    ForgetResult,
    GcReport,
    HistoryResult,
    LearnReport,
    LinksResult,
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
# Every client receives the whole tool list each session, so a property carries a
# description only when its name, type, enum and default do not already say how to use it.


def _str(description: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string", **extra}
    if description:
        out["description"] = description
    return out


def _bool(default: bool, description: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "boolean", "default": default}
    if description:
        out["description"] = description
    return out


def _int(
    description: str | None = None,
    *,
    default: int | None,
    minimum: int,
    maximum: int | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "minimum": minimum}
    if description:
        out["description"] = description
    if maximum is not None:
        out["maximum"] = maximum
    if default is not None:
        out["default"] = default
    return out


def _strings(description: str | None = None, *, min_items: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "array", "items": {"type": "string", "minLength": 1}}
    if min_items:
        out["minItems"] = min_items
    if description:
        out["description"] = description
    return out


KBID = _str(minLength=1)
ID = _str(minLength=1)  # a docid given instead of kbids
TAGS_FILTER = _strings("Match all.")
SKILL_NAME = _str(pattern="^[a-z0-9]+(-[a-z0-9]+)*$", maxLength=64)


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


def _links(kb: KnowledgeBase, a: Args) -> Any:
    listed = kb.backlinks if a.get("direction") == "in" else kb.links
    return listed(a.get("docid"), kbid=a.get("kbid"))


def _context(kb: KnowledgeBase, a: Args) -> Any:
    return kb.search_context(
        a["query"], mode=a.get("mode"), limit=a.get("limit"), neighbours=a.get("neighbours", 5)
    )


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

SEARCH_DESCRIPTION = """Search memory: ranked sections with snippets; `recall` kbids for \
full content. Use multiple short keyword queries ("postgres jsonb", "db choice"), not one \
question. Verdict "unanswered": investigate, do not guess. since/until/as_of take "7d", a date \
or ISO-8601; as_of answers from what was known then."""

LEARN_DESCRIPTION = """Store durable facts, decisions (with rationale) and corrections, as \
Markdown with a `title`. When updating a document (same docid or title) use `replace: true`; \
`revise` fixes one section. Add `tags`. Never store secrets or personal data. Check \
`near_duplicates` in the result."""

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search",
        "Search Knowledge",
        True,
        False,
        True,
        SEARCH_DESCRIPTION,
        {
            "query": _str(minLength=1),
            "mode": {
                "type": "string",
                "enum": MODES,
                "default": "lexical",
            },
            "search_mode": {
                "type": "string",
                "enum": MODES,
                "default": "lexical",
                "description": "Alias of mode.",
            },
            "limit": _int(default=10, minimum=1, maximum=MAX_LIMIT),
            "offset": _int(default=0, minimum=0),
            "tags": _strings(),
            "docid": _str(),
            "type": _str("MIME"),
            "section_type": _str(),
            "speaker": _str(minLength=1),
            "content": _bool(False, "Include full content."),
            "explain": _bool(False),
            "since": _str(minLength=1),
            "until": _str(minLength=1),
            "sort": {
                "type": "string",
                "enum": ["relevance", "recent"],
                "default": "relevance",
            },
            "as_of": _str(minLength=1),
            "min_confidence": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 0,
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
        "Full sections by kbids, or a document's in order by docid. Retired ones say so "
        "(see superseded_by).",
        {"kbids": _strings(min_items=1), "docid": ID},
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
            "content": _str(),
            "type": _str(default="text/markdown"),
            "title": _str(),
            "description": _str(),
            "docid": _str(),
            "tags": _strings(),
            "replace": _bool(False),
            "section_type": _str("section (default), fact, decision..."),
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
        "Correct one section: a new kbid replaces it, history kept. Omitted fields keep "
        "their values.",
        {
            "kbid": KBID,
            "content": _str(),
            "title": _str(),
            "description": _str(),
            "tags": _strings(),
            "section_type": _str(),
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
        "A section's versions, oldest first: when each was live, why it was retired.",
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
        "Retire wrong or obsolete sections by kbids, or a document by docid. To correct, "
        "`revise` instead.",
        {"kbids": _strings(min_items=1), "docid": ID},
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
        "The documents (docid, title, tags, section count), newest first.",
        {
            "tags": TAGS_FILTER,
            "limit": _int(default=50, minimum=1, maximum=MAX_LIMIT),
            "offset": _int(default=0, minimum=0),
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
        "A document's heading tree with kbids, to recall just the parts you need.",
        {"docid": ID},
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
        "The tags in use, with counts. Reuse them when you learn.",
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
        "Sections near one: its siblings, linked notes, then by meaning or shared keywords.",
        {"kbid": KBID, "limit": _int(default=10, minimum=1, maximum=MAX_LIMIT)},
        ("kbid",),
        RelatedResult,
        _method("related", "limit", positional="kbid"),
    ),
    ToolSpec(
        "links",
        "Note Links",
        True,
        False,
        True,
        "A docid's or kbid's links (out) or backlinks (in): line, status, target section.",
        {
            "docid": ID,
            "kbid": KBID,
            "direction": {"type": "string", "enum": ["out", "in"], "default": "out"},
        },
        (),
        LinksResult,
        _links,
    ),
    ToolSpec(
        "context",
        "Search With Context",
        True,
        False,
        True,
        "Search; each hit comes with the notes it links to (out) and that link to it (in).",
        {
            "query": _str(minLength=1),
            "mode": {"type": "string", "enum": MODES, "default": "lexical"},
            "limit": _int(default=10, minimum=1, maximum=MAX_LIMIT),
            "neighbours": _int("Per hit.", default=5, minimum=1, maximum=20),
        },
        ("query",),
        ContextResult,
        _context,
    ),
    ToolSpec(
        "stats",
        "Knowledge Stats",
        True,
        False,
        True,
        "Counts, sizes, analyzer, embedding model, index state, and watched folders.",
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
        "Verify checksums, references and indexes; `rebuild` repairs indexes.",
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
        "Remove orphans and dead index entries, compact. Retired sections stay unless "
        "prune_retired. Try dry_run first.",
        {
            "dry_run": _bool(False),
            "prune_retired": _bool(False),
            "older_than_days": {
                "type": "number",
                "minimum": 0,
                "description": "Only those retired this long ago.",
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
        "Regenerate missing, corrupt or stale indexes; reuses cached embeddings unless reembed.",
        {"lexical": _bool(True), "vectors": _bool(True), "reembed": _bool(False)},
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
        "Back up to a folder of Markdown files. A relative path is beside .kbdb.",
        {"path": _str(default="kbdb-export", minLength=1)},
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
        "Sections of different documents covering the same ground, to reconcile with "
        "`revise` or `forget`.",
        {
            "threshold": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "default: configured",
            },
            "limit": _int(default=20, minimum=1, maximum=MAX_LIMIT),
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
        "Store a reusable procedure (Markdown) under a name; replaces one of that name.",
        {
            "name": SKILL_NAME,
            "description": _str("When to use it.", minLength=1),
            "content": _str(minLength=1),
            "tags": _strings(),
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
        "The stored skills. Check them before writing a procedure.",
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
        "A skill's full instructions, by name, to follow.",
        {"name": SKILL_NAME},
        ("name",),
        Skill,
        _method("skill_get", positional="name"),
    ),
)

BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}


# -- which tools a server offers -----------------------------------------------------------

# What an agent needs every turn. The others are one flag away (``--tools all``): each tool
# costs every session its share of the list, whether it is called or not.
CORE = ("search", "recall", "learn", "revise", "forget")
# What a sharded collection can serve (``kbdb mcp --shards``).
SHARDED = ("search", "recall", "learn", "forget", "stats")
GROUPS: dict[str, tuple[str, ...]] = {"core": CORE, "all": tuple(BY_NAME)}
DEFAULT_TOOLS = "core"
DEFAULT_SHARDED_TOOLS = "all"


def select(text: str, *, sharded: bool = False) -> tuple[str, ...]:
    """The tool names ``kbdb mcp --tools TEXT`` serves, in table order: ``core``, ``all``,
    tool names, or a comma-separated mix (``core,related``). ``sharded``: a sharded
    collection's server, where a group means its tools that the collection can serve.

    Raises:
        InvalidArgumentError: an empty list, an unknown name, or (``sharded``) a tool a
            sharded collection does not serve; the hint names the valid ones.
    """
    servable = SHARDED if sharded else tuple(BY_NAME)
    wanted: set[str] = set()
    for part in (p.strip() for p in text.split(",")):
        if part in GROUPS:
            wanted.update(GROUPS[part])
        elif part in servable:
            wanted.add(part)
        elif part in BY_NAME:
            raise InvalidArgumentError(
                f"tool {part!r} is not served for a sharded collection",
                hint=f"--shards serves {', '.join(SHARDED)}",
            )
        else:
            what = f"unknown tool {part!r}" if part else "empty tool name"
            raise InvalidArgumentError(
                f"{what} in --tools",
                hint=f"give core, all, or a comma-separated list of: {', '.join(BY_NAME)}",
            )
    return tuple(name for name in servable if name in wanted)


def tools_for(config: Config | None, names: tuple[str, ...] = CORE) -> tuple[ToolSpec, ...]:
    """The tools ``names`` (from :func:`select`) as a knowledge base with ``config`` serves
    them: the search tool's description names the mode a search gets when it names none,
    its schema gives that mode as the default of ``mode`` and ``search_mode`` (and the
    context tool's of ``mode``), and a search in it runs on the event loop only when it is
    lexical. ``config`` None (``worker.toml``
    does not validate, so every call reports CONFIG_INVALID): as in :data:`TOOLS`, which
    name no configured mode."""
    chosen = tuple(t for t in TOOLS if t.name in names)
    if config is None:
        return chosen
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
    ctx = BY_NAME["context"]
    context = replace(
        ctx, properties={**ctx.properties, "mode": {**ctx.properties["mode"], "default": mode}}
    )
    served = {"search": search, "context": context}
    return tuple(served.get(t.name, t) for t in chosen)
