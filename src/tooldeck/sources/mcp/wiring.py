"""How a Runtime picks up MCP servers: one call in `Runtime.__init__`, one in `gate_table`, one in `close`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooldeck.sources.mcp.manager import McpManager

if TYPE_CHECKING:
    from tooldeck.runtime import Runtime


def attach_mcp(runtime: Runtime) -> McpManager | None:
    """The runtime's MCP manager: a source passed in by the host, else one built from the home dir's
    `tooldeck.toml` / `mcp.json` and added to the catalog; None when no MCP server is configured."""
    existing = runtime.catalog.source("mcp")
    if existing is not None:
        return existing if isinstance(existing, McpManager) else None
    manager = McpManager.from_home(runtime.home)
    if manager is not None:
        runtime.catalog.add_source(manager)
    return manager
