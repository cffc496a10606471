"""MCP server registrations: a registration id per (server name, endpoint), stable across restarts.

Stored in the records database (`<home>/records.sqlite`) in its own table, created with
`CREATE TABLE IF NOT EXISTS` so it lives beside the records schema without touching its migrations
(`PRAGMA user_version` belongs to the records store). Changing a server's endpoint (command + args,
or URL) makes a new registration, hence new tool ids; going back to an old endpoint finds the old one.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooldeck.records.side_tables import side_table

_SCHEMA = """
CREATE TABLE IF NOT EXISTS mcp_registrations (
    registration_id TEXT PRIMARY KEY,
    server_name     TEXT NOT NULL,
    endpoint_key    TEXT NOT NULL,
    endpoint        TEXT NOT NULL,
    created_at      REAL NOT NULL,
    last_used_at    REAL NOT NULL,
    UNIQUE (server_name, endpoint_key)
)
"""
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Registration:
    registration_id: str
    server_name: str
    endpoint_key: str
    endpoint: dict[str, Any]
    created_at: float
    last_used_at: float


def new_registration_id(server_name: str) -> str:
    """`<slug of the name>-<8 hex>`: readable in tool ids (`mcp/time-1a2b3c4d:get_current_time`)."""
    slug = _SLUG.sub("-", server_name.lower()).strip("-")[:24].strip("-") or "server"
    return f"{slug}-{uuid.uuid4().hex[:8]}"


class RegistrationStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _connect(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return side_table(self.path, _SCHEMA, "mcp.registrations_unavailable")

    def ensure(self, server_name: str, endpoint_key: str, endpoint: Mapping[str, Any]) -> Registration:
        """The registration of (name, endpoint): the existing one, or a new one."""
        return self.ensure_many([(server_name, endpoint_key, endpoint)])[0]

    def ensure_many(self, entries: list[tuple[str, str, Mapping[str, Any]]]) -> list[Registration]:
        """Like `ensure` for several servers in one transaction."""
        now = time.time()
        out: list[Registration] = []
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for name, key, endpoint in entries:
                    row = conn.execute(
                        "SELECT registration_id, endpoint, created_at FROM mcp_registrations "
                        "WHERE server_name = ? AND endpoint_key = ?", (name, key)).fetchone()
                    if row is None:
                        rid = new_registration_id(name)
                        conn.execute("INSERT INTO mcp_registrations VALUES (?, ?, ?, ?, ?, ?)",
                                     (rid, name, key, json.dumps(dict(endpoint), sort_keys=True), now, now))
                        out.append(Registration(rid, name, key, dict(endpoint), now, now))
                    else:
                        conn.execute("UPDATE mcp_registrations SET last_used_at = ? WHERE registration_id = ?",
                                     (now, row[0]))
                        out.append(Registration(row[0], name, key, json.loads(row[1]), row[2], now))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return out

    def all(self) -> list[Registration]:
        with self._connect() as conn:
            rows = conn.execute("SELECT registration_id, server_name, endpoint_key, endpoint, created_at, "
                                "last_used_at FROM mcp_registrations ORDER BY server_name, created_at").fetchall()
        return [Registration(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows]
