"""The raw relay of served `tools/call`s (sources/mcp/raw_relay.py): the channel between an upstream transport
and the SDK session, on real anyio memory streams (the shape every SDK transport hands out), and a served call
that reaches a real upstream process with a relay id."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

from tests.server.support import serve_client
from tooldeck.deadline import _DEADLINES
from tooldeck.sources.mcp.raw_relay import RAW_PREFIX, RawChannel

WHOAMI = Path(__file__).with_name("whoami_server.py")


def _stamp(data: dict[str, Any], opts: dict[str, Any]) -> None:
    data["params"].setdefault("_meta", {})["stamped"] = True
    opts["headers"] = {"mcp-method": data["method"]}


class Wire:
    """The upstream end of a channel: what the relay wrote, and a way to answer; `passed` is what the channel
    let through to its reader (the SDK dispatcher's loop, which reads all the time)."""

    def __init__(self) -> None:
        self.to_channel, inner_read = anyio.create_memory_object_stream[Any](100)
        write, self.written = anyio.create_memory_object_stream[SessionMessage](100)
        self.channel = RawChannel(inner_read, write)
        self.passed: list[Any] = []
        self.ended = asyncio.Event()
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        try:
            async for item in self.channel:
                self.passed.append(item.message)
        finally:
            self.ended.set()

    async def passed_n(self, n: int) -> list[Any]:
        for _ in range(1000):
            if len(self.passed) >= n:
                break
            await asyncio.sleep(0.01)
        return self.passed

    async def next_written(self) -> Any:
        with anyio.fail_after(10):
            return (await self.written.receive()).message

    async def reply(self, message: Any) -> None:
        await self.to_channel.send(SessionMessage(message))


def _response(request_id: Any, text: str = "ok") -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"content": [{"type": "text", "text": text}]})


async def test_the_reply_goes_to_the_call_and_everything_else_passes_through() -> None:
    wire = Wire()
    call = asyncio.create_task(wire.channel.call(_stamp, "echo", {"message": "hi"}, 10))
    request = await wire.next_written()
    assert isinstance(request, JSONRPCRequest) and request.method == "tools/call"
    assert isinstance(request.id, str) and request.id.startswith(RAW_PREFIX)
    assert request.params == {"name": "echo", "arguments": {"message": "hi"}, "_meta": {"stamped": True}}
    others = [JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"level": "info"}),
              JSONRPCRequest(jsonrpc="2.0", id=7, method="sampling/createMessage", params={}),
              _response(3, "the session's own"), _response("other-string", "not ours")]
    for message in others:
        await wire.reply(message)
    await wire.reply(_response(request.id, "relayed"))
    assert await asyncio.wait_for(call, 10) == {"content": [{"type": "text", "text": "relayed"}]}
    assert await wire.passed_n(len(others)) == others
    assert not wire.channel._pending


async def test_progress_of_the_call_goes_to_its_callback_only() -> None:
    wire = Wire()
    seen: list[tuple[Any, Any, Any]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    call = asyncio.create_task(wire.channel.call(_stamp, "slow", None, 10, on_progress=on_progress))
    request = await wire.next_written()
    token = request.params["_meta"]["progressToken"]
    assert token == request.id and "arguments" not in request.params
    foreign = JSONRPCNotification(jsonrpc="2.0", method="notifications/progress",
                                  params={"progressToken": 1, "progress": 9})
    await wire.reply(JSONRPCNotification(jsonrpc="2.0", method="notifications/progress",
                                         params={"progressToken": token, "progress": 1, "total": 2, "message": "half"}))
    await wire.reply(foreign)
    await wire.reply(_response(request.id))
    await asyncio.wait_for(call, 10)
    assert await wire.passed_n(1) == [foreign]
    for _ in range(100):
        if seen:
            break
        await asyncio.sleep(0.01)
    assert seen == [(1, 2, "half")]
    assert not wire.channel._progress


async def test_an_error_reply_is_an_mcp_error() -> None:
    wire = Wire()
    call = asyncio.create_task(wire.channel.call(_stamp, "bad", {}, 10))
    request = await wire.next_written()
    await wire.reply(JSONRPCError(jsonrpc="2.0", id=request.id,
                                  error=ErrorData(code=-32602, message="no such tool", data={"x": 1})))
    with pytest.raises(MCPError) as caught:
        await asyncio.wait_for(call, 10)
    assert (caught.value.error.code, caught.value.error.message, caught.value.error.data) == \
        (-32602, "no such tool", {"x": 1})
    assert await wire.passed_n(0) == []


async def test_a_timeout_cancels_upstream_and_a_late_reply_passes_to_the_session() -> None:
    wire = Wire()
    with pytest.raises(MCPError) as caught:
        await wire.channel.call(_stamp, "slow", {}, 0.05)
    assert caught.value.error.code == REQUEST_TIMEOUT
    request = await wire.next_written()
    cancelled = await wire.next_written()
    assert isinstance(cancelled, JSONRPCNotification) and cancelled.method == "notifications/cancelled"
    assert cancelled.params["requestId"] == request.id
    assert not wire.channel._pending
    late = _response(request.id, "late")
    await wire.reply(late)  # nobody waits for it: the session gets it (and drops an id it does not know)
    assert await wire.passed_n(1) == [late]


async def test_each_call_times_out_at_its_own_deadline_and_the_others_still_get_their_replies() -> None:
    wire = Wire()
    patient = asyncio.create_task(wire.channel.call(_stamp, "slow", {}, 30))
    first = await wire.next_written()
    for _ in range(2):  # a shorter deadline than the pending one, then again once the channel's timer has fired
        with pytest.raises(MCPError) as caught:
            await wire.channel.call(_stamp, "slow", {}, 0.05)
        assert caught.value.error.code == REQUEST_TIMEOUT
        request = await wire.next_written()
        cancelled = await wire.next_written()
        assert cancelled.method == "notifications/cancelled" and cancelled.params["requestId"] == request.id
    assert not patient.done()
    await wire.reply(_response(first.id, "in time"))
    assert (await asyncio.wait_for(patient, 10))["content"][0]["text"] == "in time"
    assert not wire.channel._pending and not _DEADLINES[asyncio.get_running_loop()].waiting


async def test_a_cancelled_caller_cancels_upstream() -> None:
    wire = Wire()
    call = asyncio.create_task(wire.channel.call(_stamp, "slow", {}, 10))
    request = await wire.next_written()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    cancelled = await wire.next_written()
    assert cancelled.method == "notifications/cancelled" and cancelled.params["requestId"] == request.id
    assert not wire.channel._pending


async def test_the_end_of_the_transport_fails_the_calls_in_flight_and_later_ones() -> None:
    wire = Wire()
    call = asyncio.create_task(wire.channel.call(_stamp, "slow", {}, 10))
    await wire.next_written()
    await wire.to_channel.aclose()
    await asyncio.wait_for(wire.ended.wait(), 10)
    with pytest.raises(MCPError) as caught:
        await asyncio.wait_for(call, 10)
    assert caught.value.error.code == CONNECTION_CLOSED
    with pytest.raises(MCPError) as again:
        await wire.channel.call(_stamp, "echo", {}, 10)
    assert again.value.error.code == CONNECTION_CLOSED


_IDS = st.one_of(st.integers(0, 5), st.sampled_from(["a", "1", f"{RAW_PREFIX}x", f"{RAW_PREFIX}99"]))
_MESSAGES = st.one_of(
    st.builds(lambda i: _response(i), _IDS),
    st.builds(lambda i: JSONRPCError(jsonrpc="2.0", id=i, error=ErrorData(code=-1, message="e")), _IDS),
    st.builds(lambda t: JSONRPCNotification(jsonrpc="2.0", method="notifications/progress",
                                            params={"progressToken": t, "progress": 1}), _IDS),
    st.builds(lambda i: JSONRPCRequest(jsonrpc="2.0", id=i, method="roots/list"), _IDS),
)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.lists(_MESSAGES, max_size=12))
def test_what_is_not_a_relayed_reply_passes_through_in_order(messages: list[Any]) -> None:
    async def run() -> None:
        wire = Wire()
        call = asyncio.create_task(wire.channel.call(_stamp, "echo", {}, 30))
        request = await wire.next_written()
        for message in messages:
            await wire.reply(message)
        await wire.reply(_response(request.id, "mine"))
        assert (await asyncio.wait_for(call, 10))["content"][0]["text"] == "mine"
        assert await wire.passed_n(len(messages)) == messages

    asyncio.run(run())


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_served_call_reaches_the_upstream_server_with_a_relay_id(tmp_path: Path, transport: str) -> None:
    """Through a real `tooldeck serve --stdio` and a real upstream process: the request id the upstream saw is
    the relay's (the SDK client numbers its own requests), and the result reaches the client as sent."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"who": {"command": sys.executable,
                                                                      "args": [str(WHOAMI)]}}}))
    async with serve_client(home, transport) as client:
        for n in range(2):
            result = await client.call_tool("mcp__who__whoami", {"n": n})
            assert not result.is_error, result
            seen = json.loads(result.content[0].text)
            assert seen["n"] == n
            assert str(seen["request_id"]).startswith(RAW_PREFIX)


def test_a_library_call_goes_out_on_the_relay_too(tmp_path: Path) -> None:
    """The Runtime path (no MCP client in front) sends on the same channel."""
    from tooldeck.runtime import Runtime

    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"who": {"command": sys.executable,
                                                                      "args": [str(WHOAMI)]}}}))
    rt = Runtime(home, builtins=[], records=False, profile={"allow": ["mcp/*"]})
    try:
        inv = rt.invocation()
        [result] = inv.run([{"id": "c1", "name": "mcp__who__whoami", "arguments": {"n": 5}}])
        assert not result.is_error, result.content
        seen = json.loads(result.content)
        assert seen["n"] == 5 and str(seen["request_id"]).startswith(RAW_PREFIX)
    finally:
        rt.close()
