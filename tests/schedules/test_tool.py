"""The `schedules` tool through a real Runtime (gate, dispatch, records) over a home with one skill:
write / list / patch / remove with Agenvoy's parameters and messages, every error code it answers, the
confirmation every mode but list asks for, and the clock a host puts in the run's state."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MakeRuntime
from tests.schedules.conftest import SKILL_TEXT
from tooldeck.builtins.schedules import CLOCK_KEY, schedules
from tooldeck.catalog.runs import RunState
from tooldeck.schedules.clock import ManualClock
from tooldeck.schedules.errors import ScheduleError
from tooldeck.schedules.store import ScheduleStore


@pytest.fixture
def tool(make_runtime: MakeRuntime, clock: ManualClock) -> Any:
    rt = make_runtime(loading="eager", allow=["builtin:schedules"], confirm=lambda request: True)
    skill = rt.home / "skills" / "daily-report"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_TEXT, encoding="utf-8")
    rt.run_state("r").state[CLOCK_KEY] = clock

    def call(**args: Any) -> Any:
        [result] = rt.invocation(run_id="r").run([{"id": "c", "name": "schedules", "arguments": args}])
        return result

    call.rt = rt  # type: ignore[attr-defined]
    return call


def _listed(tool: Any, **args: Any) -> list[dict[str, Any]]:
    result = tool(mode="list", **args)
    assert not result.is_error, result.content
    return json.loads(result.content)


def test_write_list_patch_remove(tool: Any, clock: ManualClock) -> None:
    assert _listed(tool) == [] and tool().content == "[]"  # mode omitted: list
    daily = tool(mode="write", skill_name="daily-report", time="0 9 * * 1-5", model="mock")
    assert not daily.is_error, daily.content
    sid = daily.structured["schedule"]["id"]
    assert daily.content == (f"scheduled {sid}: skill daily-report, cron '0 9 * * 1-5', "
                             "next run 2026-03-09T09:00:00-04:00")
    once = tool(mode="write", target="task", task="Check the build and report.", time="+1h30m")
    assert once.content.endswith("task 'Check the build and report.', once, next run 2026-03-07T13:30:00-05:00")
    oid = once.structured["schedule"]["id"]
    assert [(s["id"], s["target"]) for s in _listed(tool)] == [(oid, "task"), (sid, "cron")]
    assert [s["id"] for s in _listed(tool, target="cron")] == [sid]
    listed = _listed(tool, target="all")[1]
    assert {k: listed[k] for k in ("skill_name", "model", "time", "runs", "status")} == {
        "skill_name": "daily-report", "model": "mock", "time": "0 9 * * 1-5", "runs": 0, "status": "active"}
    moved = tool(mode="patch", skill_name="daily-report", time="30 8 * * *")
    assert moved.content == f"moved {sid}: skill daily-report, cron '30 8 * * *', next run 2026-03-08T08:30:00-04:00"
    clock.set(clock.now() + timedelta(hours=2))  # the tool reads the run's clock: 14:00 now
    moved = tool(mode="patch", id=oid, time="15:00")
    assert moved.content.endswith("once, next run 2026-03-07T15:00:00-05:00")
    gone = tool(mode="remove", id=oid)
    assert gone.content.startswith(f"removed {oid}: task") and "it was due 2026-03-07T15:00:00-05:00" in gone.content
    assert [s["id"] for s in _listed(tool)] == [sid]
    store = ScheduleStore.of_home(tool.rt.home)
    assert store.get(sid).origin_run == "r"  # type: ignore[union-attr]


@pytest.mark.parametrize(("args", "code", "message"), [
    ({"mode": "delete"}, "schedules.unknown_mode", 'unknown mode "delete"; available: list, patch, remove, write'),
    ({"mode": "list", "target": "weekly"}, "schedules.target_invalid",
     "target must be 'task', 'cron', or 'all' (got \"weekly\")"),
    ({"mode": "write", "target": "all", "task": "x", "time": "+5m"}, "schedules.target_invalid",
     "target must be 'task' or 'cron' when mode=write (got \"all\")"),
    ({"mode": "write", "task": "x"}, "schedules.field_required", "time is required when mode=write"),
    ({"mode": "write", "time": "+5m"}, "schedules.field_required", "skill_name or task is required when mode=write"),
    ({"mode": "patch", "time": "+5m"}, "schedules.field_required", "id or skill_name is required when mode=patch"),
    ({"mode": "patch", "id": "sch_x"}, "schedules.field_required", "time is required when mode=patch"),
    ({"mode": "remove"}, "schedules.field_required", "id or skill_name is required when mode=remove"),
    ({"mode": "write", "task": "x" * 20_001, "time": "+5m"}, "schedules.field_required", "at most 20000"),
    ({"mode": "write", "task": "x", "time": "soon"}, "schedules.time_invalid", "cannot read time 'soon'"),
    ({"mode": "write", "task": "x", "time": "11:00"}, "schedules.time_past", 'already gone: "11:00"'),
    ({"mode": "write", "task": "x", "time": "0 25 * * *"}, "schedules.cron_invalid", "Bad hour"),
    ({"mode": "write", "skill_name": "weekly", "time": "+5m"}, "schedules.skill_missing",
     "skill 'weekly' is not in the home's skills/; available: daily-report"),
    ({"mode": "remove", "id": "sch_nope"}, "schedules.not_found", "no schedule 'sch_nope'"),
    ({"mode": "patch", "skill_name": "daily-report", "time": "+1h"}, "schedules.not_found",
     "no schedule runs skill 'daily-report'"),
])
def test_errors_are_results_with_codes_and_nothing_changes(tool: Any, args: dict[str, Any], code: str,
                                                           message: str) -> None:
    keep = tool(mode="write", task="keep me", time="+2h")
    before = _listed(tool)
    result = tool(**args)
    assert result.is_error and result.error_code == code
    assert message in result.content
    assert _listed(tool) == before and before[0]["id"] == keep.structured["schedule"]["id"]


def test_two_schedules_of_one_skill_need_an_id(tool: Any) -> None:
    a = tool(mode="write", skill_name="daily-report", time="0 9 * * *").structured["schedule"]["id"]
    b = tool(mode="write", skill_name="daily-report", time="+1h").structured["schedule"]["id"]
    result = tool(mode="remove", skill_name="daily-report")
    assert result.error_code == "schedules.ambiguous" and a in result.content and b in result.content
    assert tool(mode="remove", skill_name="daily-report", target="task").content.startswith(f"removed {b}")


def test_every_mode_but_list_asks_first(make_runtime: MakeRuntime) -> None:
    asked: list[str] = []

    def refuse(request: Any) -> bool:
        asked.append(request.arguments.get("mode"))
        return False

    rt = make_runtime(loading="eager", allow=["builtin:schedules"], confirm=refuse)
    inv = rt.invocation(run_id="r")
    listed, written = inv.run([{"id": "a", "name": "schedules", "arguments": {"mode": "list"}},
                               {"id": "b", "name": "schedules", "arguments": {"mode": "write", "task": "x",
                                                                              "time": "+5m"}}])
    assert not listed.is_error and listed.content == "[]"
    assert written.is_error and written.error_code == "tool.permission_denied"
    assert asked == ["write"]
    assert ScheduleStore.of_home(rt.home).list() == []
    allowed = make_runtime(home="other", loading="eager", allow=["builtin:schedules"],
                           permissions={"builtin:schedules": "allow"})
    [done] = allowed.invocation(run_id="r").run([{"id": "c", "name": "schedules",
                                                  "arguments": {"mode": "write", "task": "x", "time": "+5m"}}])
    assert not done.is_error, done.content


def test_a_run_without_a_home_is_unavailable(tmp_path: Path) -> None:
    ctx: Any = type("Ctx", (), {"run": RunState("r", tmp_path)})()
    with pytest.raises(ScheduleError) as err:
        schedules({"mode": "list"}, ctx)
    assert err.value.code == "schedules.unavailable"
