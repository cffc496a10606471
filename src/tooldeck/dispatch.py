"""Dispatch: run a model turn's admitted calls.

Consecutive concurrency-safe calls run together (bounded by the Profile's cap); every other call
runs alone, in order. Results always come back in call order. Every call has a timeout; an
exception inside a tool becomes a `tool.execution_failed` result and never kills the batch.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from tooldeck.catalog.sources import CallContext, TurnState
from tooldeck.core.errors import EXECUTION_FAILED, TIMEOUT, TOOL_UNAVAILABLE, HostFault, ToolCallError
from tooldeck.core.results import ToolOutput
from tooldeck.gate import Admitted, Refused
from tooldeck.sources.extensions import to_output

if TYPE_CHECKING:
    from tooldeck.runtime import Invocation


@dataclass(slots=True)
class ConfirmationRequest:
    call_id: str
    tool_id: str
    call_name: str
    arguments: dict[str, Any]
    run_id: str
    invocation_id: str


Confirm = Callable[[ConfirmationRequest], bool | Awaitable[bool]]


@dataclass(slots=True)
class Outcome:
    """One call's output before projection, with what the records need."""

    output: ToolOutput
    tool_id: str | None
    started_at: float | None = None
    finished_at: float = 0.0
    effects: list[Any] = field(default_factory=list)


async def run_batch(inv: Invocation, checks: list[Admitted | Refused], call_ids: list[str],
                    turn: TurnState, round_no: int) -> list[Outcome]:
    n = len(checks)
    if n == 1:
        return [await run_one(inv, checks[0], call_ids[0], 0, turn, round_no)]
    outcomes: list[Outcome | None] = [None] * n
    sem: asyncio.Semaphore | None = None
    i = 0
    while i < n:
        j = i
        while j < n and _is_parallel(checks[j]):
            j += 1
        if j - i > 1:
            if sem is None:
                sem = asyncio.Semaphore(inv.profile.max_concurrency)

            async def one(k: int, limit: asyncio.Semaphore = sem) -> None:
                async with limit:
                    outcomes[k] = await run_one(inv, checks[k], call_ids[k], k, turn, round_no)

            await asyncio.gather(*(one(k) for k in range(i, j)))
            i = j
        else:
            outcomes[i] = await run_one(inv, checks[i], call_ids[i], i, turn, round_no)
            i += 1
    return outcomes  # type: ignore[return-value]


def _is_parallel(check: Admitted | Refused) -> bool:
    if isinstance(check, Refused):
        return True
    return check.entry.binding.descriptor.annotations.concurrency_safe and not check.needs_confirmation


async def run_one(inv: Invocation, check: Admitted | Refused, call_id: str, index: int,
                  turn: TurnState, round_no: int) -> Outcome:
    out = begin_one(inv, check, call_id, index, turn, round_no)
    return out if type(out) is Outcome else await out  # type: ignore[misc]


def begin_one(inv: Invocation, check: Admitted | Refused, call_id: str, index: int, turn: TurnState,
              round_no: int) -> Outcome | Coroutine[Any, Any, Outcome]:
    """Run one call as far as it goes without the event loop.

    Returns the Outcome when the call finished on its first step (a refusal, a sync tool, a coroutine
    that never suspended), else a coroutine to await (confirmation, a suspended tool, a thread job).
    Most calls take the first path, which costs no task, no timer and no extra coroutine.
    """
    if type(check) is Refused:
        r = check.result
        turn.failed[index] = True
        return Outcome(ToolOutput(r.content, r.structured, True, r.error_code), r.tool_id, None, time.time())
    if check.needs_confirmation:  # type: ignore[union-attr]
        return _confirm_then_run(inv, check, call_id, index, turn, round_no)  # type: ignore[arg-type]
    return _run_admitted(inv, check, call_id, index, turn, round_no)  # type: ignore[arg-type]


async def _confirm_then_run(inv: Invocation, check: Admitted, call_id: str, index: int, turn: TurnState,
                            round_no: int) -> Outcome:
    if not await _confirmed(inv, call_id, check):
        r = inv.gate.permission_refusal(call_id, check.entry)
        turn.failed[index] = True
        return Outcome(ToolOutput(r.content, r.structured, True, r.error_code), check.entry.tool_id, None,
                       time.time())
    out = _run_admitted(inv, check, call_id, index, turn, round_no)
    return out if type(out) is Outcome else await out  # type: ignore[misc]


def _run_admitted(inv: Invocation, check: Admitted, call_id: str, index: int, turn: TurnState,
                  round_no: int) -> Outcome | Coroutine[Any, Any, Outcome]:
    entry = check.entry
    binding = entry.binding
    descriptor = binding.descriptor
    executable = inv.runtime.catalog.resolve(descriptor.id)
    if executable is None:
        turn.failed[index] = True
        return Outcome(ToolOutput.error(TOOL_UNAVAILABLE, f"`{binding.call_name}` is currently unavailable. "
                                        "No action was taken."), entry.tool_id, None, time.time())
    ctx = CallContext(call_id, descriptor.id, binding.call_name, round_no, index, inv, turn)
    started = time.time() if inv.runtime.recording else None
    output = _start(executable, check.args, ctx)
    if type(output) is _Pending:
        return _wait_then_finish(inv, output, ctx, entry, started)
    return _outcome(inv, output, ctx, entry.tool_id, started)


async def _wait_then_finish(inv: Invocation, pending: _Pending, ctx: CallContext, entry: Any,
                            started: float | None) -> Outcome:
    output = await _finish(pending, ctx, entry.timeout_s, entry.binding.descriptor.annotations.mutating)
    return _outcome(inv, output, ctx, entry.tool_id, started)


def _outcome(inv: Invocation, output: ToolOutput, ctx: CallContext, tool_id: str, started: float | None) -> Outcome:
    if output.is_error:
        ctx.turn.failed[ctx.index] = True
    return Outcome(output, tool_id, started, time.time() if started is not None else 0.0, output.effects)


async def _confirmed(inv: Invocation, call_id: str, check: Admitted) -> bool:
    confirm = inv.confirm
    if confirm is None:
        return False
    b = check.entry.binding
    answer = confirm(ConfirmationRequest(call_id, b.tool_id, b.call_name, check.args, inv.run_state.run_id, inv.id))
    if inspect.isawaitable(answer):
        answer = await answer
    return bool(answer)


@dataclass(slots=True)
class _Pending:
    """A tool that did not finish on its first step: a suspended coroutine, an awaitable, or a thread job."""

    awaitable: Any
    yielded: Any = None
    thread_job: tuple[Any, dict[str, Any]] | None = None


def _start(executable: Any, args: dict[str, Any], ctx: CallContext) -> ToolOutput | _Pending:
    """Run the tool as far as it goes without the event loop.

    Most tools finish on their first step (a sync function, or a coroutine that never suspends);
    they cost no task, no timer and no extra coroutine. Anything else comes back as `_Pending`.
    """
    if executable.blocking:
        return _Pending(None, None, (executable.fn, args))
    try:
        value = executable.fn(args, ctx)
        if type(value) is CoroutineType:
            try:
                yielded = value.send(None)
            except StopIteration as done:
                value = done.value
            else:
                return _Pending(value, yielded)
        elif inspect.isawaitable(value):
            return _Pending(value)
    except Exception as exc:
        return _failure(exc, ctx)
    return to_output(value)


async def _finish(pending: _Pending, ctx: CallContext, timeout_s: float, mutating: bool) -> ToolOutput:
    try:
        async with asyncio.timeout(timeout_s):
            if pending.thread_job is not None:
                fn, args = pending.thread_job
                value = await asyncio.to_thread(fn, args, ctx)
            elif pending.yielded is not None or type(pending.awaitable) is CoroutineType:
                value = await _Resume(pending.awaitable, pending.yielded)
            else:
                value = await pending.awaitable
    except TimeoutError:
        return _timeout(ctx, timeout_s, mutating)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return _failure(exc, ctx)
    return to_output(value)


def _failure(exc: Exception, ctx: CallContext) -> ToolOutput:
    """A tool's exception as a result, except host faults: those propagate.

    An `OSError` escaping a builtin is a host fault too (builtins map every error the model can fix
    to a `ToolCallError`); from extension or MCP code it is that tool's failure, reported as a result.
    """
    if isinstance(exc, ToolCallError):
        return ToolOutput.error(exc.code, exc.message, exc.structured)
    if isinstance(exc, HostFault) or (isinstance(exc, OSError) and ctx.tool_id.kind == "builtin"):
        raise exc
    detail = str(exc) or type(exc).__name__
    return ToolOutput.error(
        EXECUTION_FAILED, f"`{ctx.call_name}` failed: {type(exc).__name__}: {detail}",
        {"error": {"code": EXECUTION_FAILED, "message": detail, "exception": type(exc).__name__}},
    )


class _Resume:
    """Continue a coroutine that has already yielded `first` to the event loop (`yield from` by hand).

    Most tools finish without ever yielding to the loop, so dispatch runs the first step itself and
    only pays for `asyncio.timeout` when the tool actually suspends; then it resumes it here.
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


def _timeout(ctx: CallContext, timeout_s: float, mutating: bool) -> ToolOutput:
    text = f"`{ctx.call_name}` did not finish within {timeout_s:g} s and was stopped."
    if mutating:
        text += " It may have executed; check the state before repeating it."
    else:
        text += " Try again with a smaller request, or continue without it."
    return ToolOutput.error(TIMEOUT, text, may_have_executed=mutating)
