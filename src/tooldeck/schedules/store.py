"""`ScheduleStore`: the schedules of a home and their fires, in two side tables of `<home>/records.sqlite`.

Several processes may share one home (`tooldeck serve`, a system cron calling `tooldeck schedules
run-due`, a second serve): a due fire is claimed once. `claim_due` runs in one `BEGIN IMMEDIATE`
transaction and moves each due schedule on with a compare-and-set (`WHERE next_fire = <the slot it
read>`), and `schedule_runs` holds `UNIQUE (schedule_id, slot)`, so of any number of racing claimers
exactly one gets each (schedule, slot) and starts its run.

Missed fires (no runner was up at the time): a late schedule fires once, when a runner next looks, and
`missed` says how many of its slots had passed (1 for an on-time fire); a cron schedule then goes on at
its first slot after now. Nothing is replayed slot by slot.
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from tooldeck.records.side_tables import side_table
from tooldeck.schedules.clock import zone, zone_name
from tooldeck.schedules.errors import AMBIGUOUS, NOT_FOUND, STORE_FAILED, ScheduleError
from tooldeck.schedules.timespec import Kind, When, next_fire, slots_between

STORE_FILE: Final = "records.sqlite"
ACTIVE: Final = "active"
DONE: Final = "done"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
  id TEXT PRIMARY KEY, kind TEXT NOT NULL, time TEXT NOT NULL, skill TEXT, task TEXT, model TEXT,
  tz TEXT NOT NULL, next_fire REAL, status TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
  fires INTEGER NOT NULL DEFAULT 0, last_fire REAL, last_run_id TEXT, origin_run TEXT);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (status, next_fire);
CREATE TABLE IF NOT EXISTS schedule_runs (
  id INTEGER PRIMARY KEY, schedule_id TEXT NOT NULL, slot REAL NOT NULL, run_id TEXT NOT NULL UNIQUE,
  missed INTEGER NOT NULL, owner TEXT NOT NULL, claimed_at REAL NOT NULL, finished_at REAL,
  status TEXT NOT NULL, error_code TEXT, UNIQUE (schedule_id, slot));
"""
_ADD_VALUES = "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL, ?"
_INSERT_RUN = ("INSERT INTO schedule_runs (schedule_id, slot, run_id, missed, owner, claimed_at, status) "
               "VALUES (?, ?, ?, ?, ?, ?, 'running')")
_COLUMNS = ("id, kind, time, skill, task, model, tz, next_fire, status, created_at, updated_at, fires, last_fire, "
            "last_run_id, origin_run")


def _iso(ts: float | None, tz_name: str) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, zone(tz_name)).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class Schedule:
    id: str
    kind: Kind
    time: str
    skill: str | None
    task: str | None
    model: str | None
    tz: str
    next_fire: float | None
    status: str
    created_at: float
    updated_at: float
    fires: int
    last_fire: float | None
    last_run_id: str | None
    origin_run: str | None

    def to_dict(self) -> dict[str, Any]:
        """What `schedules` mode=list and `tooldeck schedules list --json` show."""
        return {"id": self.id, "target": self.kind, "time": self.time, "skill_name": self.skill, "task": self.task,
                "model": self.model, "timezone": self.tz, "status": self.status,
                "next_run": _iso(self.next_fire, self.tz), "runs": self.fires,
                "last_run": _iso(self.last_fire, self.tz), "last_run_id": self.last_run_id}


@dataclass(frozen=True, slots=True)
class Fire:
    """One claimed fire: the run to start for `schedule` at `slot`."""

    row: int
    schedule: Schedule
    slot: float
    run_id: str
    missed: int


def _schedule(row: Any) -> Schedule:
    return Schedule(*row)


def new_run_id() -> str:
    return f"run_{secrets.token_hex(8)}"


class ScheduleStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def of_home(cls, home: str | Path) -> ScheduleStore:
        return cls(Path(home) / STORE_FILE)

    @contextlib.contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        try:
            with side_table(self.path, _SCHEMA, STORE_FAILED) as conn:
                yield conn
        except ScheduleError:
            raise
        except sqlite3.Error as exc:  # raised past side_table's own mapping (e.g. at COMMIT)
            raise ScheduleError(STORE_FAILED, f"{self.path}: {exc}") from exc

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    # -- schedules ---------------------------------------------------------------------------------
    def add(self, when: When, *, skill: str | None = None, task: str | None = None, model: str | None = None,
            origin_run: str | None = None, now: float | None = None) -> Schedule:
        at = time.time() if now is None else now
        with self._write() as conn:
            for _ in range(8):
                sid = f"sch_{secrets.token_hex(4)}"
                if conn.execute("SELECT 1 FROM schedules WHERE id = ?", (sid,)).fetchone() is None:
                    break
            conn.execute(f"INSERT INTO schedules ({_COLUMNS}) VALUES ({_ADD_VALUES})",
                         (sid, when.kind, when.time, skill, task, model, zone_name(when.first.tzinfo),  # type: ignore[arg-type]
                          when.first.timestamp(), ACTIVE, at, at, origin_run))
            row = conn.execute(f"SELECT {_COLUMNS} FROM schedules WHERE id = ?", (sid,)).fetchone()
        return _schedule(row)

    def get(self, schedule_id: str) -> Schedule | None:
        with self._conn() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM schedules WHERE id = ?", (schedule_id.strip(),)).fetchone()
        return None if row is None else _schedule(row)

    def list(self, kind: Kind | None = None, *, include_done: bool = False) -> list[Schedule]:
        query = f"SELECT {_COLUMNS} FROM schedules WHERE 1 = 1"
        params: list[Any] = []
        if kind is not None:
            query += " AND kind = ?"
            params.append(kind)
        if not include_done:
            query += " AND status = ?"
            params.append(ACTIVE)
        query += " ORDER BY next_fire IS NULL, next_fire, created_at"
        with self._conn() as conn:
            return [_schedule(r) for r in conn.execute(query, params).fetchall()]

    def find(self, schedule_id: str | None = None, skill: str | None = None, kind: Kind | None = None) -> Schedule:
        """The schedule named by `schedule_id`, else the one schedule of `skill` (of `kind`, when given)."""
        if schedule_id:
            found = self.get(schedule_id)
            if found is None:
                raise ScheduleError(NOT_FOUND, f"no schedule {schedule_id!r}; list them with mode=list")
            return found
        matches = [s for s in self.list(kind, include_done=True) if s.skill == skill]
        if not matches:
            raise ScheduleError(NOT_FOUND, f"no schedule runs skill {skill!r}" + (f" as target={kind}" if kind else "")
                                + "; list them with mode=list")
        active = [s for s in matches if s.status == ACTIVE] or matches
        if len(active) > 1:
            ids = ", ".join(s.id for s in active)
            raise ScheduleError(AMBIGUOUS, f"skill_name {skill!r} matches {len(active)} schedules ({ids}); give the "
                                           "id of the one you mean")
        return active[0]

    def move(self, schedule_id: str, when: When, now: float | None = None) -> Schedule:
        """Give a schedule a new time (and kind); a fired one-shot becomes active again."""
        at = time.time() if now is None else now
        with self._write() as conn:
            changed = conn.execute("UPDATE schedules SET kind = ?, time = ?, tz = ?, next_fire = ?, status = ?, "
                                   "updated_at = ? WHERE id = ?",
                                   (when.kind, when.time, zone_name(when.first.tzinfo),  # type: ignore[arg-type]
                                    when.first.timestamp(), ACTIVE, at, schedule_id)).rowcount
            if not changed:
                raise ScheduleError(NOT_FOUND, f"no schedule {schedule_id!r}; it was removed meanwhile")
            row = conn.execute(f"SELECT {_COLUMNS} FROM schedules WHERE id = ?", (schedule_id,)).fetchone()
        return _schedule(row)

    def remove(self, schedule_id: str) -> Schedule:
        with self._write() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM schedules WHERE id = ?", (schedule_id,)).fetchone()
            if row is None:
                raise ScheduleError(NOT_FOUND, f"no schedule {schedule_id!r}; list them with mode=list")
            conn.execute("DELETE FROM schedules WHERE id = ?", (schedule_id,))
        return _schedule(row)

    # -- fires -------------------------------------------------------------------------------------
    def due(self, now: datetime) -> list[Schedule]:
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM schedules WHERE status = ? AND next_fire <= ? "
                                "ORDER BY next_fire", (ACTIVE, now.timestamp())).fetchall()
        return [_schedule(r) for r in rows]

    def claim_due(self, now: datetime, owner: str, limit: int = 64) -> list[Fire]:
        """Claim every schedule due at `now` (at most `limit`), move each to its next slot (a one-shot is done),
        and return the fires this caller won: each (schedule, slot) goes to exactly one claimer."""
        stamp = now.timestamp()
        fires: list[Fire] = []
        if not self.path.exists():  # a home that never had a schedule: nothing to create for a runner's pass
            return fires
        with self._write() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM schedules WHERE status = ? AND next_fire <= ? "
                                "ORDER BY next_fire LIMIT ?", (ACTIVE, stamp, limit)).fetchall()
            for row in rows:
                s = _schedule(row)
                slot = s.next_fire
                assert slot is not None
                if s.kind == "cron":
                    local_now = now.astimezone(zone(s.tz))
                    after = next_fire(s.time, local_now).timestamp()
                    slot_at = datetime.fromtimestamp(slot, zone(s.tz))
                    missed = 1 + slots_between(s.time, slot_at, local_now)
                    status = ACTIVE
                else:
                    after, missed, status = None, 1, DONE  # type: ignore[assignment]
                run_id = new_run_id()
                won = conn.execute("UPDATE schedules SET next_fire = ?, status = ?, fires = fires + 1, last_fire = ?, "
                                   "last_run_id = ?, updated_at = ? WHERE id = ? AND status = ? AND next_fire = ?",
                                   (after, status, slot, run_id, stamp, s.id, ACTIVE, slot)).rowcount
                if not won:
                    continue
                try:
                    cur = conn.execute(_INSERT_RUN, (s.id, slot, run_id, missed, owner, time.time()))
                except sqlite3.IntegrityError:  # this slot was fired before (a schedule moved back onto it)
                    continue
                fires.append(Fire(int(cur.lastrowid or 0), s, slot, run_id, missed))
        return fires

    def finish(self, fire: Fire, status: str, error_code: str | None = None) -> None:
        with self._write() as conn:
            conn.execute("UPDATE schedule_runs SET status = ?, error_code = ?, finished_at = ? WHERE id = ?",
                         (status, error_code, time.time(), fire.row))

    def runs(self, schedule_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        query = ("SELECT schedule_id, slot, run_id, missed, owner, claimed_at, finished_at, status, error_code "
                 "FROM schedule_runs")
        params: list[Any] = []
        if schedule_id is not None:
            query += " WHERE schedule_id = ?"
            params.append(schedule_id)
        query += " ORDER BY id DESC LIMIT ?"
        params.append(limit)
        keys = ("schedule_id", "slot", "run_id", "missed", "owner", "claimed_at", "finished_at", "status", "error_code")
        with self._conn() as conn:
            return [dict(zip(keys, r, strict=True)) for r in conn.execute(query, params).fetchall()]
