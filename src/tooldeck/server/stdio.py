"""MCP over stdin/stdout on the event loop itself, with no worker thread.

The SDK's `stdio_server` reads and writes through `anyio.wrap_file`: every line read and every reply written
is a round trip to a worker thread, and each round trip is a GIL hand-off between threads (in `tooldeck serve`,
with the MCP loop's thread beside them, the largest single cost of a served call). Here stdin and stdout are
asyncio pipe transports on the running loop: a line is parsed where it arrives, a reply is written by the task
that sends it (one `write` of the whole frame, so concurrent replies never interleave).

As in the SDK, fd 0 and fd 1 are claimed while serving: the wire is served from private duplicates, fd 0 reads
the null device and fd 1 writes to stderr, so a tool's child process or a stray `print` cannot corrupt the
protocol; both are restored on exit. When stdin or stdout is not a pipe, socket or terminal (a regular file:
`tooldeck serve --stdio < requests.jsonl`), asyncio cannot watch it and the SDK's threaded transport is used.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import selectors
import stat
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from tooldeck.jsonrpc_lines import LineMessages
from tooldeck.server.config import DEFAULT_MAX_LINE_BYTES
from tooldeck.server.stdio_lane import REFUSED_HEAD_BYTES, StdioLane

_QUEUED_MAX = 1 << 20
"""Bytes of stdin waiting for the SDK's reader before reading pauses (the pipe then fills and the client waits)."""
_FLUSH_S = 1.0
"""How long the replies still buffered at exit may take to reach a client that reads slowly."""


def _watchable(fd: int) -> bool:
    """Whether asyncio can watch `fd`: a pipe, a socket or a terminal, not a regular file nor a device the
    kernel will not poll (`/dev/null` refuses epoll with EPERM), which the SDK's threaded transport serves."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        return False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ if fd == 0 else selectors.EVENT_WRITE)
    except (OSError, ValueError):
        return False
    return True


def _claim(fd: int, diversion: Callable[[], int]) -> tuple[int, Callable[[], None]]:
    """Serve `fd`'s wire from a private close-on-exec duplicate and point `fd` at `diversion()`.
    Returns the duplicate and the function that puts the wire back on `fd`."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        divert = diversion()
    except OSError:  # nothing to divert to: serve in place (fd keeps the wire as well)
        return private, lambda: None
    try:
        os.dup2(divert, fd)
    finally:
        os.close(divert)

    def restore() -> None:
        with suppress(OSError):
            os.dup2(private, fd)

    return private, restore


class Inbound(asyncio.Protocol):
    """stdin's protocol. With a lane, lines are split where they arrive and the lane is offered each one (a call it
    takes starts right there, with no reader task to wake); what it leaves, and a last line without its newline,
    goes on as bytes to `StdinMessages`, the SDK's read stream. Reading pauses while that stream lags behind."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.lane: StdioLane | None = None
        self.max_line_bytes = max_line_bytes
        self._transport: asyncio.ReadTransport | None = None
        self._buffer = bytearray()
        self._dropping = False
        """Inside a line over `max_line_bytes`: its bytes are dropped until its newline."""
        self._chunks: deque[bytes] = deque()
        self._queued = 0
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        lane = self.lane
        if lane is None:
            self._queue(data)
            return
        if self._dropping:  # the rest of a line over the limit
            end = data.find(b"\n")
            if end < 0:
                return
            self._dropping = False
            data = data[end + 1:]
        buffer = self._buffer
        buffer += data
        if b"\n" not in data:
            if len(buffer) > self.max_line_bytes:
                self._too_long(lane, buffer, ended=False)
            return
        *lines, rest = bytes(buffer).split(b"\n")
        buffer[:] = rest
        left = []
        for line in lines:
            if len(line) > self.max_line_bytes:
                self._too_long(lane, line, ended=True)
            elif not lane.take(line):
                left.append(line)
        if left:
            left.append(b"")
            self._queue(b"\n".join(left))
        if len(buffer) > self.max_line_bytes:
            self._too_long(lane, buffer, ended=False)

    def _too_long(self, lane: StdioLane, line: bytes | bytearray, *, ended: bool) -> None:
        """A line over the limit: refused (`StdioLane.refuse`, from its first bytes, the only ones copied); a line
        not ended yet is dropped as it goes on, so it is never held."""
        lane.refuse(bytes(line[:REFUSED_HEAD_BYTES]), self.max_line_bytes)
        if not ended:
            self._buffer.clear()
            self._dropping = True

    def eof_received(self) -> bool:
        self._end()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        if self._ended:
            return
        if self._buffer:  # a last line without its newline: the reader decides what it is
            self._queue(bytes(self._buffer))
            self._buffer.clear()
        self._ended = True
        self._wake()

    def _queue(self, data: bytes) -> None:
        self._chunks.append(data)
        self._queued += len(data)
        if self._queued > _QUEUED_MAX and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def chunk(self) -> bytes:
        """The next bytes for the SDK's reader; b"" at the end of stdin."""
        while not self._chunks:
            if self._ended:
                return b""
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        data = self._chunks.popleft()
        self._queued -= len(data)
        if self._paused and self._queued <= _QUEUED_MAX // 2 and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return data


class StdinMessages(LineMessages):
    """The read side: one JSON-RPC message (or the exception that parsing a line raised) per line of stdin."""

    keep_last_line = True  # as the SDK's server reads it

    def __init__(self, inbound: Inbound) -> None:
        super().__init__()
        self._inbound = inbound

    async def _chunk(self) -> bytes:
        return await self._inbound.chunk()

    def _message(self, line: bytes) -> SessionMessage | Exception:
        return _parse(line)


def _parse(line: bytes) -> SessionMessage | Exception:
    try:  # decoded with replacement first, as the SDK's text reader does
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line.decode("utf-8", "replace"),
                                                                           by_name=False))
    except Exception as exc:  # handed to the server, which answers or logs it (as with the SDK's transport)
        return exc


class StdoutMessages:
    """The write side: each message is one `write` of its JSON line, then a drain (the pipe's back-pressure)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._closed = False
        self.lane: StdioLane | None = None
        """Told of what the SDK writes (the handshake's `initialize` answer); closed before this stream."""

    async def send(self, item: SessionMessage) -> None:
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        await self.write_frame(data.encode() + b"\n")
        lane = self.lane
        if lane is not None:
            lane.sent(item.message)

    async def write_frame(self, data: bytes) -> None:
        """Write one whole JSON-RPC line (the SDK's messages and the lane's)."""
        if self._closed:
            raise anyio.ClosedResourceError
        writer = self._writer
        if writer.is_closing():
            raise anyio.BrokenResourceError
        writer.write(data)
        try:
            await writer.drain()
        except (ConnectionError, OSError) as exc:  # the client closed its end
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        lane, self.lane = self.lane, None
        if lane is not None:  # the SDK's loop ended: the lane's calls are answered while the pipe is open
            await lane.aclose()
        self._closed = True

    async def __aenter__(self) -> StdoutMessages:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


@asynccontextmanager
async def stdio_streams(server: Any = None,
                        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) for `Server.run`, on the process's stdin and stdout; with the SDK `server`,
    its `tools/call` requests are served by a `StdioLane` (not on the threaded fallback), and a line over
    `max_line_bytes` is refused without being held (`Inbound`)."""
    if not (_watchable(0) and _watchable(1)):
        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    in_fd, restore_in = _claim(0, lambda: os.open(os.devnull, os.O_RDONLY))
    try:
        out_fd, restore_out = _claim(1, lambda: os.dup(2))
    except BaseException:
        restore_in()
        os.close(in_fd)
        raise
    inbound = Inbound(max_line_bytes)
    read_transport: asyncio.BaseTransport | None = None
    write_transport: asyncio.BaseTransport | None = None
    try:
        write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                                  os.fdopen(out_fd, "wb", buffering=0))
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)  # type: ignore[arg-type]
        read_stream, write_stream = StdinMessages(inbound), StdoutMessages(writer)
        if server is not None:  # before stdin is read: the lane must see the connection's first request
            inbound.lane = write_stream.lane = StdioLane(server, write_stream.write_frame)
        read_transport, _ = await loop.connect_read_pipe(lambda: inbound, os.fdopen(in_fd, "rb", buffering=0))
        try:
            yield read_stream, write_stream
        finally:
            if write_transport.get_write_buffer_size():  # type: ignore[attr-defined]
                with suppress(Exception):  # the last replies, when the client still reads them
                    await asyncio.wait_for(writer.drain(), _FLUSH_S)
    finally:
        restore_out()
        restore_in()
        for transport, fd in ((write_transport, out_fd), (read_transport, in_fd)):
            with suppress(OSError):
                os.set_blocking(fd, True)  # the file description may be a terminal the shell keeps using
            if transport is not None:
                transport.close()
            else:
                with suppress(OSError):
                    os.close(fd)
