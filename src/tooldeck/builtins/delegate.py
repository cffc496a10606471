"""`agent.delegate` and `agent.await` (TauriTavern, reference §1.4): start a return-mode child run of
another agent profile and get a task id at once; wait for (or look at) the delegated tasks.

Both work only in a run the agent loop drives (docs/agent.md, "Delegation and subagents"). Tasks are
per stage of the run: after a handoff, the new agent awaits its own.
"""

from __future__ import annotations

import time
from typing import Any

from tooldeck.builtins.delegate_common import (
    INVALID,
    call_name,
    check_model,
    link_or_refuse,
    load_target,
    packet_problem,
)
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput

DELEGATE_ID = "builtin:agent.delegate"
AWAIT_ID = "builtin:agent.await"
POLICY_DENIED = "agent.delegation_policy_denied"
BUDGET_EXHAUSTED = "agent.delegation_budget_exhausted"
PERMISSION_DENIED = "agent.permission_denied"
DEFAULT_AWAIT_MS = 120_000
MAX_AWAIT_MS = 300_000
AWAIT_MODES = ("nextCompleted", "allCompleted", "statusOnly")


async def delegate(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    link = link_or_refuse(ctx, POLICY_DENIED)
    packet = args.get("task")
    problem = packet_problem(packet, "task", "objective", ("title",))
    if problem:
        raise ToolCallError(INVALID, problem)
    me = link.me
    if not me.delegation.can_delegate or link.parent_task is not None:
        raise ToolCallError(POLICY_DENIED, f"agent.profile_cannot_delegate: profile `{me.id}` cannot delegate to "
                            "subagents")
    target = load_target(ctx, link, args.get("agentId"), "Agents you can delegate to")
    from tooldeck.agent.delegation import profiles

    if not profiles.target_allowed(me, target.id):
        raise ToolCallError(PERMISSION_DENIED, f"profile `{me.id}` may not call Agent `{target.id}` (it is not in "
                            f"its delegation.allowed_targets: {', '.join(me.delegation.allowed_targets) or 'none'}).")
    problem = profiles.subagent_problem(me, target)
    if problem:
        raise ToolCallError(POLICY_DENIED, problem)
    check_model(target, link, POLICY_DENIED)
    owned = link.board.of_stage(link.stage)
    policy = me.delegation
    if len(owned) >= policy.max_invocations_per_run:
        raise ToolCallError(BUDGET_EXHAUSTED, f"agent.max_invocations_per_run_exhausted: profile `{me.id}` may create "
                            f"at most {policy.max_invocations_per_run} subagent tasks per run")
    if sum(not t.terminal for t in owned) >= policy.max_concurrent_invocations:
        raise ToolCallError(BUDGET_EXHAUSTED, f"agent.max_concurrent_invocations_exhausted: profile `{me.id}` may run "
                            f"at most {policy.max_concurrent_invocations} concurrent subagent tasks")
    parent = link.agent
    tokens_left = None
    if parent.max_tokens is not None:
        tokens_left = parent.max_tokens - link.loop_run.result.usage.total_tokens
        if tokens_left <= 0:
            raise ToolCallError(BUDGET_EXHAUSTED, f"agent.run_tokens_exhausted: this run has used its max_tokens "
                                f"({parent.max_tokens}); no tokens are left for a delegated task")
    from tooldeck.agent.delegation.children import start_child

    task = start_child(link, target, dict(packet), ctx, tokens_left)
    waiter = call_name(ctx, AWAIT_ID, "agent_await")
    return ToolOutput(f"Started delegated task {task.id} with Agent {target.id}. You can continue other work; use "
                      f"{waiter} only when your next decision needs this task's result or current status.",
                      {"taskId": task.id, "status": task.status, "agentId": target.id,
                       "childRunId": task.child_run_id})


def _selected(link: Any, ids: list[str] | None) -> list[Any]:
    owned = link.board.of_stage(link.stage)
    if ids is None:
        return owned
    by_id = {t.id: t for t in owned}
    for task_id in ids:
        if task_id not in by_id:
            raise ToolCallError("agent.await_task_not_found", f"agent.await_task_not_found: task `{task_id}` does "
                                "not belong to this Agent's delegated tasks. Call again without taskIds to see them.")
    return sorted((by_id[i] for i in ids), key=lambda t: (t.created_at, t.id))


def _met(tasks: list[Any], mode: str) -> bool:
    if mode == "statusOnly":
        return True
    if mode == "nextCompleted":
        return any(t.terminal for t in tasks)
    return all(t.terminal for t in tasks)


async def await_tasks(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    link = link_or_refuse(ctx, "agent.no_child_tasks")
    mode = args.get("mode") or "nextCompleted"
    timeout_ms = args.get("timeoutMs")
    timeout_ms = DEFAULT_AWAIT_MS if timeout_ms is None else timeout_ms
    if timeout_ms > MAX_AWAIT_MS:
        raise ToolCallError(INVALID, f"timeoutMs must be <= {MAX_AWAIT_MS}")
    ids: list[str] | None = None
    if args.get("taskIds") is not None:
        ids = []
        for raw in args["taskIds"]:
            task_id = raw.strip()
            if not task_id:
                raise ToolCallError(INVALID, "taskIds cannot contain empty values")
            if task_id in ids:
                raise ToolCallError(INVALID, f"duplicate task id `{task_id}`")
            ids.append(task_id)
    # the call's own dispatch timeout (Profile.tool_timeout_s) bounds the wait: it ends a second before
    wait_s = min(timeout_ms / 1000, max(0.0, ctx.invocation.profile.timeout_for(str(ctx.tool_id)) - 1.0))
    deadline = time.monotonic() + wait_s
    while True:
        tasks = _selected(link, ids)
        if not tasks:
            raise ToolCallError("agent.no_child_tasks", "No delegated tasks are selected.")
        if _met(tasks, mode):
            timed_out = False
            break
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        await link.board.wait(left)
    done = [t for t in tasks if t.terminal]
    for t in done:
        t.seen = True
    link.raise_faults(done)
    views = [t.view() for t in tasks]
    from tooldeck.agent.delegation import render

    structured = {"mode": mode, "timedOut": timed_out, "tasks": views}
    return ToolOutput(render.await_content(views, timed_out, link.hint()), structured,
                      resource_refs=[v["summaryRef"] for v in views if v.get("summaryRef")])


DELEGATE = ToolDescriptor(
    id=ToolId.builtin("agent.delegate"),
    title="Delegate a task to another Agent",
    description=(
        "Start a task for another Agent and get a task id at once. The Agent works in this run's workspace with its "
        "own Profile and tools, and ends by returning a result (summary, findings, artifacts); its summary is "
        "written to `summaries/<agent>-result.md`. Continue other work; call `agent_await` when your next decision "
        "needs the result. Give the task everything it needs: the Agent sees none of this conversation. Pick "
        "`agentId` from the agent directory in your instructions."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "agentId": {"type": "string", "description": "The id of the Agent to delegate to."},
            "task": {
                "type": "object",
                "description": "The task packet; other keys are passed on as additional instructions.",
                "properties": {
                    "objective": {"type": "string", "description": "What the Agent must achieve (required)."},
                    "title": {"type": ["string", "null"], "description": "A short title for the task."},
                    "context": {"type": "object", "description": "Material the task needs: facts, constraints, "
                                                                 "workspace paths to read."},
                    "expectedOutput": {"type": "object", "description": "What to return, and where to write "
                                                                        "files if any."},
                },
                "required": ["objective"],
            },
        },
        "required": ["agentId", "task"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(control=True),
    scenes=frozenset({"chat"}),
)

AWAIT = ToolDescriptor(
    id=ToolId.builtin("agent.await"),
    title="Wait for delegated tasks",
    description=(
        "Wait for the tasks you delegated with `agent_delegate` and read their results. `mode`: `nextCompleted` "
        "(default: until one of them has finished), `allCompleted` (until all have), `statusOnly` (no wait). "
        "`taskIds` narrows it to some tasks (default: all of yours). `timeoutMs` (default 120000, at most 300000) "
        "bounds the wait; the call's own time limit bounds it too."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "taskIds": {"type": "array", "items": {"type": "string"}, "description": "Task ids to wait for."},
            "mode": {"type": "string", "enum": list(AWAIT_MODES)},
            "timeoutMs": {"type": "integer", "minimum": 0, "description": "Milliseconds to wait at most."},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True),
    scenes=frozenset({"chat"}),
)

TOOLS = [BuiltinTool(DELEGATE, delegate), BuiltinTool(AWAIT, await_tasks)]
