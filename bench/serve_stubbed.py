"""`tooldeck` with a part of the served call's path stubbed out: a diagnostic for `bench/serve_shares_bench.py`,
never a configuration (what it leaves out is part of the protocol or of the records).

    python bench/serve_stubbed.py PART tooldeck-arguments…

PART `sdk-checks`: the SDK server kernel's per-version passes over a `tools/call` (the surface validation of the
request, the `_meta` read through `RequestParams`, the surface validation and dump of the result): what they cost a
served call, measured as the difference.

PART `tooldeck-work`: everything tooldeck does for a `tools/call` beyond carrying it (the SDK kernel, the session's
invocation, the gate, the records, dispatch, the MCP source's result mapping, projection and the reply's shaping):
after a first call through the whole path (which connects the upstream server), the stdio lane hands each
`tools/call` line straight to that upstream connection's raw channel (`sources/mcp/raw_relay.py`) and writes the raw
result back under the request's id. What is left is the floor of serve's own process: its stdin reader and lane,
its event loop, its upstream client and pipes, its memory. (Tool names are taken as `mcp__<server>__<tool>`, the
bench's default names mode, and the calls go to the server the first call connected.)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

PARTS = ("sdk-checks", "tooldeck-work")


def _without_sdk_checks() -> None:
    from mcp.server import runner
    from mcp_types import methods

    serialize = methods.serialize_server_result

    def shaped(method: str, version: str, data: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        return dict(data) if method == "tools/call" else serialize(method, version, data, **options)

    methods.validate_client_request = lambda method, version, params, **options: None  # type: ignore[assignment]
    methods.serialize_server_result = shaped  # type: ignore[assignment]
    runner._extract_meta = lambda params: None  # type: ignore[assignment]


def _without_tooldeck_work() -> None:
    import asyncio

    from mcp_types import INTERNAL_ERROR

    from tooldeck.server.lane_kernel import tool_call
    from tooldeck.server.stdio_lane import StdioLane
    from tooldeck.sources.mcp.client import ServerConnection
    from tooldeck.sources.mcp.discovery import Discovery

    connected: list[ServerConnection] = []
    connect, take = Discovery.connect, StdioLane._call
    running: set[asyncio.Task[None]] = set()

    async def remembered(self: Discovery, state: Any) -> ServerConnection:
        conn = await connect(self, state)
        connected[:] = [conn]
        return conn

    def bare(self: StdioLane, line: bytes) -> bool:
        call = tool_call(line) if connected else None
        if call is None:
            return take(self, line)  # the first call takes the whole path (and connects); so does anything else
        _message, request_id, params = call
        conn = connected[0]
        native = str(params.get("name")).split("__", 2)[-1]

        async def relay() -> None:
            raw = conn._raw.channel  # type: ignore[union-attr]
            try:
                result = await raw.call(conn.client.session._stamp, native, params.get("arguments"), 30.0)  # type: ignore[union-attr]
            except Exception as exc:  # answered, so that the bench fails on it instead of waiting forever
                await self.write({"jsonrpc": "2.0", "id": request_id,
                                  "error": {"code": INTERNAL_ERROR, "message": f"bare relay: {exc!r}"}})
                return
            await self.write({"jsonrpc": "2.0", "id": request_id, "result": result})

        task = asyncio.get_running_loop().create_task(relay())
        running.add(task)
        task.add_done_callback(running.discard)
        return True

    Discovery.connect = remembered  # type: ignore[method-assign]
    StdioLane._call = bare  # type: ignore[method-assign]


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in PARTS:
        sys.exit(f"usage: python bench/serve_stubbed.py {{{'|'.join(PARTS)}}} tooldeck-arguments...")
    (_without_sdk_checks if sys.argv[1] == "sdk-checks" else _without_tooldeck_work)()
    from tooldeck.cli.app import main

    sys.argv = ["tooldeck", *sys.argv[2:]]
    sys.exit(main())
