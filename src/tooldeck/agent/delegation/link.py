"""`RunLink`: what the delegation and subagent tools of one agent run reach (`run.state[LINK_KEY]`).

The loop attaches one per run (`attach`) and closes it when the run ends (`close`: unfinished
children and background legs are cancelled, and awaited). Tools find it through their call
context; a run the loop does not drive has none, and the tools say so.

It also feeds the loop's notes (agent/background.py): results of delegated tasks that finished
without the caller awaiting them, and the reports of background subagent legs, reach the caller's
next model turn as user text, like a background command's report.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from tooldeck.agent.delegation import render
from tooldeck.agent.delegation.profiles import ROOT_AGENT, AgentProfile, default_agent, load_agent
from tooldeck.agent.delegation.tasks import ChildTask, TaskBoard
from tooldeck.agent.events import AgentEvent

if TYPE_CHECKING:
    from tooldeck.agent.loop import Agent
    from tooldeck.catalog.runs import RunState

LINK_KEY = "agent.link"
NOTES_KEY = "agent.notes"
"""Set in the run's state once a child or a background leg was started: the loop then asks for notes."""
CLOSE_WAIT_S = 30.0


class Handoff:
    __slots__ = ("id", "packet", "target")

    def __init__(self, handoff_id: str, target: AgentProfile, packet: dict[str, Any]) -> None:
        self.id = handoff_id
        self.target = target
        self.packet = packet


class RunLink:
    def __init__(self, loop_run: Any, agent: Agent, run_state: RunState, me: AgentProfile,
                 parent_task: ChildTask | None) -> None:
        self.loop_run = loop_run
        self.agent = agent
        self.runtime = agent.runtime
        self.run_id: str = loop_run.run_id
        self.run_state = run_state
        self.me = me
        self.parent_task = parent_task
        """The task this run works on when it is a return-mode child (`task_return` needs it)."""
        self.stage = 1
        self.handoffs = 0
        self.handoff: Handoff | None = None
        self.board = TaskBoard()
        self.legs: list[Any] = []
        """Background subagent legs (agent/delegation/subagents.py `Leg`)."""
        self.clients: list[Any] = []
        """Model clients a handoff opened, closed with the run."""
        self._directory: tuple[Any, str | None] | None = None

    # -- the run's records and events --------------------------------------------------------------
    def record(self, kind: str, **data: Any) -> None:
        self.loop_run._record(kind, **data)

    def event(self, kind: str, **data: Any) -> None:
        if self.agent.on_event is not None:
            self.agent.on_event(AgentEvent(kind, data))

    def notify(self) -> None:
        """The loop should ask for notes from now on."""
        self.run_state.state[NOTES_KEY] = self

    # -- notes for the loop ------------------------------------------------------------------------
    def drain(self) -> str | None:
        parts: list[str] = []
        done = [t for t in self.board.of_stage(self.stage) if t.terminal and not t.seen]
        if done:
            for t in done:
                t.seen = True
            self.raise_faults(done)
            parts.append("Delegated task results are now available. Review them before deciding your next action."
                         "\n\n" + render.await_content([t.view() for t in done], False, self.hint()))
        for leg in self.legs:
            if leg.report is not None and not leg.delivered:
                leg.delivered = True
                if leg.fault is not None:
                    fault, leg.fault = leg.fault, None
                    raise fault
                parts.append(f"[background report {leg.id}]\n{leg.report}")
        return "\n\n".join(parts) if parts else None

    def running(self) -> bool:
        return bool(self.board.pending(self.stage)) or any(leg.report is None for leg in self.legs)

    def has_notes(self) -> bool:
        return any(t.terminal and not t.seen for t in self.board.of_stage(self.stage)) or \
            any(leg.report is not None and not leg.delivered for leg in self.legs)

    async def wait(self, timeout: float) -> None:
        await self.board.wait(timeout)

    def hint(self) -> str:
        snapshot = self.loop_run.last_snapshot
        names = {b.tool_id: b.call_name for b in snapshot.bindings} if snapshot is not None else {}
        return render.continuation_hint(names.get("builtin:workspace.commit"), names.get("builtin:workspace.finish"),
                                        len(self.loop_run.result.commits))

    def with_directory(self, instructions: str | None, snapshot: Any) -> str | None:
        agents = self.directory(snapshot)
        if not agents:
            return instructions
        return f"{instructions}\n\n{agents}" if instructions else agents

    def directory(self, snapshot: Any) -> str | None:
        """The agents this stage may call, for the instructions (when the snapshot has a delegation tool)."""
        key = (self.stage, snapshot.id)
        if self._directory is not None and self._directory[0] == key:
            return self._directory[1]
        bound = {b.tool_id for b in snapshot.bindings}
        can = {"delegate": "builtin:agent.delegate" in bound, "handoff": "builtin:agent.handoff" in bound}
        text = None
        if any(can.values()):
            from tooldeck.agent.delegation import profiles
            from tooldeck.core.errors import TooldeckError

            lines = []
            for agent_id in profiles.agent_files(self.runtime.home):
                if agent_id == self.me.id or not profiles.target_allowed(self.me, agent_id):
                    continue
                try:
                    target = profiles.load_agent(self.runtime.home, agent_id)
                except TooldeckError:
                    continue  # a broken file: calling it says why
                if target is None:
                    continue
                ops = [op for op, problem in (("delegate", profiles.subagent_problem(self.me, target)),
                                              ("handoff", profiles.handoff_problem(self.me, target)))
                       if can[op] and problem is None]
                if ops:
                    about = " ".join(target.description.split()) or "(no description)"
                    lines.append(f"- `{agent_id}` ({', '.join(ops)}): {about}")
            if lines:
                text = "## Agents you can call\n" + "\n".join(lines)
        self._directory = (key, text)
        return text

    @staticmethod
    def raise_faults(tasks: list[ChildTask]) -> None:
        for t in tasks:
            if t.fault is not None:
                fault, t.fault = t.fault, None
                raise fault

    # -- the end of the run ------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Cancel what is still running (children, background legs) and wait for it to stop."""
        runners = [t.runner for t in self.board.tasks if t.runner is not None and not t.runner.done()]
        runners += [leg.runner for leg in self.legs if leg.runner is not None and not leg.runner.done()]
        for r in runners:
            r.cancel()
        if runners:
            await asyncio.wait(runners, timeout=CLOSE_WAIT_S)
        for client in self.clients:
            await client.aclose()
        self.clients.clear()


def attach(loop_run: Any) -> RunLink:
    agent = loop_run.agent
    run_state = agent.runtime.run_state(loop_run.run_id, agent.workspace)
    agent_id = agent.agent_id
    me = (load_agent(agent.runtime.home, agent_id) if agent_id else None) or default_agent(agent_id or ROOT_AGENT)
    link = RunLink(loop_run, agent, run_state, me, agent.parent_task)
    run_state.state[LINK_KEY] = link
    return link


def link_of(run_state: RunState) -> RunLink | None:
    return run_state.state.get(LINK_KEY)


def now() -> float:
    return time.time()
