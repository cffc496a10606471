"""`tooldeck serve` follows the script folders: a client sees list_changed, the new tool and its new schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.scripts.conftest import write_tool
from tooldeck.runtime import Runtime
from tooldeck.server.mcp_server import ServeOptions, TooldeckMCPServer


async def test_script_added_and_changed_while_serving(tmp_path: Path) -> None:
    runtime = Runtime(tmp_path, records=False)
    mcp = TooldeckMCPServer(runtime, ServeOptions(watch_interval_s=0.05))
    changes = anyio.Event()
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        method = getattr(message, "method", type(message).__name__)
        seen.append(method)
        if method == "notifications/tools/list_changed":
            changes.set()

    async def wait_change() -> None:
        nonlocal changes
        with anyio.fail_after(20):
            await changes.wait()
        changes = anyio.Event()

    try:
        async with Client(mcp.server, mode="legacy", message_handler=on_message) as client:
            assert "script_upper" not in {t.name for t in (await client.list_tools()).tools}
            folder = write_tool(tmp_path, "upper", 'read -r j; echo "$j" | tr a-z A-Z\n', "script.sh",
                                parameters={"type": "object", "properties": {"text": {"type": "string"}}})
            await wait_change()
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools["script_upper"].input_schema["properties"]) == {"text"}
            result = await client.call_tool("script_upper", {"text": "hi"})
            assert not result.is_error and '{"TEXT":"HI"}' in result.content[0].text
            meta = json.loads((folder / "tool.json").read_text())
            meta["parameters"]["properties"]["loud"] = {"type": "boolean"}
            (folder / "tool.json").write_text(json.dumps(meta))
            await wait_change()
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools["script_upper"].input_schema["properties"]) == {"text", "loud"}
    finally:
        runtime.close()
    assert seen.count("notifications/tools/list_changed") >= 2
