"""The calls of one model response → one tooldeck turn (`Invocation.arun`), whatever the framework.

Every framework here hands its tools one call at a time. For the async path each starts the calls
of one model response together, as sibling tasks (pydantic-ai: one task per call in a segment;
the OpenAI Agents SDK: one task per function call; LangGraph's `ToolNode`: `asyncio.gather`), and
every sibling reaches its tool after the same number of event-loop steps. So `TurnBatcher.call`
collects calls instead of running them: the first call of a batch schedules a check on the next
loop iteration, the check reschedules itself while calls keep arriving, and once an iteration
passes with no new call the batch is closed and runs as ONE `arun` turn. That gives the model
response's calls one gate pass, one budget charge, one pair of records transactions, and
tooldeck's own concurrency rule (concurrency-safe calls together, the rest in call order).

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
    __slots__ = ("calls", "done", "dropped", "loop", "seen", "task", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.calls: list[dict[str, Any]] = []
        self.dropped: set[int] = set()
        self.seen = 0
        self.waiting = 0
        self.done: asyncio.Future[list[AgentToolResult | None]] = loop.create_future()
        self.task: asyncio.Task[None] | None = None


class TurnBatcher:
    """Runs the calls that arrive together on one event loop as one turn of `invocation`."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation
        self._open: _Batch | None = None
        self._previous: asyncio.Task[None] | None = None

    async def call(self, call_id: str, name: str, arguments: Any) -> AgentToolResult:
        """This call's result, once the turn it joined has run."""
        loop = asyncio.get_running_loop()
        batch = self._open
        if batch is None or batch.loop is not loop:
            batch = self._open = _Batch(loop)
            loop.call_soon(self._settle, batch)
        index = len(batch.calls)
        batch.calls.append(wire_call(call_id, name, arguments))
        batch.waiting += 1
        try:
            results = await asyncio.shield(batch.done)
        except asyncio.CancelledError:
            batch.waiting -= 1
            if batch.task is None:
                batch.dropped.add(index)  # never reached the gate: nothing ran, nothing to record
            elif batch.waiting == 0:
                batch.task.cancel()
            raise
        result = results[index]
        if result is None:  # only for a dropped call, whose caller is gone
            raise RuntimeError("a dropped call has no result")
        return result

    def _settle(self, batch: _Batch) -> None:
        """Loop callback: close the batch once a loop iteration brought no new call."""
        if len(batch.calls) != batch.seen:
            batch.seen = len(batch.calls)
            batch.loop.call_soon(self._settle, batch)
            return
        if self._open is batch:
            self._open = None
        if batch.waiting == 0:  # every caller was cancelled while it was collecting
            batch.done.cancel()
            return
        batch.task = batch.loop.create_task(self._run(batch, self._previous))
        self._previous = batch.task

    async def _run(self, batch: _Batch, previous: asyncio.Task[None] | None) -> None:
        try:
            if previous is not None and not previous.done():
                await asyncio.wait((previous,))
            keep = [i for i in range(len(batch.calls)) if i not in batch.dropped]
            results: list[AgentToolResult | None] = [None] * len(batch.calls)
            if keep:
                ran = await self.invocation.arun([batch.calls[i] for i in keep])
                for i, result in zip(keep, ran, strict=True):
                    results[i] = result
        except BaseException as exc:
            if not batch.done.done():
                if isinstance(exc, asyncio.CancelledError):
                    batch.done.cancel()
                else:
                    batch.done.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        batch.done.set_result(results)


def run_sync(invocation: Invocation, call_id: str, name: str, arguments: Any) -> AgentToolResult:
    """One call as one turn, from any thread without a running loop; serialised per runtime."""
    runtime = invocation.runtime
    with _SYNC_LOCKS_GUARD:
        lock = _SYNC_LOCKS.get(runtime)
        if lock is None:
            lock = _SYNC_LOCKS[runtime] = threading.Lock()
    with lock:
        return invocation.run([wire_call(call_id, name, arguments)])[0]
