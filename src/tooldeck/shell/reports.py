"""The background event log: tasks, groups and reports, persisted so queued reports survive a
restart of the host process. Replaying the events rebuilds the tasks, the groups and which reports
are still undelivered.

With records on, the events are a run-scoped stream in the records store (`StoreEventLog`); with
records off, one append-only JSON-lines file per run, `<workspace>/.tooldeck/background/events.jsonl`
(a hidden area the shell never mounts).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tooldeck.records.port import Recorder

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
    """Append-only JSON lines in a hidden folder of the run's workspace."""

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

    def events(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a crash mid-write

    def replay(self) -> Replayed:
        return replay(self.events())


class StoreEventLog:
    """The same events as a run-scoped stream of the records port (`Recorder.append_run_event`)."""

    KIND = "background"

    def __init__(self, store: Recorder, run_id: str) -> None:
        self.store = store
        self.run_id = run_id

    def append(self, event: dict[str, Any]) -> None:
        self.store.append_run_event(self.run_id, self.KIND, event)

    def replay(self) -> Replayed:
        return replay(self.store.run_events(self.run_id, self.KIND))


Replayed = tuple[dict[str, TaskRecord], dict[str, GroupRecord], list[BackgroundReport], int]


def replay(events: Iterable[dict[str, Any]]) -> Replayed:
    """(tasks, groups, undelivered reports, highest seq) from events in the order they were written."""
    tasks: dict[str, TaskRecord] = {}
    groups: dict[str, GroupRecord] = {}
    reports: dict[int, BackgroundReport] = {}
    top = 0
    for raw in events:
        event = dict(raw)
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
