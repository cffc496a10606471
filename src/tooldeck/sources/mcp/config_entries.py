"""The servers object of an mcp.json and the shape of one entry, made ready for `ServerConfig`: the keys
other clients write that mean nothing here, `disabled`, and the names of `type` / `transport`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from tooldeck.sources.mcp.errors import CONFIG_INVALID, McpConfigError

_TYPE_ALIASES: dict[str, Literal["stdio", "http", "sse"]] = {
    "stdio": "stdio", "http": "http", "streamable-http": "http", "streamable_http": "http",
    "streamablehttp": "http", "sse": "sse",
}
# Keys of other clients' mcp.json entries that mean nothing here and are ignored.
_JSON_ONLY_IGNORED = {"autoApprove", "alwaysAllow", "timeout", "description", "transportType", "disabledTools", "name"}


def json_servers(path: Path, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise McpConfigError(CONFIG_INVALID, f'{path}: the top level must be an object like {{"mcpServers": {{...}}}}')
    key = "mcpServers" if "mcpServers" in data else "servers" if "servers" in data else None
    if key is None:
        return {}
    servers = data[key]
    if not isinstance(servers, dict):
        raise McpConfigError(CONFIG_INVALID, f"{path}: `{key}` must be an object mapping server names to servers")
    return servers


def normalize_json_entry(path: Path, name: str, entry: Any) -> dict[str, Any]:
    key = f"mcpServers.{name}"
    if not isinstance(entry, dict):
        raise McpConfigError(CONFIG_INVALID, f"{path}: `{key}` must be an object with `command` or `url`")
    out = {k: v for k, v in entry.items() if k not in _JSON_ONLY_IGNORED}
    if "disabled" in out:
        disabled = out.pop("disabled")
        if not isinstance(disabled, bool):
            raise McpConfigError(CONFIG_INVALID, f"{path}: `{key}.disabled` must be true or false")
        out.setdefault("paused", disabled)
    return normalize_type(path, key, out)


def normalize_type(path: Path, key: str, entry: dict[str, Any]) -> dict[str, Any]:
    if "transport" in entry:  # `"transport": "sse"` is another name of `type`
        transport = entry.pop("transport")
        if "type" in entry and entry["type"] != transport:
            raise McpConfigError(CONFIG_INVALID, f"{path}: `{key}` has both `type` ({entry['type']!r}) and "
                                 f"`transport` ({transport!r}); keep one")
        entry["type"] = transport
    kind = entry.get("type")
    if kind is None:
        return entry
    if not isinstance(kind, str) or kind.lower() not in _TYPE_ALIASES:
        raise McpConfigError(CONFIG_INVALID, f"{path}: `{key}.type` is {kind!r}; expected stdio, http (streamable "
                             "HTTP) or sse (the 2024-11-05 HTTP+SSE transport)")
    entry["type"] = _TYPE_ALIASES[kind.lower()]
    return entry
