"""The middleware that sends a `tools/call` with non-object `arguments` to the gate (not a protocol error)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext

if TYPE_CHECKING:
    from tooldeck.server.mcp_server import TooldeckMCPServer


class RawArguments(ServerMiddleware[Any]):
    """`tools/call` whose `arguments` is not an object: the SDK would answer JSON-RPC -32602 before any handler
    runs. The MCP spec asks input validation errors to be tool results the model can act on, so the call goes
    to the gate as it came, which answers `tool.invalid_arguments` with the library's text (a JSON text of an
    object is decoded, as the library does). An unknown tool name stays the protocol error."""

    def __init__(self, server: TooldeckMCPServer) -> None:
        self.server = server

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        if ctx.method == "tools/call" and isinstance(params, Mapping):
            arguments = params.get("arguments")
            name = params.get("name")
            if arguments is not None and not isinstance(arguments, Mapping) and isinstance(name, str):
                return await self.server.call(ctx, name, arguments)
        return await call_next(ctx)
