"""The journaled writes of a turn, and their merge into SQLite.

Three writes go through the journal (records/journal.py, records/group.py): the start of an invocation
whose run and snapshot are already stored, a turn's admission and a batch of its results, each as a journal
entry (a JSON list):

    ["i", invocation_id, run_id, snapshot_id, provider, scene, headless, created_at, owner_id, event]
        event: the text of its `invocation_started` event
    ["a", invocation_id, round, owner_id, requested_at, n, dense, calls, refusals]
        refusals: null, or [n, errors, unknown, recorded_at, results] (the turn's batch 0)
    ["r", invocation_id, round, batch, n, errors, unknown, recorded_at, results]

`calls` and `results` are the texts stored in the row (records/turns.py). In the process that wrote
them they are committed from memory (`apply`): the admission gives the turn id its results need. A
segment left by a dead process is merged from its entries (`merge_segment`), idempotently, because a
process may die between the commit of a batch and the deletion of its segment: an admission whose
turn is already there from the same owner, or a batch whose text the turn already holds, is skipped.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tooldeck.core.errors import TooldeckError
from tooldeck.records import checked, turns
from tooldeck.records import owner as owners
from tooldeck.records import statements as sql
from tooldeck.records.journal import Segment, decode, segments
from tooldeck.records.schema import RESULT_BATCH_BITS

logger = logging.getLogger("tooldeck.records")

OWN_INVOCATION = "INSERT INTO owner_invocations (owner_id, invocation_id) VALUES (?, ?) ON CONFLICT DO NOTHING"
_TURN_OWNER = "SELECT owner_id FROM turns WHERE invocation_id = ? AND round = ?"
_OWNER = "SELECT host, pid, token FROM owners WHERE owner_id = ?"
_UNSETTLE = "UPDATE owners SET settled = 0 WHERE owner_id = ?"

Read = Callable[[str, tuple[Any, ...]], list[Any]]
WriteTx = Callable[[Callable[[sqlite3.Connection], Any]], Any]


_INSERT_INVOCATION = ("INSERT INTO invocations (invocation_id, run_id, snapshot_id, provider, scene, headless, "
                      "created_at, owner_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_INSERT_STARTED_EVENT = "INSERT INTO events (invocation_id, kind, data, at) VALUES (?, 'invocation_started', ?, ?)"


class Started:
    """An invocation's start (its `invocations` row, its owner and its `invocation_started` event), journaled
    when its run and snapshot rows are already stored: a host that starts an invocation per call on one
    snapshot (`tooldeck serve`) then writes no SQLite transaction of its own for it."""

    __slots__ = ("at", "event", "headless", "invocation_id", "owner_id", "provider", "run_id", "scene", "snapshot_id")

    def __init__(self, invocation_id: str, run_id: str, snapshot_id: str, provider: str, scene: str, headless: int,
                 at: float, owner_id: int, event: str) -> None:
        self.invocation_id, self.run_id, self.snapshot_id = invocation_id, run_id, snapshot_id
        self.provider, self.scene, self.headless, self.at = provider, scene, headless, at
        self.owner_id, self.event = owner_id, event

    def entry(self) -> list[Any]:
        return ["i", self.invocation_id, self.run_id, self.snapshot_id, self.provider, self.scene, self.headless,
                self.at, self.owner_id, self.event]

    def row(self) -> tuple[Any, ...]:
        return (self.invocation_id, self.run_id, self.snapshot_id, self.provider, self.scene, self.headless, self.at,
                self.owner_id)

    def apply(self, conn: sqlite3.Connection, conflicted: set[tuple[str, int]] | None = None) -> None:
        conn.execute(_INSERT_INVOCATION, self.row())
        conn.execute(OWN_INVOCATION, (self.owner_id, self.invocation_id))
        conn.execute(_INSERT_STARTED_EVENT, (self.invocation_id, self.event, self.at))


class Admission:
    """A turn's admission (its `turns` row and, with refusals, batch 0 of its results)."""

    __slots__ = ("at", "batch0", "calls", "dense", "invocation_id", "n", "owner_id", "round", "turn_id")

    def __init__(self, invocation_id: str, round: int, owner_id: int, at: float, n: int, dense: int, calls: str,
                 batch0: tuple[int, int, int, float, str] | None) -> None:
        self.invocation_id, self.round, self.owner_id, self.at = invocation_id, round, owner_id, at
        self.n, self.dense, self.calls, self.batch0 = n, dense, calls, batch0
        self.turn_id: int | None = None
        """Set when committed."""

    def entry(self) -> list[Any]:
        return ["a", self.invocation_id, self.round, self.owner_id, self.at, self.n, self.dense, self.calls,
                self.batch0]

    def apply(self, conn: sqlite3.Connection, conflicted: set[tuple[str, int]] | None = None) -> None:
        turn_id: int = conn.execute(sql.INSERT_TURN, (self.invocation_id, self.round, self.owner_id, self.at, self.n,
                                                      self.dense, self.calls)).lastrowid  # type: ignore[assignment]
        if self.batch0 is not None:
            conn.execute(sql.INSERT_RESULTS, (turn_id << RESULT_BATCH_BITS, *self.batch0))
        self.turn_id = turn_id


class Results:
    """A batch of a turn's results, at the batch number its writer expects (`turn`: the turn id, or the
    admission not committed when the batch was written)."""

    __slots__ = ("at", "batch", "entries", "errors", "invocation_id", "n", "results", "round", "turn", "unknown")

    def __init__(self, invocation_id: str, round: int, turn: int | Admission, batch: int, n: int, errors: int,
                 unknown: int, at: float, results: str, entries: list[list[Any]]) -> None:
        self.invocation_id, self.round, self.turn, self.batch = invocation_id, round, turn, batch
        self.n, self.errors, self.unknown, self.at, self.results = n, errors, unknown, at, results
        self.entries = entries

    def entry(self) -> list[Any]:
        return ["r", self.invocation_id, self.round, self.batch, self.n, self.errors, self.unknown, self.at,
                self.results]

    def apply(self, conn: sqlite3.Connection, conflicted: set[tuple[str, int]]) -> None:
        """`conflicted`: the turns whose expected batch someone else wrote first (a recovery that closed
        some of their calls); their batches from then on are checked call by call."""
        turn = self.turn
        turn_id = turn if type(turn) is int else turn.turn_id  # type: ignore[union-attr]
        key = (self.invocation_id, self.round)
        if turn_id is not None and key not in conflicted and conn.execute(sql.INSERT_NEXT_RESULTS, (
                (turn_id << RESULT_BATCH_BITS) | self.batch, self.n, self.errors, self.unknown, self.at,
                self.results)).rowcount:
            return
        conflicted.add(key)
        checked.finish(conn, self.invocation_id, self.round, self.entries, self.at)


class Conflict(Exception):
    """`commit` met a batch someone else wrote first: the writes go through `apply`, one by one."""


_INSERT_TURN_AT = ("INSERT INTO turns (turn_id, invocation_id, round, owner_id, requested_at, n, dense, calls) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_INSERT_BATCHES = ("INSERT INTO results (result_id, n, errors, unknown, recorded_at, results) "
                   "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")


Write = Started | Admission | Results


def commit(conn: sqlite3.Connection, writes: list[Write], conflicted: set[tuple[str, int]]) -> None:
    """Every write of a group commit in a few statements run by SQLite (`executemany`), inside the
    caller's write transaction: the commit thread holds the GIL only to build the rows. Turn ids are
    given here, after the largest one stored, which is what SQLite would give them: the transaction
    holds the write lock. Raises `Conflict` (the caller rolls back) when a batch's row was taken."""
    next_id: int = conn.execute("SELECT coalesce(max(turn_id), 0) + 1 FROM turns").fetchone()[0]
    turn_rows = []
    batch_rows = []
    started = []
    for w in writes:
        if type(w) is Started:
            started.append(w)
        elif type(w) is Admission:
            turn_id = w.turn_id = next_id
            next_id += 1
            turn_rows.append((turn_id, w.invocation_id, w.round, w.owner_id, w.at, w.n, w.dense, w.calls))
            if w.batch0 is not None:
                batch_rows.append((turn_id << RESULT_BATCH_BITS, *w.batch0))
        else:
            turn = w.turn  # type: ignore[union-attr]
            turn_id = turn if type(turn) is int else turn.turn_id  # type: ignore[union-attr,assignment]
            if turn_id is None or (w.invocation_id, w.round) in conflicted:
                raise Conflict
            batch_rows.append(((turn_id << RESULT_BATCH_BITS) | w.batch, w.n, w.errors, w.unknown,  # type: ignore[union-attr]
                               w.at, w.results))  # type: ignore[union-attr]
    if started:  # before the turns that reference them
        conn.executemany(_INSERT_INVOCATION, [w.row() for w in started])
        conn.executemany(OWN_INVOCATION, [(w.owner_id, w.invocation_id) for w in started])
        conn.executemany(_INSERT_STARTED_EVENT, [(w.invocation_id, w.event, w.at) for w in started])
    if turn_rows:
        conn.executemany(_INSERT_TURN_AT, turn_rows)
    if batch_rows and conn.executemany(_INSERT_BATCHES, batch_rows).rowcount != len(batch_rows):
        raise Conflict


def commit_writes(write: WriteTx, writes: list[Write], conflicted: set[tuple[str, int]]) -> None:
    """The group commit: every queued write in one transaction (`commit`). A batch someone else wrote
    first, or a write the store refuses (a round another process recorded meanwhile), fails them all:
    then they go through `apply` in one transaction, and should one be refused, each in its own, the
    refused ones reported and dropped."""
    try:
        write(lambda conn: commit(conn, writes, conflicted))
        return
    except (Conflict, sqlite3.IntegrityError, TooldeckError) as exc:
        if isinstance(exc, TooldeckError) and exc.code != "records.write_rejected":
            raise
    try:
        write(lambda conn: [w.apply(conn, conflicted) for w in writes])
    except (sqlite3.IntegrityError, TooldeckError) as exc:
        if isinstance(exc, TooldeckError) and exc.code != "records.write_rejected":
            raise
        for w in writes:
            try:
                write(lambda conn, w=w: w.apply(conn, conflicted))  # type: ignore[misc]
            except (sqlite3.IntegrityError, TooldeckError) as refused:
                if isinstance(refused, TooldeckError) and refused.code != "records.write_rejected":
                    raise
                logger.error("the records store refused a journaled write (%s) of %s: %s",
                             f"round {w.round}" if type(w) is not Started else "its start", w.invocation_id, refused)


# -- segments of dead processes ------------------------------------------------------------------

def merge_dead(read: Read, write: WriteTx, folder: Path) -> int:
    """Merge the journal segments whose process is certainly gone (records/owner.py), oldest first,
    one transaction each; returns how many entries were merged. Segments of live processes (this one
    included) are left to their owner."""
    merged = 0
    alive: dict[int, bool] = {}
    for segment in segments(folder):
        live = alive.get(segment.owner_id)
        if live is None:
            rows = read(_OWNER, (segment.owner_id,))
            # No owner row: not this store's journal (the folder outlived its store); leave it alone.
            live = alive[segment.owner_id] = not rows or owners.is_alive(owners.Owner(*rows[0]))
        if not live:
            merged += merge_segment(write, segment)
    return merged


def merge_segment(write: WriteTx, segment: Segment) -> int:
    try:
        data = segment.path.read_bytes()
    except FileNotFoundError:
        return 0  # another process merged it first
    decoded = decode(data)
    # After the last commit marker: what the process had not committed yet (or committed without marking).
    upto = max((e[1] for e in decoded.entries if e[0] == "c" and len(e) == 2 and type(e[1]) is int), default=0)
    entries = [e for e, start in zip(decoded.entries, decoded.starts, strict=True) if start >= upto and e[0] != "c"]
    if entries:
        write(lambda conn: _merge(conn, segment.owner_id, entries, segment.path))
    if decoded.problem is None:
        segment.path.unlink(missing_ok=True)
    else:
        kept = segment.path.with_name(segment.path.name + ".bad")
        segment.path.replace(kept)
        logger.warning("records journal %s ends in %s: the entries before it were merged (%d not yet in the "
                       "store), the file is kept as %s", segment.path, decoded.problem, len(entries), kept)
    return len(entries)


def _merge(conn: sqlite3.Connection, owner_id: int, entries: list[list[Any]], path: Path) -> None:
    for i, entry in enumerate(entries):
        conn.execute("SAVEPOINT entry")
        try:
            _merge_entry(conn, owner_id, entry)
        except (TooldeckError, sqlite3.IntegrityError, ValueError, TypeError, IndexError) as exc:
            conn.execute("ROLLBACK TO entry")
            logger.warning("records journal %s: entry %d was not merged: %s", path, i, exc)
        conn.execute("RELEASE entry")
    # Its admissions may have brought calls that were open when it died: recovery must look at it again.
    conn.execute(_UNSETTLE, (owner_id,))


def _merge_entry(conn: sqlite3.Connection, owner_id: int, entry: list[Any]) -> None:
    kind = entry[0]
    if kind == "i":
        _, invocation_id, run_id, snapshot_id, provider, scene, headless, at, writer, event = entry
        if conn.execute("SELECT 1 FROM invocations WHERE invocation_id = ?", (invocation_id,)).fetchone():
            return  # merged before its segment was deleted
        Started(invocation_id, run_id, snapshot_id, provider, scene, headless, at, writer, event).apply(conn)
    elif kind == "a":
        _, invocation_id, round, writer, at, n, dense, calls, batch0 = entry
        row = conn.execute(_TURN_OWNER, (invocation_id, round)).fetchone()
        if row is not None:
            if row[0] == writer:
                return  # merged before its segment was deleted
            raise checked.rejected(f"round {round} of {invocation_id}", "another process recorded that round")
        conn.execute(OWN_INVOCATION, (writer, invocation_id))
        Admission(invocation_id, round, writer, at, n, dense, calls, tuple(batch0) if batch0 else None).apply(conn)
    elif kind == "r":
        _, invocation_id, round, _batch, _n, _errors, _unknown, at, text = entry
        row = conn.execute(sql.TURN, (invocation_id, round)).fetchone()
        if row is not None:
            first = row[0] << RESULT_BATCH_BITS
            if any(stored == text for _id, _at, stored in conn.execute(sql.BATCHES, (first, first | sql.BATCH_MASK))):
                return  # merged before its segment was deleted
        checked.finish(conn, invocation_id, round, turns.decode(text), at)
    else:
        raise ValueError(f"unknown entry kind {kind!r}")
