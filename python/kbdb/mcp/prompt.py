"""The ``kbdb-memory`` prompt, which teaches an agent to use kbdb as its memory, and the
completion of docid, tag and skill-name arguments (prompt arguments and the document
resource template)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.to_thread
import mcp_types as types
from mcp.shared.exceptions import MCPError

from kbdb.errors import KbdbError

if TYPE_CHECKING:
    from kbdb.kb import KnowledgeBase
    from kbdb.mcp.server import KbHost

NAME = "kbdb-memory"
MAX_COMPLETIONS = 100  # the MCP limit per completion response
SCAN_DOCUMENTS = 5000  # documents read to complete a docid; beyond that, has_more

PROMPT = types.Prompt(
    name=NAME,
    title="Use kbdb as memory",
    description="How to use this knowledge base as long-term memory: search before "
    "answering, recall for full content, learn durable facts, never store secrets.",
    arguments=[
        types.PromptArgument(
            name="topic", description="What you are working on; used to suggest first searches."
        ),
        types.PromptArgument(name="tag", description="Scope searches and learns to this tag."),
        types.PromptArgument(name="docid", description="A document to start from."),
        types.PromptArgument(name="skill", description="A stored skill to follow (its name)."),
    ],
)

# The guide, a line at a time with the tools it names: a line is left out when the server
# does not offer one of them (``kbdb mcp --tools``), so the prompt never sends an agent to a
# tool it cannot call.
GUIDE: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        (),
        "You have a long-term memory: the kbdb knowledge base, reached through the kbdb "
        "tools. Use it like this.",
    ),
    ((), ""),
    (
        (),
        "Before answering or acting on anything that earlier work may have settled "
        "(decisions, conventions, user preferences, how things are set up):",
    ),
    (
        ("search",),
        "1. `search` with several short keyword queries rather than one long "
        'question, e.g. "postgres jsonb", then "database choice". Quote a phrase to require it '
        "word for word.",
    ),
    (
        ("search",),
        '2. Read `retrieval_verdict`: "answered" means the top hit is likely '
        'relevant; "partial" means check the hits, the answer may be among them; "unanswered" '
        "means the top hit is probably not relevant, so investigate (read the code, ask the "
        "user) and do not guess.",
    ),
    (
        ("recall",),
        "3. `recall` the kbids you need: search returns snippets, recall returns "
        "full content. `recall` with a docid returns a whole document.",
    ),
    (
        ("outline", "recall"),
        "   For a long document, `outline` it first and recall just the parts you need.",
    ),
    (
        ("context",),
        "   For the notes around a topic, `context` searches and gives each hit the notes "
        "it links to and those that link to it.",
    ),
    (
        ("links",),
        '   `links` lists a document\'s links; with direction "in", the notes linking to it.',
    ),
    ((), ""),
    (
        ("learn",),
        "When you learn something worth keeping (a durable fact, a decision and its "
        "rationale, a correction, a user preference):",
    ),
    (
        ("learn",),
        "- `learn` it as a short Markdown note with a clear `title` and `tags`; use "
        "`replace: true` when it updates a document you stored before.",
    ),
    (("revise",), "- To correct one section, `revise` it (history is kept)."),
    (("forget",), "- To drop wrong knowledge, `forget` it."),
    (
        ("learn",),
        "- Never store secrets: passwords, API keys, tokens, private keys, personal data.",
    ),
    (
        ("learn", "revise"),
        "- Check the learn result's `near_duplicates`: if the knowledge "
        "already existed, revise the old section instead of keeping two.",
    ),
    ((), ""),
    (
        ("skill-list", "skill-get", "skill-learn"),
        "Reusable procedures are skills: "
        "`skill-list` to see them, `skill-get` to follow one, `skill-learn` to save a new one.",
    ),
    (
        ("contradictions",),
        "Keep memory healthy: `contradictions` shows sections that cover "
        "the same ground, so that you can reconcile them.",
    ),
)


def guide(tools: frozenset[str]) -> str:
    """The guide for a server that offers ``tools``."""
    lines = [text for needs, text in GUIDE if tools.issuperset(needs)]
    return "\n".join(lines).strip()


async def get(
    host: KbHost, arguments: dict[str, str], tools: frozenset[str]
) -> types.GetPromptResult:
    """The prompt with ``arguments``, for a server that offers ``tools``."""
    unknown = sorted(set(arguments) - {a.name for a in PROMPT.arguments or ()})
    if unknown:
        raise MCPError(types.INVALID_PARAMS, f"unknown argument {unknown[0]!r} for {NAME}")
    parts = [guide(tools)]
    topic, tag = arguments.get("topic"), arguments.get("tag")
    if topic:
        words = " ".join(topic.split()[:6])
        parts.append(
            f"You are working on: {topic}\n"
            f'Start with `search` for "{words}" and for its key terms one by one.'
        )
    if tag:
        parts.append(
            f'Scope this work to the tag "{tag}": pass tags: ["{tag}"] to search and learn.'
        )
    if arguments.get("docid"):
        first = "`outline` it, then `recall` what you need" if "outline" in tools else "`recall` it"
        parts.append(f'Start from the document "{arguments["docid"]}": {first}.')
    if arguments.get("skill"):
        kb = await host.kb()
        try:
            skill = await anyio.to_thread.run_sync(kb.skill_get, arguments["skill"])
        except KbdbError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message, exc.to_dict()) from None
        parts.append(f'Follow the skill "{skill.name}" ({skill.description}):\n\n{skill.content}')
    message = types.PromptMessage(
        role="user", content=types.TextContent(type="text", text="\n\n".join(parts))
    )
    return types.GetPromptResult(description=PROMPT.description, messages=[message])


async def complete(host: KbHost, params: types.CompleteRequestParams) -> types.CompleteResult:
    """Prefix completion (case-insensitive) of docid, tag and skill-name arguments."""
    ref, arg = params.ref, params.argument
    kind = None
    if isinstance(ref, types.PromptReference) and ref.name == NAME:
        kind = {"docid": "docid", "tag": "tag", "skill": "skill"}.get(arg.name)
    elif isinstance(ref, types.ResourceTemplateReference) and ref.uri.startswith(
        "kbdb://document/"
    ):
        kind = "docid" if arg.name == "docid" else None
    if kind is None:
        return types.CompleteResult(completion=types.Completion(values=[]))
    kb = await host.kb()
    candidates, complete_list = await anyio.to_thread.run_sync(_candidates, kb, kind)
    prefix = arg.value.casefold()
    matches = [c for c in candidates if c.casefold().startswith(prefix)]
    return types.CompleteResult(
        completion=types.Completion(
            values=matches[:MAX_COMPLETIONS],
            total=len(matches),
            has_more=len(matches) > MAX_COMPLETIONS or not complete_list,
        )
    )


def _candidates(kb: KnowledgeBase, kind: str) -> tuple[list[str], bool]:
    """The names to complete from, and whether the list is complete."""
    if kind == "tag":
        return [t.tag for t in kb.tags().tags], True
    if kind == "skill":
        return sorted(s.name for s in kb.skill_list().skills), True
    out: list[str] = []  # docid
    while len(out) < SCAN_DOCUMENTS:
        page = kb.documents(limit=100, offset=len(out))
        out += [d.docid for d in page.items]
        if not page.has_more or not page.items:
            return sorted(out), True
    return sorted(out), False
