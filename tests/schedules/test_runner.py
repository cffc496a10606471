"""The runner against the loopback mock provider, with an injectable clock: nothing runs before its time,
a due skill schedule starts one headless agent run on the skill's instructions, the run is recorded with
the schedule id, a cron schedule fires at each slot, a late one catches up once, a fire that cannot
start (skill gone, no model) is recorded as failed, and leaving `serving` cancels a run in progress
(the model request is closed)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

import tooldeck
from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider, Reply
from tooldeck.schedules.clock import ManualClock
from tooldeck.schedules.runner import RUN_EVENTS, Runner, serving
from tooldeck.schedules.store import ScheduleStore
from tooldeck.schedules.timespec import parse_when


@pytest.fixture
def rt(home: Path) -> tooldeck.Runtime:
    runtime = tooldeck.Runtime(home)
    yield runtime  # type: ignore[misc]
    runtime.close()


async def test_a_due_skill_schedule_runs_once_at_its_time(rt: tooldeck.Runtime, clock: ManualClock,
                                                          mock_provider: MockProvider) -> None:
    store = ScheduleStore.of_home(rt.home)
    s = store.add(parse_when("+5m", None, clock.now()), skill="daily-report", task="Mention the weather.")
    runner = Runner(rt, clock=clock)
    clock.set(clock.now() + timedelta(minutes=4))
    assert await runner.run_due() == []
    assert mock_provider.requests == []
    mock_provider.script(chat.stream("REPORT-OK"))
    clock.set(clock.now() + timedelta(minutes=1))
    [outcome] = await runner.run_due()
    assert (outcome.schedule_id, outcome.status, outcome.missed, outcome.error_code) == (s.id, "completed", 1, None)
    assert outcome.slot == "2026-03-07T12:05:00-05:00"
    [request] = mock_provider.requests
    [system, user] = request.json["messages"]
    assert system["role"] == "system" and f"started by schedule {s.id}" in system["content"]
    assert user["content"].startswith("Run the skill `daily-report`.\n\nMention the weather.")
    assert "skill directory: skills/daily-report" in user["content"] and "Say REPORT-OK and stop." in user["content"]
    # recorded: the schedule event first, then the run itself, and the fire's end in the store
    [fired] = rt.recorder.run_events(outcome.run_id, RUN_EVENTS)
    assert (fired["type"], fired["schedule_id"], fired["skill_name"], fired["missed"]) == ("fired", s.id,
                                                                                         "daily-report", 1)
    agent_events = rt.recorder.run_events(outcome.run_id, "agent")
    assert agent_events[0]["type"] == "run_started" and agent_events[-1]["status"] == "completed"
    assert [(r["run_id"], r["status"]) for r in store.runs(s.id)] == [(outcome.run_id, "completed")]
    assert (rt.home / "workspaces" / outcome.run_id).is_dir()
    # a later pass finds nothing: the one-shot is done
    clock.set(clock.now() + timedelta(hours=1))
    assert await runner.run_due() == []
    assert len(mock_provider.requests) == 1


async def test_a_cron_task_fires_each_slot_and_catches_up_once(rt: tooldeck.Runtime, clock: ManualClock,
                                                               mock_provider: MockProvider) -> None:
    store = ScheduleStore.of_home(rt.home)
    s = store.add(parse_when("*/15 * * * *", None, clock.now()), task="Count the files.")
    mock_provider.always(chat.stream("done"))
    runner = Runner(rt, clock=clock)
    clock.set(clock.now() + timedelta(minutes=15))
    first = await runner.run_due()
    clock.set(clock.now() + timedelta(minutes=15))
    second = await runner.run_due()
    clock.set(clock.now() + timedelta(hours=2))  # the runner was down for two hours
    late = await runner.run_due()
    assert [o.slot[11:16] for o in [*first, *second, *late]] == ["12:15", "12:30", "12:45"]
    assert [o.missed for o in [*first, *second, *late]] == [1, 1, 8]
    assert [r.json["messages"][-1]["content"] for r in mock_provider.requests] == ["Count the files."] * 3
    assert store.get(s.id).to_dict()["next_run"] == "2026-03-07T14:45:00-05:00"  # type: ignore[union-attr]
    assert store.get(s.id).fires == 3  # type: ignore[union-attr]


async def test_a_fire_that_cannot_start_is_recorded_failed(rt: tooldeck.Runtime, clock: ManualClock,
                                                           mock_provider: MockProvider) -> None:
    store = ScheduleStore.of_home(rt.home)
    gone = store.add(parse_when("+1m", None, clock.now()), skill="daily-report")
    nomodel = store.add(parse_when("+1m", None, clock.now()), task="x", model="no-such-model")
    (rt.home / "skills" / "daily-report" / "SKILL.md").unlink()
    clock.set(clock.now() + timedelta(minutes=1))
    outcomes = {o.schedule_id: o for o in await Runner(rt, clock=clock).run_due()}
    assert outcomes[gone.id].status == "failed" and outcomes[gone.id].error_code == "schedules.skill_missing"
    assert outcomes[nomodel.id].status == "failed" and outcomes[nomodel.id].error_code == "model.config_invalid"
    assert mock_provider.requests == []
    assert {r["schedule_id"]: r["error_code"] for r in store.runs()} == {
        gone.id: "schedules.skill_missing", nomodel.id: "model.config_invalid"}


async def test_leaving_serving_cancels_a_running_fire(rt: tooldeck.Runtime, clock: ManualClock,
                                                      mock_provider: MockProvider) -> None:
    store = ScheduleStore.of_home(rt.home)
    s = store.add(parse_when("+1m", None, clock.now()), task="think forever")
    clock.set(clock.now() + timedelta(minutes=2))
    mock_provider.script(Reply.sse([chat.chunk({"content": "thinking"})], hang=True))
    async with serving(rt, interval_s=0.05, clock=clock):
        await mock_provider.await_for(lambda: mock_provider.requests)
    await mock_provider.await_for(lambda: mock_provider.disconnects)  # the model request was really closed
    [run] = store.runs(s.id)
    assert run["status"] == "cancelled"
    assert rt.recorder.run_events(run["run_id"], "agent")[-1]["status"] == "cancelled"


async def test_serving_passes_again_and_again(rt: tooldeck.Runtime, clock: ManualClock,
                                              mock_provider: MockProvider) -> None:
    store = ScheduleStore.of_home(rt.home)
    mock_provider.always(chat.stream("ok"))
    async with serving(rt, interval_s=0.02, clock=clock):
        await asyncio.sleep(0.1)
        store.add(parse_when("+1m", None, clock.now()), task="later")
        await asyncio.sleep(0.1)
        assert mock_provider.requests == []
        clock.set(clock.now() + timedelta(minutes=1))
        await mock_provider.await_for(lambda: store.runs() and store.runs()[0]["status"] == "completed")
    assert len(mock_provider.requests) == 1


async def test_at_most_three_fires_run_at_once(rt: tooldeck.Runtime, clock: ManualClock,
                                               mock_provider: MockProvider) -> None:
    store = ScheduleStore.of_home(rt.home)
    for i in range(5):
        store.add(parse_when("+1m", None, clock.now()), task=f"task {i}")
    clock.set(clock.now() + timedelta(minutes=1))
    mock_provider.always(chat.stream("done", delay=0.2))
    running, peak = 0, 0

    def counting(schedule: object) -> object:
        agent = rt.agent(None, headless=True)
        real = agent.run

        async def run(task: str, **kw: object) -> object:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            try:
                return await real(task, **kw)  # type: ignore[arg-type]
            finally:
                running -= 1

        agent.run = run  # type: ignore[method-assign]
        return agent

    outcomes = await Runner(rt, clock=clock, make_agent=counting).run_due()  # type: ignore[arg-type]
    assert [o.status for o in outcomes] == ["completed"] * 5
    assert peak == 3 and running == 0
    assert len(mock_provider.requests) == 5
