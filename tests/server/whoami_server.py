"""An MCP server (official SDK, stdio) whose one tool `whoami(n)` answers with the JSON-RPC id of the request
that called it, so a test sees which client machinery sent the call (tests/server/test_raw_relay.py)."""

from __future__ import annotations

import json

from mcp.server.mcpserver import Context, MCPServer


def main() -> None:
    server = MCPServer("whoami")

    @server.tool()
    def whoami(n: int, ctx: Context) -> str:
        return json.dumps({"n": n, "request_id": ctx.request_id})

    server.run("stdio")


if __name__ == "__main__":
    main()
