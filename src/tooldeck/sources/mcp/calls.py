"""One MCP tool call: `Calls.executable(state, tool)` is the `Executable` the dispatcher runs.

- Right before sending, the call re-reads the server and the tool: a closed manager, a paused server,
  an `off` tool, a tool the server no longer lists or a pinned tool whose definition changed since it was
  approved gives `mcp.not_sent`, and nothing is sent.
- It then hops onto the MCP loop, connects (or reconnects a dead server; a new session lists the tools
  again before its first call), sends once and never retries.
- Its timeout is the server's (or the tool's) `call_timeout_s`, kept just under the invocation's own
  timeout for the tool, so that the MCP outcome, not a generic `tool.timeout`, is what the model and
  the records get; tooldeck's own timeout (that plus a grace second) ends a call the SDK cannot end.
- Whatever the call raises becomes an outcome in one place, `call_outcome.classify_call`; a failure of
  the server that the outcome reveals is recorded (`health.failed`), and the rule that decided is
  logged at debug level on `tooldeck.mcp`.
"""

from __future__ import annotations

import logging
from typing import Any

from tooldeck.catalog.sources import CallContext, Executable
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.deadline import Deadline
from tooldeck.sources.mcp import callbacks, health, pin_checks, relay
from tooldeck.sources.mcp.call_outcome import CallFacts, classify_call
from tooldeck.sources.mcp.content import SaveTarget, result_output
from tooldeck.sources.mcp.discovery import Discovery
from tooldeck.sources.mcp.failures import ConnectFailed, describe
from tooldeck.sources.mcp.loop import LoopSlot
from tooldeck.sources.mcp.outcomes import connect_failed, not_sent
from tooldeck.sources.mcp.servers import Servers
from tooldeck.sources.mcp.state import ServerState

log = logging.getLogger("tooldeck.mcp")

CALL_GRACE_S = 1.0
"""How much longer than the SDK's call timeout tooldeck's own timeout waits."""


def call_timeout(server_timeout: float, outer: float) -> float:
    """The server's call timeout, kept just under `outer`, the invocation's own timeout for the tool."""
    return max(0.01, min(server_timeout, outer - min(0.5, outer * 0.05)))


class Calls:
    def __init__(self, servers: Servers, discovery: Discovery, loop: LoopSlot) -> None:
        self.servers = servers
        self.discovery = discovery
        self.loop = loop

    def executable(self, state: ServerState, native: str) -> Executable:
        tool_id = str(ToolId.mcp(state.rid, native))

        async def call(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
            refusal = self.precheck(state, native, tool_id)
            if refusal is not None:
                return refusal
            timeout = call_timeout(state.config.call_timeout_for(native), ctx.invocation.profile.timeout_for(tool_id))
            target = SaveTarget(ctx.run.workspace_root, ctx.invocation.id, ctx.call_id, ctx.round)
            sink = relay.current()  # read here: the send below runs on the MCP loop, in another context
            peer = callbacks.current()
            loop = self.loop.get()
            sending = self.send(state, native, args, timeout, target, sink, peer)
            if loop.in_loop():  # on the MCP loop already (`tooldeck serve`): awaited in place, one frame less
                return await sending
            return await loop.run(sending)

        return Executable(call)

    def precheck(self, state: ServerState, native: str, tool_id: str) -> ToolOutput | None:
        """Re-read the registration right before sending: closed, paused, off or vanished → not sent."""
        server = state.config.name
        if self.loop.closed:
            return not_sent(server, native, "closed", "the MCP manager of this runtime is closed",
                            "The host must open a new runtime.")
        if state.config.paused:
            return not_sent(server, native, "paused", "the server is paused in the tooldeck configuration",
                            "Use another tool, or ask the user to resume the server.")
        permission = self.servers.permissions.get(tool_id)
        if permission is None:  # not in the current catalogs: its configured permission
            permission = self.servers.permission(state, native)
        if permission == "off":
            return not_sent(server, native, "tool_off", "the tool is turned off (permission `off`)",
                            "Use another tool.")
        catalog = state.catalog
        if catalog is not None and native not in catalog.names:
            return _removed(server, native)
        if pin_checks.withheld(state, native):
            return not_sent(server, native, "tool_unapproved", "the tool's definition changed since the user "
                            "approved it, and the server is pinned", "Use another tool, or ask the user to review "
                            f"the change (`tooldeck mcp diff {server}`).")
        return None

    async def send(self, state: ServerState, native: str, args: dict[str, Any], timeout: float,
                   target: SaveTarget, sink: relay.Sink | None = None,
                   peer: callbacks.Peer | None = None) -> ToolOutput:
        """On the MCP loop: connect, list again on a new session, call once, map the result or the failure."""
        server = state.config.name
        try:
            conn = await self.discovery.connect(state)
        except ConnectFailed as exc:  # recorded by connect
            return connect_failed(server, native, exc.failure)
        if state.listed_connect != conn.connects:
            await self.discovery.list(state, conn)  # a new session: is the tool still there? (and its output schema)
            if state.catalog is not None and native not in state.catalog.names:
                return _removed(server, native)
        try:
            async with Deadline(timeout + CALL_GRACE_S):
                result = await conn.call_tool(native, args, timeout, peer)
        except Exception as exc:
            outcome = classify_call(CallFacts(exc, server, native, timeout, conn.evidence.decisive_reply(),
                                              conn.classify, connected=conn.alive()))
            log.debug("MCP server `%s`: the call to `%s` raised %s: outcome %s (%s)", server, native, describe(exc),
                      outcome.rule, outcome.output.error_code)
            if outcome.failure is not None:
                health.failed(self.servers.dirs, state, outcome.failure, persist=outcome.persist)
            return outcome.output
        if sink is not None:
            sink[target.call_id] = result
        return result_output(result, target)


def _removed(server: str, native: str) -> ToolOutput:
    return not_sent(server, native, "tool_removed", "the server no longer lists this tool", "Use another tool.")
