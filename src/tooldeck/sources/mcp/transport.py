"""How a connection reaches its server: the stdio process (`stdio_pipes.py`, its stderr into the server's
log) or the streamable HTTP client, whose response hook keeps what the SDK drops.

The SDK turns an HTTP error status into a generic JSON-RPC error and keeps neither the status nor the
headers, so `response_observer` records every POST reply that is not a plain MCP success in the
connection's `Evidence` (status, content type, `WWW-Authenticate`, `Location`). It runs on every
call, so a plain success costs one status and content-type check; it never breaks a request.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import IO, Any

import httpx2
import orjson
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from pydantic import ValidationError

from tooldeck.sources.mcp.config import Endpoint
from tooldeck.sources.mcp.evidence import Evidence, HttpReply, plain_success, shown_url
from tooldeck.sources.mcp.failures import describe
from tooldeck.sources.mcp.sse_transport import sse_streams
from tooldeck.sources.mcp.stdio_pipes import MAX_LINE_BYTES, stdio_pipes

log = logging.getLogger("tooldeck.mcp")

_HTTP_READ_TIMEOUT_S = 300.0
MAX_MESSAGE_BYTES = MAX_LINE_BYTES
"""The largest message a streamable HTTP server may send, as large as a stdio line may be: a JSON response body
(decoded; past it the connection is closed, `mcp.message_too_large`), or one event of a response stream. The
SDK's own limit on events (1 MiB) refused a handshake-era server's results over 1 MiB, which such a server sends
as an event, with nothing but "the connection closed"; the legacy HTTP+SSE transport, whose every message is an
event, has the same bound (`sse_transport.py`)."""


class MessageTooLarge(httpx2.TransportError):
    """A server's response body went over MAX_MESSAGE_BYTES (noted in the connection's `Evidence`)."""


def open_transport(endpoint: Endpoint, errlog: IO[str] | None, connect_timeout: float, evidence: Evidence,
                   auth: httpx2.Auth | None = None) -> Any:
    """The SDK transport (an async context manager of streams) for `endpoint`; stdio needs `errlog`. HTTP
    transports authenticate with `auth`, else with the endpoint's OAuth plan (`auth.provider_for`)."""
    if endpoint.transport != "stdio":
        assert endpoint.url is not None
        if auth is None:
            from tooldeck.sources.mcp.auth import provider_for  # the SDK's OAuth code, only for HTTP servers

            auth = provider_for(endpoint.oauth)
        if endpoint.transport == "sse":
            return _sse_transport(endpoint.url, dict(endpoint.headers), connect_timeout, evidence, auth)
        return _http_transport(endpoint.url, dict(endpoint.headers), connect_timeout, evidence, auth)
    assert endpoint.command is not None and errlog is not None
    params = StdioServerParameters(command=endpoint.command, args=list(endpoint.args), env=dict(endpoint.env) or None,
                                   cwd=endpoint.cwd)
    return _stdio_transport(params, errlog, evidence)


def raw_line(exc: Exception) -> str:
    """The stdout line behind a parse error of the stdio transport (pydantic keeps it as the input)."""
    if isinstance(exc, ValidationError):
        for error in exc.errors(include_url=False):
            if isinstance(error.get("input"), str):
                return error["input"]
    return describe(exc)


@asynccontextmanager
async def _stdio_transport(params: StdioServerParameters, errlog: IO[str],
                           evidence: Evidence) -> AsyncIterator[Any]:
    async with stdio_pipes(params, errlog, evidence) as streams:
        yield streams


def _jsonrpc_body(request: httpx2.Request) -> dict[str, Any]:
    """The JSON-RPC message a POST carries (read from its already-encoded body, when small), or {}."""
    try:
        body = request.content
        if len(body) > 64 * 1024:
            return {}
        data = orjson.loads(body)
    except (httpx2.RequestNotRead, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _jsonrpc_method(request: httpx2.Request) -> str:
    """The JSON-RPC method a POST carries, or ""."""
    method = _jsonrpc_body(request).get("method")
    return method if isinstance(method, str) else ""


class ObservedClient(httpx2.AsyncClient):
    """The HTTP client of an MCP connection: notes in its `Evidence` each request POST that could not leave
    because no connection to the server could be made (`httpx2.ConnectError`: the request's bytes were never
    written). The SDK's client reports such a request only as "connection closed", like one that was sent."""

    def __init__(self, evidence: Evidence, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._evidence = evidence

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        try:
            return await super().send(request, **kwargs)
        except httpx2.ConnectError as exc:
            if request.method == "POST":
                request_id = _jsonrpc_body(request).get("id")
                if isinstance(request_id, str):
                    self._evidence.add_unsent(request_id, exc)
            raise


def response_observer(evidence: Evidence, *, stream_get: bool = False) -> Callable[[httpx2.Response], Awaitable[None]]:
    """An httpx response hook that keeps what each MCP POST got: status, content type, challenge, location.
    With `stream_get` (the SSE transport, whose session starts with a GET) the GETs too."""

    async def observe(response: httpx2.Response) -> None:
        request = response.request
        # Streamable HTTP's optional GET event stream may be refused (405) by servers without one.
        if request.method != "POST" and not (stream_get and request.method == "GET"):
            return
        try:
            headers = response.headers
            status, content_type = response.status_code, headers.get("content-type", "")
            if plain_success(status, content_type):  # every call's path: no parsing, no allocation
                evidence.succeeded()
                return
            if request.extensions.get("tooldeck_oauth"):  # the OAuth flow's own requests (auth.AUTH_REQUEST)
                return
            evidence.add_reply(HttpReply(
                _jsonrpc_method(request), shown_url(str(request.url)), status, response.reason_phrase, content_type,
                ", ".join(headers.get_list("www-authenticate")), headers.get("location", "")))
        except Exception:  # observing must never break a request
            log.debug("could not record an HTTP reply", exc_info=True)

    return observe


def bounded_bodies(evidence: Evidence) -> Callable[[httpx2.Response], Awaitable[None]]:
    """An httpx response hook that stops reading a response body (not an event stream, whose events the SDK's
    decoder bounds) once more than MAX_MESSAGE_BYTES of it have been decoded: a broken or hostile server cannot
    make tooldeck hold any amount of it in memory. Counted after decoding, so a compressed body is bounded too."""

    async def bound(response: httpx2.Response) -> None:
        headers = response.headers
        if headers.get("content-type", "").startswith("text/event-stream"):
            return
        limit = MAX_MESSAGE_BYTES
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) <= limit and "content-encoding" not in headers:
            return  # the HTTP framing ends the body at its declared length: nothing to count (most replies)
        decoded = response.aiter_bytes  # what `aread` (the SDK's JSON path) iterates

        async def aiter_bytes(chunk_size: int | None = None) -> AsyncIterator[bytes]:
            total = 0
            async for part in decoded(chunk_size):
                total += len(part)
                if total > limit:
                    evidence.message_too_large = limit
                    raise MessageTooLarge(f"the response body went over {limit} bytes", request=response.request)
                yield part

        response.aiter_bytes = aiter_bytes  # type: ignore[method-assign]

    return bound


def _client(evidence: Evidence, headers: dict[str, str], connect_timeout: float, auth: httpx2.Auth | None, *,
            stream_get: bool = False) -> ObservedClient:
    """The HTTP client of one connection: its replies observed and bounded (`response_observer`,
    `bounded_bodies`), its unsent requests noted (`ObservedClient`)."""
    return ObservedClient(evidence, headers=headers, auth=auth,
                          timeout=httpx2.Timeout(connect_timeout, read=_HTTP_READ_TIMEOUT_S),
                          event_hooks={"response": [response_observer(evidence, stream_get=stream_get),
                                                    bounded_bodies(evidence)]})


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str], connect_timeout: float,
                          evidence: Evidence, auth: httpx2.Auth | None = None) -> AsyncIterator[Any]:
    async with (_client(evidence, headers, connect_timeout, auth) as http,
                streamable_http_client(url, http_client=http, max_sse_event_size=MAX_MESSAGE_BYTES) as streams):
        yield streams


@asynccontextmanager
async def _sse_transport(url: str, headers: dict[str, str], connect_timeout: float, evidence: Evidence,
                         auth: httpx2.Auth | None) -> AsyncIterator[Any]:
    """The 2024-11-05 HTTP+SSE transport (`sse_transport.py`): a GET event stream that names the URL to POST
    messages to, its events bounded like a streamable HTTP server's."""
    async with (_client(evidence, headers, connect_timeout, auth, stream_get=True) as http,
                sse_streams(url, http, MAX_MESSAGE_BYTES, evidence) as streams):
        yield streams
