"""The upstream `CallToolResult` of a proxied call, handed to a gateway that wants the blocks as sent.

The library projects an MCP result to text (`content.result_output`: providers take text, binaries are saved
under `tool-results/`). `tooldeck serve` speaks MCP to its client, so it relays the upstream content blocks
instead: it opens a sink around `Invocation.arun`, and the MCP executable puts each upstream result there by
call id. The sink is a context variable, read in the caller's task before the call hops onto the MCP loop, so
nothing changes for callers that open none (and the dispatch path stays unaware of it).
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

Sink = dict[str, Any]
"""call id → the upstream `mcp_types.CallToolResult`."""

_SINK: ContextVar[Sink | None] = ContextVar("tooldeck_mcp_relay", default=None)


def current() -> Sink | None:
    """The sink of the calling task, if a gateway opened one."""
    return _SINK.get()


class collect_results:
    """Collect the upstream results of the MCP calls made inside the block (a class, not a generator: it is
    entered once per served call)."""

    __slots__ = ("_token",)
    _token: Token[Sink | None]

    def __enter__(self) -> Sink:
        sink: Sink = {}
        self._token = _SINK.set(sink)
        return sink

    def __exit__(self, *exc: object) -> None:
        _SINK.reset(self._token)
