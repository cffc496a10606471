"""What the provider clients' tests share: `complete_once` (one request through a fresh client, with the
stream events it reported) and `CutStream`, a transport whose stream is the SSE text of a mock `Reply`
cut at given points, for the "streamed = plain, however it is chunked" properties (no HTTP: those test
the assembly; the other provider tests run the same code over the loopback server)."""

from __future__ import annotations

import itertools
from typing import Any

from tests.agent.mock_provider import Reply
from tooldeck.agent.providers import make_client
from tooldeck.agent.types import ModelConfig, ModelRequest, ModelTurn, StreamEvent


async def complete_once(config: ModelConfig, kind: type, request: ModelRequest) -> tuple[ModelTurn, list[StreamEvent]]:
    """The turn of one request through a new client of `config` (which must be a `kind`), and its events."""
    client = make_client(config)
    assert isinstance(client, kind)
    events: list[StreamEvent] = []
    try:
        return await client.complete(request, events.append), events
    finally:
        await client.aclose()


class CutStream:
    def __init__(self, reply: Reply, cuts: list[int]) -> None:
        whole = "".join(reply.chunks or ())
        points = sorted({c % (len(whole) + 1) for c in cuts} | {0, len(whole)})
        self.pieces = [whole[a:b] for a, b in itertools.pairwise(points)]

    async def stream_sse(self, url: str, body: Any, headers: Any = None) -> Any:
        from tooldeck.agent.sse import iter_sse

        async def chunks() -> Any:
            for piece in self.pieces:
                yield piece

        async for event in iter_sse(chunks()):
            yield event

    async def aclose(self) -> None:
        return None
