"""`tools/call` over stdio, served beside the SDK's JSON-RPC dispatcher instead of through it.

Every other message of a stdio connection goes to the SDK's server loop as before. A `tools/call` request is
taken off the wire where its line is read (`StdinMessages`) and handed straight to the SDK's `ServerRunner` (the
same kernel the dispatcher would call: the middleware chain of `faults.py` and `raw_arguments.py`, the params
check, the handler, the result's per-version shaping and `serverInfo` stamp), with a dispatch context of its own;
its answer is one JSON line written with orjson. What is skipped is what the dispatcher adds around the kernel on
a duplex pipe: pydantic models of every inbound and outbound frame, the replay task and memory streams between the
reader and the dispatcher, and a task group and cancel scope per request (together about a third of a served
call's CPU in `tooldeck serve`).

What the dispatcher did for a call, the lane does too:

- the era. The connection's first request decides it, as the SDK's `serve_dual_era_loop` decides: a 2026-07-28
  envelope on anything but `initialize` opens a modern connection (each call is classified on its own envelope,
  `classify_inbound_request`, and served on a born-ready `Connection` of that envelope, notifications only);
  anything else is the handshake era, and the lane takes calls only once `initialize` was answered with a result
  (the connection is then built from the client's `initialize` params and the negotiated version). Until then,
  and for every line it does not recognise, the SDK serves as before, errors included.
- `notifications/cancelled`: a call the lane runs is cancelled (interrupt) and never answered; the notification
  still reaches the SDK, which ignores an id it does not know.
- server-to-client requests of the handshake era (sampling, elicitation, roots, confirmation forms): written with
  ids of the lane's own (`tooldeck-lane-N`), their answers taken off the wire before the SDK sees them; a timeout or
  a cancel sends the client `notifications/cancelled`, as the SDK's dispatcher does. (The client's progress
  notifications about such a request are not routed to a callback: tooldeck's relays never ask for them.)
- progress and log notifications of a call ride the pipe as lines; shutdown (the client closed stdin) cancels the
  calls still running and answers them `Connection closed`, as the SDK's dispatcher does on the same event.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.server.connection import Connection, NotifyOnlyOutbound
from mcp.server.runner import ServerRunner, modern_error_data
from mcp.shared.dispatcher import CallOptions, as_request_id, coerce_request_id
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.transport_context import TransportContext
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, PROTOCOL_VERSION_META_KEY, REQUEST_TIMEOUT
from pydantic import ValidationError

from tooldeck.server.lane_kernel import (
    LaneContext,
    ModernKernels,
    error_object,
    json_object,
    release,
    tool_call,
)
from tooldeck.server.line_head import leading_id

logger = logging.getLogger("tooldeck.serve")

MESSAGE_TOO_LARGE = "serve.message_too_large"
"""`data.code` of the error that answers a line over `[serve] max_line_bytes` (`StdioLane.refuse`)."""
REFUSED_HEAD_BYTES = 64 * 1024
"""How far into a refused line its id is looked for (clients write it before the params; a scan of the whole
line, byte by byte, would hold the event loop for seconds)."""
LANE_PREFIX = "tooldeck-lane-"
"""Ids of the lane's own requests to the client (strings that never parse as the SDK's integer ids)."""
_LANE_MARK = b'"' + LANE_PREFIX.encode()
_CALL_MARK = b'"tools/call"'
_CANCEL_MARK = b'"notifications/cancelled"'
_INIT_MARK = b'"initialize"'
_SHUTDOWN_WRITE_S = 2.0
"""How long the `Connection closed` answers of calls cut short by the end of the connection may take."""
_PIPE = TransportContext(kind="stdio", can_send_request=True)
_PIPE_NO_REQUESTS = TransportContext(kind="stdio", can_send_request=False)

WriteFrame = Callable[[bytes], Awaitable[None]]


class _Outbound:
    """The connection's channel to the client: notifications, and (handshake era) requests with their answers."""

    def __init__(self, lane: StdioLane) -> None:
        self._lane = lane

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._lane.write(message)

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None,
                               opts: CallOptions | None = None) -> dict[str, Any]:
        return await self._lane.request(method, params, opts)


class _CallContext(LaneContext):
    """The `DispatchContext` of one `tools/call` the lane runs (the SDK dispatcher's per-request context)."""

    __slots__ = ("_closed", "_outbound", "modern", "request_id")

    message_metadata = None

    def __init__(self, outbound: _Outbound, request_id: types.RequestId, params: Mapping[str, Any],
                 modern: bool) -> None:
        super().__init__(params)
        self._outbound = outbound
        self.request_id = request_id
        self.modern = modern
        self._closed = False

    @property
    def transport(self) -> TransportContext:
        return _PIPE_NO_REQUESTS if self.modern else _PIPE

    @property
    def can_send_request(self) -> bool:
        return not (self.modern or self._closed)  # 2026-07-28 forbids server-initiated requests

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        if not self._closed:
            await self._outbound.notify(method, params, opts)

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None,
                               opts: CallOptions | None = None) -> dict[str, Any]:
        if not self.can_send_request:
            raise NoBackChannelError(method)
        return await self._outbound.send_raw_request(method, params, opts)

    def close(self) -> None:
        self._closed = True


class StdioLane:
    """Serves the `tools/call` requests of one stdio connection (see the module docstring)."""

    def __init__(self, server: Any, write_frame: WriteFrame, lifespan_state: Any = None) -> None:
        self._server = server
        self._write_frame = write_frame
        self._lifespan_state = {} if lifespan_state is None else lifespan_state
        self._outbound = _Outbound(self)
        self._era: str | None = None
        """None until the first request; "modern" (2026-07-28) or "legacy" (the handshake era)."""
        self._kernels = ModernKernels(server, self._lifespan_state, NotifyOnlyOutbound(self._outbound))
        self._legacy_runner: ServerRunner[Any] | None = None
        """The handshake era's kernel, once `initialize` was answered (its connection holds the client's params)."""
        self._initialize: dict[types.RequestId, Any] = {}
        """`initialize` requests seen (id → params) whose answer has not gone out yet."""
        self._running: dict[types.RequestId, tuple[asyncio.Task[None], _CallContext]] = {}
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._closed = False
        self._refusals: set[asyncio.Task[None]] = set()

    # -- the read side ----------------------------------------------------------------------------------------
    def take(self, line: bytes) -> bool:
        """Whether `line` was the lane's to serve (it never reaches the SDK then). Never raises: it runs in stdin's
        protocol callback, where an exception would close the connection; a line it cannot judge is the SDK's."""
        if self._closed:
            return False
        try:
            return self._take(line)
        except Exception:
            logger.exception("the stdio lane could not read a line; the SDK serves it")
            return False

    def _take(self, line: bytes) -> bool:
        if self._era is None or (self._legacy_runner is None and self._era == "legacy"):
            self._watch_opening(line)
            return False
        # The marks are only hints (a sampling answer's text may hold "tools/call"): each check parses and looks.
        if _CALL_MARK in line and self._call(line):
            return True
        if _LANE_MARK in line and self._pending and self._answer(line):
            return True
        if _CANCEL_MARK in line and self._running:
            self._cancel(line)
        return False

    def refuse(self, head: bytes, limit: int) -> None:
        """A line over `limit` bytes (`head`: its first bytes; the rest is never read): answered with a JSON-RPC
        error under the request's own id when its first 64 KiB name it (`line_head.leading_id`), else under a null id,
        as JSON-RPC has it for a request whose id cannot be read."""
        request_id = leading_id(head[:REFUSED_HEAD_BYTES])
        logger.warning("refused a message of more than %d bytes from the client (id %r): [serve] max_line_bytes",
                       limit, request_id)
        if self._closed:
            return
        answer = {"jsonrpc": "2.0", "id": request_id, "error": {
            "code": types.INVALID_REQUEST,
            "message": f"The message is larger than {limit} bytes (tooldeck serve's [serve] max_line_bytes); it "
                       "was not read. Send a smaller one: large content belongs in a file or a resource.",
            "data": {"code": MESSAGE_TOO_LARGE, "max_line_bytes": limit}}}
        task = asyncio.get_running_loop().create_task(self.write(answer))
        self._refusals.add(task)
        task.add_done_callback(self._refusals.discard)

    def _watch_opening(self, line: bytes) -> None:
        """Before the era is settled: note the first request's era and the handshake's `initialize`."""
        if self._era is not None and _INIT_MARK not in line:
            return
        message = json_object(line)
        if message is None or "method" not in message or as_request_id(message.get("id")) is None:
            return
        method, params = message["method"], message.get("params")
        if self._era is None:
            self._era = "modern" if method != "initialize" and _has_envelope(params) else "legacy"
        if self._era == "legacy" and method == "initialize" and isinstance(params, dict):
            self._initialize[coerce_request_id(message["id"])] = params

    def sent(self, message: Any) -> None:
        """The SDK wrote `message` (a JSON-RPC model): a successful answer to `initialize` opens the handshake
        era's lane."""
        if not self._initialize or self._legacy_runner is not None:
            return
        try:
            self._opened(message)
        except Exception:  # the lane stays closed: the SDK serves every call, as without it
            logger.exception("the stdio lane could not read the answer to initialize")

    def _opened(self, message: Any) -> None:
        request_id = getattr(message, "id", None)
        params = self._initialize.pop(coerce_request_id(request_id), None) if request_id is not None else None
        result = getattr(message, "result", None)
        if params is None or not isinstance(result, dict):
            return
        version = result.get("protocolVersion")
        try:
            client = types.InitializeRequestParams.model_validate(params, by_name=False)
        except ValidationError:
            return
        if not isinstance(version, str):
            return
        connection = Connection(self._outbound, protocol_version=version, client_params=client)
        self._legacy_runner = ServerRunner(self._server, connection, self._lifespan_state)
        self._initialize.clear()

    def _call(self, line: bytes) -> bool:
        call = tool_call(line)
        if call is None:
            return False  # malformed: the SDK answers it as it always has
        _message, request_id, params = call
        if self._era == "modern":
            route = classify_inbound_request({"method": "tools/call", "params": params})
            if isinstance(route, InboundLadderRejection):
                return False
            runner = self._kernels.runner(route)
        else:
            assert self._legacy_runner is not None
            runner = self._legacy_runner
        dctx = _CallContext(self._outbound, request_id, params, self._era == "modern")
        key = coerce_request_id(request_id)
        task = asyncio.get_running_loop().create_task(self._serve(runner, dctx, key, params))
        self._running[key] = (task, dctx)  # a duplicate id overwrites, as in the SDK's dispatcher
        return True

    def _answer(self, line: bytes) -> bool:
        message = json_object(line)
        request_id = message.get("id") if message is not None else None
        if not isinstance(request_id, str) or "method" in message:  # type: ignore[operator]
            return False
        waiter = self._pending.pop(request_id, None)
        if waiter is None:
            return False
        assert message is not None
        if not waiter.done():
            waiter.set_result(message)
        return True

    def _cancel(self, line: bytes) -> None:
        message = json_object(line)
        params = message.get("params") if message is not None else None
        if message is None or message.get("method") != "notifications/cancelled" or not isinstance(params, dict):
            return
        request_id = as_request_id(params.get("requestId"))
        running = self._running.get(coerce_request_id(request_id)) if request_id is not None else None
        if running is not None:
            task, dctx = running
            dctx.cancel_requested.set()
            task.cancel()

    # -- one call ---------------------------------------------------------------------------------------------
    async def _serve(self, runner: ServerRunner[Any], dctx: _CallContext, key: types.RequestId,
                     params: dict[str, Any]) -> None:
        answer: dict[str, Any] | None = None
        try:
            try:
                answer = {"result": await runner.on_request(dctx, "tools/call", params)}
            except (MCPError, ValidationError) as exc:
                answer = {"error": error_object(handler_exception_to_error_data(exc))}
            except Exception as exc:  # past the fault boundary: a fault of the kernel itself
                if dctx.modern:
                    answer = {"error": error_object(modern_error_data(exc))}
                else:
                    logger.exception("tools/call raised inside tooldeck serve")
                    answer = {"error": {"code": INTERNAL_ERROR, "message": "Internal error"}}
            finally:
                dctx.close()
                await release(runner)
                running = self._running.get(key)
                if running is not None and running[1] is dctx:
                    del self._running[key]
        except asyncio.CancelledError:
            if dctx.cancelled:
                return  # the client cancelled it: never answered
            answer = {"error": {"code": CONNECTION_CLOSED, "message": "Connection closed"}}
            with anyio.CancelScope(shield=True), anyio.move_on_after(_SHUTDOWN_WRITE_S):
                await self._reply(dctx.request_id, answer)
            raise
        if not dctx.cancelled:
            await self._reply(dctx.request_id, answer)

    async def _reply(self, request_id: types.RequestId, answer: dict[str, Any]) -> None:
        await self.write({"jsonrpc": "2.0", "id": request_id, **answer})

    async def write(self, message: dict[str, Any]) -> None:
        try:
            data = orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:  # a value orjson does not take (a handler's own object): the SDK's serializer takes it
            data = (types.jsonrpc_message_adapter.validate_python(message).model_dump_json(
                by_alias=True, exclude_unset=True) + "\n").encode()
        try:
            await self._write_frame(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            logger.debug("client gone; dropped %s", message.get("method") or f"the answer to {message.get('id')!r}")

    # -- requests to the client (handshake era) ---------------------------------------------------------------
    async def request(self, method: str, params: Mapping[str, Any] | None,
                      opts: CallOptions | None = None) -> dict[str, Any]:
        if self._closed:
            raise MCPError(code=CONNECTION_CLOSED, message="Connection closed")
        request_id = f"{LANE_PREFIX}{next(self._ids)}"
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = waiter
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        timeout = (opts or {}).get("timeout")
        try:
            await self.write(message)
            async with asyncio.timeout(timeout):
                reply = await waiter
        except BaseException as exc:
            if self._pending.pop(request_id, None) is not None and not self._closed:
                reason = "timed out" if isinstance(exc, TimeoutError) else "caller cancelled"
                with anyio.CancelScope(shield=True), anyio.move_on_after(_SHUTDOWN_WRITE_S):
                    await self._outbound.notify("notifications/cancelled",
                                                {"requestId": request_id, "reason": reason})
            if isinstance(exc, TimeoutError):
                raise MCPError(code=REQUEST_TIMEOUT, message=f"Request {method!r} timed out") from None
            raise
        error = reply.get("error")
        if isinstance(error, dict):
            raise MCPError.from_error_data(types.ErrorData.model_validate(error))
        result = reply.get("result")
        if not isinstance(result, dict):
            raise MCPError(code=types.INVALID_REQUEST, message=f"the client's answer to {method} has no result")
        return result

    # -- the end of the connection ----------------------------------------------------------------------------
    async def aclose(self) -> None:
        """The connection ended: cancel the calls still running (answered `Connection closed`), wake the waiters
        of requests to the client."""
        self._closed = True
        for waiter in self._pending.values():
            if not waiter.done():
                waiter.set_exception(MCPError(code=CONNECTION_CLOSED, message="Connection closed"))
        self._pending.clear()
        tasks = [task for task, _ in self._running.values()]
        for task in tasks:
            task.cancel()
        if tasks:  # their `Connection closed` answers go out before the write side closes
            with anyio.CancelScope(shield=True):
                await asyncio.wait(tasks, timeout=_SHUTDOWN_WRITE_S * 2)


def _has_envelope(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta
