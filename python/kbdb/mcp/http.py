"""``kbdb mcp --http HOST:PORT``: Streamable HTTP at ``/mcp`` (SPEC §10, beyond).

A loopback address needs no token (the SDK's DNS-rebinding protection is on). Any other
address is refused unless ``KBDB_MCP_TOKEN`` is set; with a token, every request must carry
``Authorization: Bearer <token>`` or gets 401, whatever the address.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import socket
from pathlib import Path
from typing import Any

from kbdb.errors import InvalidArgumentError
from kbdb.mcp.tools import CORE

TOKEN_ENV = "KBDB_MCP_TOKEN"
PATH = "/mcp"
DEFAULT_HOST = "127.0.0.1"

log = logging.getLogger("kbdb.mcp")


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` (host 127.0.0.1); IPv6 as ``[::1]:PORT``."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    host = host.strip("[]") or DEFAULT_HOST
    try:
        port = int(port_text)
        if not 0 <= port <= 65535:
            raise ValueError
    except ValueError:
        raise InvalidArgumentError(
            f"--http wants HOST:PORT with a port in 0..65535 (got {text!r})",
            hint="e.g. --http 127.0.0.1:8765",
        ) from None
    return host, port


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def required_token(host: str) -> str | None:
    """The bearer token to enforce, or None. Raises when a non-loopback bind has none."""
    token = os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(host):
        raise InvalidArgumentError(
            f"refusing to serve MCP on {host} without a token",
            hint=f"set {TOKEN_ENV} (clients then send 'Authorization: Bearer <token>'), "
            "or bind 127.0.0.1",
        )
    return token


class BearerGuard:
    """ASGI middleware: HTTP requests without the right bearer token get 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = json.dumps(
                    {"error": "missing or wrong bearer token", "code": "UNAUTHORIZED"}
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="kbdb"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve_http(
    path: Path,
    address: str,
    *,
    version: str,
    debug: bool = False,
    watch: tuple[Path, ...] = (),
    shards: bool = False,
    ray: str | None = None,
    tools: tuple[str, ...] = CORE,
) -> None:
    """Serve the ``tools`` (their names) until interrupted. Raises INVALID_ARGUMENT before
    binding when the address or the token is wrong."""
    host, port = parse_address(address)
    token = required_token(host)

    import uvicorn

    from kbdb.mcp.logs import LogHub, setup_logging
    from kbdb.mcp.server import KbHost, build_server

    hub = LogHub()
    setup_logging(hub, debug=debug)
    kb_host = KbHost(path, watch, shards=shards, ray=ray)
    server = build_server(kb_host, hub, version=version, tools=tools)
    app: Any = server.streamable_http_app(streamable_http_path=PATH, host=host)
    if token is not None:
        app = BearerGuard(app, token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family)
    except OSError as exc:
        raise InvalidArgumentError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="pick another port",
        ) from None
    bound_port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    log.info(
        "serving MCP over HTTP at http://%s:%d%s%s",
        shown,
        bound_port,
        PATH,
        " (bearer token required)" if token else "",
    )
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        kb_host.close()
        sock.close()
