"""The MCP tool source, `McpManager`: what the runtime, `tooldeck serve` and `tooldeck mcp` hold.

It composes one part per job, each in its own module:

- `servers.py`: the configured servers (registrations, cached catalogs, last failures) and what
  they offer; `status.py`: what `tooldeck mcp list | tools` shows of them;
- `discovery.py`: connecting and listing, on the MCP loop (`loop.py`); `health.py`: recording a
  server's failure and its recovery;
- `calls.py`: one call; `call_outcome.py`: what became of a call that raised;
- `gate_hook.py`: what the source adds to the gate (`ask` permissions, why a name is missing).

Invariants:

- `descriptors()` and `diagnostics()` read memory only (loaded from the disk caches, refreshed by
  discovery), so preparing an invocation never waits on a server.
- Every session runs on one background loop, started on first use: a manager that only reads
  caches starts no thread and no process.
- `close()` stops every session (and every stdio server process) and the loop's thread; it is
  idempotent and also runs at interpreter exit. After it, no request is sent (calls answer
  `mcp.not_sent`, reason `closed`).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooldeck.catalog.sources import Diagnostic, Executable
from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.ids import SourceKind, ToolId
from tooldeck.records.registrations import RegistrationStore
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp import gate_hook, pin_checks, status
from tooldeck.sources.mcp.calls import Calls
from tooldeck.sources.mcp.discovery import Discovery
from tooldeck.sources.mcp.explain import server_diagnostics
from tooldeck.sources.mcp.loop import BackgroundLoop, LoopSlot
from tooldeck.sources.mcp.pin_checks import ToolDiff
from tooldeck.sources.mcp.reports import RefreshReport, ServerStatus, ToolInfo
from tooldeck.sources.mcp.resources import Upstream
from tooldeck.sources.mcp.servers import Servers
from tooldeck.sources.mcp.state import McpDirs, ServerState

if TYPE_CHECKING:
    from tooldeck.gate import GateTable

_CLOSE_TIMEOUT_S = 15.0


class McpManager:
    """The `mcp` ToolSource. Construct with `McpManager.from_home(home)`; close with `close()`."""

    kind: SourceKind = "mcp"

    def __init__(self, home: str | Path, config: cfg.McpConfig, *, start: bool = True,
                 registrations: RegistrationStore | None = None) -> None:
        self.home = Path(home)
        dirs = McpDirs(self.home)
        self.servers = Servers(dirs, config, registrations or RegistrationStore(self.home / "records.sqlite"))
        self._servers: dict[str, ServerState] = self.servers.by_name
        self._slot = LoopSlot()
        self.discovery = Discovery(self.servers)
        self._calls = Calls(self.servers, self.discovery, self._slot)
        self.upstream = Upstream(self.servers, self.discovery, self._slot)
        """The servers' resources, templates, prompts and completion, for a gateway (`resources.py`)."""
        self._executables: dict[ToolId, Executable] = {}
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

    @property
    def config(self) -> cfg.McpConfig:
        return self.servers.config

    @config.setter
    def config(self, config: cfg.McpConfig) -> None:
        """A host may replace it (`tooldeck serve --connect`, `--names`); permissions and call names are re-read
        from it at once."""
        self.servers.config = config
        self.servers.rebuild()

    @property
    def callbacks(self) -> Any:
        """The host's answers to requests upstream servers send during a call (`McpCallbacks`: sampling,
        elicitation, roots; run on the MCP loop). None until set: such requests are refused with an error
        that names the missing capability. A gateway's client, when there is one, answers instead."""
        return self.servers.callbacks

    @callbacks.setter
    def callbacks(self, callbacks: Any) -> None:
        self.servers.callbacks = callbacks

    async def set_log_level(self, level: str) -> list[str]:
        """Forward `logging/setLevel` to every connected handshake-era server that declares logging (from any
        loop); the names of the servers that took it. A server that refuses it is skipped (debug-logged)."""
        from tooldeck.sources.mcp.callbacks import forward_log_level

        states = list(self._servers.values())
        return await self.loop.run(forward_log_level(states, level))

    @property
    def loop(self) -> BackgroundLoop:
        """The MCP background loop, started on first use."""
        return self._slot.get()

    @property
    def closed(self) -> bool:
        return self._slot.closed

    def start(self) -> None:
        """Discover servers with no cached catalog (waiting up to `startup_wait_s`); with `connect = "start"`
        also connect and re-list the others in the background."""
        first: list[concurrent.futures.Future[Any]] = []
        for state in self._servers.values():
            if state.config.paused:
                continue
            if state.catalog is None:
                state.discovering = True  # "still starting" from now on, not only once the loop has begun
                first.append(self.loop.submit(self.discovery.refresh(state)))
            elif self.config.connect == "start":
                self.loop.submit(self.discovery.refresh(state))
        if first and self.config.startup_wait_s > 0:
            concurrent.futures.wait(first, timeout=self.config.startup_wait_s)

    # -- ToolSource -------------------------------------------------------------------------------
    def descriptors(self) -> Iterable[ToolDescriptor]:
        self.servers.sync_pins()  # an approval made by another process of the home (one small read)
        return self.servers.offered

    def diagnostics(self) -> list[Diagnostic]:
        self.servers.sync_pins()
        out: list[Diagnostic] = []
        for state in self._servers.values():
            out.extend(server_diagnostics(state))
        return out

    def resolve(self, tool_id: ToolId) -> Executable | None:
        executable = self._executables.get(tool_id)
        if executable is None:
            state = self.servers.by_rid.get(tool_id.source_id)
            if state is None:
                return None
            executable = self._executables[tool_id] = self._calls.executable(state, tool_id.name)
        return executable

    def close(self) -> None:
        """Close every session (stdio servers are stopped) and the MCP thread. Idempotent."""
        if self._slot.closed:
            return
        self._slot.closed = True
        with contextlib.suppress(Exception):
            atexit.unregister(self._atexit)
        loop = self._slot.started
        if loop is None:
            return

        async def close_all() -> None:
            conns = [s.connection for s in self._servers.values() if s.connection is not None]
            await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)

        with contextlib.suppress(Exception):
            loop.run_sync(close_all(), _CLOSE_TIMEOUT_S)
        loop.stop()

    # -- the gate ---------------------------------------------------------------------------------
    def prepare_gate(self, table: GateTable) -> None:
        """Add the MCP `ask` permissions and the reasons a server's call names are missing to a gate table
        (`gate_hook.py` says what exactly); called once per table, when the runtime builds it."""
        gate_hook.prepare_gate(table, self.servers)

    def permission_for(self, tool_id: str) -> cfg.Permission | None:
        """The configured permission of an MCP tool id (None when the id is not one of ours)."""
        return self.servers.permission_for(tool_id)

    def explain_unknown(self, call_name: str) -> str | None:
        """Why a model-facing name `mcp__<server>__…` is not callable, when its server's state is the reason;
        None when it is not one of ours."""
        return self.servers.explain_unknown(call_name)

    # -- status and refresh (CLI, hosts) ----------------------------------------------------------
    def server_names(self) -> list[str]:
        return list(self._servers)

    def status(self) -> list[ServerStatus]:
        self.servers.sync_pins()
        return status.statuses(self.servers)

    def tools(self, name: str) -> list[ToolInfo]:
        self.servers.sync_pins()
        return status.tools(self.servers, name)

    # -- pinned tool definitions (`pins.py`) ------------------------------------------------------
    def diff(self, name: str) -> list[ToolDiff]:
        """The tools of server `name` whose listed definition differs from the pinned one, field by field."""
        self.servers.sync_pins()
        return pin_checks.tool_diffs(self.servers.named(name))

    def approve(self, name: str, tool: str | None = None, who: str = "",
                expect: Sequence[str] | None = None) -> list[str]:
        """Pin the listed definition of `tool` (or of every changed tool) of server `name` as approved by `who`;
        the approved tool names. `expect`: the definition digests the user reviewed (full or 16+ character
        prefixes); anything else listed now is refused. Raises McpConfigError (`mcp.unknown_server`,
        `mcp.unknown_tool`, `mcp.pin_mismatch`)."""
        self.servers.sync_pins()
        return self.servers.approve(name, tool, who, expect)

    def withheld(self) -> list[tuple[str, str]]:
        """(tool id, reason) of every tool a pinned server lists and does not offer (changed since approved)."""
        self.servers.sync_pins()
        return sorted(self.servers.withheld.items())

    def refresh(self, name: str | None = None, timeout: float | None = None) -> list[RefreshReport]:
        """Connect and re-list one server (or every unpaused one); blocks the calling thread."""
        states = self.servers.chosen(name)
        if not states:
            return []
        return self.loop.run_sync(self._refresh_all(states), timeout)

    async def arefresh(self, name: str | None = None) -> list[RefreshReport]:
        return await self.loop.run(self._refresh_all(self.servers.chosen(name)))

    async def _refresh_all(self, states: list[ServerState]) -> list[RefreshReport]:
        return list(await asyncio.gather(*(self.discovery.refresh(s) for s in states)))


def _register_atexit(manager: McpManager) -> Callable[[], None]:
    ref = weakref.ref(manager)

    def close() -> None:
        m = ref()
        if m is not None:
            with contextlib.suppress(Exception):
                m.close()

    atexit.register(close)
    return close
