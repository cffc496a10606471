"""What the MCP source adds to a gate table: `prepare_gate(table, servers)`.

Called once per (snapshot, profile), when the table is built, before any invocation uses it:

1. `ask` from the MCP configuration: an MCP tool configured `ask` that the Profile allows gets
   permission `ask`, so its calls go through the host's confirmation callback (refused without one).
   The MCP configuration only tightens: a Profile `ask` or `deny` stays as it is, and `off` tools are
   never in a snapshot to begin with.
2. The reason a call name of one of its servers is missing: `explain_unknown` is appended to the
   table's explainers, so the unknown-tool message says the server is down, paused, still starting
   or never tried, or the tool turned off, instead of "did you mean".

It reads the table's entries (`tool_id`, `permission`) and the MCP permissions, nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooldeck.sources.mcp.servers import Servers

if TYPE_CHECKING:
    from tooldeck.gate import GateTable


def prepare_gate(table: GateTable, servers: Servers) -> None:
    for entry in table.entries.values():
        if entry.permission == "allow" and entry.tool_id.startswith("mcp/") \
                and servers.permission_for(entry.tool_id) == "ask":
            entry.permission = "ask"
    table.explain_unknown.append(servers.explain_unknown)
