"""`tooldeck schedules list|add|remove|run-due`: the home's scheduled agent runs (docs/schedules.md).

`run-due` claims the schedules that are due now and runs each (one pass, then exit): what a system cron
calls every minute on a home that no `tooldeck serve` watches. Several passes at once on one home
start each fire once. Imports only typer and the standard library at start-up; the store, the
runtime and the agent loop load when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tooldeck.cli.common import (
    DEFAULT_HOME,
    HomeOption,
    JsonOption,
    ProfileOption,
    cli_app,
    fail_usage,
    open_runtime,
    print_json,
    started,
)

if TYPE_CHECKING:
    from tooldeck.schedules.store import ScheduleStore

schedules_app = cli_app(name="schedules", no_args_is_help=True,
                        help="Scheduled agent runs of a skill or a task: list, add, remove, run the due ones.")
TargetOption = Annotated[str | None, typer.Option("--target", metavar="KIND",
                                                  help="task (one-shot) | cron (recurring); default: read from "
                                                       "TIME (5 fields: cron).")]


def _store(home: Path) -> ScheduleStore:
    from tooldeck.schedules.store import ScheduleStore

    home = Path(home)
    if not home.is_dir():
        fail_usage(f"schedules.unavailable: no tooldeck home at {home}; pass --home")
    started()
    return ScheduleStore.of_home(home.resolve())


def _fail(exc: Any) -> None:
    fail_usage(f"{exc.code}: {exc.message}")


def list_cmd(
    home: HomeOption = DEFAULT_HOME,
    target: Annotated[str | None, typer.Option("--target", metavar="KIND", help="task | cron | all.")] = None,
    include_done: Annotated[bool, typer.Option("--all", help="Also the one-shot schedules that have fired.")] = False,
    as_json: JsonOption = False,
) -> None:
    """The home's schedules, next fire first: id, target, time, what runs, next run, runs so far."""
    from tooldeck.cli.table import Column, show_rows

    if target not in (None, "task", "cron", "all"):
        fail_usage(f"schedules.target_invalid: target must be 'task', 'cron', or 'all' (got \"{target}\")")
    kind = None if target in (None, "all") else target
    store = _store(home)
    try:
        listed = [s.to_dict() for s in store.list(kind, include_done=include_done)]  # type: ignore[arg-type]
    except Exception as exc:
        if hasattr(exc, "code"):
            _fail(exc)
        raise
    columns = [Column("id", "id"), Column("target", "id"), Column("time", "id"), Column("what", "text", min_width=8),
               Column("next run", "id", drop=3), Column("runs", "number", drop=2), Column("model", "text", drop=1,
                                                                                        min_width=6)]
    rows = [(d["id"], d["target"], d["time"], f"skill {d['skill_name']}" if d["skill_name"] else d["task"] or "",
             d["next_run"] or "-", str(d["runs"]), d["model"] or "default") for d in listed]
    show_rows(listed, columns, rows, as_json=as_json,
              empty="no schedules" + ("" if include_done else " (--all shows the fired one-shots too)"))


def add_cmd(
    time_text: Annotated[str, typer.Argument(metavar="TIME", help="'+5m', '15:04', '2006-01-02 15:04', RFC 3339, "
                                                                  "or a 5-field cron expression (quote it).")],
    skill: Annotated[str | None, typer.Option("--skill", metavar="NAME", help="A skill of <home>/skills to run.")]
    = None,
    task: Annotated[str | None, typer.Option("--task", metavar="TEXT", help="The task (with --skill: extra "
                                                                            "instructions).")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", metavar="NAME", help="A [models] name; default: "
                                                                                    "models.default.")] = None,
    target: TargetOption = None,
    home: HomeOption = DEFAULT_HOME,
    as_json: JsonOption = False,
) -> None:
    """Add a schedule that runs a skill or a task at TIME."""
    from tooldeck.cli.table import show_one
    from tooldeck.schedules.clock import SystemClock
    from tooldeck.schedules.errors import FIELD_REQUIRED, SKILL_MISSING, ScheduleError
    from tooldeck.schedules.timespec import parse_when

    store = _store(home)
    try:
        if not (skill or task):
            raise ScheduleError(FIELD_REQUIRED, "give --skill NAME or --task TEXT (or both)")
        when = parse_when(time_text, target, SystemClock().now())  # type: ignore[arg-type]
        if skill is not None and not (Path(home) / "skills" / skill / "SKILL.md").is_file():
            raise ScheduleError(SKILL_MISSING, f"skill {skill!r} is not in {Path(home) / 'skills'}")
        added = store.add(when, skill=skill, task=task, model=model)
    except ScheduleError as exc:
        _fail(exc)
        return
    shown = added.to_dict()
    show_one(shown, f"scheduled {added.id}: {added.kind} {added.time!r}, next run {shown['next_run']}",
             as_json=as_json)


def remove_cmd(
    schedule_id: Annotated[str, typer.Argument(metavar="ID", help="A schedule id from `schedules list`.")],
    home: HomeOption = DEFAULT_HOME,
    as_json: JsonOption = False,
) -> None:
    """Remove a schedule (its past runs stay in the records)."""
    from tooldeck.cli.table import show_one
    from tooldeck.schedules.errors import ScheduleError

    store = _store(home)
    try:
        gone = store.remove(schedule_id)
    except ScheduleError as exc:
        _fail(exc)
        return
    show_one(gone.to_dict(), f"removed {gone.id}", as_json=as_json)


def run_due_cmd(
    home: HomeOption = DEFAULT_HOME,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run the schedules that are due now, each as a headless agent run, and wait for them (exit 1 if any
    run did not complete)."""
    from tooldeck.schedules.runner import Runner

    runtime = open_runtime(home, profile)
    try:
        outcomes = runtime.loop().run_until_complete(Runner(runtime).run_due())
    finally:
        runtime.close()
    if as_json:
        print_json([o.to_dict() for o in outcomes])
    elif not outcomes:
        typer.echo("nothing due")
    else:
        for o in outcomes:
            error = f" ({o.error_code}: {o.error})" if o.error_code else ""
            late = f", {o.missed} slots missed" if o.missed > 1 else ""
            typer.echo(f"{o.schedule_id} → {o.run_id}: {o.status}{error} [slot {o.slot}{late}]")
    if any(o.status != "completed" for o in outcomes):
        raise typer.Exit(1)


schedules_app.command("list")(list_cmd)
schedules_app.command("add")(add_cmd)
schedules_app.command("remove")(remove_cmd)
schedules_app.command("run-due")(run_due_cmd)
