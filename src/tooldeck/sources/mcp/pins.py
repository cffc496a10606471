"""Pinned tool definitions: the approved definition of each upstream tool, per registration, in
`<home>/mcp/pins.sqlite` (`PinStore`).

- A tool's definition is what the model reads of it: `name`, `title`, `description`, `inputSchema`,
  `outputSchema` and `annotations` (`definition`); its digest is the SHA-256 of their canonical JSON.
- The first listing that shows a tool pins it (trust on first use, `approved_by` empty); `approve`
  replaces the pin with the current definition and records who and when.
- Several processes share one home: every write is one SQLite transaction (`INSERT OR IGNORE` for first
  sight, so two processes that see a tool at once keep the same pin), and `stamp()` (the database
  header's change counter, rewritten by every commit in rollback-journal mode) lets a process notice,
  for the price of one small read, that another one approved something.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFINITION_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
SCHEMA_VERSION = 1
_BUSY_TIMEOUT_S = 10.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pins (
    registration_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    digest TEXT NOT NULL,
    definition TEXT NOT NULL,
    first_seen REAL NOT NULL,
    approved_at REAL,
    approved_by TEXT,
    PRIMARY KEY (registration_id, tool)
)
"""


def definition(tool: dict[str, Any]) -> dict[str, Any]:
    """The parts of a raw MCP tool object that are pinned (absent fields stay absent)."""
    return {k: tool[k] for k in DEFINITION_FIELDS if tool.get(k) is not None}


MIN_EXPECT_CHARS = 16
"""The shortest digest prefix `approve --expect` takes (what `diff` used to show; 64 bits)."""
_HEX = frozenset("0123456789abcdef")


def expect_problem(value: str) -> str | None:
    """Why `value` cannot be an expected digest (None when it can: 16 to 64 lowercase hex characters)."""
    if not MIN_EXPECT_CHARS <= len(value) <= 64 or not set(value) <= _HEX:
        return (f"--expect {value!r} is not a definition digest: give the `digest` `tooldeck mcp diff` prints "
                f"(64 hexadecimal characters, or at least its first {MIN_EXPECT_CHARS})")
    return None


def unexpected(tools: Iterable[dict[str, Any]], expect: Iterable[str]) -> tuple[list[str], list[str]]:
    """Match the definitions about to be approved against the digests the user reviewed (`--expect`, full or
    prefixes): (names of tools whose digest no expected value matches, expected values that match no tool).
    Both empty: approve exactly what was reviewed."""
    wanted = [e.lower() for e in expect]
    used: set[str] = set()
    stray: list[str] = []
    for tool in tools:
        found = next((e for e in wanted if digest(tool).startswith(e)), None)
        if found is None:
            stray.append(tool["name"])
        else:
            used.add(found)
    return stray, [e for e in wanted if e not in used]


def canonical(defn: dict[str, Any]) -> str:
    return json.dumps(defn, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(tool: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(definition(tool)).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Pin:
    tool: str
    digest: str
    definition: dict[str, Any]
    first_seen: float
    approved_at: float | None = None
    approved_by: str | None = None
    """None: pinned when first seen, nobody approved it explicitly."""

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "digest": self.digest, "first_seen": self.first_seen,
                "approved_at": self.approved_at, "approved_by": self.approved_by}


class PinStore:
    """The pins of a home. Every method opens its own connection (any thread, any process); each raises
    `sqlite3.Error` / `OSError` when the file cannot be used (the caller turns it into `mcp.pins_unavailable`)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        try:
            conn.execute(_SCHEMA)
            yield conn
        finally:
            conn.close()

    def load(self, registration_id: str) -> dict[str, Pin]:
        if not self.path.exists():
            return {}
        with self._connect() as conn:
            return _select(conn, registration_id)

    def observe(self, registration_id: str, tools: Iterable[dict[str, Any]]) -> dict[str, Pin]:
        """Pin every tool that has no pin yet (its first sight); the registration's pins afterwards."""
        now = time.time()
        rows = [(registration_id, t["name"], digest(t), canonical(definition(t)), now) for t in tools]
        with self._connect() as conn:
            known = _select(conn, registration_id)
            if all(r[1] in known for r in rows):
                return known  # nothing new: no write, so other processes see no change
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("INSERT OR IGNORE INTO pins (registration_id, tool, digest, definition, first_seen) "
                                 "VALUES (?, ?, ?, ?, ?)", rows)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return _select(conn, registration_id)

    def approve(self, registration_id: str, tools: Iterable[dict[str, Any]], who: str) -> dict[str, Pin]:
        """Pin the given definitions as approved by `who` now; the registration's pins afterwards."""
        now = time.time()
        rows = [(registration_id, t["name"], digest(t), canonical(definition(t)), now, now, who) for t in tools]
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT INTO pins (registration_id, tool, digest, definition, first_seen, approved_at, "
                    "approved_by) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (registration_id, tool) DO UPDATE SET "
                    "digest = excluded.digest, definition = excluded.definition, approved_at = excluded.approved_at, "
                    "approved_by = excluded.approved_by", rows)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return _select(conn, registration_id)

    def stamp(self) -> tuple[int, bytes] | None:
        """Changes whenever any process commits to the store (None while it does not exist)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:  # absent, or not a file: `load` / `observe` report what is wrong
            return None
        try:
            # SQLite header: the file change counter, bumped by every commit (rollback-journal mode)
            return os.fstat(fd).st_ino, os.pread(fd, 4, 24)
        except OSError:
            return None
        finally:
            os.close(fd)


def _select(conn: sqlite3.Connection, registration_id: str) -> dict[str, Pin]:
    rows = conn.execute("SELECT tool, digest, definition, first_seen, approved_at, approved_by FROM pins "
                        "WHERE registration_id = ?", (registration_id,)).fetchall()
    return {r[0]: Pin(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5]) for r in rows}
