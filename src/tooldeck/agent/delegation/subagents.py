"""Agenvoy's subagent legs (`subagents`, `background_subagents`; reference agenvoy §8): a leg is a
headless agent run on one self-contained task, in the caller's workspace, with the Subagent Charter
as extra instructions and fewer tools (no subagents, no writing, editing, publishing or delegation
tools, plus the caller's `exclude_tools`). At most 3 legs run at once in a process (per event loop);
a 4th waits for a slot while its call's own time limit runs. A leg's text is written to a report file
in the workspace; the caller gets a header (model, session, usage) and the report's path.

A leg of a named session starts with that session's past exchanges (sessions.py) unless it is `new`,
and its own exchange joins them when it completes with text. Its `reasoning` (low | medium | high,
default low) is the effort of every model turn of the leg (agent/providers/reasoning.py).
"""

from __future__ import annotations

import asyncio
import re
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooldeck.agent.events import AgentEvent
from tooldeck.agent.providers.reasoning import EFFORTS
from tooldeck.core.errors import ToolCallError

if TYPE_CHECKING:
    from tooldeck.agent.delegation.link import RunLink
    from tooldeck.catalog.sources import CallContext

MAX_LEGS = 3
_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()
LEG_EXCLUDED = ("builtin:subagents", "builtin:background.subagents", "builtin:workspace.write_file",
                "builtin:workspace.apply_patch", "builtin:workspace.remove_file", "builtin:workspace.restore_file",
                "builtin:workspace.commit", "builtin:workspace.finish", "builtin:agent.delegate",
                "builtin:agent.await", "builtin:agent.handoff", "builtin:task.return")
REPORT_ROOT = "summaries"
CHARTER = """# Subagent Charter

You are one leg of a fan-out: another agent gave you one self-contained task and will combine your
answer with others. You see none of its conversation; the task is all you have.

- Collect and check what the task asks for, with the tools you have; report what you found.
- Answer in plain text. Make no files and no artifacts, and leave the output format to the caller.
- Say what you could not find or verify. Do not ask questions: nobody will answer them."""
_FORWARDED = frozenset({"run_started", "model_turn", "tool_call", "tool_result"})


def slots() -> asyncio.Semaphore:
    """The process's leg slots (one semaphore per event loop)."""
    loop = asyncio.get_running_loop()
    sem = _SLOTS.get(loop)
    if sem is None:
        sem = _SLOTS[loop] = asyncio.Semaphore(MAX_LEGS)
    return sem


@dataclass
class LegSpec:
    task: str
    model: str
    name: str | None = None
    session_id: str | None = None
    reasoning: str = "low"
    system_prompt: str | None = None
    exclude_tools: list[str] = field(default_factory=list)
    report_name: str | None = None
    new: bool = False


@dataclass
class Leg:
    """A background leg (`background_subagents`): its report reaches the caller's next turn."""

    id: str
    spec: LegSpec
    runner: asyncio.Task[Any] | None = None
    report: str | None = None
    delivered: bool = False
    fault: BaseException | None = None
    """A fault of the host in the leg: raised in the caller's run when its report is drained."""


def registered(link: RunLink) -> dict[str, Any]:
    """The models a leg may use: the `[models]` of the home, and the caller's own model."""
    from tooldeck.agent.models import load_models

    names: dict[str, Any] = dict.fromkeys(load_models(link.runtime.home).models)
    parent = link.agent
    names[parent.config.name] = parent.config if parent._owns_client else parent.client
    return names


def model_for(link: RunLink, name: str) -> Any:
    choices = registered(link)
    if name not in choices:
        raise ToolCallError("subagent.model_invalid", f'model "{name}" is not registered and cannot run a subagent '
                            f"leg; available: {', '.join(choices)}")
    chosen = choices[name]
    if chosen is None:
        from tooldeck.agent.models import resolve_model

        chosen = resolve_model(link.runtime.home, name)
    return chosen


def _leg_profile(ctx: CallContext, spec: LegSpec) -> Any:
    names = {b.call_name: b.tool_id for b in ctx.invocation.snapshot.bindings}
    excluded = [names.get(t, t) for t in spec.exclude_tools]
    profile = ctx.invocation.profile
    deny = [*profile.deny, *(d for d in (*LEG_EXCLUDED, *excluded) if d not in profile.deny and ":" in d)]
    return profile.replace(deny=deny)


def _slug(text: str | None) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", (text or "").lower()).strip("-")[:48]
    return slug or uuid.uuid4().hex[:8]


def _write_report(root: Path, name: str | None, text: str) -> str:
    folder = root / REPORT_ROOT
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"subagent-{_slug(name)}"
    path = folder / f"{stem}.md"
    if path.exists():
        path = folder / f"{stem}-{uuid.uuid4().hex[:8]}.md"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return f"{REPORT_ROOT}/{path.name}"


def _usage_text(usage: Any) -> str:
    return f"in={usage.input_tokens} out={usage.output_tokens} cached={usage.cached_tokens} " \
           f"write={usage.cache_write_tokens}"


async def run_leg(link: RunLink, ctx: CallContext, spec: LegSpec, leg_id: str) -> tuple[str, dict[str, Any]]:
    """Run one leg to its end: (the text for the caller, structured data). Errors are ToolCallErrors.
    The slot is taken before anything else awaits, so legs get their slots in the order they were called."""
    model = model_for(link, spec.model)
    sem = slots()
    if sem.locked():
        link.event("subagent_waiting", leg_id=leg_id, leg=spec.name or leg_id,
                   text=f"waiting for a subagent slot: {MAX_LEGS} legs are running")
    async with sem:
        return await _leg(link, ctx, spec, leg_id, model)


async def _leg(link: RunLink, ctx: CallContext, spec: LegSpec, leg_id: str, model: Any) -> tuple[str, dict[str, Any]]:
    from tooldeck.agent.delegation.sessions import Sessions, valid_id
    from tooldeck.agent.loop import Agent

    if spec.session_id is not None and not valid_id(spec.session_id):
        raise ToolCallError("tool.invalid_arguments", f"session_id {spec.session_id!r} must be 1-64 letters, digits, "
                            "`-` or `_`")
    if spec.reasoning not in EFFORTS:
        raise ToolCallError("tool.invalid_arguments", f"reasoning {spec.reasoning!r} must be one of "
                            f"{', '.join(EFFORTS)} (default low)")
    store = Sessions(link.runtime.home)
    session = await asyncio.to_thread(store.choose, spec.name, spec.session_id, spec.system_prompt, spec.model)
    # a named session's leg continues its conversation; `new` starts it over, a temp session has none
    history = [] if session.temp or spec.new else await asyncio.to_thread(store.history, session.id)
    display = spec.name or session.id
    instructions = f"{CHARTER}\n\n{session.role}" if session.role else CHARTER
    parent = link.agent
    run_id = f"leg_{uuid.uuid4().hex[:12]}"
    on_event = parent.on_event

    def forward(event: AgentEvent) -> None:
        if on_event is not None and event.kind in _FORWARDED:
            on_event(AgentEvent("subagent_event", {"leg": display, "leg_id": leg_id, "event": event.kind,
                                                   "data": event.data}))

    leg = Agent(link.runtime, model, instructions=instructions, max_turns=parent.max_turns, scene=parent.scene,
                headless=True, profile=_leg_profile(ctx, spec), confirm=parent.confirm,
                workspace=link.run_state.workspace_root, on_event=forward, http_client=parent._http_client,
                reasoning=spec.reasoning)
    leg.lineage = {"parent_run_id": link.run_id, "parent_invocation_id": ctx.invocation.id, "task_id": leg_id,
                   "agent_id": display, "mode": "subagent", "session_id": session.id}
    result = await leg.run(spec.task, run_id=run_id, history=history)
    usage = _usage_text(result.usage)
    link.record("subagent_leg", leg_id=leg_id, run_id=run_id, session_id=session.id, model=spec.model,
                reasoning=spec.reasoning, history_legs=len(history), status=result.status,
                usage=result.usage.to_dict(), error_code=result.error_code)
    if result.status == "failed":
        why = result.error.message if result.error is not None else "the run failed"
        raise ToolCallError("subagent.failed", f"subagent {spec.model} failed: {why}. Re-dispatch this leg with a "
                            f"model other than {spec.model}; the rest of the fan-out is unaffected.")
    text = (result.text or "").strip()
    if not text:
        raise ToolCallError("subagent.empty", f"subagent {spec.model} finished without producing any text ({usage}). "
                            f"Re-dispatch this leg with a narrower task, or with a model other than {spec.model}.")
    if not session.temp:
        await asyncio.to_thread(store.remember, session.id, spec.task, text, new=spec.new, run_id=run_id,
                                model=spec.model)
    report = await asyncio.to_thread(_write_report, Path(link.run_state.workspace_root), spec.report_name, text)
    reader = next((b.call_name for b in ctx.invocation.snapshot.bindings
                   if b.tool_id == "builtin:workspace.read_file"), "the file reading tool")
    header = f"[subagent · {spec.model} · session={session.id} · usage: {usage}]"
    body = f"{header}\nreport: {report}\nThe leg's full report is in that file — read it with {reader} before " \
           "relaying or synthesizing."
    structured = {"model": spec.model, "session_id": session.id, "run_id": run_id, "status": result.status,
                  "usage": result.usage.to_dict(), "report": report}
    return body, structured


def start_background(link: RunLink, ctx: CallContext, spec: LegSpec) -> Leg:
    leg = Leg(f"sub_{uuid.uuid4().hex[:12]}", spec)
    link.legs.append(leg)
    link.notify()

    async def drive() -> None:
        try:
            text, _ = await run_leg(link, ctx, spec, leg.id)
            leg.report = f"subagent leg {leg.id} finished.\n{text}"
        except ToolCallError as exc:
            leg.report = f"subagent leg {leg.id} failed [{exc.code}]: {exc.message}"
        except asyncio.CancelledError:
            leg.report = f"subagent leg {leg.id} was cancelled."
            leg.delivered = True
            raise
        except BaseException as exc:  # a fault of the host: the caller's run raises it when the report is drained
            leg.report = f"subagent leg {leg.id} failed on a fault of the host: {type(exc).__name__}: {exc}"
            leg.fault = exc
        finally:
            link.board.changed()

    leg.runner = asyncio.get_running_loop().create_task(drive(), name=f"tooldeck-leg-{leg.id}")
    return leg
