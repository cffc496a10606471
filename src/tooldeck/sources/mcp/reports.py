"""What `tooldeck mcp list | tools | refresh` (and hosts) get back from the MCP manager: plain data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tooldeck.catalog.sources import Diagnostic
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp.failures import Failure
from tooldeck.sources.mcp.poisoning import Finding


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """One tool of one server, as `tooldeck mcp tools` shows it."""

    tool_id: str
    name: str
    model_name: str
    permission: cfg.Permission
    description: str
    pin: str = "unknown"
    """`approved`, `first seen`, `changed` or `unknown` (`pin_checks.pin_status`)."""
    offered: bool = True
    """False when its pinned server withholds it (changed since approved), or it is `off` or its server paused."""
    flags: tuple[Finding, ...] = ()
    """What the poisoning detector found in its description and schema texts (`poisoning.py`)."""
    withheld: bool = False
    """Its pinned server does not offer it: its definition changed since it was approved."""

    def to_dict(self) -> dict[str, Any]:
        return {"tool_id": self.tool_id, "name": self.name, "call_name": self.model_name,
                "permission": self.permission, "description": self.description, "pin": self.pin,
                "offered": self.offered, "withheld": self.withheld, "flags": [f.to_dict() for f in self.flags]}


@dataclass(frozen=True, slots=True)
class ServerStatus:
    name: str
    registration_id: str
    transport: str
    endpoint: str
    paused: bool
    state: str
    """`paused`, `connected`, `connecting`, `failed` (the last attempt failed: see `failure`), `cached` (tools
    from the cached catalog, no connection in this process) or `not discovered` (never tried)."""
    tools_total: int
    tools_offered: int
    fetched_at: float | None
    error: str | None
    """The cause of the last failure (`failure.summary`), or None."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    failure: Failure | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "registration_id": self.registration_id, "transport": self.transport,
                "endpoint": self.endpoint, "paused": self.paused, "state": self.state,
                "tools_total": self.tools_total, "tools_offered": self.tools_offered, "fetched_at": self.fetched_at,
                "error": self.error, "failure": self.failure.to_dict() if self.failure else None,
                "diagnostics": [d.to_dict() for d in self.diagnostics]}


@dataclass(frozen=True, slots=True)
class RefreshReport:
    name: str
    ok: bool
    tools: int
    added: list[str]
    removed: list[str]
    error: str | None
    diagnostics: list[Diagnostic]
    failure: Failure | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "tools": self.tools, "added": self.added, "removed": self.removed,
                "error": self.error, "failure": self.failure.to_dict() if self.failure else None,
                "diagnostics": [d.to_dict() for d in self.diagnostics]}
