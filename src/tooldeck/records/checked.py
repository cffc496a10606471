"""Writes of the SQLite records store that are checked call by call under the write lock: what the
fast statements of `store.py` hand over when a turn is not the common case (a later batch, a sparse
turn, a result of a call already closed or never recorded), `calls_started`, and the helpers the
writers and recovery share. Each function runs inside the caller's write transaction."""

from __future__ import annotations

import sqlite3
from typing import Any

from tooldeck.core.errors import TooldeckError
from tooldeck.records import statements as sql
from tooldeck.records import turns
from tooldeck.records.port import FinishedCall, StartedCall
from tooldeck.records.reader import FINAL_STATUSES
from tooldeck.records.schema import RESULT_BATCH_BITS
from tooldeck.records.sqlite import dump

FINAL = frozenset(FINAL_STATUSES)
INSERT_EVENT = "INSERT INTO events (invocation_id, kind, data, at) VALUES (?, ?, ?, ?)"


def rejected(what: str, why: str) -> TooldeckError:
    return TooldeckError("records.write_rejected", f"the records store rejected {what}: {why}")


def counts(results: list[list[Any]]) -> tuple[int, int]:
    """(errors, unknown outcomes) of result entries."""
    return sum(1 for e in results if e[7]), sum(1 for e in results if e[1] == "outcome_unknown")


def result_entry(c: FinishedCall, what: str) -> list[Any]:
    if c.status not in FINAL:
        raise rejected(what, f"{c.status!r} is not a final status ({', '.join(FINAL_STATUSES)})")
    return [c.index, c.status, c.tool_id, c.started_at, c.finished_at, c.content, c.structured, bool(c.is_error),
            c.error_code, c.resource_refs or None, c.raw_result, c.effects or None]


def closed(conn: sqlite3.Connection, turn_id: int) -> tuple[set[int], int]:
    """(indexes of the turn's calls that have a result, the turn's next batch number)."""
    first = turn_id << RESULT_BATCH_BITS
    done: set[int] = set()
    batch = 0
    for result_id, _at, data in conn.execute(sql.BATCHES, (first, first | sql.BATCH_MASK)):
        done.update(entry[0] for entry in turns.decode(data))
        batch = (result_id & sql.BATCH_MASK) + 1
    if batch > sql.BATCH_MASK:
        raise rejected(f"turn {turn_id}", f"a turn holds at most {sql.BATCH_MASK + 1} batches of results")
    return done, batch


def start(conn: sqlite3.Connection, invocation_id: str, round: int, calls: list[StartedCall], at: float) -> None:
    """`calls_started` (hosts that record the steps apart): the turn's row gets the admitted calls'
    tool ids and arguments; calls already started or closed are left as they are."""
    row = conn.execute(sql.TURN, (invocation_id, round)).fetchone()
    if row is None:
        return
    turn_id, data = row
    entries = turns.decode(data)
    starting = {c.index: c for c in calls}
    done, _batch = closed(conn, turn_id)
    changed = False
    for k, entry in enumerate(entries):
        s = starting.get(entry[0])
        if s is not None and len(entry) < turns.STARTED_LEN and entry[0] not in done:
            entries[k] = [*entry[:4], s.tool_id, s.arguments, at, *entry[4:5]]  # the provider slot stays last
            changed = True
    if changed:
        conn.execute("UPDATE turns SET calls = ? WHERE turn_id = ?", (turns.encode_calls(entries), turn_id))


def finish(conn: sqlite3.Connection, invocation_id: str, round: int, results: list[list[Any]], now: float) -> None:
    """Result entries call by call: a later batch of a turn, a sparse turn, results of calls already
    closed (recovered as interrupted: each goes to a `late_result` event, the recorded outcome stays), or
    results of calls never recorded (the whole batch is rejected)."""
    what = f"round {round} of {invocation_id}"
    row = conn.execute(sql.TURN, (invocation_id, round)).fetchone()
    if row is None:
        raise rejected(what, "no calls of that round were recorded; record them (calls_admitted) first")
    turn_id, data = row
    call_ids = {entry[0]: entry[1] for entry in turns.decode(data)}
    done, batch = closed(conn, turn_id)
    fresh: list[list[Any]] = []
    late: list[list[Any]] = []
    for entry in results:
        index = entry[0]
        if index not in call_ids:
            raise rejected(what, f"call {index} was never recorded")
        if index in done:
            late.append(entry)
        else:
            done.add(index)
            fresh.append(entry)
    if fresh:
        errors, unknown = counts(fresh)
        conn.execute(sql.INSERT_RESULTS, ((turn_id << RESULT_BATCH_BITS) | batch, len(fresh), errors, unknown,
                                          now, turns.encode_results(fresh)))
    for entry in late:
        conn.execute(INSERT_EVENT, (invocation_id, "late_result", dump({
            "round": round, "index": entry[0], "call_id": call_ids[entry[0]], "status": entry[1],
            "content": entry[5], "is_error": entry[7], "error_code": entry[8], "raw_result": entry[10]}), now))
