"""Errors of a call that names a tool that exists are tool results over MCP, never protocol errors (the MCP spec
asks input validation errors to be results the model can act on): a bad target of `run_tool`, bad arguments
of a known tool (builtin or proxied), arguments that are not an object. Only a tools/call whose own name is
unknown is the spec's protocol error. Real `tooldeck serve` processes, official client, stdio and HTTP."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError

from tests.server.support import serve_client
from tooldeck.runtime import Runtime

FIXTURE = Path(__file__).resolve().parents[1] / "mcp" / "fixtures" / "fixture_server.py"
TRANSPORTS = ["stdio", "http"]
INVALID = "tool.invalid_arguments"
UNKNOWN = "tool.unknown_tool"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": {"command": sys.executable,
                                                                     "args": [str(FIXTURE)]}}}))
    return home




async def _wait_for_upstream(client: Client, deferred: bool) -> None:
    with anyio.fail_after(30):  # the upstream server is discovered in the background
        while True:
            tools = (await client.list_tools()).tools
            text = " ".join(f"{t.name} {t.description}" for t in tools)
            if ("mcp__fx__{" if deferred else "mcp__fx__add") in text:
                return
            await anyio.sleep(0.2)


def _error(result: types.CallToolResult) -> tuple[bool, str | None, str]:
    return result.is_error, (result.meta or {}).get("tooldeck/error_code"), result.content[0].text


async def _raw_call(client: Client, name: str, arguments: Any) -> types.CallToolResult:
    """A tools/call whose `arguments` is any JSON value (the typed client API only sends objects)."""
    params = types.CallToolRequestParams.model_construct(name=name, arguments=arguments)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # pydantic warns that `arguments` is not a dict: on purpose
        return await client.session.send_request(types.CallToolRequest(params=params), types.CallToolResult)


def _library(home: Path, calls: list[dict[str, Any]], loading: str) -> list[tuple[bool, str | None, str]]:
    """What `Invocation.run` answers for the same calls, in the same setting as serve."""
    with Runtime(home, profile={"loading": loading}) as rt:
        inv = rt.invocation("openai", "session", headless=True)
        return [(r.is_error, r.error_code, r.content) for r in inv.run(calls)]


async def _library_answers(home: Path, calls: list[dict[str, Any]],
                           loading: str = "deferred") -> list[tuple[bool, str | None, str]]:
    return await anyio.to_thread.run_sync(_library, home, calls, loading)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_run_tool_with_an_unknown_target_is_a_tool_result(tmp_path: Path, transport: str) -> None:
    home = _home(tmp_path)
    async with serve_client(home, transport, "--loading", "deferred") as client:
        await _wait_for_upstream(client, deferred=True)
        unknown = await client.call_tool("run_tool", {"name": "no_such_tool"})
        typo = await client.call_tool("run_tool", {"name": "dice_rol", "args": {"formula": "d6"}})
        near_meta = await client.call_tool("run_tool", {"name": "find_tool", "args": {}})
        upstream_typo = await client.call_tool("run_tool", {"name": "mcp__fx__ad", "args": {"a": 1, "b": 2}})
        # the tool named directly is unknown: the spec's protocol error, as before
        with pytest.raises(MCPError) as direct:
            await client.call_tool("no_such_tool", {})
    assert direct.value.error.code == types.INVALID_PARAMS
    assert direct.value.error.data == {"code": UNKNOWN}

    is_error, code, text = _error(unknown)
    assert (is_error, code) == (True, UNKNOWN)
    assert text.startswith("`no_such_tool` is not an available tool; nothing was run.")
    assert "find_tools" in text  # where to look the tool up
    for result in (unknown, typo, near_meta, upstream_typo):
        said = _error(result)[2]
        assert "Did you mean `run_tool`" not in said and "Did you mean `find_tools`" not in said, said
    assert "Did you mean `dice_roll`?" in _error(typo)[2]
    assert "Did you mean `mcp__fx__add`?" in _error(upstream_typo)[2]
    assert _error(near_meta)[:2] == (True, UNKNOWN)

    calls = [{"id": "a", "name": "run_tool", "arguments": {"name": "no_such_tool"}},
             {"id": "b", "name": "run_tool", "arguments": {"name": "dice_rol", "args": {"formula": "d6"}}},
             {"id": "c", "name": "run_tool", "arguments": {"name": "find_tool", "args": {}}}]
    assert [_error(r) for r in (unknown, typo, near_meta)] == await _library_answers(home, calls)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_argument_errors_through_run_tool_are_tool_results(tmp_path: Path, transport: str) -> None:
    home = _home(tmp_path)
    async with serve_client(home, transport, "--loading", "deferred") as client:
        await _wait_for_upstream(client, deferred=True)
        found = await client.call_tool("find_tools", {"names": ["dice_roll", "mcp__fx__add"]})
        assert found.is_error is False
        results = {
            "builtin": await client.call_tool("run_tool", {"name": "dice_roll", "args": {"formula": 5}}),
            "proxied": await client.call_tool("run_tool", {"name": "mcp__fx__add", "args": {"a": "x", "b": 2}}),
            "args_not_object": await client.call_tool("run_tool", {"name": "dice_roll", "args": 5}),
            "run_tool_args_not_object": await _raw_call(client, "run_tool", 5),
            "run_tool_args_a_list": await _raw_call(client, "run_tool", ["dice_roll"]),
            "find_tools_bad": await client.call_tool("find_tools", {"names": 5}),
        }
        ok = await client.call_tool("run_tool", {"name": "mcp__fx__add", "args": {"a": 20, "b": 22}})
    assert ok.is_error is False and ok.content[0].text == "42"
    for what, result in results.items():
        is_error, code, text = _error(result)
        assert (is_error, code) == (True, INVALID), (what, text)
    assert _error(results["builtin"])[2].startswith("Invalid arguments for `dice_roll`: `formula`: 5")
    assert _error(results["proxied"])[2].startswith("Invalid arguments for `mcp__fx__add`: `a`: ")
    assert (results["proxied"].meta or {})["tooldeck/tool_id"].endswith(":add")
    assert _error(results["run_tool_args_not_object"])[2].startswith("run_tool needs `name`")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_argument_errors_of_eager_tools_are_tool_results(tmp_path: Path, transport: str) -> None:
    home = _home(tmp_path)
    async with serve_client(home, transport, "--loading", "eager") as client:
        await _wait_for_upstream(client, deferred=False)
        results = {
            "builtin": await client.call_tool("dice_roll", {"formula": 5}),
            "builtin_missing": await client.call_tool("dice_roll", {}),
            "proxied": await client.call_tool("mcp__fx__add", {"a": 1}),
            "not_object": await _raw_call(client, "dice_roll", 5),
            "a_list": await _raw_call(client, "mcp__fx__add", [1, 2]),
            "not_json": await _raw_call(client, "dice_roll", "{formula"),
        }
        with pytest.raises(MCPError) as unknown:
            await _raw_call(client, "no_such_tool", 5)
        ok = await client.call_tool("mcp__fx__add", {"a": 1, "b": 2})
    assert ok.is_error is False and ok.content[0].text == "3"
    for what, result in results.items():
        is_error, code, text = _error(result)
        assert (is_error, code) == (True, INVALID), (what, text)
    for what in ("builtin", "builtin_missing", "proxied"):
        assert _error(results[what])[2].startswith("Invalid arguments for `"), what
    assert "`b`" in _error(results["proxied"])[2]
    raw = [{"id": "a", "name": "dice_roll", "arguments": 5}, {"id": "b", "name": "dice_roll", "arguments": "{formula"}]
    assert [_error(results["not_object"]), _error(results["not_json"])] == await _library_answers(home, raw, "eager")
    assert unknown.value.error.code == types.INVALID_PARAMS
    assert unknown.value.error.data == {"code": UNKNOWN}


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


@settings(derandomize=True, max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments=_JSON, loading=st.sampled_from(["eager", "deferred"]))
def test_any_arguments_of_a_known_tool_give_a_result(tmp_path: Path, arguments: Any, loading: str) -> None:
    """Whatever JSON value `arguments` is, a call of a tool that exists answers a CallToolResult (in process:
    the real SDK server and client over memory streams), never a protocol error."""
    from tooldeck.server.mcp_server import ServeOptions, TooldeckMCPServer

    async def check() -> None:
        mcp = TooldeckMCPServer(Runtime(tmp_path, profile={"loading": loading}), ServeOptions(watch_interval_s=None))
        try:
            async with Client(mcp.server, mode="legacy") as client:
                name = "dice_roll" if loading == "eager" else "run_tool"
                result = await _raw_call(client, name, arguments)
                assert isinstance(result, types.CallToolResult)
                if not isinstance(arguments, dict):  # never runs anything
                    assert result.is_error is True, result
                    assert (result.meta or {}).get("tooldeck/error_code") in (INVALID, UNKNOWN, "tool.schema_required")
        finally:
            mcp.runtime.close()

    anyio.run(check)
