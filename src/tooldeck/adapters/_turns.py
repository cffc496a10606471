"""The calls of one model response → one tooldeck turn (`Invocation.arun`), whatever the framework.

Every framework here hands its tools one call at a time. For the async path each starts the calls
of one model response together, as sibling tasks (pydantic-ai: one task per call in a segment;
the OpenAI Agents SDK: one task per function call; LangGraph's `ToolNode`: `asyncio.gather`), and
every sibling reaches its tool after the same number of event-loop steps. So `TurnBatcher.call`
collects calls instead of running them: the first call of a batch yields to the loop (`sleep(0)`)
while calls keep arriving, and once an iteration passes with no new call the batch is closed and
runs as ONE `arun` turn. That gives the model response's calls one gate pass, one budget charge,
one pair of records transactions, and tooldeck's own concurrency rule (concurrency-safe calls
together, the rest in call order). A call alone in its batch runs in its caller's task (one
`sleep(0)` more than a direct `arun`); a batch of several runs in a task of its own, which each
caller awaits through a future of its own.

Invariants:
- turns of one invocation never overlap: a batch starts after the previous batch finished, so a
  call that arrives late (a framework running calls one by one, a barrier, a capped concurrency)
  becomes the invocation's next turn and still sees the earlier calls' effects;
- a call whose caller was cancelled before its batch closed is dropped (it never reached the gate,
  so it is not recorded); once the batch runs, it is cancelled only when every caller waiting on
  it is cancelled (tooldeck then records admitted calls that never finished as `outcome_unknown`);
- a fault of the runtime (`HostFault`, an OS error of the host, records failing) propagates to
  every caller of the batch; tool errors are results, never exceptions.

The sync path (`run_sync`) cannot batch: frameworks call sync tools from worker threads, and
`Invocation.run` drives the runtime's one private loop, which only one thread may run at a time.
So sync calls take a lock per runtime and run one call per turn, in arrival order.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any

from tooldeck.core.results import AgentToolResult
from tooldeck.runtime import Invocation, Runtime

_SYNC_LOCKS: weakref.WeakKeyDictionary[Runtime, threading.Lock] = weakref.WeakKeyDictionary()
_SYNC_LOCKS_GUARD = threading.Lock()


def wire_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """The wire form `Invocation.arun` takes; `arguments=None` means the model sent none."""
    if arguments is None:
        return {"id": call_id, "name": name}
    return {"id": call_id, "name": name, "arguments": arguments}


class _Batch:
    __slots__ = ("calls", "finished", "futures", "loop", "task", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.calls: list[dict[str, Any]] = []
        self.futures: list[asyncio.Future[AgentToolResult]] = []
        self.waiting = 0
        self.finished: asyncio.Future[None] = loop.create_future()
        """Resolved when the batch's turn has ended, however it ended: the next turn waits for it."""
        self.task: asyncio.Task[None] | None = None

    def add(self, call: dict[str, Any]) -> asyncio.Future[AgentToolResult]:
        future: asyncio.Future[AgentToolResult] = self.loop.create_future()
        self.calls.append(call)
        self.futures.append(future)
        self.waiting += 1
        return future

    def live(self) -> list[int]:
        """The calls whose caller still waits (a call cancelled before the turn closed is left out)."""
        return [i for i, f in enumerate(self.futures) if not f.done()]


class TurnBatcher:
    """Runs the calls that arrive together on one event loop as one turn of `invocation`."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation
        self._open: _Batch | None = None
        self._last: asyncio.Future[None] | None = None

    async def call(self, call_id: str, name: str, arguments: Any) -> AgentToolResult:
        """This call's result, once the turn it joined has run."""
        loop = asyncio.get_running_loop()
        batch = self._open
        if batch is None or batch.loop is not loop:
            return await self._lead(loop, wire_call(call_id, name, arguments))
        return await self._wait(batch, batch.add(wire_call(call_id, name, arguments)))

    async def _lead(self, loop: asyncio.AbstractEventLoop, call: dict[str, Any]) -> AgentToolResult:
        """The first call of a batch collects its siblings, then runs the turn: in its own task when it
        is alone (its caller is then every caller of the turn), else in a task of the batch's own."""
        batch = self._open = _Batch(loop)
        future = batch.add(call)
        seen = 1
        try:
            while True:
                await asyncio.sleep(0)
                if len(batch.calls) == seen:
                    break
                seen = len(batch.calls)
        except asyncio.CancelledError:
            future.cancel()
            batch.waiting -= 1
            self._dispatch(batch)  # the siblings still wait for their turn
            raise
        previous = self._close(batch)
        if len(batch.calls) > 1 or (previous is not None and not previous.done()):
            self._start(batch, previous)
            return await self._wait(batch, future)
        try:
            return (await self.invocation.arun(batch.calls))[0]
        finally:
            batch.finished.set_result(None)

    async def _wait(self, batch: _Batch, future: asyncio.Future[AgentToolResult]) -> AgentToolResult:
        try:
            return await future
        except asyncio.CancelledError:
            if future.cancelled():  # this caller was cancelled (not the turn: that sets an exception)
                batch.waiting -= 1
                if batch.task is not None and batch.waiting == 0:
                    batch.task.cancel()
            raise

    def _close(self, batch: _Batch) -> asyncio.Future[None] | None:
        """No call joins `batch` any more; it becomes the last turn. Returns the turn before it."""
        if self._open is batch:
            self._open = None
        previous, self._last = self._last, batch.finished
        return previous

    def _dispatch(self, batch: _Batch) -> None:
        previous = self._close(batch)
        if batch.waiting == 0:  # every caller left before the turn closed: nothing runs
            batch.finished.set_result(None)
            return
        self._start(batch, previous)

    def _start(self, batch: _Batch, previous: asyncio.Future[None] | None) -> None:
        batch.task = batch.loop.create_task(self._run(batch, previous))

    async def _run(self, batch: _Batch, previous: asyncio.Future[None] | None) -> None:
        try:
            if previous is not None and not previous.done():
                await asyncio.wait((previous,))
            keep = batch.live()
            if keep:
                ran = await self.invocation.arun([batch.calls[i] for i in keep])
                for i, result in zip(keep, ran, strict=True):
                    if not batch.futures[i].done():
                        batch.futures[i].set_result(result)
        except BaseException as exc:
            for future in batch.futures:
                if future.done():
                    continue
                if isinstance(exc, Exception):
                    future.set_exception(exc)
                else:
                    future.cancel()
            if not isinstance(exc, Exception):
                raise
        finally:
            batch.finished.set_result(None)


def run_sync(invocation: Invocation, call_id: str, name: str, arguments: Any) -> AgentToolResult:
    """One call as one turn, from any thread without a running loop; serialised per runtime."""
    runtime = invocation.runtime
    with _SYNC_LOCKS_GUARD:
        lock = _SYNC_LOCKS.get(runtime)
        if lock is None:
            lock = _SYNC_LOCKS[runtime] = threading.Lock()
    with lock:
        return invocation.run([wire_call(call_id, name, arguments)])[0]
