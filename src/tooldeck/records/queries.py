"""The read side of the SQLite records store: the `RecordReader` API (`records/reader.py`) that
replay, resume and the CLI use, and the run event streams. Reads only; rows become records in
`rows.py`."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from tooldeck.core.errors import TooldeckError
from tooldeck.records import rows
from tooldeck.records import statements as sql
from tooldeck.records.reader import CallRecord, Event, InvocationHistory, InvocationSummary
from tooldeck.records.schema import RESULT_BATCH_BITS

Read = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


def reader(conn: Callable[[], sqlite3.Connection], path: Path) -> Read:
    """`read(sql, params)` on the calling thread's connection; SQLite errors become `records.read_failed`."""

    def read(statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return conn().execute(statement, params).fetchall()
        except sqlite3.OperationalError as exc:
            raise TooldeckError("records.read_failed", f"reading {path} failed: {exc}") from exc

    return read


class SqliteQueries:
    """The read API over one store (`SqliteRecorder` exposes these methods as its own)."""

    def __init__(self, read: Read, path: Path) -> None:
        self._read = read
        self.path = path

    def list_invocations(self, limit: int = 20, run_id: str | None = None) -> list[InvocationSummary]:
        where, params = ("WHERE i.run_id = ?", (run_id, limit)) if run_id else ("", (limit,))
        found = self._read(f"SELECT {rows.SUMMARY_COLUMNS} FROM invocations i {where} "
                           "ORDER BY i.created_at DESC, i.rowid DESC LIMIT ?", params)
        return [rows.summary(r) for r in found]

    def invocation(self, invocation_id: str) -> InvocationSummary:
        found = self._read(f"SELECT {rows.SUMMARY_COLUMNS} FROM invocations i WHERE i.invocation_id = ?",
                           (invocation_id,))
        if found:
            return rows.summary(found[0])
        raise TooldeckError("records.unknown_invocation", f"no invocation {invocation_id!r} in {self.path}; "
                            "list the recorded ones with `tooldeck records list`")

    def history(self, invocation_id: str) -> InvocationHistory:
        summary = self.invocation(invocation_id)
        turn_rows = self._read(f"SELECT {rows.TURN_COLUMNS} WHERE t.invocation_id = ? ORDER BY t.round",
                               (invocation_id,))
        batches: rows.Batches = {}
        for result_id, at, data in self._read(
                f"SELECT r.result_id, r.recorded_at, r.results FROM turns t JOIN results r ON {sql.RESULTS_OF_TURN} "
                "WHERE t.invocation_id = ? ORDER BY r.result_id", (invocation_id,)):
            batches.setdefault(result_id >> RESULT_BATCH_BITS, []).append((at, data))
        calls: list[CallRecord] = []
        for row in turn_rows:
            calls += rows.calls(row, batches.get(row[0], ()))
        return InvocationHistory(summary, calls)

    def snapshot_json(self, snapshot_id: str) -> str:
        found = self._read("SELECT json FROM snapshots WHERE snapshot_id = ?", (snapshot_id,))
        if not found:
            raise TooldeckError("records.unknown_snapshot", f"no snapshot {snapshot_id!r} in {self.path}")
        return found[0][0]

    def load_snapshot(self, snapshot_id: str) -> Any:
        from tooldeck.snapshot.snapshot import Snapshot

        return Snapshot.from_json(self.snapshot_json(snapshot_id))

    def events(self, invocation_id: str) -> list[Event]:
        found = self._read("SELECT seq, invocation_id, kind, data, at FROM events WHERE invocation_id = ? "
                           "ORDER BY seq", (invocation_id,))
        return [Event(r[0], r[1], r[2], orjson.loads(r[3]), r[4]) for r in found]

    def run_events(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        found = self._read("SELECT data FROM events WHERE run_id = ? AND kind = ? ORDER BY seq", (run_id, kind))
        return [orjson.loads(r[0]) for r in found]

    def run_event_log(self, run_id: str, kind_prefix: str = "") -> list[Event]:
        """Every event of a run's streams whose kind starts with `kind_prefix`, in the order appended."""
        found = self._read("SELECT seq, invocation_id, kind, data, at FROM events WHERE run_id = ? "
                           "AND substr(kind, 1, ?) = ? ORDER BY seq", (run_id, len(kind_prefix), kind_prefix))
        return [Event(r[0], r[1], r[2], orjson.loads(r[3]), r[4]) for r in found]

    def open_calls(self, where: str, params: tuple[Any, ...]) -> list[tuple[int, CallRecord]]:
        """(turn_id, call) of the open calls in the turns matching `where` (on `turns t`)."""
        found = self._read(f"SELECT {rows.TURN_COLUMNS} WHERE {where} AND {sql.OPEN_TURN} "
                           "ORDER BY t.invocation_id, t.round", params)
        out = []
        for row in found:
            first = row[0] << RESULT_BATCH_BITS
            batches = [(at, data) for _id, at, data in self._read(sql.BATCHES, (first, first | sql.BATCH_MASK))]
            out += [(row[0], c) for c in rows.calls(row, batches) if c.is_open]
        return out
