"""Server-sent events, parsed incrementally (the WHATWG `text/event-stream` rules).

Lines end with LF, CRLF or CR, also when a CRLF is split across two chunks. A blank line dispatches
the event; `data:` lines accumulate, joined by LF; a line starting with `:` is a comment; a field
without a colon has an empty value; one space after the colon is dropped. An event without data is
not dispatched (the spec's rule), and at the end of the stream a pending event is dispatched even
without its blank line (servers that omit the last one are common). `iter_sse` stops at the OpenAI
sentinel `data: [DONE]`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

_EOL = re.compile(r"\r\n|\r|\n")
DONE = "[DONE]"


@dataclass(frozen=True, slots=True)
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEParser:
    """Feed text chunks of any size; get the complete events each chunk finished."""

    __slots__ = ("_buf", "_data", "_event", "_id", "_retry", "_skip_lf", "_started")

    def __init__(self) -> None:
        self._buf = ""
        self._skip_lf = False
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, text: str) -> list[SSEEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._skip_lf:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        buf = self._buf + text
        out: list[SSEEvent] = []
        start = 0
        for m in _EOL.finditer(buf):
            self._line(buf[start:m.start()], out)
            start = m.end()
            if m.group() == "\r" and start == len(buf):
                self._skip_lf = True  # the LF of this CRLF may arrive with the next chunk
        self._buf = buf[start:]
        return out

    def finish(self) -> list[SSEEvent]:
        """The end of the stream: a last line without its end, and an event without its blank line."""
        out: list[SSEEvent] = []
        if self._buf:
            self._line(self._buf, out)
            self._buf = ""
        self._line("", out)
        return out

    def _line(self, line: str, out: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                out.append(SSEEvent("\n".join(self._data), self._event or "message", self._id, self._retry))
            self._data = []
            self._event = ""
            self._retry = None
            return
        if line[0] == ":":
            return
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)


async def iter_sse(chunks: AsyncIterable[str]) -> AsyncIterator[SSEEvent]:
    """The events of a stream of text chunks, up to `data: [DONE]` or the end. The chunks are read to
    their end even after `[DONE]` (which providers send last): an HTTP body iterator left half-read is
    a chain of httpx generators that only the garbage collector would close, by tasks on a loop that
    may have stopped by then."""
    parser = SSEParser()
    done = False
    async for chunk in chunks:
        if done:
            continue
        for event in parser.feed(chunk):
            if event.data == DONE:
                done = True
                break
            yield event
    if done:
        return
    for event in parser.finish():
        if event.data == DONE:
            return
        yield event
