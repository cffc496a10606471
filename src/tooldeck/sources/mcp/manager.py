"""The MCP tool source: configured servers → registrations → cached catalogs → descriptors and calls.

- `descriptors()` and `diagnostics()` read memory only (loaded from the disk cache, refreshed by
  discovery), so preparing an invocation never waits on a server.
- `resolve()` gives an async executable that re-checks the server and the tool's permission right
  before sending, hops onto the MCP loop, connects (or reconnects a dead server) and calls once.
  It never retries a call.
- Servers are discovered when the runtime opens if they have no cached catalog yet (waiting at most
  `startup_wait_s`), on `tooldeck mcp refresh`, after every (re)connect, and on
  `notifications/tools/list_changed`.
- A failure to start, reach or list a server is classified (`classify.py`) into a code, a cause and
  the next step; it is kept on the server's state, written to `<home>/mcp/failures/` for other
  processes, logged (logger `tooldeck.mcp`, once per change), shown in diagnostics and
  `tooldeck mcp list`, and explains the gate's unknown-tool message for that server's call names.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import shlex
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from pydantic import ValidationError

from tooldeck.catalog.sources import CallContext, Diagnostic, Executable
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.ids import SourceKind, ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.naming import mcp_model_name
from tooldeck.records.registrations import RegistrationStore
from tooldeck.sources.mcp import catalog as cat
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp import failure_store
from tooldeck.sources.mcp.classify import classify
from tooldeck.sources.mcp.client import ServerConnection
from tooldeck.sources.mcp.content import SaveTarget, result_output
from tooldeck.sources.mcp.errors import (
    AUTH_FORBIDDEN,
    AUTH_REQUIRED,
    LISTING_INVALID,
    PAGE_LIMIT_EXCEEDED,
    UNKNOWN_SERVER,
    McpConfigError,
)
from tooldeck.sources.mcp.evidence import Evidence
from tooldeck.sources.mcp.explain import explain_unknown, server_diagnostics
from tooldeck.sources.mcp.failures import ConnectFailed, Failure, Target, describe
from tooldeck.sources.mcp.loop import BackgroundLoop
from tooldeck.sources.mcp.outcomes import not_sent, outcome_unknown, refused, server_error, unsupported
from tooldeck.sources.mcp.reports import RefreshReport, ServerStatus, ToolInfo
from tooldeck.sources.mcp.state import ServerState

if TYPE_CHECKING:
    from tooldeck.gate import GateTable

log = logging.getLogger("tooldeck.mcp")

_MUTATING = ToolAnnotations(mutating=True)  # MCP annotations are untrusted: assume a call may change state
_CALL_GRACE_S = 1.0
_CLOSE_TIMEOUT_S = 15.0


class McpManager:
    """The `mcp` ToolSource. Construct with `McpManager.from_home(home)`; close with `close()`."""

    kind: SourceKind = "mcp"

    def __init__(self, home: str | Path, config: cfg.McpConfig, *, start: bool = True,
                 registrations: RegistrationStore | None = None) -> None:
        self.home = Path(home)
        self.config = config
        self.catalog_dir = self.home / "mcp" / "catalogs"
        self.failure_dir = self.home / "mcp" / "failures"
        self.log_dir = self.home / "mcp" / "logs"
        store = registrations or RegistrationStore(self.home / "records.sqlite")
        servers = list(config.servers.values())
        regs = store.ensure_many([(s.name, s.endpoint_key(), s.endpoint()) for s in servers]) if servers else []
        self._servers: dict[str, ServerState] = {}
        self._by_rid: dict[str, ServerState] = {}
        for server, reg in zip(servers, regs, strict=True):
            state = ServerState(server, reg)
            state.catalog, state.cache_problem = cat.load_cache(self.catalog_dir, reg.registration_id,
                                                                server.endpoint_key())
            state.failure = failure_store.load(self.failure_dir, reg.registration_id, server.endpoint_key())
            self._servers[server.name] = state
            self._by_rid[reg.registration_id] = state
        self._lock = threading.Lock()
        self._loop_obj: BackgroundLoop | None = None
        self._executables: dict[ToolId, Executable] = {}
        self._offered: tuple[ToolDescriptor, ...] = ()
        self._permissions: dict[str, cfg.Permission] = {}
        self.closed = False
        self._rebuild()
        self._atexit = _register_atexit(self)
        if start:
            self.start()

    @classmethod
    def from_home(cls, home: str | Path, *, start: bool = True) -> McpManager | None:
        """The manager for a home dir's `tooldeck.toml` / `mcp.json`, or None when neither declares MCP."""
        config = cfg.load(home)
        if config is None:
            return None
        return cls(home, config, start=start)

    # -- the background loop ----------------------------------------------------------------------
    @property
    def loop(self) -> BackgroundLoop:
        """The MCP background loop, started on first use (a manager that only reads caches starts none)."""
        if self._loop_obj is None:
            with self._lock:
                if self._loop_obj is None:
                    self._loop_obj = BackgroundLoop()
        return self._loop_obj

    def start(self) -> None:
        """Discover servers with no cached catalog (waiting up to `startup_wait_s`); with `connect = "start"`
        also connect and re-list the others in the background."""
        first: list[concurrent.futures.Future[Any]] = []
        for state in self._servers.values():
            if state.config.paused:
                continue
            if state.catalog is None:
                first.append(self.loop.submit(self._refresh(state)))
            elif self.config.connect == "start":
                self.loop.submit(self._refresh(state))
        if first and self.config.startup_wait_s > 0:
            concurrent.futures.wait(first, timeout=self.config.startup_wait_s)

    # -- ToolSource -------------------------------------------------------------------------------
    def descriptors(self) -> Iterable[ToolDescriptor]:
        return self._offered

    def diagnostics(self) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        for state in self._servers.values():
            out.extend(server_diagnostics(state))
        return out

    def resolve(self, tool_id: ToolId) -> Executable | None:
        executable = self._executables.get(tool_id)
        if executable is None:
            state = self._by_rid.get(tool_id.source_id)
            if state is None:
                return None
            executable = self._executables[tool_id] = Executable(self._make_call(state, tool_id.name))
        return executable

    def permission_for(self, tool_id: str) -> cfg.Permission | None:
        """The configured permission of an MCP tool id (None when the id is not one of ours)."""
        perm = self._permissions.get(tool_id)
        if perm is not None:
            return perm
        parsed = ToolId.parse(tool_id)
        state = self._by_rid.get(parsed.source_id) if parsed.provider.startswith("mcp/") else None
        return self.config.permission_for(state.config, parsed.name) if state else None

    def prepare_gate(self, table: GateTable) -> None:
        """Everything the MCP source adds to a gate table: `ask` permissions, and the reason a call name of one
        of its servers is missing (for the unknown-tool message)."""
        self.narrow_permissions(table)
        table.explain_unknown.append(self.explain_unknown)

    def explain_unknown(self, call_name: str) -> str | None:
        """Why a model-facing name `mcp__<server>__…` is not callable, when its server's state is the reason
        (not started, failed, paused, tool turned off); None when it is not one of ours."""
        return explain_unknown(self._servers.values(), call_name,
                               lambda state, tool: self.config.permission_for(state.config, tool))

    def narrow_permissions(self, table: GateTable) -> None:
        """Map MCP `ask` into the gate: an `ask` tool goes through the confirmation callback even when the
        Profile allows it. (Profile `ask`/`deny` stay as they are; `off` tools are never offered.)"""
        for entry in table.entries.values():
            if entry.permission == "allow" and entry.tool_id.startswith("mcp/") \
                    and self.permission_for(entry.tool_id) == "ask":
                entry.permission = "ask"

    # -- status and refresh (CLI, hosts) ----------------------------------------------------------
    def server_names(self) -> list[str]:
        return list(self._servers)

    def _state(self, name: str) -> ServerState:
        state = self._servers.get(name)
        if state is None:
            known = ", ".join(self._servers) or "(none)"
            raise McpConfigError(UNKNOWN_SERVER, f"no MCP server named {name!r}; configured: {known}")
        return state

    def status(self) -> list[ServerStatus]:
        out = []
        for state in self._servers.values():
            c = state.config
            total = len(state.catalog.tools) if state.catalog else 0
            offered = sum(1 for d in self._offered if d.id.source_id == state.rid)
            conn_state = state.connection.state if state.connection else "idle"
            if c.paused:
                shown = "paused"
            elif conn_state in ("connected", "connecting"):
                shown = conn_state
            elif state.failure is not None:
                shown = "failed"
            else:
                shown = "cached" if state.catalog else "not discovered"
            out.append(ServerStatus(c.name, state.rid, c.transport, c.endpoint_text(), c.paused, shown, total, offered,
                                    state.catalog.fetched_at if state.catalog else None, state.error,
                                    server_diagnostics(state), state.failure))
        return out

    def tools(self, name: str) -> list[ToolInfo]:
        state = self._state(name)
        if state.catalog is None:
            return []
        out = []
        for tool in state.catalog.tools:
            tid = str(ToolId.mcp(state.rid, tool["name"]))
            out.append(ToolInfo(tid, tool["name"], mcp_model_name(state.config.name, tool["name"]),
                                self.config.permission_for(state.config, tool["name"]),
                                tool.get("description") or ""))
        return out

    def refresh(self, name: str | None = None, timeout: float | None = None) -> list[RefreshReport]:
        """Connect and re-list one server (or every unpaused one); blocks the calling thread."""
        states = [self._state(name)] if name is not None else [s for s in self._servers.values()
                                                               if not s.config.paused]
        if not states:
            return []

        async def run() -> list[RefreshReport]:
            return list(await asyncio.gather(*(self._refresh(s) for s in states)))

        return self.loop.run_sync(run(), timeout)

    async def arefresh(self, name: str | None = None) -> list[RefreshReport]:
        states = [self._state(name)] if name is not None else [s for s in self._servers.values()
                                                               if not s.config.paused]

        async def run() -> list[RefreshReport]:
            return list(await asyncio.gather(*(self._refresh(s) for s in states)))

        return await self.loop.run(run())

    def close(self) -> None:
        """Close every session (stdio servers are stopped) and the MCP thread. Idempotent."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            atexit.unregister(self._atexit)
        loop = self._loop_obj
        if loop is None:
            return

        async def close_all() -> None:
            conns = [s.connection for s in self._servers.values() if s.connection is not None]
            await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)

        with contextlib.suppress(Exception):
            loop.run_sync(close_all(), _CLOSE_TIMEOUT_S)
        loop.stop()

    # -- descriptors ------------------------------------------------------------------------------
    def _rebuild(self) -> None:
        offered: list[ToolDescriptor] = []
        permissions: dict[str, cfg.Permission] = {}
        for state in self._servers.values():
            if state.catalog is None:
                continue
            server = state.config
            for tool in state.catalog.tools:
                name = tool["name"]
                tid = ToolId.mcp(state.rid, name)
                perm = self.config.permission_for(server, name)
                permissions[str(tid)] = perm
                if perm == "off" or server.paused:
                    continue
                offered.append(self._descriptor(tid, server.name, tool))
        with self._lock:
            self._offered = tuple(offered)
            self._permissions = permissions

    @staticmethod
    def _descriptor(tid: ToolId, server: str, tool: dict[str, Any]) -> ToolDescriptor:
        annotations = tool.get("annotations") or {}
        description = tool.get("description") or f'MCP tool "{tid.name}" from server "{server}".'
        return ToolDescriptor(
            id=tid, description=description, input_schema=tool["inputSchema"],
            title=tool.get("title") or annotations.get("title"), output_schema=tool.get("outputSchema"),
            annotations=_MUTATING, model_name=mcp_model_name(server, tid.name),
        )

    # -- failures ---------------------------------------------------------------------------------
    def _target(self, state: ServerState, cwd: str | None = None) -> Target:
        c = state.config
        line = shlex.join([c.command, *c.args]) if c.command is not None else c.endpoint_text()
        return Target(c.name, c.source, c.transport, line, c.command, cwd or c.cwd, c.url,
                      any(k.lower() == "authorization" for k in c.headers), c.connect_timeout_s,
                      str(self.log_dir / f"{state.rid}.log"))

    def _failed(self, state: ServerState, failure: Failure, *, persist: bool = True) -> None:
        """Keep, log (once per change) and persist a server's failure."""
        state.failure = failure
        key = (failure.code, failure.summary)
        if state.logged != key:
            state.logged = key
            log.warning("%s [%s] %s", failure.text, failure.code, failure.advice)
        if persist:
            try:
                failure_store.save(self.failure_dir, state.rid, state.config.endpoint_key(), failure)
            except OSError as exc:
                log.warning("MCP server `%s`: the failure record could not be written (%s); other processes will not "
                            "see it", state.config.name, exc)

    def _recovered(self, state: ServerState) -> None:
        if state.logged is not None:
            log.info("MCP server `%s` works again: %d tools listed", state.config.name,
                     len(state.catalog.tools) if state.catalog else 0)
        had = state.failure is not None
        state.failure, state.logged = None, None
        if had:
            try:
                failure_store.clear(self.failure_dir, state.rid)
            except OSError as exc:
                log.warning("MCP server `%s`: the stale failure record could not be removed (%s)", state.config.name,
                            exc)

    # -- discovery (MCP loop) ---------------------------------------------------------------------
    def _connection(self, state: ServerState) -> ServerConnection:
        if state.connection is None:
            endpoint = cfg.resolve_endpoint(state.config, base_dir=self.home)
            state.connection = ServerConnection(
                state.config.name, endpoint, protocol=state.config.protocol,
                log_path=self.log_dir / f"{state.rid}.log", connect_timeout=state.config.connect_timeout_s,
                on_tools_changed=lambda: self._tools_changed(state), target=self._target(state, endpoint.cwd))
        return state.connection

    async def _connect(self, state: ServerState) -> ServerConnection:
        """The live connection, (re)connecting first. Raises ConnectFailed, with the failure already recorded."""
        try:
            try:
                conn = self._connection(state)
            except McpConfigError as exc:
                raise ConnectFailed(classify(exc, Evidence(), self._target(state))) from exc
            await conn.connect(state.config.connect_timeout_s)
        except ConnectFailed as exc:
            self._failed(state, exc.failure)
            raise
        return conn

    async def _refresh(self, state: ServerState) -> RefreshReport:
        name = state.config.name
        before = set(state.catalog.names) if state.catalog else set()
        try:
            conn = await self._connect(state)
        except ConnectFailed:
            return RefreshReport(name, False, len(before), [], [], state.error, server_diagnostics(state),
                                 state.failure)
        await self._list(state, conn)
        after = set(state.catalog.names) if state.catalog else set()
        return RefreshReport(name, state.failure is None, len(after), sorted(after - before),
                             sorted(before - after), state.error, server_diagnostics(state), state.failure)

    async def _list(self, state: ServerState, conn: ServerConnection) -> None:
        generation = conn.connects
        try:
            listing = await conn.list_tools(state.config.connect_timeout_s)
        except ConnectFailed as exc:
            self._failed(state, exc.failure)
            return
        except Exception as exc:
            self._failed(state, conn.classify(exc, "list"))
            return
        kept, problems = cat.validate_tools(listing.tools, state.rid, state.config.name)
        for note in listing.notes:
            problems.append(Diagnostic(PAGE_LIMIT_EXCEEDED, f"MCP server `{state.config.name}`: {note}."))
        catalog = cat.ServerCatalog(state.rid, state.config.name, state.config.endpoint_key(), time.time(),
                                    tuple(kept), tuple(problems), listing.protocol_version, listing.server_info,
                                    listing.instructions)
        try:
            cat.save_cache(self.catalog_dir, catalog)
        except OSError as exc:
            problems.append(Diagnostic(LISTING_INVALID, f"the MCP catalog cache could not be written ({exc}); the "
                                       "tools are offered from memory until the runtime closes"))
        state.catalog, state.cache_problem = catalog, None
        state.listed_connect = generation
        state.refreshes += 1
        self._recovered(state)
        self._rebuild()

    def _tools_changed(self, state: ServerState) -> None:
        """`notifications/tools/list_changed` (on the MCP loop): re-list, coalescing bursts."""
        if state.refresh_task is not None and not state.refresh_task.done():
            state.refresh_again = True
            return

        async def run() -> None:
            while True:
                state.refresh_again = False
                with contextlib.suppress(Exception):  # a failure is recorded by _refresh itself
                    await self._refresh(state)
                if not state.refresh_again:
                    return

        state.refresh_task = asyncio.get_running_loop().create_task(run())

    # -- calls ------------------------------------------------------------------------------------
    def _make_call(self, state: ServerState, native: str) -> Callable[[dict[str, Any], CallContext],
                                                                      Awaitable[ToolOutput]]:
        tool_id = str(ToolId.mcp(state.rid, native))

        async def call(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
            refusal = self._precheck(state, native, tool_id)
            if refusal is not None:
                return refusal
            timeout = _call_timeout(state.config.call_timeout_for(native), ctx)
            target = SaveTarget(ctx.run.workspace_root, ctx.invocation.id, ctx.call_id, ctx.round)
            return await self.loop.run(self._call(state, native, args, timeout, target))

        return call

    def _precheck(self, state: ServerState, native: str, tool_id: str) -> ToolOutput | None:
        """Re-read the registration right before sending: paused, off or vanished → not sent."""
        server = state.config.name
        if self.closed:
            return not_sent(server, native, "closed", "the MCP manager of this runtime is closed",
                            "The host must open a new runtime.")
        if state.config.paused:
            return not_sent(server, native, "paused", "the server is paused in the tooldeck configuration",
                            "Use another tool, or ask the user to resume the server.")
        if self._permissions.get(tool_id, self.config.permission_for(state.config, native)) == "off":
            return not_sent(server, native, "tool_off", "the tool is turned off (permission `off`)",
                            "Use another tool.")
        catalog = state.catalog
        if catalog is not None and native not in catalog.names:
            return not_sent(server, native, "tool_removed", "the server no longer lists this tool",
                            "Use another tool.")
        return None

    async def _call(self, state: ServerState, native: str, args: dict[str, Any], timeout: float,
                    target: SaveTarget) -> ToolOutput:
        server = state.config.name
        try:
            conn = await self._connect(state)
        except ConnectFailed as exc:
            return _connect_failed(server, native, exc.failure)
        if state.listed_connect != conn.connects:
            await self._list(state, conn)  # a fresh session: check the tool is still there, learn output schemas
            if state.catalog is not None and native not in state.catalog.names:
                return not_sent(server, native, "tool_removed", "the server no longer lists this tool",
                                "Use another tool.")
        try:
            async with asyncio.timeout(timeout + _CALL_GRACE_S):
                result = await conn.call_tool(native, args, timeout)
        except ConnectFailed as exc:
            self._failed(state, exc.failure, persist=False)
            return _connect_failed(server, native, exc.failure)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                lost = conn.classify(exc, "session")
                self._failed(state, lost, persist=False)
                return outcome_unknown(server, native, f"the connection closed before the answer came ({lost.summary})")
            if exc.code == REQUEST_TIMEOUT:
                return outcome_unknown(server, native, f"no answer came within {timeout:g} s")
            reply = conn.evidence.decisive_reply()
            if reply is not None and reply.method == "tools/call" and reply.status in (401, 403):
                failure = conn.classify(exc, "session")  # the credentials were refused before the tool ran
                if failure.code in (AUTH_REQUIRED, AUTH_FORBIDDEN):
                    self._failed(state, failure)
                    return refused(server, native, failure)
            return server_error(server, native, exc.code, exc.error.message, exc.error.data)
        except TimeoutError:
            return outcome_unknown(server, native, f"no answer came within {timeout:g} s")
        except ValidationError as exc:
            return unsupported(server, native, describe(exc))
        except RuntimeError as exc:
            if "structured content" in str(exc) or "output schema" in str(exc):
                return unsupported(server, native, str(exc))
            return outcome_unknown(server, native, f"the transport failed ({describe(exc)})")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return outcome_unknown(server, native, f"the transport failed ({describe(exc)})")
        return result_output(result, target)


def _connect_failed(server: str, native: str, failure: Failure) -> ToolOutput:
    return not_sent(server, native, "connect_failed", f"the server {failure.summary}", failure.model_advice(),
                    cause=failure.to_dict())


def _call_timeout(server_timeout: float, ctx: CallContext) -> float:
    """The server's call timeout, kept just under the invocation's own timeout for this tool so the
    MCP outcome (not a generic `tool.timeout`) is what the model and the records get."""
    entry = ctx.invocation.gate.entries.get(ctx.call_name) if hasattr(ctx.invocation, "gate") else None
    outer = entry.timeout_s if entry is not None else None
    if outer is None:
        return server_timeout
    return max(0.01, min(server_timeout, outer - min(0.5, outer * 0.05)))


def _register_atexit(manager: McpManager) -> Callable[[], None]:
    ref = weakref.ref(manager)

    def close() -> None:
        m = ref()
        if m is not None:
            with contextlib.suppress(Exception):
                m.close()

    atexit.register(close)
    return close
