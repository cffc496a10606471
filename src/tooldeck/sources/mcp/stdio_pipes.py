"""The stdio transport to an MCP server process, read and written by the tasks that use it.

The SDK's `stdio_client` bridges the server's pipes to the session through two tasks and two zero-buffer
memory streams: every message the session sends, and every line the server writes, is a hand-off between
tasks (a wake-up of each, through anyio's stream machinery). Here the session's read loop reads the
server's stdout itself (`PipeReader`: one line, one parsed message) and a sender writes its own frame to
the server's stdin (`PipeWriter`: one `write` of the whole line, so concurrent messages never interleave).

`raw_relay.RawChannel` takes its replies before they are parsed: a line that carries one of its request ids
(`RAW_MARK`) is offered to it as a plain decoded object, and only what it does not take is validated into a
`SessionMessage`; its requests are written with `send_raw`, without a model.

The process's pipes are read and written through the asyncio streams under anyio's wrappers when those are
the known ones (`_asyncio_stream`): anyio ends each write with a shielded checkpoint, a turn of the event loop and
a cancel scope per message on the path of every relayed call.

What stays the SDK's: spawning the process (its own session/process group, stderr into `errlog`, the
default environment) and stopping it (stdin closed, a grace period, then the whole tree killed), shielded
from cancellation. As in the SDK, the server's remaining stdout is drained while it stops (a server blocked
writing could not see its stdin close), a line that is not JSON-RPC reaches the session as the exception its
parse raised (noted in `Evidence` as it is read), and a failed write ends the read stream, so the session
sees the connection close instead of a request hanging — at the server's own end of stdout, or a second later
(`PipeReader.end_soon`), so that what the server wrote before (a usage line, then exit) is still read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from types import TracebackType
from typing import IO, Any

import anyio
import mcp_types as types
import orjson
from mcp.client.stdio import (
    StdioServerParameters,
    _create_platform_compatible_process,
    _get_executable_command,
    _stop_server_process,
    get_default_environment,
)
from mcp.shared.message import SessionMessage

from tooldeck.jsonrpc_lines import READ_CHUNK, LineMessages
from tooldeck.sources.mcp.evidence import Evidence

log = logging.getLogger("tooldeck.mcp")

RAW_MARK = b'"tooldeck-relay-'
"""In every line that answers or reports on a relayed call (`raw_relay.RAW_PREFIX`, as a JSON string)."""
MAX_LINE_BYTES = 64 << 20
"""The longest line a server may write on stdout (one JSON-RPC message: a 40 MiB image, base64, fits). A server
that writes more without a newline is broken or hostile: its connection is closed rather than held in memory."""
_WRITE_FAILED_GRACE_S = 1.0
"""After a failed write, how long the read side waits for the server's end of stdout before it ends anyway."""

Taker = Callable[[dict[str, Any]], bool]


class PipeReader(LineMessages):
    """The session's read stream: one JSON-RPC message (or the exception that parsing a line raised) per line
    of the server's stdout. `taker` (the raw relay's) sees the lines of relayed calls first."""

    def __init__(self, stdout: Any, evidence: Evidence) -> None:
        super().__init__()
        self._stdout = stdout
        self._stream = _asyncio_stream(stdout, asyncio.StreamReader)
        self._evidence = evidence
        self.taker: Taker | None = None
        self.on_over_limit: Callable[[], None] | None = None
        """Stops the server (`stdio_pipes`): nothing it writes after such a line can be read, and a connection
        whose stream ended is otherwise torn down only at the next connect."""
        self._ending: asyncio.TimerHandle | None = None
        self._idle = False
        """The session waits in `receive` for more of stdout: it has handled every message read before."""
        stream = self._stream
        if stream is not None and isinstance(getattr(stream, "_buffer", None), bytearray):
            self._feed_stream = stream.feed_data
            stream.feed_data = self._feed  # the pipe's protocol hands each chunk to the stream here

    def _feed(self, data: bytes) -> None:
        """A chunk of the server's stdout as it arrives. When the session waits for more (so it has handled every
        message before: a relayed call's log lines and requests are not overtaken by its answer) and the chunk
        ends a line, the lines of relayed calls are handed to the taker right here: the call's task wakes once,
        not after a wake of the reader task first. From the first line the taker leaves on, the rest goes to the
        stream in order, as every chunk otherwise."""
        taker = self.taker
        if taker is None or not self._idle or self._buffer or self._stream._buffer \
                or not data.endswith(b"\n") or RAW_MARK not in data:
            self._feed_stream(data)
            return
        start = 0
        end = len(data)
        while start < end:
            stop = data.index(b"\n", start)
            line = data[start:stop]
            try:
                if not (RAW_MARK in line and _taken(taker, line)):
                    break
            except Exception:  # the reader meets it again, where a fault of the taker always surfaced
                break
            start = stop + 1
        if start < end:
            self._feed_stream(data[start:] if start else data)

    def end_soon(self, grace_s: float | None = None) -> None:
        """A write to the server failed: end this stream at the server's own end of stdout, or `grace_s` later at
        the latest (a server that closed stdin may still run). What it wrote before is still read: a failed write
        is often a server that printed a line (a usage text) and exited, and that line says why it failed;
        closing the stream at once drops what the pipe still holds."""
        if self._ending is None:
            self._ending = asyncio.get_running_loop().call_later(
                _WRITE_FAILED_GRACE_S if grace_s is None else grace_s, self._end_now)

    def _end_now(self) -> None:
        stream = self._stream
        if stream is not None:
            stream.set_exception(anyio.ClosedResourceError())  # what anyio's `aclose` does, without the await
        else:
            asyncio.get_running_loop().create_task(self._stdout.aclose())

    async def aclose(self) -> None:
        await super().aclose()
        if self._ending is not None:
            self._ending.cancel()

    async def _chunk(self) -> bytes:
        try:
            if self._stream is not None:
                self._idle = True
                try:
                    return await self._stream.read(READ_CHUNK)
                finally:
                    self._idle = False
            return await self._stdout.receive(READ_CHUNK)  # type: ignore[no-any-return]
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            # The server closed stdout, or a failed write ended the stream: as the SDK, a last line without its
            # newline is dropped.
            return b""

    def _line_limit(self) -> int | None:
        return MAX_LINE_BYTES

    def _over_limit(self, size: int) -> None:
        log.warning("MCP server stdout: a line of more than %d bytes without its end (%d so far): the connection "
                    "is closed and the server stopped", MAX_LINE_BYTES, size)
        self._evidence.message_too_large = MAX_LINE_BYTES
        if self.on_over_limit is not None:
            self.on_over_limit()

    def _message(self, line: bytes) -> SessionMessage | Exception | None:
        taker = self.taker
        if taker is not None and RAW_MARK in line and _taken(taker, line):
            return None
        text = line.decode("utf-8", "replace")
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
        except ValueError as exc:
            log.debug("MCP server stdout line is not JSON-RPC: %r", text[:200])
            self._evidence.add_noise(text)
            return exc


def _asyncio_stream(wrapper: Any, kind: type[Any]) -> Any:
    """The asyncio stream under anyio's process stream wrapper, read and written directly: anyio's `send` ends
    every write with a shielded checkpoint, one more turn of the event loop and a cancel scope per message. None
    (the wrapper is used) when the wrapper is not the one known."""
    stream = getattr(wrapper, "_stream", None)
    return stream if isinstance(stream, kind) else None


def _taken(taker: Taker, line: bytes) -> bool:
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(data, dict) and taker(data)


class PipeWriter:
    """The session's write stream: each message is one write of its JSON line to the server's stdin."""

    __slots__ = ("_closed", "_reader", "_stdin", "_stream")

    def __init__(self, stdin: Any, reader: PipeReader) -> None:
        self._stdin = stdin
        self._stream = _asyncio_stream(stdin, asyncio.StreamWriter)
        self._reader = reader
        self._closed = False

    async def send(self, item: SessionMessage) -> None:
        await self._write((item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())

    async def send_raw(self, message: dict[str, Any]) -> None:
        """Write a JSON-RPC message given as a plain object (the raw relay's requests)."""
        try:
            data = orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:  # a value orjson does not know (bytes, a set …): the SDK's serializer takes it
            data = (types.jsonrpc_message_adapter.validate_python(message).model_dump_json(
                by_alias=True, exclude_unset=True) + "\n").encode()
        await self._write(data)

    async def _write(self, data: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        stream = self._stream
        try:
            if stream is None:
                await self._stdin.send(data)
            elif stream.is_closing():
                raise anyio.BrokenResourceError
            else:
                stream.write(data)
                await stream.drain()  # returns at once unless the pipe is full; raises when the server is gone
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError, RuntimeError):
            # As the SDK's writer: the server may still be alive, so end the read stream and let the session
            # see the connection close rather than wait for a reply that cannot come.
            self._closed = True
            self._reader.end_soon()

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> PipeWriter:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


def _terminate(process: Any) -> None:
    with suppress(ProcessLookupError, OSError):
        process.terminate()  # the whole tree still goes at the connection's teardown (`_stop_server_process`)


async def _drain(stdout: Any) -> None:
    """Read and drop the server's remaining stdout, so that a server blocked writing can see stdin close."""
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
        while True:
            await stdout.receive(READ_CHUNK)


@asynccontextmanager
async def stdio_pipes(params: StdioServerParameters, errlog: IO[str],
                      evidence: Evidence) -> AsyncIterator[tuple[PipeReader, PipeWriter]]:
    """Spawn the server and yield (read stream, write stream) on its stdout and stdin; stop it on exit."""
    command = await _get_executable_command(params.command)
    process = await _create_platform_compatible_process(
        command=command, args=params.args, env=get_default_environment() | (params.env or {}), errlog=errlog,
        cwd=params.cwd)
    assert process.stdout is not None and process.stdin is not None
    reader = PipeReader(process.stdout, evidence)
    reader.on_over_limit = lambda: _terminate(process)
    writer = PipeWriter(process.stdin, reader)
    try:
        yield reader, writer
    finally:
        # Shielded, every wait inside bounded (the SDK's stop): a cancelled caller must not leak the process.
        with anyio.CancelScope(shield=True):
            await reader.aclose()
            await writer.aclose()
            drain = asyncio.get_running_loop().create_task(_drain(process.stdout))
            try:
                await _stop_server_process(process)  # closes stdout last, which ends the drain
            finally:
                drain.cancel()
                with suppress(asyncio.CancelledError):
                    await drain
