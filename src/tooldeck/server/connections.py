"""Bounds on HTTP connections for `tooldeck serve --http`, at the protocol layer (below ASGI).

uvicorn (0.54, h11) has no timeout on receiving a request: its keep-alive timer runs only between two
requests and is cancelled by every byte that arrives, and `limit_concurrency` answers 503 only once a
request's headers are complete. So a client that opens a connection and never finishes its headers holds a
file descriptor for ever, and 1,100 of them exhaust a process under `ulimit -n 1024`. ASGI middleware cannot
help: it runs only after the headers are parsed. This module closes that gap with a subclass of uvicorn's
`H11Protocol`:

- **Header deadline.** From a connection's opening, or from the first byte of the next request on a
  kept-alive connection, the request line and headers must be complete within `header_timeout`; the timer
  is not reset by bytes that trickle in. Then 408 `serve.header_timeout` (if part of a request came) and close.
- **Body deadline.** From the end of the headers, the body must be complete within `body_timeout`; then
  408 `serve.body_timeout` (if no response started), the application sees a disconnect, and close.
- **Connection cap.** At most `max_connections` open connections, never more than the open-file limit
  allows (`connection_cap`). A connection past the cap closes the *oldest idle* connection (one that is
  waiting for request headers or idle between requests; never one with a request or stream in progress);
  when none is idle the newcomer gets 503 `serve.too_many_connections` and is closed.
- **Out of descriptors anyway** (accept() fails with EMFILE: the limit was lowered, or something else holds
  descriptors): asyncio already stops accepting for a second instead of spinning; the loop's exception
  handler closes every idle connection so accepting can resume, and logs one line per 10 s, not a traceback
  per attempt.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import resource
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import h11
import orjson
from uvicorn.protocols.http.h11_impl import H11Protocol

logger = logging.getLogger("tooldeck.serve")

HEADER_TIMEOUT = "serve.header_timeout"
BODY_TIMEOUT = "serve.body_timeout"
TOO_MANY_CONNECTIONS = "serve.too_many_connections"
HTTP_INVALID = "serve.http_invalid"
HEADERS_TOO_LARGE = "serve.headers_too_large"
HEADER_DUPLICATED = "serve.header_duplicated"
CONNECTION_KEY = "tooldeck.connection"
"""The ASGI scope key under which a request finds its connection (`BoundedH11Protocol.watch_lost`)."""

ACCEPT_BACKLOG = 128
"""Listen queue, and so the most connections asyncio accepts in one pass before the cap is applied."""
FD_RESERVE = 64
"""Descriptors kept free for everything that is not a client connection (records, files, MCP pipes)."""
LOG_EVERY_S = 10.0

_STATUS_TEXT = {400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large",
                503: b"Service Unavailable"}
_PHASE_HEADERS = 1
_PHASE_BODY = 2


def open_descriptor_count() -> int:
    for fd_dir in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(fd_dir))
        except OSError:
            continue
    return 0


def connection_cap(configured: int, soft_limit: int | None = None, open_now: int | None = None,
                   backlog: int = ACCEPT_BACKLOG) -> int:
    """`configured`, lowered so that the connections, a burst of accepts (two listen queues) and a reserve
    for everything else fit under the open-file limit (but never below 16 for that reason)."""
    if soft_limit is None:
        soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft_limit == resource.RLIM_INFINITY or soft_limit < 0:
        return configured
    if open_now is None:
        open_now = open_descriptor_count()
    room = soft_limit - open_now - FD_RESERVE - 2 * backlog
    return min(configured, max(16, room))


def _json_response(status: int, code: str, message: str) -> bytes:
    body = orjson.dumps({"error": {"code": code, "message": message}})
    return (b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
            % (status, _STATUS_TEXT.get(status, b""), len(body))) + body


@dataclass
class ConnectionLimiter:
    """Shared by every connection of one server: the bounds, and the idle connections, oldest first."""

    max_connections: int
    header_timeout: float
    body_timeout: float
    idle: OrderedDict[BoundedH11Protocol, None] = field(default_factory=OrderedDict)
    counts: dict[str, int] = field(default_factory=dict)
    """Connections closed per reason since the last log line (header_timeout, body_timeout, evicted,
    refused, out_of_descriptors)."""
    _last_log: float = -LOG_EVERY_S
    _flush: asyncio.TimerHandle | None = None

    def evict_idle(self, n: int = 1) -> int:
        """Close up to `n` idle connections, oldest first; how many were closed."""
        closed = 0
        while closed < n and self.idle:
            conn, _ = self.idle.popitem(last=False)
            if conn.close_idle():
                closed += 1
        if closed:
            self.note("evicted", closed)
        return closed

    def note(self, reason: str, n: int = 1) -> None:
        """Count a closed connection; one log line per LOG_EVERY_S sums up what happened since the last one."""
        self.counts[reason] = self.counts.get(reason, 0) + n
        if self._flush is not None:
            return
        delay = self._last_log + LOG_EVERY_S - time.monotonic()
        if delay <= 0:
            self.flush_log()
        else:
            self._flush = asyncio.get_running_loop().call_later(delay, self.flush_log)

    def flush_log(self) -> None:
        self._flush = None
        if not self.counts:
            return
        self._last_log = time.monotonic()
        what = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(self.counts.items()))
        self.counts.clear()
        logger.warning("closed HTTP connections (%s); bounds: %d connections, headers in %g s, body in %g s",
                       what, self.max_connections, self.header_timeout, self.body_timeout)

    def exception_handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Event loop exception handler: accept() out of descriptors frees the idle connections (asyncio
        itself stops accepting for a second); everything else goes to the default handler."""
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE) and "socket" in context:
            self.note("out_of_descriptors")
            self.evict_idle(len(self.idle))
            return
        loop.default_exception_handler(context)

    def protocol_class(self) -> type[BoundedH11Protocol]:
        """The protocol class to give uvicorn (`Config(http=...)`), bound to this limiter."""
        return type("BoundH11Protocol", (BoundedH11Protocol,), {"limiter": self})


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with header and body deadlines and a place in the idle queue."""

    limiter: ClassVar[ConnectionLimiter]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_timer: asyncio.TimerHandle | None = None
        self._read_phase = 0
        self._on_lost: Callable[[], None] | None = None

    # -- asyncio.Protocol ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        limiter = self.limiter
        if len(self.connections) > limiter.max_connections and not limiter.evict_idle():
            limiter.note("refused")
            self._close_with(_json_response(
                503, TOO_MANY_CONNECTIONS,
                f"tooldeck serve has {limiter.max_connections} connections open, all busy. Retry shortly; "
                "raise [serve] max_connections if this is expected load."))
            return
        self._arm(_PHASE_HEADERS, limiter.header_timeout)
        limiter.idle[self] = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.limiter.idle.pop(self, None)
        self._disarm()
        super().connection_lost(exc)
        on_lost, self._on_lost = self._on_lost, None
        if on_lost is not None:
            on_lost()

    def data_received(self, data: bytes) -> None:
        if not self._read_phase and self.conn.their_state is h11.IDLE:
            # The first byte of the next request on a kept-alive connection: its headers are due from now.
            self._arm(_PHASE_HEADERS, self.limiter.header_timeout)
        super().data_received(data)
        if self.cycle is not None:
            self.cycle.scope[CONNECTION_KEY] = self  # type: ignore[literal-required]
        self._track()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._track()

    def send_400_response(self, msg: str) -> None:
        # Called by uvicorn inside `except h11.RemoteProtocolError`: the exception says what was wrong.
        exc = sys.exc_info()[1]
        detail = str(exc) if isinstance(exc, h11.RemoteProtocolError) and str(exc) else msg
        status = getattr(exc, "error_status_hint", 400)
        if status == 431:
            code, text = HEADERS_TOO_LARGE, ("The request line and headers are too large ([serve] max_header_bytes); "
                                             "send smaller headers.")
        elif detail.startswith("Found multiple Host"):
            code, text = HEADER_DUPLICATED, "The 'host' header appears more than once. Send it once."
        else:
            status, code, text = 400, HTTP_INVALID, f"The request is not valid HTTP/1.1: {detail}."
        self._close_with(_json_response(status, code, text))

    # -- the end of the connection, for the request being served (http_lane.py) ------------------------
    def watch_lost(self, callback: Callable[[], None]) -> bool:
        """Call `callback` once when this connection is lost (the client went away), until `unwatch_lost`.
        False, and nothing is watched, when it is already closing."""
        if self.transport.is_closing() or (self.cycle is not None and self.cycle.disconnected):
            return False
        self._on_lost = callback
        return True

    def unwatch_lost(self) -> None:
        self._on_lost = None

    # -- deadlines and the idle queue ---------------------------------------------------------------
    def _track(self) -> None:
        """After h11 moved on: idle (waiting for headers, or between requests) or busy, and which deadline."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            if self not in self.limiter.idle:
                self.limiter.idle[self] = None  # newest last: a trickle of bytes does not refresh the place
            if not self._read_phase and self.conn.trailing_data[0]:
                self._arm(_PHASE_HEADERS, self.limiter.header_timeout)  # part of a pipelined request is waiting
            return
        self.limiter.idle.pop(self, None)
        if state is h11.SEND_BODY:
            if self._read_phase != _PHASE_BODY:
                self._arm(_PHASE_BODY, self.limiter.body_timeout)
        elif self._read_phase:
            self._disarm()

    def _arm(self, phase: int, seconds: float) -> None:
        self._disarm()
        self._read_phase = phase
        self._read_timer = self.loop.call_later(seconds, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None
        self._read_phase = 0

    def _read_timed_out(self) -> None:
        self._read_timer = None
        phase, self._read_phase = self._read_phase, 0
        if self.transport.is_closing():
            return
        limiter = self.limiter
        if phase == _PHASE_HEADERS:
            limiter.note("header_timeout")
            partial = bool(self.conn.trailing_data[0])
            self._close_with(_json_response(
                408, HEADER_TIMEOUT,
                f"The request headers did not arrive within {limiter.header_timeout:g} s; send the whole request "
                "at once.") if partial else b"")
            return
        limiter.note("body_timeout")
        cycle = self.cycle
        started = cycle is not None and cycle.response_started
        if cycle is not None:  # the application sees a disconnect and writes nothing more
            cycle.disconnected = True
            cycle.message_event.set()
        self._close_with(b"" if started else _json_response(
            408, BODY_TIMEOUT, f"The request body did not arrive within {limiter.body_timeout:g} s of its headers."))

    def close_idle(self) -> bool:
        """Close this connection if it is still idle (called when it is evicted)."""
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return False
        self._close_with(b"")
        return True

    def _close_with(self, response: bytes) -> None:
        self.limiter.idle.pop(self, None)
        self._disarm()
        if response:
            self.transport.write(response)
        self.transport.close()
