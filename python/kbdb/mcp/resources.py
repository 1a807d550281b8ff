"""MCP resources: ``kbdb://document/{docid}`` and ``kbdb://section/{kbid}`` as Markdown,
documents listed page by page."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import anyio.to_thread
import mcp_types as types
from mcp.shared.exceptions import MCPError

from kbdb.errors import NotFoundError
from kbdb.types import RecallResult

if TYPE_CHECKING:
    from kbdb.mcp.server import KbHost

PAGE = 50  # resources per resources/list page
RESOURCE_NOT_FOUND = -32002  # the MCP spec's code for an unknown resource
SECTION_TEMPLATE = "kbdb://section/{kbid}"
DOCUMENT_TEMPLATE = "kbdb://document/{docid}"


def _markdown(section: dict[str, Any]) -> str:
    content: str = section["content"]
    level = max(1, min(int(section["level"] or 1), 6))
    heading = section["heading"] or section["title"] or ""
    head = f"{'#' * level} {heading}\n" if heading else ""
    return head + content.strip() + "\n"


async def read_resource(host: KbHost, uri: str) -> types.ReadResourceResult:
    kb = await host.kb()
    if uri.startswith("kbdb://document/") and len(uri) > len("kbdb://document/"):
        docid = unquote(uri[len("kbdb://document/") :])
        call: Callable[[], RecallResult] = lambda: kb.recall(docid=docid)  # noqa: E731
    elif uri.startswith("kbdb://section/") and len(uri) > len("kbdb://section/"):
        kbid = unquote(uri[len("kbdb://section/") :])
        call = lambda: kb.recall(kbid)  # noqa: E731
    else:
        raise MCPError(
            RESOURCE_NOT_FOUND,
            f"unknown resource {uri!r}",
            {"error": f"unknown resource {uri!r}", "code": "NOT_FOUND"},
        )
    try:
        res = await anyio.to_thread.run_sync(call)
    except NotFoundError as exc:
        raise MCPError(RESOURCE_NOT_FOUND, exc.message, exc.to_dict()) from None
    text = "\n".join(_markdown(s.to_dict()) for s in res.sections)
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
    )


async def list_resources(host: KbHost, cursor: str | None) -> types.ListResourcesResult:
    kb = await host.kb()
    try:
        offset = int(cursor) if cursor else 0
        if offset < 0:
            raise ValueError
    except ValueError:
        raise MCPError(types.INVALID_PARAMS, f"invalid cursor {cursor!r}") from None
    page = await anyio.to_thread.run_sync(lambda: kb.documents(limit=PAGE, offset=offset))
    resources = [
        types.Resource(
            uri="kbdb://document/" + quote(d.docid, safe=""),
            name=d.docid,
            title=d.title or None,
            description=d.description or f"{d.sections} sections",
            mime_type="text/markdown",
        )
        for d in page.items
    ]
    return types.ListResourcesResult(
        resources=resources, next_cursor=str(offset + PAGE) if page.has_more else None
    )


TEMPLATES = [
    types.ResourceTemplate(
        uri_template=SECTION_TEMPLATE,
        name="section",
        title="Knowledge section",
        description="One section by kbid, as Markdown (retired sections too).",
        mime_type="text/markdown",
    ),
    types.ResourceTemplate(
        uri_template=DOCUMENT_TEMPLATE,
        name="document",
        title="Knowledge document",
        description="A whole document by docid (URL-encoded), its sections in order, as Markdown.",
        mime_type="text/markdown",
    ),
]
