"""A 2026-07-28 `tools/call` POST is served beside the SDK's single-exchange handler (`server/http_lane.py`): its
answers are the ones the SDK's path gives (status, content type, JSON-RPC message; notifications as an event
stream), the client closing the connection cancels the call, and whatever the SDK would refuse is still the SDK's
to refuse. Real `tooldeck serve --http` processes spoken to with raw HTTP/1.1, so exact bytes are seen; the
fixture server proxied over stdio.

The SDK's own path for the same request is reached by adding an `Mcp-Session-Id` header: a 2026-07-28 request
goes to the SDK's modern handler whatever its session id, and the lane leaves requests with one to the SDK."""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import mcp_types as types
import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.server.support import (
    TOOLDECK,
    RawResponse,
    exchange,
    http_request,
    read_response,
    recorded_calls,
    served_process,
)
from tests.server.test_stdio_lane import ENVELOPE, MODERN, _home, _wait_for
from tooldeck.server.address import MCP_PATH
from tooldeck.server.connections import CONNECTION_KEY
from tooldeck.server.http_lane import HttpLane, _corked

SDK_PATH = [("Mcp-Session-Id", "sdk-path")]
"""Added to a request, it takes the SDK's path instead of the lane (see the module docstring)."""


def _headers(name: str, extra: list[tuple[str, str]] | None = None, method: str = "tools/call"
             ) -> list[tuple[str, str]]:
    return [("Host", "127.0.0.1"), ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"), ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", method), ("Mcp-Name", name), *(extra or [])]


def _call(request_id: Any, name: str, arguments: Any, meta: dict[str, Any] | None = None) -> bytes:
    params: dict[str, Any] = {"name": name, "_meta": ENVELOPE if meta is None else meta}
    if arguments is not None:
        params["arguments"] = arguments
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


def _post(port: int, body: bytes, headers: list[tuple[str, str]], timeout: float = 30.0) -> RawResponse:
    """The whole answer to a POST: an event stream is read until the server ends it after the answer (both paths
    do), however long a busy machine leaves between its events."""
    response = exchange(port, http_request("POST", MCP_PATH, headers, body), timeout, stream_wait=timeout)
    assert response is not None, "the server closed the connection without answering"
    return response


def _served(tmp_path: Path, relay: bool = False, argv: list[str] | None = None):  # type: ignore[no-untyped-def]
    home = _home(tmp_path, relay)
    command = argv or [TOOLDECK]
    return served_process([*command, "serve", "--home", str(home), "--http", "127.0.0.1:0"]), home


# -- the same answers as the SDK's path ------------------------------------------------------------------------

CASES: list[tuple[str, Any]] = [
    ("mcp__fx__echo", {"message": "héllo"}),  # a result (non-ASCII: see below)
    ("mcp__fx__weather", {"city": "Oslo"}),  # structured content under an output schema
    ("mcp__fx__fail", {"reason": "no"}),  # a tool error (isError)
    ("mcp__fx__echo", {"message": 7}),  # arguments the gate refuses
    ("mcp__fx__echo", [1, 2]),  # non-object arguments: a tool result, not -32602 (raw_arguments.py)
    ("mcp__fx__echo", None),  # no arguments at all
    ("no_such_tool", {}),  # the protocol error of an unknown tool (its mapped HTTP status)
]


@pytest.mark.parametrize(("name", "arguments"), CASES)
def test_a_call_gets_the_answer_the_sdk_path_gives(tmp_path: Path, name: str, arguments: Any) -> None:
    served, _home_dir = _served(tmp_path)
    with served as server:
        body = _call(7, name, arguments)
        lane = _post(server.port, body, _headers(name))
        sdk = _post(server.port, body, _headers(name, SDK_PATH))
    assert (lane.status, lane.headers["content-type"]) == (sdk.status, sdk.headers["content-type"])
    assert lane.headers["content-type"] == "application/json"
    assert int(lane.headers["content-length"]) == len(lane.body)
    assert lane.json() == sdk.json()
    if name == "mcp__fx__echo" and arguments == {"message": "héllo"}:
        # Which path answered is visible in the bytes: the SDK escapes non-ASCII text, the lane writes UTF-8.
        assert "héllo".encode() in lane.body and b"h\\u00e9llo" in sdk.body


def test_an_unknown_tool_is_the_sdks_protocol_error_with_its_status(tmp_path: Path) -> None:
    served, _home_dir = _served(tmp_path)
    with served as server:
        answer = _post(server.port, _call("u", "no_such_tool", {}), _headers("no_such_tool"))
    message = answer.json()
    assert isinstance(message, dict) and message["id"] == "u"
    assert message["error"]["code"] == types.INVALID_PARAMS and "no_such_tool" in message["error"]["message"]


REFUSED: list[tuple[str, dict[str, Any] | None, list[tuple[str, str]], int]] = [
    ("no capabilities in the envelope", {k: v for k, v in ENVELOPE.items() if "Capabilities" not in k}, [],
     types.INVALID_PARAMS),
    ("an unsupported version", {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"},
     [], types.HEADER_MISMATCH),
    ("a method header that disagrees", None, [("Mcp-Method", "tools/list")], types.HEADER_MISMATCH),
    ("a name header that disagrees", None, [("Mcp-Name", "mcp__fx__other")], types.HEADER_MISMATCH),
]


@pytest.mark.parametrize(("why", "meta", "extra", "code"), REFUSED, ids=[case[0] for case in REFUSED])
def test_what_the_sdk_refuses_it_still_refuses(tmp_path: Path, why: str, meta: dict[str, Any] | None,
                                               extra: list[tuple[str, str]], code: int) -> None:
    served, _home_dir = _served(tmp_path)
    headers = _headers("mcp__fx__echo")
    headers = [h for h in headers if h[0] not in {name for name, _ in extra}]
    headers += extra
    with served as server:
        body = _call(3, "mcp__fx__echo", {"message": "x"}, meta)
        lane = _post(server.port, body, headers)
        sdk = _post(server.port, body, headers + SDK_PATH)
    assert (lane.status, lane.json()) == (sdk.status, sdk.json())
    message = lane.json()
    assert isinstance(message, dict) and message["error"]["code"] == code, (why, message)


# -- notifications: an event stream, as the SDK's path writes it ---------------------------------------------

def test_progress_makes_an_event_stream_with_the_answer_last(tmp_path: Path) -> None:
    served, _home_dir = _served(tmp_path, relay=True)
    meta = {**ENVELOPE, "progressToken": "p-1"}
    with served as server:
        body = _call(5, "mcp__fx__steps", {"label": "s", "count": 3}, meta)
        lane = _post(server.port, body, _headers("mcp__fx__steps"))
        sdk = _post(server.port, body, _headers("mcp__fx__steps", SDK_PATH))
    assert lane.status == sdk.status == 200
    assert lane.headers["content-type"] == sdk.headers["content-type"] == "text/event-stream"
    lane_events = [orjson.loads(e) for e in lane.events]
    assert lane_events == [orjson.loads(e) for e in sdk.events]
    *progress, last = lane_events
    assert [(p["method"], p["params"]["progressToken"], p["params"]["progress"]) for p in progress] == [
        ("notifications/progress", "p-1", i) for i in (1, 2, 3)]
    assert last["id"] == 5 and last["result"]["content"][0]["text"] == "s done"


PINGING_SERVE = ("import sys, tooldeck.server.http_lane as lane; lane.SSE_PING_S = 0.25; "
                 "from tooldeck.cli import main; sys.argv[0] = 'tooldeck'; main()")


def test_a_silent_call_commits_to_an_event_stream_and_pings_until_its_answer(tmp_path: Path) -> None:
    served, _home_dir = _served(tmp_path, argv=[sys.executable, "-c", PINGING_SERVE])
    with served as server:
        quick = _post(server.port, _call(1, "mcp__fx__echo", {"message": "a"}), _headers("mcp__fx__echo"))
        slow = _post(server.port, _call(2, "mcp__fx__sleep", {"seconds": 1.2}), _headers("mcp__fx__sleep"))
    assert quick.headers["content-type"] == "application/json"  # answered inside the window: JSON
    assert slow.status == 200 and slow.headers["content-type"] == "text/event-stream"
    assert slow.body.count(b": ping\r\n\r\n") >= 2
    [answer] = [orjson.loads(e) for e in slow.events]
    assert answer["id"] == 2 and answer["result"]["content"][0]["text"] == "slept 1.2"
    assert slow.body.endswith(b"\r\n\r\n") and slow.body.index(b"data:") > slow.body.index(b": ping")


# -- the client going away cancels the call --------------------------------------------------------------------

def test_closing_the_connection_cancels_the_call_upstream_and_records_it(tmp_path: Path) -> None:
    marker = tmp_path / "hang"
    served, home = _served(tmp_path)
    with served as server:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        sock.sendall(http_request("POST", MCP_PATH, _headers("mcp__fx__hang"),
                                  _call(9, "mcp__fx__hang", {"marker": str(marker)})))
        _wait_for(lambda: Path(f"{marker}.started").exists())
        sock.close()
        _wait_for(marker.exists)  # the upstream server saw its call cancelled
        after = _post(server.port, _call(10, "mcp__fx__echo", {"message": "after"}), _headers("mcp__fx__echo"))
    assert after.json()["result"]["content"][0]["text"] == "Echo: after"  # type: ignore[index]
    calls = recorded_calls(home, ":hang")
    [hung] = calls
    assert hung.status == "outcome_unknown"
    assert hung.result is not None and hung.result.error_code == "tool.cancelled"


def test_a_client_that_pipelined_a_second_request_and_closed_still_cancels_the_first(tmp_path: Path) -> None:
    """uvicorn stops reading a connection whose client sent its next request before the answer (pipelining); the
    lane still sees the client close, as the SDK's disconnect watcher does."""
    marker = tmp_path / "hang"
    served, _home_dir = _served(tmp_path)
    with served as server:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        sock.sendall(http_request("POST", MCP_PATH, _headers("mcp__fx__hang"),
                                  _call(1, "mcp__fx__hang", {"marker": str(marker)}))
                     + http_request("POST", MCP_PATH, _headers("mcp__fx__echo"),
                                    _call(2, "mcp__fx__echo", {"message": "next"})))
        _wait_for(lambda: Path(f"{marker}.started").exists())
        sock.close()
        _wait_for(marker.exists)  # the upstream server saw its call cancelled


def test_concurrent_calls_on_their_own_connections_get_their_own_answers(tmp_path: Path) -> None:
    served, _home_dir = _served(tmp_path)
    answers: dict[int, Any] = {}
    with served as server:
        def one(i: int) -> None:
            body = _call(i, "mcp__fx__sleep", {"seconds": (6 - i) / 10})
            answers[i] = _post(server.port, body, _headers("mcp__fx__sleep")).json()

        threads = [threading.Thread(target=one, args=(i,)) for i in range(1, 6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert sorted(answers) == [1, 2, 3, 4, 5]
    for i, answer in answers.items():
        assert answer["id"] == i and answer["result"]["content"][0]["text"] == f"slept {(6 - i) / 10}"


def test_a_kept_alive_connection_serves_one_call_after_another(tmp_path: Path) -> None:
    served, _home_dir = _served(tmp_path)
    with served as server, socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        texts = []
        for i in range(3):
            sock.sendall(http_request("POST", MCP_PATH, _headers("mcp__fx__echo"),
                                      _call(i, "mcp__fx__echo", {"message": f"m{i}"})))
            response = read_response(sock)
            assert response is not None and not response.closed
            texts.append(response.json()["result"]["content"][0]["text"])  # type: ignore[index]
    assert texts == ["Echo: m0", "Echo: m1", "Echo: m2"]


# -- which requests are the lane's (in process) ----------------------------------------------------------------

class _Schemas:
    """A server stand-in: `get_tool_input_schema` as `tooldeck serve` sets it."""

    def __init__(self, schema: dict[str, Any] | None = None) -> None:
        self.schema = schema

    def get_tool_input_schema(self, name: str) -> dict[str, Any] | None:
        return self.schema


def _scope(headers: list[tuple[str, str]], path: str = MCP_PATH) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
            CONNECTION_KEY: object()}


async def _no_receive() -> dict[str, Any]:
    return {"type": "http.disconnect"}


def test_the_lane_takes_a_well_formed_call_and_leaves_the_rest() -> None:
    lane = HttpLane(_Schemas())
    body = _call("a", "mcp__fx__echo", {"message": "x"})
    taken = lane.prepare(_scope(_headers("mcp__fx__echo")), _no_receive, body)
    assert taken is not None and taken.request_id == "a" and taken.params["name"] == "mcp__fx__echo"
    left = {
        "another path": lane.prepare(_scope(_headers("mcp__fx__echo"), "/other"), _no_receive, body),
        "a handshake-era version": lane.prepare(_scope([*_headers("mcp__fx__echo")[:3],
                                                         ("MCP-Protocol-Version", "2025-11-25")]), _no_receive, body),
        "no version header": lane.prepare(_scope(_headers("mcp__fx__echo")[:3]), _no_receive, body),
        "a session id": lane.prepare(_scope(_headers("mcp__fx__echo", SDK_PATH)), _no_receive, body),
        "json only accepted": lane.prepare(_scope([h for h in _headers("mcp__fx__echo") if h[0] != "Accept"] + [
            ("Accept", "application/json")]), _no_receive, body),
        "a boolean id": lane.prepare(_scope(_headers("mcp__fx__echo")), _no_receive,
                                     body.replace(b'"id": "a"', b'"id": true')),
        "a batch": lane.prepare(_scope(_headers("mcp__fx__echo")), _no_receive, b"[" + body + b"]"),
        "no connection": lane.prepare({k: v for k, v in _scope(_headers("mcp__fx__echo")).items()
                                       if k != CONNECTION_KEY}, _no_receive, body),
    }
    assert {why: call for why, call in left.items() if call is not None} == {}


ANNOTATED = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}


def test_param_headers_the_sdk_would_refuse_are_left_to_it() -> None:
    lane = HttpLane(_Schemas(ANNOTATED))
    body = _call(1, "geo", {"region": "eu"})
    assert lane.prepare(_scope(_headers("geo", [("Mcp-Param-Region", "eu")])), _no_receive, body) is not None
    assert lane.prepare(_scope(_headers("geo", [("Mcp-Param-Region", "us")])), _no_receive, body) is None
    assert lane.prepare(_scope(_headers("geo")), _no_receive, body) is None  # the header is missing
    plain = HttpLane(_Schemas({"type": "object", "properties": {"region": {"type": "string"}}}))
    assert plain.prepare(_scope(_headers("geo", [("Mcp-Param-Region", "us")])), _no_receive, body) is not None


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                 max_size=3), max_leaves=12)


_HEADER_NAMES = ["Accept", "Content-Type", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Param-X", "X-Other"]
_params = st.one_of(_json, *[st.fixed_dictionaries({"name": st.sampled_from(["x", "y"]), "_meta": st.just(ENVELOPE)},
                                                 optional={"arguments": _json})] * 3)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.one_of(st.binary(max_size=200), _json.map(lambda v: json.dumps(v).encode()),
                      st.fixed_dictionaries({"jsonrpc": st.sampled_from(["2.0", "2.0", "1.0", 2]),
                                             "id": st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(max_size=5),
                                                             _json),
                                             "method": st.sampled_from(["tools/call", "tools/call", "tools/list"]),
                                             "params": _params}).map(lambda v: json.dumps(v).encode())),
       headers=st.just([]) | st.lists(st.tuples(st.sampled_from(_HEADER_NAMES),
                                                st.text(st.characters(min_codepoint=32, max_codepoint=126),
                                                        max_size=20)), max_size=3))
def test_prepare_never_raises_and_takes_only_modern_tool_calls(body: bytes, headers: list[tuple[str, str]]) -> None:
    taken = HttpLane(_Schemas(ANNOTATED)).prepare(_scope(_headers("x") + headers), _no_receive,
                                                   body + b'"tools/call"' if b'"tools/call"' not in body else body)
    event("taken" if taken is not None else "left to the SDK")
    if taken is not None:
        message = orjson.loads(body)
        assert message["method"] == "tools/call" and message["jsonrpc"] == "2.0"
        assert message["id"] == taken.request_id and not isinstance(taken.request_id, bool)
        assert taken.params == message["params"] and taken.route.protocol_version == MODERN


def test_a_corked_answer_leaves_in_one_piece() -> None:
    """The head and body of a JSON answer are two writes (uvicorn's); corked, nothing leaves before the body."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        sender = socket.create_connection(listener.getsockname())
        receiver, _ = listener.accept()
        with sender, receiver:
            sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as asyncio's transports set it
            sender.sendall(b"plain ")  # uncorked: it is there at once
            assert select.select([receiver], [], [], 5)[0] and receiver.recv(100) == b"plain "
            with _corked(sender):
                sender.sendall(b"head ")
                assert select.select([receiver], [], [], 0.1)[0] == []  # held back (TCP_CORK holds up to 200 ms)
                sender.sendall(b"body")
            received = b""
            while len(received) < len(b"head body") and select.select([receiver], [], [], 5)[0]:
                received += receiver.recv(100)
    assert received == b"head body"
