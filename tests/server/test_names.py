"""Names mode of `tooldeck serve` (`--names prefixed|original`, `[mcp] names`, per-server `alias`): two upstream
fixture servers whose tools clash by name (both serve `echo`, `add`, ...) and one tool only the second has
(`together`, with `--probes`). Real `tooldeck serve` processes, official client, stdio and HTTP, eager and
deferred; the call lands in the records under the real tool."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.server.support import serve_client
from tooldeck.records.store import SqliteRecorder

FIXTURE = Path(__file__).resolve().parents[1] / "mcp" / "fixtures" / "fixture_server.py"


def _home(tmp_path: Path, toml: str = "", alias: str | None = None) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    fa: dict[str, Any] = {"command": sys.executable, "args": [str(FIXTURE), "--name", "fa"]}
    if alias is not None:
        fa["alias"] = alias
    fb = {"command": sys.executable, "args": [str(FIXTURE), "--name", "fb", "--probes"]}
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fa": fa, "fb": fb}}))
    if toml:
        (home / "tooldeck.toml").write_text(toml)
    return home




async def _listing(client: Client, wanted: str) -> tuple[list[str], str]:
    """The tool names and run_tool's description (the turn context), once `wanted` shows in either."""
    with anyio.fail_after(30):  # the upstream servers are discovered in the background
        while True:
            tools = (await client.list_tools()).tools
            names = [t.name for t in tools]
            context = next((t.description or "" for t in tools if t.name == "run_tool"), "")
            if wanted in names or wanted in context:
                return names, context
            await anyio.sleep(0.2)


def _recorded(home: Path) -> list[Any]:
    store = SqliteRecorder(home / "records.sqlite")
    try:
        return [c for s in store.list_invocations(200) for c in store.history(s.invocation_id).calls]
    finally:
        store.close()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_original_names_eager(tmp_path: Path, transport: str) -> None:
    home = _home(tmp_path)
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        seen.append(getattr(message, "method", type(message).__name__))

    async with serve_client(home, transport, "--names", "original", "--loading", "eager",
                            message_handler=on_message) as client:
        names, _ = await _listing(client, "mcp__fb__echo")
        assert "together" in names and "freeze" in names  # only fb has them: the upstream names
        assert {"mcp__fa__echo", "mcp__fb__echo", "mcp__fa__add", "mcp__fb__add"} <= set(names)  # both have them
        assert "echo" not in names and "add" not in names and "mcp__fb__together" not in names
        assert "dice_roll" in names and len(names) == len(set(names))
        ran = await client.call_tool("together", {"group": "g", "count": 1, "wait_s": 0})
        assert ran.is_error is False and ran.content[0].text == "1 at once"
        assert (ran.meta or {})["tooldeck/tool_id"].endswith(":together")
        echo = await client.call_tool("mcp__fa__echo", {"message": "hi"})
        assert echo.content[0].text == "Echo: hi"
        # an upstream tool that takes a builtin's name keeps its prefix; the builtin keeps its own
        await client.call_tool("mcp__fa__add_tool", {"name": "dice_roll"})
        names, _ = await _listing(client, "mcp__fa__dice_roll")
        assert "dice_roll" in names
        late = await client.call_tool("mcp__fa__dice_roll", {})
        assert late.content[0].text == "I am dice_roll"
        rolled = await client.call_tool("dice_roll", {"formula": "1d1"})
        assert rolled.content[0].text == "Rolled 1d1: 1."
    assert "notifications/tools/list_changed" in seen
    calls = _recorded(home)
    assert any(c.call_name == "together" and c.tool_id.endswith(":together") for c in calls)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_original_names_deferred(tmp_path: Path, transport: str) -> None:
    home = _home(tmp_path, toml='[mcp]\nnames = "original"\n')  # the tooldeck.toml key, no flag
    async with serve_client(home, transport, "--loading", "deferred") as client:
        names, context = await _listing(client, "mcp__fb__{")
        assert names == ["find_tools", "run_tool", "reasoning_guide", "write_todo", "chat_history",
                         "ask_user", "write_result"]
        listed = context.split("\n\n")[-1]
        assert "together" in listed and "freeze" in listed and "mcp__fb__together" not in listed
        assert "mcp__fa__{" in listed and "mcp__fb__{" in listed
        found = await client.call_tool("find_tools", {"names": ["together", "mcp__fb__echo"]})
        assert '"name": "together"' in found.content[0].text and '"name": "mcp__fb__echo"' in found.content[0].text
        ran = await client.call_tool("run_tool", {"name": "together", "args": {"group": "g", "count": 1, "wait_s": 0}})
        assert ran.is_error is False and ran.content[0].text == "1 at once"
        echo = await client.call_tool("run_tool", {"name": "mcp__fb__echo", "args": {"message": "b"}})
        assert echo.is_error is False and echo.content[0].text == "Echo: b"
        prefixed = await client.call_tool("run_tool", {"name": "mcp__fb__together", "args": {}})
        assert (prefixed.meta or {}).get("tooldeck/error_code") == "tool.unknown_tool"
    calls = _recorded(home)
    wrapped = [c for c in calls if c.call_name == "run_tool" and c.result is not None and not c.result.is_error
               and json.loads(c.raw_arguments)["name"] == "together"]
    assert len(wrapped) == 1 and wrapped[0].tool_id.endswith(":together")


async def test_prefixed_is_the_default_and_an_alias_names_the_server_part(tmp_path: Path) -> None:
    # the flag wins over the tooldeck.toml key
    home = _home(tmp_path, toml='[mcp]\nnames = "original"\n', alias="a1")
    async with serve_client(home, "stdio", "--names", "prefixed", "--loading", "eager") as client:
        names, _ = await _listing(client, "mcp__fb__echo")
        assert "mcp__a1__echo" in names and "mcp__fb__together" in names
        assert not any(n.startswith("mcp__fa__") for n in names) and "together" not in names
        res = await client.call_tool("mcp__a1__add", {"a": 2, "b": 3})
        assert res.is_error is False and res.content[0].text == "5"
        tool_id = (res.meta or {})["tooldeck/tool_id"]
        assert tool_id.startswith("mcp/fa") and tool_id.endswith(":add"), tool_id
