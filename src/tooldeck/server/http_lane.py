"""`tools/call` over streamable HTTP at 2026-07-28, served beside the SDK's single-exchange handler.

The gateway (`gateway.py`) has read the POST's body; when it is a 2026-07-28 `tools/call` the SDK would serve
(`HttpLane.prepare`: the SDK's own checks, in its order, all passed), the lane runs it on the SDK's server kernel
(`ServerRunner`: the middleware chain of `faults.py` and `raw_arguments.py`, the params check, the handler, the
result's shaping and `serverInfo` stamp) and writes the answer itself. Anything else - another method, another era,
a request the SDK would refuse (it refuses it, with its own status and text) - goes to the SDK as before.

What the SDK's handler (`mcp/server/_streamable_http_modern.py`) does for such a call, the lane does too:

- the answer is `application/json` (the JSON-RPC error statuses mapped as the SDK maps them) unless the handler
  sends a notification (progress, log) before it finishes, or runs silent for `SSE_PING_S`: then the response
  commits to `text/event-stream`, carries the notifications as events, a `: ping` comment after every
  `SSE_PING_S` of silence, and the answer as the last event;
- the client closing the connection cancels the call (at 2026-07-28 that is how a client cancels over HTTP); it is
  recorded as cancelled and nothing is written;
- no requests to the client (the era forbids them: `NoBackChannelError`).

What it skips is the machinery around the kernel, per request: a starlette app and router, the SDK's session
manager, a pydantic model of the request and of the answer, a task group with a handler task and a disconnect
watcher task, a memory stream and a timeout scope (together more than a third of a served HTTP call's CPU).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.server.runner import modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
    X_MCP_HEADER_KEY,
    InboundLadderRejection,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from tooldeck.server.address import MCP_PATH
from tooldeck.server.connections import CONNECTION_KEY
from tooldeck.server.lane_kernel import LaneContext, ModernKernels, error_object, release, tool_call

logger = logging.getLogger("tooldeck.serve")

SSE_PING_S = 15.0
"""Silence before the response commits to `text/event-stream`, and between its keep-alive pings (the SDK's)."""
_CALL_MARK = b'"tools/call"'
_PARAM_PREFIX = MCP_PARAM_HEADER_PREFIX.lower()
_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower()
_LEGACY_VERSIONS = frozenset(HANDSHAKE_PROTOCOL_VERSIONS)
_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform"),
                (b"connection", b"keep-alive"), (b"x-accel-buffering", b"no")]
_PING = b": ping\r\n\r\n"
_HEADER_KEY = orjson.dumps(X_MCP_HEADER_KEY)
_SCHEMAS_KEPT = 1024
_TCP_CORK: int | None = getattr(socket, "TCP_CORK", None)


@dataclass(frozen=True, slots=True)
class LaneCall:
    """A POST the lane serves: the request, its id, its params and its envelope."""

    request: Request
    request_id: types.RequestId
    params: dict[str, Any]
    route: InboundModernRoute


class HttpLane:
    """Serves the 2026-07-28 `tools/call` POSTs of `tooldeck serve --http` (see the module docstring)."""

    def __init__(self, server: Any, lifespan_state: Any = None) -> None:
        self._server = server
        self._kernels = ModernKernels(server, {} if lifespan_state is None else lifespan_state)
        self._schemas: dict[int, tuple[Mapping[str, Any], bool]] = {}

    def prepare(self, scope: Scope, receive: Receive, body: bytes) -> LaneCall | None:
        """The call when this POST is the lane's; None leaves it to the SDK. Never raises: a request it cannot
        judge is the SDK's."""
        if _CALL_MARK not in body or CONNECTION_KEY not in scope or scope.get("path") != MCP_PATH:
            return None
        try:
            return self._prepare(scope, receive, body)
        except Exception:
            logger.exception("the HTTP lane could not read a request; the SDK serves it")
            return None

    def _prepare(self, scope: Scope, receive: Receive, body: bytes) -> LaneCall | None:
        # The SDK's checks in its order (`handle_modern_request`); where one would refuse, the SDK is left to.
        request = Request(scope, receive)
        headers = request.headers  # one parse of the headers, for every check below and the handler's context
        version = headers.get(_VERSION_HEADER)
        if version is None or version in _LEGACY_VERSIONS or "mcp-session-id" in headers:
            return None  # the SDK's handshake-era transport (or a session id, which this era never carries)
        content_type = headers.get("content-type")
        if content_type is None or not content_type.lower().startswith("application/json"):
            return None
        has_json, has_sse = check_accept_headers(request)
        if not (has_json and has_sse):
            return None
        call = tool_call(body)
        if call is None:
            return None
        message, request_id, params = call
        if find_duplicated_routing_header(headers.items()) is not None:
            return None
        route = classify_inbound_request(message, headers=dict(headers))
        if isinstance(route, InboundLadderRejection) or self._param_headers_refused(params, headers):
            return None
        return LaneCall(request, request_id, params, route)

    def _param_headers_refused(self, params: dict[str, Any], headers: Headers) -> bool:
        """The SDK's `Mcp-Param-*` check of a `tools/call` (the called tool's schema against the headers); True also
        where the SDK would look the schema up another way (then it decides)."""
        lookup = self._server.get_tool_input_schema
        if lookup is None:
            return True
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or (arguments is not None and not isinstance(arguments, dict)):
            return False
        if not arguments and not any(key.startswith(_PARAM_PREFIX) for key in headers):
            return False
        schema = lookup(name)
        if schema is None or not self._declares_headers(schema):
            return False  # nothing annotated: the SDK's check passes whatever the headers say
        return validate_mcp_param_headers(schema, arguments or {}, headers) is not None

    def _declares_headers(self, schema: Mapping[str, Any]) -> bool:
        """Whether `schema` may carry an `x-mcp-header` annotation (its text names the key), per schema object."""
        known = self._schemas.get(id(schema))
        if known is not None and known[0] is schema:
            return known[1]
        try:
            declares = _HEADER_KEY in orjson.dumps(schema)
        except TypeError:
            declares = True
        if len(self._schemas) >= _SCHEMAS_KEPT:
            self._schemas.clear()
        self._schemas[id(schema)] = (schema, declares)
        return declares

    async def run(self, call: LaneCall, scope: Scope, send: Send) -> None:
        """Serve `call` and write its answer; a client that goes away cancels it (nothing is written)."""
        connection = scope[CONNECTION_KEY]
        exchange = _Exchange(call, send, connection.transport.get_extra_info("socket"))
        with anyio.CancelScope() as cancel:
            if not connection.watch_lost(cancel.cancel):
                return
            exchange.arm()  # the first ping's window
            runner = self._kernels.runner(call.route)
            try:
                try:
                    answer: dict[str, Any] = {"result": await runner.on_request(exchange, "tools/call", call.params)}
                except Exception as exc:  # the SDK's exception-to-wire mapping for this era
                    answer = {"error": error_object(modern_error_data(exc))}
                finally:
                    exchange.settle()
                    await release(runner)
                await exchange.answer(answer)
            finally:
                connection.unwatch_lost()


class _Exchange(LaneContext):
    """The `DispatchContext` of one call (the SDK's `_SingleExchangeDispatchContext`), and its response: JSON, or
    an event stream once the handler notifies or runs silent for `SSE_PING_S`."""

    __slots__ = ("_lock", "_pinger", "_send", "_settled", "_socket", "_streaming", "_timer", "message_metadata",
                 "request_id", "transport")

    can_send_request = False

    def __init__(self, call: LaneCall, send: Send, sock: Any) -> None:
        super().__init__(call.params)
        request = call.request
        self._socket = sock
        self.request_id = call.request_id
        self.transport = TransportContext(kind="streamable-http", can_send_request=False, headers=request.headers)
        self.message_metadata = ServerMessageMetadata(request_context=request)
        self._send = send
        self._streaming = False
        self._settled = False
        self._timer: asyncio.TimerHandle | None = None
        self._pinger: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None

    # -- the DispatchContext ------------------------------------------------------------------------------------
    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None,
                               opts: CallOptions | None = None) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        if self._settled:  # after the handler returned (the SDK's closed sink): dropped
            logger.debug("dropped %s: the call is answered", method)
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._event(_sse_event(message))

    # -- the response -------------------------------------------------------------------------------------------
    def settle(self) -> None:
        """The handler is done: no more notifications, no more pings."""
        self._settled = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def answer(self, answer: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "id": self.request_id, **answer}
        if self._pinger is not None:  # a ping may have just committed the stream
            await asyncio.shield(self._pinger)
        if self._streaming:
            await self._event(_sse_event(message), last=True)
            return
        error = answer.get("error")
        status = ERROR_CODE_HTTP_STATUS.get(error.get("code"), 200) if isinstance(error, dict) else 200
        body = _dumps(message)
        # uvicorn writes the head and the body with a send() each: two segments, and a client that wakes for the
        # head only to wait for the body. Corked, they leave as one.
        with _corked(self._socket):
            await self._send({"type": "http.response.start", "status": status,
                              "headers": [(b"content-type", b"application/json"),
                                          (b"content-length", str(len(body)).encode())]})
            await self._send({"type": "http.response.body", "body": body})

    async def _event(self, event: bytes, last: bool = False) -> None:
        """One write of the event stream, committing it first; pings and the handler's events take turns."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if not self._streaming:
                self._streaming = True
                await self._send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
            await self._send({"type": "http.response.body", "body": event, "more_body": not last})
        if not self._settled:
            self.arm()

    def arm(self) -> None:
        """`SSE_PING_S` from now: commit to an event stream (if not yet) and ping."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(SSE_PING_S, self._ping_due)

    def _ping_due(self) -> None:
        self._timer = None
        if not self._settled and (self._pinger is None or self._pinger.done()):
            self._pinger = asyncio.get_running_loop().create_task(self._ping())

    async def _ping(self) -> None:
        try:
            await self._event(_PING)
        except Exception as exc:  # the client went away: the lost connection cancels the call
            logger.debug("SSE ping not sent: %s", exc)


@contextmanager
def _corked(sock: Any) -> Iterator[None]:
    """Hold what is written to `sock` until the block ends (TCP_CORK; nothing where there is none)."""
    corked = _cork(sock, 1)
    try:
        yield
    finally:
        if corked:
            _cork(sock, 0)


def _cork(sock: Any, on: int) -> bool:
    if _TCP_CORK is None or sock is None:
        return False
    try:
        sock.setsockopt(socket.IPPROTO_TCP, _TCP_CORK, on)
    except OSError:  # not a TCP socket, or already closed
        return False
    return True


def _dumps(message: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(message)
    except TypeError:  # an integer past 64 bits, say: the SDK's serializer takes it
        return json.dumps(message, separators=(",", ":")).encode()


def _sse_event(message: dict[str, Any]) -> bytes:
    return b"event: message\r\ndata: " + _dumps(message) + b"\r\n\r\n"
