"""The runner: claim the schedules that are due and start one agent run for each.

`Runner(runtime).run_due()` does one pass (what `tooldeck schedules run-due` runs, e.g. from a system
cron); `Runner.serve(interval_s)` passes again and again (what `tooldeck serve` runs beside the MCP
server, `serving`). A pass claims its fires atomically (store.py), so several runners on one home start
each fire once. Each fire is an agent run in its own run id and workspace: headless (nobody is there to
answer), with the schedule's model (`[models]` name; None: the default model), on the skill's SKILL.md
or the schedule's task. The run is recorded like any other (`tooldeck records list --run RUN_ID`) with
a `schedule` run event first (schedule id, slot, missed slots), and its end is kept in
`schedule_runs` (status, error code).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from tooldeck.core.errors import TooldeckError
from tooldeck.schedules.clock import Clock, SystemClock, zone
from tooldeck.schedules.errors import SKILL_MISSING, ScheduleError
from tooldeck.schedules.store import Fire, Schedule, ScheduleStore

if TYPE_CHECKING:
    from tooldeck.agent.loop import Agent
    from tooldeck.runtime import Runtime

RUN_EVENTS: Final = "schedule"
"""The run event stream a fired run gets its `fired` event in (`store.run_events(run_id, "schedule")`)."""
DEFAULT_INTERVAL_S: Final = 15.0
DEFAULT_PARALLEL: Final = 3
INSTRUCTIONS: Final = ("This run was started by schedule {id} ({target} {time}) for the slot {slot}. Nobody is "
                       "watching it live: do the task with the tools you have, then answer with the result.")

AgentFactory = Callable[[Schedule], "Agent"]
logger = logging.getLogger("tooldeck.schedules")


@dataclass(frozen=True, slots=True)
class FireOutcome:
    schedule_id: str
    run_id: str
    slot: str
    missed: int
    status: str
    error_code: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def owner_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Runner:
    def __init__(self, runtime: Runtime, *, clock: Clock | None = None, store: ScheduleStore | None = None,
                 make_agent: AgentFactory | None = None, max_parallel: int = DEFAULT_PARALLEL) -> None:
        self.runtime = runtime
        self.clock = clock or SystemClock()
        self.store = store or ScheduleStore.of_home(runtime.home)
        self.make_agent = make_agent or self._default_agent
        self.slots = asyncio.Semaphore(max_parallel)
        self.owner = owner_name()

    def _default_agent(self, schedule: Schedule) -> Agent:
        return self.runtime.agent(schedule.model, headless=True)

    async def run_due(self) -> list[FireOutcome]:
        """Claim what is due now and run it; returns when every run this pass started has ended."""
        fires = await asyncio.to_thread(self.store.claim_due, self.clock.now(), self.owner)
        if not fires:
            return []
        return list(await asyncio.gather(*(self._fire(f) for f in fires)))

    async def serve(self, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        """Pass every `interval_s` seconds until cancelled; a pass's runs go on while the next pass waits."""
        running: set[asyncio.Task[list[FireOutcome]]] = set()
        try:
            while True:
                try:
                    task = asyncio.ensure_future(self.run_due())
                    running.add(task)
                    task.add_done_callback(running.discard)
                    task.add_done_callback(_log_failure)
                except Exception:  # never let one bad pass stop the runner; the fault is logged
                    logger.exception("schedules: a pass failed")
                await asyncio.sleep(interval_s)
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    # -- one fire ----------------------------------------------------------------------------------
    async def _fire(self, fire: Fire) -> FireOutcome:
        s = fire.schedule
        slot = datetime.fromtimestamp(fire.slot, zone(s.tz)).isoformat(timespec="seconds")
        self._record(fire, slot)
        async with self.slots:
            try:
                task = self._task(s)
                agent = self.make_agent(s)
            except (ScheduleError, TooldeckError) as exc:  # a missing skill, a model that is not configured
                await asyncio.to_thread(self.store.finish, fire, "failed", exc.code)
                logger.warning("schedules: %s did not start: %s: %s", s.id, exc.code, exc.message)
                return FireOutcome(s.id, fire.run_id, slot, fire.missed, "failed", exc.code, exc.message)
            agent.instructions = _join(agent.instructions, INSTRUCTIONS.format(id=s.id, target=s.kind, time=s.time,
                                                                               slot=slot))
            try:
                result = await agent.run(task, run_id=fire.run_id)
            except asyncio.CancelledError:
                await asyncio.to_thread(self.store.finish, fire, "cancelled")
                raise
            except BaseException as exc:  # a host fault: noted on the fire, then raised (never swallowed)
                code = exc.code if isinstance(exc, TooldeckError) else "agent.host_fault"
                await asyncio.to_thread(self.store.finish, fire, "failed", code)
                raise
        code = result.error.code if result.error is not None else None
        await asyncio.to_thread(self.store.finish, fire, result.status, code)
        return FireOutcome(s.id, fire.run_id, slot, fire.missed, result.status, code,
                           result.error.message if result.error is not None else None)

    def _record(self, fire: Fire, slot: str) -> None:
        rt = self.runtime
        if rt.recording:
            s = fire.schedule
            rt.recorder.append_run_event(fire.run_id, RUN_EVENTS, {
                "type": "fired", "at": time.time(), "schedule_id": s.id, "target": s.kind, "time": s.time,
                "skill_name": s.skill, "slot": slot, "missed": fire.missed, "owner": self.owner})

    def _task(self, s: Schedule) -> str:
        if s.skill is None:
            return s.task or ""
        from tooldeck.sources.skill_loader import SkillFolder
        from tooldeck.sources.skills import SKILLS_ROOT

        skills, _, _ = SkillFolder(self.runtime.home / SKILLS_ROOT).skills()
        skill = next((k for k in skills if k.name == s.skill), None)
        if skill is None:
            raise ScheduleError(SKILL_MISSING, f"schedule {s.id} runs skill {s.skill!r}, which is not in "
                                               f"{self.runtime.home / SKILLS_ROOT} (removed or renamed)")
        head = f"Run the skill `{skill.name}`." + (f"\n\n{s.task}" if s.task else "")
        return f"{head}\n\nskill: {skill.name}\nskill directory: {SKILLS_ROOT}/{skill.name}\n\n---\n\n{skill.text}"


def _join(first: str | None, second: str) -> str:
    return f"{first}\n\n{second}" if first else second


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("schedules: a pass failed: %r", task.exception())


@contextlib.asynccontextmanager
async def serving(runtime: Runtime, interval_s: float = DEFAULT_INTERVAL_S,
                  clock: Clock | None = None) -> AsyncIterator[Runner]:
    """Run due schedules in the background while the body runs (`tooldeck serve`); leaving it cancels the
    runs still going (each is recorded as cancelled)."""
    runner = Runner(runtime, clock=clock)
    task = asyncio.ensure_future(runner.serve(interval_s))
    try:
        yield runner
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
