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
- Every listed tool is pinned on first sight (`pins.py`, `observe`); a tool of a pinned server whose
  definition changed since it was approved is withheld (`withheld`: tool id -> reason). Approvals made by
  another process of the home are picked up by `sync_pins`, which costs one small read when nothing changed.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from tooldeck.catalog.sources import Diagnostic
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.ids import ToolId
from tooldeck.naming import mcp_model_name
from tooldeck.records.registrations import RegistrationStore
from tooldeck.sources.mcp import catalog as cat
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp import failure_store, pin_checks
from tooldeck.sources.mcp.errors import (
    EXPECT_INVALID,
    PIN_MISMATCH,
    PINS_UNAVAILABLE,
    UNKNOWN_SERVER,
    UNKNOWN_TOOL,
    McpConfigError,
)
from tooldeck.sources.mcp.explain import explain_unknown
from tooldeck.sources.mcp.pins import PinStore, digest, expect_problem, unexpected
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
        self.withheld: dict[str, str] = {}
        """Tool id -> why it is not offered: its pinned server lists a definition nobody approved."""
        self.callbacks: Any = None
        """The host's `callbacks.McpCallbacks` (`McpManager.callbacks`), or None."""
        self._lock = threading.Lock()
        self._pin_lock = threading.Lock()
        self.pin_store = PinStore(dirs.pins)
        self._pin_stamp = self.pin_store.stamp()
        for state in self.by_name.values():
            self.observe(state)
        self.rebuild()

    # -- pins -------------------------------------------------------------------------------------------
    def observe(self, state: ServerState) -> None:
        """Pin the tools of a server's catalog seen for the first time; load its pins (after each listing)."""
        if state.catalog is None:
            return
        try:
            state.pins = self.pin_store.observe(state.rid, state.catalog.tools)
            state.pins_problem = None
        except (sqlite3.Error, OSError) as exc:
            state.pins = None
            state.pins_problem = _store_problem(self.pin_store, exc)

    def sync_pins(self) -> None:
        """Reload every server's pins when another process (or this one) changed the store since the last look."""
        stamp = self.pin_store.stamp()
        if stamp == self._pin_stamp:
            return
        with self._pin_lock:
            self._pin_stamp = stamp
            for state in self.by_name.values():
                if state.catalog is None:
                    continue
                try:
                    state.pins = self.pin_store.load(state.rid)
                    state.pins_problem = None
                except (sqlite3.Error, OSError) as exc:
                    state.pins, state.pins_problem = None, _store_problem(self.pin_store, exc)
        self.rebuild()

    def approve(self, name: str, tool: str | None, who: str, expect: Sequence[str] | None = None) -> list[str]:
        """Approve the listed definition of `tool` (or of every tool that differs from its pin) of server `name`;
        the approved names. With `expect` (the digests the user reviewed), only when the definitions to approve
        are exactly those. Raises McpConfigError (`mcp.unknown_server`, `mcp.unknown_tool`, `mcp.pin_mismatch`)
        and sqlite3.Error."""
        if expect is not None:
            _check_expect_values(tool, expect)
        state = self.named(name)
        tools = state.catalog.tools if state.catalog is not None else ()
        if tool is not None:
            chosen = [t for t in tools if t["name"] == tool]
            if not chosen:
                listed = ", ".join(t["name"] for t in tools) or "(none: run `tooldeck mcp refresh` first)"
                raise McpConfigError(UNKNOWN_TOOL, f"MCP server {name!r} lists no tool {tool!r}; it lists: {listed}")
        else:
            changed = set(pin_checks.changed_tools(state))
            chosen = [t for t in tools if t["name"] in changed]
        if expect is not None:
            _check_expected(name, chosen, expect)
        if chosen:
            state.pins = self.pin_store.approve(state.rid, chosen, who)
            self.rebuild()
        return [t["name"] for t in chosen]

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
        withheld: dict[str, str] = {}
        original = self.config.names == "original"
        for state in self.by_name.values():
            state.pinned = self.config.pinned(state.config)
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
                if state.pinned and pin_checks.withheld(state, name):
                    withheld[str(tid)] = pin_checks.withheld_reason(state, name)
                    continue
                offered.append(descriptor(tid, server.name, tool, server.label, original))
        with self._lock:
            self.offered = tuple(offered)
            self.permissions = permissions
            self.withheld = withheld


def _store_problem(store: PinStore, exc: Exception) -> Diagnostic:
    return Diagnostic(PINS_UNAVAILABLE, f"the pinned tool definitions in {store.path} cannot be used ({exc}); changed "
                      "tool definitions cannot be detected, and pinned servers offer none of their tools until it "
                      "works again. Check the file's permissions, or move it away to start afresh.")


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


def _check_expect_values(tool: str | None, expect: Sequence[str]) -> None:
    for value in expect:
        problem = expect_problem(value)
        if problem is not None:
            raise McpConfigError(EXPECT_INVALID, problem)
    if tool is not None and len(expect) > 1:
        raise McpConfigError(EXPECT_INVALID, f"one tool ({tool}) has one digest: give --expect once")


def _check_expected(server: str, chosen: list[dict[str, Any]], expect: Sequence[str]) -> None:
    stray, unmatched = unexpected(chosen, expect)
    if not stray and not unmatched:
        return
    parts = [f"`{t['name']}` is now listed with digest {digest(t)}" for t in chosen if t["name"] in stray]
    parts += [f"no definition to approve has digest {e}" for e in unmatched]
    raise McpConfigError(PIN_MISMATCH, f"MCP server {server!r}: the definitions to approve are not the ones reviewed "
                         f"({'; '.join(parts)}); they changed since `tooldeck mcp diff` (or were approved "
                         f"meanwhile). Nothing was approved: run `tooldeck mcp diff {server}` again and approve "
                         "what it shows.")
