"""Run `tooldeck serve` on the runtime's MCP loop, so that a proxied call never changes threads.

The MCP sessions of a Runtime live on one background loop (`sources/mcp/loop.py`). When the server ran on a
loop of its own, every proxied call crossed threads twice (to the MCP loop and back), each crossing a wake-up
of the other thread and a GIL hand-off: with the client's and the upstream server's processes on the same
cores, those hand-offs were a large part of what the gateway added to a call. Served on the MCP loop itself,
the call awaits the upstream session directly (`BackgroundLoop.run` does not hop when it is already there).

The main thread waits for the server and keeps the signals (only it can receive them): Ctrl-C or SIGTERM
(`serve_cmd` turns it into KeyboardInterrupt) asks the server to stop - `stop` is called on the loop (uvicorn:
its graceful shutdown) or, with none, the server task is cancelled - and the main thread waits for the end.
A second interrupt cancels the task. A runtime without MCP servers has no MCP loop: the server runs on a
loop of its own (`anyio.run`), as before.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import anyio

from tooldeck.runtime import Runtime

logger = logging.getLogger("tooldeck.serve")

STOP_WAIT_S = 10.0
"""How long the main thread waits for the server to end after it was cancelled."""


def serve_on_mcp_loop(runtime: Runtime, main: Callable[[], Coroutine[Any, Any, None]],
                      stop: Callable[[], None] | None = None) -> None:
    """Run `main()` to its end, on the MCP loop of `runtime` when it has one. KeyboardInterrupt during the run
    stops the server (`stop` on the loop, else a cancel; a second interrupt cancels) and returns once it
    ended, or after STOP_WAIT_S."""
    manager = runtime.mcp
    if manager is None or manager.closed:
        anyio.run(main)
        return
    background = manager.loop
    ended = threading.Event()
    task: list[asyncio.Task[Any]] = []

    async def run() -> None:
        current = asyncio.current_task()
        assert current is not None
        task.append(current)
        try:
            await main()
        finally:
            ended.set()

    future = background.submit(run())
    interrupts = 0
    while True:
        try:
            future.result()
            return
        except concurrent.futures.CancelledError:
            return
        except KeyboardInterrupt:
            interrupts += 1
            if interrupts == 1 and stop is not None:
                background.loop.call_soon_threadsafe(stop)
                continue
            if task:
                background.loop.call_soon_threadsafe(task[0].cancel)
            else:
                future.cancel()
            if not ended.wait(STOP_WAIT_S):
                logger.warning("the server did not stop within %g s of being cancelled", STOP_WAIT_S)
            return
