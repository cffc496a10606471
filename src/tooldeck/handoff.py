"""The thread hand-off for blocking sync tools.

A blocking sync tool runs on a worker thread so the event loop stays free. `asyncio.to_thread` costs
two cross-thread wake-ups plus a concurrent.futures Future chained to an asyncio one, and the loop's
wake-up through its self-pipe; together most of a small tool's cost (docs/benchmarks.md, "Sync tools
and traces"). Here a job goes to a kept pool of worker threads through a `SimpleQueue`, and the caller
may then wait for it for a short window (`WINDOW_S`) with the interpreter lock released: a tool that
finishes inside the window costs no future, no self-pipe write and no loop iteration. One that does
not is awaited as usual (the worker wakes the loop with `call_soon_threadsafe`), and its next call
skips the window until a call of it runs shorter than the window again, so a slow tool holds the loop
for at most one window, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

WINDOW_S = 0.0002
"""How long the event loop may wait for a blocking tool before it awaits it instead (200 µs)."""

_guard = threading.Lock()
"""Orders a job's finish against its caller switching from the window to awaiting (held for a few
instructions, and only by that race's two parties)."""


class Job:
    """One call on a worker thread: `fn` in a copy of the caller's context (as `asyncio.to_thread`)."""

    __slots__ = ("_done", "_future", "_loop", "_run", "elapsed", "exc", "finished", "value")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._run = contextvars.copy_context().run
        self._done = threading.Lock()
        self._done.acquire()
        self._future: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.value: Any = fn  # the callable until it has run, then its value
        self.exc: BaseException | None = None
        self.finished = False
        self.elapsed = 0.0

    def run(self) -> None:
        """On the worker thread."""
        start = time.perf_counter()
        try:
            self.value = self._run(self.value)
        except BaseException as exc:  # handed to the caller, who decides what it means
            self.exc = exc
            self.value = None
        self.elapsed = time.perf_counter() - start
        with _guard:
            self.finished = True
            future = self._future
        if future is None:
            self._done.release()
            return
        with contextlib.suppress(RuntimeError):  # the loop was closed while the tool ran: nobody waits any more
            self._loop.call_soon_threadsafe(_wake, future)  # type: ignore[union-attr]

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the job on the calling thread (the interpreter lock released)."""
        return self._done.acquire(True, timeout)

    def result(self) -> Any:
        if self.exc is not None:
            exc, self.exc = self.exc, None  # no reference cycle through the traceback
            raise exc
        return self.value

    async def settled(self) -> None:
        """Await the job's end from the event loop (`result()` then gives its value or raises its exception)."""
        future = None
        with _guard:
            if not self.finished:
                loop = asyncio.get_running_loop()
                future = self._future = loop.create_future()
                self._loop = loop
        if future is not None:
            await future


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():  # cancelled (a timeout) while the tool ran
        future.set_result(None)


class Workers:
    """Kept worker threads fed from one queue; a thread is added only when none is idle, up to `max_workers`."""

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._queue: SimpleQueue[Job] = SimpleQueue()
        self._idle: deque[None] = deque()
        """One entry per idle worker (deque's append and pop are atomic; a Semaphore costs µs)."""
        self._threads: list[threading.Thread] = []
        self._spawn_lock = threading.Lock()

    def submit(self, job: Job) -> None:
        if self._idle:
            try:
                self._idle.pop()
            except IndexError:  # another thread took the last idle worker
                self._spawn()
        else:
            self._spawn()
        self._queue.put(job)

    def _spawn(self) -> None:
        with self._spawn_lock:
            if len(self._threads) >= self.max_workers:
                return
            # Daemon threads: a tool stuck in a blocking call cannot hold the interpreter's exit.
            thread = threading.Thread(target=_work, args=(self._queue, self._idle), daemon=True,
                                      name=f"tooldeck-tool-{len(self._threads)}")
            thread.start()
            self._threads.append(thread)

    @property
    def size(self) -> int:
        return len(self._threads)


def _work(queue: SimpleQueue[Job], idle: deque[None]) -> None:
    get, ready = queue.get, idle.append
    while True:
        job = get()
        job.run()
        del job
        ready(None)


_slow: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()
"""The tools whose last call outlasted the window: their next call is awaited without one."""

workers = Workers(min(32, (os.cpu_count() or 1) + 4))  # what asyncio's default executor would use


def _after_fork() -> None:
    global workers
    workers = Workers(workers.max_workers)  # the parent's threads do not exist in the child


os.register_at_fork(after_in_child=_after_fork)


def start(fn: Callable[[], Any]) -> Job:
    job = Job(fn)
    workers.submit(job)
    return job


def wants_window(tool: Callable[..., Any]) -> bool:
    try:
        return tool not in _slow
    except TypeError:  # not weak-referenceable: always gets the window
        return True


def missed_window(tool: Callable[..., Any]) -> None:
    with contextlib.suppress(TypeError):
        _slow.add(tool)


def finished(tool: Callable[..., Any], job: Job) -> None:
    """After an awaited job: a tool that ran within the window gets the window again."""
    if job.elapsed <= WINDOW_S:
        with contextlib.suppress(TypeError):
            _slow.discard(tool)
