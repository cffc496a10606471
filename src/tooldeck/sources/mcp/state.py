"""What the MCP manager knows about one configured server (`ServerState`: lives on the manager, mutated on
the MCP loop), and where a home keeps the files of its servers (`McpDirs`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooldeck.catalog.sources import Diagnostic
from tooldeck.records.registrations import Registration
from tooldeck.sources.mcp import catalog as cat
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp.client import ServerConnection
from tooldeck.sources.mcp.failures import Failure
from tooldeck.sources.mcp.pins import Pin


@dataclass(frozen=True, slots=True)
class McpDirs:
    """`<home>/mcp/`: each registration's cached catalog, last failure and the stderr log of its process, and the
    pinned tool definitions of every registration (`pins.sqlite`)."""

    home: Path

    @property
    def catalogs(self) -> Path:
        return self.home / "mcp" / "catalogs"

    @property
    def failures(self) -> Path:
        return self.home / "mcp" / "failures"

    @property
    def pins(self) -> Path:
        return self.home / "mcp" / "pins.sqlite"

    def log(self, registration_id: str) -> Path:
        return self.home / "mcp" / "logs" / f"{registration_id}.log"


@dataclass(slots=True)
class ServerState:
    config: cfg.ServerConfig
    registration: Registration
    catalog: cat.ServerCatalog | None = None
    cache_problem: Diagnostic | None = None
    connection: ServerConnection | None = None
    failure: Failure | None = None
    """The last connect or discovery failure, cleared by the next success. Loaded from disk when the manager
    opens (`failure_store`), so a process that tried nothing yet still knows why the server was down."""
    logged: tuple[str, str] | None = None
    """(code, summary) of the failure this process last logged at warning level (to log each change once)."""
    listed_connect: int = -1
    """The connection generation whose listing is in `catalog` (a reconnect lists again before calling)."""
    discovering: bool = False
    """A first discovery was handed to the MCP loop and has not finished: the server is starting even before
    that loop has made its connection (set by the thread that submits it, cleared by the discovery)."""
    pins: dict[str, Pin] | None = None
    """The pinned definitions of this registration's tools (`pins.py`); None when the store could not be read."""
    pins_problem: Diagnostic | None = None
    pinned: bool = False
    """`pin` is on for this server (`McpConfig.pinned`): a changed tool is withheld (`pin_checks.py`)."""
    checks: tuple[Any, Any] | None = None
    """(the catalog object, its `pin_checks.Checks`): digests and findings, computed once per catalog."""
    refresh_task: asyncio.Task[Any] | None = None
    refresh_again: bool = False
    refreshes: int = 0

    @property
    def rid(self) -> str:
        return self.registration.registration_id

    @property
    def error(self) -> str | None:
        return self.failure.summary if self.failure is not None else None

    @property
    def connecting(self) -> bool:
        """Starting: a first discovery is under way, or the connection is being made."""
        return self.discovering or (self.connection is not None and self.connection.state == "connecting")
