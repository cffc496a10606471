"""MCP servers as tool sources: configuration, registrations, cached catalogs, calls on one background loop."""

from tooldeck.sources.mcp.config import McpConfig, ServerConfig, load
from tooldeck.sources.mcp.errors import McpConfigError
from tooldeck.sources.mcp.failures import Failure
from tooldeck.sources.mcp.manager import McpManager
from tooldeck.sources.mcp.reports import RefreshReport, ServerStatus, ToolInfo

__all__ = ["Failure", "McpConfig", "McpConfigError", "McpManager", "RefreshReport", "ServerConfig", "ServerStatus",
           "ToolInfo", "load"]
