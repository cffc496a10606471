"""`tooldeck serve` re-exposes proxied MCP tools: an official MCP client → tooldeck serve (stdio) → the
fixture server and the Node reference server; every call is in the records with its raw arguments."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tooldeck.records.store import SqliteRecorder

from .conftest import fixture_server, write_mcp_json


def _recorded(home: Path) -> dict[str, tuple[str | None, str | None]]:
    """call name → (tool id, raw arguments) of every recorded call."""
    store = SqliteRecorder(home / "records.sqlite")
    try:
        return {c.call_name: (c.tool_id, c.raw_arguments)
                for s in store.list_invocations(500) for c in store.history(s.invocation_id).calls}
    finally:
        store.close()


def test_proxied_tools_through_tooldeck_serve(tmp_path: Path, everything_js: Path) -> None:
    exe = Path(sys.executable).with_name("tooldeck")
    write_mcp_json(tmp_path, {"fx": fixture_server(),
                              "everything": {"command": "node", "args": [str(everything_js), "stdio"]}})

    async def run() -> tuple[set[str], str, bool, str]:
        params = StdioServerParameters(command=str(exe), args=["serve", "--stdio", "--home", str(tmp_path),
                                                               "--loading", "eager"])
        async with Client(params, cache=None) as client:
            names: set[str] = set()
            for _ in range(150):  # servers without a cached catalog are discovered in the background
                names = {t.name for t in (await client.list_tools()).tools}
                if {"mcp__fx__echo", "mcp__everything__get-sum"} <= names:
                    break
                await asyncio.sleep(0.2)
            echo = await client.call_tool("mcp__fx__echo", {"message": "via serve"})
            failed = await client.call_tool("mcp__fx__fail", {})
            total = await client.call_tool("mcp__everything__get-sum", {"a": 19, "b": 23})
            return names, echo.content[0].text, failed.is_error, total.content[0].text  # type: ignore[union-attr]

    names, text, failed, total = asyncio.run(run())
    assert {"mcp__fx__echo", "mcp__fx__weather", "mcp__everything__get-sum"} <= names
    assert text == "Echo: via serve"
    assert failed
    assert "42" in total
    recorded = _recorded(tmp_path)
    tool_id, raw = recorded["mcp__fx__echo"]
    assert tool_id is not None and tool_id.startswith("mcp/fx") and tool_id.endswith(":echo")
    assert json.loads(raw or "") == {"message": "via serve"}
    tool_id, raw = recorded["mcp__everything__get-sum"]
    assert tool_id is not None and tool_id.endswith(":get-sum") and json.loads(raw or "") == {"a": 19, "b": 23}
