"""The 2024-11-05 HTTP+SSE transport, with a bound on events that tooldeck chooses.

On this transport every message from the server, a call's result included, is one event of the GET stream. The
SDK's `sse_client` reads that stream with a fixed 1 MiB limit per event and takes no other, so a result over
1 MiB ended the connection ("the connection closed") however legitimate it was. This client is the same protocol
(a GET event stream whose first `endpoint` event names the URL to POST each client message to, on the same
origin) with the limit given by the caller: past it the connection ends and the `Evidence` says why
(`mcp.message_too_large`). Redirects follow the SDK's same-origin rule (`sse_within_origin`,
`request_within_origin`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared._httpx_utils import request_within_origin, sse_within_origin
from mcp.shared.message import SessionMessage

from tooldeck.sources.mcp.evidence import Evidence

log = logging.getLogger("tooldeck.mcp")

Inbound = MemoryObjectSendStream[SessionMessage | Exception]


class EndpointRefused(ValueError):
    """The server's `endpoint` event named a URL on another origin (scheme, host or port) than the stream's."""


def endpoint_url(stream_url: str, data: str) -> str:
    """The absolute URL an `endpoint` event names, checked to be on the stream's origin: a server must not send
    tooldeck's messages (and its credentials) elsewhere."""
    url = urljoin(stream_url, data)
    if urlsplit(url)[:2] != urlsplit(stream_url)[:2]:
        raise EndpointRefused(f"the server's endpoint {url!r} is not on the origin of {stream_url!r}")
    return url


@asynccontextmanager
async def sse_streams(url: str, http: httpx2.AsyncClient, max_event_bytes: int,
                      evidence: Evidence) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) of SessionMessages over the HTTP+SSE transport at `url`, on `http`: the GET
    stream's `message` events in, each written message POSTed to the endpoint the server named. Yields once the
    `endpoint` event arrived."""
    async with sse_within_origin(http, url, max_event_size=max_event_bytes) as events:
        events.response.raise_for_status()
        inbound, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, outbound = anyio.create_memory_object_stream[SessionMessage](0)
        reading = anyio.CancelScope()  # a POST with no answer ends the read side: the session sees the connection end
        async with inbound, read_stream, write_stream, outbound, anyio.create_task_group() as tasks:
            endpoint = await tasks.start(_read, events, url, inbound, max_event_bytes, evidence, reading)
            tasks.start_soon(_post, http, endpoint, outbound, inbound, reading)
            try:
                yield read_stream, write_stream
            finally:
                tasks.cancel_scope.cancel()


async def _read(events: httpx2.EventSource, url: str, inbound: Inbound, max_event_bytes: int, evidence: Evidence,
                reading: anyio.CancelScope, *, task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED) -> None:
    """The GET stream's events until it ends (or `reading` is cancelled): the `endpoint` first, then one message
    per `message` event (one that is no JSON-RPC message goes in as the exception that parsing it raised, as the
    SDK's reader does). The read stream closes when this ends, so the session sees the connection end."""
    started = False
    try:
        with reading:
            async for event in events:
                if event.event == "endpoint" and not started:
                    task_status.started(endpoint_url(url, event.data))
                    started = True
                elif event.event == "message" and event.data:  # an empty one is a keep-alive
                    try:
                        message: SessionMessage | Exception = SessionMessage(
                            types.jsonrpc_message_adapter.validate_json(event.data, by_name=False))
                    except Exception as exc:
                        message = exc
                    await inbound.send(message)
                elif event.event not in ("message", "endpoint"):
                    log.debug("ignored an SSE event of type %r from %s", event.event, url)
    except httpx2.SSEError as exc:
        # httpx2 raises SSEError for a stream that is not an event stream, or for an event over the bound
        if "text/event-stream" in events.response.headers.get("content-type", ""):
            evidence.message_too_large = max_event_bytes
        if not started:
            raise
        log.warning("the SSE stream of %s ended: %s", url, exc)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # the session is gone
    finally:
        await inbound.aclose()
    if not started:
        raise ConnectionError(f"the SSE stream of {url} ended before the server named its endpoint")


async def _post(http: httpx2.AsyncClient, endpoint: str, outbound: MemoryObjectReceiveStream[SessionMessage],
                inbound: Inbound, reading: anyio.CancelScope) -> None:
    """Each client message, POSTed in order. A request the server answered with an HTTP error gets that error as
    its JSON-RPC answer (the server's own JSON-RPC error when the body is one), as the streamable HTTP client
    does, and the connection goes on (a version probe an old server refuses is followed by `initialize`); a
    POST that got no answer at all (the server is gone) ends the connection. The reply is in the `Evidence`
    either way, which names the cause."""
    async with outbound:
        async for item in outbound:
            message = item.message
            try:
                response = await request_within_origin(
                    http, "POST", endpoint, json=message.model_dump(by_alias=True, mode="json", exclude_unset=True))
            except httpx2.HTTPError as exc:
                log.warning("a message to %s was not delivered: %s", endpoint, exc)
                reading.cancel()
                return
            if response.is_success or not isinstance(message, types.JSONRPCRequest):
                continue
            error = _json_rpc_error(response) or types.ErrorData(
                code=types.INTERNAL_ERROR, message=f"Server returned an error response (HTTP {response.status_code})")
            try:
                await inbound.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # the read side ended: so did the session


def _json_rpc_error(response: httpx2.Response) -> types.ErrorData | None:
    """The JSON-RPC error an HTTP error reply carries in its body, if it is one."""
    if not response.headers.get("content-type", "").lower().startswith("application/json"):
        return None
    try:
        parsed = types.jsonrpc_message_adapter.validate_json(response.content, by_name=False)
    except ValueError:
        return None
    return parsed.error if isinstance(parsed, types.JSONRPCError) else None
