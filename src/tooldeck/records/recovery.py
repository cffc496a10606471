"""Recovery of interrupted calls in the SQLite records store: a call whose result never arrived
(its process is gone, or the host resumes the invocation) is closed with an error result and a
`call_recovered` event, and is never run again (docs/records.md, "Interrupted work")."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

from tooldeck.records import owner as owners
from tooldeck.records import statements as sql
from tooldeck.records import turns
from tooldeck.records.checked import INSERT_EVENT, closed, counts
from tooldeck.records.interrupted import interrupted_outcome
from tooldeck.records.queries import Read, SqliteQueries
from tooldeck.records.reader import CallRecord, ResultRecord
from tooldeck.records.schema import RESULT_BATCH_BITS
from tooldeck.records.sqlite import dump

Write = Callable[[Callable[[sqlite3.Connection], Any]], Any]
Plan = dict[int, list[tuple[CallRecord, tuple[str, str, str, dict[str, Any]]]]]
"""turn_id → its open calls, each with the outcome it gets (status, error code, message, structured)."""


def recover(read: Read, write: Write, queries: SqliteQueries, invocation_id: str | None = None, *,
            force: bool = False) -> list[CallRecord]:
    """Close the open calls whose owning process is gone (all open calls of the invocation, or of
    every owner, with `force`): `started` ones become `outcome_unknown`, `requested` ones `failed`
    (they never ran). Returns the calls it closed. `write` runs one write transaction."""
    settle: list[int] = []
    if invocation_id is not None:
        open_calls = queries.open_calls("t.invocation_id = ?", (invocation_id,))
    else:
        open_calls = []
        for owner_id, host, pid, token in read("SELECT owner_id, host, pid, token FROM owners WHERE settled = 0", ()):
            dead = not owners.is_alive(owners.Owner(host, pid, token))
            if dead:
                settle.append(owner_id)
            if dead or force:
                open_calls += queries.open_calls(
                    "t.owner_id = ? AND t.invocation_id IN (SELECT invocation_id FROM owner_invocations "
                    "WHERE owner_id = ?)", (owner_id, owner_id))
    if not force:
        alive: dict[owners.Owner, bool] = {}
        open_calls = [(t, c) for t, c in open_calls
                      if c.owner is not None and not alive.setdefault(c.owner, owners.is_alive(c.owner))]
    if not open_calls and not settle:
        return []
    now = time.time()
    plans: Plan = {}
    for turn_id, c in open_calls:
        plans.setdefault(turn_id, []).append((c, interrupted_outcome(c.call_name, c.status, c.raw_arguments)))
    done: set[tuple[int, int]] = write(lambda conn: _close(conn, plans, settle, force, now))
    closed_calls = []
    for turn_id, plan in plans.items():
        for c, (status, code, message, structured) in plan:
            if (turn_id, c.index) in done:
                c.status, c.finished_at = status, None
                c.result = ResultRecord(message, structured, True, code, [], None, [], now)
                closed_calls.append(c)
    return closed_calls


def _close(conn: sqlite3.Connection, plans: Plan, settle: list[int], force: bool, now: float) -> set[tuple[int, int]]:
    """The write transaction: each planned call still open now gets its result; returns (turn_id, index)
    of the calls it closed."""
    done: set[tuple[int, int]] = set()
    for turn_id, plan in plans.items():
        already, batch = closed(conn, turn_id)  # under the write lock: what is still open now
        entries = []
        for c, (status, code, message, structured) in plan:
            if c.index in already:
                continue
            # No finish time: when (or whether) the call ended is unknown, and a duration up to the
            # recovery would be invented.
            entries.append([c.index, status, None, None, None, message, structured, True, code, None, None, None])
            conn.execute(INSERT_EVENT, (c.invocation_id, "call_recovered", dump({
                "round": c.round, "index": c.index, "call_id": c.call_id, "was": c.status, "status": status,
                "forced": force}), now))
            done.add((turn_id, c.index))
        if entries:
            errors, unknown = counts(entries)
            conn.execute(sql.INSERT_RESULTS, ((turn_id << RESULT_BATCH_BITS) | batch, len(entries), errors, unknown,
                                              now, turns.encode_results(entries)))
    conn.executemany("UPDATE owners SET settled = 1 WHERE owner_id = ?", [(o,) for o in settle])
    return done
