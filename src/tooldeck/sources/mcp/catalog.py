"""A server's tool catalog: validation of a `tools/list` listing and the on-disk cache.

Preparing an invocation never waits on a server: tools come from memory, loaded from
`<home>/mcp/catalogs/<registration-id>.json`, which each successful discovery rewrites. A bad tool
becomes a diagnostic and is left out; it never fails the server.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooldeck.catalog.sources import Diagnostic
from tooldeck.core.ids import ToolId
from tooldeck.sources.mcp.errors import (
    CATALOG_CACHE_INVALID,
    TOOL_DEFINITION_INVALID,
    TOOL_DUPLICATE,
    TOOL_LIMIT_EXCEEDED,
    TOOL_SCHEMA_INVALID,
)
from tooldeck.validation import CompiledSchema

MAX_TOOLS = 512
MAX_PAGES = 32
MAX_TOOL_BYTES = 256 * 1024
CACHE_VERSION = 1


@dataclass(frozen=True, slots=True)
class ServerCatalog:
    """The validated tools of one registration, as raw MCP tool objects (wire field names)."""

    registration_id: str
    server: str
    endpoint_key: str
    fetched_at: float
    tools: tuple[dict[str, Any], ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    protocol_version: str | None = None
    server_info: dict[str, Any] | None = None
    instructions: str | None = None
    names: frozenset[str] = field(default=frozenset())

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(t["name"] for t in self.tools))

    def to_json(self) -> dict[str, Any]:
        return {
            "version": CACHE_VERSION, "registration_id": self.registration_id, "server": self.server,
            "endpoint_key": self.endpoint_key, "fetched_at": self.fetched_at,
            "protocol_version": self.protocol_version, "server_info": self.server_info,
            "instructions": self.instructions, "tools": list(self.tools),
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServerCatalog:
        return cls(
            registration_id=data["registration_id"], server=data["server"], endpoint_key=data["endpoint_key"],
            fetched_at=float(data["fetched_at"]), tools=tuple(data["tools"]),
            diagnostics=tuple(Diagnostic(d["code"], d["message"], d.get("tool_id")) for d in data["diagnostics"]),
            protocol_version=data.get("protocol_version"), server_info=data.get("server_info"),
            instructions=data.get("instructions"),
        )


def validate_tools(raw_tools: Iterable[Any], registration_id: str, server: str) -> tuple[list[dict[str, Any]],
                                                                                        list[Diagnostic]]:
    """Keep the valid tools (first 512, unique names, object input schema); report the rest."""
    kept: list[dict[str, Any]] = []
    problems: list[Diagnostic] = []
    seen: set[str] = set()
    dropped_over_limit = 0
    for index, tool in enumerate(raw_tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        label = f"tool {name!r}" if isinstance(name, str) and name else f"tool #{index + 1}"
        tid = str(ToolId.mcp(registration_id, name)) if isinstance(name, str) and name else None
        problem = _problem(tool, name)
        if problem is not None:
            code, text = problem
            problems.append(Diagnostic(code, f"MCP server `{server}`: {label} is left out: {text}", tid))
            continue
        assert isinstance(name, str) and isinstance(tool, dict)
        if name in seen:
            problems.append(Diagnostic(TOOL_DUPLICATE, f"MCP server `{server}`: {label} is listed twice; the "
                                       "first definition is used", tid))
            continue
        if len(kept) >= MAX_TOOLS:
            dropped_over_limit += 1
            continue
        seen.add(name)
        kept.append(tool)
    if dropped_over_limit:
        problems.append(Diagnostic(TOOL_LIMIT_EXCEEDED, f"MCP server `{server}` lists more than {MAX_TOOLS} tools; "
                                   f"{dropped_over_limit} were left out. Split the server or turn tools off."))
    return kept, problems


def _problem(tool: Any, name: Any) -> tuple[str, str] | None:
    if not isinstance(tool, dict):
        return TOOL_DEFINITION_INVALID, "the definition is not an object"
    if not isinstance(name, str) or not name.strip():
        return TOOL_DEFINITION_INVALID, "it has no name"
    if any(ord(c) < 32 for c in name):
        return TOOL_DEFINITION_INVALID, "its name contains control characters"
    description = tool.get("description")
    if description is not None and not isinstance(description, str):
        return TOOL_DEFINITION_INVALID, "its description is not a string"
    try:
        size = len(json.dumps(tool, ensure_ascii=False))
    except (TypeError, ValueError):
        return TOOL_DEFINITION_INVALID, "the definition is not JSON"
    if size > MAX_TOOL_BYTES:
        return TOOL_DEFINITION_INVALID, f"the definition is {size} bytes (limit {MAX_TOOL_BYTES})"
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        return TOOL_SCHEMA_INVALID, "it has no input schema object"
    if schema.get("type") != "object":
        return TOOL_SCHEMA_INVALID, f"its input schema root has type {schema.get('type')!r}; it must be \"object\""
    error = CompiledSchema(schema).error
    if error is not None:
        return TOOL_SCHEMA_INVALID, f"its input schema is not a valid JSON Schema ({error})"
    return None


# -- disk cache -------------------------------------------------------------------------------------


def cache_path(catalog_dir: Path, registration_id: str) -> Path:
    return catalog_dir / f"{registration_id}.json"


def load_cache(catalog_dir: Path, registration_id: str, endpoint_key: str) -> tuple[ServerCatalog | None,
                                                                                     Diagnostic | None]:
    """The cached catalog of a registration, or None (with a diagnostic when the file is unusable)."""
    path = cache_path(catalog_dir, registration_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, Diagnostic(CATALOG_CACHE_INVALID, f"the MCP catalog cache {path} is unreadable ({exc}); it "
                                "will be rebuilt by the next discovery (`tooldeck mcp refresh`)")
    try:
        catalog = ServerCatalog.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        return None, Diagnostic(CATALOG_CACHE_INVALID, f"the MCP catalog cache {path} is malformed ({exc}); it "
                                "will be rebuilt by the next discovery (`tooldeck mcp refresh`)")
    if catalog.registration_id != registration_id or catalog.endpoint_key != endpoint_key:
        return None, None
    return catalog, None


def save_cache(catalog_dir: Path, catalog: ServerCatalog) -> None:
    """Write atomically (temp file + rename), so a reader never sees half a catalog."""
    catalog_dir.mkdir(parents=True, exist_ok=True)
    path = cache_path(catalog_dir, catalog.registration_id)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(catalog.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
