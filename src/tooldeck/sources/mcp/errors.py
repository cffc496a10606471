"""Stable error and diagnostic codes of the MCP source, and its configuration error."""

from __future__ import annotations

from tooldeck.core.errors import TooldeckError

# Results of a call (what the model gets).
NOT_SENT = "mcp.not_sent"
"""No request left tooldeck (paused server, `off` tool, tool gone, connect failure): safe to retry."""
TOOL_ERROR = "mcp.tool_error"
"""The server answered with `isError: true`."""
SERVER_ERROR = "mcp.server_error"
"""The server answered with a JSON-RPC error."""
UNSUPPORTED_RESPONSE = "mcp.unsupported_response"
"""The server answered with something that is not a valid MCP tool result."""
CALL_OUTCOME_UNKNOWN = "mcp.call_outcome_unknown"
"""The request was sent and no answer came (timeout, disconnect, cancel): it may have run. Never retried."""

# Diagnostics (what the host sees when it prepares an invocation or runs `tooldeck mcp`).
SERVER_UNAVAILABLE = "mcp.server_unavailable"
SERVER_PAUSED = "mcp.server_paused"
SERVER_NOT_DISCOVERED = "mcp.server_not_discovered"
TOOL_SCHEMA_INVALID = "mcp.tool_schema_invalid"
TOOL_DEFINITION_INVALID = "mcp.tool_definition_invalid"
TOOL_DUPLICATE = "mcp.tool_duplicate"
TOOL_LIMIT_EXCEEDED = "mcp.tool_limit_exceeded"
PAGE_LIMIT_EXCEEDED = "mcp.page_limit_exceeded"
LISTING_INVALID = "mcp.listing_invalid"
CATALOG_CACHE_INVALID = "mcp.catalog_cache_invalid"

# Configuration.
CONFIG_UNREADABLE = "mcp.config_unreadable"
CONFIG_UNPARSABLE = "mcp.config_unparsable"
CONFIG_INVALID = "mcp.config_invalid"
CONFIG_ENDPOINT_MISSING = "mcp.config_endpoint_missing"
CONFIG_ENDPOINT_CONFLICT = "mcp.config_endpoint_conflict"
CONFIG_ENV_MISSING = "mcp.config_env_missing"
UNKNOWN_SERVER = "mcp.unknown_server"


class McpConfigError(TooldeckError, ValueError):
    """The MCP configuration (tooldeck.toml `[mcp]` or mcp.json) is wrong; the message names file and key."""


class ConnectFailed(Exception):
    """Connecting to a server failed before any tool request was sent."""

    def __init__(self, message: str, code: str = NOT_SENT) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
