"""Requests and notifications an upstream MCP server sends during a call, routed to whoever made the call.

An upstream server may ask its client (tooldeck) for `sampling/createMessage`, `elicitation/create` or
`roots/list` while one of its tools runs, and may send `notifications/progress` and `notifications/message`.
One upstream connection serves every caller, so nothing here is global: each call names its `Peer`.

- A gateway (`tooldeck serve`) opens `relay_to(peer)` around `Invocation.arun`; the MCP executable reads
  the peer in the caller's task (like `relay.collect_results`) and registers it on the connection for
  the duration of the call. The downstream client is the peer: requests go to it, answers come back.
- In the library there is no client in front: the host sets `McpCallbacks` on the manager
  (`runtime.mcp.callbacks = McpCallbacks(sampling=..., elicitation=..., roots=...)`); they run on the
  MCP background loop.
- Without either, the upstream request fails with an MCP error that names the missing capability.

How a request finds its call: the SDK runs the callback in the context of the call when the wire lets it
(streamable HTTP answers on the call's own stream; the 2026-07-28 `InputRequiredResult` rounds run inside
the call). Over stdio with the handshake protocol nothing on the wire links the request to a call, so it
goes to the only call in flight on that connection; with several in flight it is refused as ambiguous
rather than sent to the wrong client. Progress is per call in every case (the SDK's per-request
progress callback), logging goes to the call's peer or, with none, to tooldeck's log; a call's progress and
log messages reach its peer in order and before the call's result (`call_notifications.py`).
"""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning

log = logging.getLogger("tooldeck.mcp")

REFUSED = types.INVALID_REQUEST
"""JSON-RPC code of a refusal sent upstream (the SDK's own "Sampling not supported" uses it too); its
`data.code` is one of the two below (docs/mcp.md)."""
CALLBACK_MISSING = "mcp.callback_missing"
"""The library host set no callback for this request (`McpCallbacks`)."""
REQUEST_UNROUTED = "mcp.request_unrouted"
"""Several calls are in flight on a connection whose wire does not say which one a request belongs to."""
TOO_MANY_REQUESTS = "mcp.too_many_requests"
"""A call's server already has MAX_REQUESTS_WAITING requests waiting for an answer."""

MAX_REQUESTS_WAITING = 8
"""Requests (sampling, elicitation, roots) one call's server may have waiting for an answer at once; past that they
are refused, so a server cannot flood the client in front (a person asked to answer, a model that costs) or pile
up tasks. Without a call's peer (the library host's callbacks) the count is per connection."""


class Peer(Protocol):
    """Whoever answers for one call: the downstream MCP client of a gateway session."""

    async def sampling(self, params: types.CreateMessageRequestParams) -> Any: ...

    async def elicitation(self, params: types.ElicitRequestParams) -> Any: ...

    async def roots(self) -> Any: ...

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def log_message(self, params: types.LoggingMessageNotificationParams) -> None: ...

    # Optional: `upstream_log_level`, the lowest log level this peer takes (None: none), which a 2026-07-28
    # upstream needs in each request's `_meta` to send any log message at all.


SamplingFn = Callable[[types.CreateMessageRequestParams], Awaitable[types.CreateMessageResult]]
ElicitationFn = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult]]
RootsFn = Callable[[], Awaitable[types.ListRootsResult]]


@dataclass
class McpCallbacks:
    """The library host's answers to upstream requests (no MCP client in front). Each is optional; one that is
    missing refuses its request with a clear error. They run on the MCP background loop."""

    sampling: SamplingFn | None = None
    elicitation: ElicitationFn | None = None
    roots: RootsFn | None = None


_PEER: ContextVar[Peer | None] = ContextVar("tooldeck_mcp_peer", default=None)


def current() -> Peer | None:
    """The peer of the calling task, if a gateway opened one."""
    return _PEER.get()


@contextmanager
def relay_to(peer: Peer) -> Iterator[Peer]:
    """Send the upstream requests and notifications of the MCP calls made inside the block to `peer`."""
    token = _PEER.set(peer)
    try:
        yield peer
    finally:
        _PEER.reset(token)


@contextmanager
def in_call(peer: Peer | None) -> Iterator[None]:
    """On the MCP loop, around one upstream call: the SDK copies this context into the callbacks it can."""
    if peer is None:
        yield
        return
    token = _PEER.set(peer)
    try:
        yield
    finally:
        _PEER.reset(token)


def refusal(server: str, what: str, why: str, code: str = CALLBACK_MISSING) -> types.ErrorData:
    return types.ErrorData(code=REFUSED, data={"code": code},
                           message=f"tooldeck cannot answer {what} from MCP server `{server}`: {why}.")


class ConnectionCallbacks:
    """The SDK client callbacks of one upstream connection: each request goes to the peer of its call."""

    def __init__(self, server: str, host: Callable[[], McpCallbacks]) -> None:
        self.server = server
        self.host = host
        self.active: dict[int, Peer] = {}
        """Peers of the calls in flight on this connection, by registration number."""
        self._keys = itertools.count()
        self._waiting: dict[int, int] = {}
        """Requests waiting for an answer, by `id` of the peer answering them (0: the host's callbacks)."""

    @contextmanager
    def call(self, peer: Peer | None) -> Iterator[None]:
        """Register one call's peer while it runs (for requests the wire does not link to a call)."""
        if peer is None:
            yield
            return
        key = next(self._keys)
        self.active[key] = peer
        try:
            with in_call(peer):
                yield
        finally:
            del self.active[key]

    def _peer(self) -> Peer | str | None:
        """The peer of the call this request belongs to; None for none; "ambiguous" when it cannot be told."""
        peer = _PEER.get()
        if peer is not None:
            return peer
        peers = list(self.active.values())
        if not peers:
            return None
        if len(peers) == 1:
            return peers[0]
        return "ambiguous"

    def _ambiguous(self, what: str) -> types.ErrorData:
        return refusal(self.server, what, "several calls to this server are in flight and the request "
                       "does not say which one it belongs to (stdio with the handshake protocol); make one call "
                       "at a time, or serve it over streamable HTTP", REQUEST_UNROUTED)

    async def sampling(self, _ctx: Any, params: types.CreateMessageRequestParams) -> Any:
        return await self._answer("sampling/createMessage", lambda peer: peer.sampling(params), "sampling",
                                  "the host set no sampling callback (McpCallbacks.sampling; capability `sampling` "
                                  "missing)", lambda fn: fn(params))

    async def elicitation(self, _ctx: Any, params: types.ElicitRequestParams) -> Any:
        return await self._answer("elicitation/create", lambda peer: peer.elicitation(params), "elicitation",
                                  "the host set no elicitation callback (McpCallbacks.elicitation; capability "
                                  "`elicitation` missing)", lambda fn: fn(params))

    async def roots(self, _ctx: Any) -> Any:
        return await self._answer("roots/list", lambda peer: peer.roots(), "roots",
                                  "the host set no roots callback (McpCallbacks.roots; capability `roots` missing)",
                                  lambda fn: fn())

    async def _answer(self, what: str, ask_peer: Callable[[Peer], Awaitable[Any]], host_entry: str, missing: str,
                      ask_host: Callable[[Any], Awaitable[Any]]) -> Any:
        """The request goes to the call's peer, else the host's callback; refused when neither can take it."""
        peer = self._peer()
        if isinstance(peer, str):
            return self._ambiguous(what)
        fn = None
        if peer is None:
            fn = getattr(self.host(), host_entry)
            if fn is None:
                return refusal(self.server, what, missing)
        owner = id(peer) if peer is not None else 0
        waiting = self._waiting.get(owner, 0)
        if waiting >= MAX_REQUESTS_WAITING:
            return refusal(self.server, what, f"{waiting} requests from it are already waiting for an answer "
                           f"(at most {MAX_REQUESTS_WAITING} at once); ask again once they are answered",
                           TOO_MANY_REQUESTS)
        self._waiting[owner] = waiting + 1
        try:
            return await (ask_peer(peer) if peer is not None else ask_host(fn))
        finally:
            left = self._waiting[owner] - 1
            if left:
                self._waiting[owner] = left
            else:
                del self._waiting[owner]

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        peer = self._peer()
        if isinstance(peer, str) or peer is None:
            log.info("MCP server %s [%s]: %s", self.server, params.level, params.data)
            return
        try:
            await peer.log_message(params)
        except Exception as exc:  # the client went away; notifications are best-effort
            log.debug("log message of %s not relayed: %s", self.server, exc)


async def forward_log_level(states: list[Any], level: str) -> list[str]:
    """On the MCP loop: `logging/setLevel` to each live connection whose server declares logging."""
    took: list[str] = []
    for state in states:
        conn = state.connection
        client = conn.client if conn is not None and conn.alive() else None
        if client is None or client.server_capabilities.logging is None:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)  # deprecated in 2026-07-28, still the way before
                await client.set_logging_level(level)  # type: ignore[arg-type]
        except Exception as exc:
            log.debug("logging/setLevel to %s failed: %s", state.config.name, exc)
            continue
        took.append(state.config.name)
    return took
