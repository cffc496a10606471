"""`schedules` (Agenvoy's tool of the name): list, add, move and remove the home's scheduled agent runs.

`mode` list | write | patch | remove (omitted: list). `target` task (one-shot) | cron (recurring) | all
(list only; omitted on write / patch: a 5-field `time` is cron, else task). `time`: `+5m`, `+1h30m`,
`15:04`, `2006-01-02 15:04`, RFC 3339, or a 5-field cron expression (schedules/timespec.py). A
schedule runs a skill of the home (`skill_name`) or a plain `task`, or the skill with `task` as extra
instructions; `model` picks a `[models]` name. patch and remove take the schedule's `id`, or a
`skill_name` that exactly one schedule runs. Everything but list asks for confirmation by default
(the Profile's permission for `builtin:schedules` overrides that). The runs themselves are started by
a runner: `tooldeck serve`, or `tooldeck schedules run-due` (docs/schedules.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput
from tooldeck.schedules.errors import (
    FIELD_REQUIRED,
    SKILL_MISSING,
    TARGET_INVALID,
    UNAVAILABLE,
    UNKNOWN_MODE,
    ScheduleError,
)

if TYPE_CHECKING:  # the store and the clock load on the first call, not with the catalog (start-up time)
    from tooldeck.schedules.clock import Clock
    from tooldeck.schedules.store import Schedule, ScheduleStore

MODES: Final = ("list", "patch", "remove", "write")
TARGETS: Final = ("task", "cron", "all")
CLOCK_KEY: Final = "tooldeck.schedules.clock"
"""A host (or a test) may put a `Clock` in the run's state under this key; else the system clock."""
MAX_TASK_CHARS: Final = 20_000


def _text(args: Mapping[str, Any], field: str) -> str | None:
    value = args.get(field)
    return (value.strip() or None) if isinstance(value, str) else None


def _store(ctx: CallContext) -> ScheduleStore:
    from tooldeck.schedules.store import ScheduleStore

    if ctx.run.home is None:
        raise ScheduleError(UNAVAILABLE, "schedules need a tooldeck home; this run has none.")
    return ScheduleStore.of_home(ctx.run.home)


def _clock(ctx: CallContext) -> Clock:
    from tooldeck.schedules.clock import SystemClock

    return ctx.run.state.get(CLOCK_KEY) or SystemClock()


def _check_skill(ctx: CallContext, name: str) -> None:
    from tooldeck.sources.skill_loader import SkillFolder
    from tooldeck.sources.skills import SKILLS_ROOT

    assert ctx.run.home is not None
    skills, _, _ = SkillFolder(ctx.run.home / SKILLS_ROOT).skills()
    if not any(s.name == name for s in skills):
        names = ", ".join(s.name for s in skills) or "(none)"
        raise ScheduleError(SKILL_MISSING, f"skill {name!r} is not in the home's skills/; available: {names}")


def _line(s: Schedule) -> str:
    if s.skill:
        what = f"skill {s.skill}" + (" (with a task)" if s.task else "")
    else:
        task = s.task or ""
        what = f"task {task if len(task) <= 60 else task[:59] + '…'!r}"
    when = f"cron {s.time!r}" if s.kind == "cron" else "once"
    return f"{s.id}: {what}, {when}, next run {s.to_dict()['next_run'] or '-'}"


def schedules(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    mode = (_text(args, "mode") or "list").lower()
    target = (_text(args, "target") or "").lower() or None
    if mode not in MODES:
        raise ScheduleError(UNKNOWN_MODE, f'unknown mode "{mode}"; available: {", ".join(MODES)}')
    store = _store(ctx)
    if mode == "list":
        if target not in (None, *TARGETS):
            raise ScheduleError(TARGET_INVALID, f"target must be 'task', 'cron', or 'all' (got \"{target}\")")
        kind = None if target in (None, "all") else target
        listed = [s.to_dict() for s in store.list(kind)]  # type: ignore[arg-type]
        return ToolOutput(json_text(listed), {"schedules": listed})
    if target not in (None, "task", "cron"):
        raise ScheduleError(TARGET_INVALID, f"target must be 'task' or 'cron' when mode={mode} (got \"{target}\")")
    skill, schedule_id = _text(args, "skill_name"), _text(args, "id")
    if mode == "remove":
        if not (schedule_id or skill):
            raise ScheduleError(FIELD_REQUIRED, "id or skill_name is required when mode=remove")
        gone = store.remove(store.find(schedule_id, skill, target).id)  # type: ignore[arg-type]
        return ToolOutput(f"removed {_line(gone).replace(', next run', '; it was due')}", {"removed": gone.to_dict()})
    time_text = _text(args, "time")
    if time_text is None:
        raise ScheduleError(FIELD_REQUIRED, f"time is required when mode={mode}")
    from tooldeck.schedules.timespec import parse_when

    when = parse_when(time_text, target, _clock(ctx).now())  # type: ignore[arg-type]
    if mode == "patch":
        if not (schedule_id or skill):
            raise ScheduleError(FIELD_REQUIRED, "id or skill_name is required when mode=patch")
        moved = store.move(store.find(schedule_id, skill).id, when)
        return ToolOutput(f"moved {_line(moved)}", {"schedule": moved.to_dict()})
    task = _text(args, "task")
    if skill is None and task is None:
        raise ScheduleError(FIELD_REQUIRED, "skill_name or task is required when mode=write")
    if task is not None and len(task) > MAX_TASK_CHARS:
        raise ScheduleError(FIELD_REQUIRED, f"task is {len(task)} characters long (at most {MAX_TASK_CHARS}); put "
                                            "the details in a skill and schedule the skill")
    if skill is not None:
        _check_skill(ctx, skill)
    added = store.add(when, skill=skill, task=task, model=_text(args, "model"), origin_run=ctx.run.run_id)
    return ToolOutput(f"scheduled {_line(added)}", {"schedule": added.to_dict()})


def needs_confirmation(args: Mapping[str, Any]) -> bool:
    """Agenvoy's rule: every mode but list changes what will run later, so it asks first."""
    mode = args.get("mode")
    return not (mode is None or (isinstance(mode, str) and mode.strip().lower() in ("", "list")))


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("schedules"),
    title="Scheduled agent runs",
    description="Scheduled runs of a skill or a task: what is queued (list), a new one (write), moving one to a "
                "new time (patch), cancelling one (remove). Each fire starts a new headless agent run with the "
                "skill's instructions or the task.",
    input_schema={
        "type": "object",
        "properties": {
            "mode": {"type": "string", "description": "list | write | patch | remove. Omitted: list."},
            "target": {"type": "string", "description": "task: one-shot fire time. cron: recurring 5-field "
                                                        "expression. all: mode=list only (the default there). "
                                                        "Omitted on write/patch: read from `time`."},
            "id": {"type": "string", "description": "The schedule's id (patch, remove), as list shows it."},
            "skill_name": {"type": "string", "description": "A skill of the home to run (write); or, for patch and "
                                                            "remove, the skill whose one schedule is meant."},
            "task": {"type": "string", "description": "What the run should do (write): the whole task, or extra "
                                                      "instructions for the skill."},
            "time": {"type": "string", "description": "Required for write and patch. One-shot: '+5m' / '+1h30m' "
                                                      "(from now), '15:04' (today), '2006-01-02 15:04' (local date "
                                                      "and time), or RFC 3339. Recurring: a 5-field cron expression "
                                                      "'{min} {hour} {dom} {mon} {dow}'."},
            "model": {"type": "string", "description": "A configured model name for the run (write); default: "
                                                       "the default model."},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
    confirm_when=needs_confirmation,
)

TOOLS = [BuiltinTool(DESCRIPTOR, schedules, blocking=True)]
