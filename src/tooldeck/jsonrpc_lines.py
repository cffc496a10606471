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

    async def _chunk(self) -> bytes:
        """The next bytes, b"" at the end of the source."""
        raise NotImplementedError

    def _message(self, line: bytes) -> SessionMessage | Exception | None:
        """What a line (without its newline) is; None when it was taken by something else and is not one."""
        raise NotImplementedError

    async def receive(self) -> SessionMessage | Exception:
        if self._closed:
            raise anyio.ClosedResourceError
        buffer = self._buffer
        while True:
            end = buffer.find(b"\n", self._scanned)
            if end < 0:
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
