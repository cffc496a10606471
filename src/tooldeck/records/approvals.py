"""Remembered approvals: confirmation answers that hold beyond their call (policy/approvals.py decides
with them; `tooldeck approvals list | revoke` shows and revokes them).

Stored in the records database (`<home>/records.sqlite`) in their own table beside the records schema
(like `error_memory.py`), so every process of a home sees an answer the moment it is committed, and a
revocation the next time a call would ask. Rows are never deleted: a revoked approval keeps its row with
`revoked_at` / `revoked_by`, so the records say who allowed what, when, and until when.
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import orjson

from tooldeck.core.errors import TooldeckError
from tooldeck.records.side_tables import BUSY_TIMEOUT_S, side_table

STORE_FILE: Final = "records.sqlite"
UNAVAILABLE: Final = "approvals.unavailable"
UNKNOWN_ID: Final = "approvals.unknown_id"
Decision = Literal["allow", "deny"]
Scope = Literal["run", "pattern", "always"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    id            TEXT PRIMARY KEY,
    created_at    REAL NOT NULL,
    decision      TEXT NOT NULL,
    scope         TEXT NOT NULL,
    tool_id       TEXT NOT NULL,
    pattern       TEXT,
    run_id        TEXT NOT NULL,
    invocation_id TEXT NOT NULL,
    call_id       TEXT NOT NULL,
    confirmer     TEXT NOT NULL,
    host          TEXT NOT NULL,
    revoked_at    REAL,
    revoked_by    TEXT
);
CREATE INDEX IF NOT EXISTS approvals_by_tool ON approvals (tool_id, revoked_at);
"""
_COLUMNS = ("id, created_at, decision, scope, tool_id, pattern, run_id, invocation_id, call_id, confirmer, host, "
            "revoked_at, revoked_by")


def _iso(at: float | None) -> str | None:
    return None if at is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


@dataclass(frozen=True, slots=True)
class RememberedApproval:
    """One row: `decision` for the calls of `tool_id` (matching `pattern`, when set) in run `run_id` (scope
    `run`) or in every run of the home (`pattern`, `always`); given by `confirmer` on `host` for `call_id`."""

    id: str
    created_at: float
    decision: Decision
    scope: Scope
    tool_id: str
    pattern: dict[str, Any] | None
    run_id: str
    invocation_id: str
    call_id: str
    confirmer: str
    host: str
    revoked_at: float | None = None
    revoked_by: str | None = None

    @property
    def pattern_key(self) -> str | None:
        """The pattern as stored (canonical JSON), a cache key for its compiled rule."""
        return None if self.pattern is None else _pattern_text(self.pattern)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "created_at": _iso(self.created_at), "decision": self.decision, "scope": self.scope,
                "tool_id": self.tool_id, "pattern": self.pattern, "run_id": self.run_id,
                "invocation_id": self.invocation_id, "call_id": self.call_id, "confirmer": self.confirmer,
                "host": self.host, "revoked_at": _iso(self.revoked_at), "revoked_by": self.revoked_by}


def _pattern_text(pattern: dict[str, Any]) -> str:
    return orjson.dumps(pattern, option=orjson.OPT_SORT_KEYS).decode()


def _row(row: Sequence[Any]) -> RememberedApproval:
    pattern = None if row[5] is None else orjson.loads(row[5])
    return RememberedApproval(row[0], row[1], row[2], row[3], row[4], pattern, *row[6:])


class ApprovalStore:
    """The approvals table of one records database. `active` (asked on every `ask` call) reads through one
    connection kept open until `close` (a connection per lookup costs about 1 ms, a query on an open one
    about 40 µs); writes open their own."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._reader: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @classmethod
    def of_home(cls, home: str | Path) -> ApprovalStore:
        return cls(Path(home) / STORE_FILE)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with side_table(self.path, _SCHEMA, UNAVAILABLE) as conn:
            yield conn

    def active(self, tool_id: str, run_id: str) -> list[RememberedApproval]:
        """The unrevoked approvals that may apply to a call of `tool_id` in run `run_id`, oldest first. A home
        with no records database has none (and this creates none)."""
        if self._reader is None and not self.path.exists():
            return []
        with self._lock:
            try:
                if self._reader is None:
                    self._reader = self._open_reader()
                rows = self._reader.execute(
                    f"SELECT {_COLUMNS} FROM approvals WHERE tool_id = ? AND revoked_at IS NULL "
                    "AND (scope != 'run' OR run_id = ?) ORDER BY created_at", (tool_id, run_id)).fetchall()
            except sqlite3.Error as exc:
                self._close_reader()
                raise TooldeckError(UNAVAILABLE, f"{self.path}: {exc}; check that the file is a tooldeck records "
                                    "database and is readable") from exc
        return [_row(r) for r in rows]

    def _open_reader(self) -> sqlite3.Connection:
        with self._connect():  # the table exists (created the first time by whoever reads first)
            pass
        return sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)

    def _close_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def close(self) -> None:
        with self._lock:
            self._close_reader()

    def add(self, decision: Decision, scope: Scope, tool_id: str, pattern: dict[str, Any] | None, run_id: str,
            invocation_id: str, call_id: str, confirmer: str, host: str,
            now: float | None = None) -> RememberedApproval:
        """Remember an answer; an identical unrevoked one (same decision, scope, tool, pattern and, for scope
        `run`, run) is returned instead of a second row."""
        at = time.time() if now is None else now
        text = None if pattern is None else _pattern_text(pattern)
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                same = conn.execute(
                    f"SELECT {_COLUMNS} FROM approvals WHERE revoked_at IS NULL AND decision = ? AND scope = ? AND "
                    "tool_id = ? AND pattern IS ? AND (scope != 'run' OR run_id = ?)",
                    (decision, scope, tool_id, text, run_id)).fetchone()
                if same is not None:
                    conn.execute("COMMIT")
                    return _row(same)
                rid = "apr_" + secrets.token_hex(6)
                conn.execute(f"INSERT INTO approvals ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
                             (rid, at, decision, scope, tool_id, text, run_id, invocation_id, call_id, confirmer,
                              host))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return RememberedApproval(rid, at, decision, scope, tool_id, pattern, run_id, invocation_id, call_id,
                                  confirmer, host)

    def list(self, include_revoked: bool = False) -> list[RememberedApproval]:
        """Every approval of the home, newest first (the revoked ones too with `include_revoked`)."""
        if not self.path.exists():
            return []
        where = "" if include_revoked else " WHERE revoked_at IS NULL"
        with self._connect() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM approvals{where} ORDER BY created_at DESC, id").fetchall()
        return [_row(r) for r in rows]

    def revoke(self, approval_id: str, by: str, now: float | None = None) -> RememberedApproval:
        """Revoke one approval: from now on no process of the home uses it. Revoking a revoked one is an error
        (`approvals.unknown_id` names what is there)."""
        at = time.time() if now is None else now
        wanted = approval_id.strip()
        if not self.path.exists():
            raise TooldeckError(UNKNOWN_ID, f"no approval {wanted!r}: {self.path} does not exist (nothing was "
                                "remembered in this home)")
        with self._connect() as conn:
            cur = conn.execute("UPDATE approvals SET revoked_at = ?, revoked_by = ? WHERE id = ? AND "
                               "revoked_at IS NULL", (at, by, wanted))
            row = conn.execute(f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (wanted,)).fetchone()
        if cur.rowcount == 1 and row is not None:
            return _row(row)
        if row is not None:
            raise TooldeckError(UNKNOWN_ID, f"approval {wanted} was already revoked at {_iso(row[11])} by {row[12]}; "
                                "`tooldeck approvals list` shows the ones in effect")
        raise TooldeckError(UNKNOWN_ID, f"no approval {wanted!r} in {self.path}; `tooldeck approvals list` shows the "
                            "ones in effect")
