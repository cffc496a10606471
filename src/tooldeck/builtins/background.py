"""`background.command` and `background.tasks`: long shell jobs that report back on a later turn.

Only for interactive origins: both descriptors are unavailable when the invocation is headless.

The host drains queued reports before each model turn:

    from tooldeck.builtins.background import pending_reports, render_reports
    reports = pending_reports(invocation)            # or pending_reports(runtime, run_id)
    if reports:
        messages.append({"role": "user", "content": render_reports(reports)})

Reports are persisted in `<workspace>/.tooldeck/background/events.jsonl` and survive a restart.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.shell import MAX_COMMAND_CHARS, vfs_workdir
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import AvailabilityContext, ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.workspace.paths import PathPolicy

if TYPE_CHECKING:
    from tooldeck.shell.background import BackgroundManager
    from tooldeck.shell.reports import BackgroundReport, TaskRecord

# The shell engine is imported when a task starts or is listed, not when the Runtime loads this family
# for its descriptors (see builtins/shell.py); the timeout's maximum is the manager's default,
# `tooldeck.shell.background.DEFAULT_TIMEOUT_S` (a test checks they agree).
DEFAULT_TIMEOUT_S = 1800.0

UNKNOWN_TASK = "background.unknown_task"
START_FAILED = "background.start_failed"
INVALID_ACTION = "background.invalid_action"


def interactive_only(ctx: AvailabilityContext) -> bool:
    return not ctx.headless


def manager_for(run: Any, roots: Any | None = None) -> BackgroundManager:
    """The run's manager, created on first use, which replays the run's events: from the records store
    when records are on, else from the JSON-lines log in the workspace's hidden area."""
    from tooldeck.shell.background import STATE_KEY, BackgroundManager
    from tooldeck.shell.reports import StoreEventLog

    manager = run.state.get(STATE_KEY)
    if manager is None:
        from tooldeck.catalog.profile import WorkspaceRoots

        policy = PathPolicy.from_roots(roots or WorkspaceRoots())
        recorder = run.records  # the runtime's recorder when records are on, else None
        log = StoreEventLog(recorder, run.run_id) if recorder is not None and recorder.recording else None
        from tooldeck.workspace.store import for_run

        manager = run.state[STATE_KEY] = BackgroundManager(Path(run.workspace_root), policy, log=log,
                                                           views=for_run(run).views.mounts)
    return manager


def _run_state(target: Any, run_id: str | None) -> Any:
    if hasattr(target, "run_state") and not callable(target.run_state):
        return target.run_state  # Invocation
    if hasattr(target, "run_state") and callable(target.run_state):
        if run_id is None:
            raise ValueError("pending_reports(runtime, run_id): the run id is required with a Runtime")
        return target.run_state(run_id)  # Runtime
    if hasattr(target, "run"):
        return target.run  # CallContext
    return target  # RunState


def pending_reports(target: Any, run_id: str | None = None, *, drain: bool = True) -> list[BackgroundReport]:
    """Queued background reports of a run, oldest first, for the next model turn.

    `target` is an `Invocation`, or a `Runtime` with `run_id`, or a `RunState`. By default they are
    drained (marked delivered, also on disk); pass `drain=False` to look without taking them.
    """
    run = _run_state(target, run_id)
    profile = getattr(target, "profile", None)
    manager = manager_for(run, profile.workspace if profile is not None else None)
    return manager.drain() if drain else manager.pending()


def render_reports(reports: list[BackgroundReport]) -> str:
    """One message for the model from several reports."""
    return "\n\n".join(f"[background report {r.seq}]\n{r.text}" for r in reports)


# -- background_command -------------------------------------------------------------------------------
def handle_command(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    profile = ctx.invocation.profile
    policy = PathPolicy.from_roots(profile.workspace)
    workdir = vfs_workdir(args.get("workdir", "/"), policy)
    manager = manager_for(ctx.run, profile.workspace)
    group_key = f"g_{ctx.invocation.id.removeprefix('inv_')[:8]}_r{ctx.round}"
    try:
        task = manager.start(args["command"], workdir, group_key, objective=args.get("objective"),
                             next_step=args.get("next"), timeout_s=args.get("timeout_s"))
    except RuntimeError as exc:
        raise ToolCallError(START_FAILED, f"{exc}. Wait for one to finish or cancel one with `background_tasks` "
                            "(action `cancel`).") from exc
    group = manager.groups[group_key]
    others = len(group.task_ids) - 1
    together = f" It is grouped with {others} other task(s) started in this turn." if others else ""
    text = (f"Started background task {task.id}.{together} A report will arrive on a later turn when "
            f"{'the group' if others else 'it'} finishes, and earlier if an output line looks like an error. "
            f"Output is written to {task.output_path}.")
    return ToolOutput(text, {"task_id": task.id, "group_id": group_key, "output_path": task.output_path})


# -- background_tasks ---------------------------------------------------------------------------------
def _line(task: TaskRecord) -> str:
    code = f" (exit {task.exit_code})" if task.exit_code is not None else ""
    command = " ".join(task.command.split())
    return f"- {task.id} [{task.status}{code}] group {task.group_id}: `{command[:100]}` → {task.output_path}"


def handle_tasks(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    manager = manager_for(ctx.run, ctx.invocation.profile.workspace)
    action = args["action"]
    if action == "list":
        tasks = manager.list()
        if not tasks:
            return ToolOutput("No background tasks in this run.", {"tasks": []})
        return ToolOutput("\n".join(_line(t) for t in tasks),
                          {"tasks": [{"id": t.id, "status": t.status, "exit_code": t.exit_code} for t in tasks]})
    task_id = args.get("task_id")
    task = manager.get(task_id) if isinstance(task_id, str) else None
    if task is None:
        known = ", ".join(t.id for t in manager.list()[-10:]) or "none"
        raise ToolCallError(UNKNOWN_TASK, f"No background task `{task_id}` in this run (known: {known}). "
                            "Use action `list` to see the tasks.")
    if action == "output":
        lines = int(args.get("tail_lines") or 50)
        body = manager.output_tail(task, lines)
        text = f"{_line(task)}\nLast {lines} lines:\n{body}" if body else f"{_line(task)}\n(no output yet)"
        return ToolOutput(text, {"task_id": task.id, "status": task.status, "output_path": task.output_path})
    if action == "cancel":
        if manager.cancel(task.id):
            return ToolOutput(f"Cancelled {task.id}. Completed writes stay.", {"task_id": task.id,
                                                                                "status": "cancelled"})
        return ToolOutput(f"{task.id} is not running ({task.status}); nothing to cancel.",
                          {"task_id": task.id, "status": task.status})
    raise ToolCallError(INVALID_ACTION, f"Unknown action `{action}`; use `list`, `output` or `cancel`.")


COMMAND = ToolDescriptor(
    id=ToolId.builtin("background.command"),
    title="Run a shell command in the background",
    description=(
        "Start a command in the sandboxed workspace shell (same environment as `workspace_shell`) in the background "
        "and get a task id at once. When it ends, a report (exit code, last output lines, path of the full output "
        "under tool-results/background/) arrives on a later turn; an output line that looks like an error "
        "(error, failed, exception, traceback...) triggers an early report while it keeps running. Commands "
        "started in the same turn form a group that reports once, when all are done; give the group an "
        "`objective` and the `next` step to take then. For jobs longer than the shell's own time limit."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string", "maxLength": MAX_COMMAND_CHARS, "description": "The bash command to run."},
            "workdir": {"type": "string", "default": "/",
                        "description": "Folder to start in, relative to the workspace root; default `/`."},
            "objective": {"type": "string", "maxLength": 2000,
                          "description": "What the tasks started in this turn are for (shown in the report)."},
            "next": {"type": "string", "maxLength": 2000,
                     "description": "What to do once all tasks of this turn have finished (shown in the report)."},
            "timeout_s": {"type": "number", "minimum": 1, "maximum": DEFAULT_TIMEOUT_S,
                          "description": f"Stop the task after this many seconds (default {DEFAULT_TIMEOUT_S:g})."},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
    available=interactive_only,
)

TASKS = ToolDescriptor(
    id=ToolId.builtin("background.tasks"),
    title="List, read or cancel background tasks",
    description=(
        "Manage the tasks started with `background_command`: action `list` shows every task and its status; "
        "`output` shows the last `tail_lines` lines of a task's output; `cancel` stops a running task (writes it "
        "already made stay)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["list", "output", "cancel"]},
            "task_id": {"type": "string", "description": "The task id (`bg_...`); needed for `output` and `cancel`."},
            "tail_lines": {"type": "integer", "minimum": 1, "maximum": 2000, "default": 50},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(),
    available=interactive_only,
)

TOOLS = [BuiltinTool(COMMAND, handle_command, blocking=True), BuiltinTool(TASKS, handle_tasks, blocking=True)]
