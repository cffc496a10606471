"""What the two `tools/call` lanes (`stdio_lane.py`, `http_lane.py`) share: the SDK's server kernel for a
2026-07-28 call, kept per envelope, the kernel's exception-to-wire mapping as one JSON-RPC error object, and the
part of a call's dispatch context that does not depend on the transport (`LaneContext`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.server.connection import Connection, Outbound
from mcp.server.runner import ServerRunner, aclose_shielded
from mcp.shared.dispatcher import CallOptions, as_request_id
from mcp.shared.inbound import InboundModernRoute
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types import INTERNAL_ERROR


class LaneContext:
    """What the two lanes' dispatch contexts (one per `tools/call`) share: the call's progress token and its
    `progress`, and `cancel_requested`, made when first asked for (an anyio `Event` costs more to make than the
    rest of the context, and only a handler that watches for a cancel, or a cancel, needs one). A subclass
    gives `notify`."""

    __slots__ = ("_cancel", "progress_token")

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.progress_token = progress_token_from_params(params)
        self._cancel: anyio.Event | None = None

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        raise NotImplementedError

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self.progress_token is None:
            return
        await self.notify("notifications/progress", progress_params(self.progress_token, progress, total, message))

    @property
    def cancel_requested(self) -> anyio.Event:
        if self._cancel is None:
            self._cancel = anyio.Event()
        return self._cancel

    @property
    def cancelled(self) -> bool:
        """Whether a cancel was asked for (without making the event)."""
        return self._cancel is not None and self._cancel.is_set()


RUNNERS_KEPT = 8
"""2026-07-28 envelopes whose kernel is kept (a client sends one envelope with every call)."""


class ModernKernels:
    """The kernel for a 2026-07-28 call: a `ServerRunner` over a born-ready `Connection` of the call's envelope,
    as the SDK builds one per request. A client sends the same envelope with every call, so the kernel is kept per
    envelope (the SDK's per-request connection holds nothing a `tools/call` handler leaves behind; what one does
    leave on the connection's exit stack is unwound after the call, `release`)."""

    def __init__(self, server: Any, lifespan_state: Any, outbound: Outbound | None = None) -> None:
        self._server = server
        self._lifespan_state = lifespan_state
        self._outbound = outbound
        self._runners: dict[bytes, ServerRunner[Any]] = {}

    def runner(self, route: InboundModernRoute) -> ServerRunner[Any]:
        try:
            key: bytes | None = orjson.dumps([route.protocol_version, route.client_info, route.client_capabilities],
                                             option=orjson.OPT_SORT_KEYS)
        except TypeError:
            key = None
        runner = self._runners.get(key) if key is not None else None
        if runner is None:
            channel = {} if self._outbound is None else {"outbound": self._outbound}  # none: the SDK's no-channel
            connection = Connection.from_envelope(route.protocol_version, route.client_info,
                                                  route.client_capabilities, **channel)
            runner = ServerRunner(self._server, connection, self._lifespan_state)
            if key is not None:
                if len(self._runners) >= RUNNERS_KEPT:
                    self._runners.pop(next(iter(self._runners)))
                self._runners[key] = runner
        return runner


async def release(runner: ServerRunner[Any]) -> None:
    """Unwind what a handler left on the connection's exit stack (the SDK unwinds it after every request)."""
    callbacks = getattr(runner.connection.exit_stack, "_exit_callbacks", None)
    if callbacks is None or callbacks:  # unknown: unwind it, as the SDK always does
        await aclose_shielded(runner.connection)


def error_object(error: types.ErrorData | None) -> dict[str, Any]:
    """A JSON-RPC error object as the SDK writes it."""
    if error is None:
        return {"code": INTERNAL_ERROR, "message": "Internal error"}
    return error.model_dump(by_alias=True, mode="json", exclude_none=True)


def json_object(data: bytes) -> dict[str, Any] | None:
    """`data` parsed when it is one JSON object; None for anything else (orjson: strict RFC 8259, so what it
    parses the SDK's `json.loads` parses to the same values)."""
    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return message if isinstance(message, dict) else None


def progress_params(token: types.ProgressToken, progress: float, total: float | None,
                    message: str | None) -> dict[str, Any]:
    """The params of a call's `notifications/progress`, as the SDK's dispatch contexts write them."""
    params: dict[str, Any] = {"progressToken": token, "progress": progress}
    if total is not None:
        params["total"] = total
    if message is not None:
        params["message"] = message
    return params


def tool_call(data: bytes) -> tuple[dict[str, Any], types.RequestId, dict[str, Any]] | None:
    """`data` as a well-formed JSON-RPC `tools/call` request (the message, its id, its params object); None for
    anything else, which the SDK answers as it always has."""
    message = json_object(data)
    if message is None or message.get("method") != "tools/call" or message.get("jsonrpc") != "2.0":
        return None
    request_id = as_request_id(message.get("id"))
    params = message.get("params")
    if request_id is None or not isinstance(params, dict):
        return None
    return message, request_id, params
