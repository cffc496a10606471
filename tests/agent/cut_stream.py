"""`CutStream`: a transport whose stream is the SSE text of a mock `Reply` cut at given points, for the
providers' "streamed = plain, however it is chunked" properties (no HTTP: those test the assembly; the
other provider tests run the same code over the loopback server)."""

from __future__ import annotations

import itertools
from typing import Any

from tests.agent.mock_provider import Reply


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
