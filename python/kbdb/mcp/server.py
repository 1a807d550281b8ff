"""The MCP server (SPEC §10): the tools (all 21, or the ``--tools`` selection), resources,
the ``kbdb-memory`` prompt and completions, over the official SDK's low-level ``Server``.

The low-level server is used (rather than ``MCPServer``) because the tools need exact,
hand-written input schemas, output schemas derived from the result types, and one error
shape, ``{error, code}``, for bad arguments and facade errors alike.

- ``initialize`` is answered at once; the knowledge base opens on a worker thread after the
  client's ``notifications/initialized`` (or on the first request), then the integrity check
  runs once and a failed check becomes a ``warning`` notification to each client.
- Facade calls run on worker threads, except a lexical search and a recall, which take
  less time than the thread hop and run on the event loop. The facade is thread-safe and
  re-reads the index generation on every search, so other processes' learns are visible at
  the next request.
- Logs of the ``kbdb`` loggers go to stderr and, as ``notifications/message``, to every
  initialized client (logs.py). Stdout carries protocol frames only: while serving, fd 1
  points at stderr and the wire uses a private descriptor (pipes.py, or the SDK's streams).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

from kbdb.config import Config, load_config
from kbdb.errors import ConfigInvalidError, KbdbError
from kbdb.mcp import pipes, prompt
from kbdb.mcp.logs import LEVELS, NO_FORWARD, LogHub, level_index, send_log, setup_logging
from kbdb.mcp.render import compact_json, render
from kbdb.mcp.resources import TEMPLATES, list_resources, read_resource
from kbdb.mcp.schema import check_arguments, output_schema
from kbdb.mcp.tools import CORE, PROGRESS, SHARDED, ToolSpec, tools_for

if TYPE_CHECKING:
    from kbdb.kb import KnowledgeBase

log = logging.getLogger("kbdb.mcp")

SERVER_NAME = "kbdb"
PROGRESS_EVERY = 0.25  # seconds between progress notifications

INSTRUCTIONS = (
    "kbdb is your long-term memory: a local knowledge base of Markdown sections. Before "
    "answering from assumptions, search it with several short keyword queries; recall the "
    "kbids you need for full content; if the verdict is 'unanswered', investigate instead of "
    "guessing. Learn durable facts, decisions and corrections (replace: true when updating, "
    "tags for scope, never secrets). The kbdb-memory prompt explains the workflow."
)


class KbHost:
    """Opens the knowledge base once, lazily, and runs the start-up check once.

    ``config``: ``worker.toml`` as read when the server starts (None when it does not
    validate: opening the knowledge base then reports CONFIG_INVALID to every call). The
    knowledge base is opened with it, so the tool descriptions built from it describe what
    the calls do."""

    def __init__(
        self,
        path: Path,
        watch: tuple[Path, ...] = (),
        *,
        shards: bool = False,
        ray: str | None = None,
    ) -> None:
        # ``shards``: ``path`` is a sharded collection (``kbdb mcp --shards``), its shards
        # in this process or, with ``ray``, on that Ray cluster.
        self.path = path
        self.shards = shards
        self.ray = ray
        # Folders kept fresh in the background (``kbdb mcp --watch``), from the moment
        # the knowledge base opens until the server stops.
        self.watch = watch
        self._watch_stop = threading.Event()
        self._watch_thread: threading.Thread | None = None
        self.config: Config | None
        try:
            # kbdb.context.CONFIG_NAME: that module loads the engine, which waits for a client.
            self.config = load_config(
                (path / "shard-000" / ".kbdb" if shards else path) / "worker.toml"
            )
        except ConfigInvalidError:
            self.config = None
        self._kb: KnowledgeBase | None = None
        self._open_lock = anyio.Lock()
        self._check_lock = anyio.Lock()
        self._health: dict[str, Any] | None = None
        self._checked = False

    async def kb(self) -> KnowledgeBase:
        if self._kb is None:
            async with self._open_lock:
                if self._kb is None:
                    # Imported here: the engine loads after `initialize` has been answered.
                    from kbdb.kb import KnowledgeBase

                    if self.shards:
                        from kbdb.shard.coordinator import ShardedKnowledgeBase

                        opened: Any = await anyio.to_thread.run_sync(
                            functools.partial(ShardedKnowledgeBase.open, self.path, ray=self.ray)
                        )
                    else:
                        opened = await anyio.to_thread.run_sync(
                            functools.partial(KnowledgeBase.open, self.path, config=self.config)
                        )
                    kb = cast("KnowledgeBase", opened)
                    # Opens (or builds, when missing) the index on this worker thread, so
                    # that the searches run on the event loop never have to.
                    try:
                        await anyio.to_thread.run_sync(kb.stats)
                    except KbdbError as exc:  # e.g. INDEX_CORRUPT: the tools report it, and
                        log.warning("%s", exc)  # `rebuild` must stay reachable to repair it
                    if self.watch:
                        self._start_watch(kb)
                    self._kb = kb
                    log.info("knowledge base %s open", self._kb.path)
        return self._kb

    async def health(self) -> dict[str, Any] | None:
        """The failed check's report as a dict, or None when the check passed (or the build
        has no ``check``). Runs the check at most once per process."""
        async with self._check_lock:
            if not self._checked:
                kb = await self.kb()
                if self.shards:
                    health = await anyio.to_thread.run_sync(_collection_health, kb)
                else:
                    report = await anyio.to_thread.run_sync(kb.check)
                    health = None if report.ok else report.to_dict()
                if health is not None:
                    self._health = health
                    log.warning(summarise(self._health), extra={NO_FORWARD: True})
                self._checked = True
        return self._health

    def _start_watch(self, kb: KnowledgeBase) -> None:
        """Follow the watched folders on a thread of their own: each batch commits in one
        transaction, so a tool call sees a batch whole or not at all."""

        def on_batch(b: Any) -> None:
            log.info(
                "watch %s: +%d ~%d -%d sections in %.0f ms",
                b.folder,
                b.sections_added,
                b.sections_superseded,
                b.sections_retired,
                b.elapsed_ms,
            )

        def run() -> None:
            try:
                kb.watch(*self.watch, stop=self._watch_stop, on_batch=on_batch)
            except KbdbError as exc:
                log.error("watching stopped: %s", exc)
            except Exception:  # the thread's last word: searches go on without it
                log.exception("watching stopped")

        self._watch_thread = threading.Thread(target=run, name="kbdb-watch", daemon=True)
        self._watch_thread.start()

    def close(self) -> None:
        self._watch_stop.set()
        if self._watch_thread is not None:
            # Stops between batches: wait for the one being committed, not for ever.
            self._watch_thread.join(timeout=60)
        if self._kb is not None:
            self._kb.close()


def _collection_health(kb: Any) -> dict[str, Any] | None:
    """A sharded collection's check (every shard's, and the routing) as a report dict."""
    from kbdb.shard.layout import check

    problems = check(kb.layout)
    if not problems:
        return None
    return {
        "ok": False,
        "errors": [
            {
                "code": p.code,
                "detail": f"shard {p.shard}: {p.detail}",
                "kbid": p.kbid,
                "docid": p.docid,
            }
            for p in problems
        ],
    }


def summarise(report: dict[str, Any]) -> str:
    """One line for the start-up warning: the error codes with counts and a first example."""
    errors = report.get("errors", [])
    counts = Counter(e["code"] for e in errors)
    kinds = ", ".join(f"{code} x{n}" for code, n in counts.most_common())
    first = errors[0] if errors else {}
    where = first.get("kbid") or first.get("docid")
    example = f"; first: {first.get('code')}{f' ({where})' if where else ''}: {first.get('detail')}"
    return (
        f"integrity check failed: {len(errors)} error(s) ({kinds}){example if errors else ''}. "
        "Run 'kbdb check' for the full list; 'kbdb rebuild' repairs indexes."
    )


# -- tools ---------------------------------------------------------------------------------


def tool_definitions(tools: tuple[ToolSpec, ...]) -> tuple[types.Tool, ...]:
    """The tools as ``tools/list`` sends them. Each says what it means once, since every
    session carries the list (docs/mcp.md, "Two tool surfaces"): the title only in the
    annotations (which clients show before the name, and which clients of the 2025-03-26
    protocol know), and a read-only tool without ``destructiveHint`` and
    ``idempotentHint``, which the protocol defines only for tools that write."""
    return tuple(
        types.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=output_schema(spec.result),
            annotations=_annotations(spec),
        )
        for spec in tools
    )


def _annotations(spec: ToolSpec) -> types.ToolAnnotations:
    if spec.read_only:
        return types.ToolAnnotations(title=spec.title, read_only_hint=True, open_world_hint=False)
    return types.ToolAnnotations(
        title=spec.title,
        read_only_hint=False,
        destructive_hint=spec.destructive,
        idempotent_hint=spec.idempotent,
        open_world_hint=False,
    )


def error_result(exc: KbdbError) -> types.CallToolResult:
    body = exc.to_dict()
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=compact_json(body))]
    if exc.hint:
        content.append(types.TextContent(type="text", text=f"hint: {exc.hint}"))
    return types.CallToolResult(content=content, structured_content=body, is_error=True)


def progress_reporter(ctx: ServerRequestContext[Any]) -> Callable[[int, int], None]:
    """A ``progress(done, total)`` for facade calls on a worker thread: it sends
    notifications/progress (when the client asked for them with a progress token), at most
    every PROGRESS_EVERY seconds and always at the end."""
    last = 0.0

    def report(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if done < total and now - last < PROGRESS_EVERY:
            return
        last = now
        anyio.from_thread.run(ctx.session.report_progress, float(done), float(total), None)

    return report


async def run_tool(
    host: KbHost,
    spec: ToolSpec,
    arguments: dict[str, Any],
    progress: Callable[[int, int], None] | None = None,
) -> types.CallToolResult:
    """Validate, call the facade (on a worker thread unless the tool is quick enough for the
    event loop), and shape the result or the error."""
    try:
        check_arguments(spec.input_schema, arguments)
        if spec.progress and progress is not None:
            arguments = {**arguments, PROGRESS: progress}
        kb = await host.kb()
        if spec.inline is not None and spec.inline(arguments):
            result = spec.call(kb, arguments)
        else:
            result = await anyio.to_thread.run_sync(spec.call, kb, arguments)
    except KbdbError as exc:
        return error_result(exc)
    except Exception as exc:  # the MCP tool adapter is the one broad catch (STYLE.md)
        log.exception("tool %s failed", spec.name)
        body = {"error": f"internal error: {type(exc).__name__}: {exc}", "code": "INTERNAL_ERROR"}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=compact_json(body))],
            structured_content=body,
            is_error=True,
        )
    d = result.to_dict()
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=render(spec.name, d))], structured_content=d
    )


# -- the server ----------------------------------------------------------------------------


def build_server(
    host: KbHost, hub: LogHub, *, version: str, tools: tuple[str, ...] = CORE
) -> Server[Any]:
    """The low-level server with every handler bound to ``host``, offering the ``tools``
    (names from :func:`kbdb.mcp.tools.select`)."""
    served = tools_for(host.config, tools)
    if host.shards:
        # Their calls may wait on other machines, so none runs on the event loop.
        served = tuple(replace(t, inline=None) for t in served if t.name in SHARDED)
    by_name = {t.name: t for t in served}

    @functools.cache
    def definitions() -> tuple[types.Tool, ...]:
        # On the first tools/list, not before `initialize` is answered.
        return tool_definitions(served)

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(definitions()))

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = by_name.get(params.name)
        if spec is None:
            names = ", ".join(by_name)
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r} (tools: {names})")
        # report_progress is a no-op unless the client sent a progress token.
        return await run_tool(host, spec, dict(params.arguments or {}), progress_reporter(ctx))

    async def on_list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return await list_resources(host, params.cursor if params else None)

    async def on_list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def on_read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await read_resource(host, params.uri)

    async def on_list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompt.PROMPT])

    async def on_get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != prompt.NAME:
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.name!r}")
        return await prompt.get(host, dict(params.arguments or {}), frozenset(by_name))

    async def on_completion(
        ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        return await prompt.complete(host, params)

    async def on_set_level(
        ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        hub.level_name = params.level
        return types.EmptyResult()

    async def on_initialized(
        ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        """Per connection: open the knowledge base, report a failed check, then forward log
        records until the connection closes (the dispatcher cancels this task)."""
        queue = hub.subscribe()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_report_health, ctx)
                while True:
                    record = await queue.get()
                    level = LEVELS[level_index(record)]
                    await send_log(ctx, level, record.getMessage(), record.name)
        finally:
            hub.unsubscribe(queue)

    async def _report_health(ctx: ServerRequestContext[Any]) -> None:
        try:
            report = await host.health()
        except KbdbError as exc:
            log.error("cannot open the knowledge base: %s", exc)
            return
        except Exception:
            log.exception("start-up integrity check failed to run")
            return
        if report is not None:
            data = {
                "message": summarise(report),
                "ok": False,
                "errors": report["errors"][:20],
                "error_count": len(report["errors"]),
                "path": str(host.path),
            }
            await send_log(ctx, "warning", data, "kbdb.check")

    server: Server[Any] = Server(
        SERVER_NAME,
        version=version,
        title="kbdb knowledge base",
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_templates,
        on_read_resource=on_read_resource,
        on_list_prompts=on_list_prompts,
        on_get_prompt=on_get_prompt,
        on_completion=on_completion,
    )
    # Registered directly: the constructor's on_set_logging_level warns about the 2026-07-28
    # deprecation, and this handler is what declares the logging capability.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, on_set_level)
    server.add_notification_handler(
        "notifications/initialized", types.NotificationParams, on_initialized
    )
    return server


def serve_stdio(
    path: Path,
    *,
    version: str,
    debug: bool = False,
    watch: tuple[Path, ...] = (),
    shards: bool = False,
    ray: str | None = None,
    tools: tuple[str, ...] = CORE,
) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin; keep the ``watch``
    folders fresh meanwhile. ``shards``: ``path`` is a sharded collection (on Ray at
    ``ray`` when given). ``tools``: the names of the tools to offer."""
    from mcp.server.stdio import stdio_server

    hub = LogHub()
    setup_logging(hub, debug=debug)
    host = KbHost(path, watch, shards=shards, ray=ray)
    server = build_server(host, hub, version=version, tools=tools)

    async def main() -> None:
        options = server.create_initialization_options()
        if pipes.usable():
            async with (
                pipes.pipe_streams() as (stdin, stdout),
                stdio_server(stdin=stdin, stdout=stdout) as (read, write),
            ):
                await server.run(read, write, options)
        else:
            async with stdio_server() as (read, write):
                await server.run(read, write, options)

    try:
        anyio.run(main)
    finally:
        host.close()
