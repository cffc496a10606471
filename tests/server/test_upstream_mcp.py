"""tooldeck serve in front of an upstream MCP server (from `<home>/mcp.json`): its tools are served, and
when the upstream announces a new tool the change reaches our client as `notifications/tools/list_changed`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.server.support import http_server

FIXTURE = Path(__file__).resolve().parents[1] / "mcp" / "fixtures" / "fixture_server.py"


@pytest.mark.skipif(not FIXTURE.is_file(), reason="the MCP source fixture server (tests/mcp/fixtures) is not there")
async def test_upstream_tools_and_their_changes_are_served(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": {"command": sys.executable,
                                                                     "args": [str(FIXTURE)]}}}))
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        seen.append(getattr(message, "method", type(message).__name__))

    with http_server(home) as served:
        async with Client(served.url, mode="legacy", message_handler=on_message) as client:
            with anyio.fail_after(30):  # the upstream connects in the background
                while "mcp__fx__echo" not in {t.name for t in (await client.list_tools()).tools}:
                    await anyio.sleep(0.2)
            echo = await client.call_tool("mcp__fx__echo", {"message": "hi"})
            assert echo.is_error is False and echo.content[0].text == "Echo: hi"
            tool_id = (echo.meta or {}).get("tooldeck/tool_id", "")
            assert tool_id.startswith("mcp/fx") and tool_id.endswith(":echo"), tool_id

            await client.call_tool("mcp__fx__add_tool", {"name": "late_tool"})
            with anyio.fail_after(30):
                while "notifications/tools/list_changed" not in seen:
                    await anyio.sleep(0.1)
            names = {t.name for t in (await client.list_tools()).tools}
            assert "mcp__fx__late_tool" in names
            late = await client.call_tool("mcp__fx__late_tool", {})
            assert late.content[0].text == "I am late_tool"
