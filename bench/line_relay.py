"""A do-nothing stdio relay: `python -m bench.line_relay CMD ARGS…` starts CMD and copies lines both ways
(stdin → CMD's stdin, CMD's stdout → stdout) without reading them.

`bench/mcp_bench.py` puts it between the official client and the fixture server (`relay stdio`): the floor of
what any Python process in the middle of an MCP stdio call costs on the host of the run (two more pipe hops, an
event loop, a third process on the cores), so that a run shows how much of `tooldeck serve`'s added time is the
hop itself and how much is tooldeck's work (gate, records, projection, the SDK's per-version checks).

`LINE_RELAY_WORK=PLACE:MICROSECONDS[:BYTES]` makes the relay spend that much CPU on each `tools/call` it relays,
at one place of the call: `before` (before it writes the request on, where the client waits for it), `during`
(after it wrote the request, while the server works) or `after` (after it wrote the answer back, while the client
reads it and sends the next call). With BYTES the work writes every cache line of a buffer that large, at least once
(a working set as large as a core's caches, or larger), else it allocates a few small objects.
`bench/hop_placement_bench.py` uses it to measure which work of a process in the middle the caller pays for.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable

LINE_LIMIT = 1 << 26
"""The longest line relayed (a result with a large image is one line)."""
PLACES = ("before", "during", "after")
CACHE_LINE = 64


class Work:
    """The CPU the relay spends per relayed call (`LINE_RELAY_WORK`)."""

    def __init__(self, spec: str) -> None:
        place, _, rest = spec.partition(":")
        micros, _, size = rest.partition(":")
        if place not in PLACES or not micros:
            raise SystemExit(f"LINE_RELAY_WORK={spec!r}: expected PLACE:MICROSECONDS[:BYTES], PLACE one of "
                             f"{', '.join(PLACES)}")
        self.place = place
        self.seconds = float(micros) / 1e6
        self.buffer = bytearray(int(size or 0))
        self._lines = bytes(len(self.buffer[::CACHE_LINE]))

    def run(self) -> None:
        end = time.thread_time() + self.seconds
        buffer, kept = self.buffer, []
        while True:
            if buffer:
                buffer[::CACHE_LINE] = self._lines  # one write in every cache line of the buffer
            else:
                kept.append({"a": [1, 2, 3], "b": "x" * 50})
                if len(kept) > 200:
                    kept.clear()
            if time.thread_time() >= end:
                return


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, mark: bytes = b"",
                before: Callable[[], None] | None = None, after: Callable[[], None] | None = None) -> None:
    """Copy lines from `reader` to `writer`; around each line holding `mark`, `before` and `after` run."""
    while line := await reader.readline():
        marked = mark in line
        if marked and before is not None:
            before()
        writer.write(line)
        await writer.drain()
        if marked and after is not None:
            after()
    writer.close()


async def relay(argv: list[str]) -> int:
    loop = asyncio.get_running_loop()
    child = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                 limit=LINE_LIMIT)
    assert child.stdin is not None and child.stdout is not None
    stdin = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), os.fdopen(0, "rb", buffering=0))
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                        os.fdopen(1, "wb", buffering=0))
    stdout = asyncio.StreamWriter(transport, protocol, None, loop)  # type: ignore[arg-type]
    spec = os.environ.get("LINE_RELAY_WORK")
    work = Work(spec) if spec else None

    def at(place: str) -> Callable[[], None] | None:
        return work.run if work is not None and work.place == place else None

    await asyncio.gather(_pump(stdin, child.stdin, b'"tools/call"', at("before"), at("during")),
                         _pump(child.stdout, stdout, b'"result"', None, at("after")))
    return await child.wait()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m bench.line_relay CMD [ARGS...]")
    sys.exit(asyncio.run(relay(sys.argv[1:])))
