"""Delegated tasks: what `agent_delegate` starts and `agent_await` reads (one record per child run).

A task is `queued` until its child run starts, `running` while it runs, then one of the terminal
statuses: `completed` / `failed` (what the child's `task_return` said, or `failed` when the child
ended without it), `cancelled` (its parent's run ended first).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from tooldeck.agent.events import AgentResult

TaskStatus = Literal["queued", "running", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


@dataclass(eq=False)
class ChildTask:
    id: str
    agent_id: str
    task: dict[str, Any]
    """The task packet as the caller sent it (objective, title, context, expectedOutput, …)."""
    parent_run_id: str
    stage: int
    """The caller's stage of its run (a handoff starts the next one): `agent_await` sees its own stage's tasks."""
    parent_invocation_id: str
    call_id: str
    child_run_id: str
    workspace_key: str
    """`<agent>` for the run's first task of that agent, then `<agent>-002`, …: its summary is
    `summaries/<workspace_key>-result.md`."""
    status: TaskStatus = "queued"
    error: str | None = None
    result: dict[str, Any] | None = None
    """The result document `task_return` wrote (status, summary, summaryRef, result: the other fields)."""
    created_at: float = field(default_factory=time.time)
    seen: bool = False
    """Its terminal state was shown to the caller (by `agent_await` or a delivered note)."""
    runner: asyncio.Task[Any] | None = None
    outcome: AgentResult | None = None
    fault: BaseException | None = None
    """A fault of the host in the child run: raised in the caller when it reads the task."""
    notify: Callable[[], None] | None = None
    """Wakes whoever waits on the caller's tasks (the caller's `TaskBoard.changed`)."""

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def view(self) -> dict[str, Any]:
        """What `agent_await` shows of the task (camelCase, as the tool's arguments are)."""
        out: dict[str, Any] = {"taskId": self.id, "agentId": self.agent_id, "status": self.status}
        if self.error:
            out["error"] = self.error
        doc = self.result or {}
        summary = str(doc.get("summary") or "").strip()
        if summary:
            out["summary"] = summary
        if doc.get("summaryRef"):
            out["summaryRef"] = doc["summaryRef"]
        fields = doc.get("result") or {}
        for key in ("confidence", "artifacts", "findings", "warnings", "suggestedNextActions",
                    "questionsForCaller"):
            if fields.get(key) is not None:
                out[key] = fields[key]
        return out


def new_task_id() -> str:
    return f"task_{uuid.uuid4().hex[:12]}"


class TaskBoard:
    """The tasks of one run (every stage), and a signal for whoever waits on them."""

    def __init__(self) -> None:
        self.tasks: list[ChildTask] = []
        self._keys: dict[str, int] = {}
        self._changed: asyncio.Event | None = None

    def workspace_key(self, agent_id: str) -> str:
        n = self._keys[agent_id] = self._keys.get(agent_id, 0) + 1
        return agent_id if n == 1 else f"{agent_id}-{n:03d}"

    def add(self, task: ChildTask) -> None:
        task.notify = self.changed
        self.tasks.append(task)
        self.changed()

    def of_stage(self, stage: int) -> list[ChildTask]:
        return [t for t in self.tasks if t.stage == stage]

    def pending(self, stage: int | None = None) -> list[ChildTask]:
        return [t for t in self.tasks if not t.terminal and (stage is None or t.stage == stage)]

    def changed(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait(self, timeout: float) -> None:
        """Until a task changes, or `timeout` seconds pass."""
        if self._changed is None:
            self._changed = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), max(0.0, timeout))
