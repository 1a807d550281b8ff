"""Stdin and stdout as event-loop pipes, for the SDK's ``stdio_server``.

The SDK's default stdio streams do every read, write and flush on a worker thread (three
thread hops per request). When stdin and stdout are pipes or sockets, which is how every MCP
client starts a server, the event loop can read and write them directly; that removes the
hops from each round trip (benches/bench_mcp.py). Anything else (a terminal, a file) keeps
the SDK's default.

Like the SDK's default, the wire moves to private descriptors while serving: fd 0 then reads
/dev/null and fd 1 writes to stderr, so stray output (a library's print, a child process)
can never corrupt the protocol stream.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

# A request line can carry a whole document to learn (learn.max_file_bytes, 10 MiB by
# default, more once escaped as JSON); the reader's buffer limit is set well above it.
MAX_LINE = 256 * 1024 * 1024


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def usable() -> bool:
    """True when both standard streams are pipes or sockets."""
    return os.name == "posix" and _is_pipe(0) and _is_pipe(1)


class _Lines:
    """``async for line in stdin``: decoded lines, ending at EOF."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Writer:
    """``await stdout.write(text)`` and ``await stdout.flush()`` over a pipe transport."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@asynccontextmanager
async def pipe_streams() -> AsyncIterator[tuple[Any, Any]]:
    """(stdin, stdout) for ``stdio_server(stdin, stdout)``; restores fd 0 and 1 on exit."""
    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    transports: list[asyncio.BaseTransport] = []
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE)
        t_in, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
        )
        transports.append(t_in)
        t_out, p_out = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
        )
        transports.append(t_out)
        writer = asyncio.StreamWriter(t_out, p_out, None, loop)
        yield _Lines(reader), _Writer(writer)
    finally:
        for t in transports:
            with suppress(Exception):
                t.close()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
