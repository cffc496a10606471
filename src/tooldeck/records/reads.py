"""What `SqliteRecorder` serves that is not a turn's write: the read API (queries.py), recovery
(recovery.py, after merging the journals of dead processes: merge.py) and the run event log. Each
commits the process's journaled writes first (`flush`), so a process reads its own writes at once."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

from tooldeck.records import merge, recovery
from tooldeck.records.checked import INSERT_EVENT
from tooldeck.records.group import GroupCommit
from tooldeck.records.queries import Read, SqliteQueries
from tooldeck.records.reader import CallRecord, Event, InvocationHistory, InvocationSummary
from tooldeck.records.sqlite import dump

_INSERT_RUN_EVENT = "INSERT INTO events (invocation_id, run_id, kind, data, at) VALUES (NULL, ?, ?, ?, ?)"


class StoreReads:
    """The reads, recovery and event log of the SQLite store (a base of `SqliteRecorder`)."""

    _group: GroupCommit | None
    _read: Read
    _queries: SqliteQueries
    _write: Callable[[Callable[[sqlite3.Connection], Any]], Any]

    def flush(self) -> None:
        """Commit the journaled writes of this process now (reads do it first, so a process reads its own
        writes; the group commit does it within GROUP_COMMIT_DELAY_S)."""
        group = self._group
        if group is not None and group.pending:
            group.flush()


    # -- the run event log (also in the port) --------------------------------------------------
    def record_event(self, invocation_id: str | None, kind: str, data: dict[str, Any]) -> None:
        now = time.time()
        self.flush()
        self._write(lambda conn: conn.execute(INSERT_EVENT, (invocation_id, kind, dump(data), now)))

    def append_run_event(self, run_id: str, kind: str, data: dict[str, Any]) -> None:
        """Append to a run's event stream (kept in order; read back with `run_events`)."""
        now = time.time()
        self.flush()
        self._write(lambda conn: conn.execute(_INSERT_RUN_EVENT, (run_id, kind, dump(data), now)))

    def run_events(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        self.flush()
        return self._queries.run_events(run_id, kind)

    def run_event_log(self, run_id: str, kind_prefix: str = "") -> list[Event]:
        """The run's events (every stream, or the kinds that start with `kind_prefix`), in order, with their times."""
        self.flush()
        return self._queries.run_event_log(run_id, kind_prefix)

    # -- interrupted calls (recovery.py) ---------------------------------------------------------
    def recover(self, invocation_id: str | None = None, *, force: bool = False) -> list[CallRecord]:
        """Close the open calls whose owning process is gone (all open calls with `force`, e.g. on an
        explicit resume): `started` ones become `outcome_unknown`, `requested` ones `failed` (they never
        ran). Each gets its error result and a `call_recovered` event. Returns the calls it closed.
        First this process's journaled writes are committed and the journals of dead processes merged."""
        self.flush()
        if self._group is not None:
            merge.merge_dead(self._read, self._write, self._group.folder)
        return recovery.recover(self._read, self._write, self._queries, invocation_id, force=force)

    # -- read API (queries.py) -----------------------------------------------------------------
    def list_invocations(self, limit: int = 20, run_id: str | None = None) -> list[InvocationSummary]:
        self.flush()
        return self._queries.list_invocations(limit, run_id)

    def invocation(self, invocation_id: str) -> InvocationSummary:
        self.flush()
        return self._queries.invocation(invocation_id)

    def history(self, invocation_id: str) -> InvocationHistory:
        self.flush()
        return self._queries.history(invocation_id)

    def snapshot_json(self, snapshot_id: str) -> str:
        self.flush()
        return self._queries.snapshot_json(snapshot_id)

    def load_snapshot(self, snapshot_id: str) -> Any:
        self.flush()
        return self._queries.load_snapshot(snapshot_id)

    def events(self, invocation_id: str) -> list[Event]:
        self.flush()
        return self._queries.events(invocation_id)
