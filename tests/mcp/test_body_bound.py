"""`transport.bounded_bodies`: an HTTP server's JSON reply is read up to MAX_MESSAGE_BYTES decoded, whatever its
framing (a Content-Length or none), chunking and compression; past it the read stops with `MessageTooLarge` and
the evidence names the limit. A reply whose declared length is within the bound and not compressed is not counted
(the HTTP framing ends it there)."""

from __future__ import annotations

import asyncio
import gzip
import itertools
from collections.abc import AsyncIterator

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.sources.mcp import transport
from tooldeck.sources.mcp.evidence import Evidence

LIMIT = 4096


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.sent += len(chunk)
            yield chunk


def _read(body: bytes, compressed: bool, declared: bool, cuts: list[int],
          content_type: str = "application/json") -> tuple[bytes | None, Evidence, _Chunks]:
    wire = gzip.compress(body) if compressed else body
    points = sorted({min(c, len(wire)) for c in cuts} | {0, len(wire)})
    stream = _Chunks([wire[a:b] for a, b in itertools.pairwise(points)])
    headers = {"content-type": content_type}
    if compressed:
        headers["content-encoding"] = "gzip"
    if declared:
        headers["content-length"] = str(len(wire))
    evidence = Evidence()
    response = httpx2.Response(200, headers=headers, stream=stream,
                               request=httpx2.Request("POST", "http://127.0.0.1:9/mcp"))

    async def read() -> bytes | None:
        await transport.bounded_bodies(evidence)(response)
        try:
            return await response.aread()
        except transport.MessageTooLarge:
            return None

    return asyncio.run(read()), evidence, stream


@given(size=st.integers(0, 3 * LIMIT), compressed=st.booleans(), declared=st.booleans(),
       cuts=st.lists(st.integers(0, 3 * LIMIT), max_size=6), byte=st.binary(min_size=1, max_size=1))
@settings(max_examples=200)
def test_a_reply_is_read_whole_up_to_the_limit_and_cut_past_it(size: int, compressed: bool, declared: bool,
                                                                cuts: list[int], byte: bytes) -> None:
    body = byte * size  # compresses well: a small wire can decode past the limit
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(transport, "MAX_MESSAGE_BYTES", LIMIT)
        got, evidence, _ = _read(body, compressed, declared, cuts)
    if size <= LIMIT:
        assert got == body and evidence.message_too_large is None
    else:
        assert got is None and evidence.message_too_large == LIMIT


def test_a_compression_bomb_is_cut_before_it_is_all_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """16 KiB of gzip that decodes to 16 MiB, declared by its (small) compressed length: cut at the limit."""
    monkeypatch.setattr(transport, "MAX_MESSAGE_BYTES", LIMIT)
    bomb = gzip.compress(b"\0" * (1 << 24))
    wire_chunks = [bomb[i:i + 1024] for i in range(0, len(bomb), 1024)]
    stream = _Chunks(wire_chunks)
    response = httpx2.Response(200, headers={"content-type": "application/json", "content-encoding": "gzip",
                                             "content-length": str(len(bomb))}, stream=stream,
                               request=httpx2.Request("POST", "http://127.0.0.1:9/mcp"))
    evidence = Evidence()

    async def read() -> None:
        await transport.bounded_bodies(evidence)(response)
        with pytest.raises(transport.MessageTooLarge):
            await response.aread()

    asyncio.run(read())
    assert evidence.message_too_large == LIMIT
    assert stream.sent < len(bomb)  # it stopped reading the wire, too


def test_an_event_stream_is_left_to_its_event_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "MAX_MESSAGE_BYTES", LIMIT)
    body = b"data: " + b"x" * (2 * LIMIT) + b"\n\n"
    got, evidence, _ = _read(body, False, False, [], content_type="text/event-stream")
    assert got == body and evidence.message_too_large is None
