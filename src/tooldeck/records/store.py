"""`SqliteRecorder`: the embedded records store (`<home>/records.sqlite`, WAL).

It implements the `Recorder` port and, composed from its parts, the read API of `records/reader.py`:
the reads are in `queries.py` (rows mapped in `rows.py`) served through `reads.py`, the recovery of
interrupted calls in `recovery.py`, the writes checked call by call in `checked.py`, the journal and
its group commit in `journal.py`, `group.py` and `merge.py`; this module keeps the port's writes and
their fast paths. Every connection runs with WAL, foreign keys on and a busy timeout; writers in
other threads and processes are serialised by `BEGIN IMMEDIATE` and retried on SQLITE_BUSY.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tooldeck.core.errors import TooldeckError
from tooldeck.records import checked, merge, turns
from tooldeck.records import group as groups
from tooldeck.records import owner as owners
from tooldeck.records import statements as sql
from tooldeck.records.checked import FINAL, INSERT_EVENT, counts, rejected, result_entry
from tooldeck.records.journal import directory as journal_dir
from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
from tooldeck.records.queries import SqliteQueries, reader
from tooldeck.records.reader import FINAL_STATUSES
from tooldeck.records.reads import StoreReads
from tooldeck.records.schema import RESULT_BATCH_BITS, migrate
from tooldeck.records.sqlite import Checkpointer, Connections, current_pid, dump, write, write_one

DEFAULT_BUSY_TIMEOUT_MS = 30_000
_KNOWN_SNAPSHOTS = 64
_KNOWN_RUNS = 4_096
_KNOWN_TURNS = 4_096
_MASK_LIMIT = 1 << 16
"""Indexes kept in a turn's bitmask of written results; a batch with a larger index is checked call by call."""

_OWN_INVOCATION = merge.OWN_INVOCATION
_INSERT_SNAPSHOT = ("INSERT INTO snapshots (snapshot_id, provider, json, created_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING")

logger = logging.getLogger("tooldeck.records")


def _constraint(what: str, exc: sqlite3.IntegrityError) -> TooldeckError:
    return rejected(what, f"{exc}. Record the invocation (invocation_started) before its calls, and never reuse a "
                    "round number")


class SqliteRecorder(StoreReads):
    """The SQLite adapter of the records port, with the read API used by replay, resume and the CLI."""

    recording = True

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
                 synchronous: str = "NORMAL", recover_dead: bool = True, journal: bool = True) -> None:
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
        self._progress: dict[tuple[str, int], tuple[int | merge.Admission, int, int, int]] = {}
        """(invocation, round) of a dense turn this process admitted whose results are not all written →
        (turn_id, or its admission while that is journaled, calls, next batch, bitmask of the indexes
        whose result it wrote). Bounded by _KNOWN_TURNS; a turn missing here is written through the
        checked path."""
        self._rounds: dict[str, int] = {}
        """Invocation → the last round this process admitted (a later one can go through the journal)."""
        self._group: groups.GroupCommit | None = None
        """The journal and its group commit (records/group.py); None: every write is its own transaction."""
        self._conns = Connections(self.path, busy_timeout_ms, synchronous.upper())
        self._checkpointer = Checkpointer(self._conns)
        self._read = reader(self._conns.get, self.path)
        self._queries = SqliteQueries(self._read, self.path)
        try:
            self._write(migrate)
        except sqlite3.DatabaseError as exc:
            self._conns.close()
            raise TooldeckError("records.store_unreadable", f"{self.path} is not a readable records store ({exc}); "
                                "move it aside and a new one is created") from exc
        if journal:
            self._group = groups.attach(journal_dir(self.path), self._commit)
        if recover_dead:
            self.recover()

    # -- plumbing ------------------------------------------------------------------------------
    def _commit(self, writes: list[Any]) -> None:
        merge.commit_writes(self._write, writes, self._group.conflicted)  # type: ignore[union-attr]

    def _write(self, fn: Any) -> Any:
        out = write(self._conns.get(), fn, self.busy_timeout_ms, self.path)
        self._checkpointer.wrote()
        return out

    def _write_one(self, statement: str, params: Any, what: str) -> sqlite3.Cursor:
        """One statement as its own write transaction: the common writes of a turn (`sqlite.write_one`)."""
        try:
            cursor = write_one(self._conns.get(), statement, params, self.busy_timeout_ms, self.path)
        except sqlite3.IntegrityError as exc:
            raise _constraint(what, exc) from exc
        self._checkpointer.wrote()
        return cursor

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
        group = self._group
        if run_known and snapshot_known and group is not None and not self._conns.closed:
            # Only the invocation's own rows: journaled, committed with its turns (one transaction for many).
            event = dump({"run_id": info.run_id, "snapshot_id": info.snapshot_id})
            group.add(merge.Started(info.invocation_id, info.run_id, info.snapshot_id, info.provider, info.scene,
                                    int(info.headless), info.created_at, owner_id, event), owner_id)
            self._owned.add(info.invocation_id)
            return

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
            conn.execute(INSERT_EVENT, (info.invocation_id, "invocation_started",
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
            self.flush()
            self._guarded(lambda conn: checked.start(conn, invocation_id, round, calls, at),
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
            entry = ([index, c.call_id, c.name, c.raw_arguments] if s is None else
                     [index, c.call_id, c.name, c.raw_arguments, s.tool_id, s.arguments, at])
            if c.provider is not None:  # provider items / data of the turn (records/turns.py)
                entry.append(c.provider)
            calls.append(entry)
        what = f"round {round} of {invocation_id}"
        if not dense and len({c[0] for c in calls}) != len(calls):
            raise rejected(what, "two calls have the same index")
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
                    raise rejected(what, f"refused call {c.index} ({c.call_id!r}) is not a call of this turn, "
                                    "or it was admitted, or refused twice")
                closed.add(c.index)
                entries.append(result_entry(c, what))
            errors, unknown = counts(entries)
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

        group = self._group
        last = self._rounds.get(invocation_id)
        turn: int | merge.Admission
        if group is not None and owned and (last is None or round > last) and not self._conns.closed:
            # The common turn: journaled (durable once `add` returns), committed with others within
            # GROUP_COMMIT_DELAY_S. The invocation is this process's, the round a new one.
            turn = merge.Admission(invocation_id, round, owner_id, at, len(calls), dense, params[6], batch0)
            group.add(turn, owner_id)
        else:
            self.flush()
            if owned and batch0 is None:  # one statement
                turn = self._write_one(sql.INSERT_TURN, params, what).lastrowid  # type: ignore[assignment]
            else:
                turn = self._guarded(tx, what)
        self._owned.add(invocation_id)
        if last is None or round > last:
            self._rounds[invocation_id] = round
        if dense and len(refused) < len(calls):
            self._remember(invocation_id, round, (turn, len(calls), 1 if refused else 0, done))

    def _remember(self, invocation_id: str, round: int, progress: tuple[int | merge.Admission, int, int, int]
                  ) -> None:
        """What this process wrote of a dense turn whose results are not all written yet."""
        if len(self._progress) >= _KNOWN_TURNS:
            self._progress.clear()
        self._progress[(invocation_id, round)] = progress

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
            if status not in FINAL:
                raise rejected(what, f"{status!r} is not a final status ({', '.join(FINAL_STATUSES)})")
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
        if progress is not None and self._group is not None and key in self._group.conflicted:
            progress = None
        if progress is not None and distinct and top < progress[1] and not mask & progress[3]:
            # A turn this process admitted, none of these results written before: its next batch, at the
            # rowid this process expects. A batch someone else wrote there (recovery closing calls of this
            # turn) makes the insert conflict, and the results are then checked call by call.
            turn, n, batch, written = progress
            group = self._group
            if group is not None and not self._conns.closed:
                group.add(merge.Results(invocation_id, round, turn, batch, len(results), errors, unknown, now,
                                        encoded, results), self._owner_id())
            else:
                row = ((turn << RESULT_BATCH_BITS) | batch, len(results), errors, unknown, now, encoded)  # type: ignore[operator]
                if not self._write_one(sql.INSERT_NEXT_RESULTS, row, what).rowcount:
                    self._progress.pop(key, None)
                    self._guarded(lambda conn: checked.finish(conn, invocation_id, round, results, now), what)
                    return
            if written | mask != (1 << n) - 1:
                self._progress[key] = (turn, n, batch + 1, written | mask)
            else:
                self._progress.pop(key, None)
            return
        if progress is not None:
            self._progress.pop(key, None)
        self.flush()
        params = (len(results), errors, unknown, now, encoded, invocation_id, round, top)

        if distinct and self._write_one(sql.INSERT_FIRST_RESULTS, params, what).rowcount:
            return
        # Anything else is checked call by call under the write lock (a later transaction: the insert
        # above changed nothing, and the check reads everything again).
        self._guarded(lambda conn: checked.finish(conn, invocation_id, round, results, now), what)

    def _guarded(self, tx: Any, what: str) -> Any:
        try:
            return self._write(tx)
        except sqlite3.IntegrityError as exc:
            raise _constraint(what, exc) from exc

    def close(self) -> None:
        """Close every connection. The process is marked settled when it leaves no open call behind,
        so later recoveries skip it."""
        key = self._owner_key
        if self._group is not None and not self._conns.closed:
            try:
                groups.detach(self._group, self._commit)
            except (TooldeckError, sqlite3.Error, OSError):
                # The journal stays on disk; the next store opened after this process ends merges it.
                logger.warning("committing the journaled records to %s at close failed", self.path, exc_info=True)
                key = None  # not settled: its calls are not all in SQLite
        if key is not None and key[0] == current_pid() and not self._conns.closed:
            with contextlib.suppress(TooldeckError, sqlite3.Error):
                self._write(lambda conn: conn.execute(
                    "UPDATE owners SET settled = 1 WHERE owner_id = ? AND NOT EXISTS (SELECT 1 FROM owner_invocations "
                    "oi JOIN turns t ON t.invocation_id = oi.invocation_id WHERE oi.owner_id = ? AND t.owner_id = ? "
                    f"AND {sql.OPEN_TURN})", (key[1], key[1], key[1])))
        self._checkpointer.stop()
        self._conns.close()


__all__ = ["SqliteRecorder"]
