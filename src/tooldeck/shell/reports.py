"""The background event log: tasks, groups and reports, persisted as JSON lines.

One append-only file per run, `<workspace>/.tooldeck/background/events.jsonl` (a hidden area the
shell never mounts). Replaying it rebuilds the tasks, the groups and which reports are still
undelivered, so queued reports survive a restart of the host process.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

EVENTS_FILE = "events.jsonl"


@dataclass(slots=True)
class TaskRecord:
    id: str
    command: str
    workdir: str
    group_id: str
    output_path: str
    """Workspace-relative path of the full output, e.g. `tool-results/background/bg_x.txt`."""
    started_at: float
    status: str = "running"
    """running, exited, failed, timed_out, cancelled or interrupted."""
    exit_code: int | None = None
    finished_at: float | None = None
    early_reports: int = 0


@dataclass(slots=True)
class GroupRecord:
    id: str
    objective: str | None = None
    next: str | None = None
    task_ids: list[str] = field(default_factory=list)
    reported: bool = False


@dataclass(slots=True)
class BackgroundReport:
    """A message for the model's next turn. `kind` is `early` (an error line while running) or `final`."""

    seq: int
    kind: str
    group_id: str
    task_ids: list[str]
    text: str
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class EventLog:
    """Append-only JSON lines; `replay()` yields the state the lines describe."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / EVENTS_FILE
        self._lock = threading.Lock()

    def append(self, event: dict[str, Any]) -> None:
        line = json.dumps({**event, "at": time.time()}, ensure_ascii=False) + "\n"
        with self._lock:
            self.directory.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)

    def replay(self) -> tuple[dict[str, TaskRecord], dict[str, GroupRecord], list[BackgroundReport], int]:
        """(tasks, groups, undelivered reports, highest seq)."""
        tasks: dict[str, TaskRecord] = {}
        groups: dict[str, GroupRecord] = {}
        reports: dict[int, BackgroundReport] = {}
        top = 0
        if not self.path.exists():
            return tasks, groups, [], 0
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a crash mid-write
            kind = event.pop("type", None)
            event.pop("at", None)
            if kind == "task":
                tasks[event["id"]] = TaskRecord(**event)
            elif kind == "group":
                groups[event["id"]] = GroupRecord(**event)
            elif kind == "report":
                report = BackgroundReport(**event)
                reports[report.seq] = report
                top = max(top, report.seq)
            elif kind == "delivered":
                for seq in event.get("seqs", []):
                    reports.pop(seq, None)
        return tasks, groups, sorted(reports.values(), key=lambda r: r.seq), top


def task_event(task: TaskRecord) -> dict[str, Any]:
    return {"type": "task", **asdict(task)}


def group_event(group: GroupRecord) -> dict[str, Any]:
    return {"type": "group", **asdict(group)}


def report_event(report: BackgroundReport) -> dict[str, Any]:
    return {"type": "report", **asdict(report)}
