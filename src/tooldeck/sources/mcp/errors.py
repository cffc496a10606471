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
"""A server could not be used and the cause fits none of the failure codes below (the message says why)."""
SERVER_PAUSED = "mcp.server_paused"
SERVER_NOT_DISCOVERED = "mcp.server_not_discovered"
TOOL_SCHEMA_INVALID = "mcp.tool_schema_invalid"
TOOL_DEFINITION_INVALID = "mcp.tool_definition_invalid"
TOOL_DUPLICATE = "mcp.tool_duplicate"
TOOL_LIMIT_EXCEEDED = "mcp.tool_limit_exceeded"
PAGE_LIMIT_EXCEEDED = "mcp.page_limit_exceeded"
LISTING_INVALID = "mcp.listing_invalid"
CATALOG_CACHE_INVALID = "mcp.catalog_cache_invalid"
TOOL_DEFINITION_CHANGED = "mcp.tool_definition_changed"
"""A tool's name, description, schemas or annotations differ from the approved (first seen) definition; offered
anyway because the server is not pinned (`tooldeck mcp diff`, `tooldeck mcp approve`)."""
TOOL_UNAPPROVED = "mcp.tool_unapproved"
"""A pinned server's tool changed since it was approved: it is not offered until `tooldeck mcp approve`."""
TOOL_DESCRIPTION_SUSPICIOUS = "mcp.tool_description_suspicious"
"""A tool's description carries hidden text or instructions aimed at the model (`poisoning.py`)."""
PINS_UNAVAILABLE = "mcp.pins_unavailable"
"""The pinned-definitions store `<home>/mcp/pins.sqlite` cannot be read or written."""

# Why a server could not be started, reached, greeted or listed (`failures.classify`); each is the code of
# the server's diagnostic, of `tooldeck mcp list`'s `failure`, and the `cause` of a `mcp.not_sent` result.
CWD_NOT_FOUND = "mcp.cwd_not_found"
COMMAND_NOT_FOUND = "mcp.command_not_found"
COMMAND_NOT_EXECUTABLE = "mcp.command_not_executable"
SPAWN_FAILED = "mcp.spawn_failed"
PROCESS_EXITED = "mcp.process_exited"
NOT_MCP = "mcp.not_mcp"
MESSAGE_TOO_LARGE = "mcp.message_too_large"
AUTH_REQUIRED = "mcp.auth_required"
AUTH_FORBIDDEN = "mcp.auth_forbidden"
OAUTH_FAILED = "mcp.oauth_failed"
LOGIN_FAILED = "mcp.login_failed"
"""`tooldeck mcp login` could not sign in (the CLI's message, not a server failure)."""
HTTP_REDIRECT = "mcp.http_redirect"
HTTP_NOT_FOUND = "mcp.http_not_found"
HTTP_SERVER_ERROR = "mcp.http_server_error"
HTTP_ERROR = "mcp.http_error"
DNS_FAILED = "mcp.dns_failed"
CONNECTION_REFUSED = "mcp.connection_refused"
TLS_FAILED = "mcp.tls_failed"
CONNECT_TIMEOUT = "mcp.connect_timeout"
NETWORK_ERROR = "mcp.network_error"
PROTOCOL_INCOMPATIBLE = "mcp.protocol_incompatible"
CONNECTION_LOST = "mcp.connection_lost"
LISTING_FAILED = "mcp.listing_failed"
HANDSHAKE_FAILED = "mcp.handshake_failed"

# Configuration.
CONFIG_UNREADABLE = "mcp.config_unreadable"
CONFIG_UNPARSABLE = "mcp.config_unparsable"
CONFIG_INVALID = "mcp.config_invalid"
CONFIG_ENDPOINT_MISSING = "mcp.config_endpoint_missing"
CONFIG_ENDPOINT_CONFLICT = "mcp.config_endpoint_conflict"
CONFIG_ENV_MISSING = "mcp.config_env_missing"
UNKNOWN_SERVER = "mcp.unknown_server"
UNKNOWN_TOOL = "mcp.unknown_tool"
"""`tooldeck mcp approve SERVER TOOL` names a tool the server's cached catalog does not list."""
PIN_MISMATCH = "mcp.pin_mismatch"
"""`tooldeck mcp approve ... --expect DIGEST`: the listed definition is not the one reviewed (it changed again since
`tooldeck mcp diff`); nothing is approved."""
EXPECT_INVALID = "mcp.expect_invalid"
"""`--expect` is not a definition digest (or several are given for one tool)."""


class McpConfigError(TooldeckError, ValueError):
    """The MCP configuration (tooldeck.toml `[mcp]` or mcp.json) is wrong; the message names file and key."""
