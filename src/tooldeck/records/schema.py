"""The SQLite schema of the records store and its forward migrations (PRAGMA user_version).

Migration N brings the store from version N-1 to N; each runs once, in one transaction, and never
touches tables this module does not own (other modules, e.g. MCP registrations, keep their own
tables in the same file). A step is SQL, or a function of the connection for data that SQL alone
cannot move.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from tooldeck.core.errors import TooldeckError
from tooldeck.records import turns as entries
from tooldeck.records.sqlite import load, untext

RESULT_BATCH_BITS = 20
"""`results.result_id` is `turn_id << RESULT_BATCH_BITS | batch`: a turn's results are a rowid range
(no index to maintain), and batch 0 can only be written once."""

Step = str | Callable[[sqlite3.Connection], None]

_FINAL = ("completed", "failed", "outcome_unknown")


def _v2_calls_to_turns(conn: sqlite3.Connection) -> None:
    """Move the v2 `calls` and `results` rows (one per call) into the v3 `turns` and `results` rows
    (one per turn and per batch of results), keeping every value."""
    rows = conn.cursor().execute(  # its own cursor: read row by row while the turns are written
        "SELECT c.invocation_id, c.round, c.idx, c.call_id, c.call_name, c.tool_id, c.raw_arguments, c.arguments, "
        "c.status, c.requested_at, c.started_at, c.finished_at, c.owner_id, r.content, r.structured, r.is_error, "
        "r.error_code, r.resource_refs, r.raw_result, r.effects, r.recorded_at "
        "FROM calls c LEFT JOIN results_v2 r ON r.invocation_id = c.invocation_id AND r.round = c.round "
        "AND r.idx = c.idx ORDER BY c.invocation_id, c.round, c.idx")
    turn: list[Any] = []
    for row in rows:
        if turn and (row[0], row[1]) != (turn[0][0], turn[0][1]):
            _write_v3_turn(conn, turn)
            turn = []
        turn.append(row)
    if turn:
        _write_v3_turn(conn, turn)


def _write_v3_turn(conn: sqlite3.Connection, rows: list[Any]) -> None:
    invocation_id, round_no = rows[0][0], rows[0][1]
    calls: list[list[Any]] = []
    # A v2 round was inserted by one statement: one owner and one request time for all its calls.
    owner_id = next((r[12] for r in rows if r[12] is not None), None)
    requested_at = min(r[9] for r in rows)
    batches: dict[float, list[list[Any]]] = {}
    for (_inv, _round, idx, call_id, call_name, tool_id, raw, arguments, status, _req, started_at, finished_at,
         _owner, content, structured, is_error, error_code, refs, raw_result, effects, recorded_at) in rows:
        entry = [idx, untext(call_id), untext(call_name), untext(raw)]
        if status == "started" or tool_id is not None or arguments is not None or started_at is not None:
            entry += [tool_id, load(arguments), started_at]
        calls.append(entry)
        if status not in _FINAL and content is None:
            continue
        final = status if status in _FINAL else "failed" if is_error else "completed"
        when = recorded_at if recorded_at is not None else finished_at if finished_at is not None else requested_at
        batches.setdefault(when, []).append(
            [idx, final, None, None, finished_at, untext(content), load(structured),
             None if is_error is None else bool(is_error), error_code, load(refs), load(raw_result), load(effects)])
    dense = int([c[0] for c in calls] == list(range(len(calls))))
    turn_id = conn.execute(
        "INSERT INTO turns (invocation_id, round, owner_id, requested_at, n, dense, calls) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (invocation_id, round_no, owner_id, requested_at, len(calls), dense, entries.encode_calls(calls))).lastrowid
    for batch, (when, results) in enumerate(sorted(batches.items())):
        conn.execute("INSERT INTO results (result_id, n, errors, unknown, recorded_at, results) "
                     "VALUES (?, ?, ?, ?, ?, ?)",
                     ((turn_id << RESULT_BATCH_BITS) | batch, len(results), sum(1 for r in results if r[7]),
                      sum(1 for r in results if r[1] == "outcome_unknown"), when, entries.encode_results(results)))


_V5_TOOL_ID = "json_extract(entry, '$[4]')"
_STARTED_TOOL_ID = "CASE WHEN json_array_length(entry) >= 7 THEN json_extract(entry, '$[4]') END"
"""A requested entry may end with the provider slot at $[4] (v6): only a started entry has a tool id there."""
_PROVIDER = ("CASE json_array_length(entry) WHEN 5 THEN json_extract(entry, '$[4]') "
             "WHEN 8 THEN json_extract(entry, '$[7]') END AS provider, ")


def _calls_view(started_at: str, entry_tool_id: str = _V5_TOOL_ID, provider: str = "") -> str:
    """`calls_view`: one row per call (its first result joined), `started_at` being the given expression."""
    return f"""CREATE VIEW calls_view AS
        SELECT invocation_id, round, json_extract(entry, '$[0]') AS idx, json_extract(entry, '$[1]') AS call_id,
               json_extract(entry, '$[2]') AS call_name,
               coalesce(json_extract(result, '$[2]'), {entry_tool_id}) AS tool_id,
               json_extract(entry, '$[3]') AS raw_arguments, json_extract(entry, '$[5]') AS arguments,
               coalesce(json_extract(result, '$[1]'),
                        CASE WHEN json_array_length(entry) >= 7 THEN 'started' ELSE 'requested' END) AS status,
               requested_at, {started_at} AS started_at,
               json_extract(result, '$[4]') AS finished_at, json_extract(result, '$[5]') AS content,
               json_extract(result, '$[7]') AS is_error, {provider}json_extract(result, '$[8]') AS error_code
        FROM (SELECT t.invocation_id, t.round, t.requested_at, c.value AS entry,
                     (SELECT e.value FROM results r, json_each(r.results) e
                      WHERE r.result_id BETWEEN t.turn_id << {RESULT_BATCH_BITS}
                                            AND (t.turn_id << {RESULT_BATCH_BITS}) + {(1 << RESULT_BATCH_BITS) - 1}
                        AND json_extract(e.value, '$[0]') = json_extract(c.value, '$[0]')
                      ORDER BY r.result_id LIMIT 1) AS result
              FROM turns t, json_each(t.calls) c)"""


MIGRATIONS: tuple[tuple[Step, ...], ...] = (
    # 1: the initial schema.
    (
        """CREATE TABLE runs (
            run_id      TEXT PRIMARY KEY,
            created_at  REAL NOT NULL
        )""",
        """CREATE TABLE snapshots (
            snapshot_id TEXT PRIMARY KEY,
            provider    TEXT NOT NULL,
            json        TEXT NOT NULL,
            created_at  REAL NOT NULL
        )""",
        """CREATE TRIGGER snapshots_write_once BEFORE UPDATE ON snapshots
           BEGIN SELECT RAISE(ABORT, 'records.snapshot_write_once: snapshots are write-once'); END""",
        """CREATE TABLE owners (
            owner_id    INTEGER PRIMARY KEY,
            host        TEXT NOT NULL,
            pid         INTEGER NOT NULL,
            token       TEXT NOT NULL,
            first_seen  REAL NOT NULL,
            settled     INTEGER NOT NULL DEFAULT 0,
            UNIQUE (host, pid, token)
        )""",
        # Which processes wrote calls of which invocation: recovery looks for open calls only in
        # the invocations of unsettled owners, so the hot path maintains no index of open calls.
        """CREATE TABLE owner_invocations (
            owner_id      INTEGER NOT NULL REFERENCES owners (owner_id),
            invocation_id TEXT NOT NULL REFERENCES invocations (invocation_id),
            PRIMARY KEY (owner_id, invocation_id)
        ) WITHOUT ROWID""",
        """CREATE TABLE invocations (
            invocation_id TEXT PRIMARY KEY,
            run_id        TEXT NOT NULL REFERENCES runs (run_id),
            snapshot_id   TEXT NOT NULL REFERENCES snapshots (snapshot_id),
            provider      TEXT NOT NULL,
            scene         TEXT NOT NULL,
            headless      INTEGER NOT NULL,
            created_at    REAL NOT NULL,
            owner_id      INTEGER REFERENCES owners (owner_id)
        )""",
        "CREATE INDEX invocations_recent ON invocations (created_at)",
        "CREATE INDEX invocations_run ON invocations (run_id, created_at)",
        """CREATE TABLE calls (
            invocation_id TEXT NOT NULL REFERENCES invocations (invocation_id),
            round         INTEGER NOT NULL,
            idx           INTEGER NOT NULL,
            call_id       TEXT NOT NULL,
            call_name     TEXT NOT NULL,
            tool_id       TEXT,
            raw_arguments BLOB,         -- BLOB affinity: stored exactly as bound, never coerced
            arguments     TEXT,
            status        TEXT NOT NULL CHECK (status IN
                              ('requested', 'started', 'completed', 'failed', 'outcome_unknown')),
            requested_at  REAL NOT NULL,
            started_at    REAL,
            finished_at   REAL,
            owner_id      INTEGER REFERENCES owners (owner_id),
            PRIMARY KEY (invocation_id, round, idx)
        ) WITHOUT ROWID""",
        """CREATE TABLE results (
            invocation_id TEXT NOT NULL,
            round         INTEGER NOT NULL,
            idx           INTEGER NOT NULL,
            content       TEXT NOT NULL,
            structured    TEXT,
            is_error      INTEGER NOT NULL,
            error_code    TEXT,
            resource_refs TEXT,
            raw_result    TEXT,
            effects       TEXT,
            recorded_at   REAL NOT NULL,
            PRIMARY KEY (invocation_id, round, idx),
            FOREIGN KEY (invocation_id, round, idx) REFERENCES calls (invocation_id, round, idx)
        ) WITHOUT ROWID""",
        """CREATE TABLE events (
            seq           INTEGER PRIMARY KEY,
            invocation_id TEXT,
            kind          TEXT NOT NULL,
            data          TEXT NOT NULL,
            at            REAL NOT NULL
        )""",
        "CREATE INDEX events_invocation ON events (invocation_id, seq)",
    ),
    # 2: run-scoped event streams (background tasks and their reports survive a restart in the store).
    (
        "ALTER TABLE events ADD COLUMN run_id TEXT",
        "CREATE INDEX events_run ON events (run_id, kind, seq)",
    ),
    # 3: a turn's calls in one row and each batch of its results in one row, insert-only: the hot
    # path writes one row per transaction (see records/turns.py for the entries).
    (
        """CREATE TABLE turns (
            turn_id       INTEGER PRIMARY KEY,
            invocation_id TEXT NOT NULL REFERENCES invocations (invocation_id),
            round         INTEGER NOT NULL,
            owner_id      INTEGER REFERENCES owners (owner_id),
            requested_at  REAL NOT NULL,
            n             INTEGER NOT NULL,  -- entries in `calls`
            dense         INTEGER NOT NULL,  -- 1 when their indexes are exactly 0 .. n-1
            calls         TEXT NOT NULL      -- JSON array of call entries
        )""",
        "CREATE UNIQUE INDEX turns_round ON turns (invocation_id, round)",
        "ALTER TABLE results RENAME TO results_v2",
        # Written only by INSERT ... SELECT from its turn (or under the write lock after reading it),
        # so every batch belongs to a turn without a foreign key check per write.
        """CREATE TABLE results (
            result_id   INTEGER PRIMARY KEY,  -- turn_id << 20 | batch number within the turn
            n           INTEGER NOT NULL,     -- entries in `results`
            errors      INTEGER NOT NULL,     -- of them with is_error
            unknown     INTEGER NOT NULL,     -- of them outcome_unknown
            recorded_at REAL NOT NULL,
            results     TEXT NOT NULL         -- JSON array of result entries, at most one per call
        )""",
        _v2_calls_to_turns,
        "DROP TABLE results_v2",
        "DROP TABLE calls",
    ),
    # 4: a read-only view with one row per call, for ad-hoc SQL (`sqlite3 records.sqlite`); the
    # runtime never reads it. Its columns follow the JSON entries of records/turns.py.
    (_calls_view("coalesce(json_extract(entry, '$[6]'), json_extract(result, '$[3]'))"),),
    # 5: a call's start time is its result's (when the tool started) before the turn's (its admission),
    # as the read API has it since results are written while a turn runs.
    ("DROP VIEW calls_view",
     _calls_view("coalesce(json_extract(result, '$[3]'), json_extract(entry, '$[6]'))")),
    # 6: a call entry may end with a provider slot (provider items and data to send back on replay,
    # records/turns.py): the view takes a tool id only from a started entry and shows the slot.
    ("DROP VIEW calls_view",
     _calls_view("coalesce(json_extract(result, '$[3]'), json_extract(entry, '$[6]'))", _STARTED_TOOL_ID, _PROVIDER)),
    # 7: `events_run` indexes only the run-scoped events (the reads that use it ask for a run_id): an
    # invocation's own events (`invocation_started` on every invocation, one per served call) leave it
    # alone, one B-tree page fewer in the commit of each.
    ("DROP INDEX events_run",
     "CREATE INDEX events_run ON events (run_id, kind, seq) WHERE run_id IS NOT NULL"),
)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the store to SCHEMA_VERSION inside the caller's write transaction; returns the old version."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise TooldeckError(
            "records.schema_too_new",
            f"the records store has schema version {version}, this tooldeck knows up to {SCHEMA_VERSION}; "
            "upgrade tooldeck or point --home at another directory",
        )
    for target in range(version + 1, SCHEMA_VERSION + 1):
        for step in MIGRATIONS[target - 1]:
            if isinstance(step, str):
                conn.execute(step)
            else:
                step(conn)
        conn.execute(f"PRAGMA user_version = {target}")
    return version
