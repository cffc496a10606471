"""`tooldeck serve` defers schemas by default: the list is the fixed set, and a proxied MCP tool runs
through find_tools then run_tool (or called by its name), with the call recorded under the real tool."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.server.support import stdio_params
from tooldeck.records.store import SqliteRecorder

FIXTURE = Path(__file__).resolve().parents[1] / "mcp" / "fixtures" / "fixture_server.py"


async def test_serve_lists_the_fixed_set_and_runs_a_proxied_tool_via_run_tool(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": {"command": sys.executable,
                                                                     "args": [str(FIXTURE)]}}}))
    async with Client(stdio_client(stdio_params(home, default_loading=True))) as client:
        with anyio.fail_after(30):  # the upstream is discovered in the background
            while "mcp__fx__{add" not in (run_tool := next(
                    t for t in (await client.list_tools()).tools if t.name == "run_tool")).description:
                await anyio.sleep(0.2)
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["find_tools", "run_tool", "reasoning_guide", "write_todo", "chat_history",
                         "ask_user", "write_result"]
        # A client that calls a tool named only in run_tool's description gets it run, as run_tool runs it: the same
        # gate (its schema checks the arguments), recorded as that run_tool call.
        direct = await client.call_tool("mcp__fx__add", {"a": 1, "b": 2})
        assert direct.is_error is False and direct.content[0].text == "3"
        bad = await client.call_tool("mcp__fx__add", {"a": "one"})
        assert bad.is_error and bad.meta is not None and bad.meta["tooldeck/error_code"] == "tool.invalid_arguments"
        assert "`a`" in bad.content[0].text
        found = await client.call_tool("find_tools", {"names": ["mcp__fx__add"]})
        assert '"name": "mcp__fx__add"' in found.content[0].text
        ran = await client.call_tool("run_tool", {"name": "mcp__fx__add", "args": {"a": 20, "b": 22}})
        assert ran.is_error is False and ran.content[0].text == "42"
        assert run_tool.description.startswith("Run a tool listed by name")
    store = SqliteRecorder(home / "records.sqlite")
    try:
        calls = [c for s in store.list_invocations(200) for c in store.history(s.invocation_id).calls]
    finally:
        store.close()
    wrapped = [c for c in calls if c.call_name == "run_tool" and c.result is not None and not c.result.is_error]
    assert len(wrapped) == 2
    assert all(c.tool_id.startswith("mcp/fx") and c.tool_id.endswith(":add") for c in wrapped)
    assert sorted(json.loads(c.raw_arguments)["args"]["a"] for c in wrapped) == [1, 20]
