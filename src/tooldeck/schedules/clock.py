"""The clock the schedules read, injectable: `SystemClock` in production, any object with `now()` in tests.

`now()` returns an aware datetime in the zone the schedules are written in: cron expressions and the
`15:04` / `2006-01-02 15:04` forms are wall-clock times of that zone, so a daily `0 9 * * *` stays at
09:00 across a DST change. The zone is the system's (`TZ`, else `/etc/localtime`), else UTC.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

LOCALTIME = Path("/etc/localtime")


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (its tzinfo is the schedules' zone)."""
        ...


def zone(name: str | None) -> tzinfo:
    """The IANA zone `name` (None, "" or an unknown name: UTC)."""
    if not name or name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def zone_name(tz: tzinfo) -> str:
    key = getattr(tz, "key", None)
    return key if isinstance(key, str) else "UTC"


def local_zone() -> tzinfo:
    """The system's IANA zone: `TZ` (a name, or `:name`), else what `/etc/localtime` links to, else UTC.
    A fixed offset (`datetime.now().astimezone()`) would not do: cron times must follow DST."""
    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        return zone(name)
    try:
        target = os.path.realpath(LOCALTIME)
    except OSError:
        return UTC
    marker = "/zoneinfo/"
    if marker in target:
        return zone(target.split(marker, 1)[1])
    return UTC


class SystemClock:
    def __init__(self, tz: tzinfo | None = None) -> None:
        self.tz = tz if tz is not None else local_zone()

    def now(self) -> datetime:
        return datetime.now(self.tz)


class ManualClock:
    """A clock that stands still until moved: for tests and for `run-due --at` style hosts."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime")
        self.current = start

    def now(self) -> datetime:
        return self.current

    def set(self, when: datetime) -> None:
        self.current = when.astimezone(self.current.tzinfo)
