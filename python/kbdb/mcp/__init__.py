"""``kbdb mcp``: the knowledge base as an MCP server (SPEC §10), for agents' memory.

Imported only by the ``mcp`` command: the CLI's cold start never loads the MCP SDK.
"""

from __future__ import annotations

__all__: list[str] = []
