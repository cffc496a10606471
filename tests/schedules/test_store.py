"""The schedules store over a real SQLite file: add / list / find / move / remove, due fires claimed once
(also by several processes racing on one home), one-shots done after their fire, cron schedules moved to
their next slot, and the missed-fire policy after downtime (one catch-up fire that counts the slots)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.schedules.conftest import NY
from tooldeck.core.errors import TooldeckError
from tooldeck.schedules.clock import ManualClock
from tooldeck.schedules.errors import ScheduleError
from tooldeck.schedules.store import ScheduleStore
from tooldeck.schedules.timespec import parse_when

T0 = datetime(2026, 3, 7, 12, 0, tzinfo=NY)


@pytest.fixture
def store(tmp_path: Path) -> ScheduleStore:
    return ScheduleStore(tmp_path / "records.sqlite")


def test_add_list_find_move_remove(store: ScheduleStore) -> None:
    daily = store.add(parse_when("0 9 * * *", None, T0), skill="daily-report", model="mock")
    once = store.add(parse_when("+5m", None, T0), task="say hi")
    assert daily.id != once.id and daily.id.startswith("sch_")
    assert [s.id for s in store.list()] == [once.id, daily.id]  # next fire first
    assert [s.id for s in store.list("cron")] == [daily.id]
    listed = daily.to_dict()
    assert listed["next_run"] == "2026-03-08T09:00:00-04:00" and listed["timezone"] == "America/New_York"
    assert store.find(skill="daily-report").id == daily.id
    assert store.find(once.id).task == "say hi"
    moved = store.move(daily.id, parse_when("30 7 * * 1", None, T0))
    assert (moved.kind, moved.time, moved.next_fire) == ("cron", "30 7 * * 1",
                                                         datetime(2026, 3, 9, 7, 30, tzinfo=NY).timestamp())
    assert store.remove(once.id).id == once.id
    assert [s.id for s in store.list()] == [daily.id]
    with pytest.raises(ScheduleError) as err:
        store.remove(once.id)
    assert err.value.code == "schedules.not_found"


def test_find_by_skill_is_unique_or_an_error(store: ScheduleStore) -> None:
    a = store.add(parse_when("0 9 * * *", None, T0), skill="report")
    b = store.add(parse_when("+1h", None, T0), skill="report")
    with pytest.raises(ScheduleError) as err:
        store.find(skill="report")
    assert err.value.code == "schedules.ambiguous" and a.id in err.value.message and b.id in err.value.message
    assert store.find(skill="report", kind="task").id == b.id
    with pytest.raises(ScheduleError) as err:
        store.find(skill="other")
    assert err.value.code == "schedules.not_found"
    with pytest.raises(ScheduleError) as err:
        store.find("sch_nope")
    assert err.value.code == "schedules.not_found"


def test_a_one_shot_fires_once_then_is_done(store: ScheduleStore) -> None:
    clock = ManualClock(T0)
    s = store.add(parse_when("+5m", None, clock.now()), task="x")
    clock.set(T0 + timedelta(minutes=4, seconds=59))
    assert store.claim_due(clock.now(), "a") == []
    clock.set(T0 + timedelta(minutes=5))
    [fire] = store.claim_due(clock.now(), "a")
    assert (fire.schedule.id, fire.slot, fire.missed) == (s.id, (T0 + timedelta(minutes=5)).timestamp(), 1)
    assert store.claim_due(clock.now(), "b") == []
    clock.set(T0 + timedelta(days=1))
    assert store.claim_due(clock.now(), "b") == []
    assert store.list() == []
    [done] = store.list(include_done=True)
    assert (done.status, done.fires, done.last_run_id, done.next_fire) == ("done", 1, fire.run_id, None)
    [run] = store.runs(s.id)
    assert (run["run_id"], run["status"], run["owner"]) == (fire.run_id, "running", "a")
    store.finish(fire, "completed")
    assert store.runs(s.id)[0]["status"] == "completed"


def test_a_cron_schedule_moves_to_its_next_slot(store: ScheduleStore) -> None:
    clock = ManualClock(T0)
    s = store.add(parse_when("*/10 * * * *", None, clock.now()), task="tick")
    slots = []
    for minutes in (10, 20, 30):
        clock.set(T0 + timedelta(minutes=minutes, seconds=3))
        [fire] = store.claim_due(clock.now(), "a")
        slots.append(datetime.fromtimestamp(fire.slot, NY).strftime("%H:%M"))
        assert fire.missed == 1
        assert store.claim_due(clock.now(), "a") == []
    assert slots == ["12:10", "12:20", "12:30"]
    assert store.get(s.id).next_fire == datetime(2026, 3, 7, 12, 40, tzinfo=NY).timestamp()  # type: ignore[union-attr]


def test_missed_fires_after_downtime_catch_up_once(store: ScheduleStore) -> None:
    clock = ManualClock(T0)
    s = store.add(parse_when("*/10 * * * *", None, clock.now()), task="tick")
    clock.set(T0 + timedelta(hours=1, minutes=5))  # down from 12:00 to 13:05: 12:10 … 13:00 were missed
    [fire] = store.claim_due(clock.now(), "a")
    assert datetime.fromtimestamp(fire.slot, NY).strftime("%H:%M") == "12:10"
    assert fire.missed == 6
    assert store.claim_due(clock.now(), "a") == []
    assert store.get(s.id).next_fire == datetime(2026, 3, 7, 13, 10, tzinfo=NY).timestamp()  # type: ignore[union-attr]
    late = store.add(parse_when("+1m", None, T0), task="late one-shot")
    [fire] = store.claim_due(clock.now(), "a")
    assert (fire.schedule.id, fire.missed) == (late.id, 1)


def test_a_runner_pass_on_a_home_without_schedules_creates_nothing(tmp_path: Path) -> None:
    store = ScheduleStore(tmp_path / "records.sqlite")
    assert store.claim_due(T0, "a") == []
    assert not (tmp_path / "records.sqlite").exists()


def test_a_broken_store_file_is_store_failed(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(TooldeckError) as err:
        ScheduleStore(path).list()
    assert err.value.code == "schedules.store_failed" and str(path) in err.value.message


RACER = """
import json, sys, time
from datetime import datetime
from tooldeck.schedules.store import ScheduleStore
path, start, now, name = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
store = ScheduleStore(path)
while time.time() < start:
    time.sleep(0.001)
won = []
for _ in range(5):
    won += [(f.schedule.id, f.slot, f.run_id) for f in store.claim_due(datetime.fromtimestamp(now).astimezone(), name)]
print(json.dumps(won))
"""


def test_processes_racing_on_one_home_claim_each_fire_once(store: ScheduleStore) -> None:
    ids = {store.add(parse_when("+1m", None, T0), task=f"t{i}").id for i in range(40)}
    ids |= {store.add(parse_when("*/5 * * * *", None, T0), task=f"c{i}").id for i in range(10)}
    now = (T0 + timedelta(minutes=7)).timestamp()
    start = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(store.path), str(start), str(now), f"p{n}"],
                              stdout=subprocess.PIPE, text=True) for n in range(4)]
    won: list[tuple[str, float, str]] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        won += [tuple(w) for w in json.loads(out)]  # type: ignore[misc]
    assert sorted(w[0] for w in won) == sorted(ids)  # every schedule fired, none twice
    assert len({w[2] for w in won}) == len(ids)
    assert len(store.runs(limit=1000)) == len(ids)
    owners = {r["owner"] for r in store.runs(limit=1000)}
    assert owners <= {"p0", "p1", "p2", "p3"}


def test_a_schedule_keeps_its_zone_when_the_runner_is_elsewhere(store: ScheduleStore) -> None:
    from zoneinfo import ZoneInfo

    s = store.add(parse_when("0 9 * * *", None, T0), task="New York mornings")
    tokyo_now = (T0 + timedelta(days=1)).astimezone(ZoneInfo("Asia/Tokyo"))  # 2026-03-08 12:00 in New York
    [fire] = store.claim_due(tokyo_now, "a")
    assert datetime.fromtimestamp(fire.slot, NY) == datetime(2026, 3, 8, 9, 0, tzinfo=NY)
    assert store.get(s.id).to_dict()["next_run"] == "2026-03-09T09:00:00-04:00"  # type: ignore[union-attr]
