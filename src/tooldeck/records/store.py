"""`SqliteRecorder`: the embedded records store (`<home>/records.sqlite`, WAL).

It implements the `Recorder` port (one transaction per port method) and the read API of
`records/reader.py`. Every connection runs with WAL, foreign keys on and a busy timeout; writers in
other threads and processes are serialised by `BEGIN IMMEDIATE` and retried on SQLITE_BUSY.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from tooldeck.core.errors import TooldeckError
from tooldeck.records import owner as owners
from tooldeck.records import statements as sql
from tooldeck.records.interrupted import interrupted_outcome
from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
from tooldeck.records.reader import (
    CallRecord,
    Event,
    InvocationHistory,
    InvocationSummary,
    ResultRecord,
)
from tooldeck.records.schema import migrate
from tooldeck.records.sqlite import Checkpointer, Connections, current_pid, dump, load, text, untext, write

DEFAULT_BUSY_TIMEOUT_MS = 30_000

_OWN_INVOCATION = "INSERT INTO owner_invocations (owner_id, invocation_id) VALUES (?, ?) ON CONFLICT DO NOTHING"
_INSERT_EVENT = "INSERT INTO events (invocation_id, kind, data, at) VALUES (?, ?, ?, ?)"
_CALL_COLUMNS = ("c.invocation_id, c.round, c.idx, c.call_id, c.call_name, c.tool_id, c.raw_arguments, c.arguments, "
                 "c.status, c.requested_at, c.started_at, c.finished_at, o.host, o.pid, o.token, "
                 "r.content, r.structured, r.is_error, r.error_code, r.resource_refs, r.raw_result, r.effects, "
                 "r.recorded_at")
_CALL_FROM = ("FROM calls c LEFT JOIN owners o ON o.owner_id = c.owner_id "
              "LEFT JOIN results r ON r.invocation_id = c.invocation_id AND r.round = c.round AND r.idx = c.idx")


def _result_row(invocation_id: str, round: int, c: FinishedCall, now: float) -> tuple[Any, ...]:
    return (invocation_id, round, c.index, text(c.content), dump(c.structured), int(c.is_error), c.error_code,
            dump(c.resource_refs) if c.resource_refs else None, dump(c.raw_result),
            dump(c.effects) if c.effects else None, now)


class SqliteRecorder:
    """The SQLite adapter of the records port, with the read API used by replay, resume and the CLI."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
                 synchronous: str = "NORMAL", recover_dead: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise TooldeckError("records.option_invalid", f"synchronous must be OFF, NORMAL, FULL or EXTRA, "
                                f"not {synchronous!r}")
        self.busy_timeout_ms = busy_timeout_ms
        self._owner_key: tuple[int, int] | None = None
        self._owned: set[str] = set()
        self._conns = Connections(self.path, busy_timeout_ms, synchronous.upper())
        self._checkpointer = Checkpointer(self._conns)
        try:
            self._write(migrate)
        except sqlite3.DatabaseError as exc:
            self._conns.close()
            raise TooldeckError("records.store_unreadable", f"{self.path} is not a readable records store ({exc}); "
                                "move it aside and a new one is created") from exc
        if recover_dead:
            self.recover()

    # -- plumbing ------------------------------------------------------------------------------
    def _write(self, fn: Any) -> Any:
        out = write(self._conns.get(), fn, self.busy_timeout_ms, self.path)
        self._checkpointer.wrote()
        return out

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conns.get().execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            raise TooldeckError("records.read_failed", f"reading {self.path} failed: {exc}") from exc

    def _owner_id(self) -> int:
        """The `owners` row of the calling process (registered once per process)."""
        key = self._owner_key
        pid = current_pid()
        if key is not None and key[0] == pid:
            return key[1]
        me = owners.current()

        def register(conn: sqlite3.Connection) -> int:
            conn.execute("INSERT INTO owners (host, pid, token, first_seen) VALUES (?, ?, ?, ?) "
                         "ON CONFLICT DO NOTHING", (me.host, me.pid, me.token, time.time()))
            return conn.execute("SELECT owner_id FROM owners WHERE host = ? AND pid = ? AND token = ?",
                                (me.host, me.pid, me.token)).fetchone()[0]

        owner_id = self._write(register)
        self._owner_key = (pid, owner_id)
        self._owned = set()
        return owner_id

    # -- the Recorder port ---------------------------------------------------------------------
    def invocation_started(self, info: InvocationInfo) -> None:
        owner_id = self._owner_id()

        def tx(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO runs (run_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                         (info.run_id, info.created_at))
            cur = conn.execute("INSERT INTO snapshots (snapshot_id, provider, json, created_at) VALUES (?, ?, ?, ?) "
                               "ON CONFLICT DO NOTHING",
                               (info.snapshot_id, info.provider, info.snapshot_json, info.created_at))
            if cur.rowcount == 0:
                stored = conn.execute("SELECT json FROM snapshots WHERE snapshot_id = ?",
                                      (info.snapshot_id,)).fetchone()[0]
                if stored != info.snapshot_json:
                    raise TooldeckError("records.snapshot_write_once",
                                        f"snapshot {info.snapshot_id} is already stored with other content; "
                                        "snapshots are frozen: build a new one (new id) instead of changing it")
            conn.execute("INSERT INTO invocations (invocation_id, run_id, snapshot_id, provider, scene, headless, "
                         "created_at, owner_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (info.invocation_id, info.run_id, info.snapshot_id, info.provider, info.scene,
                          int(info.headless), info.created_at, owner_id))
            conn.execute(_OWN_INVOCATION, (owner_id, info.invocation_id))
            conn.execute(_INSERT_EVENT, (info.invocation_id, "invocation_started",
                                         dump({"run_id": info.run_id, "snapshot_id": info.snapshot_id}),
                                         info.created_at))

        self._guarded(tx, f"invocation {info.invocation_id}")
        self._owned.add(info.invocation_id)

    def calls_requested(self, invocation_id: str, round: int, calls: list[RequestedCall], at: float) -> None:
        self.calls_admitted(invocation_id, round, calls, [], at)

    def calls_started(self, invocation_id: str, round: int, calls: list[StartedCall], at: float) -> None:
        self._guarded(lambda conn: self._start(conn, invocation_id, round, calls, at),
                      f"round {round} of {invocation_id}")

    def calls_admitted(self, invocation_id: str, round: int, requested: list[RequestedCall],
                       started: list[StartedCall], at: float) -> None:
        owner_id = self._owner_id()
        owned = invocation_id in self._owned

        admitted = {c.index: c for c in started}

        def tx(conn: sqlite3.Connection) -> None:
            if not owned:
                conn.execute(_OWN_INVOCATION, (owner_id, invocation_id))
            # One INSERT writes each call in its state after the gate: `started` (tool id, decoded
            # arguments) when admitted, else `requested`; no UPDATE pass over the rows just written.
            for part in sql.chunks(requested):
                params: list[Any] = []
                for c in part:
                    s = admitted.get(c.index)
                    params += (invocation_id, round, c.index, text(c.call_id), text(c.name), text(c.raw_arguments),
                               "requested" if s is None else "started", None if s is None else s.tool_id,
                               None if s is None else dump(s.arguments), at, None if s is None else at, owner_id)
                conn.execute(sql.insert_calls(len(part)), params)

        self._guarded(tx, f"round {round} of {invocation_id}")
        self._owned.add(invocation_id)

    @staticmethod
    def _start(conn: sqlite3.Connection, invocation_id: str, round: int, calls: list[StartedCall], at: float) -> None:
        for part in sql.chunks(calls):
            tools: list[Any] = [at]
            args: list[Any] = []
            keys: list[Any] = [invocation_id, round]
            for c in part:
                tools += (c.index, c.tool_id)
                args += (c.index, dump(c.arguments))
                keys.append(c.index)
            conn.execute(sql.start_calls(len(part)), tools + args + keys)

    def calls_finished(self, invocation_id: str, round: int, calls: list[FinishedCall]) -> None:
        now = time.time()

        def tx(conn: sqlite3.Connection) -> None:
            updated = 0
            for part in sql.chunks(calls):
                status: list[Any] = []
                tools: list[Any] = []
                started: list[Any] = []
                finished: list[Any] = []
                keys: list[Any] = [invocation_id, round]
                for c in part:
                    i = c.index
                    status += (i, c.status)
                    tools += (i, c.tool_id)
                    started += (i, c.started_at)
                    finished += (i, c.finished_at)
                    keys.append(i)
                params = status + tools + started + finished + keys
                updated += conn.execute(sql.finish_calls(len(part)), params).rowcount
            if updated != len(calls):
                self._finish_late(conn, invocation_id, round, calls, now)
                return
            for part in sql.chunks(calls):
                params: list[Any] = []
                for c in part:
                    params += _result_row(invocation_id, round, c, now)
                conn.execute(sql.insert_results(len(part)), params)

        self._guarded(tx, f"round {round} of {invocation_id}")

    @staticmethod
    def _finish_late(conn: sqlite3.Connection, invocation_id: str, round: int, calls: list[FinishedCall],
                     now: float) -> None:
        """Some calls were already closed (recovered as interrupted): their late result goes to an event."""
        for call in calls:
            if conn.execute(sql.insert_results(1), _result_row(invocation_id, round, call, now)).rowcount:
                continue
            conn.execute(_INSERT_EVENT, (invocation_id, "late_result", dump({
                "round": round, "index": call.index, "call_id": call.call_id, "status": call.status,
                "content": call.content, "is_error": call.is_error, "error_code": call.error_code,
                "raw_result": call.raw_result}), now))

    def _guarded(self, tx: Any, what: str) -> None:
        try:
            self._write(tx)
        except sqlite3.IntegrityError as exc:
            raise TooldeckError("records.write_rejected", f"the records store rejected {what}: {exc}. Record the "
                                "invocation (invocation_started) before its calls, and never reuse a round "
                                "number") from exc

    def close(self) -> None:
        """Close every connection. The process is marked settled when it leaves no open call behind,
        so later recoveries skip it."""
        key = self._owner_key
        if key is not None and key[0] == current_pid() and not self._conns.closed:
            with contextlib.suppress(TooldeckError, sqlite3.Error):
                self._write(lambda conn: conn.execute(
                    "UPDATE owners SET settled = 1 WHERE owner_id = ? AND NOT EXISTS (SELECT 1 FROM owner_invocations "
                    "oi JOIN calls c ON c.invocation_id = oi.invocation_id WHERE oi.owner_id = ? AND c.owner_id = ? "
                    "AND c.status IN ('requested', 'started'))", (key[1], key[1], key[1])))
        self._checkpointer.stop()
        self._conns.close()

    # -- interrupted calls ---------------------------------------------------------------------
    def recover(self, invocation_id: str | None = None, *, force: bool = False) -> list[CallRecord]:
        """Close the open calls whose owning process is gone (all open calls with `force`, e.g. on an
        explicit resume): `started` ones become `outcome_unknown`, `requested` ones `failed` (they never
        ran). Each gets its error result and a `call_recovered` event. Returns the calls it closed."""
        if invocation_id is not None:
            open_calls = self._open_calls("c.invocation_id = ?", (invocation_id,))
            settle: list[int] = []
        else:
            settle = []
            open_calls = []
            rows = self._read("SELECT owner_id, host, pid, token FROM owners WHERE settled = 0")
            for owner_id, host, pid, token in rows:
                dead = not owners.is_alive(owners.Owner(host, pid, token))
                if dead:
                    settle.append(owner_id)
                if dead or force:
                    open_calls += self._open_calls(
                        "c.owner_id = ? AND c.invocation_id IN (SELECT invocation_id FROM owner_invocations "
                        "WHERE owner_id = ?)", (owner_id, owner_id))
        if not force:
            alive: dict[owners.Owner, bool] = {}
            open_calls = [c for c in open_calls
                          if c.owner is not None and not alive.setdefault(c.owner, owners.is_alive(c.owner))]
        if not open_calls and not settle:
            return []
        now = time.time()

        def tx(conn: sqlite3.Connection) -> list[CallRecord]:
            closed = []
            for c in open_calls:
                status, code, message, structured = interrupted_outcome(c.call_name, c.status, c.raw_arguments)
                cur = conn.execute("UPDATE calls SET status = ?, finished_at = ? WHERE invocation_id = ? AND "
                                   "round = ? AND idx = ? AND status = ?",
                                   (status, now, c.invocation_id, c.round, c.index, c.status))
                if not cur.rowcount:
                    continue
                conn.execute(sql.insert_results(1), (c.invocation_id, c.round, c.index, message, dump(structured), 1,
                                                     code, None, None, None, now))
                conn.execute(_INSERT_EVENT, (c.invocation_id, "call_recovered", dump({
                    "round": c.round, "index": c.index, "call_id": c.call_id, "was": c.status, "status": status,
                    "forced": force}), now))
                c.status, c.finished_at = status, now
                c.result = ResultRecord(message, structured, True, code, [], None, [], now)
                closed.append(c)
            conn.executemany("UPDATE owners SET settled = 1 WHERE owner_id = ?", [(o,) for o in settle])
            return closed

        return self._write(tx)

    def _open_calls(self, where: str, params: tuple[Any, ...]) -> list[CallRecord]:
        rows = self._read(f"SELECT {_CALL_COLUMNS} {_CALL_FROM} WHERE {where} "
                          "AND c.status IN ('requested', 'started') ORDER BY c.invocation_id, c.round, c.idx", params)
        return [self._call(row) for row in rows]

    def record_event(self, invocation_id: str | None, kind: str, data: dict[str, Any]) -> None:
        now = time.time()
        self._write(lambda conn: conn.execute(_INSERT_EVENT, (invocation_id, kind, dump(data), now)))

    def append_run_event(self, run_id: str, kind: str, data: dict[str, Any]) -> None:
        """Append to a run's event stream (kept in order; read back with `run_events`)."""
        now = time.time()
        self._write(lambda conn: conn.execute(
            "INSERT INTO events (invocation_id, run_id, kind, data, at) VALUES (NULL, ?, ?, ?, ?)",
            (run_id, kind, dump(data), now)))

    def run_events(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        rows = self._read("SELECT data FROM events WHERE run_id = ? AND kind = ? ORDER BY seq", (run_id, kind))
        return [orjson.loads(r[0]) for r in rows]

    # -- read API ------------------------------------------------------------------------------
    def list_invocations(self, limit: int = 20, run_id: str | None = None) -> list[InvocationSummary]:
        where, params = ("WHERE i.run_id = ?", (run_id, limit)) if run_id else ("", (limit,))
        rows = self._read(
            "SELECT i.invocation_id, i.run_id, i.provider, i.scene, i.headless, i.snapshot_id, i.created_at, "
            "(SELECT count(DISTINCT round) FROM calls c WHERE c.invocation_id = i.invocation_id), "
            "(SELECT count(*) FROM calls c WHERE c.invocation_id = i.invocation_id), "
            "(SELECT count(*) FROM results r WHERE r.invocation_id = i.invocation_id AND r.is_error), "
            "(SELECT count(*) FROM calls c WHERE c.invocation_id = i.invocation_id "
            "  AND c.status IN ('requested', 'started')), "
            "(SELECT count(*) FROM calls c WHERE c.invocation_id = i.invocation_id AND c.status = 'outcome_unknown') "
            f"FROM invocations i {where} ORDER BY i.created_at DESC, i.rowid DESC LIMIT ?", params)
        return [self._summary(r) for r in rows]

    def invocation(self, invocation_id: str) -> InvocationSummary:
        for summary in self._summaries_for(invocation_id):
            return summary
        raise TooldeckError("records.unknown_invocation", f"no invocation {invocation_id!r} in {self.path}; "
                            "list the recorded ones with `tooldeck records list`")

    def _summaries_for(self, invocation_id: str) -> list[InvocationSummary]:
        rows = self._read(
            "SELECT i.invocation_id, i.run_id, i.provider, i.scene, i.headless, i.snapshot_id, i.created_at, "
            "count(DISTINCT c.round), count(c.idx), "
            "(SELECT count(*) FROM results r WHERE r.invocation_id = i.invocation_id AND r.is_error), "
            "sum(c.status IN ('requested', 'started')), sum(c.status = 'outcome_unknown') "
            "FROM invocations i LEFT JOIN calls c ON c.invocation_id = i.invocation_id "
            "WHERE i.invocation_id = ? GROUP BY i.invocation_id", (invocation_id,))
        return [self._summary(r) for r in rows]

    def history(self, invocation_id: str) -> InvocationHistory:
        summary = self.invocation(invocation_id)
        rows = self._read(f"SELECT {_CALL_COLUMNS} {_CALL_FROM} WHERE c.invocation_id = ? ORDER BY c.round, c.idx",
                          (invocation_id,))
        return InvocationHistory(summary, [self._call(r) for r in rows])

    def snapshot_json(self, snapshot_id: str) -> str:
        rows = self._read("SELECT json FROM snapshots WHERE snapshot_id = ?", (snapshot_id,))
        if not rows:
            raise TooldeckError("records.unknown_snapshot", f"no snapshot {snapshot_id!r} in {self.path}")
        return rows[0][0]

    def load_snapshot(self, snapshot_id: str) -> Any:
        from tooldeck.snapshot.snapshot import Snapshot

        return Snapshot.from_json(self.snapshot_json(snapshot_id))

    def events(self, invocation_id: str) -> list[Event]:
        rows = self._read("SELECT seq, invocation_id, kind, data, at FROM events WHERE invocation_id = ? ORDER BY seq",
                          (invocation_id,))
        return [Event(r[0], r[1], r[2], orjson.loads(r[3]), r[4]) for r in rows]

    # -- row mapping ---------------------------------------------------------------------------
    @staticmethod
    def _summary(r: tuple[Any, ...]) -> InvocationSummary:
        return InvocationSummary(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6], r[7] or 0, r[8] or 0, r[9] or 0,
                                 r[10] or 0, r[11] or 0)

    @staticmethod
    def _call(r: tuple[Any, ...]) -> CallRecord:
        owner = owners.Owner(r[12], r[13], r[14]) if r[12] is not None else None
        result = None
        if r[15] is not None:
            result = ResultRecord(untext(r[15]), load(r[16]), bool(r[17]), r[18], load(r[19]) or [], load(r[20]),
                                  load(r[21]) or [], r[22])
        return CallRecord(r[0], r[1], r[2], untext(r[3]), untext(r[4]), r[5], untext(r[6]), load(r[7]), r[8], r[9],
                          r[10], r[11], owner, result)


__all__ = ["SqliteRecorder"]
