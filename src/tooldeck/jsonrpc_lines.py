"""A receive stream of JSON-RPC messages read one line at a time from a byte source: the read side of both stdio
transports (`server/stdio.py`, facing the client; `sources/mcp/stdio_pipes.py`, facing an upstream server), which
differ only in where the bytes come from, what a line becomes, and what happens to a last line without its newline."""

from __future__ import annotations

from types import TracebackType
from typing import Self

import anyio
from mcp.shared.message import SessionMessage

READ_CHUNK = 1 << 16


class LineMessages:
    """`receive()` → one message (or the exception parsing its line raised) per line; `anyio.EndOfStream` at
    the end, `anyio.ClosedResourceError` after `aclose`. Subclasses give `_chunk` and `_message`."""

    keep_last_line = False
    """a last line without its newline is a message (the SDK's server reader) or dropped (its client reader)"""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._scanned = 0
        self._closed = False
        self._ended = False

    def _line_limit(self) -> int | None:
        """The most bytes a line may have; past it (no newline yet) `_over_limit` and the stream ends. None: any."""
        return None

    def _over_limit(self, size: int) -> None:
        """The source wrote `size` bytes of one line, over `_line_limit()` (they are dropped, and the stream ends)."""

    async def _chunk(self) -> bytes:
        """The next bytes, b"" at the end of the source."""
        raise NotImplementedError

    def _message(self, line: bytes) -> SessionMessage | Exception | None:
        """What a line (without its newline) is; None when it was taken by something else and is not one."""
        raise NotImplementedError

    async def receive(self) -> SessionMessage | Exception:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._ended:
            raise anyio.EndOfStream
        buffer = self._buffer
        while True:
            end = buffer.find(b"\n", self._scanned)
            if end < 0:
                limit = self._line_limit()
                if limit is not None and len(buffer) > limit:
                    self._ended = True
                    self._over_limit(len(buffer))
                    buffer.clear()
                    self._scanned = 0
                    raise anyio.EndOfStream
                self._scanned = len(buffer)
                chunk = await self._chunk()
                if chunk:
                    buffer += chunk
                    continue
                if not (buffer and self.keep_last_line):
                    raise anyio.EndOfStream
                end = len(buffer)
            line = bytes(buffer[:end])
            del buffer[:end + 1]
            self._scanned = 0
            message = self._message(line)
            if message is not None:
                return message

    async def aclose(self) -> None:
        self._closed = True

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
