"""Session semantics of the MCP server, in process (real Runtime, real SDK server, official client):
budget per call, list_changed on catalog changes, `ask` through elicitation, description fallback,
structured content only with an output schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tooldeck.catalog.sources import Executable, StaticSource
from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.runtime import Runtime
from tooldeck.server.mcp_server import ServeOptions, TooldeckMCPServer

NO_WATCH = ServeOptions(watch_interval_s=None)


def _server(home: Path, profile: dict[str, Any] | None = None, sources: tuple[Any, ...] = ()) -> TooldeckMCPServer:
    return TooldeckMCPServer(Runtime(home, profile=profile, sources=sources), NO_WATCH)


async def test_budget_bounds_one_call_not_the_session(tmp_path: Path) -> None:
    mcp = _server(tmp_path, {"max_calls_per_invocation": 1, "max_calls_per_tool": {"builtin:dice.roll": 1}})
    async with Client(mcp.server, mode="legacy") as client:
        # distinct formulas: five identical rolls that came out alike would be refused as a repeated call
        results = [await client.call_tool("dice_roll", {"formula": f"d{6 + i}"}) for i in range(5)]
    assert [r.is_error for r in results] == [False] * 5
    assert len(list((tmp_path / "workspaces").iterdir())) == 1  # one run for the whole session


def _add_shout(mcp: TooldeckMCPServer) -> None:
    @mcp.runtime.tool("demo")
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()


async def test_catalog_change_notifies_handshake_clients(tmp_path: Path) -> None:
    mcp = _server(tmp_path)
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        seen.append(getattr(message, "method", type(message).__name__))

    async with Client(mcp.server, mode="legacy", message_handler=on_message) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        assert await mcp.check_catalog() is False  # nothing changed yet
        _add_shout(mcp)
        assert await mcp.check_catalog() is True
        after = {t.name for t in (await client.list_tools()).tools}
        assert after - before == {"shout"}
        assert (await client.call_tool("shout", {"text": "hi"})).content[0].text == "HI"
    assert "notifications/tools/list_changed" in seen


async def test_catalog_change_reaches_listen_streams(tmp_path: Path) -> None:
    mcp = _server(tmp_path)
    async with Client(mcp.server, mode="auto") as client:
        assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed
        assert "shout" not in {t.name for t in (await client.list_tools()).tools}
        async with client.listen(tools_list_changed=True) as sub:
            _add_shout(mcp)
            assert await mcp.check_catalog() is True
            with anyio.fail_after(10):
                event = await sub.__aiter__().__anext__()
        assert type(event).__name__ == "ToolsListChanged"
        assert "shout" in {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}


async def test_catalog_watch_runs_in_the_background(tmp_path: Path) -> None:
    mcp = TooldeckMCPServer(Runtime(tmp_path), ServeOptions(watch_interval_s=0.05))
    async with Client(mcp.server, mode="legacy") as client:
        await client.list_tools()
        _add_shout(mcp)
        with anyio.fail_after(10):
            while "shout" not in {t.name for t in (await client.list_tools()).tools}:
                await anyio.sleep(0.05)


def _ask_server(tmp_path: Path) -> TooldeckMCPServer:
    return _server(tmp_path, {"permissions": {"builtin:dice.roll": "ask"}})


async def test_ask_is_settled_by_elicitation(tmp_path: Path) -> None:
    asked: list[str] = []

    async def approve(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with Client(_ask_server(tmp_path).server, mode="legacy", elicitation_callback=approve) as client:
        res = await client.call_tool("dice_roll", {"formula": "1d1"})
    assert res.is_error is False and res.content[0].text.startswith("Rolled 1d1: ")
    assert len(asked) == 1 and "`dice_roll`" in asked[0] and "1d1" in asked[0]


@pytest.mark.parametrize("answer", [types.ElicitResult(action="decline"),
                                    types.ElicitResult(action="accept", content={"approve": False}),
                                    types.ElicitResult(action="cancel")])
async def test_ask_denied_when_the_user_says_no(tmp_path: Path, answer: types.ElicitResult) -> None:
    async def reply(_ctx: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
        return answer

    async with Client(_ask_server(tmp_path).server, mode="legacy", elicitation_callback=reply) as client:
        res = await client.call_tool("dice_roll", {"formula": "d6"})
    assert res.is_error is True
    assert (res.meta or {}).get("tooldeck/error_code") == "tool.permission_denied"
    assert "needs confirmation" in res.content[0].text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_ask_denied_without_elicitation(tmp_path: Path, mode: str) -> None:
    async with Client(_ask_server(tmp_path).server, mode=mode) as client:
        res = await client.call_tool("dice_roll", {"formula": "d6"})
    assert res.is_error is True
    assert (res.meta or {}).get("tooldeck/error_code") == "tool.permission_denied"


def _script_source() -> StaticSource:
    source = StaticSource("script")
    source.add(ToolDescriptor(ToolId.parse("script/demo:bare"), "",
                              {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
               Executable(lambda args, ctx: f"n={args['n']}"))
    source.add(ToolDescriptor(ToolId.parse("script/demo:sized"), "Size of a text.",
                              {"type": "object", "properties": {"text": {"type": "string"}}},
                              output_schema={"type": "object", "properties": {"size": {"type": "integer"}}}),
               Executable(lambda args, ctx: ToolOutput("size computed", structured={"size": len(args["text"])})))
    return source


async def test_descriptions_and_structured_content(tmp_path: Path) -> None:
    mcp = _server(tmp_path, sources=(_script_source(),))
    async with Client(mcp.server, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["bare"].description == "Runs `bare` (script/demo:bare). Parameters: n."
        assert tools["sized"].output_schema == {"type": "object", "properties": {"size": {"type": "integer"}}}
        assert tools["bare"].output_schema is None
        sized = await client.call_tool("sized", {"text": "abcd"})
        assert sized.structured_content == {"size": 4} and sized.content[0].text == "size computed"
        bare = await client.call_tool("bare", {"n": 3})
        assert bare.content[0].text == "n=3" and bare.structured_content is None
        dice = await client.call_tool("dice_roll", {"formula": "d6"})
        assert dice.structured_content is None  # no output schema declared: text only


async def test_deferred_loading_serves_find_tools_and_run_tool(tmp_path: Path) -> None:
    mcp = _server(tmp_path, {"loading": "deferred"})
    async with Client(mcp.server, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert list(tools) == ["find_tools", "run_tool", "reasoning_guide", "write_todo", "chat_history", "ask_user",
                              "write_result"]
        assert "dice_roll" in (tools["run_tool"].description or "")  # the turn context names the tools
        found = await client.call_tool("find_tools", {"names": ["dice_roll"]})
        assert found.is_error is False and '"formula"' in found.content[0].text
        res = await client.call_tool("run_tool", {"name": "dice_roll", "args": {"formula": "1d1"}})
        assert res.is_error is False and res.content[0].text == "Rolled 1d1: 1."
        assert (res.meta or {}).get("tooldeck/tool_id") == "builtin:dice.roll"


@pytest.mark.parametrize(("approve", "ok"), [(True, True), (False, False)])
async def test_ask_in_the_2026_era_goes_through_input_required(tmp_path: Path, approve: bool, ok: bool) -> None:
    asked: list[str] = []

    async def reply(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": approve})

    async with Client(_ask_server(tmp_path).server, mode="auto", elicitation_callback=reply) as client:
        assert client.protocol_version == "2026-07-28"
        res = await client.call_tool("dice_roll", {"formula": "1d1"})
    assert len(asked) == 1 and "`dice_roll`" in asked[0]
    assert res.is_error is (not ok)
    if ok:
        assert res.content[0].text == "Rolled 1d1: 1."
    else:
        assert (res.meta or {}).get("tooldeck/error_code") == "tool.permission_denied"


async def test_an_answer_for_other_arguments_does_not_approve(tmp_path: Path) -> None:
    from tooldeck.server.confirm import CONFIRM_KEY, call_state

    async def never(_ctx: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
        raise AssertionError("driven by hand below")

    yes = types.ElicitResult(action="accept", content={"approve": True})
    async with Client(_ask_server(tmp_path).server, mode="auto", elicitation_callback=never) as client:
        res = await client.session.call_tool(
            "dice_roll", {"formula": "2d6"}, input_responses={CONFIRM_KEY: yes},
            request_state=call_state("dice_roll", {"formula": "1d1"}), allow_input_required=True)
        assert isinstance(res, types.InputRequiredResult)  # asked again: the approval was for other arguments
        assert res.request_state == call_state("dice_roll", {"formula": "2d6"})
        again = await client.session.call_tool(
            "dice_roll", {"formula": "2d6"}, input_responses={CONFIRM_KEY: yes},
            request_state=res.request_state, allow_input_required=True)
        assert isinstance(again, types.CallToolResult) and again.is_error is False
        assert again.content[0].text.startswith("Rolled 2d6: ")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_unknown_and_empty_names_are_protocol_errors(tmp_path: Path, mode: str) -> None:
    from mcp import MCPError

    async with Client(_server(tmp_path).server, mode=mode) as client:
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("dice_rol", {"formula": "d6"})
        assert unknown.value.error.code == types.INVALID_PARAMS
        assert "Did you mean `dice_roll`?" in unknown.value.error.message
        assert unknown.value.error.data == {"code": "tool.unknown_tool"}
        with pytest.raises(MCPError) as empty:
            await client.call_tool("", {})
        assert empty.value.error.code == types.INVALID_PARAMS
