"""`tooldeck serve` re-exposes proxied MCP tools: an MCP client → tooldeck serve (stdio) → fixture server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from .conftest import fixture_server, write_mcp_json


def test_proxied_tools_through_tooldeck_serve(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("tooldeck")
    pytest.importorskip("tooldeck.cli.serve_cmd", reason="tooldeck serve is not built yet")
    write_mcp_json(tmp_path, {"fx": fixture_server()})

    async def run() -> tuple[set[str], str, bool]:
        params = StdioServerParameters(command=str(exe), args=["serve", "--stdio", "--home", str(tmp_path)])
        async with Client(params, cache=None) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            echo = await client.call_tool("mcp__fx__echo", {"message": "via serve"})
            failed = await client.call_tool("mcp__fx__fail", {})
            return names, echo.content[0].text, failed.is_error  # type: ignore[union-attr]

    names, text, failed = asyncio.run(run())
    assert {"mcp__fx__echo", "mcp__fx__weather"} <= names
    assert text == "Echo: via serve"
    assert failed
