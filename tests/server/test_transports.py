"""A real `tooldeck serve` subprocess, driven by the official `mcp` client over stdio and HTTP,
in both protocol eras (the 2025 initialize handshake and the 2026-07-28 per-request envelope)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError

from tests.server.support import Served, http_server, stdio_params

INVALID = "tool.invalid_arguments"
MODES = ["legacy", "auto"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with http_server(tmp_path_factory.mktemp("home")) as s:
        yield s


async def _conversation(target: Any, mode: str) -> None:
    async with Client(target, mode=mode, read_timeout_seconds=30) as client:
        listing = await client.list_tools()
        names = [t.name for t in listing.tools]
        assert "dice_roll" in names
        assert len(names) == len(set(names))
        for tool in listing.tools:
            assert tool.description and tool.description.strip(), f"{tool.name} has no description"
            assert tool.input_schema.get("type") == "object"
        dice = next(t for t in listing.tools if t.name == "dice_roll")
        assert dice.input_schema["required"] == ["formula"]
        assert dice.input_schema["properties"]["formula"]["type"] == "string"

        ok = await client.call_tool("dice_roll", {"formula": "2d6+1"})
        assert ok.is_error is False
        text = ok.content[0].text
        m = re.fullmatch(r"Rolled 2d6\+1: (\d) \+ (\d) \+ 1 = (\d+)\.", text)
        assert m, text
        a, b, total = map(int, m.groups())
        assert 1 <= a <= 6 and 1 <= b <= 6 and total == a + b + 1

        for bad in ({"formula": 5}, {}):
            res = await client.call_tool("dice_roll", bad)
            assert res.is_error is True
            assert res.content[0].text.startswith("Invalid arguments for `dice_roll`:")
            assert "formula" in res.content[0].text
            assert (res.meta or {}).get("tooldeck/error_code") == INVALID

        with pytest.raises(MCPError) as err:
            await client.call_tool("no_such_tool", {})
        assert "`no_such_tool` is not an available tool" in str(err.value)
        assert "dice_roll" in str(err.value)  # the message lists what there is


@pytest.mark.parametrize("mode", MODES)
async def test_http_conversation(served: Served, mode: str) -> None:
    await _conversation(served.url, mode)


@pytest.mark.parametrize("mode", MODES)
async def test_stdio_conversation(tmp_path: Path, mode: str) -> None:
    await _conversation(stdio_params(tmp_path / "home"), mode)


async def test_http_calls_of_one_session_share_one_run(served: Served, tmp_path: Path) -> None:
    home = Path(served.proc.args[3])  # type: ignore[index]
    before = {p.name for p in (home / "workspaces").iterdir()} if (home / "workspaces").exists() else set()
    async with Client(served.url, mode="legacy") as client:
        for _ in range(3):
            assert (await client.call_tool("dice_roll", {"formula": "d4"})).is_error is False
    after = {p.name for p in (home / "workspaces").iterdir()}
    new = after - before
    assert len(new) == 1 and next(iter(new)).startswith("mcp_"), new
