"""`Deadline`: `asyncio.timeout` with one timer per event loop, for the deadlines of the per-call path (a tool
call's timeout in dispatch.py, an MCP call's own in sources/mcp/calls.py and raw_relay.py): those are minutes
and the calls milliseconds, so a timer armed and cancelled per block was all cost and no use."""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from typing import Any


class Deadline:
    """`async with Deadline(seconds)`: `asyncio.timeout(seconds)` (the same cancellation of the task, the same
    `TimeoutError` out of the block, the same care for other cancellations), with one timer per event loop
    for every block waiting on it (`_Deadlines`) instead of a timer armed and cancelled per block.

    A tool call's timeout is minutes and the call mostly milliseconds: per call that costs a dict entry, not a
    timer handle pushed on the loop's heap, cancelled, and popped again. `None`: no deadline."""

    __slots__ = ("_cancelling", "_delay", "_expired", "_task", "_waiting", "when")
    _task: asyncio.Task[Any]
    _cancelling: int

    def __init__(self, delay: float | None) -> None:
        self._delay = delay
        self._expired = False
        self._waiting: dict[Deadline, None] | None = None
        self.when = 0.0

    async def __aenter__(self) -> Deadline:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Timeout should be used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        if self._delay is not None:
            loop = task.get_loop()
            self.when = loop.time() + self._delay
            deadlines = _DEADLINES.get(loop)
            if deadlines is None:
                deadlines = _deadlines(loop)
            self._waiting = deadlines.waiting
            deadlines.add(self)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: Any) -> None:
        if self._expired:
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc  # no other cancellation came: this one is ours
        elif self._waiting is not None:
            del self._waiting[self]

    def _expire(self) -> None:
        self._expired = True
        self._task.cancel()


class _Deadlines:
    """One per event loop: the `Deadline`s waiting on it (in the order they were entered) and one timer, at the
    earliest deadline it was armed for; when it fires it expires those due and moves to the next one."""

    __slots__ = ("__weakref__", "loop", "timer", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: dict[Deadline, None] = {}
        self.timer: asyncio.TimerHandle | None = None

    def add(self, deadline: Deadline) -> None:
        self.waiting[deadline] = None
        timer = self.timer
        if timer is None or deadline.when < timer.when():
            if timer is not None:
                timer.cancel()
            self.timer = self.loop.call_at(deadline.when, self._fire)

    def _fire(self) -> None:
        self.timer = None
        due = self.loop.time() + _CLOCK_RESOLUTION  # as the loop runs a timer: up to its clock resolution early
        later: float | None = None
        waiting = self.waiting
        for deadline in list(waiting):
            if deadline.when <= due:
                del waiting[deadline]
                deadline._expire()
            elif later is None or deadline.when < later:
                later = deadline.when
        if later is not None:
            self.timer = self.loop.call_at(later, self._fire)


_CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution
_DEADLINES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Deadlines] = weakref.WeakKeyDictionary()
_DEADLINES_LOCK = threading.Lock()


def _deadlines(loop: asyncio.AbstractEventLoop) -> _Deadlines:
    with _DEADLINES_LOCK:  # loops of other threads (the MCP loop) create theirs too
        found = _DEADLINES.get(loop)
        if found is None:
            found = _DEADLINES[loop] = _Deadlines(loop)
        return found
