"""Dispatch: run a model turn's admitted calls.

Consecutive concurrency-safe calls run together (bounded by the Profile's cap); every other call
runs alone, in order. Results always come back in call order. Every call has a timeout; an
exception inside a tool becomes a `tool.execution_failed` result and never kills the batch, except
a host fault: it propagates, and the call's slot in `turn.outputs` holds its `tool.host_fault`
outcome first, so the runtime can close the turn in the records (`not_started` names the calls it
stopped before they began).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Protocol

from tooldeck import handoff
from tooldeck import tracing as _tracing
from tooldeck.catalog.sources import UNFINISHED, CallContext, Executable, TurnState
from tooldeck.core.errors import HOST_FAULT, TOOL_UNAVAILABLE
from tooldeck.core.results import ToolOutput
from tooldeck.deadline import Deadline
from tooldeck.gate import Admitted, GateEntry, Refused
from tooldeck.outcomes import failure, host_fault, timed_out
from tooldeck.policy import hook_flow
from tooldeck.policy.approvals import Approval, settle

if TYPE_CHECKING:
    from tooldeck.invocation import Invocation

_otel: Any = _tracing.stand_in()
"""`opentelemetry.trace` once imported (tracing.py swaps it in), else a stand-in whose provider is None."""
_WINDOW_S = handoff.WINDOW_S


@dataclass(slots=True)
class ConfirmationRequest:
    call_id: str
    tool_id: str
    call_name: str
    arguments: dict[str, Any]
    run_id: str
    invocation_id: str


Confirm = Callable[[ConfirmationRequest], bool | Approval | Awaitable[bool | Approval]]
"""The host's answer to an `ask` call: True / False for this call, or an `Approval` that may be remembered."""

Finished = ToolOutput | Any
"""A finished call: a ToolOutput (always, for errors), or the plain value the tool returned, which
projection turns into the model's text (`core.results.as_output`)."""


class TurnWatch(Protocol):
    """Told when a turn starts waiting on the event loop and when a result lands while it waits
    (records/writer.py writes the results that arrived while the others still run)."""

    def on_wait(self) -> None: ...


async def run_batch(inv: Invocation, checks: list[Admitted | Refused], turn: TurnState,
                    watch: TurnWatch | None = None) -> None:
    """Run a turn's calls; each call's output lands in `turn.outputs` as soon as it finishes."""
    outputs = turn.outputs
    n = len(checks)
    span = _tracing.wanted()  # once per turn; `begin_one` asks per call only when called alone
    i = 0
    while i < n:
        check = checks[i]
        if _is_parallel(check):
            j = i + 1
            while j < n and _is_parallel(checks[j]):
                j += 1
            if j - i > 1:
                await _run_together(inv, checks, turn, i, j, watch, span)
                i = j
                continue
        out = begin_one(inv, check, i, turn, True, span)
        if type(out) is CoroutineType:
            if watch is not None:
                watch.on_wait()
            out = await out
        outputs[i] = out
        i += 1


def _is_parallel(check: Admitted | Refused) -> bool:
    return type(check) is Refused or (check.entry.concurrency_safe and not check.needs_confirmation)  # type: ignore[union-attr]


async def _run_together(inv: Invocation, checks: list[Admitted | Refused], turn: TurnState, start: int,
                        end: int, watch: TurnWatch | None, span: bool) -> None:
    """Run calls start..end-1 (all concurrency-safe) together, at most `max_concurrency` at a time.

    Each call's first step runs inline; most finish there and cost no task. Only when some suspend
    are they awaited together (with the rest of the group, under the cap).
    """
    outputs = turn.outputs
    cap = inv.profile.max_concurrency
    waiting: list[tuple[int, Coroutine[Any, Any, Finished]]] = []
    free = cap
    k = start
    try:
        while k < end and free:
            out = begin_one(inv, checks[k], k, turn, False, span)  # no window: the group's blocking calls overlap
            if type(out) is CoroutineType:
                waiting.append((k, out))  # type: ignore[arg-type]
                free -= 1
            else:
                outputs[k] = out
            k += 1
    except BaseException:
        for _, coro in waiting:  # a host fault: the calls already started are abandoned with the turn
            coro.close()
        raise
    if not waiting:
        return
    if watch is not None:
        watch.on_wait()
    slots = asyncio.Semaphore(free)

    async def finish(index: int, coro: Coroutine[Any, Any, Finished]) -> None:
        try:
            outputs[index] = await coro
        finally:
            slots.release()
        if watch is not None:
            watch.on_wait()

    async def later(index: int) -> None:
        async with slots:
            out = begin_one(inv, checks[index], index, turn, False, span)
            outputs[index] = await out if type(out) is CoroutineType else out  # type: ignore[misc]
        if watch is not None:
            watch.on_wait()

    try:
        await asyncio.gather(*(finish(i, c) for i, c in waiting), *(later(i) for i in range(k, end)))
    except BaseException:
        for _, coro in waiting:  # cancelled before its task first ran: close it, or it warns "never awaited"
            if inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
                coro.close()
        raise


def begin_one(inv: Invocation, check: Admitted | Refused, index: int, turn: TurnState, window: bool = True,
              span: bool = True) -> Finished | Coroutine[Any, Any, Finished]:
    """Run one call as far as it goes without the event loop.

    Returns the output when the call finished on its first step (a refusal, a sync tool, a coroutine
    that never suspended, a blocking tool that finished within the hand-off window), else a coroutine
    to await (confirmation, a suspended tool, a thread job). Most calls take the first path, which
    costs no task, no timer and no extra coroutine.

    `window`: a blocking sync tool may be waited for on this thread for `handoff.WINDOW_S` (off for
    calls that run together). `span`: wrap the call in an OpenTelemetry span when a tracer provider is
    set (tracing.py); False when the caller knows none is, or inside that wrapper.
    """
    if span and _otel._TRACER_PROVIDER is not None:  # the cost of tracing while no provider is set
        return _tracing.maybe_traced(begin_one, inv, check, index, turn, window)
    if type(check) is Refused:
        r = check.result
        return ToolOutput(r.content, r.structured, True, r.error_code)
    if check.needs_confirmation:  # type: ignore[union-attr]
        return _confirm_then_run(inv, check, index, turn)  # type: ignore[arg-type]
    if check.hooked is not None:  # type: ignore[union-attr]
        return _run_hooked(inv, check, index, turn, window)  # type: ignore[arg-type]
    entry = check.entry
    tool_id = entry.binding.descriptor.id
    source = entry.source
    executable = source.resolve(tool_id) if source is not None else inv.runtime.catalog.resolve(tool_id)
    if executable is None:
        return ToolOutput.error(TOOL_UNAVAILABLE, f"`{entry.binding.call_name}` is currently unavailable. "
                                "No action was taken.")
    timings = turn.timings
    started = 0.0 if timings is None else time.time()
    args = check.args  # type: ignore[union-attr]
    try:
        if executable.blocking:
            job = handoff.start(_thread_job(executable, args, inv, entry, index, turn))
            tool = executable.fn
            if not (window and entry.timeout_s > _WINDOW_S and handoff.wants_window(tool)):
                return _finish(_Pending(None, None, job, tool), entry, index, timings, started, turn.outputs)
            if not job.wait(_WINDOW_S):
                handoff.missed_window(tool)
                return _finish(_Pending(None, None, job, tool), entry, index, timings, started, turn.outputs)
            value = job.result()
        else:
            direct = executable.direct
            value = direct(**args) if direct is not None else executable.fn(args, _context(inv, entry, index, turn))
        if type(value) is CoroutineType:
            try:
                yielded = value.send(None)
            except StopIteration as done:
                value = done.value
            else:
                return _finish(_Pending(value, yielded), entry, index, timings, started, turn.outputs)
        elif inspect.isawaitable(value):
            return _finish(_Pending(value), entry, index, timings, started, turn.outputs)
    except Exception as exc:
        if timings is not None:  # a host fault propagates from `_failure`: its end time is known too
            timings[index] = (started, time.time())
        value = failure(exc, entry, turn.outputs, index)
    if timings is not None:
        timings[index] = (started, time.time())
    return value  # a plain value becomes the model's text in projection (`as_output`)


async def _confirm_then_run(inv: Invocation, check: Admitted, index: int, turn: TurnState) -> Finished:
    call_id = turn.calls[index].id
    try:
        confirmed = await _confirmed(inv, call_id, check)
    except Exception as exc:  # the host's callback failed: a host fault, and the call did not run
        turn.outputs[index] = host_fault(exc, check.entry, ran=False)
        raise
    if not confirmed:
        r = inv.gate.permission_refusal(call_id, check.entry)
        return ToolOutput(r.content, r.structured, True, r.error_code)
    # confirmed: runs as allowed
    out = begin_one(inv, Admitted(check.entry, check.args, False, None, check.hooked), index, turn, True, False)
    return await out if type(out) is CoroutineType else out  # type: ignore[misc]


async def _run_hooked(inv: Invocation, check: Admitted, index: int, turn: TurnState, window: bool) -> Finished:
    """A call with post-call hooks or pre-call context: the tool, then its hooks (policy/hook_flow.py)."""
    out = begin_one(inv, Admitted(check.entry, check.args), index, turn, window, False)
    if type(out) is CoroutineType:
        out = await out
    return await hook_flow.post_call(inv, check, turn.calls[index].id, out)


def _context(inv: Invocation, entry: GateEntry, index: int, turn: TurnState) -> CallContext:
    b = entry.binding
    return CallContext(turn.calls[index].id, b.descriptor.id, b.call_name, turn.round, index, inv, turn)


def _thread_job(executable: Executable, args: dict[str, Any], inv: Invocation, entry: GateEntry, index: int,
                turn: TurnState) -> Callable[[], Any]:
    if executable.direct is not None:
        return functools.partial(executable.direct, **args)
    return functools.partial(executable.fn, args, _context(inv, entry, index, turn))


async def _confirmed(inv: Invocation, call_id: str, check: Admitted) -> bool:
    """A remembered answer of the home settles the call, else the host's callback (policy/approvals.py)."""
    b = check.entry.binding
    req = ConfirmationRequest(call_id, b.tool_id, b.call_name, check.args, inv.run_state.run_id, inv.id)
    return await settle(inv, req, check.entry)


@dataclass(slots=True)
class _Pending:
    """A tool that did not finish on its first step: a suspended coroutine, an awaitable, or a thread job.

    Dispatch runs a tool's first step itself and only pays for its timeout (`Deadline`, in `_finish`) when
    the tool actually suspends.
    """

    awaitable: Any
    yielded: Any = None
    job: handoff.Job | None = None
    tool: Any = None
    """The executable's callable of a thread job (handoff remembers which tools outlast the window)."""


async def _finish(pending: _Pending, entry: GateEntry, index: int, timings: list[tuple[float, float] | None] | None,
                  started: float, outputs: list[Any]) -> Finished:
    timeout_s = entry.timeout_s
    try:
        async with Deadline(timeout_s):
            if pending.job is not None:
                job = pending.job
                await job.settled()
                handoff.finished(pending.tool, job)
                value = job.result()
            elif pending.yielded is not None or type(pending.awaitable) is CoroutineType:
                value = await _Resume(pending.awaitable, pending.yielded)
            else:
                value = await pending.awaitable
        output = value
    except TimeoutError:
        output = timed_out(entry.binding.call_name, timeout_s, entry.binding.descriptor.annotations.mutating)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if timings is not None:  # as in `begin_one`
            timings[index] = (started, time.time())
        output = failure(exc, entry, outputs, index)
    if timings is not None:
        timings[index] = (started, time.time())
    return output


def not_started(checks: list[Admitted | Refused], outputs: list[Any]) -> list[int]:
    """After a host fault: the admitted calls it stopped before they started. Those are the unfinished
    calls after the fault's dispatch group (`run_batch` starts a group only when the one before it is
    done); unfinished calls inside the group may have started."""
    faulted = next((i for i, out in enumerate(outputs)
                    if type(out) is ToolOutput and out.error_code == HOST_FAULT), None)
    if faulted is None:
        return []
    n = len(checks)
    end = faulted + 1
    if _is_parallel(checks[faulted]):  # its group is the run of concurrency-safe calls around it
        while end < n and _is_parallel(checks[end]):
            end += 1
    return [i for i in range(end, n) if outputs[i] is UNFINISHED and type(checks[i]) is Admitted]


class _Resume:
    """Continue a coroutine that has already yielded `first` to the event loop (`yield from` by hand).

    Most tools finish without ever yielding to the loop, so dispatch runs the first step itself and
    only pays for its timeout when the tool actually suspends; then it resumes it here.
    """

    __slots__ = ("_coro", "_first")

    def __init__(self, coro: Any, first: Any) -> None:
        self._coro, self._first = coro, first

    def __await__(self) -> Any:
        coro, yielded = self._coro, self._first
        while True:
            try:
                sent = yield yielded
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    yielded = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    yielded = coro.send(sent)
                except StopIteration as done:
                    return done.value
