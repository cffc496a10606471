"""The upstream `CallToolResult` of a proxied call, handed to a gateway that wants the blocks as sent.

The library projects an MCP result to text (`content.result_output`: providers take text, binaries are saved
under `tool-results/`). `tooldeck serve` speaks MCP to its client, so it relays the upstream content blocks
instead: it opens a sink around `Invocation.arun`, and the MCP executable puts each upstream result there by
call id. The sink is a context variable, read in the caller's task before the call hops onto the MCP loop, so
nothing changes for callers that open none (and the dispatch path stays unaware of it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

Sink = dict[str, Any]
"""call id → the upstream `mcp_types.CallToolResult`."""

_SINK: ContextVar[Sink | None] = ContextVar("tooldeck_mcp_relay", default=None)


def current() -> Sink | None:
    """The sink of the calling task, if a gateway opened one."""
    return _SINK.get()


@contextmanager
def collect_results() -> Iterator[Sink]:
    """Collect the upstream results of the MCP calls made inside the block."""
    sink: Sink = {}
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)
