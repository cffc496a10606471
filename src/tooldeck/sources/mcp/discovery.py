"""Connecting to MCP servers and listing their tools, on the MCP loop (`Discovery`).

- A server is discovered when the runtime opens if it has no cached catalog yet, on `tooldeck mcp
  refresh`, after every (re)connect (before the first call on the new session), and on
  `notifications/tools/list_changed` (bursts coalesced into one listing at a time).
- One `ServerConnection` per server, made on first use; a dead one reconnects on the next use.
- A failure to start, reach, greet or list a server is classified (`classify.py`) and recorded
  (`health.failed`) before anything else sees it; a successful listing replaces the catalog in
  memory and on disk, clears the failure (`health.recovered`) and rebuilds what is offered.
- A listing never raises: its failure is on the server's state and in the `RefreshReport`.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import time

from tooldeck.catalog.sources import Diagnostic
from tooldeck.sources.mcp import catalog as cat
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp import health
from tooldeck.sources.mcp.callbacks import McpCallbacks
from tooldeck.sources.mcp.classify import classify
from tooldeck.sources.mcp.client import ServerConnection
from tooldeck.sources.mcp.errors import LISTING_INVALID, PAGE_LIMIT_EXCEEDED, McpConfigError
from tooldeck.sources.mcp.evidence import Evidence
from tooldeck.sources.mcp.explain import server_diagnostics
from tooldeck.sources.mcp.failures import ConnectFailed, Target
from tooldeck.sources.mcp.reports import RefreshReport
from tooldeck.sources.mcp.servers import Servers
from tooldeck.sources.mcp.state import ServerState


class Discovery:
    def __init__(self, servers: Servers) -> None:
        self.servers = servers
        self.dirs = servers.dirs

    def target(self, state: ServerState, cwd: str | None = None) -> Target:
        """What failure rules may know about a server's entry (never a secret)."""
        c = state.config
        line = shlex.join([c.command, *c.args]) if c.command is not None else c.endpoint_text()
        authorization = any(k.lower() == "authorization" for k in c.headers)
        return Target(c.name, c.source, c.transport, line, c.command, cwd or c.cwd, c.url, authorization,
                      c.connect_timeout_s, str(self.dirs.log(state.rid)),
                      oauth=c.uses_oauth)

    def connection(self, state: ServerState) -> ServerConnection:
        """The server's connection object (made once; raises McpConfigError when a `${VAR}` is not set)."""
        if state.connection is None:
            endpoint = cfg.resolve_endpoint(state.config, base_dir=self.dirs.home)
            state.connection = ServerConnection(
                state.config.name, endpoint, protocol=state.config.protocol,
                log_path=self.dirs.log(state.rid), connect_timeout=state.config.connect_timeout_s,
                on_tools_changed=lambda: self.tools_changed(state), target=self.target(state, endpoint.cwd),
                host_callbacks=lambda: self.servers.callbacks or McpCallbacks())
        return state.connection

    async def connect(self, state: ServerState) -> ServerConnection:
        """The live connection, (re)connecting first. Raises ConnectFailed, with the failure already recorded."""
        try:
            try:
                conn = self.connection(state)
            except McpConfigError as exc:
                raise ConnectFailed(classify(exc, Evidence(), self.target(state))) from exc
            await conn.connect(state.config.connect_timeout_s)
        except ConnectFailed as exc:
            health.failed(self.dirs, state, exc.failure)
            raise
        return conn

    async def refresh(self, state: ServerState) -> RefreshReport:
        """Connect and list one server; what changed, or why it failed."""
        name = state.config.name
        before = set(state.catalog.names) if state.catalog else set()
        try:
            conn = await self.connect(state)
            await self.list(state, conn)
        except ConnectFailed:
            return RefreshReport(name, False, len(before), [], [], state.error, server_diagnostics(state),
                                 state.failure)
        finally:
            state.discovering = False
        after = set(state.catalog.names) if state.catalog else set()
        return RefreshReport(name, state.failure is None, len(after), sorted(after - before),
                             sorted(before - after), state.error, server_diagnostics(state), state.failure)

    async def list(self, state: ServerState, conn: ServerConnection) -> None:
        """List the tools of a live session; replace the catalog, or record why it failed."""
        generation = conn.connects
        try:
            listing = await conn.list_tools(state.config.connect_timeout_s)
        except ConnectFailed as exc:
            health.failed(self.dirs, state, exc.failure)
            return
        except Exception as exc:
            health.failed(self.dirs, state, conn.classify(exc, "list"))
            return
        kept, problems = cat.validate_tools(listing.tools, state.rid, state.config.name)
        for note in listing.notes:
            problems.append(Diagnostic(PAGE_LIMIT_EXCEEDED, f"MCP server `{state.config.name}`: {note}."))
        catalog = cat.ServerCatalog(state.rid, state.config.name, state.config.endpoint_key(), time.time(),
                                    tuple(kept), tuple(problems), listing.protocol_version, listing.server_info,
                                    listing.instructions)
        try:
            cat.save_cache(self.dirs.catalogs, catalog)
        except OSError as exc:
            problems.append(Diagnostic(LISTING_INVALID, f"the MCP catalog cache could not be written ({exc}); the "
                                       "tools are offered from memory until the runtime closes"))
        state.catalog, state.cache_problem = catalog, None
        state.listed_connect = generation
        state.refreshes += 1
        health.recovered(self.dirs, state)
        self.servers.observe(state)
        self.servers.rebuild()

    def tools_changed(self, state: ServerState) -> None:
        """`notifications/tools/list_changed` (on the MCP loop): re-list, coalescing bursts."""
        if state.refresh_task is not None and not state.refresh_task.done():
            state.refresh_again = True
            return

        async def run() -> None:
            while True:
                state.refresh_again = False
                with contextlib.suppress(Exception):  # a failure is recorded by refresh itself
                    await self.refresh(state)
                if not state.refresh_again:
                    return

        state.refresh_task = asyncio.get_running_loop().create_task(run())
