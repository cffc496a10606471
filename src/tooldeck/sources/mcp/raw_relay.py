"""A proxied `tools/call` sent on the upstream transport directly, beside the SDK's `ClientSession`.

`tooldeck serve` relays calls it has already gated, permitted and recorded; the SDK client would add a
full round of its own machinery to each one (request and result models, the dispatcher's pending stream and
OpenTelemetry span, the result adapter). `RawChannel` sits between a connection's transport and its
session: `call` writes the JSON-RPC request itself, with an id the session never uses (a string with
`RAW_PREFIX`; the SDK numbers its own requests), and the channel takes the matching response — and the
progress notifications of that request's token — off the read stream before the session sees them.
Everything else (notifications, server requests such as sampling or elicitation, the session's own
responses) passes through unchanged, so the relays of `callbacks.py` and the session's own calls keep
working.

What the SDK path does and this keeps: the session's stamp (`_meta` and headers of the negotiated protocol),
the call timeout (then `notifications/cancelled` and the SDK's `REQUEST_TIMEOUT` error), the courtesy
`notifications/cancelled` when the caller is cancelled, `CONNECTION_CLOSED` when the transport ends, error
responses as `MCPError`. What is left to the caller (`client.ServerConnection.call_tool`): results that
are not a plain `CallToolResult` (a 2026-07-28 `InputRequiredResult`, a header mismatch) go back to the
SDK's own driver.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

from tooldeck.deadline import Deadline

log = logging.getLogger("tooldeck.mcp")

RAW_PREFIX = "tooldeck-relay-"
"""Request ids of the relayed calls: strings, where the SDK's `ClientSession` numbers its requests."""
CANCEL_WRITE_S = 2.0
"""How long the courtesy `notifications/cancelled` may wait for a blocked transport."""

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
Stamp = Callable[[dict[str, Any], dict[str, Any]], None]


class RequestNotSent(Exception):
    """The connection closed before the request's answer, and its transport knows the request never left: no
    connection to the server could be made for it (`cause`). Nothing of it reached the server."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"the request was not sent: {cause!r}")
        self.cause = cause


class RawChannel:
    """The read stream a `JSONRPCDispatcher` reads, minus the replies to `call`'s requests.

    A stream-protocol wrapper (receive, async iteration, async context, `last_context` of a context stream)
    around the transport's read stream; `call` writes on the transport's write stream.
    """

    __slots__ = ("_closed", "_ids", "_inner", "_pending", "_progress", "_send_raw", "_write", "on_end", "unsent")

    def __init__(self, read_stream: Any, write_stream: Any) -> None:
        self.on_end: Callable[[], None] | None = None
        """Called once when the read stream ends or is closed (the connection is over, whoever ended it)."""
        self.unsent: Callable[[str], BaseException | None] | None = None
        """For a request id: the error that kept the request from leaving at all (`Evidence.unsent`), if any."""
        self._inner = read_stream
        self._write = write_stream
        self._pending: dict[str, asyncio.Future[dict[str, Any] | MCPError]] = {}
        self._progress: dict[str, ProgressFn] = {}
        self._ids = itertools.count(1)
        self._closed = False
        # The stdio pipes (`stdio_pipes.py`) offer the lines of relayed calls before parsing them, and write
        # a plain object; other transports go through `_taken` and `send`.
        if hasattr(read_stream, "taker"):
            read_stream.taker = self._take_raw
        self._send_raw = getattr(write_stream, "send_raw", None)

    # -- the read side (the dispatcher's loop) ------------------------------------------------------
    @property
    def last_context(self) -> Any:
        """The sender's context of the last item, where the transport keeps one (the dispatcher reads it)."""
        return getattr(self._inner, "last_context", None)

    def _taken(self, item: Any) -> bool:
        """True when `item` belongs to a relayed call (and was delivered to it)."""
        if not self._pending or not isinstance(item, SessionMessage):
            return False
        msg = item.message
        if isinstance(msg, JSONRPCResponse | JSONRPCError):
            future = self._pending.pop(msg.id, None) if isinstance(msg.id, str) else None
            if future is None:
                return False
            if not future.done():
                error = msg.error if isinstance(msg, JSONRPCError) else None
                future.set_result(msg.result if error is None else  # type: ignore[union-attr]
                                  MCPError(code=error.code, message=error.message, data=error.data))
            return True
        if isinstance(msg, JSONRPCNotification) and msg.method == "notifications/progress" and msg.params:
            return self._on_progress(msg.params)
        return False

    def _take_raw(self, data: dict[str, Any]) -> bool:
        """`_taken` for a decoded line of the stdio pipes; what is not well-formed is left to the SDK's parse."""
        if data.get("jsonrpc") != "2.0":
            return False
        if "method" in data:
            params = data.get("params")
            if data["method"] == "notifications/progress" and "id" not in data and isinstance(params, dict):
                return self._on_progress(params)
            return False
        request_id = data.get("id")
        future = self._pending.get(request_id) if isinstance(request_id, str) else None
        if future is None:
            return False
        if "result" in data:
            result = data["result"]
            if "error" in data or not isinstance(result, dict):
                return False
            outcome: dict[str, Any] | MCPError = result
        else:
            error = data.get("error")
            if not isinstance(error, dict):
                return False
            code, message = error.get("code"), error.get("message")
            if type(code) is not int or not isinstance(message, str):
                return False
            outcome = MCPError(code=code, message=message, data=error.get("data"))
        del self._pending[request_id]
        if not future.done():
            future.set_result(outcome)
        return True

    def _on_progress(self, params: dict[str, Any]) -> bool:
        token = params.get("progressToken")
        on_progress = self._progress.get(token) if isinstance(token, str) else None
        if on_progress is None:
            return False
        # A task, as the SDK does: a slow client must not stop the read loop (the callback, call_notifications.py,
        # keeps a call's progress in order and before its result).
        asyncio.get_running_loop().create_task(
            _report(on_progress, params.get("progress"), params.get("total"), params.get("message")))
        return True

    @property
    def ended(self) -> bool:
        """The read stream ended or was closed: no answer can come any more."""
        return self._closed

    def _ended(self) -> None:
        on_end, self.on_end = self.on_end, None
        if on_end is not None:
            on_end()
        self._closed = True
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(MCPError(code=CONNECTION_CLOSED, message="Connection closed"))

    async def receive(self) -> Any:
        try:
            while True:
                item = await self._inner.receive()
                if not self._taken(item):
                    return item
        except BaseException:
            self._ended()
            raise

    def __aiter__(self) -> RawChannel:
        return self

    async def __anext__(self) -> Any:
        try:
            while True:
                item = await self._inner.__anext__()
                if not self._taken(item):
                    return item
        except BaseException:
            self._ended()
            raise

    async def aclose(self) -> None:
        self._ended()
        await self._inner.aclose()

    async def __aenter__(self) -> RawChannel:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        self._ended()
        return await self._inner.__aexit__(exc_type, exc, tb)  # type: ignore[no-any-return]

    # -- the write side -------------------------------------------------------------------------------
    async def call(self, stamp: Stamp, name: str, arguments: dict[str, Any] | None, timeout: float,
                   meta: Mapping[str, Any] | None = None, on_progress: ProgressFn | None = None) -> dict[str, Any]:
        """Send `tools/call` and return the raw result object. Raises `MCPError` for an error response,
        `REQUEST_TIMEOUT` after `timeout` seconds, `CONNECTION_CLOSED` when the transport ends."""
        if self._closed:
            raise MCPError(code=CONNECTION_CLOSED, message="Connection closed")
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if meta:
            params["_meta"] = dict(meta)
        data: dict[str, Any] = {"method": "tools/call", "params": params}
        opts: dict[str, Any] = {}
        stamp(data, opts)
        params = data["params"]
        request_id = f"{RAW_PREFIX}{next(self._ids)}"
        if on_progress is not None:
            params.setdefault("_meta", {})["progressToken"] = request_id
            self._progress[request_id] = on_progress
        headers = opts.get("headers")
        metadata = ClientMessageMetadata(headers=headers) if headers else None
        future: asyncio.Future[dict[str, Any] | MCPError] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        written = False
        try:
            try:
                written = True  # a write interrupted by a cancel may still have been delivered
                if self._send_raw is not None:  # stdio: no headers to carry
                    await self._send_raw({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                                          "params": params})
                else:
                    message = JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params=params)
                    await self._write.send(SessionMessage(message, metadata))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._raise_if_unsent(request_id)  # the transport took it, tried, and could not connect
                raise MCPError(code=CONNECTION_CLOSED, message="Connection closed") from None
            try:
                async with Deadline(timeout):  # one timer per loop for every call's deadline (deadline.py)
                    reply = await future
            except TimeoutError:
                await self._cancel(request_id, f"timed out after {timeout}s")
                raise MCPError(code=REQUEST_TIMEOUT, message="Request 'tools/call' timed out") from None
            except MCPError as exc:  # the read stream ended (`_ended`)
                if exc.code == CONNECTION_CLOSED:
                    self._raise_if_unsent(request_id)
                raise
        except asyncio.CancelledError:
            if written:
                await asyncio.shield(self._cancel(request_id, "caller cancelled"))
            raise
        finally:
            self._pending.pop(request_id, None)
            self._progress.pop(request_id, None)
        if isinstance(reply, MCPError):
            if reply.code == CONNECTION_CLOSED:
                self._raise_if_unsent(request_id)
            raise reply
        return reply

    def _raise_if_unsent(self, request_id: str) -> None:
        """`RequestNotSent` when the transport knows the request never left (`unsent`)."""
        cause = self.unsent(request_id) if self.unsent is not None else None
        if cause is not None:
            raise RequestNotSent(cause) from cause

    async def _cancel(self, request_id: str, reason: str) -> None:
        """The courtesy `notifications/cancelled` (the streamable-HTTP transport turns it into closing the POST)."""
        if self._closed:
            return
        note = JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled",
                                   params={"requestId": request_id, "reason": reason})
        try:
            async with asyncio.timeout(CANCEL_WRITE_S):
                await self._write.send(SessionMessage(note))
        except (TimeoutError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            log.debug("notifications/cancelled for %s not sent: %r", request_id, exc)


async def _report(on_progress: ProgressFn, progress: Any, total: Any, message: Any) -> None:
    with contextlib.suppress(Exception):  # best-effort, as the notification itself
        await on_progress(progress, total, message)


class RawTransport:
    """The connection's transport with a `RawChannel` in front of its read stream (`channel` while open)."""

    def __init__(self, inner: Any, on_end: Callable[[], None] | None = None,
                 unsent: Callable[[str], BaseException | None] | None = None) -> None:
        self._inner = inner
        self._on_end = on_end
        """Called when the channel's read stream ends (`RawChannel.on_end`)."""
        self._unsent = unsent
        """`RawChannel.unsent`."""
        self.channel: RawChannel | None = None

    async def __aenter__(self) -> tuple[RawChannel, Any]:
        read_stream, write_stream = await self._inner.__aenter__()
        try:
            self.channel = RawChannel(read_stream, write_stream)
            self.channel.on_end = self._on_end
            self.channel.unsent = self._unsent
        except BaseException as exc:  # the transport is open (a server process may run): close it
            await self._inner.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self.channel, write_stream

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        channel, self.channel = self.channel, None
        if channel is not None:
            channel._ended()
        return await self._inner.__aexit__(exc_type, exc, tb)  # type: ignore[no-any-return]
