"""`tools/call` over stdio is served beside the SDK's dispatcher (`server/stdio_lane.py`): its answers are the ones
the SDK's path gives, in both protocol eras, and what the dispatcher did for a call (cancel, shutdown, requests to
the client) still happens. Real `tooldeck serve --stdio` processes driven line by line, so the exact frames are
seen; the fixture server proxied over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError

from tests.server.support import TOOLDECK, recorded_calls
from tooldeck.server.stdio_lane import LANE_PREFIX, StdioLane

FIXTURE = Path(__file__).resolve().parents[1] / "mcp" / "fixtures" / "fixture_server.py"
DEADLINE_S = 30.0
MODERN = "2026-07-28"
LEGACY = types.LATEST_PROTOCOL_VERSION if types.LATEST_PROTOCOL_VERSION != MODERN else "2025-11-25"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "wire-test", "version": "1"}}


def _home(tmp_path: Path, relay: bool = False) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    server: dict[str, Any] = {"command": sys.executable, "args": [str(FIXTURE)]}
    if relay:  # a handshake-era upstream connection: the fixture's tools can send it requests mid-call
        server.update(args=[str(FIXTURE), "--relay"], protocol="legacy")
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": server}}))
    (home / "profile.toml").write_text('loading = "eager"\n')
    return home


class Wire:
    """A client that writes and reads the JSON lines of `tooldeck serve --stdio` itself."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def next(self, timeout: float = DEADLINE_S) -> dict[str, Any] | None:
        message = self.lines.get(timeout=timeout)
        if message is not None:
            self.seen.append(message)
        return message

    def answer(self, request_id: Any, timeout: float = DEADLINE_S) -> dict[str, Any]:
        """The answer to `request_id` (other frames are kept in `seen`)."""
        for message in self.seen:
            if message.get("id") == request_id and "method" not in message:
                return message
        deadline = time.monotonic() + timeout
        while True:
            message = self.next(max(0.1, deadline - time.monotonic()))
            assert message is not None, "serve closed stdout before answering"
            if message.get("id") == request_id and "method" not in message:
                return message

    def call(self, request_id: Any, name: str, arguments: Any = None, meta: dict[str, Any] | None = None,
             **params: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, **params}
        if arguments is not None:
            body["arguments"] = arguments
        if meta is not None:
            body["_meta"] = meta
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body})
        return self.answer(request_id)


@contextmanager
def served(home: Path) -> Iterator[Wire]:
    proc = subprocess.Popen([TOOLDECK, "serve", "--stdio", "--home", str(home)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ})
    try:
        yield Wire(proc)
    finally:
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()
        try:
            proc.wait(DEADLINE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _legacy(wire: Wire, capabilities: dict[str, Any] | None = None) -> None:
    wire.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": capabilities or {},
        "clientInfo": {"name": "wire-test", "version": "1"}}})
    assert "result" in wire.answer(0)
    wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _without_ids(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in answer.items() if key != "id"}


# -- the same answers as the SDK's path ------------------------------------------------------------------------

CASES: list[tuple[str, Any]] = [
    ("mcp__fx__echo", {"message": "hi"}),  # a result
    ("mcp__fx__weather", {"city": "Oslo"}),  # structured content under an output schema
    ("mcp__fx__fail", {"reason": "no"}),  # a tool error (isError)
    ("mcp__fx__echo", {"message": 7}),  # arguments the gate refuses
    ("mcp__fx__echo", [1, 2]),  # non-object arguments: a tool result, not -32602 (raw_arguments.py)
    ("no_such_tool", {}),  # the protocol error of an unknown tool
]


@pytest.mark.parametrize(("name", "arguments"), CASES)
def test_a_modern_call_gets_the_answer_the_sdk_path_gives(tmp_path: Path, name: str, arguments: Any) -> None:
    """The connection's first request is served by the SDK (it decides the era); the same call again is the
    lane's. Both answers are the same frame."""
    with served(_home(tmp_path)) as wire:
        first = wire.call("sdk", name, arguments, meta=ENVELOPE)
        second = wire.call("lane", name, arguments, meta=ENVELOPE)
    assert _without_ids(second) == _without_ids(first)
    assert first["id"] == "sdk" and second["id"] == "lane"


def test_a_modern_result_carries_the_era_stamps(tmp_path: Path) -> None:
    with served(_home(tmp_path)) as wire:
        wire.call(1, "mcp__fx__echo", {"message": "a"}, meta=ENVELOPE)
        answer = wire.call(2, "mcp__fx__echo", {"message": "b"}, meta=ENVELOPE)
    result = answer["result"]
    assert result["resultType"] == "complete"
    assert "name" in result["_meta"]["io.modelcontextprotocol/serverInfo"]  # (the upstream's, relayed as sent)
    assert result["content"] == [{"type": "text", "text": "Echo: b"}] and result["isError"] is False


def test_a_call_with_a_bad_envelope_gets_the_sdk_error(tmp_path: Path) -> None:
    """What the lane does not recognise goes to the SDK, which answers it as it always has."""
    bad = {k: v for k, v in ENVELOPE.items() if "Capabilities" not in k}
    with served(_home(tmp_path)) as wire:
        wire.call(1, "mcp__fx__echo", {"message": "a"}, meta=ENVELOPE)
        answer = wire.call(2, "mcp__fx__echo", {"message": "b"}, meta=bad)
        unsupported = wire.call(3, "mcp__fx__echo", {"message": "c"},
                                meta={**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"})
    assert answer["error"]["code"] == types.INVALID_PARAMS
    assert "clientCapabilities" in answer["error"]["message"]
    assert unsupported["error"]["code"] == types.UNSUPPORTED_PROTOCOL_VERSION


def test_legacy_calls_wait_for_initialize_and_then_answer_without_modern_stamps(tmp_path: Path) -> None:
    with served(_home(tmp_path)) as wire:
        early = wire.call(1, "mcp__fx__echo", {"message": "early"})
        _legacy(wire)
        answer = wire.call(2, "mcp__fx__echo", {"message": "hi"})
        unknown = wire.call(3, "no_such_tool", {})
    assert "error" in early  # before the handshake: the SDK's answer, not a call
    assert answer["result"]["content"] == [{"type": "text", "text": "Echo: hi"}]
    assert answer["result"]["isError"] is False and "resultType" not in answer["result"]
    assert unknown["error"]["code"] == types.INVALID_PARAMS and unknown["error"]["data"]["code"] == "tool.unknown_tool"


def test_a_legacy_call_can_ask_the_client_through_the_lane(tmp_path: Path) -> None:
    """Sampling from the upstream server reaches the client as a request with the lane's own id; the client's
    answer goes back up and the call returns it."""
    with served(_home(tmp_path, relay=True)) as wire:
        _legacy(wire, {"sampling": {}})
        wire.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                   "params": {"name": "mcp__fx__ask_model", "arguments": {"prompt": "ping"}}})
        request = wire.next()
        assert request is not None and request.get("method") == "sampling/createMessage", request
        assert str(request["id"]).startswith("tooldeck-lane-")
        # the answer holds the strings the lane looks for in a line (a JSON string "tools/call", a cancel's
        # method): it is still the answer to the lane's request
        text = "tools/call"
        wire.send({"jsonrpc": "2.0", "id": request["id"], "result": {
            "role": "assistant", "model": "notifications/cancelled", "content": {"type": "text", "text": text}}})
        answer = wire.answer(5)
    assert answer["result"]["isError"] is False
    assert text in answer["result"]["content"][0]["text"]


def test_a_cancelled_call_is_never_answered_and_its_upstream_call_stops(tmp_path: Path) -> None:
    home = _home(tmp_path)
    marker = tmp_path / "hang"
    with served(home) as wire:
        wire.call(1, "mcp__fx__echo", {"message": "a"}, meta=ENVELOPE)
        wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "mcp__fx__hang", "arguments": {"marker": str(marker)}, "_meta": ENVELOPE}})
        _wait_for(lambda: Path(f"{marker}.started").exists())
        wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        _wait_for(marker.exists)  # the upstream server saw its call cancelled
        after = wire.call(3, "mcp__fx__echo", {"message": "after"}, meta=ENVELOPE)
        assert after["result"]["content"][0]["text"] == "Echo: after"
    assert all(message.get("id") != 2 for message in wire.seen)
    calls = recorded_calls(home, ":hang")
    [hung] = calls  # recorded as the SDK's path records a client cancel
    assert hung.status == "outcome_unknown"
    assert hung.result is not None and hung.result.error_code == "tool.cancelled"


def test_closing_stdin_answers_the_calls_in_flight_and_stops_upstream(tmp_path: Path) -> None:
    marker = tmp_path / "hang"
    with served(_home(tmp_path)) as wire:
        wire.call(1, "mcp__fx__echo", {"message": "a"}, meta=ENVELOPE)
        wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "mcp__fx__hang", "arguments": {"marker": str(marker)}, "_meta": ENVELOPE}})
        _wait_for(lambda: Path(f"{marker}.started").exists())
        assert wire.proc.stdin is not None
        wire.proc.stdin.close()
        answer = wire.answer(2)
        assert wire.proc.wait(DEADLINE_S) == 0
    assert answer["error"]["code"] == types.CONNECTION_CLOSED
    _wait_for(marker.exists)


def test_concurrent_calls_are_answered_each_under_its_own_id(tmp_path: Path) -> None:
    with served(_home(tmp_path)) as wire:
        wire.call(0, "mcp__fx__echo", {"message": "first"}, meta=ENVELOPE)
        for i in range(1, 9):  # sent before any is answered; slower ones first
            wire.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "mcp__fx__sleep", "arguments": {"seconds": (9 - i) / 20}, "_meta": ENVELOPE}})
        answers = {i: wire.answer(i) for i in range(1, 9)}
    for answer in answers.values():
        assert answer["result"]["isError"] is False, answer
    order = [message["id"] for message in wire.seen if message.get("id") in answers]
    assert order != sorted(order)  # they ran together: the shorter sleeps came back first


def _wait_for(condition: Any, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# -- the lane's reader never raises and takes only well-formed calls --------------------------------------------

class _NoServer:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the lane used the server ({name}) for a line it should not take")


async def _no_write(_data: bytes) -> None:
    raise AssertionError("the lane wrote for a line it should not take")


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=3), max_leaves=8)


@settings(derandomize=True, max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.binary(max_size=64),
    _json.map(lambda value: json.dumps(value).encode()),
    st.fixed_dictionaries({"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "method": st.just("tools/call")},
                          optional={"id": _json, "params": _json}).map(lambda value: json.dumps(value).encode()),
))
def test_lines_that_are_not_well_formed_calls_are_left_to_the_sdk(line: bytes) -> None:
    """Any line, before and after the era is settled: `take` never raises, and a line it takes is a JSON-RPC 2.0
    `tools/call` with an id and params object (which never happens here: the lane has no running loop, so a taken
    line would fail loudly)."""
    lane = StdioLane(_NoServer(), _no_write)
    assert lane.take(line) is False  # the era is not settled yet: nothing is taken
    lane._era = "legacy"  # settled, but the handshake did not happen: nothing is taken either
    assert lane.take(line) is False
    message = _loads(line)
    lane._era = "modern"
    well_formed = (isinstance(message, dict) and message.get("jsonrpc") == "2.0"
                   and message.get("method") == "tools/call" and isinstance(message.get("params"), dict)
                   and isinstance(message.get("id"), str | int) and not isinstance(message.get("id"), bool))
    if well_formed:
        return  # would be classified and served: covered by the process tests above
    assert lane.take(line) is False


def _loads(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


async def test_a_request_to_the_client_that_times_out_is_cancelled_and_its_late_answer_left_to_the_sdk() -> None:
    """A handshake-era request of the lane's with a timeout (no relay of tooldeck's sets one today, the SDK's
    dispatcher honours it): the caller gets the SDK's timeout error, the client `notifications/cancelled`, and an
    answer that comes after that is no longer the lane's."""
    written: list[dict[str, Any]] = []

    async def collect(data: bytes) -> None:
        written.append(json.loads(data))

    lane = StdioLane(_NoServer(), collect)
    with pytest.raises(MCPError) as raised:
        await lane.request("roots/list", None, {"timeout": 0.05})
    assert raised.value.error.code == types.REQUEST_TIMEOUT
    [request, cancel] = written
    assert request["method"] == "roots/list" and str(request["id"]).startswith(LANE_PREFIX)
    assert cancel == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": request["id"], "reason": "timed out"}}
    lane._era = "modern"  # past the opening: the lane looks at every line
    late = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}}).encode()
    assert lane.take(late) is False  # nobody waits for it: the SDK's dispatcher drops an unknown id
    asking = asyncio.ensure_future(lane.request("roots/list", None, {"timeout": 30}))
    while len(written) < 3:
        await asyncio.sleep(0)
    answer = json.dumps({"jsonrpc": "2.0", "id": written[2]["id"], "result": {"roots": []}}).encode()
    assert lane.take(answer) is True  # one that is waited for is the lane's
    assert await asyncio.wait_for(asking, 5) == {"roots": []}
