"""Child runs: `agent_delegate`'s return-mode children, and a handoff's next stage of the same run.

A child is an `Agent` run of the target profile, in its own run (own records, whose `run_started`
names the parent run, task and invocation) over the caller's workspace directory with the target
Profile's roots, headless, with its own budgets taken from the caller's (the caller's `max_turns`;
the tokens the caller has left of `max_tokens`), and the return-mode tool rewrite: no
`workspace_commit`, `workspace_finish`, `agent_delegate`, `agent_handoff`, `agent_await`, and a fresh
`task_return`. It runs as an asyncio task beside the caller; the caller's run cancels it when it ends.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tooldeck.agent.delegation import render
from tooldeck.agent.delegation.link import Handoff, RunLink
from tooldeck.agent.delegation.profiles import AgentProfile
from tooldeck.agent.delegation.tasks import ChildTask, new_task_id
from tooldeck.agent.events import AgentEvent
from tooldeck.catalog.profile import DescriptionOverride, Profile, matches
from tooldeck.core.descriptors import ToolDescriptor

if TYPE_CHECKING:
    from tooldeck.catalog.sources import CallContext

TASK_RETURN_ID = "builtin:task.return"
RETURN_MODE_DROPPED = ("builtin:workspace.commit", "builtin:workspace.finish", "builtin:agent.delegate",
                       "builtin:agent.handoff", "builtin:agent.await")
TASK_RETURNED = "task_returned"
HANDOFF_ACCEPTED = "handoff_accepted"


_REPLY_BODY = re.compile(r"The reply body is `[^`]*`\.")
DELEGATED_WORDING = ("You are working on a delegated task: write only what it asks for, under the writable folders, "
                     "and end it with `task_return`.")


def return_mode(profile: Profile, builtins: Iterable[ToolDescriptor] = ()) -> Profile:
    """The Profile of a return-mode child: the publish, finish and delegation tools dropped (denied, so a
    glob in `allow` cannot bring them back), any `task.return` entry dropped, a fresh one appended; and
    the `builtins` whose description speaks of the run's reply reworded for a delegated task (with the
    Profile's own roots), unless the Profile overrides their description itself."""
    allow = [a for a in profile.allow if a != TASK_RETURN_ID] + [TASK_RETURN_ID]
    deny = [d for d in profile.deny if not matches(d, TASK_RETURN_ID)]
    deny += [d for d in RETURN_MODE_DROPPED if d not in deny]
    child = profile.replace(allow=allow, deny=deny)
    descriptions = dict(profile.descriptions)
    for descriptor in builtins:
        key = str(descriptor.id)
        if key in descriptions or key in RETURN_MODE_DROPPED:
            continue
        shown = descriptor.materialize(descriptor, child) if descriptor.materialize is not None else descriptor
        reworded = _REPLY_BODY.sub(DELEGATED_WORDING, shown.description)
        if reworded != shown.description:
            descriptions[key] = DescriptionOverride(description=reworded)
    return child.replace(descriptions=descriptions) if descriptions != profile.descriptions else child


def _model_for(link: RunLink, target: AgentProfile) -> Any:
    """The target's model (a `[models]` name), else the caller's: its configuration, or the host's client."""
    parent = link.agent
    if target.model:
        from tooldeck.agent.models import resolve_model

        return resolve_model(link.runtime.home, target.model)
    return parent.config if parent._owns_client else parent.client


def _forward(link: RunLink, task_id: str, agent_id: str) -> Any:
    on_event = link.agent.on_event
    if on_event is None:
        return None

    def forward(event: AgentEvent) -> None:
        if event.kind not in ("text", "reasoning", "tool_call_started", "tool_call_arguments"):
            on_event(AgentEvent("child_event", {"task_id": task_id, "agent_id": agent_id, "event": event.kind,
                                                "data": event.data}))

    return forward


def start_child(link: RunLink, target: AgentProfile, packet: dict[str, Any], ctx: CallContext,
                max_tokens: int | None) -> ChildTask:
    from tooldeck.agent.loop import COMPLETION_EFFECTS, Agent

    model = _model_for(link, target)
    parent = link.agent
    task = ChildTask(new_task_id(), target.id, packet, link.run_id, link.stage, ctx.invocation.id, ctx.call_id,
                     f"run_{uuid.uuid4().hex[:16]}", link.board.workspace_key(target.id))
    source = link.runtime.catalog.source("builtin")
    profile = return_mode(target.profile or link.runtime.profile, source.descriptors() if source is not None else ())
    child = Agent(link.runtime, model, instructions=target.instructions, max_turns=parent.max_turns,
                  max_tokens=max_tokens, scene=parent.scene, headless=True, profile=profile, confirm=parent.confirm,
                  workspace=link.run_state.workspace_root, on_event=_forward(link, task.id, target.id),
                  background_wait=parent.background_wait, completion_effects=COMPLETION_EFFECTS,
                  http_client=parent._http_client, agent_id=target.id)
    child.parent_task = task
    child.lineage = {"parent_run_id": link.run_id, "parent_invocation_id": task.parent_invocation_id,
                     "task_id": task.id, "agent_id": target.id, "mode": "delegate"}
    link.board.add(task)
    link.notify()
    link.record("task_started", task_id=task.id, agent_id=target.id, child_run_id=task.child_run_id,
                invocation_id=task.parent_invocation_id, call_id=task.call_id, workspace_key=task.workspace_key)
    link.event("task_started", task_id=task.id, agent_id=target.id, child_run_id=task.child_run_id)
    task.runner = asyncio.get_running_loop().create_task(_drive(link, child, task, render.child_prompt(packet)),
                                                         name=f"tooldeck-child-{task.id}")
    return task


async def _drive(link: RunLink, child: Any, task: ChildTask, prompt: str) -> None:
    task.status = "running"
    link.board.changed()
    try:
        task.outcome = await child.run(prompt, run_id=task.child_run_id)
        if not task.terminal:
            task.status = "failed"
            task.error = _without_return(task.outcome)
    except asyncio.CancelledError:
        if not task.terminal:
            task.status = "cancelled"
            task.error = "cancelled: the calling run ended before the task returned"
        _finished(link, task)
        raise
    except BaseException as exc:  # a fault of the host in the child: the caller raises it when it reads the task
        task.status = "failed"
        task.error = f"the delegated run failed on a fault of the host: {type(exc).__name__}: {exc}"
        task.fault = exc
    _finished(link, task)


def _finished(link: RunLink, task: ChildTask) -> None:
    link.board.changed()
    try:
        link.record("task_finished", task_id=task.id, agent_id=task.agent_id, status=task.status, error=task.error)
    except Exception as exc:  # the records are closing with the runtime: noted on the task, not hidden
        task.error = f"{task.error or ''} (not recorded: {exc})".strip()
    link.event("task_finished", task_id=task.id, agent_id=task.agent_id, status=task.status, error=task.error)


def _without_return(result: Any) -> str:
    if result.status == "completed":
        said = " ".join((result.text or "").split())[:200]
        return "the delegated Agent ended without calling task_return" + (f" (it answered: {said})" if said else "")
    code = f", {result.error_code}" if result.error_code else ""
    return f"the delegated run ended with status {result.status}{code} after {result.turns} turn(s) without " \
           "task_return"


# -- handoff ------------------------------------------------------------------------------------------
def accept_handoff(link: RunLink, target: AgentProfile, packet: dict[str, Any]) -> Handoff:
    handoff = Handoff(f"handoff_{uuid.uuid4().hex[:12]}", target, packet)
    link.handoff = handoff
    return handoff


def take_handoff(loop_run: Any) -> bool:
    """After a turn whose completion tool was `agent_handoff`: the target agent continues the same run
    (same run id, workspace, records, budgets and usage) with its own instructions, Profile and model, on
    a fresh conversation of the run's task and the handoff brief. False when there is no handoff."""
    link: RunLink = loop_run.link
    handoff = link.handoff
    if handoff is None:
        return False
    link.handoff = None
    target = handoff.target
    previous = link.me.id
    link.me = target
    link.stage += 1
    link.handoffs += 1
    loop_run.instructions = target.instructions
    loop_run.profile = target.profile or link.runtime.profile
    if target.model:
        from tooldeck.agent.models import resolve_model
        from tooldeck.agent.providers import make_client
        from tooldeck.protocols import NAME_PROTOCOL

        http = link.agent._http_client
        config = resolve_model(link.runtime.home, target.model)
        client = make_client(config, client=http) if http is not None else make_client(config)
        link.clients.append(client)
        loop_run.client = client
        loop_run.provider = NAME_PROTOCOL[client.format]
    brief = render.handoff_prompt(handoff.packet)
    loop_run.messages = list(loop_run.client.user_message(f"{loop_run.task}\n\n{brief}"))
    link.record("handoff", handoff_id=handoff.id, from_agent=previous, to_agent=target.id, stage=link.stage,
                turn=loop_run.result.turns)
    link.event("handoff", handoff_id=handoff.id, from_agent=previous, to_agent=target.id, stage=link.stage)
    return True
