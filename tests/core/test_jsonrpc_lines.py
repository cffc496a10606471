"""`LineMessages` (jsonrpc_lines.py), the line reader under both stdio transports, on any chunking of any bytes:
one message per line whatever the chunk edges, and with a line limit, the stream ends at the first line over it
(whose bytes are dropped, not held)."""

from __future__ import annotations

import asyncio
import itertools

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.jsonrpc_lines import LineMessages


class Chunks(LineMessages):
    def __init__(self, chunks: list[bytes], limit: int | None) -> None:
        super().__init__()
        self.chunks = list(chunks)
        self.limit = limit
        self.over: list[int] = []

    async def _chunk(self) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""

    def _line_limit(self) -> int | None:
        return self.limit

    def _over_limit(self, size: int) -> None:
        self.over.append(size)

    def _message(self, line: bytes) -> bytes:  # type: ignore[override]
        return line


async def _read(reader: Chunks) -> list[bytes]:
    out = []
    try:
        while True:
            out.append(await reader.receive())
    except anyio.EndOfStream:
        return out


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    edges = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


lines = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12)


@settings(max_examples=300, deadline=None)
@given(lines, st.lists(st.integers(0, 10_000), max_size=10), st.none() | st.integers(0, 30))
def test_any_chunking_gives_the_lines_up_to_the_first_one_over_the_limit(body: list[bytes], cuts: list[int],
                                                                         limit: int | None) -> None:
    data = b"".join(line + b"\n" for line in body)
    reader = Chunks(_split(data, cuts), limit)
    got = asyncio.run(_read(reader))
    if limit is None:
        assert got == body and reader.over == []
        return
    # a line is judged once more than `limit` bytes of it are buffered without a newline: a line over the limit
    # may still pass when its newline came in the same chunk; the stream never yields one past the first refusal
    assert got == body[:len(got)]
    if reader.over:
        assert len(reader.over) == 1 and reader.over[0] > limit
        assert asyncio.run(_read(reader)) == []  # ended for good
    else:
        assert got == body


def test_an_endless_line_is_not_held_past_the_limit() -> None:
    reader = Chunks([b"a\n"] + [b"x" * 1000] * 1000, limit=4096)
    got = asyncio.run(_read(reader))
    assert got == [b"a"] and reader.over == [5000]
    assert len(reader.chunks) == 995  # it stopped reading, 5 chunks into the line
    assert reader._buffer == bytearray()
