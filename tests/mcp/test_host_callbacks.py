"""In the library there is no MCP client in front: requests an upstream server sends during a call (sampling,
elicitation, roots) are answered by the host's `McpCallbacks` on `runtime.mcp.callbacks`, or refused with an
error that names the missing capability. Real fixture server process (handshake protocol), whole Runtime."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import pytest

from tooldeck.runtime import Runtime
from tooldeck.sources.mcp import McpCallbacks
from tooldeck.sources.mcp.callbacks import MAX_REQUESTS_WAITING, TOO_MANY_REQUESTS

from .conftest import call, fixture_server, write_mcp_json


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    write_mcp_json(tmp_path, {"fx": fixture_server("--relay", protocol="legacy")})
    runtime = Runtime(tmp_path, records=True)
    yield runtime
    runtime.close()


def test_without_callbacks_the_upstream_request_is_refused_by_name(rt: Runtime) -> None:
    inv = rt.invocation()
    sampled = call(inv, "mcp__fx__ask_model", {"prompt": "hi"})
    form = call(inv, "mcp__fx__ask_user", {"question": "Name?"})
    roots = call(inv, "mcp__fx__roots", {})
    assert sampled.is_error is False
    assert sampled.content == (f"refused: {types.INVALID_REQUEST} tooldeck cannot answer sampling/createMessage from "
                               "MCP server `fx`: the host set no sampling callback (McpCallbacks.sampling; "
                               "capability `sampling` missing).")
    assert "the host set no elicitation callback" in form.content and "`elicitation` missing" in form.content
    assert "the host set no roots callback" in roots.content and "`roots` missing" in roots.content


def test_the_hosts_callbacks_answer_the_upstream_server(rt: Runtime) -> None:
    asked: list[object] = []

    async def sampling(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        text = params.messages[0].content.text  # type: ignore[union-attr]
        return types.CreateMessageResult(role="assistant", model="host-model",
                                         content=types.TextContent(type="text", text=text.upper()))

    async def elicitation(params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    async def roots() -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///srv/app", name="app")])

    assert rt.mcp is not None
    rt.mcp.callbacks = McpCallbacks(sampling=sampling, elicitation=elicitation, roots=roots)
    inv = rt.invocation()
    assert call(inv, "mcp__fx__ask_model", {"prompt": "hello"}).content == "model host-model said: HELLO"
    assert call(inv, "mcp__fx__ask_user", {"question": "Name?"}).content == "accept: {'name': 'Grace'}"
    assert call(inv, "mcp__fx__roots", {}).content == "roots: app=file:///srv/app"
    assert isinstance(asked[1], types.ElicitRequestFormParams) and asked[1].message == "Name?"


def test_a_server_gets_at_most_eight_requests_waiting_and_the_rest_refused(rt: Runtime, tmp_path: Path) -> None:
    refusals = tmp_path / "refusals"
    refusals.touch()
    waiting = 0
    peak = 0
    hold = True

    def refused() -> int:
        return len(refusals.read_text().splitlines())

    async def sampling(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        nonlocal waiting, peak, hold
        waiting += 1
        peak = max(peak, waiting)
        try:  # the answers wait until all the accepted requests are here and the rest were refused
            deadline = asyncio.get_running_loop().time() + 10
            while hold and asyncio.get_running_loop().time() < deadline:
                if waiting >= MAX_REQUESTS_WAITING and refused() >= 20 - MAX_REQUESTS_WAITING:
                    hold = False
                await asyncio.sleep(0.01)
        finally:
            waiting -= 1
        return types.CreateMessageResult(role="assistant", model="host-model",
                                         content=types.TextContent(type="text", text="ok"))

    assert rt.mcp is not None
    rt.mcp.callbacks = McpCallbacks(sampling=sampling)
    answers = call(rt.invocation(), "mcp__fx__ask_model_many", {"count": 20, "refusals": str(refusals)}).content
    assert peak == MAX_REQUESTS_WAITING
    assert answers.split().count("ok") == MAX_REQUESTS_WAITING
    assert answers.split().count(TOO_MANY_REQUESTS) == 20 - MAX_REQUESTS_WAITING
    assert not hold  # once answered, the server may ask again
    assert call(rt.invocation(), "mcp__fx__ask_model_many", {"count": 2}).content == "ok ok"
