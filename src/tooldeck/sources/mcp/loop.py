"""One dedicated background thread with its own event loop for every MCP session (`BackgroundLoop`), and the
slot a manager keeps it in (`LoopSlot`).

A Runtime may be driven from its private loop (the sync facade), from the host's loop
(`await inv.arun(...)`) or from `tooldeck serve`'s loop; MCP sessions hold anyio task groups and
subprocess pipes that belong to the loop that opened them. So they all live here, and callers hop
over with `run_coroutine_threadsafe` + `wrap_future` (cancellation crosses the hop both ways).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class BackgroundLoop:
    def __init__(self, name: str = "tooldeck-mcp") -> None:
        self.loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._started.wait()
        self.closed = False

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        try:
            self.loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def in_loop(self) -> bool:
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the MCP loop from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` on the MCP loop (from any event loop: on the MCP loop itself, as `tooldeck serve` runs, it
        is awaited in place, with no hop); cancelling the caller cancels it."""
        if self.in_loop():
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def run_sync(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Block the calling thread (not the MCP thread) until `coro` finishes on the MCP loop."""
        if self.in_loop():
            coro.close()
            raise RuntimeError("BackgroundLoop.run_sync called from the MCP loop itself")
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the MCP loop did not finish within {timeout} s") from None

    def stop(self, timeout: float = 10.0) -> None:
        """Cancel what is left on the loop, stop it and join the thread."""
        if self.closed:
            return
        self.closed = True

        async def _cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=timeout)

        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                self.submit(_cancel_all()).result(timeout + 1)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)


class LoopSlot:
    """A manager's MCP loop: none until first used (a manager that only reads caches starts no thread),
    at most one, and `closed` once the manager is closed (nothing is sent after that)."""

    def __init__(self) -> None:
        self.started: BackgroundLoop | None = None
        self.closed = False
        self._lock = threading.Lock()

    def get(self) -> BackgroundLoop:
        """The loop, started on first use."""
        loop = self.started
        if loop is None:
            with self._lock:
                if self.started is None:
                    self.started = BackgroundLoop()
                loop = self.started
        return loop
