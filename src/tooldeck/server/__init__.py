"""tooldeck as an MCP server: the Runtime's snapshot over stdio or streamable HTTP (official `mcp` SDK)."""

from tooldeck.server.mcp_server import ServeOptions, TooldeckMCPServer

__all__ = ["ServeOptions", "TooldeckMCPServer"]
