"""What `tooldeck mcp list` and `tooldeck mcp tools` show (and hosts read): plain reports from memory.

Reading a status connects nothing and never waits on a server: it is the servers' state as this
process knows it (a failure written by another process included, `failure_store`).
"""

from __future__ import annotations

from tooldeck.core.ids import ToolId
from tooldeck.naming import mcp_model_name
from tooldeck.sources.mcp import pin_checks
from tooldeck.sources.mcp.explain import server_diagnostics
from tooldeck.sources.mcp.reports import ServerStatus, ToolInfo
from tooldeck.sources.mcp.servers import Servers
from tooldeck.sources.mcp.state import ServerState


def shown_state(state: ServerState) -> str:
    """`paused`, `connected`, `connecting`, `failed`, `cached` or `not discovered` (see `ServerStatus.state`)."""
    conn_state = state.connection.state if state.connection else "idle"
    if state.config.paused:
        return "paused"
    if conn_state in ("connected", "connecting"):
        return conn_state
    if state.failure is not None:
        return "failed"
    return "cached" if state.catalog else "not discovered"


def statuses(servers: Servers) -> list[ServerStatus]:
    out = []
    offered = servers.offered
    for state in servers.by_name.values():
        c = state.config
        total = len(state.catalog.tools) if state.catalog else 0
        count = sum(1 for d in offered if d.id.source_id == state.rid)
        out.append(ServerStatus(c.name, state.rid, c.transport, c.endpoint_text(), c.paused, shown_state(state),
                                total, count, state.catalog.fetched_at if state.catalog else None, state.error,
                                server_diagnostics(state), state.failure))
    return out


def tools(servers: Servers, name: str) -> list[ToolInfo]:
    """The cached tools of server `name` with their ids, call names and permissions (raises for an unknown
    name: `mcp.unknown_server`)."""
    state = servers.named(name)
    if state.catalog is None:
        return []
    offered = {str(d.id) for d in servers.offered}
    found = pin_checks.checks(state).findings
    out = []
    for tool in state.catalog.tools:
        native = tool["name"]
        tid = str(ToolId.mcp(state.rid, native))
        out.append(ToolInfo(tid, native, mcp_model_name(state.config.label, native), servers.permission(state, native),
                            tool.get("description") or "", pin_checks.pin_status(state, native), tid in offered,
                            tuple(found.get(native, ())), tid in servers.withheld))
    return out
