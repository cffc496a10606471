"""Background shell tasks of one run: start, watch output for error lines, report, cancel.

Each task is one `ShellRun` on a daemon thread with its own (longer) time limit. Output streams to
`tool-results/background/<task>.txt`. A new output line matching an error keyword queues an early
report while the task keeps running; when every task of a group (the tasks started in one model
turn) has ended, one final report is queued. Reports wait in the run's event log until the host
drains them for the next model turn (`BackgroundManager.drain`).
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from tooldeck.shell.engine import ShellResult, ShellRun, Status
from tooldeck.shell.layout import Layout
from tooldeck.shell.limits import MIB, ShellLimits
from tooldeck.shell.reports import (
    BackgroundReport,
    EventLog,
    GroupRecord,
    StoreEventLog,
    TaskRecord,
    group_event,
    report_event,
    task_event,
)
from tooldeck.workspace.paths import PathPolicy

STATE_KEY = "background"
HIDDEN_DIR = ".tooldeck/background"
ERROR_KEYWORDS: tuple[str, ...] = ("error", "errors", "failed", "failure", "fatal", "exception", "traceback", "panic")
DEFAULT_TIMEOUT_S = 1800.0
MAX_RUNNING = 8
MAX_EARLY_REPORTS = 3
TAIL_LINES = 20
TAIL_CHARS = 4000
MAX_OUTPUT_FILE_BYTES = 16 * MIB


def keyword_pattern(keywords: Iterable[str]) -> re.Pattern[str]:
    words = "|".join(re.escape(k) for k in keywords if k)
    return re.compile(rf"\b(?:{words})\b", re.IGNORECASE) if words else re.compile(r"(?!x)x")


def tail(text: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    out = "\n".join(text.rstrip("\n").split("\n")[-lines:])
    return out[-chars:]


class _Live:
    """What only exists while a task runs in this process."""

    def __init__(self, run: ShellRun, output: Path) -> None:
        self.run = run
        self.output = output
        self.written = 0
        self.partial = {"stdout": "", "stderr": ""}
        self.line_no = 0
        self.lock = threading.Lock()
        self.done = threading.Event()


class BackgroundManager:
    def __init__(self, workspace_root: Path, policy: PathPolicy, *, keywords: Iterable[str] = ERROR_KEYWORDS,
                 timeout_s: float = DEFAULT_TIMEOUT_S, log: EventLog | StoreEventLog | None = None,
                 views: Callable[[], Mapping[str, str]] | None = None) -> None:
        self.workspace_root = Path(workspace_root)
        self.policy = policy
        self.views = views
        """The run's read-only roots served from outside folders (skills/), read when a task starts."""
        self.keywords = tuple(keywords)
        self.pattern = keyword_pattern(self.keywords)
        self.timeout_s = timeout_s
        self.log = log if log is not None else EventLog(self.workspace_root / HIDDEN_DIR)
        self._closed = False
        self._lock = threading.RLock()
        self._live: dict[str, _Live] = {}
        self.tasks, self.groups, pending, self._seq = self.log.replay()
        self._pending: deque[BackgroundReport] = deque(pending)
        self._recover_interrupted()

    # -- paths --------------------------------------------------------------------------------------
    def _output_rel(self, task_id: str) -> str:
        root = "tool-results" if "tool-results" in self.policy.visible_roots else HIDDEN_DIR
        return f"{root}/background/{task_id}.txt"

    # -- starting -----------------------------------------------------------------------------------
    def start(self, command: str, workdir: str, group_key: str, *, objective: str | None = None,
              next_step: str | None = None, timeout_s: float | None = None) -> TaskRecord:
        with self._lock:
            running = sum(1 for t in self.tasks.values() if t.status == "running")
            if running >= MAX_RUNNING:
                raise RuntimeError(f"{running} background tasks are already running (the limit is {MAX_RUNNING})")
            task_id = f"bg_{uuid.uuid4().hex[:10]}"
            group = self.groups.get(group_key)
            if group is None:
                group = self.groups[group_key] = GroupRecord(group_key)
            group.objective = group.objective or (objective or None)
            group.next = group.next or (next_step or None)
            group.task_ids.append(task_id)
            task = TaskRecord(task_id, command, workdir, group_key, self._output_rel(task_id), time.time())
            self.tasks[task_id] = task
            limits = ShellLimits(timeout_s=min(timeout_s or self.timeout_s, self.timeout_s))
            output = self.workspace_root / task.output_path
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text("", encoding="utf-8")
            layout = Layout(self.workspace_root, self.policy, self.views() if self.views else {})
            live = _Live(ShellRun(layout, limits, workdir, stream_bytes=MAX_OUTPUT_FILE_BYTES + 1), output)
            live.run.on_output = lambda out, err, t=task_id: self._on_output(t, out, err)
            self._live[task_id] = live
            self._log(group_event(group))
            self._log(task_event(task))
        threading.Thread(target=self._work, args=(task_id, command), name=f"tooldeck-{task_id}", daemon=True).start()
        return task

    def _work(self, task_id: str, command: str) -> None:
        live = self._live[task_id]
        try:
            result = live.run.run(command)
        except Exception as exc:  # the task fails; the host keeps going
            result = ShellResult(Status.FAILED, None, "", f"{type(exc).__name__}: {exc}", False, str(exc))
        self._finish(task_id, result)

    # -- output -------------------------------------------------------------------------------------
    def _on_output(self, task_id: str, out: str, err: str) -> None:
        live = self._live.get(task_id)
        if live is None:
            return
        with live.lock:
            self._append(live, out + err)
            for stream, chunk in (("stdout", out), ("stderr", err)):
                if not chunk:
                    continue
                text = live.partial[stream] + chunk
                *lines, live.partial[stream] = text.split("\n")
                for line in lines:
                    live.line_no += 1
                    if self.pattern.search(line):
                        self._early(task_id, live.line_no, line)

    def _append(self, live: _Live, text: str) -> None:
        if not text or live.written >= MAX_OUTPUT_FILE_BYTES:
            return
        data = text.encode("utf-8", "replace")[: MAX_OUTPUT_FILE_BYTES - live.written]
        with live.output.open("ab") as f:
            f.write(data)
            if live.written + len(data) >= MAX_OUTPUT_FILE_BYTES:
                f.write(b"\n[output file capped at 16 MiB]\n")
        live.written += len(data)

    def _early(self, task_id: str, line_no: int, line: str) -> None:
        with self._lock:
            task = self.tasks[task_id]
            if task.status != "running" or task.early_reports >= MAX_EARLY_REPORTS:
                return
            if any(r.kind == "early" and task_id in r.task_ids for r in self._pending):
                return  # one undelivered early report per task is enough; it points at the full output
            task.early_reports += 1
            text = (f"Background task {task_id} (`{_short(task.command)}`) printed a line that looks like an error "
                    f"and is still running.\n  line {line_no}: {line.strip()[:500]}\n"
                    f"Full output so far: {task.output_path}. It keeps running; use `background_tasks` to read its "
                    "output or cancel it.")
            self._log(task_event(task))
            self._queue("early", task.group_id, [task_id], text)

    # -- finishing ----------------------------------------------------------------------------------
    def _finish(self, task_id: str, result: ShellResult) -> None:
        live = self._live.get(task_id)
        try:
            if live is not None:
                with live.lock:
                    trailer = result.error if result.error and result.error not in result.stderr else None
                    if trailer:
                        self._append(live, f"\n{trailer}\n")
            with self._lock:
                task = self.tasks[task_id]
                if task.status != "running":
                    return  # cancelled by the model already
                task.status = {Status.EXITED: "exited", Status.TIMED_OUT: "timed_out",
                               Status.CANCELLED: "cancelled", Status.FAILED: "failed"}[result.status]
                task.exit_code = result.exit_code
                task.finished_at = time.time()
                self._log(task_event(task))
                self._maybe_report_group(task.group_id)
        finally:
            if live is not None:
                live.done.set()  # only once the task's report is written: waiters may close the store next

    def _maybe_report_group(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.reported:
            return
        members = [self.tasks[t] for t in group.task_ids if t in self.tasks]
        if any(t.status == "running" for t in members):
            return
        group.reported = True
        self._log(group_event(group))
        self._queue("final", group_id, [t.id for t in members], self._final_text(group, members))

    def _final_text(self, group: GroupRecord, members: list[TaskRecord]) -> str:
        lines = ["Background task finished." if len(members) == 1 else
                 f"All {len(members)} background tasks started together have finished."]
        if group.objective:
            lines.append(f"Objective: {group.objective}")
        for task in members:
            lines.append(f"- {task.id} `{_short(task.command)}`: {_outcome(task)}. Full output: {task.output_path}")
            body = tail(self._read_output(task))
            if body:
                lines.append("  Last lines:\n" + "\n".join("    " + ln for ln in body.split("\n")))
        if group.next:
            lines.append(f"Next: {group.next}")
        return "\n".join(lines)

    def _queue(self, kind: str, group_id: str, task_ids: list[str], text: str) -> None:
        self._seq += 1
        report = BackgroundReport(self._seq, kind, group_id, task_ids, text, time.time())
        self._pending.append(report)
        self._log(report_event(report))

    def _recover_interrupted(self) -> None:
        """Tasks the log shows running belonged to a process that is gone: report them as interrupted."""
        stale = [t for t in self.tasks.values() if t.status == "running"]
        for task in stale:
            task.status = "interrupted"
            task.finished_at = time.time()
            self._log(task_event(task))
        for group_id in {t.group_id for t in stale}:
            self._maybe_report_group(group_id)

    # -- the model's controls -----------------------------------------------------------------------
    def get(self, task_id: str) -> TaskRecord | None:
        return self.tasks.get(task_id)

    def list(self) -> list[TaskRecord]:
        with self._lock:
            return sorted(self.tasks.values(), key=lambda t: t.started_at)

    def _read_output(self, task: TaskRecord) -> str:
        try:
            return (self.workspace_root / task.output_path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def output_tail(self, task: TaskRecord, lines: int) -> str:
        return tail(self._read_output(task), lines, chars=64_000)

    def _log(self, event: dict[str, Any]) -> None:
        if not self._closed:
            self.log.append(event)

    def close(self) -> None:
        """Stop the running tasks with their host. Nothing more is written: on the next open, a task
        that was still running is reported as interrupted, as after a crash."""
        with self._lock:
            self._closed = True
            lives = list(self._live.values())
        for live in lives:
            live.run.cancel()

    def cancel(self, task_id: str) -> bool:
        """True when the task was running and is now cancelled."""
        with self._lock:
            task = self.tasks.get(task_id)
            if task is None or task.status != "running":
                return False
            live = self._live.get(task_id)
            if live is not None:
                live.run.cancel()
            task.status = "cancelled"
            task.finished_at = time.time()
            self._log(task_event(task))
            self._maybe_report_group(task.group_id)
            return True

    def wait(self, task_id: str, timeout: float | None = None) -> bool:
        live = self._live.get(task_id)
        return True if live is None else live.done.wait(timeout)

    # -- the host's side ----------------------------------------------------------------------------
    def pending(self) -> list[BackgroundReport]:
        with self._lock:
            return list(self._pending)

    def drain(self) -> list[BackgroundReport]:
        """The undelivered reports, oldest first; they are marked delivered (also on disk)."""
        with self._lock:
            reports = list(self._pending)
            self._pending.clear()
            if reports:
                self._log({"type": "delivered", "seqs": [r.seq for r in reports]})
            return reports


def _short(command: str, limit: int = 80) -> str:
    one = " ".join(command.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _outcome(task: TaskRecord) -> str:
    took = f" after {task.finished_at - task.started_at:.1f} s" if task.finished_at else ""
    if task.status == "exited":
        return f"exit code {task.exit_code}{took}"
    if task.status == "timed_out":
        return f"timed out{took}"
    if task.status == "cancelled":
        return f"cancelled{took}"
    if task.status == "interrupted":
        return "interrupted (the host process stopped while it ran); its output may be incomplete"
    return f"failed{took}" + (f" (exit code {task.exit_code})" if task.exit_code is not None else "")
