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
from tooldeck.records import turns
from tooldeck.records.interrupted import interrupted_outcome
from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
from tooldeck.records.reader import (
    FINAL_STATUSES,
    CallRecord,
    Event,
    InvocationHistory,
    InvocationSummary,
    ResultRecord,
)
from tooldeck.records.schema import RESULT_BATCH_BITS, migrate
from tooldeck.records.sqlite import Checkpointer, Connections, current_pid, dump, write

DEFAULT_BUSY_TIMEOUT_MS = 30_000
_KNOWN_SNAPSHOTS = 64
_KNOWN_RUNS = 4_096
_KNOWN_TURNS = 4_096
_MASK_LIMIT = 1 << 16
"""Indexes kept in a turn's bitmask of written results; a batch with a larger index is checked call by call."""
_FINAL = frozenset(FINAL_STATUSES)

_OWN_INVOCATION = "INSERT INTO owner_invocations (owner_id, invocation_id) VALUES (?, ?) ON CONFLICT DO NOTHING"
_INSERT_SNAPSHOT = ("INSERT INTO snapshots (snapshot_id, provider, json, created_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING")
_INSERT_EVENT = "INSERT INTO events (invocation_id, kind, data, at) VALUES (?, ?, ?, ?)"
_TURN_COLUMNS = ("t.turn_id, t.invocation_id, t.round, t.requested_at, t.calls, o.host, o.pid, o.token "
                 "FROM turns t LEFT JOIN owners o ON o.owner_id = t.owner_id")
_SUMMARY_COLUMNS = (
    "i.invocation_id, i.run_id, i.provider, i.scene, i.headless, i.snapshot_id, i.created_at, "
    "(SELECT count(*) FROM turns t WHERE t.invocation_id = i.invocation_id), "
    "(SELECT total(t.n) FROM turns t WHERE t.invocation_id = i.invocation_id), "
    f"(SELECT total(r.errors) FROM turns t JOIN results r ON {sql.RESULTS_OF_TURN} "
    "WHERE t.invocation_id = i.invocation_id), "
    f"(SELECT total(r.n) FROM turns t JOIN results r ON {sql.RESULTS_OF_TURN} "
    "WHERE t.invocation_id = i.invocation_id), "
    f"(SELECT total(r.unknown) FROM turns t JOIN results r ON {sql.RESULTS_OF_TURN} "
    "WHERE t.invocation_id = i.invocation_id)")

Batches = dict[int, list[tuple[float, str]]]
"""turn_id → its result batches (recorded_at, results JSON) in batch order."""


def _counts(results: list[list[Any]]) -> tuple[int, int]:
    """(errors, unknown outcomes) of result entries."""
    return sum(1 for e in results if e[7]), sum(1 for e in results if e[1] == "outcome_unknown")


def _rejected(what: str, why: str) -> TooldeckError:
    return TooldeckError("records.write_rejected", f"the records store rejected {what}: {why}")


def _result_entry(c: FinishedCall, what: str) -> list[Any]:
    if c.status not in _FINAL:
        raise _rejected(what, f"{c.status!r} is not a final status ({', '.join(FINAL_STATUSES)})")
    return [c.index, c.status, c.tool_id, c.started_at, c.finished_at, c.content, c.structured, bool(c.is_error),
            c.error_code, c.resource_refs or None, c.raw_result, c.effects or None]


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
        self._stored_runs: set[str] = set()
        self._stored_snapshots: dict[str, str] = {}
        """Snapshot id → the JSON this process stored or found stored (bounded by _KNOWN_SNAPSHOTS)."""
        self._progress: dict[tuple[str, int], tuple[int, int, int, int]] = {}
        """(invocation, round) of a dense turn this process admitted whose results are not all written →
        (turn_id, calls, next batch, bitmask of the indexes whose result it wrote). Bounded by
        _KNOWN_TURNS; a turn missing here is written through the checked path."""
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

        # A run and a snapshot this process already stored (snapshots are write-once) need no second write
        # or read-back: hosts such as `tooldeck serve` start an invocation per call on one snapshot.
        known = self._stored_snapshots.get(info.snapshot_id)
        snapshot_known = known is not None and (known is info.snapshot_json or known == info.snapshot_json)
        run_known = info.run_id in self._stored_runs

        def tx(conn: sqlite3.Connection) -> None:
            if not run_known:
                conn.execute("INSERT INTO runs (run_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                             (info.run_id, info.created_at))
            if not snapshot_known and conn.execute(_INSERT_SNAPSHOT, (
                    info.snapshot_id, info.provider, info.snapshot_json, info.created_at)).rowcount == 0:
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
        if len(self._stored_runs) >= _KNOWN_RUNS:
            self._stored_runs.clear()
        self._stored_runs.add(info.run_id)
        if len(self._stored_snapshots) >= _KNOWN_SNAPSHOTS:
            self._stored_snapshots.clear()
        self._stored_snapshots[info.snapshot_id] = info.snapshot_json

    def calls_requested(self, invocation_id: str, round: int, calls: list[RequestedCall], at: float) -> None:
        self.calls_admitted(invocation_id, round, calls, [], at)

    def calls_started(self, invocation_id: str, round: int, calls: list[StartedCall], at: float) -> None:
        if calls:
            self._guarded(lambda conn: self._start(conn, invocation_id, round, calls, at),
                          f"round {round} of {invocation_id}")

    def calls_admitted(self, invocation_id: str, round: int, requested: list[RequestedCall],
                       started: list[StartedCall], at: float, refused: Sequence[FinishedCall] = ()) -> None:
        if not requested:
            return
        owner_id = self._owner_id()
        owned = invocation_id in self._owned
        admitted = {c.index: c for c in started}
        # One row for the whole turn: each call in its state after the gate (`started` with its tool
        # id and decoded arguments when admitted, else `requested`), with the raw arguments verbatim.
        calls: list[list[Any]] = []
        dense = 1
        for i, c in enumerate(requested):
            index = c.index
            if index != i:
                dense = 0
            s = admitted.get(index)
            calls.append([index, c.call_id, c.name, c.raw_arguments] if s is None else
                         [index, c.call_id, c.name, c.raw_arguments, s.tool_id, s.arguments, at])
        what = f"round {round} of {invocation_id}"
        if not dense and len({c[0] for c in calls}) != len(calls):
            raise _rejected(what, "two calls have the same index")
        params = (invocation_id, round, owner_id, at, len(calls), dense, turns.encode_calls(calls))
        # The gate's refusals are final before anything runs: their results go in the same transaction
        # (batch 0 of the turn), so a refusal keeps its reason whatever happens to the process next.
        batch0: tuple[Any, ...] | None = None
        done = 0
        if refused:
            indexes = {c[0] for c in calls}
            closed: set[int] = set()
            entries = []
            for c in refused:
                if c.index not in indexes or c.index in admitted or c.index in closed:
                    raise _rejected(what, f"refused call {c.index} ({c.call_id!r}) is not a call of this turn, "
                                    "or it was admitted, or refused twice")
                closed.add(c.index)
                entries.append(_result_entry(c, what))
            errors, unknown = _counts(entries)
            batch0 = (len(entries), errors, unknown, at, turns.encode_results(entries))
            if dense:
                for index in closed:
                    done |= 1 << index

        def tx(conn: sqlite3.Connection) -> int:
            if not owned:
                conn.execute(_OWN_INVOCATION, (owner_id, invocation_id))
            turn_id: int = conn.execute(sql.INSERT_TURN, params).lastrowid  # type: ignore[assignment]
            if batch0 is not None:
                conn.execute(sql.INSERT_RESULTS, (turn_id << RESULT_BATCH_BITS, *batch0))
            return turn_id

        turn_id = self._guarded(tx, what)
        self._owned.add(invocation_id)
        if dense and len(refused) < len(calls):
            self._remember(invocation_id, round, (turn_id, len(calls), 1 if refused else 0, done))

    def _remember(self, invocation_id: str, round: int, progress: tuple[int, int, int, int]) -> None:
        """What this process wrote of a dense turn whose results are not all written yet."""
        if len(self._progress) >= _KNOWN_TURNS:
            self._progress.clear()
        self._progress[(invocation_id, round)] = progress

    def _start(self, conn: sqlite3.Connection, invocation_id: str, round: int, calls: list[StartedCall],
               at: float) -> None:
        """`calls_started` (hosts that record the steps apart): the turn's row gets the admitted calls'
        tool ids and arguments; calls already started or closed are left as they are."""
        row = conn.execute(sql.TURN, (invocation_id, round)).fetchone()
        if row is None:
            return
        turn_id, data = row
        entries = turns.decode(data)
        starting = {c.index: c for c in calls}
        closed, _batch = self._closed(conn, turn_id)
        changed = False
        for k, entry in enumerate(entries):
            s = starting.get(entry[0])
            if s is not None and len(entry) < turns.STARTED_LEN and entry[0] not in closed:
                entries[k] = [*entry[:4], s.tool_id, s.arguments, at]
                changed = True
        if changed:
            conn.execute("UPDATE turns SET calls = ? WHERE turn_id = ?", (turns.encode_calls(entries), turn_id))

    def calls_finished(self, invocation_id: str, round: int, calls: list[FinishedCall]) -> None:
        if not calls:
            return
        now = time.time()
        what = f"round {round} of {invocation_id}"
        results: list[list[Any]] = []
        errors = unknown = mask = 0
        top = -1
        distinct = True
        for c in calls:  # one pass, no call per entry: this is the hot path
            index, status, is_error = c.index, c.status, bool(c.is_error)
            if status not in _FINAL:
                raise _rejected(what, f"{status!r} is not a final status ({', '.join(FINAL_STATUSES)})")
            if status == "outcome_unknown":
                unknown += 1
            if is_error:
                errors += 1
            if index > top:
                top = index
            if index < 0 or index >= _MASK_LIMIT or mask >> index & 1:
                distinct = False
            else:
                mask |= 1 << index
            results.append([index, status, c.tool_id, c.started_at, c.finished_at, c.content, c.structured, is_error,
                            c.error_code, c.resource_refs or None, c.raw_result, c.effects or None])
        encoded = turns.encode_results(results)
        key = (invocation_id, round)
        progress = self._progress.get(key)
        if progress is not None and distinct and top < progress[1] and not mask & progress[3]:
            # A turn this process admitted, none of these results written before: its next batch, at the
            # rowid this process expects. A batch someone else wrote there (recovery closing calls of this
            # turn) makes the insert conflict, and the results are then checked call by call.
            turn_id, n, batch, written = progress
            row = ((turn_id << RESULT_BATCH_BITS) | batch, len(results), errors, unknown, now, encoded)

            def next_batch(conn: sqlite3.Connection) -> bool:
                if conn.execute(sql.INSERT_NEXT_RESULTS, row).rowcount:
                    return True
                self._finish_checked(conn, invocation_id, round, calls, results, now)
                return False

            if self._guarded(next_batch, what) and written | mask != (1 << n) - 1:
                self._progress[key] = (turn_id, n, batch + 1, written | mask)
            else:
                self._progress.pop(key, None)
            return
        if progress is not None:
            self._progress.pop(key, None)
        params = (len(results), errors, unknown, now, encoded, invocation_id, round, top)

        def first_or_checked(conn: sqlite3.Connection) -> None:
            if distinct and conn.execute(sql.INSERT_FIRST_RESULTS, params).rowcount:
                return
            self._finish_checked(conn, invocation_id, round, calls, results, now)

        self._guarded(first_or_checked, what)

    def _finish_checked(self, conn: sqlite3.Connection, invocation_id: str, round: int, calls: list[FinishedCall],
                        results: list[list[Any]], now: float) -> None:
        """Results call by call: a later batch of a turn, a sparse turn, results of calls already closed
        (recovered as interrupted: each goes to a `late_result` event, the recorded outcome stays), or
        results of calls never recorded (the whole batch is rejected)."""
        what = f"round {round} of {invocation_id}"
        row = conn.execute(sql.TURN, (invocation_id, round)).fetchone()
        if row is None:
            raise _rejected(what, "no calls of that round were recorded; record them (calls_admitted) first")
        turn_id, data = row
        known = {entry[0] for entry in turns.decode(data)}
        closed, batch = self._closed(conn, turn_id)
        fresh: list[list[Any]] = []
        late: list[FinishedCall] = []
        for call, entry in zip(calls, results, strict=True):
            if call.index not in known:
                raise _rejected(what, f"call {call.index} ({call.call_id!r}) was never recorded")
            if call.index in closed:
                late.append(call)
            else:
                closed.add(call.index)
                fresh.append(entry)
        if fresh:
            errors, unknown = _counts(fresh)
            conn.execute(sql.INSERT_RESULTS, ((turn_id << RESULT_BATCH_BITS) | batch, len(fresh), errors, unknown,
                                              now, turns.encode_results(fresh)))
        for call in late:
            conn.execute(_INSERT_EVENT, (invocation_id, "late_result", dump({
                "round": round, "index": call.index, "call_id": call.call_id, "status": call.status,
                "content": call.content, "is_error": call.is_error, "error_code": call.error_code,
                "raw_result": call.raw_result}), now))

    @staticmethod
    def _closed(conn: sqlite3.Connection, turn_id: int) -> tuple[set[int], int]:
        """(indexes of the turn's calls that have a result, the turn's next batch number)."""
        first = turn_id << RESULT_BATCH_BITS
        closed: set[int] = set()
        batch = 0
        for result_id, _at, data in conn.execute(sql.BATCHES, (first, first | sql.BATCH_MASK)):
            closed.update(entry[0] for entry in turns.decode(data))
            batch = (result_id & sql.BATCH_MASK) + 1
        if batch > sql.BATCH_MASK:
            raise _rejected(f"turn {turn_id}", f"a turn holds at most {sql.BATCH_MASK + 1} batches of results")
        return closed, batch

    def _guarded(self, tx: Any, what: str) -> Any:
        try:
            return self._write(tx)
        except sqlite3.IntegrityError as exc:
            raise _rejected(what, f"{exc}. Record the invocation (invocation_started) before its calls, and never "
                            "reuse a round number") from exc

    def close(self) -> None:
        """Close every connection. The process is marked settled when it leaves no open call behind,
        so later recoveries skip it."""
        key = self._owner_key
        if key is not None and key[0] == current_pid() and not self._conns.closed:
            with contextlib.suppress(TooldeckError, sqlite3.Error):
                self._write(lambda conn: conn.execute(
                    "UPDATE owners SET settled = 1 WHERE owner_id = ? AND NOT EXISTS (SELECT 1 FROM owner_invocations "
                    "oi JOIN turns t ON t.invocation_id = oi.invocation_id WHERE oi.owner_id = ? AND t.owner_id = ? "
                    f"AND {sql.OPEN_TURN})", (key[1], key[1], key[1])))
        self._checkpointer.stop()
        self._conns.close()

    # -- interrupted calls ---------------------------------------------------------------------
    def recover(self, invocation_id: str | None = None, *, force: bool = False) -> list[CallRecord]:
        """Close the open calls whose owning process is gone (all open calls with `force`, e.g. on an
        explicit resume): `started` ones become `outcome_unknown`, `requested` ones `failed` (they never
        ran). Each gets its error result and a `call_recovered` event. Returns the calls it closed."""
        settle: list[int] = []
        if invocation_id is not None:
            open_calls = self._open_calls("t.invocation_id = ?", (invocation_id,))
        else:
            open_calls = []
            rows = self._read("SELECT owner_id, host, pid, token FROM owners WHERE settled = 0")
            for owner_id, host, pid, token in rows:
                dead = not owners.is_alive(owners.Owner(host, pid, token))
                if dead:
                    settle.append(owner_id)
                if dead or force:
                    open_calls += self._open_calls(
                        "t.owner_id = ? AND t.invocation_id IN (SELECT invocation_id FROM owner_invocations "
                        "WHERE owner_id = ?)", (owner_id, owner_id))
        if not force:
            alive: dict[owners.Owner, bool] = {}
            open_calls = [(t, c) for t, c in open_calls
                          if c.owner is not None and not alive.setdefault(c.owner, owners.is_alive(c.owner))]
        if not open_calls and not settle:
            return []
        now = time.time()
        plans: dict[int, list[tuple[CallRecord, tuple[str, str, str, dict[str, Any]]]]] = {}
        for turn_id, c in open_calls:
            plans.setdefault(turn_id, []).append((c, interrupted_outcome(c.call_name, c.status, c.raw_arguments)))

        def tx(conn: sqlite3.Connection) -> set[tuple[int, int]]:
            done: set[tuple[int, int]] = set()
            for turn_id, plan in plans.items():
                closed, batch = self._closed(conn, turn_id)  # under the write lock: what is still open now
                entries = []
                for c, (status, code, message, structured) in plan:
                    if c.index in closed:
                        continue
                    # No finish time: when (or whether) the call ended is unknown, and a duration
                    # up to the recovery would be invented.
                    entries.append([c.index, status, None, None, None, message, structured, True, code, None, None,
                                    None])
                    conn.execute(_INSERT_EVENT, (c.invocation_id, "call_recovered", dump({
                        "round": c.round, "index": c.index, "call_id": c.call_id, "was": c.status, "status": status,
                        "forced": force}), now))
                    done.add((turn_id, c.index))
                if entries:
                    errors, unknown = _counts(entries)
                    conn.execute(sql.INSERT_RESULTS, ((turn_id << RESULT_BATCH_BITS) | batch, len(entries), errors,
                                                      unknown, now, turns.encode_results(entries)))
            conn.executemany("UPDATE owners SET settled = 1 WHERE owner_id = ?", [(o,) for o in settle])
            return done

        done = self._write(tx)
        closed_calls = []
        for turn_id, plan in plans.items():
            for c, (status, code, message, structured) in plan:
                if (turn_id, c.index) in done:
                    c.status, c.finished_at = status, None
                    c.result = ResultRecord(message, structured, True, code, [], None, [], now)
                    closed_calls.append(c)
        return closed_calls

    def _open_calls(self, where: str, params: tuple[Any, ...]) -> list[tuple[int, CallRecord]]:
        """(turn_id, call) of the open calls in the turns matching `where` (on `turns t`)."""
        rows = self._read(f"SELECT {_TURN_COLUMNS} WHERE {where} AND {sql.OPEN_TURN} "
                          "ORDER BY t.invocation_id, t.round", params)
        out = []
        for row in rows:
            first = row[0] << RESULT_BATCH_BITS
            batches = [(at, data) for _id, at, data in self._read(sql.BATCHES, (first, first | sql.BATCH_MASK))]
            out += [(row[0], c) for c in self._calls(row, batches) if c.is_open]
        return out

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
        rows = self._read(f"SELECT {_SUMMARY_COLUMNS} FROM invocations i {where} "
                          "ORDER BY i.created_at DESC, i.rowid DESC LIMIT ?", params)
        return [self._summary(r) for r in rows]

    def invocation(self, invocation_id: str) -> InvocationSummary:
        for summary in self._summaries_for(invocation_id):
            return summary
        raise TooldeckError("records.unknown_invocation", f"no invocation {invocation_id!r} in {self.path}; "
                            "list the recorded ones with `tooldeck records list`")

    def _summaries_for(self, invocation_id: str) -> list[InvocationSummary]:
        rows = self._read(f"SELECT {_SUMMARY_COLUMNS} FROM invocations i WHERE i.invocation_id = ?", (invocation_id,))
        return [self._summary(r) for r in rows]

    def history(self, invocation_id: str) -> InvocationHistory:
        summary = self.invocation(invocation_id)
        rows = self._read(f"SELECT {_TURN_COLUMNS} WHERE t.invocation_id = ? ORDER BY t.round", (invocation_id,))
        batches: Batches = {}
        for result_id, at, data in self._read(
                f"SELECT r.result_id, r.recorded_at, r.results FROM turns t JOIN results r ON {sql.RESULTS_OF_TURN} "
                "WHERE t.invocation_id = ? ORDER BY r.result_id", (invocation_id,)):
            batches.setdefault(result_id >> RESULT_BATCH_BITS, []).append((at, data))
        calls: list[CallRecord] = []
        for row in rows:
            calls += self._calls(row, batches.get(row[0], ()))
        return InvocationHistory(summary, calls)

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
        calls = int(r[8])
        return InvocationSummary(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6], r[7], calls, int(r[9]),
                                 calls - int(r[10]), int(r[11]))

    @staticmethod
    def _calls(row: tuple[Any, ...], batches: Sequence[tuple[float, str]]) -> list[CallRecord]:
        """The calls of one `turns` row (`_TURN_COLUMNS`) with their results, in index order."""
        _turn_id, invocation_id, round_no, requested_at, data, host, pid, token = row
        owner = owners.Owner(host, pid, token) if host is not None else None
        text = turns.text
        outcomes: dict[int, tuple[list[Any], float]] = {}
        for recorded_at, results in batches:
            for r in turns.decode(results):
                outcomes.setdefault(r[0], (r, recorded_at))
        entries = turns.decode(data)
        entries.sort(key=_index)
        out = []
        for e in entries:
            if len(e) >= turns.STARTED_LEN:
                tool_id, arguments, started_at, status = text(e[4]), e[5], e[6], "started"
            else:
                tool_id = arguments = started_at = None
                status = "requested"
            finished_at = result = None
            got = outcomes.get(e[0])
            if got is not None:
                r, recorded_at = got
                status, finished_at = r[1], r[4]
                if r[2] is not None:
                    tool_id = text(r[2])
                if r[3] is not None:  # when the tool really started (the turn's time is its admission)
                    started_at = r[3]
                if r[5] is not None:
                    result = ResultRecord(text(r[5]), r[6], bool(r[7]), text(r[8]), r[9] or [], r[10], r[11] or [],
                                          recorded_at)
            out.append(CallRecord(invocation_id, round_no, e[0], text(e[1]), text(e[2]), tool_id, text(e[3]),
                                  arguments, status, requested_at, started_at, finished_at, owner, result))
        return out


def _index(entry: list[Any]) -> int:
    return entry[0]


__all__ = ["SqliteRecorder"]
