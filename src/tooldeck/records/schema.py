"""The SQLite schema of the records store and its forward migrations (PRAGMA user_version).

Migration N brings the store from version N-1 to N; each runs once, in one transaction, and never
touches tables this module does not own (other modules, e.g. MCP registrations, keep their own
tables in the same file). A step is SQL, or a function of the connection for data that SQL alone
cannot move.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from tooldeck.core.errors import TooldeckError

Step = str | Callable[[sqlite3.Connection], None]

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
