"""The configured MCP servers of one manager, and the tools they offer now.

- One `ServerState` per configured server, found by name or by registration id. The set is fixed when
  the manager opens (the registrations ensured in one transaction, each server's cached catalog and
  last failure loaded from disk) and never changes afterwards.
- `offered` (the descriptors) and `permissions` (the permission of every listed tool, offered or not)
  are rebuilt whole from the catalogs after each listing and swapped under a lock, so readers never
  see half an update and never wait on a server.
- A tool whose permission is `off`, or of a paused server, is never offered; its permission stays
  known, so a call made from an older snapshot is refused as not sent.
- MCP annotations are not trusted: every offered tool is marked mutating (it runs alone in its turn).
"""

from __future__ import annotations

import threading
from typing import Any

from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.ids import ToolId
from tooldeck.naming import mcp_model_name
from tooldeck.records.registrations import RegistrationStore
from tooldeck.sources.mcp import catalog as cat
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp import failure_store
from tooldeck.sources.mcp.errors import UNKNOWN_SERVER, McpConfigError
from tooldeck.sources.mcp.explain import explain_unknown
from tooldeck.sources.mcp.state import McpDirs, ServerState


class Servers:
    def __init__(self, dirs: McpDirs, config: cfg.McpConfig, registrations: RegistrationStore) -> None:
        self.dirs = dirs
        self.config = config
        configured = list(config.servers.values())
        regs = registrations.ensure_many([(s.name, s.endpoint_key(), s.endpoint()) for s in configured]) \
            if configured else []
        self.by_name: dict[str, ServerState] = {}
        self.by_rid: dict[str, ServerState] = {}
        for server, reg in zip(configured, regs, strict=True):
            state = ServerState(server, reg)
            state.catalog, state.cache_problem = cat.load_cache(dirs.catalogs, reg.registration_id,
                                                                server.endpoint_key())
            state.failure = failure_store.load(dirs.failures, reg.registration_id, server.endpoint_key())
            self.by_name[server.name] = state
            self.by_rid[reg.registration_id] = state
        self.offered: tuple[ToolDescriptor, ...] = ()
        self.permissions: dict[str, cfg.Permission] = {}
        self.callbacks: Any = None
        """The host's `callbacks.McpCallbacks` (`McpManager.callbacks`), or None."""
        self._lock = threading.Lock()
        self.rebuild()

    def named(self, name: str) -> ServerState:
        state = self.by_name.get(name)
        if state is None:
            known = ", ".join(self.by_name) or "(none)"
            raise McpConfigError(UNKNOWN_SERVER, f"no MCP server named {name!r}; configured: {known}")
        return state

    def chosen(self, name: str | None) -> list[ServerState]:
        """The server named `name`, or every one that is not paused."""
        if name is not None:
            return [self.named(name)]
        return [s for s in self.by_name.values() if not s.config.paused]

    def permission(self, state: ServerState, native: str) -> cfg.Permission:
        """The configured permission of a server's tool (its setting, else the server's, else `[mcp]`'s default)."""
        return self.config.permission_for(state.config, native)

    def permission_for(self, tool_id: str) -> cfg.Permission | None:
        """The configured permission of an MCP tool id (None when the id is not one of ours)."""
        perm = self.permissions.get(tool_id)
        if perm is not None:
            return perm
        parsed = ToolId.parse(tool_id)
        state = self.by_rid.get(parsed.source_id) if parsed.provider.startswith("mcp/") else None
        return self.permission(state, parsed.name) if state else None

    def explain_unknown(self, call_name: str) -> str | None:
        """Why a model-facing name `mcp__<server>__…` is not callable, when its server's state is the reason
        (not started, failed, paused, tool turned off); None when it is not one of ours."""
        return explain_unknown(self.by_name.values(), call_name, self.permission)

    def rebuild(self) -> None:
        """Recompute what is offered from the catalogs in memory (after a listing)."""
        offered: list[ToolDescriptor] = []
        permissions: dict[str, cfg.Permission] = {}
        original = self.config.names == "original"
        for state in self.by_name.values():
            if state.catalog is None:
                continue
            server = state.config
            for tool in state.catalog.tools:
                name = tool["name"]
                tid = ToolId.mcp(state.rid, name)
                perm = self.permission(state, name)
                permissions[str(tid)] = perm
                if perm == "off" or server.paused:
                    continue
                offered.append(descriptor(tid, server.name, tool, server.label, original))
        with self._lock:
            self.offered = tuple(offered)
            self.permissions = permissions


def descriptor(tid: ToolId, server: str, tool: dict[str, Any], label: str | None = None,
               original: bool = False) -> ToolDescriptor:
    """The descriptor of one listed tool (a raw MCP tool object, wire field names). Its call name is
    `mcp__<label>__<tool>` (label: the server's alias, else its name); with `original` (names mode) the upstream
    name is offered as the short name, which it gets where no other tool claims it."""
    annotations = tool.get("annotations") or {}
    description = tool.get("description") or f'MCP tool "{tid.name}" from server "{server}".'
    return ToolDescriptor(
        id=tid, description=description, input_schema=tool["inputSchema"],
        title=tool.get("title") or annotations.get("title"), output_schema=tool.get("outputSchema"),
        annotations=ToolAnnotations.from_mcp(annotations), model_name=mcp_model_name(label or server, tid.name),
        short_name=tid.name if original else None,
    )
