"""Where hooks meet a turn: the pre-call hooks of its admitted calls (`settle`, before anything of the turn
runs or is recorded as started) and the post-call hooks of a call's output (`after`, before projection).

Each hook of a call runs in chain order on the arguments the previous one left; a rewrite is validated
again against the tool's schema. Then the gate decides the argument rules and the permission on the final
arguments (`Gate.permit`). Every hook run is an event in the records (`hook`: which hook, what it decided).

Across the calls of a turn, hooks follow how dispatch will run the calls (dispatch.py): the chains of
consecutive concurrency-safe calls run together (at most `max_concurrency` at a time), and a call that
runs alone (a mutating or `serial` tool) has its chain run alone, after the chains of the calls before it
and before those of the calls after it. A chain that raises (a host fault, not a hook's failure, which is a
refusal) cancels the others of its group and propagates as it is.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tooldeck.core.arguments import ToolArguments
from tooldeck.core.results import ToolOutput, as_output, recoverable_error
from tooldeck.gate import Admitted, GateEntry, Refused
from tooldeck.policy.hooks import DENIED, INVALID_ARGUMENTS, Hook, HookAnswer, HookCall, Hooked, HookFailure

if TYPE_CHECKING:
    from tooldeck.invocation import Invocation
    from tooldeck.wire import Call


async def settle(inv: Invocation, calls: Sequence[Call], checks: list[Admitted | Refused]) -> None:
    """Run the pending pre-call hooks of a turn's calls; each such check is replaced by the final one."""
    group: list[int] = []  # pending chains of consecutive concurrency-safe calls
    for i, chk in enumerate(checks):
        if type(chk) is not Admitted:
            continue  # a refusal runs nothing: it does not split a group, as in dispatch
        if not chk.entry.concurrency_safe:
            await _together(inv, calls, checks, group)
            group = []
            if chk.hooks is not None:
                checks[i] = await pre_call(inv, calls[i].id, chk)
        elif chk.hooks is not None:
            group.append(i)
    await _together(inv, calls, checks, group)


async def _together(inv: Invocation, calls: Sequence[Call], checks: list[Admitted | Refused],
                    group: list[int]) -> None:
    """The pre-call chains of `group` (indexes of concurrency-safe calls), concurrently under the Profile's cap."""
    if len(group) < 2:
        for i in group:  # one chain: no task
            checks[i] = await pre_call(inv, calls[i].id, checks[i])  # type: ignore[arg-type]
        return
    slots = asyncio.Semaphore(max(1, inv.profile.max_concurrency))

    async def one(i: int) -> None:
        async with slots:
            checks[i] = await pre_call(inv, calls[i].id, checks[i])  # type: ignore[arg-type]

    tasks = [asyncio.ensure_future(one(i)) for i in group]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:  # cancelled, or a chain raised: stop the others (their hooks' processes are killed) before leaving
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]


async def pre_call(inv: Invocation, call_id: str, chk: Admitted) -> Admitted | Refused:
    entry, chain = chk.entry, chk.hooks
    assert chain is not None
    name = entry.binding.call_name
    args = chk.args
    ask = False
    context: list[str] = []
    for hook in chain.pre:
        call = HookCall("pre_call", entry.tool_id, name, args, call_id, inv.run_state.run_id, inv.id)
        try:
            answer = await hook.answer(call)
        except HookFailure as failed:
            _note(inv, call, hook, None, failed)
            return _refused(call_id, entry, failed.code, (
                f"`{name}` was not run: its pre-call hook `{hook.name}` {failed.detail}. This is a problem of the "
                "host's hooks, not of the call: continue without it, or tell the user."))
        _note(inv, call, hook, answer)
        if answer.decision == "deny":
            return _refused(call_id, entry, DENIED, f"`{name}` was not run: the pre-call hook `{hook.name}` denied "
                            f"it: {answer.reason or 'no reason given'}. Do it another way, or ask the user.")
        if answer.arguments is not None:
            problems = _problems(entry, answer.arguments)
            if problems is not None:
                return _refused(call_id, entry, INVALID_ARGUMENTS, (
                    f"`{name}` was not run: its pre-call hook `{hook.name}` rewrote the arguments into ones the "
                    f"tool does not accept ({'; '.join(problems)}). This is a problem of the host's hooks: "
                    "continue without the call, or tell the user."))
            args = answer.arguments
        if answer.decision == "ask":
            ask = True
        if answer.context:
            context.append(answer.context)
    hooked = None
    if chain.post or context:
        hooked = Hooked(chain.post, "\n\n".join(context) or None)
    return inv.gate.permit(call_id, entry, args, ask, hooked)


async def post_call(inv: Invocation, chk: Admitted, call_id: str, value: Any) -> ToolOutput:
    """The call's output after its post-call hooks, with its pre-call hooks' context appended."""
    hooked = chk.hooked
    assert hooked is not None
    entry = chk.entry
    name = entry.binding.call_name
    out = as_output(value)
    for hook in hooked.post:
        call = HookCall("post_call", entry.tool_id, name, chk.args, call_id, inv.run_state.run_id, inv.id,
                        out.content, out.is_error, out.error_code)
        try:
            answer = await hook.answer(call)
        except HookFailure as failed:
            _note(inv, call, hook, None, failed)
            return ToolOutput.error(failed.code, (
                f"`{name}` ran, but its post-call hook `{hook.name}` {failed.detail}, so its result is withheld. "
                "Check the state before repeating the call."), effects=out.effects, may_have_executed=True)
        _note(inv, call, hook, answer)
        if answer.decision == "deny":
            return ToolOutput.error(DENIED, (
                f"`{name}` ran, but the post-call hook `{hook.name}` withheld its result: "
                f"{answer.reason or 'no reason given'}."), effects=out.effects, may_have_executed=True)
        if answer.result is not None:  # the hook's text replaces the result, in the records too
            out = dataclasses.replace(out, content=answer.result, structured=None, raw=None, redacted=None)
        if answer.context:
            out = _appended(out, answer.context)
    if hooked.context:
        out = _appended(out, hooked.context)
    return out


def _appended(out: ToolOutput, text: str) -> ToolOutput:
    redacted = out.redacted
    if redacted is not None:
        redacted = (f"{redacted[0]}\n\n{text}", redacted[1])
    return dataclasses.replace(out, content=f"{out.content}\n\n{text}", redacted=redacted)


def _problems(entry: GateEntry, value: Any) -> list[str] | None:
    """Why rewritten arguments cannot run (None: they can)."""
    decoded = ToolArguments.decode(value)
    if decoded.value is None:
        return [decoded.invalid_message()]
    schema = entry.schema
    if schema.error is not None:
        return [f"the tool's schema is invalid: {schema.error}"]
    problems = schema.problems(decoded.value)
    if problems is None:
        return None
    return problems or ["the arguments do not match the tool's schema"]


def _refused(call_id: str, entry: GateEntry, code: str, message: str) -> Refused:
    return Refused(recoverable_error(call_id, entry.tool_id, code, message), entry)


def _note(inv: Invocation, call: HookCall, hook: Hook, answer: HookAnswer | None,
          failed: HookFailure | None = None) -> None:
    """The `hook` event of the records: which hook ran on which call, and what it decided."""
    runtime = inv.runtime
    if not runtime.recording:
        return
    data: dict[str, Any] = {"call_id": call.call_id, "event": call.event, "hook": hook.name,
                            "tool_id": call.tool_id}
    if failed is not None:
        data.update(code=failed.code, detail=failed.detail)
    elif answer is not None:
        data.update(decision=answer.decision, reason=answer.reason, rewritten=answer.arguments is not None,
                    result_replaced=answer.result is not None, context=answer.context)
    runtime.recorder.record_event(inv.id, "hook", data)
