"""The `time` of a schedule: every accepted form, the bad ones with their codes, cron next-fire across DST
changes and month ends, and a hypothesis property over arbitrary text (a `When` in the future, or a
`ScheduleError` with a `schedules.*` code; nothing else)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.schedules.conftest import NY
from tooldeck.schedules.errors import CODES, ScheduleError
from tooldeck.schedules.timespec import next_fire, parse_when, slots_between

NOW = datetime(2026, 3, 7, 12, 0, 30, 250_000, tzinfo=NY)  # a Saturday, the day before the spring-forward
WHOLE = NOW.replace(microsecond=0)


@pytest.mark.parametrize(("text", "expected"), [
    ("+5m", WHOLE + timedelta(minutes=5)),
    ("+1h30m", WHOLE + timedelta(hours=1, minutes=30)),
    ("+90s", WHOLE + timedelta(seconds=90)),
    ("+2d", WHOLE + timedelta(days=2)),
    ("+1d2h3m4s", WHOLE + timedelta(days=1, hours=2, minutes=3, seconds=4)),
    ("15:04", datetime(2026, 3, 7, 15, 4, tzinfo=NY)),
    ("9:30", None),  # gone today: checked below
    ("2026-03-09 08:15", datetime(2026, 3, 9, 8, 15, tzinfo=NY)),
    ("2026-03-09T13:15:00Z", datetime(2026, 3, 9, 9, 15, tzinfo=NY)),
    ("2026-03-09T13:15:00.5+02:00", datetime(2026, 3, 9, 7, 15, 0, 500_000, tzinfo=NY)),
    ("  2026-03-09t13:15:00z  ", datetime(2026, 3, 9, 9, 15, tzinfo=NY)),
])
def test_one_shot_forms(text: str, expected: datetime | None) -> None:
    if expected is None:
        with pytest.raises(ScheduleError) as err:
            parse_when(text, None, NOW)
        assert err.value.code == "schedules.time_past"
        assert err.value.message.startswith('already gone: "9:30"')
        return
    when = parse_when(text, None, NOW)
    assert when.kind == "task"
    assert when.first == expected and when.first.tzinfo is NY
    assert datetime.fromisoformat(when.time) == expected
    assert parse_when(text, "task", NOW) == when


def test_a_cron_expression_is_recurring() -> None:
    when = parse_when(" 0  9 * *   1-5 ", None, NOW)
    assert (when.kind, when.time) == ("cron", "0 9 * * 1-5")
    assert when.first == datetime(2026, 3, 9, 9, 0, tzinfo=NY)  # Saturday → Monday 09:00 EDT
    assert parse_when("0 9 * * 1-5", "cron", NOW) == when


@pytest.mark.parametrize(("text", "target", "code", "fragment"), [
    ("", None, "schedules.time_invalid", "time is empty"),
    ("tomorrow", None, "schedules.time_invalid", "cannot read time 'tomorrow'"),
    ("+5x", None, "schedules.time_invalid", "is not a duration"),
    ("+30m1h", None, "schedules.time_invalid", "in that order"),
    ("+", None, "schedules.time_invalid", "is not a duration"),
    ("+4000d", None, "schedules.time_invalid", "days ahead"),
    ("25:00", None, "schedules.time_invalid", "not a time of day"),
    ("12:60", None, "schedules.time_invalid", "not a time of day"),
    ("2026-02-30 10:00", None, "schedules.time_invalid", "is not a date"),
    ("2026-03-09T10:00:00", None, "schedules.time_invalid", "cannot read time"),  # RFC 3339 needs its offset
    ("x" * 201, None, "schedules.time_invalid", "at most 200"),
    ("0 9 * * *", "task", "schedules.time_invalid", "is a cron expression"),
    ("+0m", None, "schedules.time_past", "no time from now"),
    ("11:59", None, "schedules.time_past", "already gone"),
    ("2026-03-07 12:00", None, "schedules.time_past", "already gone"),
    ("2020-01-01T00:00:00Z", None, "schedules.time_past", "already gone"),
    ("61 * * * *", None, "schedules.cron_invalid", "Bad minute"),
    ("0 0 31 2 *", None, "schedules.cron_invalid", "Bad day-of-month"),
    ("* * * * 8", None, "schedules.cron_invalid", "Bad day-of-week"),
    ("0 0 9 * * *", None, "schedules.cron_invalid", "6 fields"),
    ("+5m", "cron", "schedules.cron_invalid", "has 1 fields"),
    ("+5m", "weekly", "schedules.target_invalid", "target must be 'task' or 'cron'"),
])
def test_bad_times_have_clear_codes(text: str, target: str | None, code: str, fragment: str) -> None:
    with pytest.raises(ScheduleError) as err:
        parse_when(text, target, NOW)  # type: ignore[arg-type]
    assert err.value.code == code
    assert fragment in err.value.message


def _fires(expr: str, start: datetime, count: int) -> list[datetime]:
    out, at = [], start
    for _ in range(count):
        at = next_fire(expr, at)
        out.append(at)
    return out


def test_cron_across_the_spring_forward() -> None:
    # 2026-03-08 02:30 does not exist in New York: the daily 02:30 runs at 03:00, the first minute after the gap
    assert _fires("30 2 * * *", NOW, 3) == [datetime(2026, 3, 8, 3, 0, tzinfo=NY),
                                           datetime(2026, 3, 9, 2, 30, tzinfo=NY),
                                           datetime(2026, 3, 10, 2, 30, tzinfo=NY)]
    # a daily 09:00 stays at 09:00 wall-clock time: 23 hours apart across the change
    nine = _fires("0 9 * * *", datetime(2026, 3, 7, 8, 0, tzinfo=NY), 2)
    assert [f.hour for f in nine] == [9, 9] and nine[1].timestamp() - nine[0].timestamp() == 23 * 3600
    # hourly: no slot in the missing hour
    hours = _fires("0 * * * *", datetime(2026, 3, 8, 0, 30, tzinfo=NY), 3)
    assert [f.hour for f in hours] == [1, 3, 4]


def test_cron_across_the_fall_back() -> None:
    start = datetime(2026, 10, 31, 12, 0, tzinfo=NY)
    daily = _fires("30 1 * * *", start, 2)  # 01:30 happens twice on 2026-11-01: it runs once
    assert daily == [datetime(2026, 11, 1, 1, 30, tzinfo=NY), datetime(2026, 11, 2, 1, 30, tzinfo=NY)]
    assert daily[0].utcoffset() == timedelta(hours=-4)
    hourly = _fires("0 * * * *", datetime(2026, 11, 1, 0, 30, tzinfo=NY), 3)  # every real hour, the repeated one too
    assert [h.timestamp() - hourly[0].timestamp() for h in hourly] == [0, 3600, 7200]


def test_cron_month_ends_and_leap_days() -> None:
    jan30 = datetime(2026, 1, 30, tzinfo=NY)
    assert [f.date().isoformat() for f in _fires("0 0 31 * *", jan30, 3)] == ["2026-01-31", "2026-03-31", "2026-05-31"]
    assert [f.date().isoformat() for f in _fires("0 0 L * *", jan30, 3)] == ["2026-01-31", "2026-02-28", "2026-03-31"]
    assert next_fire("0 12 29 2 *", datetime(2026, 3, 1, tzinfo=NY)) == datetime(2028, 2, 29, 12, 0, tzinfo=NY)
    assert next_fire("59 23 31 12 *", datetime(2026, 12, 31, 23, 59, tzinfo=NY)) == datetime(2027, 12, 31, 23, 59,
                                                                                             tzinfo=NY)


@pytest.mark.parametrize(("expr", "first"), [
    ("0 9 * JAN-MAR MON", datetime(2026, 3, 9, 9, 0, tzinfo=NY)),
    ("0 0 * * 5#2", datetime(2026, 3, 13, 0, 0, tzinfo=NY)),  # the second Friday of March
    ("0 0 * * 5L", datetime(2026, 3, 27, 0, 0, tzinfo=NY)),  # the last Friday
    ("0 0 LW * *", datetime(2026, 3, 31, 0, 0, tzinfo=NY)),  # the last weekday
    ("*/20 13-14 * * *", datetime(2026, 3, 7, 13, 0, tzinfo=NY)),
])
def test_cron_names_and_special_days(expr: str, first: datetime) -> None:
    assert parse_when(expr, None, NOW).first == first


def test_a_wall_clock_time_in_the_gap_moves_past_it() -> None:
    when = parse_when("2026-03-08 02:30", None, NOW)
    assert when.first == datetime(2026, 3, 8, 3, 0, tzinfo=NY) and when.first.utcoffset() == timedelta(hours=-4)


def test_slots_between_counts_the_missed_ones() -> None:
    start = datetime(2026, 3, 7, 12, 0, tzinfo=NY)
    assert slots_between("*/10 * * * *", start, start + timedelta(hours=1)) == 6
    assert slots_between("* * * * *", start, start + timedelta(days=30), cap=100) == 100


SAMPLES = ["+5m", "+1h30m", "15:04", "2026-03-09 08:15", "2026-03-09T13:15:00Z", "0 9 * * 1-5", "*/5 * * * *",
           "61 * * * *", "0 0 31 2 *"]


@settings(derandomize=True, max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=40), st.sampled_from(SAMPLES),
                 st.builds(lambda a, b: a + b, st.sampled_from(SAMPLES), st.text(max_size=6)),
                 st.lists(st.sampled_from(["*", "0", "5", "*/7", "1-5", "L", "MON", "1,2", "60", "-1", "?"]),
                          min_size=4, max_size=7).map(" ".join)),
       st.sampled_from([None, "task", "cron"]))
def test_any_text_is_a_future_time_or_a_coded_error(text: str, target: str | None) -> None:
    try:
        when = parse_when(text, target, NOW)  # type: ignore[arg-type]
    except ScheduleError as exc:
        assert exc.code in CODES and exc.message
        return
    assert when.first > NOW
    assert when.kind in ("task", "cron")
    if when.kind == "cron":
        assert next_fire(when.time, NOW) == when.first


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.integers(0, 400), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_relative_durations_add_up(d: int, h: int, m: int, s: int) -> None:
    text = "+" + "".join(f"{v}{u}" for v, u in ((d, "d"), (h, "h"), (m, "m"), (s, "s")) if v)
    delta = timedelta(days=d, hours=h, minutes=m, seconds=s)
    if not delta:
        return
    assert parse_when(text, None, NOW).first == WHOLE + delta


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.integers(0, 23), st.integers(0, 59))
def test_a_clock_time_is_today_or_gone(hour: int, minute: int) -> None:
    text = f"{hour:02d}:{minute:02d}"
    wall = datetime(2026, 3, 7, hour, minute, tzinfo=NY)
    if wall <= NOW:
        with pytest.raises(ScheduleError) as err:
            parse_when(text, None, NOW)
        assert err.value.code == "schedules.time_past"
    else:
        assert parse_when(text, None, NOW).first == wall
