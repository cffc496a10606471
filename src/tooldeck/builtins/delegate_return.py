"""`agent.handoff` and `task.return` (TauriTavern, reference §1.4): the two completion tools of
delegation. A handoff ends the caller's stage and the target agent continues the same run; a
return-mode child ends its task with `task_return`, which writes `summaries/<agent>-result.md`
(`<agent>-002-result.md`, … for the run's later tasks of the same agent).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tooldeck.builtins.delegate_common import (
    INVALID,
    call_name,
    check_model,
    completion_checks,
    link_or_refuse,
    load_target,
    packet_problem,
)
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolEffect, ToolOutput
from tooldeck.workspace import errors as E
from tooldeck.workspace.paths import PathPolicy, parse_path

HANDOFF_POLICY_DENIED = "agent.handoff_policy_denied"
SUMMARIES = "summaries"


# -- agent.handoff ------------------------------------------------------------------------------------
async def handoff(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    packet = args.get("handoff")
    problem = packet_problem(packet, "handoff", "objective", ("title", "reason", "contextSummary"))
    if problem:
        raise ToolCallError(INVALID, problem)
    link = link_or_refuse(ctx, HANDOFF_POLICY_DENIED)
    completion_checks(ctx)
    me = link.me
    if not me.delegation.can_handoff or link.parent_task is not None:
        raise ToolCallError(HANDOFF_POLICY_DENIED, f"agent.profile_cannot_handoff: your current Agent configuration "
                            f"`{me.id}` does not allow handoff")
    if link.board.pending(link.stage):
        waiter = call_name(ctx, "builtin:agent.await", "agent_await")
        raise ToolCallError("agent.handoff_pending_tasks", f"You still have unfinished delegated tasks. Use {waiter} "
                            "before handing off.")
    if link.handoffs >= me.delegation.max_handoff_depth:
        raise ToolCallError("agent.handoff_depth_exhausted", "agent.max_handoff_depth_exhausted: this run has reached "
                            "the handoff limit for your current Agent configuration "
                            f"({me.delegation.max_handoff_depth})")
    target = load_target(ctx, link, args.get("agentId"), "Agents you can hand off to")
    from tooldeck.agent.delegation import profiles

    problem = profiles.handoff_problem(me, target)
    if problem:
        raise ToolCallError(HANDOFF_POLICY_DENIED, problem)
    check_model(target, link, HANDOFF_POLICY_DENIED)
    from tooldeck.agent.delegation.children import HANDOFF_ACCEPTED, accept_handoff

    accepted = accept_handoff(link, target, dict(packet))
    structured = {"handoffId": accepted.id, "taskId": accepted.id, "status": "accepted", "agentId": target.id}
    return ToolOutput(f"Handoff accepted for Agent {target.id}. Your part is complete.", structured,
                      effects=[ToolEffect(HANDOFF_ACCEPTED, {"handoff_id": accepted.id, "agent_id": target.id})])


# -- task.return --------------------------------------------------------------------------------------
def _artifacts(raw: Any, policy: PathPolicy) -> list[dict[str, Any]] | None:
    if raw is None:
        return None
    out = []
    for i, item in enumerate(raw):
        try:
            path = parse_path(item["path"])
        except ToolCallError as exc:
            raise ToolCallError(E.INVALID_PATH, f"artifacts[{i}].path is not a valid workspace path: "
                                f"{exc.message}") from None
        if not policy.is_visible(path):
            roots = ", ".join(f"{r}/" for r in policy.visible_roots)
            raise ToolCallError(E.PATH_NOT_VISIBLE, f"artifacts[{i}].path `{path}` is not visible to this delegated "
                                f"task. Regenerate task_return with artifact paths under visible roots: {roots}.")
        out.append({**item, "path": path})
    return out


def _write(root: Path, relative: str, text: str) -> None:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)


async def task_return(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    from tooldeck.agent.delegation.link import link_of

    link = link_of(ctx.run)
    task = link.parent_task if link is not None else None
    if task is None:
        raise ToolCallError("agent.task_return_denied", f"{ctx.call_name} is available only while completing a "
                            "delegated task.")
    completion_checks(ctx)
    summary = args.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ToolCallError(INVALID, "summary must be a non-empty string")
    status = args.get("status") or "completed"
    if task.terminal:
        raise ToolCallError("agent.task_already_finished", "This delegated task is already finished and cannot "
                            f"accept another {ctx.call_name}.")
    fields = {k: v for k, v in args.items() if k not in ("summary", "status")}
    artifacts = _artifacts(fields.get("artifacts"), PathPolicy.from_roots(ctx.invocation.profile.workspace))
    if artifacts is not None:
        fields["artifacts"] = artifacts
    summary_ref = f"{SUMMARIES}/{task.workspace_key}-result.md"
    doc = {"schemaVersion": 1, "kind": "tooldeck.agentTaskResult", "status": status, "summary": summary.strip(),
           "summaryRef": summary_ref, "result": fields,
           "runtime": {"taskId": task.id, "runId": task.parent_run_id, "parentInvocationId": task.parent_invocation_id,
                       "childRunId": task.child_run_id, "agentId": task.agent_id,
                       "workspaceKey": task.workspace_key}}
    from tooldeck.agent.delegation import render

    await asyncio.to_thread(_write, Path(ctx.run.workspace_root), summary_ref, render.summary_file(doc))
    if task.terminal:  # the caller's run ended (and cancelled the task) while the file was written
        raise ToolCallError("agent.task_already_finished", "This delegated task is already finished and cannot "
                            f"accept another {ctx.call_name}.")
    task.result = doc
    task.status = status
    if task.notify is not None:
        task.notify()
    return ToolOutput(f"Returned {status} result for delegated task {task.id}.", doc, resource_refs=[summary_ref],
                      effects=[ToolEffect("task_returned", {"task_id": task.id, "status": status,
                                                            "summary_ref": summary_ref})])


_STRINGS = {"type": "array", "items": {"type": "string"}}

HANDOFF = ToolDescriptor(
    id=ToolId.builtin("agent.handoff"),
    title="Hand the run over to another Agent",
    description=(
        "Hand the rest of this run to another Agent: it continues in the same run and workspace with its own "
        "Profile, and your part ends. Collect your delegated tasks first (`agent_await`). It must be the last call "
        "of your turn. Write a clear brief: the objective, what is done, the workspace files to start from, what "
        "must be kept, and when the work is complete."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "agentId": {"type": "string", "description": "The id of the Agent to hand over to."},
            "handoff": {
                "type": "object",
                "properties": {
                    "objective": {"type": "string", "description": "What the next Agent must achieve (required)."},
                    "title": {"type": ["string", "null"]},
                    "reason": {"type": ["string", "null"], "description": "Why the run changes hands now."},
                    "contextSummary": {"type": ["string", "null"], "description": "What is done and decided."},
                    "workspaceRefs": {**_STRINGS, "description": "Workspace paths to start from."},
                    "mustPreserve": {**_STRINGS, "description": "What must not change."},
                    "completionCriteria": {**_STRINGS, "description": "When the work is complete."},
                },
                "required": ["objective"],
            },
            "pendingTaskPolicy": {"type": "string", "enum": ["denyIfPending"],
                                  "description": "`denyIfPending` (the default and only policy): refused while a "
                                                 "delegated task is unfinished."},
        },
        "required": ["agentId", "handoff"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(control=True),
    scenes=frozenset({"chat"}),
)

TASK_RETURN = ToolDescriptor(
    id=ToolId.builtin("task.return"),
    title="Return the delegated task's result",
    description=(
        "End the delegated task you are working on and return its result to the Agent that asked for it: a "
        "`summary` (required), `status` (`completed` or `failed`), and what helps the caller act on it. It must be "
        "the last call of your turn; your run ends with it."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "summary": {"type": "string", "description": "The result, in a few sentences."},
            "status": {"type": "string", "enum": ["completed", "failed"]},
            "confidence": {"type": "string", "enum": ["low", "medium", "high"]},
            "artifacts": {"type": "array", "items": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "kind": {"type": "string"}, "role": {"type": "string"}},
                "required": ["path", "kind", "role"]},
                "description": "Workspace files you made for the caller."},
            "findings": _STRINGS,
            "warnings": _STRINGS,
            "suggestedNextActions": _STRINGS,
            "questionsForCaller": _STRINGS,
        },
        "required": ["summary"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(control=True, mutating=True),
    scenes=frozenset({"chat"}),
)

TOOLS = [BuiltinTool(HANDOFF, handoff), BuiltinTool(TASK_RETURN, task_return)]
