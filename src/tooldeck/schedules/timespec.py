"""The `time` of a schedule: parsing it and computing when a schedule fires. Pure: no I/O, the current
time is an argument.

One-shot (`task`) forms, as Agenvoy's `schedules` takes them:

- `+5m`, `+1h30m`, `+90s`, `+2d`: from now (units d h m s, each at most once, in that order);
- `15:04`: today at that wall-clock time (an hour already gone is `schedules.time_past`);
- `2006-01-02 15:04`: a wall-clock date and time;
- RFC 3339: `2006-01-02T15:04:05Z`, `2006-01-02T15:04:05.5+02:00` (the offset is required).

Wall-clock forms are in the zone of `now`. A recurring (`cron`) time is a 5-field cron expression
(`minute hour day-of-month month day-of-week`), evaluated in that zone by `cronsim` with Debian cron's
DST rules: a time skipped by a spring-forward runs at the first minute after the gap, a time repeated
by a fall-back runs once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Final, Literal

from tooldeck.schedules.errors import CRON_INVALID, TARGET_INVALID, TIME_INVALID, TIME_PAST, ScheduleError

Kind = Literal["task", "cron"]
KINDS: Final = ("task", "cron")
MAX_AHEAD: Final = timedelta(days=3660)
"""How far ahead a one-shot time may be (about ten years): farther is a typo, not a plan."""
MAX_TEXT: Final = 200

_RELATIVE = re.compile(r"\+(?:(\d{1,6})d)?(?:(\d{1,7})h)?(?:(\d{1,9})m)?(?:(\d{1,10})s)?")
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})")
_LOCAL = re.compile(r"(\d{4})-(\d{2})-(\d{2}) (\d{1,2}):(\d{2})")
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})")
FORMS: Final = ("'+5m' / '+1h30m' (from now), '15:04' (today), '2006-01-02 15:04' (local date and time), "
                "RFC 3339 ('2006-01-02T15:04:05Z'), or a 5-field cron expression ('0 9 * * 1-5')")


@dataclass(frozen=True, slots=True)
class When:
    kind: Kind
    time: str
    """What is stored and listed: the cron expression (fields joined by one space), or the one-shot instant
    in RFC 3339 in the zone of `now`."""
    first: datetime
    """The first fire time (aware, in the zone of `now`)."""


def looks_like_cron(text: str) -> bool:
    return len(text.split()) == 5


def parse_when(text: str, target: Kind | None, now: datetime) -> When:
    """The schedule `text` means at `now`. `target` None: a 5-field text is cron, anything else one-shot."""
    if not isinstance(text, str) or not text.strip():
        raise ScheduleError(TIME_INVALID, f"time is empty; give {FORMS}")
    text = text.strip()
    if len(text) > MAX_TEXT:
        raise ScheduleError(TIME_INVALID, f"time is {len(text)} characters long (at most {MAX_TEXT}); give {FORMS}")
    if target not in (None, *KINDS):
        raise ScheduleError(TARGET_INVALID, f"target must be 'task' or 'cron' (got {target!r})")
    if target is None and len(text.split()) == 6:
        raise ScheduleError(CRON_INVALID, f"{text!r} has 6 fields; cron expressions here have 5 (minute hour "
                                          "day-of-month month day-of-week, no seconds), e.g. '0 9 * * 1-5'")
    kind: Kind = target or ("cron" if looks_like_cron(text) else "task")
    if kind == "cron":
        expr = " ".join(text.split())
        return When("cron", expr, next_fire(expr, now))
    if looks_like_cron(text):
        raise ScheduleError(TIME_INVALID, f"{text!r} is a cron expression; with target=task give a one-shot time "
                                          "(or use target=cron for a recurring schedule)")
    at = one_shot(text, now)
    return When("task", at.isoformat(timespec="seconds" if at.microsecond == 0 else "auto"), at)


def one_shot(text: str, now: datetime) -> datetime:
    tz = now.tzinfo
    if text.startswith("+"):
        match = _RELATIVE.fullmatch(text)
        if match is None or not any(match.groups()):
            raise ScheduleError(TIME_INVALID, f"{text!r} is not a duration; write it as '+5m', '+1h30m', '+90s' or "
                                              "'+2d' (units d, h, m, s in that order)")
        d, h, m, s = (int(g or 0) for g in match.groups())
        delta = timedelta(days=d, hours=h, minutes=m, seconds=s)
        if delta <= timedelta(0):
            raise ScheduleError(TIME_PAST, f"{text!r} is no time from now; give a positive duration such as '+5m'")
        return _ahead(text, now, now.replace(microsecond=0) + delta if delta <= MAX_AHEAD else None)
    match = _CLOCK.fullmatch(text)
    if match is not None:
        hour, minute = int(match[1]), int(match[2])
        _check_clock(text, hour, minute)
        at = _wall(now.replace(hour=hour, minute=minute, second=0, microsecond=0, tzinfo=None), tz)
        if at <= now:
            raise ScheduleError(TIME_PAST, f'already gone: "{text}" (it is {now:%H:%M} now); give a later time '
                                           "today, or a date: '2006-01-02 15:04'")
        return at
    match = _LOCAL.fullmatch(text)
    if match is not None:
        year, month, day, hour, minute = (int(g) for g in match.groups())
        _check_clock(text, hour, minute)
        try:
            naive = datetime(year, month, day, hour, minute)
        except ValueError as exc:
            raise ScheduleError(TIME_INVALID, f"{text!r} is not a date: {exc}") from None
        return _ahead(text, now, _wall(naive, tz))
    if _RFC3339.fullmatch(text):
        try:
            at = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
        except ValueError as exc:
            raise ScheduleError(TIME_INVALID, f"{text!r} is not an RFC 3339 time: {exc}") from None
        try:
            return _ahead(text, now, at.astimezone(tz))
        except OverflowError:
            raise ScheduleError(TIME_INVALID, f"{text!r} is out of range") from None
    raise ScheduleError(TIME_INVALID, f"cannot read time {text!r}; give {FORMS}")


def _check_clock(text: str, hour: int, minute: int) -> None:
    if hour > 23 or minute > 59:
        raise ScheduleError(TIME_INVALID, f"{text!r}: {hour:02d}:{minute:02d} is not a time of day (00:00 to 23:59)")


def _wall(naive: datetime, tz: tzinfo | None) -> datetime:
    """A wall-clock time in `tz`. One that a DST gap skips moves to the first minute after the gap, as
    cron (and cronsim) run it."""
    for _ in range(24 * 60):
        at = naive.replace(tzinfo=tz)
        if at.astimezone(UTC).astimezone(tz).replace(tzinfo=None) == naive:
            return at
        naive += timedelta(minutes=1)
    raise ScheduleError(TIME_INVALID, f"{naive:%Y-%m-%d %H:%M} does not exist in this time zone")


def _ahead(text: str, now: datetime, at: datetime | None) -> datetime:
    if at is None or at - now > MAX_AHEAD:
        raise ScheduleError(TIME_INVALID, f"{text!r} is more than {MAX_AHEAD.days} days ahead")
    if at <= now:
        raise ScheduleError(TIME_PAST, f'already gone: "{text}" (now is {now.isoformat(timespec="seconds")}); '
                                       "give a time in the future")
    return at


def _cron(expr: str, start: datetime) -> object:
    from cronsim import CronSim, CronSimError  # imported when a cron time is read, not with the tool

    fields = expr.split()
    if len(fields) != 5:
        raise ScheduleError(CRON_INVALID, f"{expr!r} has {len(fields)} fields; a cron expression has 5: minute hour "
                                          "day-of-month month day-of-week, e.g. '0 9 * * 1-5'")
    try:
        return CronSim(expr, start)
    except CronSimError as exc:
        raise ScheduleError(CRON_INVALID, f"{expr!r} is not a valid cron expression: {exc}") from None
    except (ValueError, IndexError, KeyError) as exc:  # cronsim's parser on odd input
        raise ScheduleError(CRON_INVALID, f"{expr!r} is not a valid cron expression ({exc})") from None


def next_fire(expr: str, after: datetime) -> datetime:
    """The first time `expr` fires strictly after `after` (in the zone of `after`)."""
    it = _cron(expr, after.replace(microsecond=0))
    try:
        found: datetime = next(it)  # type: ignore[call-overload]
    except StopIteration:
        raise ScheduleError(CRON_INVALID, f"{expr!r} never fires; check the day-of-month and month fields") from None
    except (ValueError, OverflowError) as exc:
        raise ScheduleError(CRON_INVALID, f"{expr!r} never fires ({exc})") from None
    return found


def slots_between(expr: str, after: datetime, until: datetime, cap: int = 1000) -> int:
    """How many times `expr` fires in (after, until], counting at most `cap`."""
    it = _cron(expr, after.replace(microsecond=0))
    count = 0
    for found in it:  # type: ignore[attr-defined]
        if found > until or count >= cap:
            break
        count += 1
    return count
