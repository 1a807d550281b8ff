"""Logs to the MCP client: ``kbdb`` log records become ``notifications/message``.

Records of the ``kbdb`` loggers go to stderr and to every initialized client. They can come
from worker threads; they cross into the event loop with ``call_soon_threadsafe`` and are
dropped (never block) when a client is slow.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
NO_FORWARD = "kbdb_mcp_local"  # a log record with this attribute stays on stderr

_Queue = asyncio.Queue[logging.LogRecord]


class LogHub(logging.Handler):
    """Forwards ``kbdb`` log records to every subscribed client (one queue per connection),
    at or above ``level_name`` (what ``logging/setLevel`` set; per process)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.level_name: types.LoggingLevel = "info"
        self._subscribers: list[
            tuple[asyncio.AbstractEventLoop, asyncio.Queue[logging.LogRecord]]
        ] = []

    def subscribe(self) -> asyncio.Queue[logging.LogRecord]:
        queue: asyncio.Queue[logging.LogRecord] = asyncio.Queue(maxsize=256)
        self._subscribers.append((asyncio.get_running_loop(), queue))
        return queue

    def unsubscribe(self, queue: asyncio.Queue[logging.LogRecord]) -> None:
        self._subscribers = [s for s in self._subscribers if s[1] is not queue]

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, NO_FORWARD, False) or level_index(record) < LEVELS.index(
            self.level_name
        ):
            return
        for loop, queue in list(self._subscribers):
            try:
                loop.call_soon_threadsafe(_offer, queue, record)
            except RuntimeError:  # the loop is closed: the client went away
                self.unsubscribe(queue)


def _offer(queue: asyncio.Queue[logging.LogRecord], record: logging.LogRecord) -> None:
    if not queue.full():
        queue.put_nowait(record)


def level_index(record: logging.LogRecord) -> int:
    if record.levelno >= logging.CRITICAL:
        return LEVELS.index("critical")
    if record.levelno >= logging.ERROR:
        return LEVELS.index("error")
    if record.levelno >= logging.WARNING:
        return LEVELS.index("warning")
    return LEVELS.index("info") if record.levelno >= logging.INFO else 0


def setup_logging(hub: LogHub, *, debug: bool = False) -> None:
    """``kbdb`` logs to stderr and to the hub; the SDK's own logs to stderr only."""
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(logging.Formatter("kbdb mcp: %(levelname)s %(name)s: %(message)s"))
    kbdb_log = logging.getLogger("kbdb")
    kbdb_log.setLevel(logging.DEBUG if debug else logging.INFO)
    kbdb_log.addHandler(stderr)
    kbdb_log.addHandler(hub)
    kbdb_log.propagate = False
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(stderr)
        root.setLevel(logging.WARNING)


async def send_log(
    ctx: ServerRequestContext[Any], level: types.LoggingLevel, data: Any, logger: str
) -> None:
    # The typed notification, not ServerSession.send_log_message: that helper warns about
    # the 2026-07-28 deprecation, while our clients speak the handshake era, where the
    # logging capability is current.
    await ctx.session.send_notification(
        types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level=level, data=data, logger=logger)
        )
    )
